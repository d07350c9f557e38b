package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/soakd/soakd/kpi"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

// cmpFigures are the compared metrics of one phase.
type cmpFigures struct {
	rps, cpuUs, allocB, gc, p99 float64
	heap                        uint64
}

var baseFigures = cmpFigures{rps: 1000, cpuUs: 100, allocB: 4000, gc: 2, p99: 10, heap: 8 << 20}

func cmpPhase(name string, f cmpFigures) Phase {
	return Phase{
		Name: name, Arm: "graphql", Requests: 10000, ThroughputRPS: f.rps,
		LatencyMs:  workloads.Latency{P99: f.p99},
		Resources:  &profiles.Summary{WindowSeconds: 10, CPUKnown: true, GCPercentKnown: true, GCPercent: f.gc, HeapLiveBytesMax: f.heap},
		PerRequest: PerRequest{CPUMicros: f.cpuUs, AllocBytes: f.allocB},
	}
}

func cmpReport(run string, phases ...Phase) *Report {
	return &Report{Run: run, Status: StatusComplete, Verdict: kpi.Pass, Phases: phases}
}

var allLimits = CompareLimits{CPUPerRequestPercent: 10, AllocPerRequestPercent: 20, GCPercentPoints: 1, P99LatencyPercent: 25, ThroughputDecreasePercent: 10, HeapLivePercent: 50}

func rowOf(t *testing.T, c Comparison, phase, metric string) CompareRow {
	t.Helper()
	for _, r := range c.Rows {
		if r.Phase == phase && r.Metric == metric {
			return r
		}
	}
	t.Fatalf("no row %s/%s in %+v", phase, metric, c.Rows)
	return CompareRow{}
}

func TestCompareBoundaries(t *testing.T) {
	for _, tc := range []struct {
		name     string
		metric   string
		change   func(*cmpFigures)
		limits   CompareLimits
		wantPass bool
		wantGate bool
		wantD    float64
	}{
		{"cpu at limit", metricCPU, func(f *cmpFigures) { f.cpuUs = 110 }, allLimits, true, true, 10},
		{"cpu over limit", metricCPU, func(f *cmpFigures) { f.cpuUs = 110.5 }, allLimits, false, true, 10.5},
		{"cpu improves", metricCPU, func(f *cmpFigures) { f.cpuUs = 50 }, allLimits, true, true, -50},
		{"cpu gate disabled", metricCPU, func(f *cmpFigures) { f.cpuUs = 500 }, CompareLimits{}, true, false, 400},
		{"alloc at limit", metricAlloc, func(f *cmpFigures) { f.allocB = 4800 }, allLimits, true, true, 20},
		{"alloc over limit", metricAlloc, func(f *cmpFigures) { f.allocB = 4804 }, allLimits, false, true, 20.1},
		{"gc at limit", metricGC, func(f *cmpFigures) { f.gc = 3 }, allLimits, true, true, 1},
		{"gc over limit", metricGC, func(f *cmpFigures) { f.gc = 3.25 }, allLimits, false, true, 1.25},
		{"p99 at limit", metricP99, func(f *cmpFigures) { f.p99 = 12.5 }, allLimits, true, true, 25},
		{"p99 over limit", metricP99, func(f *cmpFigures) { f.p99 = 13 }, allLimits, false, true, 30},
		{"throughput at limit", metricThroughput, func(f *cmpFigures) { f.rps = 900 }, allLimits, true, true, -10},
		{"throughput under limit", metricThroughput, func(f *cmpFigures) { f.rps = 899 }, allLimits, false, true, -10.1},
		{"throughput up", metricThroughput, func(f *cmpFigures) { f.rps = 2000 }, allLimits, true, true, 100},
		{"heap at limit", metricHeapLive, func(f *cmpFigures) { f.heap = 12 << 20 }, allLimits, true, true, 50},
		{"heap over limit", metricHeapLive, func(f *cmpFigures) { f.heap = 13 << 20 }, allLimits, false, true, 62.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nf := baseFigures
			tc.change(&nf)
			c := CompareRuns(cmpReport("old", cmpPhase("p", baseFigures)), cmpReport("new", cmpPhase("p", nf)), tc.limits)
			r := rowOf(t, c, "p", tc.metric)
			if r.Pass != tc.wantPass || r.Gated != tc.wantGate {
				t.Errorf("got pass %v gated %v, want pass %v gated %v (row %+v)", r.Pass, r.Gated, tc.wantPass, tc.wantGate, r)
			}
			if r.Delta == nil || abs(*r.Delta-tc.wantD) > 1e-9 {
				t.Errorf("delta: got %v, want %v", r.Delta, tc.wantD)
			}
			if tc.wantGate != (r.Limit != nil) {
				t.Errorf("limit: got %v, want one only when gated", r.Limit)
			}
			wantVerdict := kpi.Pass
			if !tc.wantPass {
				wantVerdict = kpi.Fail
			}
			if c.Verdict != wantVerdict {
				t.Errorf("verdict: got %s, want %s", c.Verdict, wantVerdict)
			}
			if len(c.Rows) != 6 {
				t.Errorf("got %d rows, want 6 (one per metric)", len(c.Rows))
			}
		})
	}
}

