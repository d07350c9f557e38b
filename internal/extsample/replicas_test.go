package extsample

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// goReplica is a Go replica's sample at t as its endpoint would give it:
// CPU seconds, GC CPU and total runtime CPU, bytes allocated, GC cycles,
// live heap, goroutines, and pauses in the 1 ms bucket and the 10 ms one.
type goReplica struct {
	cpu, gcCPU, rtCPU, alloc, cycles, live, goroutines float64
	fast, slow                                         uint64
}

func (g goReplica) sample(t *testing.T, at time.Time) Sample {
	t.Helper()
	e, err := ParseText(fmt.Appendf(nil, `# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total %g
# TYPE go_cpu_classes_gc_total_cpu_seconds_total counter
go_cpu_classes_gc_total_cpu_seconds_total %g
# TYPE go_cpu_classes_total_cpu_seconds_total counter
go_cpu_classes_total_cpu_seconds_total %g
# TYPE go_gc_heap_allocs_bytes_total counter
go_gc_heap_allocs_bytes_total %g
# TYPE go_gc_cycles_total_gc_cycles_total counter
go_gc_cycles_total_gc_cycles_total %g
# TYPE go_gc_heap_live_bytes gauge
go_gc_heap_live_bytes %g
# TYPE go_sched_goroutines_goroutines gauge
go_sched_goroutines_goroutines %g
# TYPE go_sched_pauses_total_gc_seconds histogram
go_sched_pauses_total_gc_seconds_bucket{le="0.001"} %d
go_sched_pauses_total_gc_seconds_bucket{le="0.01"} %d
go_sched_pauses_total_gc_seconds_bucket{le="+Inf"} %d
go_sched_pauses_total_gc_seconds_sum 0
go_sched_pauses_total_gc_seconds_count %d
`, g.cpu, g.gcCPU, g.rtCPU, g.alloc, g.cycles, g.live, g.goroutines, g.fast, g.fast+g.slow, g.fast+g.slow, g.fast+g.slow))
	if err != nil {
		t.Fatal(err)
	}
	rf, err := MapRuntime(e, RuntimeGo)
	if err != nil {
		t.Fatal(err)
	}
	return Sample{Time: at, Endpoint: "http://pod/metrics", OS: osNotMeasured(0, "no pid was given"), Runtime: rf}
}

