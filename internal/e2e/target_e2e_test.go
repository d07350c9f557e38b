package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// externalServer is a real GraphQL + REST server soakd does not host in the
// run under test: a second soakd binary running `soakd target` (the built-in
// target alone), which serves /graphql, /api/donuts/{id}, /metrics
// (client_golang with runtime metrics) and /debug/pprof/ on a fixed loopback
// port.
type externalServer struct {
	port   int
	config string // the target's config file
}

func newExternalServer(t *testing.T) externalServer {
	t.Helper()
	dir := t.TempDir()
	s := externalServer{port: freePort(t), config: filepath.Join(dir, "serve.yaml")}
	cfg := fmt.Sprintf("server:\n  listen: 127.0.0.1:%d\napi:\n  listen: 127.0.0.1:%d\ndata_dir: %s\n", s.port, freePort(t), filepath.Join(dir, "data"))
	if err := os.WriteFile(s.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s externalServer) url(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", s.port, path)
}

// start runs `soakd target` and waits for it to answer.
func (s externalServer) start(t *testing.T, bin string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "target", "--config", s.config, "--log-format", "json")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		if resp, err := http.Get(s.url("/healthz")); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cmd
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the external server did not answer /healthz within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// targetSection is the target: section pointing at s, with the kind's own
// keys in extra.
func (s externalServer) targetSection(kind, extra string) string {
	return fmt.Sprintf(`
target:
  kind: %s
  graphql_url: %s
  rest_url: %s
  metrics_url: %s
  pprof_url: %s
  runtime: auto
%s`, kind, s.url("/graphql"), s.url(""), s.url("/metrics"), s.url("/debug/pprof/"), extra)
}

// externalReport is what the tests read of report.json.
type externalReport struct {
	Status    string `json:"status"`
	Verdict   string `json:"verdict"`
	Error     string `json:"error"`
	TargetPID int    `json:"target_pid"`
	Target    *struct {
		Kind         string   `json:"kind"`
		PID          int      `json:"pid"`
		GraphQLURL   string   `json:"graphql_url"`
		GraphQLWSURL string   `json:"graphql_ws_url"`
		RESTURL      string   `json:"rest_url"`
		MetricsURL   string   `json:"metrics_url"`
		Runtime      string   `json:"runtime"`
		RuntimeBasis string   `json:"runtime_basis"`
		Argv         []string `json:"argv"`
		Exit         string   `json:"exit"`
		Figures      []struct {
			Name, Source, Definition, Reason string
			Measured                         bool
		} `json:"figures"`
	} `json:"target"`
	KPIs []struct {
		Name    string `json:"name"`
		Outcome string `json:"outcome"`
		Reason  string `json:"reason"`
	} `json:"kpis"`
	Checks []struct {
		Name, Phase, Outcome, Detail string
	} `json:"checks"`
	Phases []struct {
		Name      string `json:"name"`
		Requests  int64  `json:"requests"`
		Errors    int64  `json:"errors"`
		DriverPID int    `json:"driver_pid"`
		Resources *struct {
			CPUKnown          bool              `json:"cpu_known"`
			CPUMachinePercent float64           `json:"cpu_machine_percent"`
			GCPercentKnown    bool              `json:"gc_percent_known"`
			GCCycles          uint64            `json:"gc_cycles"`
			AllocBytes        uint64            `json:"alloc_bytes"`
			NotMeasured       map[string]string `json:"not_measured"`
		} `json:"resources"`
		ResourceFigures *struct {
			CPUSeconds struct {
				Measured bool
				Source   string
				Value    float64
			} `json:"cpu_seconds"`
			GCPercent struct {
				Measured bool
				Source   string
				Value    float64
			} `json:"gc_percent"`
		} `json:"resource_figures"`
		After *struct {
			NoForcedGC  bool              `json:"no_forced_gc"`
			NotMeasured map[string]string `json:"not_measured"`
		} `json:"after"`
	} `json:"phases"`
	Notes []string `json:"notes"`
}

func readExternalReport(t *testing.T, dir string) (externalReport, []byte) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep externalReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	return rep, raw
}

