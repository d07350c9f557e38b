package extsample

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// targetBinary builds testdata/target once per test binary.
func targetBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "extsample-target-")
		if buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "target")
		out, err := exec.Command("go", "build", "-o", buildBin, "./testdata/target").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build ./testdata/target: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// target is a running testdata/target process.
type target struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	base  string // http://127.0.0.1:port
	done  chan struct{}
}

// startTarget starts the target with args and waits for its port. Cleanup closes its stdin (it exits) and
// reaps it.
func startTarget(t *testing.T, args ...string) *target {
	t.Helper()
	cmd := exec.Command(targetBinary(t), args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tg := &target{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	t.Cleanup(func() {
		tg.stop(t)
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- s
		io.Copy(io.Discard, stdout)
	}()
	select {
	case s := <-line:
		var port int
		if _, err := fmt.Sscanf(s, "port %d", &port); err != nil {
			t.Fatalf("target printed %q, want \"port N\"", s)
		}
		tg.base = fmt.Sprintf("http://127.0.0.1:%d", port)
	case <-time.After(30 * time.Second):
		t.Fatal("target printed no port within 30 s")
	}
	return tg
}

// stop closes the target's stdin, which makes it exit, and reaps it.
func (tg *target) stop(t *testing.T) {
	select {
	case <-tg.done:
		return
	default:
	}
	tg.stdin.Close()
	waited := make(chan struct{})
	go func() {
		tg.cmd.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		tg.cmd.Process.Kill()
		<-waited
	}
	close(tg.done)
}

// get calls one of the target's work endpoints and waits for it to finish.
func (tg *target) get(t *testing.T, path string) {
	t.Helper()
	resp, err := http.Get(tg.base + path)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", path, resp.Status, body)
	}
}

func sampleNow(t *testing.T, s *Sampler) Sample {
	t.Helper()
	smp, err := s.SampleNow(context.Background())
	if err != nil {
		t.Fatalf("SampleNow: %v", err)
	}
	return smp
}

func window(t *testing.T, a, b Sample) Window {
	t.Helper()
	w, err := Between(a, b, runtime.NumCPU())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestRealGoTargetRuntimeMetrics(t *testing.T) {
	tg := startTarget(t)
	pid := int32(tg.cmd.Process.Pid)
	s, err := New(context.Background(), Options{PID: pid, Endpoint: tg.base + "/metrics", Interval: 50 * time.Millisecond, Timeout: 5 * time.Second, MaxSamples: 1000})
	if err != nil {
		t.Fatal(err)
	}

	s0 := sampleNow(t, s)
	osSrc := fmt.Sprintf("os: gopsutil, pid %d", pid)
	for _, f := range []Figure{s0.OS.UserCPUSeconds, s0.OS.SystemCPUSeconds, s0.OS.RSSBytes, s0.OS.Threads, s0.OS.FDs} {
		if !f.Measured || f.Source != osSrc || f.Definition == "" {
			t.Errorf("OS figure %+v, want measured from %q", f, osSrc)
		}
	}
	if s0.OS.RSSBytes.Value < 1<<20 || s0.OS.Threads.Value < 2 || s0.OS.FDs.Value < 3 {
		t.Errorf("implausible OS figures: rss %v, threads %v, fds %v", s0.OS.RSSBytes.Value, s0.OS.Threads.Value, s0.OS.FDs.Value)
	}
	r := s0.Runtime
	if r.Runtime != RuntimeGo || r.RuntimeBasis != "detected from series go_goroutines" {
		t.Errorf("runtime %q (%s), want go detected from go_goroutines", r.Runtime, r.RuntimeBasis)
	}
	for _, c := range []struct {
		f      Figure
		series string
	}{
		{r.GCCycles, "go_gc_cycles_total_gc_cycles_total"},
		{r.GCSeconds, "go_cpu_classes_gc_total_cpu_seconds_total"},
		{r.RuntimeCPUSeconds, "go_cpu_classes_total_cpu_seconds_total"},
		{r.AllocBytes, "go_gc_heap_allocs_bytes_total"},
		{r.HeapLiveBytes, "go_gc_heap_live_bytes"},
		{r.HeapUsedBytes, "go_memstats_heap_alloc_bytes"},
		{r.Extra[0], "go_sched_goroutines_goroutines"},
		{r.Extra[1], "go_gc_heap_goal_bytes"},
	} {
		if !c.f.Measured || c.f.Source != "series "+c.series {
			t.Errorf("%s: %+v, want measured from series %s", c.f.Name, c.f, c.series)
		}
	}
	if got := kindNames(r.GCKinds); got != "automatic,forced" {
		t.Errorf("kinds %q, want automatic,forced", got)
	}

	// CPU: a window in which the target burns 300 ms of CPU, against an idle one.
	tg.get(t, "/burn?ms=300")
	s1 := sampleNow(t, s)
	time.Sleep(300 * time.Millisecond)
	s2 := sampleNow(t, s)
	burn, idle := window(t, s0, s1), window(t, s1, s2)
	if burn.CPUSeconds.Value < 0.25 {
		t.Errorf("burn window: %v CPU seconds, want >= 0.25 (the target burnt 0.3)", burn.CPUSeconds.Value)
	}
	if idle.CPUSeconds.Value >= burn.CPUSeconds.Value/2 {
		t.Errorf("idle window: %v CPU seconds, burn window %v: want the burn to show", idle.CPUSeconds.Value, burn.CPUSeconds.Value)
	}
	if want := burn.CPUCorePercent.Value / float64(runtime.NumCPU()); !burn.CPUMachinePercent.Measured || burn.CPUMachinePercent.Value != want {
		t.Errorf("machine %% %v, want core %% / cores = %v", burn.CPUMachinePercent.Value, want)
	}
	if burn.CPUSeconds.Source != osSrc {
		t.Errorf("CPU source %q, want %q", burn.CPUSeconds.Source, osSrc)
	}

	// GC: a window in which the target allocates 64 MiB of garbage with a heap goal of a few MiB.
	tg.get(t, "/alloc?mb=64")
	s3 := sampleNow(t, s)
	w := window(t, s2, s3)
	if !w.GCCycles.Measured || w.GCCycles.Value < 1 {
		t.Errorf("GC cycles %v, want >= 1 after 64 MiB of garbage", w.GCCycles)
	}
	if !w.AllocBytes.Measured || w.AllocBytes.Value < 64<<20 {
		t.Errorf("alloc %v, want >= 64 MiB", w.AllocBytes)
	}
	// client_golang's pause histogram and object counters: the GC pause
	// p99 and allocated objects are measured, not "the Prometheus series
	// give pause totals at best" and "no count" as before.
	sum, _, err := Summarize([]Sample{s2, s3}, s3.Time.Sub(s2.Time), runtime.NumCPU(), 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"gc_pauses", "gc_pause_p99_ms", "alloc_objects", "heap_objects"} {
		if why, ok := sum.NotMeasured[k]; ok {
			t.Errorf("%s not measured on a client_golang target: %s", k, why)
		}
	}
	if sum.GCPauses < 1 || sum.GCPauseP99Ms <= 0 || sum.GCPauseP99Ms < sum.GCPauseP50Ms || sum.GCPauseMaxMs < sum.GCPauseP99Ms ||
		sum.AllocObjects < 1000 || sum.HeapObjectsLast == 0 {
		t.Errorf("pauses %d, p50 %.4f ms, p99 %.4f ms, max %.4f ms; alloc objects %d; heap objects %d", sum.GCPauses, sum.GCPauseP50Ms,
			sum.GCPauseP99Ms, sum.GCPauseMaxMs, sum.AllocObjects, sum.HeapObjectsLast)
	}
	t.Logf("client_golang target: %d pauses, p99 %.4f ms; %d objects allocated", sum.GCPauses, sum.GCPauseP99Ms, sum.AllocObjects)
	if !w.AllocBytesPerSecond.Measured || w.AllocBytesPerSecond.Value <= 0 {
		t.Errorf("alloc rate %v", w.AllocBytesPerSecond)
	}
	if !w.GCPercent.Measured || w.GCPercent.Value <= 0 || w.GCPercent.Value > 100 ||
		w.GCPercent.Source != "series go_cpu_classes_gc_total_cpu_seconds_total ÷ series go_cpu_classes_total_cpu_seconds_total" {
		t.Errorf("GC %% %+v, want a CPU-class share in (0, 100]", w.GCPercent)
	}
	if !w.HeapLiveBytes.Measured || w.HeapLiveBytes.Value <= 0 {
		t.Errorf("live heap %v, want > 0 after a cycle", w.HeapLiveBytes)
	}
	if len(w.GCKinds) != 2 || w.GCKinds[0].Cycles.Value < 1 || w.GCKinds[1].Cycles.Value != 0 {
		t.Errorf("kinds %+v, want automatic >= 1 and forced 0", w.GCKinds)
	}

	// Run: samples at the interval until ctx ends, then returns.
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- s.Run(ctx) }()
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case err := <-runErr:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	all := s.Samples(s0.Time, time.Now())
	if len(all) < 4+3 {
		t.Errorf("%d samples, want the 4 taken by hand and >= 3 from Run", len(all))
	}
	for i := 1; i < len(all); i++ {
		if !all[i].Time.After(all[i-1].Time) {
			t.Fatalf("samples out of order at %d", i)
		}
	}

	// The target exits: the OS figures say so, and so does the error.
	tg.stop(t)
	smp, err := s.SampleNow(context.Background())
	want := fmt.Sprintf("process %d exited", pid)
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), want) {
		t.Errorf("SampleNow after exit: %v; want %q", err, want)
	}
	wantNotMeasured(t, smp.OS.RSSBytes, want)
	wantNotMeasured(t, smp.OS.UserCPUSeconds, want)
	wantNotMeasured(t, smp.Runtime.GCCycles, "scrape "+tg.base)
	w = window(t, s3, smp)
	wantNotMeasured(t, w.CPUSeconds, "at the window's end: "+want)
}

