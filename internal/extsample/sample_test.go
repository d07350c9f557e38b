package extsample

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// fixtureSample maps a testdata exposition file into a sample taken at t (no OS figures).
func fixtureSample(t *testing.T, name string, at time.Time) Sample {
	t.Helper()
	rf, err := MapRuntime(fixture(t, name), RuntimeUnknown)
	if err != nil {
		t.Fatalf("map %s: %v", name, err)
	}
	return Sample{Time: at, Runtime: rf, OS: osNotMeasured(0, "no pid was given")}
}

func TestBetweenJVM(t *testing.T) {
	a := fixtureSample(t, "jvm-client_java-1.x-1.prom", t0)
	b := fixtureSample(t, "jvm-client_java-1.x-2.prom", t0.Add(10*time.Second))
	w, err := Between(a, b, 2)
	if err != nil {
		t.Fatal(err)
	}
	if w.Seconds != 10 || w.Runtime != RuntimeJVM {
		t.Errorf("window %v s of %q, want 10 s of jvm", w.Seconds, w.Runtime)
	}
	wantFigure(t, w.GCCycles, 10, "series jvm_gc_collection_seconds_count summed over gc")
	// (0.089 + 0.007) − (0.051 + 0.004) seconds of collection over 10 s of wall time.
	wantFigure(t, w.GCPercent, 0.041/10*100, "series jvm_gc_collection_seconds_sum summed over gc ÷ wall time")
	if !strings.Contains(w.GCPercent.Definition, "share of wall time") {
		t.Errorf("GC %% definition %q", w.GCPercent.Definition)
	}
	wantFigure(t, w.AllocBytes, 9.6468992e8-5.8720256e8, `series jvm_memory_pool_allocated_bytes_total summed over pools named "*Eden*"`)
	wantFigure(t, w.AllocBytesPerSecond, (9.6468992e8-5.8720256e8)/10, `series jvm_memory_pool_allocated_bytes_total summed over pools named "*Eden*"`)
	wantFigure(t, w.HeapLiveBytes, 3.3554432e7+5242880, "series jvm_memory_pool_collection_used_bytes summed over pool")
	wantFigure(t, w.HeapUsedBytes, 6.9206016e7, `series jvm_memory_used_bytes{area="heap"}`)
	if got := kindNames(w.GCKinds); got != "G1 Concurrent GC,G1 Old Generation,G1 Young Generation" {
		t.Fatalf("kinds %q", got)
	}
	wantFigure(t, w.GCKinds[2].Cycles, 9, `series jvm_gc_collection_seconds_count{gc="G1 Young Generation"}`)
	wantFigure(t, w.GCKinds[1].Cycles, 0, `series jvm_gc_collection_seconds_count{gc="G1 Old Generation"}`)
	// No PID: the OS figures are not measured, and say why.
	wantNotMeasured(t, w.CPUSeconds, "no pid was given")
	wantNotMeasured(t, w.CPUMachinePercent, "no pid was given")
	wantNotMeasured(t, w.RSSBytes, "no pid was given")
}

func TestBetweenCounterWentBackwards(t *testing.T) {
	// The target restarted between the samples: the later one has the smaller counters.
	a := fixtureSample(t, "jvm-client_java-1.x-2.prom", t0)
	b := fixtureSample(t, "jvm-client_java-1.x-1.prom", t0.Add(10*time.Second))
	w, err := Between(a, b, 2)
	if err != nil {
		t.Fatal(err)
	}
	wantNotMeasured(t, w.GCCycles, "the counter went backwards from 26 to 16: the target restarted")
	wantNotMeasured(t, w.GCPercent, "went backwards")
	wantNotMeasured(t, w.AllocBytes, "went backwards")
	wantNotMeasured(t, w.AllocBytesPerSecond, "went backwards")
	wantNotMeasured(t, w.GCKinds[2].Cycles, "went backwards from 23 to 14")
	// Gauges are the later sample's, whatever happened before.
	wantFigure(t, w.HeapUsedBytes, 7.1303168e7, `series jvm_memory_used_bytes{area="heap"}`)
}

