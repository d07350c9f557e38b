package target

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/extsample"
	"github.com/soakd/soakd/internal/failsig"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/workloads"
)

// nodeTarget serves prom-client's default metrics (the extsample fixtures,
// alternating) and returns an ExternalTarget sampling this process's OS
// figures and that endpoint: a Node server as soakd sees it from outside.
func nodeTarget(t *testing.T) *External {
	t.Helper()
	var files [2][]byte
	for i, name := range []string{"node-prom-client-1.prom", "node-prom-client-2.prom"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "internal", "extsample", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		files[i] = b
	}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		// The first scrape reads the first file, every later one the second:
		// counters only grow.
		_, _ = w.Write(files[min(n.Add(1)-1, 1)])
	}))
	t.Cleanup(srv.Close)
	s, err := extsample.New(t.Context(), extsample.Options{PID: int32(os.Getpid()), Endpoint: srv.URL, Interval: 10 * time.Millisecond, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return &External{cfg: config.TargetConfig{Kind: report.TargetAttach, MetricsURL: srv.URL}, pid: os.Getpid(), sampler: s, log: zap.NewNop(), failed: failsig.New()}
}

// TestExternalNodeFiguresNotMeasured: what a Node target does not expose
// (allocation, live heap, goroutines, GC pauses) is not measured with the
// reason, never a 0 taken for a value; what it does (CPU, GC cycles and
// time) is measured, each figure naming its source.
func TestExternalNodeFiguresNotMeasured(t *testing.T) {
	tg := nodeTarget(t)
	ctx := t.Context()
	base := tg.Baseline(ctx)
	if base.HeapLiveWhy == "" || base.GoroutinesWhy != "" {
		t.Fatalf("a Node target's live heap must be not measured with the reason, its active handles (for goroutines) measured: %+v", base)
	}
	start := time.Now()
	for range 4 {
		time.Sleep(20 * time.Millisecond)
		tg.SetPhase("p")
	}
	sum, win, err := extsample.Summarize(tg.sampler.Samples(start, time.Now()), time.Since(start), 2, config.MinSteadySamples)
	if err != nil {
		t.Fatal(err)
	}
	if win == nil || win.Runtime != extsample.RuntimeNode {
		t.Fatalf("window %+v, want one of a node runtime", win)
	}
	// The scrape's own cost: the fixture's size every time after the first
	// scrape, within the sampler's cost.
	size, err := os.Stat(filepath.Join("..", "..", "internal", "extsample", "testdata", "node-prom-client-2.prom"))
	if err != nil {
		t.Fatal(err)
	}
	if sum.ScrapeBytesMean != float64(size.Size()) || sum.ScrapeCostMeanUs <= 0 || sum.ScrapeCostMaxUs < sum.ScrapeCostMeanUs ||
		sum.ScrapeCostMeanUs > sum.SamplerCostMeanUs || sum.ScrapeCorePercent <= 0 || sum.ScrapeCorePercent > sum.SamplerCorePercent {
		t.Errorf("scrape cost: mean %.0f µs, max %.0f µs, %.0f bytes, %.3f %% (sampler %.0f µs, %.3f %%); want the body's %d bytes within the sampler's cost",
			sum.ScrapeCostMeanUs, sum.ScrapeCostMaxUs, sum.ScrapeBytesMean, sum.ScrapeCorePercent, sum.SamplerCostMeanUs, sum.SamplerCorePercent, size.Size())
	}
	if !sum.CPUKnown || sum.NotMeasured["cpu_seconds"] != "" {
		t.Errorf("CPU must be measured from the OS: %+v", sum)
	}
	if sum.NotMeasured["gc_cycles"] != "" || win.GCCycles.Source == "" {
		t.Errorf("GC cycles must be measured from prom-client's histogram: %v, %+v", sum.NotMeasured, win.GCCycles)
	}
	for key, want := range map[string]string{
		"alloc_bytes":     "no allocation counter",
		"heap_live_bytes": "no heap-after-GC figure",
		"gc_pause_p99_ms": "no GC pause histogram",
	} {
		if !strings.Contains(sum.NotMeasured[key], want) {
			t.Errorf("not_measured[%s] = %q, want it to say %q", key, sum.NotMeasured[key], want)
		}
	}
	// The KPIs read the reasons, not zeros.
	p := report.NewPhase(fakeResult(start), sum, nil)
	f := p.Figures()
	for _, k := range []string{"alloc_bytes_per_request", "gc_pause_p99_ms"} {
		if !strings.Contains(f.NotMeasured[k], "not measured") {
			t.Errorf("kpi figure %s: not measured = %q", k, f.NotMeasured[k])
		}
	}
	if _, ok := f.NotMeasured["cpu_machine_percent"]; ok {
		t.Errorf("cpu_machine_percent must be measured: %q", f.NotMeasured["cpu_machine_percent"])
	}
	if p.PerRequest.NotMeasured["alloc_bytes"] == "" {
		t.Errorf("per-request allocation must be not measured: %+v", p.PerRequest)
	}

	// No GC can be forced and no live heap is exposed: the heap-return
	// rule is not measured, with the reason.
	after, err := tg.Settle(ctx, base, 30*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	// The active handles stand for goroutines: 0 → 0, so the phase released them.
	if !after.NoForcedGC || after.NotMeasured["heap_live_bytes"] == "" || after.NotMeasured["subscribers"] == "" || !after.Returned || after.ReturnedNotMeasured != "" {
		t.Errorf("after: %+v", after)
	}
	// Returned is not judged without a goroutine count: "not measured", never "no".
	if _, ok := after.NotMeasured["goroutines"]; ok && !strings.Contains(after.ReturnedNotMeasured, "goroutines not measured") {
		t.Errorf("returned_not_measured = %q, want the goroutines' reason", after.ReturnedNotMeasured)
	}
	p.After = &after
	p.SteadyStart, p.SteadyEnd = start, time.Now()
	// The run judges these (run's TestMemoryChecksNotMeasured and
	// TestChecks): the target's part is to say why and where.
	if why := after.NotMeasured["heap_live_bytes"]; !strings.Contains(why, "the Node target exposes no heap-after-GC figure") {
		t.Errorf("heap_live_bytes not measured for %q, want the Node target's reason", why)
	}
	if why, ok := after.NotMeasured["goroutines"]; ok {
		t.Errorf("goroutines (active handles) not measured: %q", why)
	}
	md := tg.MemoryData(p)
	if src := md.Sources[kpi.RuleHeapReturned]; !strings.Contains(src, "no GC can be forced") {
		t.Errorf("heap_returned source %q, want it to say no GC can be forced", src)
	}
	for rule, why := range md.NotMeasured {
		if why == "" {
			t.Errorf("%s not measured without its reason", rule)
		}
	}

	info := tg.Info()
	if info.Runtime != "node" || !strings.Contains(info.RuntimeBasis, "detected from series") || len(info.Figures) == 0 {
		t.Errorf("info: %+v", info)
	}
	for _, f := range info.Figures {
		if f.Source == "" || f.Definition == "" || (!f.Measured && f.Reason == "") {
			t.Errorf("figure without provenance: %+v", f)
		}
	}
}

func TestCommandEnv(t *testing.T) {
	got := commandEnv([]string{"PATH=/bin", "SOAKD_CONTROL_TOKEN=s3cret", "GOGC=100", "HOME=/root"},
		map[string]string{"GOGC": "200", "B": "2"}, []string{"SOAKD_CONTROL_TOKEN"})
	want := []string{"PATH=/bin", "HOME=/root", "B=2", "GOGC=200"}
	if !slices.Equal(got, want) {
		t.Errorf("env = %q, want %q", got, want)
	}
}

func TestBoundedFileKeepsTheHead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	b, err := newBoundedFile(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"12345", "67890abc", "def"} {
		if n, err := b.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("write %q: %d, %v", s, n, err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "1234567890\n[soakd: 6 more bytes not kept: this log keeps the first 10 bytes]\n"; string(got) != want {
		t.Errorf("log = %q, want %q", got, want)
	}
}

func TestAttachPIDFile(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.pid"), filepath.Join(dir, "bad.pid")
	if err := os.WriteFile(good, []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("four"), 0o644); err != nil {
		t.Fatal(err)
	}
	if pid, err := attachPID(config.TargetConfig{PIDFile: good}); err != nil || pid != 4242 {
		t.Errorf("pid file: %d, %v", pid, err)
	}
	if _, err := attachPID(config.TargetConfig{PIDFile: bad}); err == nil || !strings.Contains(err.Error(), "does not hold a process id") {
		t.Errorf("bad pid file: %v", err)
	}
	if _, err := attachPID(config.TargetConfig{PIDFile: filepath.Join(dir, "none")}); err == nil || !strings.Contains(err.Error(), "target.pid_file") {
		t.Errorf("missing pid file: %v", err)
	}
	// A FIFO is refused at once, by name (os.ReadFile blocked in open(2)
	// for ever, deaf to SIGTERM), and so is a file too big for a pid.
	fifo := filepath.Join(dir, "fifo.pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := attachPID(config.TargetConfig{PIDFile: fifo}); err == nil || !strings.Contains(err.Error(), "target.pid_file: "+fifo+" is not a regular file (a FIFO)") {
		t.Errorf("FIFO pid file: %v", err)
	}
	huge := filepath.Join(dir, "huge.pid")
	if err := os.WriteFile(huge, []byte(strings.Repeat("1", config.MaxPIDFileBytes+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := attachPID(config.TargetConfig{PIDFile: huge}); err == nil || !strings.Contains(err.Error(), huge+" is larger than 4 KiB") {
		t.Errorf("huge pid file: %v", err)
	}
}

// fakeResult is a driver result of phase p whose steady window starts at start.
func fakeResult(start time.Time) workloads.Result {
	return workloads.Result{Phase: "p", Arm: "graphql", Requests: 100, ThroughputRPS: 100, SteadyStart: start, SteadyEnd: time.Now()}
}
