package metrics

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/soakd/soakd/internal/donut"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/workloads"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// sample is one gathered series: its labels and value (a histogram's
// sample count).
type sample struct {
	labels map[string]string
	value  float64
}

// gather returns every series of the metric name in g.
func gather(t *testing.T, g prometheus.Gatherer, name string) []sample {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("cannot gather: %v", err)
	}
	var out []sample
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			s := sample{labels: make(map[string]string)}
			for _, lp := range m.GetLabel() {
				s.labels[lp.GetName()] = lp.GetValue()
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				s.value = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s.value = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				s.value = float64(m.GetHistogram().GetSampleCount())
			case dto.MetricType_SUMMARY: // one sample per quantile
				for _, q := range m.GetSummary().GetQuantile() {
					qs := sample{labels: maps.Clone(s.labels), value: q.GetValue()}
					qs.labels["quantile"] = fmt.Sprint(q.GetQuantile())
					out = append(out, qs)
				}
				continue
			default:
				t.Fatalf("%s: unexpected type %s", name, mf.GetType())
			}
			out = append(out, s)
		}
	}
	return out
}

// value returns the value of the series of name whose labels are exactly
// labels ("k=v" pairs), and whether it exists.
func value(t *testing.T, g prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	t.Helper()
	want := make(map[string]string)
	for _, kv := range labels {
		k, v, _ := strings.Cut(kv, "=")
		want[k] = v
	}
	for _, s := range gather(t, g, name) {
		if maps.Equal(s.labels, want) {
			return s.value, true
		}
	}
	return 0, false
}

// mustValue is value that fails the test when the series is absent.
func mustValue(t *testing.T, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	v, ok := value(t, g, name, labels...)
	if !ok {
		t.Fatalf("no series %s%v; have %v", name, labels, gather(t, g, name))
	}
	return v
}

func TestPhaseInfoHoldsOnlyTheRunningPhase(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	if got := gather(t, reg, "soakd_phase_info"); len(got) != 0 {
		t.Fatalf("before any phase: got %v, want no series", got)
	}
	m.PhaseStarted("run1", "rest", "rest")
	m.PhaseEnded()
	m.PhaseStarted("run2", "graphql", "graphql")
	got := gather(t, reg, "soakd_phase_info")
	want := map[string]string{"run": "run2", "phase": "graphql", "arm": "graphql"}
	if len(got) != 1 || !maps.Equal(got[0].labels, want) || got[0].value != 1 {
		t.Fatalf("got %v, want one series %v = 1", got, want)
	}
	m.PhaseEnded()
	if got := gather(t, reg, "soakd_phase_info"); len(got) != 0 {
		t.Fatalf("after PhaseEnded: got %v, want no series", got)
	}
	// Starting a phase without ending the last one still leaves one series.
	m.PhaseStarted("run3", "a", "rest")
	m.PhaseStarted("run3", "b", "graphql")
	if got := gather(t, reg, "soakd_phase_info"); len(got) != 1 || got[0].labels["phase"] != "b" {
		t.Fatalf("got %v, want only phase b", got)
	}
}