func TestRealGoTargetDefaultCollector(t *testing.T) {
	tg := startTarget(t, "-runtime-metrics=false")
	pid := int32(tg.cmd.Process.Pid)
	s, err := New(context.Background(), Options{PID: pid, Endpoint: tg.base + "/metrics", Interval: 20 * time.Millisecond, Timeout: 5 * time.Second, MaxSamples: 3,
		MaxScrapeShare: -1}) // a fixed interval: the ring is under test, not the scrape's cost
	if err != nil {
		t.Fatal(err)
	}
	s0 := sampleNow(t, s)
	r := s0.Runtime
	wantFigure(t, r.GCCycles, r.GCCycles.Value, "series go_gc_duration_seconds_count")
	wantFigure(t, r.GCSeconds, r.GCSeconds.Value, "series go_gc_duration_seconds_sum")
	wantFigure(t, r.AllocBytes, r.AllocBytes.Value, "series go_memstats_alloc_bytes_total")
	wantNotMeasured(t, r.HeapLiveBytes, "the target exposes no go_gc_heap_live_bytes")
	wantNotMeasured(t, r.RuntimeCPUSeconds, "WithGoCollectorRuntimeMetrics")

	tg.get(t, "/alloc?mb=64")
	s1 := sampleNow(t, s)
	w := window(t, s0, s1)
	if !w.GCCycles.Measured || w.GCCycles.Value < 1 {
		t.Errorf("GC cycles %v, want >= 1", w.GCCycles)
	}
	if !w.GCPercent.Measured || !strings.Contains(w.GCPercent.Definition, "share of wall time") {
		t.Errorf("GC %% %+v, want the pause share of wall time", w.GCPercent)
	}
	wantNotMeasured(t, w.HeapLiveBytes, "WithGoCollectorRuntimeMetrics")

	// Run returns the exit when the target exits under it; the ring kept only the newest 3 samples.
	runErr := make(chan error, 1)
	go func() { runErr <- s.Run(context.Background()) }()
	time.Sleep(150 * time.Millisecond)
	tg.stop(t)
	select {
	case err := <-runErr:
		// It may see the target as a zombie, before the test reaps it.
		if !errors.Is(err, ErrExited) || !strings.HasPrefix(err.Error(), fmt.Sprintf("process %d exited", pid)) {
			t.Errorf("Run: %v; want process %d exited", err, pid)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the target exited")
	}
	all := s.Samples(time.Time{}, time.Now())
	if len(all) != 3 || s.Dropped() < 3 {
		t.Errorf("%d samples, %d dropped; want 3 kept and >= 3 dropped", len(all), s.Dropped())
	}
	if last, ok := s.Last(); !ok || !strings.Contains(last.Error, "exited") {
		t.Errorf("last sample error %q, want the exit", last.Error)
	}
}

func TestProcExit(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep command: %v", err)
	}
	pid := int32(cmd.Process.Pid)
	p, err := OpenProc(context.Background(), pid)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	if _, err := p.Read(context.Background()); err != nil {
		t.Errorf("Read of a running process: %v", err)
	}
	cmd.Process.Kill()
	// Killed but not reaped: a zombie, which has exited all the same.
	deadline := time.Now().Add(5 * time.Second)
	for {
		f, err := p.Read(context.Background())
		if err != nil {
			if !errors.Is(err, ErrExited) || !strings.HasPrefix(err.Error(), fmt.Sprintf("process %d exited", pid)) {
				t.Errorf("Read of a killed process: %v", err)
			}
			wantNotMeasured(t, f.Threads, "exited")
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a killed process still reads as running after 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Wait()
	f, err := p.Read(context.Background())
	if want := fmt.Sprintf("process %d exited", pid); err == nil || err.Error() != want {
		t.Errorf("Read of a reaped process: %v; want %q", err, want)
	}
	wantNotMeasured(t, f.FDs, "exited")
	if _, err := New(context.Background(), Options{PID: pid}); !errors.Is(err, ErrExited) {
		t.Errorf("New with a gone pid: %v; want an exit error", err)
	}
}

func TestNewRejects(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{}, "nothing to sample"},
		{Options{PID: -1}, "invalid pid"},
		{Options{Endpoint: "127.0.0.1:9/metrics"}, "invalid endpoint"},
		{Options{Endpoint: "ftp://127.0.0.1/metrics"}, "invalid endpoint"},
		{Options{Endpoint: "http://127.0.0.1:9/metrics", Runtime: "ruby"}, `unknown runtime "ruby"`},
		{Options{Endpoint: "http://127.0.0.1:9/metrics", MaxSamples: -1}, "invalid max samples"},
		{Options{Endpoint: "http://127.0.0.1:9/metrics", Interval: -time.Second}, "must not be negative"},
	} {
		if _, err := New(context.Background(), tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v; want %q", tc.opts, err, tc.want)
		}
	}
}

