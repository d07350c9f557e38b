package report

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/soakd/soakd/internal/kpi"
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
	return &Report{Run: run, Status: StatusComplete, Verdict: kpi.OutcomePass, Phases: phases}
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

// roundsOf returns a phase run in 4 rounds ("name#1" … "name#4"), each
// figure scaled by (1 + jitter) per round: the round-to-round noise.
func roundsOf(name string, f cmpFigures, jitter float64) []Phase {
	var ps []Phase
	for i, j := range []float64{-1, 1, -0.5, 0.5} {
		k := 1 + j*jitter
		g := cmpFigures{rps: f.rps * k, cpuUs: f.cpuUs * k, allocB: f.allocB * k, gc: f.gc + j*jitter*10, p99: f.p99 * k, heap: uint64(float64(f.heap) * k)}
		p := cmpPhase(fmt.Sprintf("%s#%d", name, i+1), g)
		ps = append(ps, p)
	}
	return ps
}

func TestCompareThreeOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		metric string
		change func(*cmpFigures)
		jitter float64
		limits CompareLimits
		want   kpi.Outcome
	}{
		{"cpu unchanged", metricCPU, func(f *cmpFigures) {}, 0.02, allLimits, kpi.OutcomePass},
		{"cpu +30 %", metricCPU, func(f *cmpFigures) { f.cpuUs = 130 }, 0.02, allLimits, kpi.OutcomeFail},
		{"cpu +10 % on the limit", metricCPU, func(f *cmpFigures) { f.cpuUs = 110 }, 0.02, allLimits, kpi.OutcomeInconclusive},
		{"cpu +30 % in heavy noise", metricCPU, func(f *cmpFigures) { f.cpuUs = 130 }, 0.3, allLimits, kpi.OutcomeInconclusive},
		{"cpu improves", metricCPU, func(f *cmpFigures) { f.cpuUs = 50 }, 0.02, allLimits, kpi.OutcomePass},
		{"cpu gate disabled", metricCPU, func(f *cmpFigures) { f.cpuUs = 500 }, 0.02, CompareLimits{}, ""},
		{"alloc +50 %", metricAlloc, func(f *cmpFigures) { f.allocB = 6000 }, 0.02, allLimits, kpi.OutcomeFail},
		{"gc +3 points", metricGC, func(f *cmpFigures) { f.gc = 5 }, 0.01, allLimits, kpi.OutcomeFail},
		{"gc unchanged", metricGC, func(f *cmpFigures) {}, 0.01, allLimits, kpi.OutcomePass},
		{"throughput −30 %", metricThroughput, func(f *cmpFigures) { f.rps = 700 }, 0.02, allLimits, kpi.OutcomeFail},
		{"throughput up", metricThroughput, func(f *cmpFigures) { f.rps = 2000 }, 0.02, allLimits, kpi.OutcomePass},
		{"heap +80 %", metricHeapLive, func(f *cmpFigures) { f.heap = 8 << 20 * 18 / 10 }, 0.02, allLimits, kpi.OutcomeFail},
		// p99 1.0 → 1.6 ms is +60 % against +25 %, but under the 2 ms floor.
		{"p99 under its floor", metricP99, func(f *cmpFigures) { f.p99 = 1.6 }, 0.02, floorLimits(1), kpi.OutcomePass},
		{"p99 beyond its floor", metricP99, func(f *cmpFigures) { f.p99 = 4 }, 0.02, floorLimits(1), kpi.OutcomeFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			of := baseFigures
			if tc.name[:3] == "p99" {
				of.p99 = 1
			}
			nf := of
			tc.change(&nf)
			c := CompareRuns(cmpReport("old", roundsOf("p", of, tc.jitter)...), cmpReport("new", roundsOf("p", nf, tc.jitter)...), tc.limits)
			r := rowOf(t, c, "p", tc.metric)
			if r.Outcome != tc.want || r.Pass != (tc.want == kpi.OutcomePass || tc.want == "") || r.Gated != (tc.want != "") {
				t.Errorf("got outcome %q pass %v gated %v, want %q (row %+v, interval %+v)", r.Outcome, r.Pass, r.Gated, tc.want, r, r.Interval)
			}
			if r.OldRounds != 4 || r.NewRounds != 4 || len(c.Rows) != 6 {
				t.Errorf("rounds %d/%d, rows %d: want 4/4 and 6 (the rounds of p are one phase)", r.OldRounds, r.NewRounds, len(c.Rows))
			}
			if tc.want == kpi.OutcomeInconclusive && !strings.Contains(r.Reason, "round") {
				t.Errorf("an inconclusive row must say how many rounds would settle it: %q", r.Reason)
			}
		})
	}
}

