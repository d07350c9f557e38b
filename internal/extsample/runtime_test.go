package extsample

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture parses a testdata exposition file.
func fixture(t *testing.T, name string) Exposition {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	e, err := ParseText(b)
	if err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return e
}

// wantFigure checks a measured figure's value (to 1e-9 relative) and source.
func wantFigure(t *testing.T, f Figure, value float64, source string) {
	t.Helper()
	if !f.Measured {
		t.Errorf("%s not measured (%s), want %v from %s", f.Name, f.Reason, value, source)
		return
	}
	if math.Abs(f.Value-value) > 1e-9*math.Max(1, math.Abs(value)) {
		t.Errorf("%s = %v, want %v", f.Name, f.Value, value)
	}
	if f.Source != source {
		t.Errorf("%s source = %q, want %q", f.Name, f.Source, source)
	}
	if f.Definition == "" || f.Unit == "" {
		t.Errorf("%s has no definition or unit: %+v", f.Name, f)
	}
}

// wantNotMeasured checks that a figure is not measured for a reason containing reason.
func wantNotMeasured(t *testing.T, f Figure, reason string) {
	t.Helper()
	if f.Measured {
		t.Errorf("%s measured (%v from %s), want not measured: %s", f.Name, f.Value, f.Source, reason)
		return
	}
	if f.Value != 0 {
		t.Errorf("%s not measured but has value %v", f.Name, f.Value)
	}
	if !strings.Contains(f.Reason, reason) {
		t.Errorf("%s reason = %q, want it to contain %q", f.Name, f.Reason, reason)
	}
}

func kindNames(ks []KindFigures) string {
	var names []string
	for _, k := range ks {
		names = append(names, k.Kind)
	}
	return strings.Join(names, ",")
}

func TestMapNodePromClient(t *testing.T) {
	r, err := MapRuntime(fixture(t, "node-prom-client-1.prom"), RuntimeUnknown)
	if err != nil {
		t.Fatal(err)
	}
	if r.Runtime != RuntimeNode || r.RuntimeBasis != "detected from series nodejs_heap_size_used_bytes" {
		t.Errorf("runtime %q (%s), want node detected from nodejs_heap_size_used_bytes", r.Runtime, r.RuntimeBasis)
	}
	wantFigure(t, r.GCCycles, 16, `series nodejs_gc_duration_seconds_count{kind=~"major|minor"}`)
	wantFigure(t, r.GCSeconds, 0.01660341700003483+0.007490157000022009, "series nodejs_gc_duration_seconds_sum summed over kind")
	wantFigure(t, r.HeapUsedBytes, 4722968, "series nodejs_heap_size_used_bytes")
	wantNotMeasured(t, r.AllocBytes, "the Node target exposes no allocation counter")
	wantNotMeasured(t, r.HeapLiveBytes, "the Node target exposes no heap-after-GC figure")
	wantNotMeasured(t, r.RuntimeCPUSeconds, "taken over wall time")
	if got := kindNames(r.GCKinds); got != "major,minor" {
		t.Fatalf("kinds %q, want major,minor", got)
	}
	wantFigure(t, r.GCKinds[0].Cycles, 1, `series nodejs_gc_duration_seconds_count{kind="major"}`)
	wantFigure(t, r.GCKinds[1].Seconds, 0.01660341700003483, `series nodejs_gc_duration_seconds_sum{kind="minor"}`)
	if len(r.Extra) != 3 {
		t.Fatalf("extra %+v, want the active handles (as goroutines), the event-loop delay and the process's own CPU counter", r.Extra)
	}
	// The released checks' count: libuv handles, Node's analogue of goroutines.
	wantFigure(t, r.Extra[0], 0, "series nodejs_active_handles_total")
	if r.Extra[0].Name != "goroutines" || !strings.Contains(r.Extra[0].Definition, "analogue of goroutines") {
		t.Errorf("handles figure %+v", r.Extra[0])
	}
	wantFigure(t, r.Extra[1], 0.020611071, "series nodejs_eventloop_lag_p99_seconds")
	wantFigure(t, r.Extra[2], 0.136409, "series process_cpu_seconds_total")
	if !strings.Contains(r.GCCycles.Definition, "lower bound") {
		t.Errorf("Node GC count definition %q does not say prom-client undercounts", r.GCCycles.Definition)
	}
}