func TestCompareMissingData(t *testing.T) {
	noRes := cmpPhase("p", baseFigures)
	noRes.Resources, noRes.ResourcesError = nil, "fewer than 2 samples"
	noRes.PerRequest = PerRequest{}
	gcUnknown := cmpPhase("p", baseFigures)
	gcUnknown.Resources.GCPercentKnown = false
	zeroCPU := cmpPhase("p", baseFigures)
	zeroCPU.PerRequest.CPUMicros = 0

	for _, tc := range []struct {
		name        string
		old, new    Phase
		limits      CompareLimits
		metric      string
		wantPass    bool
		wantGated   bool
		wantNote    string
		wantVerdict string
	}{
		{"gated metric, new lacks resources", cmpPhase("p", baseFigures), noRes, allLimits, metricCPU, false, true,
			"phase p: cpu_us_per_request is missing in the new run (resources not summarised: fewer than 2 samples); the gated metric fails.", kpi.Fail},
		{"ungated metric, new lacks resources", cmpPhase("p", baseFigures), noRes, CompareLimits{ThroughputDecreasePercent: 10}, metricHeapLive, true, false,
			"phase p: heap_live_bytes_max is missing in the new run (resources not summarised: fewer than 2 samples); not gated.", kpi.Pass},
		{"old lacks resources", noRes, cmpPhase("p", baseFigures), allLimits, metricAlloc, false, true,
			"phase p: alloc_bytes_per_request is missing in the old run", kpi.Fail},
		{"gc not measured", cmpPhase("p", baseFigures), gcUnknown, allLimits, metricGC, false, true,
			"gc_percent is missing in the new run (gc % not measured", kpi.Fail},
		{"old cost is zero", zeroCPU, cmpPhase("p", baseFigures), allLimits, metricCPU, false, true, "", kpi.Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := CompareRuns(cmpReport("old", tc.old), cmpReport("new", tc.new), tc.limits)
			r := rowOf(t, c, "p", tc.metric)
			if r.Pass != tc.wantPass || r.Gated != tc.wantGated || r.Delta != nil {
				t.Errorf("got pass %v gated %v delta %v, want pass %v gated %v delta nil", r.Pass, r.Gated, r.Delta, tc.wantPass, tc.wantGated)
			}
			if tc.wantNote != "" && !strings.Contains(strings.Join(c.Notes, "\n"), tc.wantNote) {
				t.Errorf("notes %q lack %q", c.Notes, tc.wantNote)
			}
			if tc.wantNote != "" && r.Missing == "" {
				t.Errorf("row with missing data has an empty Missing")
			}
			if c.Verdict != tc.wantVerdict {
				t.Errorf("verdict: got %s, want %s", c.Verdict, tc.wantVerdict)
			}
		})
	}
}