func TestDriverProgressCounters(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.PhaseStarted("r", "rest", "rest")
	if got := mustValue(t, reg, "soakd_driver_requests_total", "phase=rest", "arm=rest"); got != 0 {
		t.Fatalf("at phase start: requests got %v, want 0 (series present from the start)", got)
	}
	// Every known error class starts at 0, so an error panel reads 0 and
	// not "No data" before the first error.
	for _, cls := range DriverErrorClasses() {
		if got := mustValue(t, reg, "soakd_driver_errors_total", "phase=rest", "arm=rest", "class="+cls); got != 0 {
			t.Fatalf("at phase start: errors{class=%s} got %v, want 0", cls, got)
		}
	}
	m.DriverProgress("rest", "rest", DriverProgress{Requests: 100, Errors: 2, ActiveUsers: 10})
	m.DriverProgress("rest", "rest", DriverProgress{Requests: 100, Errors: 2, ActiveUsers: 10}) // a repeat adds nothing
	m.DriverProgress("rest", "rest", DriverProgress{Requests: 250, Errors: 5, ErrorsByClass: map[string]int64{"timeout": 4, "http_500": 1}, Dropped: 3, ActiveUsers: 8})
	f := func(name string, want float64, labels ...string) {
		t.Helper()
		if got := mustValue(t, reg, name, labels...); got != want {
			t.Errorf("%s%v: got %v, want %v", name, labels, got, want)
		}
	}
	f("soakd_driver_requests_total", 250, "phase=rest", "arm=rest")
	f("soakd_driver_dropped_total", 3, "phase=rest", "arm=rest")
	f("soakd_driver_active_users", 8, "phase=rest", "arm=rest")
	// 2 unclassified first; then 3 more errors: http_500 (sorted first) takes
	// 1, timeout the remaining 2 of its 4.
	f("soakd_driver_errors_total", 2, "phase=rest", "arm=rest", "class=unclassified")
	f("soakd_driver_errors_total", 1, "phase=rest", "arm=rest", "class=http_500")
	f("soakd_driver_errors_total", 2, "phase=rest", "arm=rest", "class=timeout")

	// A new driver for the same phase counts from zero again.
	m.DriverProgress("rest", "rest", DriverProgress{Requests: 10, Errors: 1, ErrorsByClass: map[string]int64{"timeout": 1}})
	f("soakd_driver_requests_total", 260, "phase=rest", "arm=rest")
	f("soakd_driver_errors_total", 3, "phase=rest", "arm=rest", "class=timeout")

	m.PhaseEnded()
	f("soakd_driver_active_users", 0, "phase=rest", "arm=rest")
}

func TestErrorIncrementsAddUpToErrors(t *testing.T) {
	type step struct {
		errors  int64
		classes map[string]int64
		want    map[string]int64 // increments
	}
	f := func(name string, steps ...step) {
		t.Helper()
		m := New(prometheus.NewRegistry())
		c := &counted{classes: make(map[string]int64)}
		var total int64
		for i, s := range steps {
			got := m.errorIncrements(c, DriverProgress{Errors: s.errors, ErrorsByClass: s.classes})
			if !maps.Equal(got, s.want) && (len(got) != 0 || len(s.want) != 0) {
				t.Errorf("%s step %d: got increments %v, want %v", name, i, got, s.want)
			}
			for _, n := range got {
				total += n
			}
			if total != s.errors {
				t.Errorf("%s step %d: counted %d errors in all, want %d", name, i, total, s.errors)
			}
		}
	}
	f("classes every time",
		step{3, map[string]int64{"timeout": 3}, map[string]int64{"timeout": 3}},
		step{5, map[string]int64{"timeout": 4, "http_500": 1}, map[string]int64{"timeout": 1, "http_500": 1}},
	)
	f("no classes then classes",
		step{2, nil, map[string]int64{"unclassified": 2}},
		step{3, map[string]int64{"timeout": 3}, map[string]int64{"timeout": 1}},
	)
	f("classes that do not cover errors",
		step{4, map[string]int64{"timeout": 1}, map[string]int64{"timeout": 1, "unclassified": 3}},
	)
	f("no new errors",
		step{2, map[string]int64{"timeout": 2}, map[string]int64{"timeout": 2}},
		step{2, map[string]int64{"timeout": 2}, nil},
	)
}

func TestErrorClassesAreCapped(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	classes := make(map[string]int64)
	for i := range MaxErrorClasses + 10 {
		classes[fmt.Sprintf("http_%d", 400+i)] = 1
	}
	m.DriverProgress("p", "rest", DriverProgress{Errors: int64(len(classes)), ErrorsByClass: classes})
	series := gather(t, reg, "soakd_driver_errors_total")
	if len(series) != MaxErrorClasses+1 {
		t.Fatalf("got %d class series, want %d (the cap plus other)", len(series), MaxErrorClasses+1)
	}
	if got := mustValue(t, reg, "soakd_driver_errors_total", "phase=p", "arm=rest", "class=other"); got != 10 {
		t.Fatalf("class other: got %v, want 10", got)
	}
}