func TestMapDotNetPrometheusNet(t *testing.T) {
	r, err := MapRuntime(fixture(t, "dotnet-prometheus-net-1.prom"), RuntimeUnknown)
	if err != nil {
		t.Fatal(err)
	}
	if r.Runtime != RuntimeDotNet {
		t.Fatalf("runtime %q, want dotnet", r.Runtime)
	}
	wantFigure(t, r.GCCycles, 120, `series dotnet_collection_count_total{generation="0"}`)
	if got := kindNames(r.GCKinds); got != "gen0,gen1,gen2" {
		t.Fatalf("kinds %q, want gen0,gen1,gen2", got)
	}
	wantFigure(t, r.GCKinds[1].Cycles, 14, `series dotnet_collection_count_total{generation="1"}`)
	wantFigure(t, r.GCKinds[2].Cycles, 2, `series dotnet_collection_count_total{generation="2"}`)
	wantNotMeasured(t, r.GCKinds[2].Seconds, "no GC time per generation")
	wantFigure(t, r.GCSeconds, 0.4125, "series system_runtime_total_pause_time_by_gc_total")
	wantFigure(t, r.AllocBytes, 4109365248, "series system_runtime_alloc_total")
	wantFigure(t, r.HeapUsedBytes, 48812032, "series dotnet_total_memory_bytes")
	wantNotMeasured(t, r.HeapLiveBytes, "no heap-after-GC figure")

	// Without the event counters, prometheus-net gives no GC time and no allocation counter.
	r, err = MapRuntime(fixture(t, "dotnet-prometheus-net-dotnetstats-only.prom"), RuntimeUnknown)
	if err != nil {
		t.Fatal(err)
	}
	wantFigure(t, r.GCCycles, 120, `series dotnet_collection_count_total{generation="0"}`)
	wantNotMeasured(t, r.GCSeconds, "DotNetStats exposes no GC time")
	wantNotMeasured(t, r.AllocBytes, "the .NET target exposes no allocation counter")
	if len(r.Extra) != 1 || r.Extra[0].Name != "process_cpu_seconds" {
		t.Errorf("extra %+v, want only the process's own CPU counter without the event counters", r.Extra)
	}
}

func TestMapJVMClientJava1(t *testing.T) {
	r, err := MapRuntime(fixture(t, "jvm-client_java-1.x-1.prom"), RuntimeUnknown)
	if err != nil {
		t.Fatal(err)
	}
	if r.Runtime != RuntimeJVM {
		t.Fatalf("runtime %q, want jvm", r.Runtime)
	}
	wantFigure(t, r.GCCycles, 16, "series jvm_gc_collection_seconds_count summed over gc")
	wantFigure(t, r.GCSeconds, 0.055, "series jvm_gc_collection_seconds_sum summed over gc")
	wantFigure(t, r.AllocBytes, 5.8720256e8, `series jvm_memory_pool_allocated_bytes_total summed over pools named "*Eden*"`)
	wantFigure(t, r.HeapUsedBytes, 7.1303168e7, `series jvm_memory_used_bytes{area="heap"}`)
	wantFigure(t, r.HeapLiveBytes, 2.3068672e7+4194304, "series jvm_memory_pool_collection_used_bytes summed over pool")
	if got := kindNames(r.GCKinds); got != "G1 Concurrent GC,G1 Old Generation,G1 Young Generation" {
		t.Fatalf("kinds %q", got)
	}
	wantFigure(t, r.GCKinds[2].Cycles, 14, `series jvm_gc_collection_seconds_count{gc="G1 Young Generation"}`)
	wantFigure(t, r.GCKinds[2].Seconds, 0.051, `series jvm_gc_collection_seconds_sum{gc="G1 Young Generation"}`)
	wantFigure(t, r.Extra[0], 29, "series jvm_threads_current")
}

func TestMapJVMSimpleclient016(t *testing.T) {
	// 0.x writes a trailing comma after the labels and names the heap in use jvm_memory_bytes_used.
	r, err := MapRuntime(fixture(t, "jvm-simpleclient-0.16.prom"), RuntimeUnknown)
	if err != nil {
		t.Fatal(err)
	}
	if r.Runtime != RuntimeJVM {
		t.Fatalf("runtime %q, want jvm", r.Runtime)
	}
	wantFigure(t, r.GCCycles, 10, "series jvm_gc_collection_seconds_count summed over gc")
	wantFigure(t, r.GCSeconds, 0.073, "series jvm_gc_collection_seconds_sum summed over gc")
	wantFigure(t, r.AllocBytes, 1.79232824e8, `series jvm_memory_pool_allocated_bytes_total summed over pools named "*Eden*"`)
	wantFigure(t, r.HeapUsedBytes, 9051232, `series jvm_memory_bytes_used{area="heap"}`)
	wantFigure(t, r.HeapLiveBytes, 1249696, "series jvm_memory_pool_collection_used_bytes summed over pool")
	if got := kindNames(r.GCKinds); got != "PS MarkSweep,PS Scavenge" {
		t.Errorf("kinds %q", got)
	}
}