func TestComparePhases(t *testing.T) {
	old := cmpReport("r-old", cmpPhase("warmup", baseFigures), cmpPhase("rest", baseFigures), cmpPhase("gone", baseFigures))
	nw := cmpReport("r-new", cmpPhase("rest", baseFigures), cmpPhase("fresh", baseFigures))
	c := CompareRuns(old, nw, allLimits)
	if c.Old != "r-old" || c.New != "r-new" {
		t.Errorf("run ids: got %s and %s", c.Old, c.New)
	}
	if len(c.Rows) != 6 || c.Rows[0].Phase != "rest" {
		t.Errorf("got %d rows (first %+v), want the 6 rows of phase rest", len(c.Rows), c.Rows[0])
	}
	notes := strings.Join(c.Notes, "\n")
	for _, want := range []string{"phase warmup is only in the old run r-old", "phase gone is only in the old run r-old", "phase fresh is only in the new run r-new"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", c.Notes, want)
		}
	}
	if c.Verdict != kpi.Pass {
		t.Errorf("identical phase: got verdict %s, want pass", c.Verdict)
	}

	none := CompareRuns(cmpReport("a", cmpPhase("x", baseFigures)), cmpReport("b", cmpPhase("y", baseFigures)), allLimits)
	if none.Verdict != kpi.Fail || len(none.Rows) != 0 {
		t.Errorf("no phase in common: got verdict %s with %d rows, want fail with none", none.Verdict, len(none.Rows))
	}

	aborted := cmpReport("b", cmpPhase("x", baseFigures))
	aborted.Status, aborted.Verdict, aborted.Error = StatusAborted, VerdictAborted, "driver died"
	ab := CompareRuns(cmpReport("a", cmpPhase("x", baseFigures)), aborted, allLimits)
	if ab.Verdict != kpi.Fail || !strings.Contains(strings.Join(ab.Notes, "\n"), "the new run b is aborted (driver died)") {
		t.Errorf("aborted new run: got verdict %s, notes %q; want fail with a note", ab.Verdict, ab.Notes)
	}
}

func TestCompareIsPure(t *testing.T) {
	old, nw := cmpReport("a", cmpPhase("x", baseFigures)), cmpReport("b", cmpPhase("x", baseFigures))
	before, _ := json.Marshal([]*Report{old, nw})
	c1 := CompareRuns(old, nw, allLimits)
	c2 := CompareRuns(old, nw, allLimits)
	after, _ := json.Marshal([]*Report{old, nw})
	if string(before) != string(after) {
		t.Errorf("CompareRuns changed its inputs")
	}
	j1, _ := json.Marshal(c1)
	j2, _ := json.Marshal(c2)
	if string(j1) != string(j2) {
		t.Errorf("CompareRuns is not deterministic:\n%s\n%s", j1, j2)
	}
}

func compareFixture() Comparison {
	worse := baseFigures
	worse.cpuUs, worse.gc, worse.p99, worse.rps = 125, 2.5, 11, 950
	noRes := cmpPhase("graphql-load", worse)
	noRes.Resources, noRes.ResourcesError = nil, "sampler stopped"
	old := cmpReport("20261129T100000Z", cmpPhase("rest-control", baseFigures), cmpPhase("graphql-load", baseFigures), cmpPhase("old-only", baseFigures))
	nw := cmpReport("20261130T100000Z", cmpPhase("rest-control", worse), noRes)
	old.Phases[0].PerRequest.AllocBytes = 0 // a cost from nothing: no finite percentage
	return CompareRuns(old, nw, CompareLimits{CPUPerRequestPercent: 10, GCPercentPoints: 1, ThroughputDecreasePercent: 10, P99LatencyPercent: 5})
}

func TestCompareMarkdownGolden(t *testing.T) {
	golden(t, "compare.md", compareFixture().Markdown())
}

func TestCompareTableGolden(t *testing.T) {
	var b strings.Builder
	if err := compareFixture().Table(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.txt", b.String())
}