func floorLimits(floorMs float64) CompareLimits {
	l := allLimits
	l.P99LatencyFloorMs = floorMs * 2
	return l
}

func TestCompareSingleSamplesAndMaxLoad(t *testing.T) {
	// One sample per run is reported, never gated, and a comparison with
	// nothing gated is inconclusive: it cannot pass.
	c := CompareRuns(cmpReport("old", cmpPhase("p", baseFigures)), cmpReport("new", cmpPhase("p", baseFigures)), allLimits)
	if r := rowOf(t, c, "p", metricCPU); r.Gated || !strings.Contains(r.Reason, "one sample per run") {
		t.Errorf("single sample: %+v", r)
	}
	if c.Verdict != kpi.OutcomeInconclusive {
		t.Errorf("nothing gated: verdict %s, want inconclusive", c.Verdict)
	}
	// A max-load phase that stopped at its duration cap is not attributable.
	ml := cmpPhase("max", baseFigures)
	ml.MaxLoad = &MaxLoad{MaxLoadResult: workloads.MaxLoadResult{Reason: "duration"}}
	c = CompareRuns(cmpReport("old", append(roundsOf("p", baseFigures, 0.01), ml)...), cmpReport("new", append(roundsOf("p", baseFigures, 0.01), ml)...), allLimits)
	if r := rowOf(t, c, "max", metricThroughput); r.Gated || !strings.Contains(r.Reason, "stopped by duration") {
		t.Errorf("max load: %+v", r)
	}
	if c.Verdict != kpi.OutcomePass {
		t.Errorf("same rounds, max load reported only: verdict %s, want pass", c.Verdict)
	}
	// Different profiles are compared loudly and cannot pass.
	a, b := cmpReport("a", roundsOf("p", baseFigures, 0.01)...), cmpReport("b", roundsOf("p", baseFigures, 0.01)...)
	a.Profile, b.Profile = "quick", "seed"
	c = CompareRuns(a, b, allLimits)
	if c.Verdict != kpi.OutcomeInconclusive || !strings.Contains(strings.Join(c.Notes, "\n"), `DIFFERENT RUNS: the old run used profile "quick"`) {
		t.Errorf("different profiles: verdict %s notes %q", c.Verdict, c.Notes)
	}
}