func TestMapJVMWithoutEden(t *testing.T) {
	// ZGC (non-generational) has one heap pool: per-pool increases cannot tell allocation from promotion.
	e, err := ParseText([]byte(`# TYPE jvm_gc_collection_seconds summary
jvm_gc_collection_seconds_count{gc="ZGC Cycles"} 4
jvm_gc_collection_seconds_sum{gc="ZGC Cycles"} 0.9
# TYPE jvm_memory_pool_allocated_bytes_total counter
jvm_memory_pool_allocated_bytes_total{pool="ZHeap"} 1.0E9
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := MapRuntime(e, RuntimeUnknown)
	if err != nil {
		t.Fatal(err)
	}
	wantNotMeasured(t, r.AllocBytes, "has no Eden pool")
	wantNotMeasured(t, r.HeapUsedBytes, "the target exposes none of jvm_memory_used_bytes")
	wantNotMeasured(t, r.HeapLiveBytes, "jvm_memory_pool_collection_used_bytes")
}

func TestMapGoDefaultCollectorText(t *testing.T) {
	// The default Go collector alone: no runtime/metrics series.
	e, err := ParseText([]byte(`# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0"} 2.1e-05
go_gc_duration_seconds{quantile="1"} 0.000112
go_gc_duration_seconds_sum 0.0031
go_gc_duration_seconds_count 42
# TYPE go_goroutines gauge
go_goroutines 9
# TYPE go_memstats_alloc_bytes_total counter
go_memstats_alloc_bytes_total 1.2e+08
# TYPE go_memstats_heap_alloc_bytes gauge
go_memstats_heap_alloc_bytes 3.5e+06
`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := MapRuntime(e, RuntimeUnknown)
	if err != nil {
		t.Fatal(err)
	}
	if r.Runtime != RuntimeGo {
		t.Fatalf("runtime %q, want go", r.Runtime)
	}
	wantFigure(t, r.GCCycles, 42, "series go_gc_duration_seconds_count")
	wantFigure(t, r.GCSeconds, 0.0031, "series go_gc_duration_seconds_sum")
	if !strings.Contains(r.GCSeconds.Definition, "stop-the-world pauses only") {
		t.Errorf("GC seconds definition %q does not say it is pause time", r.GCSeconds.Definition)
	}
	wantFigure(t, r.AllocBytes, 1.2e8, "series go_memstats_alloc_bytes_total")
	wantFigure(t, r.HeapUsedBytes, 3.5e6, "series go_memstats_heap_alloc_bytes")
	wantNotMeasured(t, r.HeapLiveBytes, "WithGoCollectorRuntimeMetrics")
	wantNotMeasured(t, r.RuntimeCPUSeconds, "go_cpu_classes_total_cpu_seconds_total")
	wantFigure(t, r.Extra[0], 9, "series go_goroutines")
	if len(r.GCKinds) != 0 {
		t.Errorf("kinds %+v, want none from the default collector", r.GCKinds)
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		body, want, err string
	}{
		{"go_goroutines 3\n", "go", ""},
		{"nodejs_eventloop_lag_seconds 0\n", "node", ""},
		{"dotnet_total_memory_bytes 1\n", "dotnet", ""},
		{"jvm_threads_current 1\n", "jvm", ""},
		{"http_requests_total 3\n", "", "none of the standard series"},
		{"go_goroutines 3\njvm_threads_current 1\n", "", "go (go_goroutines) and jvm (jvm_threads_current)"},
	} {
		e, err := ParseText([]byte(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		rt, _, err := Detect(e)
		if string(rt) != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Detect(%q) = %q, %v; want %q, error containing %q", tc.body, rt, err, tc.want, tc.err)
		}
	}

	// Undetectable: every runtime figure is not measured with the reason; an explicit runtime maps anyway.
	e, _ := ParseText([]byte("go_goroutines 3\njvm_threads_current 1\n"))
	r, err := MapRuntime(e, RuntimeUnknown)
	if err == nil {
		t.Fatal("MapRuntime on an ambiguous exposition: no error")
	}
	wantNotMeasured(t, r.GCCycles, "set the runtime explicitly")
	r, err = MapRuntime(e, RuntimeJVM)
	if err != nil || r.Runtime != RuntimeJVM || r.RuntimeBasis != "set by the caller" {
		t.Errorf("MapRuntime(jvm) = %q (%s), %v", r.Runtime, r.RuntimeBasis, err)
	}
	wantFigure(t, r.Extra[0], 1, "series jvm_threads_current")
	if _, err := MapRuntime(e, "python"); err == nil || !strings.Contains(err.Error(), `unknown runtime "python"`) {
		t.Errorf("MapRuntime(python): %v", err)
	}
}

func TestNaNIsNotMeasured(t *testing.T) {
	e, err := ParseText([]byte("go_goroutines NaN\ngo_gc_heap_live_bytes +Inf\n"))
	if err != nil {
		t.Fatal(err)
	}
	r, _ := MapRuntime(e, RuntimeGo)
	wantNotMeasured(t, r.Extra[0], "series go_goroutines is NaN")
	wantNotMeasured(t, r.HeapLiveBytes, "series go_gc_heap_live_bytes is +Inf")
}