func TestPhasesAreCapped(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	for i := range MaxPhases + 5 {
		p := fmt.Sprintf("phase%02d", i)
		m.PhaseStarted("r", p, "rest")
		m.DriverProgress(p, "rest", DriverProgress{Requests: 1})
		m.DriverLatency(p, "rest", workloads.Latency{P50: 1}, 1)
		m.Subscriptions(p, 1, 1, 0, 0)
		m.PhaseEnded()
	}
	for _, name := range []string{"soakd_driver_requests_total", "soakd_driver_active_users", "soakd_subscription_expected_events"} {
		if got := len(gather(t, reg, name)); got != MaxPhases {
			t.Errorf("%s: got %d series, want %d", name, got, MaxPhases)
		}
	}
	if got := len(gather(t, reg, "soakd_driver_latency_seconds")); got != MaxPhases*5 {
		t.Errorf("latency: got %d series, want %d", got, MaxPhases*5)
	}
	if _, ok := value(t, reg, "soakd_driver_requests_total", "phase=phase00", "arm=rest"); ok {
		t.Errorf("the oldest phase still has series")
	}
	if len(m.counted) > MaxPhases {
		t.Errorf("got %d phases of counters kept, want at most %d", len(m.counted), MaxPhases)
	}
}

func TestDriverResult(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.PhaseStarted("r", "gql", "graphql")
	m.DriverProgress("gql", "graphql", DriverProgress{Requests: 90, Errors: 1, ErrorsByClass: map[string]int64{"graphql_error": 1}})
	m.DriverResult(workloads.Result{
		Phase: "gql", Arm: "graphql", Requests: 100, Errors: 2,
		ErrorsByClass: map[string]int64{"graphql_error": 1, "timeout": 1},
		LatencyMs:     workloads.Latency{P50: 1, P90: 2, P99: 5, P999: 9, Max: 20, Mean: 1.5},
		Open:          &workloads.OpenResult{Dropped: 7},
		Subscriptions: &workloads.SubscriptionResult{Expected: 10, Received: 11, Lost: 1, Duplicated: 2},
		MaxLoad:       &workloads.MaxLoadResult{Failed: true, UsersAtFailure: 40, PeakThroughputRPS: 1234.5, PeakUsers: 35, PeakWindowEnd: time.Unix(100, 0)},
	})
	m.PhaseEnded()
	f := func(name string, want float64, labels ...string) {
		t.Helper()
		if got := mustValue(t, reg, name, labels...); got != want {
			t.Errorf("%s%v: got %v, want %v", name, labels, got, want)
		}
	}
	f("soakd_driver_requests_total", 100, "phase=gql", "arm=graphql")
	f("soakd_driver_dropped_total", 7, "phase=gql", "arm=graphql")
	f("soakd_driver_errors_total", 1, "phase=gql", "arm=graphql", "class=graphql_error")
	f("soakd_driver_errors_total", 1, "phase=gql", "arm=graphql", "class=timeout")
	for q, want := range map[string]float64{"0.5": 0.001, "0.9": 0.002, "0.99": 0.005, "0.999": 0.009, "1": 0.02} {
		f("soakd_driver_latency_seconds", want, "phase=gql", "arm=graphql", "quantile="+q)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "soakd_driver_latency_seconds" {
			sum := mf.GetMetric()[0].GetSummary()
			if sum.GetSampleCount() != 98 || math.Abs(sum.GetSampleSum()-0.147) > 1e-9 {
				t.Errorf("latency summary: got count %d sum %v, want 98 successful requests and 98 × 1.5 ms = 0.147 s",
					sum.GetSampleCount(), sum.GetSampleSum())
			}
		}
	}
	f("soakd_subscription_expected_events", 10, "phase=gql")
	f("soakd_subscription_received_events", 11, "phase=gql")
	f("soakd_subscription_lost_events", 1, "phase=gql")
	f("soakd_subscription_duplicated_events", 2, "phase=gql")
	f("soakd_max_load_peak_requests_per_second", 1234.5, "phase=gql", "arm=graphql")
	f("soakd_max_load_peak_users", 35, "phase=gql", "arm=graphql")
	f("soakd_max_load_users_at_failure", 40, "phase=gql", "arm=graphql")
	f("soakd_max_load_failed", 1, "phase=gql", "arm=graphql")
	// A ramp that failed before any window was judged has no peak, not 0.
	m.MaxLoad("gql", "graphql", workloads.MaxLoadResult{Failed: true, UsersAtFailure: 20})
	if _, ok := value(t, reg, "soakd_max_load_peak_requests_per_second", "phase=gql", "arm=graphql"); ok {
		t.Error("a max-load phase without a judged window exports a peak")
	}

	// The next run of the phase forgets the old latency summary.
	m.PhaseStarted("r2", "gql", "graphql")
	if got := gather(t, reg, "soakd_driver_latency_seconds"); len(got) != 0 {
		t.Errorf("latency at the phase's next start: got %v, want none", got)
	}
}

