package run

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/target"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

func TestChecks(t *testing.T) {
	ps := []report.Phase{
		{Name: "r", Requests: 100, Errors: 0, Resources: &profiles.Summary{}, After: &report.After{BaselineGoroutines: 15, Goroutines: 15, Returned: true}},
		{Name: "g", Requests: 100, Errors: 2, ResourcesError: "only 1 sample",
			Subscriptions: &workloads.SubscriptionResult{Expected: 10, Received: 9, Lost: 1},
			After:         &report.After{BaselineGoroutines: 15, Goroutines: 30, Subscribers: 3}},
		{Name: "other", Errors: 50},
	}
	cs := checks(ps, map[string]bool{"r": true, "g": true})
	got := map[string]bool{}
	for _, c := range cs {
		got[c.Phase+"/"+c.Name] = c.Pass
	}
	want := map[string]bool{
		"r/no_failed_requests": true, "r/resources_measured": true, "r/released": true,
		"g/no_failed_requests": false, "g/resources_measured": false, "g/exact_delivery": false, "g/released": false,
	}
	if len(got) != len(want) {
		t.Errorf("got checks %v, want %v (errors of a phase not compared are not a check)", got, want)
	}
	for k, v := range want {
		if p, ok := got[k]; !ok || p != v {
			t.Errorf("%s: got %v (present %v), want %v", k, p, ok, v)
		}
	}
}

func TestEvaluateKPIsRounds(t *testing.T) {
	l := kpi.Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10}
	phase := func(name string, cpu float64) report.Phase {
		return report.Phase{Name: name, ThroughputRPS: 100, Resources: &profiles.Summary{CPUMachinePercent: cpu, CPUKnown: true, GCPercentKnown: true, GCPauses: 2}}
	}
	rest := map[int]report.Phase{1: phase("r#1", 10), 2: phase("r#2", 10), 3: phase("r#3", 10), 4: phase("r#4", 10)}
	gql := map[int]report.Phase{1: phase("g#1", 22), 2: phase("g#2", 24), 3: phase("g#3", 21), 4: phase("g#4", 23)}
	kpis, rounds, err := evaluateKPIs(rest, gql, 4, kpi.DefaultConfidence, l)
	if err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 4 || rounds[1].Verdict != kpi.OutcomeFail {
		t.Errorf("rounds: %+v", rounds)
	}
	for _, k := range kpis {
		if k.Name == "cpu_machine_percent" && (k.Outcome != kpi.OutcomeFail || k.Interval == nil || k.Interval.Lo <= 5) {
			t.Errorf("CPU +12.5 ± 1.3 points over 4 rounds must fail with its interval: %+v", k)
		}
	}
	if verdict(kpis, nil) != kpi.OutcomeFail {
		t.Errorf("verdict: got %s, want fail", verdict(kpis, nil))
	}
	if _, _, err := evaluateKPIs(rest, map[int]report.Phase{1: gql[1]}, 3, kpi.DefaultConfidence, l); err == nil {
		t.Errorf("a round without its GraphQL phase must be an error")
	}
	// One round is inconclusive however large the difference.
	one, _, err := evaluateKPIs(rest, gql, 1, kpi.DefaultConfidence, l)
	if err != nil || kpi.Verdict(one) != kpi.OutcomeInconclusive {
		t.Errorf("one round: %v %v", kpi.Verdict(one), err)
	}
	// A phase without resources: its figures are not measured, not 0.
	bare := map[int]report.Phase{1: {Name: "g", ThroughputRPS: 100, ResourcesError: "only 1 samples"}, 2: gql[2], 3: gql[3], 4: gql[4]}
	nm, _, _ := evaluateKPIs(rest, bare, 4, kpi.DefaultConfidence, l)
	for _, k := range nm {
		if k.Name == "cpu_machine_percent" && (k.Outcome != kpi.OutcomeNotMeasured || !strings.Contains(k.Reason, "only 1 samples")) {
			t.Errorf("missing resources must read not measured: %+v", k)
		}
	}
	if v := verdict(nm, []report.Check{{Pass: true}}); v != kpi.OutcomeFail && v != kpi.OutcomeInconclusive {
		t.Errorf("verdict with a not-measured KPI: %s", v)
	}
	if v := verdict([]kpi.Result{}, []report.Check{{Pass: false, Outcome: kpi.OutcomeNotMeasured}}); v != kpi.OutcomeInconclusive {
		t.Errorf("a not-measured check makes the verdict inconclusive, got %s", v)
	}
}