func TestCompareMissingData(t *testing.T) {
	noRes := roundsOf("p", baseFigures, 0.01)
	noRes[1].Resources, noRes[1].ResourcesError = nil, "fewer than 3 samples"
	noRes[1].PerRequest = PerRequest{}
	gcUnknown := roundsOf("p", baseFigures, 0.01)
	gcUnknown[0].Resources.GCPercentKnown = false

	for _, tc := range []struct {
		name     string
		old, new []Phase
		limits   CompareLimits
		metric   string
		want     kpi.Outcome
		wantNote string
		wantVerd kpi.Outcome
	}{
		{"gated metric, new lacks resources", roundsOf("p", baseFigures, 0.01), noRes, allLimits, metricCPU, kpi.OutcomeNotMeasured,
			"phase p#2: cpu_us_per_request is missing in the new run (resources not summarised: fewer than 3 samples); the gated metric is not measured.", kpi.OutcomeInconclusive},
		{"ungated metric, new lacks resources", roundsOf("p", baseFigures, 0.01), noRes, CompareLimits{ThroughputDecreasePercent: 10}, metricHeapLive, "",
			"phase p#2: heap_live_bytes_max is missing in the new run (resources not summarised: fewer than 3 samples); not gated.", kpi.OutcomePass},
		{"old lacks resources", noRes, roundsOf("p", baseFigures, 0.01), allLimits, metricAlloc, kpi.OutcomeNotMeasured,
			"phase p#2: alloc_bytes_per_request is missing in the old run", kpi.OutcomeInconclusive},
		{"gc not measured", roundsOf("p", baseFigures, 0.01), gcUnknown, allLimits, metricGC, kpi.OutcomeNotMeasured,
			"gc_percent is missing in the new run (gc % not measured", kpi.OutcomeInconclusive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := CompareRuns(cmpReport("old", tc.old...), cmpReport("new", tc.new...), tc.limits)
			r := rowOf(t, c, "p", tc.metric)
			if r.Outcome != tc.want || r.Change != nil || r.Missing == "" {
				t.Errorf("got outcome %q change %v missing %q, want %q, no change, a reason", r.Outcome, r.Change, r.Missing, tc.want)
			}
			if !strings.Contains(strings.Join(c.Notes, "\n"), tc.wantNote) {
				t.Errorf("notes %q lack %q", c.Notes, tc.wantNote)
			}
			if c.Verdict != tc.wantVerd {
				t.Errorf("verdict: got %s, want %s", c.Verdict, tc.wantVerd)
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
	if c.Verdict != kpi.OutcomeInconclusive {
		t.Errorf("identical single-sample phase: got verdict %s, want inconclusive (nothing gateable)", c.Verdict)
	}

	none := CompareRuns(cmpReport("a", cmpPhase("x", baseFigures)), cmpReport("b", cmpPhase("y", baseFigures)), allLimits)
	if none.Verdict != kpi.OutcomeInconclusive || len(none.Rows) != 0 {
		t.Errorf("no phase in common: got verdict %s with %d rows, want inconclusive with none", none.Verdict, len(none.Rows))
	}

	aborted := cmpReport("b", cmpPhase("x", baseFigures))
	aborted.Status, aborted.Verdict, aborted.Error = StatusAborted, kpi.OutcomeAborted, "driver died"
	ab := CompareRuns(cmpReport("a", cmpPhase("x", baseFigures)), aborted, allLimits)
	if ab.Verdict != kpi.OutcomeFail || !strings.Contains(strings.Join(ab.Notes, "\n"), "the new run b is aborted (driver died)") {
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

func TestCompareJSONGolden(t *testing.T) {
	b, err := compareFixture().JSON()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.json", string(b))
}

// TestCompareJUnit checks the comparison's junit.xml: a failed row is a
// failure, informational and unsettled rows are skipped (never passing
// tests), the verdict is a case of its own, and an aborted new run is an
// error.
func TestCompareJUnit(t *testing.T) {
	old := cmpReport("a", roundsOf("p", baseFigures, 0.01)...)
	worse := baseFigures
	worse.cpuUs = 150
	nw := cmpReport("b", roundsOf("p", worse, 0.01)...)
	c := CompareRuns(old, nw, CompareLimits{CPUPerRequestPercent: 10, ThroughputDecreasePercent: 10})
	b, err := c.JUnit()
	if err != nil {
		t.Fatal(err)
	}
	s := parseJUnitBytes(t, b).Suites[0]
	if s.Tests != len(c.Rows)+1 {
		t.Errorf("tests: got %d, want %d rows and the verdict", s.Tests, len(c.Rows)+1)
	}
	if cpu, _ := findCase(s.Cases, "compare.p", "cpu_us_per_request"); cpu.Failure == nil || !strings.Contains(cpu.Failure.Message, "+50.0 %") {
		t.Errorf("cpu +50 %% against a 10 %% limit: got %+v, want a failure naming the change", cpu)
	}
	if tp, _ := findCase(s.Cases, "compare.p", "throughput_rps"); tp.Failure != nil || tp.Skipped != nil || tp.Error != nil {
		t.Errorf("unchanged throughput: got %+v, want a passing case", tp)
	}
	if gc, _ := findCase(s.Cases, "compare.p", "gc_percent"); gc.Skipped == nil || !strings.Contains(gc.Skipped.Message, "informational") {
		t.Errorf("gc has no limit here: got %+v, want a skipped informational case", gc)
	}
	if v, _ := findCase(s.Cases, "compare", "verdict"); v.Failure == nil || !strings.Contains(v.Failure.Text, "cpu_us_per_request") {
		t.Errorf("verdict: got %+v, want a failure listing the failed row", v)
	}

	aborted := cmpReport("b", roundsOf("p", baseFigures, 0.01)...)
	aborted.Status, aborted.Verdict, aborted.Error = StatusAborted, kpi.OutcomeAborted, "driver died"
	b, err = CompareRuns(old, aborted, allLimits).JUnit()
	if err != nil {
		t.Fatal(err)
	}
	s = parseJUnitBytes(t, b).Suites[0]
	if v, _ := findCase(s.Cases, "compare", "verdict"); v.Error == nil || v.Error.Type != "aborted" || v.Failure != nil {
		t.Errorf("aborted new run: got %+v, want the verdict case in error", v)
	}

	same := CompareRuns(old, cmpReport("c", roundsOf("p", baseFigures, 0.01)...), allLimits)
	b, err = same.JUnit()
	if err != nil {
		t.Fatal(err)
	}
	if s := parseJUnitBytes(t, b).Suites[0]; s.Failures != 0 || s.Errors != 0 || same.Verdict != kpi.OutcomePass {
		t.Errorf("identical runs: verdict %s, %d failures, %d errors; want pass and none", same.Verdict, s.Failures, s.Errors)
	}
}

// TestCompareLatencyAgainstTheControl: a p99 fail in the GraphQL arm stands
// when the REST control's p99 held; when the control's p99 rose
// significantly too (a busier machine between the runs, as the gate-check
// saw: REST 0.76 → 3.5 ms, GraphQL 3.5 → 36 ms, same build), the fail
// becomes inconclusive with the reason, never pass.
func TestCompareLatencyAgainstTheControl(t *testing.T) {
	arm := func(ps []Phase, a string) []Phase {
		for i := range ps {
			ps[i].Arm = a
		}
		return ps
	}
	run := func(name string, restP99, gqlP99 float64) *Report {
		rf, gf := baseFigures, baseFigures
		rf.p99, gf.p99 = restP99, gqlP99
		return cmpReport(name, append(arm(roundsOf("rest-control", rf, 0.02), "rest"), arm(roundsOf("graphql-load", gf, 0.02), "graphql")...)...)
	}
	// Only GraphQL slowed: the build did it.
	c := CompareRuns(run("old", 1, 4), run("new", 1, 40), allLimits)
	if r := rowOf(t, c, "graphql-load", metricP99); r.Outcome != kpi.OutcomeFail {
		t.Errorf("GraphQL-only p99 regression: %q (%s), want fail", r.Outcome, r.Reason)
	}
	if c.Verdict != kpi.OutcomeFail {
		t.Errorf("verdict %s, want fail", c.Verdict)
	}
	// Both arms slowed: the machine changed too.
	c = CompareRuns(run("old", 1, 4), run("new", 5, 40), allLimits)
	for _, phase := range []string{"rest-control", "graphql-load"} {
		if r := rowOf(t, c, phase, metricP99); r.Outcome != kpi.OutcomeInconclusive || !strings.Contains(r.Reason, "both arms") {
			t.Errorf("%s p99 with the control moved: %q (%s), want inconclusive naming both arms", phase, r.Outcome, r.Reason)
		}
	}
	if c.Verdict != kpi.OutcomeInconclusive || !strings.Contains(strings.Join(c.Notes, "\n"), "CONTROL GROUP MOVED") {
		t.Errorf("verdict %s, notes %v: want inconclusive and the note", c.Verdict, c.Notes)
	}
}

// TestCompareCPUAgainstTheControl: a machine that got slower between two
// runs raises CPU per request in both arms; GraphQL's cost relative to its
// REST control in each round (cpu_per_request_vs_control) holds, so the
// comparison does not fail the unchanged build; a GraphQL-only regression
// fails that row whatever the machine did.
func TestCompareCPUAgainstTheControl(t *testing.T) {
	run := func(name string, restCPU, gqlCPU float64) *Report {
		rf, gf := baseFigures, baseFigures
		rf.cpuUs, gf.cpuUs = restCPU, gqlCPU
		rest, gql := roundsOf("rest-control", rf, 0.02), roundsOf("graphql-load", gf, 0.02)
		r := cmpReport(name)
		r.Arms = "rest,graphql"
		for i := range rest {
			rest[i].Arm = "rest"
			r.Phases = append(r.Phases, rest[i], gql[i])
			r.Rounds = append(r.Rounds, Round{Round: i + 1, REST: rest[i].Name, GraphQL: gql[i].Name})
		}
		return r
	}
	// The machine 30 % slower, the build unchanged.
	c := CompareRuns(run("old", 50, 110), run("new", 65, 143), allLimits)
	if r := rowOf(t, c, "graphql-load", metricCPU); r.Outcome != kpi.OutcomeInconclusive || !strings.Contains(r.Reason, "both arms") {
		t.Errorf("raw GraphQL CPU with the control moved: %q (%s), want inconclusive", r.Outcome, r.Reason)
	}
	if r := rowOf(t, c, "graphql-load", metricCPUVsControl); r.Outcome != kpi.OutcomePass || r.OldRounds != 4 {
		t.Errorf("GraphQL CPU relative to its control: %q over %d rounds (%+v), want pass over 4", r.Outcome, r.OldRounds, r.Interval)
	}
	if c.Verdict == kpi.OutcomeFail {
		t.Errorf("an unchanged build on a slower machine failed: %v", c.Reasons())
	}
	// GraphQL +30 %, REST unchanged: the build did it.
	c = CompareRuns(run("old", 50, 110), run("new", 50, 143), allLimits)
	for _, m := range []string{metricCPU, metricCPUVsControl} {
		if r := rowOf(t, c, "graphql-load", m); r.Outcome != kpi.OutcomeFail {
			t.Errorf("GraphQL-only CPU regression, %s: %q, want fail", m, r.Outcome)
		}
	}
	// A self-check has no control ratio.
	if ps := controlRatioPhases(&Report{Arms: "rest,rest"}); ps != nil {
		t.Errorf("a rest,rest run gave control ratios %v", ps)
	}
}

// TestComparePairedSession: the two sides of one A/B session are judged
// pair by pair. The machine slowed by 30 % halfway through the session, so
// each side's rounds spread widely, yet every pair moved together: the
// build's +20 % CPU fails paired, where the same figures from two separate
// runs only read inconclusive.
func TestComparePairedSession(t *testing.T) {
	machine := []float64{1, 1.02, 1.3, 1.33}
	side := func(run string, cpu float64, ab *ABSide) *Report {
		var ps []Phase
		for i, m := range machine {
			f := baseFigures
			f.cpuUs, f.rps = cpu*m, f.rps/m
			ps = append(ps, cmpPhase(fmt.Sprintf("graphql-load#%d", i+1), f))
		}
		r := cmpReport(run, ps...)
		r.AB = ab
		return r
	}
	oldAB := &ABSide{Session: "s1", Side: ABOld, Other: "s1-new"}
	newAB := &ABSide{Session: "s1", Side: ABNew, Other: "s1-old"}
	c := CompareRuns(side("s1-old", 100, oldAB), side("s1-new", 120, newAB), allLimits)
	r := rowOf(t, c, "graphql-load", metricCPU)
	if !c.Paired || !r.Paired || r.Outcome != kpi.OutcomeFail || r.Interval.N != 4 {
		t.Errorf("paired session, CPU +20 %%: paired %v/%v, %q over %d pairs (%+v), want a paired fail over 4", c.Paired, r.Paired, r.Outcome, r.Interval.N, r.Interval)
	}
	if tp := rowOf(t, c, "graphql-load", metricThroughput); tp.Outcome != kpi.OutcomePass {
		t.Errorf("paired session, throughput unchanged by the build: %q (%+v), want pass", tp.Outcome, tp.Interval)
	}
	if !strings.Contains(strings.Join(c.Notes, " "), "A/B session s1") {
		t.Errorf("the notes do not say the rounds were paired: %v", c.Notes)
	}
	// The same figures from two runs of their own: no pairing.
	c = CompareRuns(side("a", 100, nil), side("b", 120, nil), allLimits)
	if r := rowOf(t, c, "graphql-load", metricCPU); c.Paired || r.Paired || r.Outcome == kpi.OutcomeFail {
		t.Errorf("separate runs: paired %v, %q, want unpaired and not a fail (the drift hides the change)", c.Paired, r.Outcome)
	}
	// Sides of different sessions, or swapped, are not paired.
	other := &ABSide{Session: "s2", Side: ABNew}
	for _, pair := range [][2]*ABSide{{oldAB, other}, {newAB, oldAB}} {
		if PairedRuns(side("x", 100, pair[0]), side("y", 100, pair[1])) {
			t.Errorf("%+v and %+v must not pair", pair[0], pair[1])
		}
	}
	// A round missing on one side: that row falls back to the unpaired interval.
	o, n := side("s1-old", 100, oldAB), side("s1-new", 120, newAB)
	n.Phases = n.Phases[:3]
	if r := rowOf(t, CompareRuns(o, n, allLimits), "graphql-load", metricCPU); r.Paired {
		t.Errorf("a round without its partner was paired: %+v", r)
	}
}

// TestCompareMarkdownForAPullRequest: the marker first (a bot updates its
// comment by it), then the verdict and the reasons, the rows collapsed
// under <details>, metrics by their titles.
func TestCompareMarkdownForAPullRequest(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	c := Comparison{Old: "a-old", New: "a-new", Verdict: kpi.OutcomeFail, Paired: true, Rows: []CompareRow{
		{Phase: "graphql-load", Metric: metricCPU, Unit: "µs", Old: f(161.7), New: f(186.6), Change: f(15.4), ChangeUnit: "percent", Limit: f(10),
			Gated: true, Outcome: kpi.OutcomeFail, Interval: &kpi.Interval{Lo: 12.1, Hi: 18.9, N: 6}},
		{Phase: "graphql-load", Metric: metricThroughput, Unit: "req/s", Old: f(1000), New: f(990), Change: f(-1), ChangeUnit: "percent", Limit: f(10), Gated: true, Pass: true, Outcome: kpi.OutcomePass},
	}}
	md := c.Markdown()
	why, details := strings.Index(md, "Why:"), strings.Index(md, "<details><summary>All 2 rows</summary>")
	if !strings.HasPrefix(md, MarkdownMarker+"\n## soakd comparison: FAIL") || why < 0 || details < why {
		t.Fatalf("layout:\n%s", md)
	}
	for _, want := range []string{"(A/B session)", "Old: `a-old`; new: `a-new`", "**FAIL** graphql-load CPU per request: 161.7 µs → 186.6 µs, change +15.4 % \\[+12.1, +18.9\\] %, limit ≤ +10 %", "| graphql-load | Throughput |"} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in:\n%s", want, md)
		}
	}
	if strings.Contains(md[why:details], "Throughput") {
		t.Errorf("a passing row is among the reasons:\n%s", md)
	}
}