func TestKPIResults(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	limits := kpi.Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10}
	rows := kpi.Evaluate(
		kpi.Figures{CPUMachinePercent: 20, GCPercent: 2, ThroughputRPS: 1000, AllocBytesPerRequest: 0},
		kpi.Figures{CPUMachinePercent: 30, GCPercent: 2.5, ThroughputRPS: 950, AllocBytesPerRequest: 100},
		limits)
	m.KPIResults(rows)
	f := func(name string, want float64, labels ...string) {
		t.Helper()
		if got := mustValue(t, reg, name, labels...); got != want {
			t.Errorf("%s%v: got %v, want %v", name, labels, got, want)
		}
	}
	// One unit per metric, in base units: shares as ratios, sizes in
	// bytes, durations in seconds; the variance as a ratio of its kind.
	f("soakd_kpi_value_ratio", 0.2, "kpi=cpu_machine_percent", "arm=rest")
	f("soakd_kpi_value_ratio", 0.3, "kpi=cpu_machine_percent", "arm=graphql")
	f("soakd_kpi_value_bytes", 100, "kpi=alloc_bytes_per_request", "arm=graphql")
	f("soakd_kpi_value_requests_per_second", 950, "kpi=throughput_rps", "arm=graphql")
	f("soakd_kpi_delta_ratio", 0.1, "kpi=cpu_machine_percent", "kind=difference")
	f("soakd_kpi_threshold_ratio", 0.05, "kpi=cpu_machine_percent", "kind=difference")
	f("soakd_kpi_delta_ratio", -0.05, "kpi=throughput_rps", "kind=relative")
	f("soakd_kpi_pass", 0, "kpi=cpu_machine_percent")
	f("soakd_kpi_pass", 1, "kpi=gc_percent")
	f("soakd_kpi_threshold_ratio", -0.1, "kpi=throughput_rps", "kind=relative")
	if _, ok := value(t, reg, "soakd_kpi_pass", "kpi=cpu_core_percent"); ok {
		t.Errorf("an informational KPI is exported as pass")
	}
	f("soakd_kpi_outcome", 1, "kpi=cpu_machine_percent", "outcome=fail")
	f("soakd_kpi_outcome", 0, "kpi=cpu_machine_percent", "outcome=pass")
	// Over rounds, an inconclusive row is neither pass nor fail.
	agg, err := kpi.Aggregate([][]kpi.Result{rows}, kpi.DefaultConfidence)
	if err != nil {
		t.Fatal(err)
	}
	m.KPIResults(agg)
	f("soakd_kpi_pass", 0, "kpi=gc_percent")
	f("soakd_kpi_outcome", 1, "kpi=gc_percent", "outcome=inconclusive")
	m.KPIResults(rows)
	// The run's verdict: every value present, one of them 1.
	f("soakd_run_verdict", 0, "verdict=fail")
	m.RunVerdict("inconclusive")
	f("soakd_run_verdict", 1, "verdict=inconclusive")
	f("soakd_run_verdict", 0, "verdict=pass")
	if got := len(gather(t, reg, "soakd_run_verdict")); got != 5 {
		t.Errorf("run verdict series: got %d, want 5", got)
	}
	if _, ok := value(t, reg, "soakd_kpi_threshold_ratio", "kpi=cpu_core_percent", "kind=difference"); ok {
		t.Errorf("an informational KPI has a threshold series")
	}
	if _, ok := value(t, reg, "soakd_kpi_delta_ratio", "kpi=alloc_bytes_per_request", "kind=relative"); ok {
		t.Errorf("a KPI with an undefined delta (REST 0) has a delta series")
	}
	if got, want := len(gather(t, reg, "soakd_kpi_pass")), 3; got != want {
		t.Errorf("pass series: got %d, want %d (the gated rows)", got, want)
	}
	// The next run replaces the rows.
	m.KPIResults(rows[:1])
	if got := len(gather(t, reg, "soakd_kpi_value_ratio")); got != 2 {
		t.Errorf("after one row: got %d value series, want 2", got)
	}
}