func TestCycleFigures(t *testing.T) {
	rep := &report.Report{
		Run: "x",
		Phases: []report.Phase{
			{Resources: &profiles.Summary{RSSBytesMax: 30}, After: &report.After{HeapLiveBytes: 5, Goroutines: 15}},
			{Resources: &profiles.Summary{RSSBytesMax: 40}, After: &report.After{HeapLiveBytes: 7, Goroutines: 16}},
		},
		KPIs: []kpi.Result{{Name: "gc_percent", GraphQL: 3, REST: 1.5}, {Name: "cpu_us_per_request", GraphQL: 120, REST: 60}},
	}
	f := cycleFigures(rep, 4)
	rgc, rcpu := 1.5, 60.0
	want := kpi.CycleFigures{Cycle: 4, Run: "x", HeapLiveBytes: 7, RSSBytes: 40, Goroutines: 16, GCPercent: 3, CPUMicrosPerRequest: 120,
		RESTGCPercent: &rgc, RESTCPUMicrosPerRequest: &rcpu}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got %+v, want %+v (the last phase's state, the largest RSS, the GraphQL arm's figures and the REST control's)", f, want)
	}
	// No control group, and a REST figure not measured: nil (null) with the
	// reason, never 0; a GraphQL figure not measured is named too.
	rep.KPIs = []kpi.Result{
		{Name: "gc_percent", GraphQL: 3, RESTNotMeasured: true, Reason: "REST's GC % was not measured: no samples"},
		{Name: "cpu_us_per_request", GraphQLNotMeasured: true, NoControl: true, Reason: "no CPU figure"},
	}
	f = cycleFigures(rep, 4)
	if f.RESTGCPercent != nil || f.RESTCPUMicrosPerRequest != nil || f.GCPercent != 3 ||
		!strings.Contains(f.NotMeasured["rest_gc_percent"], "no samples") ||
		f.NotMeasured["rest_cpu_us_per_request"] != kpi.NoControlGroup ||
		f.NotMeasured["cpu_us_per_request"] != "no CPU figure" {
		t.Errorf("figures not measured: %+v", f)
	}
}

func TestOfferedLoadNote(t *testing.T) {
	p := config.Profile{Compare: config.Compare{REST: "r", GraphQL: "g"}, Phases: []config.PhaseConfig{
		{Name: "r", Think: workloads.Think{Max: 15 * time.Millisecond}, Users: []workloads.UserGroup{{Users: 2, Iterations: 3}}},
		{Name: "g", Think: workloads.Think{Max: 30 * time.Millisecond}, Users: []workloads.UserGroup{{Users: 2, Iterations: 3}}},
	}}
	if offeredLoadNote(p) == "" {
		t.Errorf("different think times must be noted")
	}
	p.Phases[0].Think = p.Phases[1].Think
	if n := offeredLoadNote(p); n != "" {
		t.Errorf("identical offered load must not be noted: %s", n)
	}
}

func TestProgressFraction(t *testing.T) {
	closed := workloads.Phase{Groups: []workloads.UserGroup{{Users: 2, Iterations: 50}}}
	if f := fraction(closed, workloads.Progress{Requests: 25}); f != 0.25 {
		t.Errorf("closed: got %v, want 0.25", f)
	}
	ramping := workloads.Phase{Model: workloads.Ramping, Duration: 10 * time.Second, Groups: []workloads.UserGroup{{Users: 1}}}
	if f := fraction(ramping, workloads.Progress{ElapsedSeconds: 5, Requests: 1e6}); f != 0.5 {
		t.Errorf("ramping: got %v, want 0.5 (by time)", f)
	}
	if f := fraction(ramping, workloads.Progress{ElapsedSeconds: 50}); f != 1 {
		t.Errorf("capped at 1, got %v", f)
	}
}

