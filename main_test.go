package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// buildSoakd compiles the binary once per test run, as a user would get it.
func buildSoakd(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "soakd")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// tinyConfig is a profile small enough for a test (a few seconds on two
// cores) with the same shapes as the quick profile, and a sampler fast
// enough to put several samples in each steady window.
const tinyConfig = `
sampler:
  interval: 100ms
default_profile: tiny
profiles:
  tiny:
    description: end-to-end test profile
    settle: 300ms
    trim_head: 200ms
    trim_tail: 200ms
    request_timeout: 5s
    seed: 7
    compare: {rest: rest-control, graphql: graphql-load}
    phases:
      - name: rest-control
        arm: rest
        ramp_up: 300ms
        think: {min: 0ms, max: 10ms}
        users:
          - {operation: rest-get, users: 5, iterations: 300}
          - {operation: rest-put, users: 5, iterations: 300}
      - name: graphql-load
        arm: graphql
        ramp_up: 300ms
        think: {min: 0ms, max: 10ms}
        users:
          - {operation: graphql-query, users: 5, iterations: 300}
          - {operation: graphql-mutation, users: 5, iterations: 300}
        subscriptions: {clients: 5, per_client: 2, protocol: mixed, drain: 5s}
      - name: max-load-graphql
        arm: graphql
        model: ramping
        duration: 3s
        think: {min: 0ms, max: 10ms}
        ramp: {start: 5, step: 5, every: 1s, max: 15}
        failure: {window: 1s, max_error_ratio: 0.01, max_p99: 2s, min_requests: 10}
        users:
          - {operation: graphql-query, users: 1, iterations: 0}
`

func runSoakd(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("cannot run soakd: %v", err)
	}
	return o.String(), e.String(), code
}

func TestEndToEndRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(cfg, []byte(tinyConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	stdout, stderr, code := runSoakd(t, bin, "run", "--config", cfg, "--out", out, "--log-format", "json")

	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatalf("no report.json (exit %d): %v\nstderr:\n%s", code, err, stderr)
	}
	var rep struct {
		Verdict   string `json:"verdict"`
		Status    string `json:"status"`
		TargetPID int    `json:"target_pid"`
		KPIs      []struct {
			Name      string   `json:"name"`
			Unit      string   `json:"unit"`
			REST      *float64 `json:"rest"`
			GraphQL   *float64 `json:"graphql"`
			Delta     *float64 `json:"delta"`
			Threshold *float64 `json:"threshold"`
			Pass      *bool    `json:"pass"`
		} `json:"kpis"`
		Phases []struct {
			Name          string  `json:"name"`
			Arm           string  `json:"arm"`
			Requests      int64   `json:"requests"`
			Errors        int64   `json:"errors"`
			ThroughputRPS float64 `json:"throughput_rps"`
			DriverPID     int     `json:"driver_pid"`
			LatencyMs     struct {
				P50, P90, P99, Max *float64
			} `json:"latency_ms"`
			Resources *struct {
				CPUMachinePercent float64 `json:"cpu_machine_percent"`
				Samples           int     `json:"samples"`
				AllocBytes        uint64  `json:"alloc_bytes"`
			} `json:"resources"`
			Subscriptions *struct {
				Subscriptions            int
				Expected, Received, Lost int64
			} `json:"subscriptions"`
			MaxLoad *struct {
				Reason            string  `json:"reason"`
				PeakThroughputRPS float64 `json:"peak_throughput_rps"`
				PeakUsers         int     `json:"peak_users"`
			} `json:"max_load"`
			After *struct {
				Returned    bool
				Subscribers int
			} `json:"after"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("report.json does not decode: %v", err)
	}
	if rep.Status != "complete" {
		t.Fatalf("status: got %q, want complete (exit %d)\nstderr:\n%s", rep.Status, code, stderr)
	}
	// The exit code is the verdict's: 0 pass, 1 fail, nothing else.
	switch {
	case rep.Verdict == "pass" && code == 0, rep.Verdict == "fail" && code == 1:
	default:
		t.Errorf("verdict %q with exit code %d", rep.Verdict, code)
	}
	wantKPIs := map[string]bool{"cpu_machine_percent": true, "gc_percent": true, "throughput_rps": true}
	for _, k := range rep.KPIs {
		if k.Unit == "" || k.REST == nil || k.GraphQL == nil || k.Pass == nil {
			t.Errorf("kpi %q lacks unit/rest/graphql/pass: %s", k.Name, raw)
		}
		if wantKPIs[k.Name] && (k.Threshold == nil || k.Delta == nil) {
			t.Errorf("gated kpi %q lacks delta or threshold", k.Name)
		}
		delete(wantKPIs, k.Name)
	}
	if len(wantKPIs) > 0 {
		t.Errorf("kpis missing: %v", wantKPIs)
	}
	if len(rep.Phases) != 3 {
		t.Fatalf("phases: got %d, want 3", len(rep.Phases))
	}
	pids := map[int]bool{rep.TargetPID: true}
	for _, p := range rep.Phases {
		if p.After == nil || !p.After.Returned || p.After.Subscribers != 0 {
			t.Errorf("%s: the target did not return to rest: %+v", p.Name, p.After)
		}
		// Isolation: every driver is its own process, never the target.
		if p.DriverPID <= 0 || pids[p.DriverPID] {
			t.Errorf("%s: driver pid %d is not a separate process (target %d)", p.Name, p.DriverPID, rep.TargetPID)
		}
		pids[p.DriverPID] = true
	}
	// Max load: a ramp from 5 to 15 users within 3 s under a generous SLO
	// ends without failure (user cap or duration cap) with a measured peak.
	if ml := rep.Phases[2].MaxLoad; ml == nil || (ml.Reason != "max_users" && ml.Reason != "duration") || ml.PeakThroughputRPS <= 0 || ml.PeakUsers < 5 {
		t.Errorf("max load: %+v, want no failure (max_users or duration) and a peak", ml)
	}
	if s := rep.Phases[1].Subscriptions; s == nil || s.Subscriptions != 10 || s.Expected != 10*300 || s.Received != s.Expected || s.Lost != 0 {
		t.Errorf("subscriptions: %+v, want 10 subscriptions receiving all 3000 events", s)
	}
	for _, p := range rep.Phases[:2] {
		if p.Requests != 3000 || p.Errors != 0 {
			t.Errorf("%s: requests %d errors %d, want 3000 and 0", p.Name, p.Requests, p.Errors)
		}
		if p.ThroughputRPS <= 0 || p.LatencyMs.P50 == nil || p.LatencyMs.P99 == nil || *p.LatencyMs.P99 <= 0 {
			t.Errorf("%s: throughput %v or latency missing", p.Name, p.ThroughputRPS)
		}
		if p.Resources == nil || p.Resources.Samples < 2 || p.Resources.CPUMachinePercent <= 0 || p.Resources.AllocBytes == 0 {
			t.Errorf("%s: resources missing or empty: %+v", p.Name, p.Resources)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| Metric | REST | GraphQL | Variance | KPI | Result |", "GC % time", "Throughput", "no Gen0/Gen1/Gen2"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if !strings.Contains(stdout, "verdict: "+strings.ToUpper(rep.Verdict)) || !strings.Contains(stdout, "CPU (share of machine)") {
		t.Errorf("the terminal table is missing from stdout:\n%s", stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("server:\n  lisen: x\nsampler:\n  interval: fast\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := func(wantCode int, wantStderr []string, args ...string) {
		t.Helper()
		_, stderr, code := runSoakd(t, bin, args...)
		if code != wantCode {
			t.Errorf("soakd %v: exit %d, want %d\n%s", args, code, wantCode, stderr)
		}
		for _, w := range wantStderr {
			if !strings.Contains(stderr, w) {
				t.Errorf("soakd %v: stderr lacks %q:\n%s", args, w, stderr)
			}
		}
	}
	f(2, []string{"line 2: server.lisen: unknown key", "line 4: sampler.interval: \"fast\" is not a duration"}, "run", "--config", bad)
	f(2, []string{"--profile \"nope\" does not exist"}, "run", "--profile", "nope", "--out", t.TempDir())
	f(2, []string{"unknown command"}, "frobnicate")
	f(2, []string{"flag provided but not defined"}, "run", "--bogus")
	f(2, []string{"drive needs --target"}, "drive")
	f(0, []string{"Usage: soakd run"}, "run", "--help")
	f(0, []string{"soakd drive"}, "--help")
}

func TestSIGTERMKeepsPartialReport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "long.yaml")
	// The second phase would take about a minute; SIGTERM arrives during it.
	long := strings.Replace(tinyConfig, "graphql-mutation, users: 5, iterations: 300", "graphql-mutation, users: 5, iterations: 20000", 1)
	if err := os.WriteFile(cfg, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--config", cfg, "--out", out, "--log-format", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first phase's partial report appears when it ends; give the
	// second phase a moment to start, then stop the run.
	for {
		if _, err := os.Stat(filepath.Join(out, "report.json")); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no partial report before the deadline:\n%s", stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("SIGTERM during a phase: got %v, want exit code 3\n%s", err, stderr.String())
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Status, Verdict, Error string
		Phases                 []struct {
			Name      string
			Requests  int64
			Errors    int64
			Aborted   bool
			DriverPID int `json:"driver_pid"`
		}
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Status != "aborted" || rep.Verdict != "aborted" || rep.Error == "" {
		t.Errorf("status %q verdict %q error %q, want aborted, aborted and a reason", rep.Status, rep.Verdict, rep.Error)
	}
	if len(rep.Phases) != 2 {
		t.Fatalf("phases: got %d, want the finished one and the interrupted one:\n%s", len(rep.Phases), raw)
	}
	if p := rep.Phases[0]; p.Requests != 3000 || p.Aborted {
		t.Errorf("the finished phase must be kept whole: %+v", p)
	}
	if p := rep.Phases[1]; !p.Aborted || p.Requests == 0 || p.Requests >= 101500 || p.Errors != 0 {
		t.Errorf("the interrupted phase must keep its partial, error-free result: %+v", p)
	}
	// No driver is left behind.
	for _, p := range rep.Phases {
		if err := syscall.Kill(p.DriverPID, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("driver %d is still running (kill 0: %v)", p.DriverPID, err)
		}
	}
}
