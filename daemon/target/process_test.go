package target

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/builtin"
	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/testkit"
)

// childEnv makes this test binary act as `soakd target` (testTargetChild)
// when processTarget starts it: the target package cannot build soakd.
const childEnv = "SOAKD_TEST_TARGET_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(testTargetChild())
	}
	os.Exit(m.Run())
}

// testTargetChild is `soakd target --config FILE` for processTarget tests:
// the embedded defaults are ../config.yaml.
func testTargetChild() int {
	var path string
	for i, a := range os.Args {
		if a == "--config" && i+1 < len(os.Args) {
			path = os.Args[i+1]
		}
	}
	def, err := os.ReadFile("../../config.yaml")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	user, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg, err := config.Load(def, user, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log, _ := zap.NewProduction()
	if err := builtin.ServeTarget(ctx, cfg, builtin.TargetOptions{Log: log, Stdout: os.Stdout, Token: os.Getenv(config.TargetTokenEnv)}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	return 0
}

// TestProcessTarget: the built-in target as a child process, driven
// through every Target method over its control surface; a child that
// dies is seen at once, with its exit status.
func TestProcessTarget(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(childEnv, "1")
	cfg := testkit.Config(t, "sampler:\n  interval: 50ms\n")
	logDir := t.TempDir()
	rt, err := Open(t.Context(), cfg, exe, logDir, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Shutdown(context.Background())
	pt, ok := rt.(*processTarget)
	if !ok {
		t.Fatalf("OpenTarget gave %T, want a *processTarget", rt)
	}
	info := rt.Info()
	if info.Kind != report.TargetBuiltin || info.PID == os.Getpid() || info.PID != pt.proc.pid() || !strings.Contains(info.Figures[0].Source, fmt.Sprint(info.PID)) {
		t.Fatalf("info %+v: want builtin, the child's pid", info)
	}
	start := time.Now()
	base := rt.Baseline(t.Context())
	if base.Goroutines == 0 || base.HeapLive == 0 || base.HeapLiveWhy != "" {
		t.Errorf("baseline %+v", base)
	}
	rt.SetPhase("p1")
	rt.RunMetrics().PhaseStarted("r1", "p1", "rest")
	for range 20 {
		if code, _ := testkit.Get(t, info.RESTURL+"/api/donuts/1"); code != http.StatusOK {
			t.Fatalf("GET /api/donuts/1: %d", code)
		}
	}
	time.Sleep(200 * time.Millisecond)
	rt.SetPhase("")
	rt.RunMetrics().PhaseEnded()
	rt.RunMetrics().RunVerdict("pass")
	a, err := rt.Settle(t.Context(), base, 200*time.Millisecond)
	if err != nil || !a.Returned || a.BaselineHeapLiveBytes != base.HeapLive || a.HeapLiveBytes == 0 {
		t.Errorf("settle: %+v, %v", a, err)
	}
	s := rt.SamplesSince(start)
	phased := 0
	for _, smp := range s.Samples {
		if smp.Phase == "p1" {
			phased++
		}
	}
	if len(s.PauseBuckets) == 0 || phased < 2 {
		t.Errorf("samples: %d buckets, %d of %d samples in p1", len(s.PauseBuckets), phased, len(s.Samples))
	}
	if r := rt.CPUReadings(start, time.Now()); len(r) < 2 || r[len(r)-1].CPUSeconds <= 0 {
		t.Errorf("cpu readings: %+v", r)
	}
	tools := rt.Captures(t.Context())
	dir := t.TempDir()
	if err := tools.Heap(filepath.Join(dir, "h.pb.gz")); err != nil {
		t.Error(err)
	}
	if err := tools.Goroutines(filepath.Join(dir, "g.txt")); err != nil {
		t.Error(err)
	}
	cpu, err := tools.StartCPU(filepath.Join(dir, "c.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tools.StartCPU(filepath.Join(dir, "c2.pb.gz")); err == nil {
		t.Error("a second CPU profile started while one runs")
	}
	if err := cpu.Stop(); err != nil {
		t.Error(err)
	}
	for _, f := range []string{"h.pb.gz", "g.txt", "c.pb.gz"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("profile %s not written by the child: %v", f, err)
		}
	}
	if cpus, _, err := pt.Affinity(); err != nil || len(cpus) == 0 {
		t.Errorf("affinity: %v, %v", cpus, err)
	}
	if _, scrape := testkit.Get(t, info.RESTURL+"/metrics"); !strings.Contains(scrape, `soakd_run_verdict{verdict="pass"} 1`) {
		t.Error("the run verdict is not on the child's /metrics")
	}
	if b, err := os.ReadFile(filepath.Join(logDir, TargetStderrFile)); err != nil || !strings.Contains(string(b), "target listening") {
		t.Errorf("the child's log is not kept in %s (%v)", TargetStderrFile, err)
	}

	// A child that dies ends the target at once, saying how.
	if err := syscall.Kill(info.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-rt.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done not closed after the child was killed")
	}
	if err := rt.Err(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("(pid %d) exited: signal: killed", info.PID)) {
		t.Errorf("Err: %v", err)
	}
	if got := rt.Info().Exit; got != "signal: killed" {
		t.Errorf("exit %q, want signal: killed", got)
	}
	if s2 := rt.SamplesSince(start); len(s2.Samples) < len(s.Samples) {
		t.Errorf("the mirror lost samples once the child died: %d, had %d", len(s2.Samples), len(s.Samples))
	}
	if b := rt.Baseline(t.Context()); b.HeapLiveWhy == "" {
		t.Error("a baseline of a dead child reads as measured")
	}
	if err := rt.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown after the child died: %v", err)
	}
}
