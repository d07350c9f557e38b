package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// builtinReport is what the tests of the built-in target read of report.json.
type builtinReport struct {
	Status    string `json:"status"`
	Error     string `json:"error"`
	TargetPID int    `json:"target_pid"`
	Target    *struct {
		Kind         string `json:"kind"`
		PID          int    `json:"pid"`
		RuntimeBasis string `json:"runtime_basis"`
		Exit         string `json:"exit"`
	} `json:"target"`
	Checks []struct {
		Group, Name, Phase, Outcome string
	} `json:"checks"`
	Phases []struct {
		Name      string `json:"name"`
		Requests  int64  `json:"requests"`
		DriverPID int    `json:"driver_pid"`
		Resources *struct {
			Samples    int     `json:"samples"`
			CPUPercent float64 `json:"cpu_machine_percent"`
			AllocBytes uint64  `json:"alloc_bytes"`
		} `json:"resources"`
		After *struct {
			Returned      bool   `json:"returned"`
			HeapLiveBytes uint64 `json:"heap_live_bytes"`
		} `json:"after"`
	} `json:"phases"`
	Profiles []string `json:"profiles"`
	Notes    []string `json:"notes"`
}

// runOwnPID runs `soakd run` on cfg like runConfig, and also returns the
// orchestrating soakd's PID.
func runOwnPID(t *testing.T, bin, cfg string) (builtinReport, string, int, int) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg+"\ndata_dir: "+filepath.Join(dir, "data")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	cmd := exec.CommandContext(t.Context(), bin, "run", "--config", path, "--out", out, "--log-format", "json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	code := 0
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatalf("no report.json (exit %d): %v\n%s", code, err, stderr.String())
	}
	var rep builtinReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	return rep, out, code, pid
}

// TestBuiltinTargetIsItsOwnProcess reproduces issue 11 ("the measured
// process must hold only the server"): the built-in target runs as a child
// process of its own, neither the orchestrating soakd nor a driver, and the
// run measures it as before (samples, checks, memory verdict, CPU and heap
// profiles, samples.json); target.in_process: true keeps the old way.
func TestBuiltinTargetIsItsOwnProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	rep, out, code, self := runOwnPID(t, bin, withMemoryPhase(tinyConfig))
	if rep.Status != "complete" || (code != 0 && code != 1 && code != 4) {
		t.Fatalf("status %q (error %q), exit %d", rep.Status, rep.Error, code)
	}
	tg := rep.Target
	if tg == nil || tg.Kind != "builtin" || tg.PID != rep.TargetPID || !strings.Contains(tg.RuntimeBasis, "process of its own") {
		t.Fatalf("target %+v (target_pid %d), want the built-in target in its own process", tg, rep.TargetPID)
	}
	if rep.TargetPID <= 0 || rep.TargetPID == self {
		t.Errorf("target_pid %d is the orchestrating soakd (%d)", rep.TargetPID, self)
	}
	if tg.Exit != "" {
		t.Errorf("target.exit %q for a child soakd stopped itself", tg.Exit)
	}
	if len(rep.Phases) != 3 {
		t.Fatalf("phases: %d, want 3", len(rep.Phases))
	}
	for _, p := range rep.Phases {
		if p.DriverPID <= 0 || p.DriverPID == rep.TargetPID || p.DriverPID == self {
			t.Errorf("%s: driver pid %d (target %d, soakd %d)", p.Name, p.DriverPID, rep.TargetPID, self)
		}
		if p.After == nil || !p.After.Returned || p.After.HeapLiveBytes == 0 {
			t.Errorf("%s: after %+v, want the target back at rest with a forced-GC live heap", p.Name, p.After)
		}
	}
	for _, p := range rep.Phases[:2] {
		if r := p.Resources; r == nil || r.Samples < 3 || r.CPUPercent <= 0 || r.AllocBytes == 0 {
			t.Errorf("%s: resources %+v", p.Name, r)
		}
	}
	memory := map[string]string{}
	for _, c := range rep.Checks {
		if c.Group == "memory" {
			memory[c.Name] = c.Outcome
		}
	}
	for _, name := range []string{"steady_allocation", "survivor_growth", "heap_returned", "goroutines_returned"} {
		if memory[name] == "" {
			t.Errorf("memory check %s missing: %v", name, memory)
		}
	}
	for _, f := range []string{"samples.json", "rest-control.cpu.pb.gz", "graphql-load.cpu.pb.gz", "graphql-load.heap-before.pb.gz",
		"graphql-load.heap-after.pb.gz", "graphql-load.goroutine-after.txt", "target.stdout.log", "target.stderr.log"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}
	var samples struct {
		PauseBuckets []any `json:"pause_buckets"`
		Samples      []struct {
			Phase string `json:"phase"`
		} `json:"samples"`
	}
	if raw, err := os.ReadFile(filepath.Join(out, "samples.json")); err != nil || json.Unmarshal(raw, &samples) != nil {
		t.Fatalf("samples.json: %v", err)
	}
	phases := map[string]int{}
	for _, s := range samples.Samples {
		phases[s.Phase]++
	}
	if len(samples.PauseBuckets) == 0 || phases["rest-control"] < 3 || phases["graphql-load"] < 3 {
		t.Errorf("samples.json: %d buckets, samples by phase %v", len(samples.PauseBuckets), phases)
	}
	if logs, err := os.ReadFile(filepath.Join(out, "target.stderr.log")); err != nil || !strings.Contains(string(logs), "target listening") {
		t.Errorf("target.stderr.log does not hold the target's log (%v)", err)
	}
	if err := syscall.Kill(rep.TargetPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the target process %d is still running after the run (kill 0: %v)", rep.TargetPID, err)
	}

	// In process, for comparison: the target is the orchestrator.
	rep, _, code, self = runOwnPID(t, bin, tinyConfig+"target:\n  in_process: true\n")
	if rep.Status != "complete" || rep.TargetPID != self || rep.Target == nil || rep.Target.PID != self || !strings.Contains(rep.Target.RuntimeBasis, "in_process") {
		t.Errorf("target.in_process: status %q exit %d, target_pid %d, target %+v; want soakd's own pid %d", rep.Status, code, rep.TargetPID, rep.Target, self)
	}
}