func TestSamplerEndpointOnly(t *testing.T) {
	// No PID: the OS figures are not measured and say why; the runtime figures come from the endpoint.
	body, err := os.ReadFile(filepath.Join("testdata", "dotnet-prometheus-net-1.prom"))
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(body)
	})
	s, err := New(context.Background(), Options{Endpoint: url, Runtime: RuntimeDotNet})
	if err != nil {
		t.Fatal(err)
	}
	smp := sampleNow(t, s)
	wantNotMeasured(t, smp.OS.RSSBytes, "no pid was given")
	wantFigure(t, smp.Runtime.GCCycles, 120, `series dotnet_collection_count_total{generation="0"}`)
	if smp.Runtime.RuntimeBasis != "set by the caller" {
		t.Errorf("runtime basis %q", smp.Runtime.RuntimeBasis)
	}
	// The scrape's own cost: its body size, and its wall time within the reading's.
	if smp.ScrapeBytes != int64(len(body)) || smp.ScrapeNanoseconds <= 0 || smp.ScrapeNanoseconds > smp.CostNanoseconds {
		t.Errorf("scrape cost: %d bytes in %d ns (reading %d ns), want the body's %d bytes within the reading's time",
			smp.ScrapeBytes, smp.ScrapeNanoseconds, smp.CostNanoseconds, len(body))
	}
}