// checkExternalRun asserts what every complete run against the external
// server shows: the target named, every phase served without error by it,
// CPU and GC measured from its process and endpoint, each with its source.
func checkExternalRun(t *testing.T, rep externalReport, raw []byte, kind string, pid int, s externalServer) {
	t.Helper()
	if rep.Status != "complete" {
		t.Fatalf("status %q (error %q), want complete\n%s", rep.Status, rep.Error, raw)
	}
	tg := rep.Target
	if tg == nil || tg.Kind != kind || tg.PID != pid || rep.TargetPID != pid {
		t.Fatalf("target: %+v (target_pid %d), want kind %s, pid %d", tg, rep.TargetPID, kind, pid)
	}
	if tg.GraphQLURL != s.url("/graphql") || tg.RESTURL != s.url("") || tg.MetricsURL != s.url("/metrics") ||
		tg.GraphQLWSURL != strings.Replace(s.url("/graphql"), "http://", "ws://", 1) {
		t.Errorf("target URLs: %+v", tg)
	}
	if tg.Runtime != "go" || !strings.Contains(tg.RuntimeBasis, "detected from series") {
		t.Errorf("runtime %q (%s), want go detected from a series", tg.Runtime, tg.RuntimeBasis)
	}
	sources := map[string]string{}
	for _, f := range tg.Figures {
		if f.Definition == "" || f.Source == "" {
			t.Errorf("figure %s lacks a source or a definition: %+v", f.Name, f)
		}
		if !f.Measured && f.Reason == "" {
			t.Errorf("figure %s is not measured without a reason", f.Name)
		}
		if f.Measured {
			sources[f.Name] = f.Source
		}
	}
	for name, want := range map[string]string{
		"cpu_seconds":     fmt.Sprintf("os: /proc, pid %d and the processes under it", pid),
		"gc_percent":      "series go_cpu_classes_gc_total_cpu_seconds_total",
		"gc_cycles":       "series go_gc_cycles_total_gc_cycles_total",
		"alloc_bytes":     "series go_gc_heap_allocs_bytes_total",
		"heap_live_bytes": "series go_gc_heap_live_bytes",
		"rss_bytes":       fmt.Sprintf("os: /proc, pid %d and the processes under it", pid),
	} {
		if !strings.Contains(sources[name], want) {
			t.Errorf("figure %s: source %q, want it measured from %q", name, sources[name], want)
		}
	}
	if len(rep.Phases) != 3 {
		t.Fatalf("phases: %d, want 3", len(rep.Phases))
	}
	for _, p := range rep.Phases[:2] {
		if p.Requests != 3000 || p.Errors != 0 {
			t.Errorf("%s: %d requests, %d errors; want 3000 and 0", p.Name, p.Requests, p.Errors)
		}
		if p.DriverPID == pid || p.DriverPID <= 0 {
			t.Errorf("%s: driver pid %d is not a process of its own (target %d)", p.Name, p.DriverPID, pid)
		}
		r, w := p.Resources, p.ResourceFigures
		if r == nil || w == nil {
			t.Fatalf("%s: no resources (%v) or resource figures (%v)", p.Name, r, w)
		}
		// CPU and GC from the external process: its OS times, its runtime's series.
		if !r.CPUKnown || r.CPUMachinePercent <= 0 || !w.CPUSeconds.Measured || w.CPUSeconds.Value <= 0 ||
			w.CPUSeconds.Source != fmt.Sprintf("os: /proc, pid %d and the processes under it", pid) {
			t.Errorf("%s: CPU not measured from pid %d: resources %+v, figure %+v", p.Name, pid, r, w.CPUSeconds)
		}
		if r.AllocBytes == 0 || r.GCCycles == 0 {
			t.Errorf("%s: allocation %d bytes and %d GC cycles, want both measured from the target", p.Name, r.AllocBytes, r.GCCycles)
		}
		if r.GCPercentKnown != w.GCPercent.Measured || !strings.Contains(w.GCPercent.Source, "go_cpu_classes_gc_total_cpu_seconds_total") {
			t.Errorf("%s: gc percent %+v (known %v)", p.Name, w.GCPercent, r.GCPercentKnown)
		}
		// client_golang's pause histogram and object counter give the GC
		// pause quantiles and allocated objects from outside too (a window
		// without a GC pause has none, and says so).
		if why, ok := r.NotMeasured["gc_pause_p99_ms"]; ok && !strings.Contains(why, "no GC pause in the window") {
			t.Errorf("%s: gc_pause_p99_ms not measured: %q; want it from the pause histogram", p.Name, why)
		}
		if why, ok := r.NotMeasured["alloc_objects"]; ok {
			t.Errorf("%s: alloc_objects not measured: %q; want it from go_gc_heap_allocs_objects_total", p.Name, why)
		}
		if p.After == nil || !p.After.NoForcedGC || p.After.NotMeasured["subscribers"] == "" {
			t.Errorf("%s: after %+v, want no forced GC and subscribers not measured", p.Name, p.After)
		}
	}
	for _, k := range rep.KPIs {
		if k.Name == "gc_pause_p99_ms" && strings.Contains(k.Reason, "pause totals at best") {
			t.Errorf("gc_pause_p99_ms: outcome %q reason %q, want it measured from the pause histogram", k.Outcome, k.Reason)
		}
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "soakd does not host") {
		t.Errorf("no note says the target is external: %q", rep.Notes)
	}
}

