package report

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/fsutil"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/termtext"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

var update = flag.Bool("update", false, "rewrite golden files")

func fixture() *Report {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	phase := func(name, arm string, pid int, rps, cpu, gc float64, alloc uint64, errs int64) Phase {
		res := workloads.Result{
			Phase: name, Arm: arm, DriverPID: pid, Start: t0, End: t0.Add(20 * time.Second), DurationSeconds: 20,
			Requests: 80000, Errors: errs, SteadyStart: t0.Add(3 * time.Second), SteadyEnd: t0.Add(13 * time.Second),
			ThroughputRPS: rps, LatencyMs: workloads.Latency{P50: 0.2, P90: 0.5, P99: 1.5, P999: 3, Max: 8, Mean: 0.3, Stdev: 0.2},
			Operations: []workloads.OperationResult{{Operation: "x", Users: 50, Iterations: 800, Requests: 40000, Errors: errs}},
		}
		if errs > 0 {
			res.ErrorsByClass = map[string]int64{"http_500": errs}
			res.ErrorExamples = map[string][]string{"http_500": {"status 500"}}
		}
		sum := &profiles.Summary{WindowSeconds: 10, Samples: 11, Cores: 2, CPUKnown: true, CPUSeconds: cpu / 100 * 20,
			CPUMachinePercent: cpu, CPUCorePercent: 2 * cpu, GCPercentKnown: true, GCPercent: gc, GCCycles: 100,
			GCPauseP99Ms: 1.5, AllocBytes: alloc, AllocObjects: alloc / 100, HeapLiveBytesMax: 3 << 20, RSSBytesMax: 20 << 20,
			SamplerCostMeanUs: 420, SamplerCorePercent: 0.042}
		return NewPhase(res, sum, nil)
	}
	r := &Report{
		SchemaVersion: SchemaVersion, Run: "20261130T100000Z", Profile: "quick", Description: "test fixture",
		Status: StatusComplete, StartedAt: t0, FinishedAt: t0.Add(time.Minute), TargetPID: 100,
		Host:                   Host{Cores: 2, GOMAXPROCS: 2, GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", Soakd: "devel"},
		SamplerIntervalSeconds: 1, Compare: Compare{REST: "rest-control", GraphQL: "graphql-load"},
		Phases: []Phase{
			phase("rest-control", "rest", 101, 6000, 17, 0.5, 6000*10*3000, 0),
			phase("graphql-load", "graphql", 102, 5900, 30, 2.5, 5900*10*12000, 3),
		},
		Notes: []string{"a note"},
	}
	r.KPIs = kpi.Evaluate(r.Phases[0].Figures(), r.Phases[1].Figures(), kpi.Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10})
	r.Verdict = kpi.Verdict(r.KPIs)
	return r
}

func TestPerRequest(t *testing.T) {
	r := fixture()
	g := r.Phases[1].PerRequest
	// 30 % of 2 cores for 20 s over a 10 s window = 0.6 cpu-s per second; ÷ 5900 req/s.
	if want := 0.6 / 5900 * 1e6; abs(g.CPUMicros-want) > 1e-6 {
		t.Errorf("cpu µs per request: got %v, want %v", g.CPUMicros, want)
	}
	if abs(g.AllocBytes-12000) > 1e-6 {
		t.Errorf("alloc bytes per request: got %v, want 12000", g.AllocBytes)
	}
	if want := 100.0 / 10 / 5900 * 10000; abs(g.GCCyclesPer10kReq-want) > 1e-9 {
		t.Errorf("gc cycles per 10k: got %v, want %v", g.GCCyclesPer10kReq, want)
	}
	if pr := NewPhase(workloads.Result{ThroughputRPS: 0}, &profiles.Summary{WindowSeconds: 1}, nil).PerRequest; !reflect.DeepEqual(pr, PerRequest{}) {
		t.Errorf("zero throughput must give zero per-request figures, not Inf")
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test ./report -update to accept):\n%s", name, got)
	}
}

func TestMarkdownGolden(t *testing.T) {
	golden(t, "report.md", fixture().Markdown())
}