func TestMemoryChecks(t *testing.T) {
	m := config.MemoryConfig{AllocSpikeFactor: 3, AllocWindow: 2 * time.Second, LiveHeapSlopeMaxBytesPerMin: 1 << 20,
		Warmup: 5 * time.Second, MinGCCycles: 8, MinSpan: 10 * time.Second,
		HeapReturnTolerancePercent: 10, HeapReturnToleranceBytes: 1 << 20, GoroutineReturnTolerance: 2}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// samples returns one sample a second for n seconds from start, a GC cycle in each, the live heap
	// climbing 2 MB a second until climb seconds from start (warm-up) and flat after.
	samples := func(n int, climb float64) []profiles.Sample {
		ss := make([]profiles.Sample, n)
		for i := range ss {
			s := float64(i)
			ss[i] = profiles.Sample{Time: start.Add(time.Duration(i) * time.Second), GCCycles: uint64(i),
				AllocBytes: uint64(i) * 10e6, HeapLiveBytes: uint64(40e6 + 2e6*min(s, climb))}
		}
		return ss
	}
	after := &report.After{BaselineGoroutines: 10, Goroutines: 10, BaselineHeapLiveBytes: 40e6, HeapLiveBytes: 41e6}
	f := func(name string, p report.Phase, ss []profiles.Sample, want map[string]kpi.Outcome, wantDetail string) {
		t.Helper()
		got := map[string]kpi.Outcome{}
		for _, c := range memoryChecks(p, target.MemoryData{Alloc: ss, Heap: ss}, m) {
			if c.Group != "memory" || c.Phase != p.Name || c.Pass != (c.Outcome == kpi.OutcomePass) {
				t.Errorf("%s: got check %+v, want group memory, phase %s, pass only with outcome pass", name, c, p.Name)
			}
			got[c.Name] = kpi.Outcome(c.Outcome)
			if c.Name == kpi.RuleSurvivorGrowth && !strings.Contains(c.Detail, wantDetail) {
				t.Errorf("%s: got survivor_growth detail %q, want it to contain %q", name, c.Detail, wantDetail)
			}
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: got outcomes %v, want %v", name, got, want)
		}
	}
	all := func(o kpi.Outcome) map[string]kpi.Outcome {
		return map[string]kpi.Outcome{kpi.RuleSteadyAllocation: o, kpi.RuleSurvivorGrowth: o, kpi.RuleHeapReturned: o,
			kpi.RuleGoroutinesReturned: o}
	}
	// The warm-up counts from the start of the steady window: the climb of its first 5 s is ignored. The
	// first live-heap point is the second sample's (a GC cycle is seen between two samples).
	f("warm-up then flat", report.Phase{Name: "mem", SteadyStart: start, After: after}, samples(30, 5),
		all(kpi.OutcomePass), "25 GC cycles over 24.0s after the 5s warm-up (4 earlier cycles ignored)")
	// Without a steady start, the window starts at the first sample.
	f("no steady start", report.Phase{Name: "mem", After: after}, samples(30, 5), all(kpi.OutcomePass),
		"25 GC cycles over 24.0s after the 5s warm-up (4 earlier cycles ignored)")
	// A steady window that starts 3 s before the first sample: only the point at 4 s is in the warm-up.
	f("steady start before the samples", report.Phase{Name: "mem", SteadyStart: start.Add(-3 * time.Second), After: after},
		samples(30, 0), all(kpi.OutcomePass), "28 GC cycles over 27.0s after the 5s warm-up (1 earlier cycles ignored)")
	// A climb that goes on past the warm-up is growth.
	climbing := all(kpi.OutcomePass)
	climbing[kpi.RuleSurvivorGrowth] = kpi.OutcomeFail
	f("climbing all along", report.Phase{Name: "mem", SteadyStart: start, After: after}, samples(30, 30), climbing,
		"the live heap grows")
	// A scaled-down phase: 12 s leave 7 cycles over 6 s after the warm-up, and no post-phase figures.
	short := all(kpi.OutcomeNotMeasured)
	short[kpi.RuleSteadyAllocation] = kpi.OutcomePass
	f("too short", report.Phase{Name: "mem", SteadyStart: start}, samples(12, 5), short,
		"not measured: 7 GC cycles over 6.0s after the 5s warm-up (4 earlier cycles ignored); need at least 8 "+
			"cycles (min_gc_cycles) and need a span of at least 10s (min_span); lengthen the phase or lower warmup")
}