// TestAttachExternalTarget measures a server soakd does not host, attached
// to by PID: a second soakd running `soakd target`, which the run must leave
// running.
func TestAttachExternalTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	srv := newExternalServer(t)
	serve := srv.start(t, bin)
	pid := serve.Process.Pid
	cfg := withMemoryPhase(tinyConfig) + srv.targetSection("attach", fmt.Sprintf("  pid: %d\n", pid))
	_, out, code := runConfig(t, bin, cfg)
	rep, raw := readExternalReport(t, out)
	if code != 0 && code != 1 && code != 4 {
		t.Fatalf("exit %d, want a verdict's code\n%s", code, raw)
	}
	checkExternalRun(t, rep, raw, "attach", pid, srv)
	// The memory verdict runs on the external figures: heap returned is
	// judged from the live heap the target's endpoint gives.
	seen := map[string]bool{}
	for _, c := range rep.Checks {
		if c.Phase == "graphql-load" {
			seen[c.Name] = true
			if c.Outcome == "not_measured" && !strings.HasPrefix(c.Detail, "not measured") {
				t.Errorf("check %s not measured without its reason: %q", c.Name, c.Detail)
			}
		}
	}
	for _, name := range []string{"steady_allocation", "survivor_growth", "heap_returned", "goroutines_returned", "released"} {
		if !seen[name] {
			t.Errorf("check %s missing for graphql-load", name)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("Target: attach, pid %d", pid), "## Where the resource figures come from", "series go_gc_heap_live_bytes"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, f := range []string{"graphql-load.heap-before.pb.gz", "graphql-load.heap-after.pb.gz", "graphql-load.goroutine-after.txt", "samples.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	// soakd never stops an attached process.
	if err := serve.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the attached server is gone after the run: %v", err)
	}
	if resp, err := http.Get(srv.url("/healthz")); err != nil {
		t.Errorf("the attached server stopped serving: %v", err)
	} else {
		resp.Body.Close()
	}
}

// withMemoryPhase makes the tiny profile judge the memory verdict on its
// GraphQL phase.
func withMemoryPhase(cfg string) string {
	return strings.Replace(cfg, "    seed: 7\n", "    seed: 7\n    memory_phase: graphql-load\n", 1)
}

// TestAttachToAMissingProcess: a PID that does not run is a usage error,
// before anything runs.
func TestAttachToAMissingProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	// A child that has exited and been reaped: its PID is free.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	srv := newExternalServer(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "attach.yaml")
	cfg := tinyConfig + srv.targetSection("attach", fmt.Sprintf("  pid: %d\n", gone.Process.Pid)) + "\ndata_dir: " + filepath.Join(dir, "data") + "\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runSoakd(t, bin, "run", "--config", cfgPath, "--out", filepath.Join(dir, "run"))
	if code != 2 || !strings.Contains(stderr, "target.pid: cannot attach") {
		t.Errorf("attach to a gone pid: exit %d, want 2 naming target.pid\n%s", code, stderr)
	}
}

// commandSection is the target: section that has soakd start the external
// server itself: a second soakd binary running `soakd target`.
func (s externalServer) commandSection(bin string) string {
	return s.targetSection("command", fmt.Sprintf(`  argv: [%q, target, --config, %q, --log-format, json]
  env: {SOAKD_TEST_TARGET: "1"}
  ready_url: %s
  ready_timeout: 30s
  stop_grace: 10s
`, bin, s.config, s.url("/healthz")))
}