// overheadFixture is an overhead table merged over 4 rounds: two rows
// with evidence and two within noise, one of them a single sample.
func overheadFixture() ([]OverheadRow, *OverheadBasis) {
	return []OverheadRow{
			{Function: "github.com/99designs/gqlgen/graphql/executor.(*Executor).DispatchOperation", GraphQLMicrosPerReq: 20, ExtraMicrosPerReq: 20, SharePercent: 44.4, GraphQLSamples: 612},
			{Function: "encoding/json.Marshal", RESTMicrosPerReq: 5, GraphQLMicrosPerReq: 12, ExtraMicrosPerReq: 7, SharePercent: 15.6, RESTSamples: 160, GraphQLSamples: 367},
			{Function: "runtime.scanobject", RESTMicrosPerReq: 9, GraphQLMicrosPerReq: 10, ExtraMicrosPerReq: 1, SharePercent: 2.2, RESTSamples: 290, GraphQLSamples: 306, WithinNoise: true},
			{Function: "strings.Clone", GraphQLMicrosPerReq: 3.32, ExtraMicrosPerReq: 3.32, SharePercent: 7.4, GraphQLSamples: 1, WithinNoise: true},
		}, &OverheadBasis{Rounds: 4, RESTRequests: 320000, GraphQLRequests: 305000,
			RESTSamples: 1234, GraphQLSamples: 2345, SampleRateHz: 100}
}