// TestBuiltinTargetKilledMidRun kills the built-in target's process during
// the second phase: the run aborts at once (exit 3) naming how it ended,
// keeping the first phase.
func TestBuiltinTargetKilledMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	cmd, out := longRun(t, bin)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	targetPID := killTargetMidPhase(t, cmd, stderr, "target process started")
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep builtinReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Status != "aborted" || !strings.Contains(rep.Error, "the target stopped serving") ||
		!strings.Contains(rep.Error, fmt.Sprintf("(pid %d) exited: signal: killed", targetPID)) {
		t.Errorf("status %q error %q, want aborted with the target's exit status", rep.Status, rep.Error)
	}
	if rep.TargetPID != targetPID || rep.Target == nil || rep.Target.Exit != "signal: killed" {
		t.Errorf("target_pid %d target %+v, want pid %d, exit signal: killed", rep.TargetPID, rep.Target, targetPID)
	}
	if len(rep.Phases) < 1 || rep.Phases[0].Name != "rest-control" || rep.Phases[0].Requests != 3000 {
		t.Errorf("the finished phase must be kept:\n%s", raw)
	}
	if _, err := os.Stat(filepath.Join(out, "samples.json")); err != nil {
		t.Errorf("no samples.json in the partial run: %v", err)
	}
}

// TestTargetControlNeedsToken: `soakd target` prints its ready line, its
// control surface refuses requests without the token given in
// SOAKD_TARGET_TOKEN (or with another), answers with it, and the command
// stops on SIGTERM with exit 0.
func TestTargetControlNeedsToken(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	cmd := exec.CommandContext(t.Context(), bin, "target", "--log-format", "json")
	cmd.Env = append(os.Environ(), "SOAKD_TARGET_TOKEN=t0ken")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var ready struct {
		URL        string `json:"url"`
		ControlURL string `json:"control_url"`
		PID        int    `json:"pid"`
	}
	if err != nil || json.Unmarshal([]byte(line), &ready) != nil || ready.PID != cmd.Process.Pid || ready.ControlURL == "" {
		t.Fatalf("ready line %q (%v)\n%s", line, err, stderr.String())
	}
	try := func(method, path, token string) int {
		req, _ := http.NewRequestWithContext(t.Context(), method, ready.ControlURL+path, strings.NewReader(`{"Op":"run_verdict","Verdict":"pass"}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, e := range [][2]string{{"GET", "/soakd/samples"}, {"POST", "/soakd/baseline"}, {"POST", "/soakd/metrics"}} {
		for _, tok := range []string{"", "t0ke", "other"} {
			if code := try(e[0], e[1], tok); code != http.StatusUnauthorized {
				t.Errorf("%s %s with token %q: HTTP %d, want 401", e[0], e[1], tok, code)
			}
		}
	}
	if code := try("GET", "/soakd/samples", "t0ken"); code != http.StatusOK {
		t.Errorf("samples with the token: HTTP %d", code)
	}
	if code := try("POST", "/soakd/metrics", "t0ken"); code != http.StatusNoContent {
		t.Errorf("metrics with the token: HTTP %d", code)
	}
	if resp, err := http.Get(ready.URL + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("the target does not serve /healthz: %v", err)
	} else {
		resp.Body.Close()
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Errorf("soakd target on SIGTERM: %v, want exit 0\n%s", err, stderr.String())
	}
}