func TestSumReplicasAddsEveryFigure(t *testing.T) {
	t0 := time.Unix(1000, 0)
	t1 := t0.Add(10 * time.Second)
	a0 := goReplica{cpu: 5, gcCPU: 1, rtCPU: 40, alloc: 1e6, cycles: 10, live: 4e6, goroutines: 20, fast: 18, slow: 2}
	a1 := goReplica{cpu: 8, gcCPU: 1.3, rtCPU: 60, alloc: 5e6, cycles: 14, live: 5e6, goroutines: 25, fast: 25, slow: 3}
	b0 := goReplica{cpu: 2, gcCPU: 0.5, rtCPU: 20, alloc: 3e6, cycles: 3, live: 1e6, goroutines: 10, fast: 6, slow: 0}
	b1 := goReplica{cpu: 3, gcCPU: 0.7, rtCPU: 40, alloc: 4e6, cycles: 5, live: 3e6, goroutines: 12, fast: 9, slow: 1}
	first := SumReplicas(t0, []Replica{{"shop/gql-a", a0.sample(t, t0)}, {"shop/gql-b", b0.sample(t, t0)}})
	last := SumReplicas(t1, []Replica{{"shop/gql-a", a1.sample(t, t1)}, {"shop/gql-b", b1.sample(t, t1)}})
	if first.Error != "" || last.Error != "" {
		t.Fatalf("errors: %q, %q", first.Error, last.Error)
	}
	w, err := Between(first, last, 2)
	if err != nil {
		t.Fatal(err)
	}
	near := func(what string, f Figure, want float64) {
		t.Helper()
		if !f.Measured || math.Abs(f.Value-want) > 1e-9*math.Max(1, want) {
			t.Errorf("%s = %v (measured %v: %s), want %v", what, f.Value, f.Measured, f.Reason, want)
		}
	}
	near("cpu_seconds", w.CPUSeconds, 3+1)
	near("cpu_core_percent", w.CPUCorePercent, 4.0/10*100)
	near("gc_cycles", w.GCCycles, 4+2)
	near("alloc_bytes", w.AllocBytes, 4e6+1e6)
	// The service's GC share is its replicas' GC CPU over their runtime
	// CPU, each summed: (0.3 + 0.2) ÷ (20 + 20).
	near("gc_percent", w.GCPercent, 0.5/40*100)
	near("heap_live_bytes", w.HeapLiveBytes, 8e6)
	for _, src := range []string{w.CPUSeconds.Source, w.GCCycles.Source, w.AllocBytes.Source} {
		if !strings.Contains(src, "summed over 2 replicas (shop/gql-a, shop/gql-b)") {
			t.Errorf("source %q does not name the replicas it sums", src)
		}
	}
	if !strings.Contains(w.CPUSeconds.Source, "process_cpu_seconds_total") {
		t.Errorf("CPU source %q: want the replicas' own process_cpu_seconds_total", w.CPUSeconds.Source)
	}
	if h := last.Runtime.GCPauses; h == nil || h.Count != 28+10 || h.Cumulative[0] != 25+9 {
		t.Errorf("pauses %+v: want the buckets added (38 pauses, 34 within 1 ms)", h)
	}
	if g := last.ExtraFigure("goroutines"); !g.Measured || g.Value != 37 {
		t.Errorf("goroutines %+v, want 25 + 12", g)
	}
	if f := last.OS.RSSBytes; f.Measured || !strings.Contains(f.Reason, "pods") {
		t.Errorf("rss %+v: want not measured, saying why", f)
	}

	// Summarize over three rounds gives the same sums.
	mid := SumReplicas(t0.Add(5*time.Second), []Replica{{"shop/gql-a", a0.sample(t, t0.Add(5*time.Second))}, {"shop/gql-b", b1.sample(t, t0.Add(5*time.Second))}})
	sum, _, err := Summarize([]Sample{first, mid, last}, 10*time.Second, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.CPUKnown || math.Abs(sum.CPUSeconds-4) > 1e-9 || sum.GCCycles != 6 || sum.AllocBytes != 5e6 || sum.GCPauses != 12 {
		t.Errorf("summary cpu %v (%v) s, %d cycles, %d B, %d pauses: want 4 s, 6, 5e6, 12", sum.CPUSeconds, sum.CPUKnown, sum.GCCycles, sum.AllocBytes, sum.GCPauses)
	}
}

func TestSumReplicasRefusesAWindowAcrossAChangedReplicaSet(t *testing.T) {
	t0 := time.Unix(1000, 0)
	t1 := t0.Add(10 * time.Second)
	a0 := goReplica{cpu: 5, rtCPU: 40, alloc: 1e6, cycles: 10, live: 1, goroutines: 1, fast: 1}
	a1 := goReplica{cpu: 0.2, rtCPU: 2, alloc: 1e5, cycles: 1, live: 1, goroutines: 1, fast: 1}
	first := SumReplicas(t0, []Replica{{"shop/gql-a", a0.sample(t, t0)}, {"shop/gql-b", a0.sample(t, t0)}})
	for name, last := range map[string]Sample{
		"restart": SumReplicas(t1, []Replica{{"shop/gql-a (restart 1)", a1.sample(t, t1)}, {"shop/gql-b", a0.sample(t, t1)}}),
		"joined":  SumReplicas(t1, []Replica{{"shop/gql-a", a0.sample(t, t1)}, {"shop/gql-b", a0.sample(t, t1)}, {"shop/gql-c", a1.sample(t, t1)}}),
		"left":    SumReplicas(t1, []Replica{{"shop/gql-a", a0.sample(t, t1)}}),
	} {
		w, err := Between(first, last, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []Figure{w.CPUSeconds, w.GCCycles, w.AllocBytes} {
			if f.Measured || !strings.Contains(f.Reason, "different sources") {
				t.Errorf("%s: %s = %v (%s): want not measured across a changed replica set", name, f.Name, f.Value, f.Reason)
			}
		}
	}
}

func TestSumReplicasNamesTheReplicaThatLacksAFigure(t *testing.T) {
	at := time.Unix(1000, 0)
	ok := goReplica{cpu: 1, rtCPU: 1, alloc: 1, cycles: 1, live: 1, goroutines: 1, fast: 1}.sample(t, at)
	failed := Sample{Time: at, Endpoint: "http://pod/metrics", Error: "GET http://pod/metrics: connection refused",
		Runtime: runtimeNotMeasured(RuntimeGo, "set", "GET http://pod/metrics: connection refused")}
	s := SumReplicas(at, []Replica{{"shop/gql-a", ok}, {"shop/gql-b", failed}})
	if f := s.Runtime.AllocBytes; f.Measured || !strings.Contains(f.Reason, "shop/gql-b: GET") {
		t.Errorf("alloc %+v: want not measured, naming shop/gql-b and its error", f)
	}
	if !strings.Contains(s.Error, "shop/gql-b: GET") {
		t.Errorf("error %q: want the replica's error, named", s.Error)
	}
	node := ok
	node.Runtime.Runtime = RuntimeNode
	s = SumReplicas(at, []Replica{{"shop/gql-a", ok}, {"shop/gql-b", node}})
	if f := s.Runtime.GCCycles; f.Measured || !strings.Contains(f.Reason, "different runtimes") {
		t.Errorf("gc cycles %+v: want not measured across runtimes", f)
	}
}