func TestOverheadMarkdownGolden(t *testing.T) {
	r := fixture()
	r.Overhead, r.OverheadBasis = overheadFixture()
	md := r.Markdown()
	i := strings.Index(md, "## Where the overhead goes")
	if i < 0 {
		t.Fatal("report.md lacks the overhead section")
	}
	section := md[i:]
	if j := strings.Index(section[1:], "\n## "); j >= 0 {
		section = section[:j+2]
	}
	golden(t, "overhead.md", section)
	for _, want := range []string{"merged over 4 rounds (1,234 REST and 2,345 GraphQL samples at 100 Hz, over 320,000 and 305,000 requests)",
		"| 0 / 612 |", "~ (1 sample, within noise)", "~ (596 samples, within noise)"} {
		if !strings.Contains(section, want) {
			t.Errorf("overhead section lacks %q:\n%s", want, section)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 1234567: "1,234,567", -45000: "-45,000"} {
		if got := termtext.Count(n); got != want {
			t.Errorf("termtext.Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestTableGolden(t *testing.T) {
	var b strings.Builder
	if err := fixture().Table(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "table.txt", b.String())
}

func TestWriteAndRead(t *testing.T) {
	dir := t.TempDir()
	r := fixture()
	if err := r.Write(dir, nil); err != nil {
		t.Fatal(err)
	}
	r.Verdict = "pass"
	if err := r.Write(dir, nil); err != nil {
		t.Fatal(err)
	}
	got, err := Read(filepath.Join(dir, JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != "pass" || len(got.Phases) != 2 || got.Phases[1].ErrorsByClass["http_500"] != 3 {
		t.Errorf("round trip lost data: %+v", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 4 {
		names := []string{}
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("want report.json, report.md, junit.xml and report.html only, got %v (temporary files left behind?)", names)
	}
	// Required keys, as CI consumers read them.
	raw, _ := os.ReadFile(filepath.Join(dir, JSONFile))
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"verdict", "kpis", "phases", "target_pid", "schema_version"} {
		if _, ok := m[k]; !ok {
			t.Errorf("report.json lacks %q", k)
		}
	}
	if err := fsutil.WriteFile(filepath.Join(dir, "missing-dir", "x"), []byte("x"), 0o644); err == nil {
		t.Errorf("writing into a missing directory must fail")
	}
}

func TestSamplesRoundTripInfiniteBounds(t *testing.T) {
	dir := t.TempDir()
	in := &Samples{PauseBuckets: Bounds{math.Inf(-1), 0, 1e-6, math.Inf(1)}, Samples: []profiles.Sample{{Phase: "p", GCCycles: 3}}}
	if err := fixture().Write(dir, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadSamples(filepath.Join(dir, SamplesFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.PauseBuckets) != 4 || !math.IsInf(out.PauseBuckets[0], -1) || !math.IsInf(out.PauseBuckets[3], 1) || out.PauseBuckets[2] != 1e-6 {
		t.Errorf("bounds: got %v", out.PauseBuckets)
	}
	if len(out.Samples) != 1 || out.Samples[0].GCCycles != 3 {
		t.Errorf("samples: got %+v", out.Samples)
	}
	var b Bounds
	if err := b.UnmarshalJSON([]byte(`["Inf"]`)); err == nil {
		t.Errorf("an unknown string bound must be an error")
	}
}

// TestMarkdownNoiseFloor: the rounds table prints the run's own smallest
// detectable effect and the recorded noise floor's.
func TestMarkdownNoiseFloor(t *testing.T) {
	r := fixture()
	for i := range r.KPIs {
		r.KPIs[i].Rounds = 2
	}
	r.Rounds = []Round{{Round: 1, REST: "rest-control#1", GraphQL: "graphql-load#1", KPIs: r.KPIs}, {Round: 2, REST: "rest-control#2", GraphQL: "graphql-load#2", KPIs: r.KPIs}}
	md, sd := 1.5, 0.4
	r.KPIs[0].MinDetectable, r.KPIs[0].NoiseMinDetectable, r.KPIs[0].NoiseSD = &md, &md, &sd
	r.KPIs[1].NoiseSD = &sd
	out := r.Markdown()
	for _, w := range []string{
		"| Smallest effect detectable (80 % power) | Recorded noise floor: smallest effect detectable |",
		"| 1.50 points | 1.50 points (sd 0.40) |",
		"n/a (sd 0.40 points; fewer than 2 rounds)",
		"| — |",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
}

// TestNotMeasuredArmIsNotZero: an arm's figure that was not measured reads
// "not measured" in report.md, report.html, junit.xml and the terminal
// table, never "0 B".
func TestNotMeasuredArmIsNotZero(t *testing.T) {
	r := fixture()
	for i := range r.KPIs {
		if r.KPIs[i].Name == "alloc_bytes_per_request" {
			r.KPIs[i].GraphQL, r.KPIs[i].GraphQLNotMeasured = 0, true
			r.KPIs[i].Delta, r.KPIs[i].Reason = nil, "GraphQL: no allocation counter"
		}
	}
	seen := 0
	var term strings.Builder
	if err := r.Table(&term); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"report.md": r.Markdown(), "terminal": term.String()} {
		for l := range strings.Lines(out) {
			row := strings.HasPrefix(l, "| Heap allocated per request |") || strings.HasPrefix(l, "Heap allocated per request ")
			if row && (strings.Contains(l, " 0 B") || !strings.Contains(l, "not measured")) {
				t.Errorf("%s: %q: an unmeasured arm must read not measured, not 0", name, l)
			}
			if row {
				seen++
			}
		}
	}
	if seen < 2 {
		t.Errorf("found the row in %d of report.md and the terminal table", seen)
	}
}

// TestMaxLoadWithoutAWindowHasNoPeak: a ramp that failed before any window
// was judged prints its peak as not measured, never "0 req/s with 0 users".
func TestMaxLoadWithoutAWindowHasNoPeak(t *testing.T) {
	ml := &MaxLoad{MaxLoadResult: workloads.MaxLoadResult{Failed: true, UsersAtFailure: 20, Reason: workloads.ReasonErrorRatio}}
	for _, l := range maxLoadLines(ml, plainMarkup()) {
		if strings.Contains(l, "0 req/s") {
			t.Errorf("%q: a peak of 0 was printed", l)
		}
	}
	if got := peakText(ml); !strings.HasPrefix(got, "not measured") {
		t.Errorf("peakText = %q, want not measured", got)
	}
}

// TestPerRequestWithoutResources: a phase whose resources could not be
// summarised prints its per-request costs as absent, never 0.0 µs or 0 B.
func TestPerRequestWithoutResources(t *testing.T) {
	got := perRequestCells(Phase{Name: "p", ResourcesError: "too short a steady window"})
	for _, c := range got {
		if c != "—" {
			t.Errorf("per-request cells without resources: %v, want — for each", got)
			break
		}
	}
}

// TestNotMeasuredCheckGivesNoFigure: a goroutine check on a Node target is
// not measured; its lines read "0 goroutines against 2 goroutines: not
// measured" before. Now the reasons, report.md and report.html give only
// the reason, and report.json writes a null value and no pass.
func TestNotMeasuredCheckGivesNoFigure(t *testing.T) {
	r := fixture()
	r.Checks = append(r.Checks, Check{Group: "rest", Name: "goroutines_returned", Title: "Goroutines returned to baseline", Phase: "graphql-load",
		Unit: "goroutines", Value: 0, Limit: 2, Outcome: kpi.OutcomeNotMeasured, Detail: "the target exposes no goroutine count", Definition: "d"})
	for _, l := range r.Reasons() {
		if strings.Contains(l, "Goroutines returned") && (strings.Contains(l, "against") || strings.Contains(l, "0 goroutines")) {
			t.Errorf("reason line gives figures: %q", l)
		}
	}
	h, err := r.HTML(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"report.md": r.Markdown(), "report.html": string(h)} {
		if strings.Contains(out, "0 goroutines") || strings.Contains(out, "2 goroutines") {
			t.Errorf("%s prints a not-measured check as figures", name)
		}
	}
	b, err := json.Marshal(r.Checks[len(r.Checks)-1])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"value":null`) || strings.Contains(string(b), `"pass"`) {
		t.Errorf("report.json check: %s", b)
	}
}

// TestReturnedNotMeasured: a phase whose goroutines were not measured read
// "no" under Returned, and a 0-byte baseline heap read "0.0 MiB"; Returned
// is now three-valued and the baseline not measured is "n/m".
func TestReturnedNotMeasured(t *testing.T) {
	a := &After{ReturnedNotMeasured: "goroutines not measured: the target exposes none", NoForcedGC: true,
		NotMeasured: map[string]string{"goroutines": "none", "subscribers": "not hosted", "heap_live_bytes": "no baseline"}}
	c := afterCells(a)
	if c[3] != "not measured" || strings.Contains(strings.Join(c, "|"), "MiB") {
		t.Errorf("cells %q", c)
	}
	a = &After{Returned: false, BaselineGoroutines: 3, Goroutines: 9}
	if c := afterCells(a); c[3] != "no" {
		t.Errorf("a judged return: %q", c)
	}
}

// TestScrapeOverLimitIsSaidBesideTheKPIs: a phase whose metrics scrape
// took more than its limit of the target's wall time is named beside the
// KPI table (report.md and the terminal) and in the harness's cost table.
func TestScrapeOverLimitIsSaidBesideTheKPIs(t *testing.T) {
	r := fixture()
	for i := range r.Phases {
		if r.Phases[i].Resources != nil {
			s := *r.Phases[i].Resources
			s.ScrapeCostMeanUs, s.ScrapeCostMaxUs, s.ScrapeBytesMean, s.ScrapeCorePercent = 12000, 31000, 9000, 4.8
			s.ScrapeLimitPercent, s.ScrapeOverLimit = 0.5, true
			r.Phases[i].Resources = &s
			break
		}
	}
	var term strings.Builder
	if err := r.Table(&term); err != nil {
		t.Fatal(err)
	}
	md := r.Markdown()
	for name, out := range map[string]string{"report.md": md, "terminal": term.String()} {
		if !strings.Contains(out, "took 4.80 % of wall time") || !strings.Contains(out, "CPU, throughput and latency figures include that cost") {
			t.Errorf("%s does not say the scrape's cost is above its limit", name)
		}
	}
	if !strings.Contains(md, "4.800 % (above the 0.5 % limit)") {
		t.Errorf("the harness's cost table does not flag the scrape")
	}
}

func TestOverheadLayersRendered(t *testing.T) {
	r := fixture()
	share, explained := 80.0, 90.0
	r.OverheadLayers = &OverheadLayers{TotalExtraMicrosPerReq: 50, ExplainedPercent: &explained, Layers: []OverheadLayer{
		{Layer: "execute", GraphQLMicrosPerReq: 40, GraphQLInterval: profiles.Interval{Low: 35.5, High: 44.9}, ExtraMicrosPerReq: 40,
			ExtraInterval: profiles.Interval{Low: 35, High: 45}, GraphQLAllocMicrosPerReq: 12, SharePercent: &share, GraphQLSamples: 400},
		{Layer: "other", RESTMicrosPerReq: 1, GraphQLMicrosPerReq: 6, ExtraMicrosPerReq: 5, RESTSamples: 10, GraphQLSamples: 60},
	}}
	md := r.Markdown()
	for _, want := range []string{"## Where the overhead goes, by layer", "the named layers explain 90.0 % of it",
		"| execute | 0.00 µs [0.00, 0.00] | 40.00 µs [35.50, 44.90] | +40.00 µs [+35.00, +45.00] | 80.0 % | 0.00 / 12.00 µs | 0 / 400 |",
		"| other | 1.00 µs", "| — |"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	html, err := r.HTML(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<table id="overhead-layers">`, "<td>execute</td>", "40.00 µs [35.50, 44.90]", "explain 90.0 %"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
}
