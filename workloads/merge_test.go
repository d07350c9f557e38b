package workloads

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// newHist returns an empty histogram of the driver's settings.
func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)
}

// TestMergeHistogramsEqualsHistogramOfAll records the same random latencies
// into one histogram and, striped, into three: the merge of the three has
// the same bucket counts, so the same percentiles, as the one.
func TestMergeHistogramsEqualsHistogramOfAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{1, 2, 3, 7} {
		all := newHist()
		parts := make([]*hdrhistogram.Histogram, n)
		for i := range parts {
			parts[i] = newHist()
		}
		for k := range 20_000 {
			// Log-uniform from 1 µs to 60 s, so every magnitude is covered.
			v := int64(1 + rng.Float64()*rng.Float64()*rng.Float64()*float64(histMaxMicros-1))
			if err := all.RecordValue(v); err != nil {
				t.Fatal(err)
			}
			if err := parts[k%n].RecordValue(v); err != nil {
				t.Fatal(err)
			}
		}
		snaps := make([]*hdrhistogram.Snapshot, n)
		for i, h := range parts {
			snaps[i] = h.Export()
		}
		got, err := MergeHistograms(snaps)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Export().Counts, all.Export().Counts) || got.TotalCount() != all.TotalCount() {
			t.Fatalf("%d shards: merged bucket counts differ from the histogram of all values", n)
		}
		for _, q := range []float64{50, 90, 99, 99.9, 100} {
			if g, w := got.ValueAtQuantile(q), all.ValueAtQuantile(q); g != w {
				t.Errorf("%d shards: p%g = %d, want %d", n, q, g, w)
			}
		}
	}
}

// TestMergeHistogramsRefusesOtherSettings refuses a histogram of another
// range or precision, and a missing one, naming the shard.
func TestMergeHistogramsRefusesOtherSettings(t *testing.T) {
	ok := newHist().Export()
	for name, other := range map[string]*hdrhistogram.Snapshot{
		"precision": hdrhistogram.New(histMinMicros, histMaxMicros, 2).Export(),
		"range":     hdrhistogram.New(histMinMicros, 10*histMaxMicros, histSigFigs).Export(),
		"lowest":    hdrhistogram.New(10, histMaxMicros, histSigFigs).Export(),
		"missing":   nil,
	} {
		_, err := MergeHistograms([]*hdrhistogram.Snapshot{ok, other})
		if err == nil || !strings.Contains(err.Error(), "shard 1") {
			t.Errorf("%s: got %v, want an error naming shard 1", name, err)
		}
	}
}