func TestBetweenNode(t *testing.T) {
	a := fixtureSample(t, "node-prom-client-1.prom", t0)
	b := fixtureSample(t, "node-prom-client-2.prom", t0.Add(2*time.Second))
	w, err := Between(a, b, 2)
	if err != nil {
		t.Fatal(err)
	}
	wantFigure(t, w.GCCycles, 18, `series nodejs_gc_duration_seconds_count{kind=~"major|minor"}`)
	gcSecs := (0.07692700099991634 + 0.01734488300001249) - (0.01660341700003483 + 0.007490157000022009)
	wantFigure(t, w.GCPercent, gcSecs/2*100, "series nodejs_gc_duration_seconds_sum summed over kind ÷ wall time")
	wantNotMeasured(t, w.AllocBytes, "at the window's start: the Node target exposes no allocation counter")
	wantNotMeasured(t, w.AllocBytesPerSecond, "the Node target exposes no allocation counter")
	wantNotMeasured(t, w.HeapLiveBytes, "the Node target exposes no heap-after-GC figure")
	wantFigure(t, w.HeapUsedBytes, 4588680, "series nodejs_heap_size_used_bytes")
}

func TestBetweenNodeKindAppearsMidWindow(t *testing.T) {
	// prom-client gains a kind's label value at that kind's first GC: it counts from 0, not "not measured".
	mk := func(body string, at time.Time) Sample {
		e, err := ParseText([]byte("nodejs_heap_size_used_bytes 1\n# TYPE nodejs_gc_duration_seconds histogram\n" + body))
		if err != nil {
			t.Fatal(err)
		}
		rf, err := MapRuntime(e, RuntimeUnknown)
		if err != nil {
			t.Fatal(err)
		}
		return Sample{Time: at, Runtime: rf}
	}
	a := mk(`nodejs_gc_duration_seconds_bucket{le="+Inf",kind="minor"} 3
nodejs_gc_duration_seconds_sum{kind="minor"} 0.003
nodejs_gc_duration_seconds_count{kind="minor"} 3
`, t0)
	b := mk(`nodejs_gc_duration_seconds_bucket{le="+Inf",kind="minor"} 5
nodejs_gc_duration_seconds_sum{kind="minor"} 0.005
nodejs_gc_duration_seconds_count{kind="minor"} 5
nodejs_gc_duration_seconds_bucket{le="+Inf",kind="major"} 1
nodejs_gc_duration_seconds_sum{kind="major"} 0.02
nodejs_gc_duration_seconds_count{kind="major"} 1
`, t0.Add(time.Second))
	w, err := Between(a, b, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantFigure(t, w.GCCycles, 3, `series nodejs_gc_duration_seconds_count{kind=~"major|minor"}`)
	if got := kindNames(w.GCKinds); got != "major,minor" {
		t.Fatalf("kinds %q", got)
	}
	wantFigure(t, w.GCKinds[0].Cycles, 1, `series nodejs_gc_duration_seconds_count{kind="major"}`)
	wantFigure(t, w.GCKinds[0].Seconds, 0.02, `series nodejs_gc_duration_seconds_sum{kind="major"}`)
}

func TestBetweenDotNet(t *testing.T) {
	a := fixtureSample(t, "dotnet-prometheus-net-1.prom", t0)
	b := fixtureSample(t, "dotnet-prometheus-net-2.prom", t0.Add(20*time.Second))
	w, err := Between(a, b, 4)
	if err != nil {
		t.Fatal(err)
	}
	wantFigure(t, w.GCCycles, 65, `series dotnet_collection_count_total{generation="0"}`)
	wantFigure(t, w.GCPercent, (0.60125-0.4125)/20*100, "series system_runtime_total_pause_time_by_gc_total ÷ wall time")
	wantFigure(t, w.AllocBytesPerSecond, (6318718976.0-4109365248)/20, "series system_runtime_alloc_total")
	if got := kindNames(w.GCKinds); got != "gen0,gen1,gen2" {
		t.Fatalf("kinds %q", got)
	}
	wantFigure(t, w.GCKinds[2].Cycles, 1, `series dotnet_collection_count_total{generation="2"}`)
	wantNotMeasured(t, w.GCKinds[2].Seconds, "no GC time per generation")

	// One sample with the event counters and one without: the figures they alone give are not measured.
	c := fixtureSample(t, "dotnet-prometheus-net-dotnetstats-only.prom", t0.Add(40*time.Second))
	w, err = Between(b, c, 4)
	if err != nil {
		t.Fatal(err)
	}
	wantNotMeasured(t, w.GCPercent, "at the window's end: prometheus-net's DotNetStats exposes no GC time")
	wantNotMeasured(t, w.AllocBytes, "at the window's end: the .NET target exposes no allocation counter")
}

func TestBetweenGoCPUClasses(t *testing.T) {
	mk := func(gc, total, cycles float64, at time.Time) Sample {
		e, err := ParseText([]byte("go_goroutines 4\n" +
			"go_cpu_classes_gc_total_cpu_seconds_total " + formatFloat(gc) + "\n" +
			"go_cpu_classes_total_cpu_seconds_total " + formatFloat(total) + "\n" +
			"go_gc_cycles_total_gc_cycles_total " + formatFloat(cycles) + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		rf, err := MapRuntime(e, RuntimeUnknown)
		if err != nil {
			t.Fatal(err)
		}
		return Sample{Time: at, Runtime: rf}
	}
	w, err := Between(mk(1, 100, 10, t0), mk(1.5, 110, 12, t0.Add(5*time.Second)), 2)
	if err != nil {
		t.Fatal(err)
	}
	wantFigure(t, w.GCPercent, 5, "series go_cpu_classes_gc_total_cpu_seconds_total ÷ series go_cpu_classes_total_cpu_seconds_total")
	// No cycle ended: the CPU classes did not move, so there is no GC share to report.
	w, err = Between(mk(1, 100, 10, t0), mk(1, 100, 10, t0.Add(5*time.Second)), 2)
	if err != nil {
		t.Fatal(err)
	}
	wantNotMeasured(t, w.GCPercent, "no GC cycle ended in the window")
	wantFigure(t, w.GCCycles, 0, "series go_gc_cycles_total_gc_cycles_total")
}

func TestBetweenDifferentSources(t *testing.T) {
	// The server enabled runtime/metrics between the samples (a restart with another configuration).
	parse := func(body string, at time.Time) Sample {
		e, err := ParseText([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		rf, _ := MapRuntime(e, RuntimeGo)
		return Sample{Time: at, Runtime: rf}
	}
	a := parse("go_goroutines 3\ngo_gc_duration_seconds_count 5\n", t0)
	b := parse("go_goroutines 3\ngo_gc_cycles_total_gc_cycles_total 9\n", t0.Add(time.Second))
	w, err := Between(a, b, 1)
	if err != nil {
		t.Fatal(err)
	}
	wantNotMeasured(t, w.GCCycles, "the window's samples read different sources (series go_gc_duration_seconds_count, then series go_gc_cycles_total_gc_cycles_total)")
}

func TestBetweenRejects(t *testing.T) {
	a := Sample{Time: t0}
	if _, err := Between(a, a, 2); err == nil || !strings.Contains(err.Error(), "the end must be after the start") {
		t.Errorf("equal times: %v", err)
	}
	if _, err := Between(a, Sample{Time: t0.Add(time.Second)}, 0); err == nil {
		t.Error("0 cores: no error")
	}
}

func TestBetweenCPU(t *testing.T) {
	osAt := func(user, sys float64) OSFigures {
		src := osSource(42)
		f := osNotMeasured(42, "unused")
		f.UserCPUSeconds = measured("user_cpu_seconds", "seconds", src, defUserCPU, user)
		f.SystemCPUSeconds = measured("system_cpu_seconds", "seconds", src, defSysCPU, sys)
		return f
	}
	a := Sample{Time: t0, PID: 42, OS: osAt(1, 0.5)}
	b := Sample{Time: t0.Add(4 * time.Second), PID: 42, OS: osAt(3, 1.5)}
	w, err := Between(a, b, 2)
	if err != nil {
		t.Fatal(err)
	}
	wantFigure(t, w.CPUSeconds, 3, "os: gopsutil, pid 42")
	wantFigure(t, w.CPUCorePercent, 75, "os: gopsutil, pid 42")
	wantFigure(t, w.CPUMachinePercent, 37.5, "os: gopsutil, pid 42")
	wantNotMeasured(t, w.Threads, "unused")

	// The system time read failed at the end: no CPU figure, and the reason says where.
	b.OS.SystemCPUSeconds = b.OS.SystemCPUSeconds.withReason("cpu times: permission denied")
	w, _ = Between(a, b, 2)
	wantNotMeasured(t, w.CPUSeconds, "at the window's end: cpu times: permission denied")
	wantNotMeasured(t, w.CPUMachinePercent, "at the window's end: cpu times: permission denied")

	// Samples of two processes do not make a window.
	b = Sample{Time: t0.Add(4 * time.Second), PID: 43, OS: osAt(3, 1.5)}
	w, _ = Between(a, b, 2)
	wantNotMeasured(t, w.CPUCorePercent, "different processes (pid 42, pid 43)")
}