// TestEveryKPIUnitHasABaseUnit: a KPI row whose unit had no family would
// silently vanish from Prometheus.
func TestEveryKPIUnitHasABaseUnit(t *testing.T) {
	rows := kpi.Evaluate(kpi.Figures{ThroughputRPS: 1}, kpi.Figures{ThroughputRPS: 1}, kpi.Limits{})
	if len(rows) < 7 {
		t.Fatalf("got %d KPI rows, want the 7 of the table", len(rows))
	}
	for _, r := range rows {
		if _, _, ok := BaseUnit(r.Unit); !ok {
			t.Errorf("KPI %s: unit %q has no soakd_kpi_value_* family", r.Name, r.Unit)
		}
	}
}

func TestBroker(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	b := donut.NewBroker(1)
	m.Broker(b.Stats)
	_, cancel := b.Subscribe("1")
	defer cancel()
	b.Publish(donut.Donut{ID: "1"})
	b.Publish(donut.Donut{ID: "1"}) // the buffer of 1 is full: dropped
	b.Publish(donut.Donut{ID: "2"})
	f := func(name string, want float64) {
		t.Helper()
		if got := mustValue(t, reg, name); got != want {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
	f("soakd_broker_subscribers", 1)
	f("soakd_broker_published_events_total", 3)
	f("soakd_broker_delivered_events_total", 1)
	f("soakd_broker_dropped_events_total", 1)

	// A new broker replaces the old one without a registration error.
	m.Broker(donut.NewBroker(1).Stats)
	f("soakd_broker_published_events_total", 0)
}

func TestLabel(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := label(in); got != want {
			t.Errorf("label(%q): got %q, want %q", in, got, want)
		}
	}
	f("", "none")
	f("rest", "rest")
	f("a\xffb", "a?b")
	f(strings.Repeat("x", 100), strings.Repeat("x", maxLabelBytes))
	f(strings.Repeat("x", maxLabelBytes-1)+"é", strings.Repeat("x", maxLabelBytes-1)) // never cuts a rune
}

func TestValidOperationName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"Donut", true}, {"_x9", true}, {"UpdateDonut", true},
		{"", false}, {"9a", false}, {"a-b", false}, {"a b", false}, {"é", false},
		{strings.Repeat("a", maxLabelBytes), true}, {strings.Repeat("a", maxLabelBytes+1), false},
	} {
		if got := ValidOperationName(tc.name); got != tc.want {
			t.Errorf("ValidOperationName(%q): got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestOperationNamesAreCapped(t *testing.T) {
	m := New(prometheus.NewRegistry())
	var names []string
	for i := range MaxOperations + 5 {
		names = append(names, *m.operationName(fmt.Sprintf("Op%d", i)))
	}
	if got := names[MaxOperations-1]; got != fmt.Sprintf("Op%d", MaxOperations-1) {
		t.Errorf("name %d: got %q, want it admitted", MaxOperations-1, got)
	}
	if got := slices.Index(names, OperationOther); got != MaxOperations {
		t.Errorf("first %q at %d, want %d", OperationOther, got, MaxOperations)
	}
	if got := *m.operationName("Op0"); got != "Op0" {
		t.Errorf("an admitted name after the cap: got %q, want Op0", got)
	}
	if got := *m.operationName(""); got != OperationAnonymous {
		t.Errorf("empty name: got %q, want %q", got, OperationAnonymous)
	}
}

// TestOperationNameDoesNotPinQueryText: an admitted operation name is a
// copy, not a substring of the query it came from, so the series label
// does not keep a (possibly megabyte) query alive.
func TestOperationNameDoesNotPinQueryText(t *testing.T) {
	m := New(prometheus.NewRegistry())
	query := "query BigOne { x }" + strings.Repeat(" ", 1<<20)
	name := query[len("query ") : len("query ")+len("BigOne")]
	p := m.operationName(name)
	if *p != "BigOne" {
		t.Fatalf("name = %q", *p)
	}
	if unsafe.StringData(*p) == unsafe.StringData(name) {
		t.Error("the admitted operation name shares the query's memory")
	}
}

// TestCheckResults: every check is exposed with its outcome at 1 and the
// others at 0, and a later run's checks replace an earlier run's.
func TestCheckResults(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.CheckResults([]CheckOutcome{{Check: "memory/survivor_growth", Phase: "memory-profile", Outcome: kpi.OutcomeNotMeasured}, {Check: "errors/no_failed_requests", Phase: "graphql-load", Outcome: kpi.OutcomeFail}})
	f := func(want float64, labels ...string) {
		t.Helper()
		if got, ok := value(t, reg, "soakd_check_outcome", labels...); !ok || got != want {
			t.Errorf("soakd_check_outcome{%s} = %v (present %v), want %v", labels, got, ok, want)
		}
	}
	f(1, "check=memory/survivor_growth", "phase=memory-profile", "outcome=not_measured")
	f(0, "check=memory/survivor_growth", "phase=memory-profile", "outcome=pass")
	f(1, "check=errors/no_failed_requests", "phase=graphql-load", "outcome=fail")
	m.CheckResults([]CheckOutcome{{Check: "errors/no_failed_requests", Phase: "graphql-load", Outcome: kpi.OutcomePass}})
	if _, ok := value(t, reg, "soakd_check_outcome", "check=memory/survivor_growth", "phase=memory-profile", "outcome=not_measured"); ok {
		t.Error("an earlier run's check is still exposed")
	}
	f(1, "check=errors/no_failed_requests", "phase=graphql-load", "outcome=pass")
}

// TestANewRunDropsTheLastRunsPhaseSeries: a long-lived daemon's target kept
// about 17 series for every phase name ever run (311 → 332 → 349 → 366 over
// three runs with new phase names); a new run drops the last run's.
func TestANewRunDropsTheLastRunsPhaseSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	run := func(id string, phases ...string) {
		for _, p := range phases {
			m.PhaseStarted(id, p, "rest")
			m.DriverProgress(p, "rest", DriverProgress{Requests: 1})
			m.Subscriptions(p, 1, 1, 0, 0)
			m.PhaseEnded()
		}
	}
	run("r1", "a1", "b1")
	run("r2", "a2", "b2")
	run("r3", "a3")
	if got := len(gather(t, reg, "soakd_driver_requests_total")); got != 1 {
		t.Errorf("driver request series after three runs: %d, want the last run's 1", got)
	}
	if _, ok := value(t, reg, "soakd_driver_requests_total", "phase=b2", "arm=rest"); ok {
		t.Error("the last run's phase b2 still has series")
	}
	if _, ok := value(t, reg, "soakd_subscription_expected_events", "phase=a3"); !ok {
		t.Error("the running run's phase lost its series")
	}
}