// TestCommandExternalTarget: soakd starts the server from a command line,
// waits for it to answer, measures it from outside, keeps its output in the
// run directory and stops it at the end.
func TestCommandExternalTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	srv := newExternalServer(t)
	_, out, code := runConfig(t, bin, tinyConfig+srv.commandSection(bin))
	rep, raw := readExternalReport(t, out)
	if code != 0 && code != 1 && code != 4 {
		t.Fatalf("exit %d, want a verdict's code\n%s", code, raw)
	}
	if rep.Target == nil {
		t.Fatalf("no target in the report:\n%s", raw)
	}
	pid := rep.Target.PID
	checkExternalRun(t, rep, raw, "command", pid, srv)
	if len(rep.Target.Argv) != 6 || rep.Target.Argv[0] != bin || rep.Target.Argv[1] != "target" {
		t.Errorf("argv %q, want the target command", rep.Target.Argv)
	}
	// Stopped gracefully at the end: soakd target exits 0 on SIGTERM.
	if rep.Target.Exit != "exit status 0" {
		t.Errorf("exit %q, want exit status 0 after SIGTERM", rep.Target.Exit)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the command target %d is still running after the run (kill 0: %v)", pid, err)
	}
	if _, err := http.Get(srv.url("/healthz")); err == nil {
		t.Errorf("the command target still serves after the run")
	}
	logs, err := os.ReadFile(filepath.Join(out, "target.stderr.log"))
	if err != nil || !strings.Contains(string(logs), "target listening") {
		t.Errorf("target.stderr.log does not hold the server's log (%v):\n%.2000s", err, logs)
	}
	if _, err := os.Stat(filepath.Join(out, "target.stdout.log")); err != nil {
		t.Errorf("no target.stdout.log: %v", err)
	}
}

// TestCommandTargetDiesMidRun kills the command target during the second
// phase: the run aborts at once (exit 3) with the target's exit status and
// the end of its standard error, keeping the first phase.
func TestCommandTargetDiesMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	srv := newExternalServer(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "long.yaml")
	long := strings.Replace(tinyConfig, "graphql-mutation, users: 5, iterations: 300", "graphql-mutation, users: 5, iterations: 20000", 1)
	cfg := long + srv.commandSection(bin) + "\ndata_dir: " + filepath.Join(dir, "data") + "\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	cmd, stderr := startRun(t, bin, cfgPath, out)
	targetPID := killTargetMidPhase(t, cmd, stderr, "target command started")
	rep, raw := readExternalReport(t, out)
	if rep.Status != "aborted" || !strings.Contains(rep.Error, "the target stopped serving") ||
		!strings.Contains(rep.Error, fmt.Sprintf("(pid %d) exited: signal: killed", targetPID)) || !strings.Contains(rep.Error, "its last output:") {
		t.Errorf("status %q error %q, want aborted with the target's exit status and the end of its stderr", rep.Status, rep.Error)
	}
	if rep.Target == nil || rep.Target.Exit != "signal: killed" {
		t.Errorf("target: %+v, want exit signal: killed", rep.Target)
	}
	if len(rep.Phases) < 1 || rep.Phases[0].Name != "rest-control" || rep.Phases[0].Requests != 3000 {
		t.Errorf("the finished phase must be kept:\n%s", raw)
	}
}

// TestAttachedTargetDisappears: an attached process that goes away mid-run
// aborts the run (exit 3) with a reason that says so.
func TestAttachedTargetDisappears(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	srv := newExternalServer(t)
	serve := srv.start(t, bin)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "long.yaml")
	long := strings.Replace(tinyConfig, "graphql-mutation, users: 5, iterations: 300", "graphql-mutation, users: 5, iterations: 20000", 1)
	cfg := long + srv.targetSection("attach", fmt.Sprintf("  pid: %d\n", serve.Process.Pid)) + "\ndata_dir: " + filepath.Join(dir, "data") + "\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	cmd, stderr := startRun(t, bin, cfgPath, out)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		var m struct{ Msg, Phase string }
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Msg == "driver started" && m.Phase == "graphql-load" {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	time.Sleep(500 * time.Millisecond)
	if err := serve.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("attached target killed: got %v, want exit code 3", err)
	}
	rep, _ := readExternalReport(t, out)
	if rep.Status != "aborted" || !strings.Contains(rep.Error, fmt.Sprintf("the attached target process %d disappeared", serve.Process.Pid)) {
		t.Errorf("status %q error %q, want aborted saying the attached process disappeared", rep.Status, rep.Error)
	}
}