// shardResult returns shard i of n of a closed phase of two operations,
// with the latencies lat (µs) recorded in operation 0 and errs failures
// of class http_500 in operation 1, steady from t0+steadyFrom to
// t0+steadyTo with steady requests.
func shardResult(t *testing.T, i, n int, t0 time.Time, lat []int64, errs int64, steadyFrom, steadyTo time.Duration, steady int64) Result {
	t.Helper()
	h := newHist()
	for _, v := range lat {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	ex := make([]string, min(errs, maxExamples))
	for k := range ex {
		ex[k] = "shard " + Shard{Index: i, Count: n}.String()
	}
	return Result{
		Phase: "p", Arm: "graphql", Model: Closed, DriverPID: 100 + i, ClosedModel: true, LatencyNote: LatencyNote,
		Start: t0.Add(time.Duration(i) * time.Millisecond), End: t0.Add(10*time.Second + time.Duration(i)*time.Second),
		Requests: int64(len(lat)) + errs, Errors: errs,
		ErrorsByClass: map[string]int64{"http_500": errs}, ErrorExamples: map[string][]string{"http_500": ex},
		SteadyStart: t0.Add(steadyFrom), SteadyEnd: t0.Add(steadyTo), SteadyRequests: steady,
		Operations: []OperationResult{
			{Operation: "graphql-query", Users: 2, Iterations: 5, Requests: int64(len(lat)), ErrorsByClass: map[string]int64{}, Histogram: h.Export()},
			{Operation: "graphql-mutation", Users: 1, Iterations: 5, Requests: errs, Errors: errs, ErrorsByClass: map[string]int64{"http_500": errs}, Histogram: newHist().Export()},
		},
		Shard: Shard{Index: i, Count: n},
	}
}

// TestMergeResults merges three shards given out of order: counts and
// classes add up, examples stay bounded, users add up, the latency is the
// merged histogram's, the phase spans the shards, and the steady window is
// the intersection with the shards' rates summed.
func TestMergeResults(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := shardResult(t, 0, 3, t0, []int64{1000, 2000}, 2, 1*time.Second, 9*time.Second, 80)         // 10 req/s
	b := shardResult(t, 1, 3, t0, []int64{3000}, 0, 2*time.Second, 8*time.Second, 120)              // 20 req/s
	c := shardResult(t, 2, 3, t0, []int64{4000, 5000, 6000}, 3, 3*time.Second, 10*time.Second, 210) // 30 req/s
	r, err := MergeResults([]Result{c, a, b})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 4+1+6 || r.Errors != 5 || r.ErrorsByClass["http_500"] != 5 {
		t.Errorf("requests %d errors %d by class %v, want 11, 5, http_500 5", r.Requests, r.Errors, r.ErrorsByClass)
	}
	if ex := r.ErrorExamples["http_500"]; len(ex) != maxExamples || ex[0] != "shard 0/3" {
		t.Errorf("examples %q: want %d, shard 0's first", ex, maxExamples)
	}
	q, m := r.Operations[0], r.Operations[1]
	if q.Users != 6 || q.Requests != 6 || m.Users != 3 || m.Requests != 5 || m.Errors != 5 || q.Iterations != 5 {
		t.Errorf("operations %+v %+v", q, m)
	}
	if q.Histogram.Counts == nil || hdrhistogram.Import(q.Histogram).TotalCount() != 6 {
		t.Errorf("merged histogram of operation 0 does not hold the 6 latencies")
	}
	all := newHist()
	for _, v := range []int64{1000, 2000, 3000, 4000, 5000, 6000} {
		_ = all.RecordValue(v)
	}
	if want := Summarize(all); r.LatencyMs != want {
		t.Errorf("latency %+v: want %+v, the summary of all six latencies in one histogram", r.LatencyMs, want)
	}
	if !r.Start.Equal(t0) || !r.End.Equal(t0.Add(12*time.Second)) || r.DurationSeconds != 12 {
		t.Errorf("span %s .. %s (%g s), want the earliest start to the latest end", r.Start, r.End, r.DurationSeconds)
	}
	if !r.SteadyStart.Equal(t0.Add(3*time.Second)) || !r.SteadyEnd.Equal(t0.Add(8*time.Second)) || r.SteadyFallback {
		t.Errorf("steady %s .. %s fallback %v, want the intersection 3 s .. 8 s", r.SteadyStart.Sub(t0), r.SteadyEnd.Sub(t0), r.SteadyFallback)
	}
	if r.ThroughputRPS != 60 || r.SteadyRequests != 300 {
		t.Errorf("throughput %g, steady requests %d: want 60 req/s (10+20+30) and 300 over the 5 s intersection", r.ThroughputRPS, r.SteadyRequests)
	}
	if r.DriverPID != 100 || r.Shard.Sharded() {
		t.Errorf("driver pid %d shard %v: want shard 0's pid and the whole load", r.DriverPID, r.Shard)
	}
	if r.LoadCPUSeconds != nil {
		t.Errorf("load CPU %v: no shard reported one, want nil (not measured), not 0", *r.LoadCPUSeconds)
	}
	cpu := func(v float64) *float64 { return &v }
	a.LoadCPUSeconds, b.LoadCPUSeconds, c.LoadCPUSeconds = cpu(0.5), cpu(0.25), cpu(1)
	if r, err = MergeResults([]Result{c, a, b}); err != nil || r.LoadCPUSeconds == nil || *r.LoadCPUSeconds != 1.75 {
		t.Errorf("load CPU of three shards: %v %v, want their sum 1.75", r.LoadCPUSeconds, err)
	}
	b.LoadCPUSeconds = nil
	if r, err = MergeResults([]Result{c, a, b}); err != nil || r.LoadCPUSeconds != nil {
		t.Errorf("load CPU with shard 1 unmeasured: %v %v, want nil (a partial sum would read as a smaller total)", r.LoadCPUSeconds, err)
	}
}

// TestMergeResultsSteadyFallback uses the whole phase, with a reason naming
// the shard, when a shard had no steady window or the windows are apart;
// a shard that ran nothing does not count.
func TestMergeResultsSteadyFallback(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := shardResult(t, 0, 3, t0, []int64{1000}, 0, 1*time.Second, 4*time.Second, 30)
	b := shardResult(t, 1, 3, t0, []int64{1000}, 0, 5*time.Second, 8*time.Second, 30)
	idle := shardResult(t, 2, 3, t0, nil, 0, 0, 0, 0)
	idle.SteadyFallback, idle.SteadyFallbackReason = true, "runs none of the users"
	r, err := MergeResults([]Result{a, b, idle})
	if err != nil {
		t.Fatal(err)
	}
	if !r.SteadyFallback || !strings.Contains(r.SteadyFallbackReason, "do not overlap") || r.SteadyRequests != r.Requests {
		t.Errorf("windows apart: fallback %v %q, steady %d of %d", r.SteadyFallback, r.SteadyFallbackReason, r.SteadyRequests, r.Requests)
	}
	b.SteadyFallback, b.SteadyFallbackReason = true, "no user finished"
	r, err = MergeResults([]Result{a, b, idle})
	if err != nil {
		t.Fatal(err)
	}
	if !r.SteadyFallback || !strings.Contains(r.SteadyFallbackReason, "shard 1/3") {
		t.Errorf("shard without a window: fallback %v %q, want the reason to name shard 1/3", r.SteadyFallback, r.SteadyFallbackReason)
	}
	b.SteadyFallback, b.SteadyStart, b.SteadyEnd = false, t0.Add(2*time.Second), t0.Add(3*time.Second)
	if r, err = MergeResults([]Result{a, b, idle}); err != nil || r.SteadyFallback {
		t.Errorf("idle shard: %v, fallback %v %q: a shard that ran nothing must not end the window", err, r.SteadyFallback, r.SteadyFallbackReason)
	}
}

// TestMergeResultsRefuses refuses what is not the shards of one phase.
func TestMergeResultsRefuses(t *testing.T) {
	t0 := time.Now()
	mk := func(i, n int) Result {
		return shardResult(t, i, n, t0, []int64{1000}, 0, time.Second, 2*time.Second, 1)
	}
	maxLoad := mk(1, 2)
	maxLoad.MaxLoad = &MaxLoadResult{}
	otherPhase := mk(1, 2)
	otherPhase.Phase = "q"
	badHist := mk(1, 2)
	badHist.Operations[0].Histogram = hdrhistogram.New(histMinMicros, histMaxMicros, 2).Export()
	ledger := mk(0, 2)
	ledger.SubscriptionShard = &SubscriptionShard{}
	for name, tc := range map[string]struct {
		in   []Result
		want string
	}{
		"none":            {nil, "no shard"},
		"duplicate":       {[]Result{mk(0, 2), mk(0, 2)}, "reported twice"},
		"missing":         {[]Result{mk(0, 3), mk(1, 3)}, "among 2"},
		"max load":        {[]Result{mk(0, 2), maxLoad}, "knee"},
		"other phase":     {[]Result{mk(0, 2), otherPhase}, "not the shards of one phase"},
		"histogram":       {[]Result{mk(0, 2), badHist}, "significant figures"},
		"missing ledger":  {[]Result{ledger, mk(1, 2)}, "ledger is missing"},
		"operation count": {[]Result{mk(0, 2), func() Result { r := mk(1, 2); r.Operations = r.Operations[:1]; return r }()}, "operations"},
	} {
		if _, err := MergeResults(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
	}
}

// TestProgressMerger emits once per round of the running shards' reports,
// with summed counts, the interval's counts summed and its percentiles the
// highest of the shards'.
func TestProgressMerger(t *testing.T) {
	m := NewProgressMerger(2)
	if _, ok := m.Add(0, Progress{ElapsedSeconds: 1, Requests: 10, RPS: 10, ActiveUsers: 2, IntervalLatency: &IntervalLatency{Count: 10, P50Ms: 1, P90Ms: 2, P99Ms: 3, MaxMs: 4}}); ok {
		t.Fatal("merged before shard 1 reported")
	}
	if _, ok := m.Add(0, Progress{ElapsedSeconds: 2, Requests: 15, RPS: 5, ActiveUsers: 2, IntervalLatency: &IntervalLatency{Count: 5, P50Ms: 1, P90Ms: 2, P99Ms: 9, MaxMs: 9}}); ok {
		t.Fatal("merged before shard 1 reported")
	}
	p, ok := m.Add(1, Progress{ElapsedSeconds: 1.5, Requests: 7, Errors: 1, RPS: 7, ActiveUsers: 3, IntervalLatency: &IntervalLatency{Count: 6, P50Ms: 5, P90Ms: 6, P99Ms: 7, MaxMs: 8}})
	if !ok {
		t.Fatal("no merged report once both shards reported")
	}
	want := Progress{ElapsedSeconds: 2, Requests: 22, Errors: 1, RPS: 12, ActiveUsers: 5, IntervalLatency: &IntervalLatency{Count: 21, P50Ms: 5, P90Ms: 6, P99Ms: 9, MaxMs: 9}}
	if p.ElapsedSeconds != want.ElapsedSeconds || p.Requests != want.Requests || p.Errors != want.Errors || p.RPS != want.RPS || p.ActiveUsers != want.ActiveUsers || *p.IntervalLatency != *want.IntervalLatency {
		t.Errorf("merged %+v %+v, want %+v %+v", p, *p.IntervalLatency, want, *want.IntervalLatency)
	}
	if _, ok := m.Add(1, Progress{ElapsedSeconds: 2.5, Requests: 9, ActiveUsers: 1}); ok {
		t.Fatal("merged before shard 0 reported again")
	}
	p, ok = m.Done(0)
	if !ok || p.Requests != 24 || p.ActiveUsers != 1 || p.IntervalLatency != nil {
		t.Errorf("after shard 0 is done: %v %+v, want 24 requests, shard 1's 1 active user, no interval latency", ok, p)
	}
	if p, ok = m.Add(1, Progress{ElapsedSeconds: 3.5, Requests: 12}); !ok || p.Requests != 27 {
		t.Errorf("with shard 0 done each report of shard 1 is merged at once: %v %+v", ok, p)
	}
}