// TestMemoryChecksNotMeasured: a figure the target could not give (after
// the phase, or in its samples) makes its rule not measured with the
// target's reason, and a target's source clause reaches the definition.
func TestMemoryChecksNotMeasured(t *testing.T) {
	p := report.Phase{Name: "memory-profile", After: &report.After{
		BaselineGoroutines: 10, Goroutines: 10,
		NotMeasured: map[string]string{"heap_live_bytes": "the Node target exposes no heap-after-GC figure"},
	}}
	d := target.MemoryData{
		NotMeasured: map[string]string{kpi.RuleSurvivorGrowth: "no sample in the steady window"},
		Sources:     map[string]string{kpi.RuleHeapReturned: "no GC can be forced in it"},
	}
	cs := memoryChecks(p, d, config.MemoryConfig{AllocSpikeFactor: 3, AllocWindow: 20 * time.Millisecond, MinGCCycles: 3, HeapReturnTolerancePercent: 10, GoroutineReturnTolerance: 2})
	i := slices.IndexFunc(cs, func(c report.Check) bool { return c.Name == kpi.RuleHeapReturned })
	if i < 0 {
		t.Fatalf("no heap_returned check: %+v", cs)
	}
	if c := cs[i]; c.Outcome != kpi.OutcomeNotMeasured || !strings.Contains(c.Detail, "not measured: the Node target exposes no heap-after-GC figure") ||
		!strings.Contains(c.Definition, "no GC can be forced") {
		t.Errorf("heap_returned: %+v", c)
	}
	for _, c := range cs {
		if c.Outcome == kpi.OutcomeNotMeasured && !strings.HasPrefix(c.Detail, "not measured") {
			t.Errorf("%s not measured without its reason: %q", c.Name, c.Detail)
		}
	}
	p.After.NotMeasured["goroutines"] = "the target gives no goroutines figure"
	rel := checks([]report.Phase{p}, map[string]bool{})
	if len(rel) != 1 || rel[0].Name != "released" || rel[0].Outcome != kpi.OutcomeNotMeasured || !strings.Contains(rel[0].Detail, "gives no goroutines figure") {
		t.Errorf("released: %+v", rel)
	}
}

// TestAbsoluteChecks: each set limit is one check over the GraphQL
// phase's rounds, decided by the interval of the mean; an unset limit is
// no check; a round without the figure makes it not measured.
func TestAbsoluteChecks(t *testing.T) {
	gql := map[int]report.Phase{}
	for r, p99 := range []float64{4.0, 4.2, 3.9, 4.1} {
		gql[r+1] = report.Phase{Name: fmt.Sprintf("graphql-load#%d", r+1), Requests: 10000, Errors: int64(r % 2), ThroughputRPS: 1500 + float64(r),
			LatencyMs: workloads.Latency{P99: p99}}
	}
	cs := absoluteChecks(gql, config.AbsoluteLimits{P99LatencyMs: 5, ErrorRatio: 0.00001, ThroughputRPS: 1501}, 0.95)
	got := map[string]report.Check{}
	for _, c := range cs {
		got[c.Name] = c
		t.Logf("%s %s: %s (%s)", c.Phase, c.Name, c.Outcome, c.Detail)
		if c.Group != "absolute" || c.Phase != "graphql-load" {
			t.Errorf("%s: group %q phase %q", c.Name, c.Group, c.Phase)
		}
	}
	if len(cs) != 3 {
		t.Fatalf("%d checks, want one per set limit (3)", len(cs))
	}
	if c := got["p99_latency_ms"]; c.Outcome != kpi.OutcomePass || math.Abs(c.Value-4.05) > 1e-9 {
		t.Errorf("p99: %s %v, want pass at 4.05 ms", c.Outcome, c.Value)
	}
	// 0.5 errors in 10,000 a round on average, 5e-5 against a 1e-5 limit.
	if c := got["error_ratio"]; c.Outcome == kpi.OutcomePass {
		t.Errorf("error ratio: %s, want it not to pass (mean 5e-5 over a 1e-5 limit)", c.Outcome)
	}
	// 1500…1503 req/s against at least 1501: the interval straddles it.
	if c := got["throughput_rps"]; c.Outcome != kpi.OutcomeInconclusive {
		t.Errorf("throughput: %s (%s), want inconclusive", c.Outcome, c.Detail)
	}
	// A round without resources: CPU per request not measured, never 0.
	cs = absoluteChecks(gql, config.AbsoluteLimits{CPUMicrosPerRequest: 100}, 0.95)
	if len(cs) != 1 || cs[0].Outcome != kpi.OutcomeNotMeasured || !strings.Contains(cs[0].Detail, "round 1") {
		t.Errorf("cpu per request without resources: %+v", cs)
	}
}
