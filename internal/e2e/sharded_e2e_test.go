package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shardedConfig is tinyConfig's closed phases (the ramping one left out:
// TestShardedMaxLoadStopsOnce tests a sharded knee) with drivers.shards set to shards and graphql-mutation running
// mutations iterations per user.
func shardedConfig(shards, mutations int) string {
	cfg := tinyConfig[:strings.Index(tinyConfig, "      - name: max-load-graphql")]
	cfg = strings.Replace(cfg, "    seed: 7\n", fmt.Sprintf("    seed: 7\n    drivers: {shards: %d}\n", shards), 1)
	return strings.Replace(cfg, "graphql-mutation, users: 5, iterations: 300", fmt.Sprintf("graphql-mutation, users: 5, iterations: %d", mutations), 1)
}

// shardedReport is the part of report.json the sharded tests read.
type shardedReport struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Phases []struct {
		Name             string  `json:"name"`
		DriverPID        int     `json:"driver_pid"`
		Requests         int64   `json:"requests"`
		Errors           int64   `json:"errors"`
		ThroughputRPS    float64 `json:"throughput_rps"`
		DriverCPUPercent float64 `json:"driver_cpu_percent"`
		SteadyFallback   string  `json:"steady_fallback"`
		Operations       []struct {
			Operation string `json:"operation"`
			Users     int    `json:"users"`
			Requests  int64  `json:"requests"`
		} `json:"operations"`
		Subscriptions *struct {
			Subscriptions int   `json:"subscriptions"`
			Expected      int64 `json:"expected"`
			Received      int64 `json:"received"`
			Lost          int64 `json:"lost"`
			Duplicated    int64 `json:"duplicated"`
		} `json:"subscriptions"`
		DriverShards []struct {
			Shard      int     `json:"shard"`
			PID        int     `json:"pid"`
			Requests   int64   `json:"requests"`
			CPUSeconds float64 `json:"cpu_seconds"`
			CPUPercent float64 `json:"cpu_percent"`
		} `json:"driver_shards"`
	} `json:"phases"`
}

// runSharded runs `soakd run` on cfg and decodes its report.
func runSharded(t *testing.T, bin, cfg string) (shardedReport, int) {
	t.Helper()
	raw, _, code := runConfig(t, bin, cfg)
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	var rep shardedReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep, code
}

// TestShardedDriversMatchOneDriver runs the same closed profile with one
// driver and with three sharded drivers against the built-in target: every
// phase completes the same requests (exactly: a closed iterations model),
// with the same users per operation, the subscription account of
// graphql-load is exact across shards (every event expected received, none
// lost or duplicated, as with one driver), and each phase lists three
// distinct driver pids whose requests add up to the phase's.
func TestShardedDriversMatchOneDriver(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	one, code1 := runSharded(t, bin, shardedConfig(1, 300))
	three, code3 := runSharded(t, bin, shardedConfig(3, 300))
	for name, r := range map[string]shardedReport{"1 driver": one, "3 drivers": three} {
		if r.Status != "complete" || len(r.Phases) != 2 {
			t.Fatalf("%s: status %q (%s), %d phases; want complete with 2 (exit codes %d, %d)", name, r.Status, r.Error, len(r.Phases), code1, code3)
		}
	}
	for i, p := range three.Phases {
		q := one.Phases[i]
		t.Logf("phase %s: 1 driver %d requests, driver CPU %.1f %%, %.0f req/s; 3 drivers %d requests, driver CPU %.1f %%, %.0f req/s",
			p.Name, q.Requests, q.DriverCPUPercent, q.ThroughputRPS, p.Requests, p.DriverCPUPercent, p.ThroughputRPS)
		if p.Name != q.Name || p.Requests != q.Requests || p.Requests != 3000 || p.Errors != 0 || q.Errors != 0 {
			t.Errorf("phase %s: 3 drivers %d requests (%d errors), 1 driver %s %d (%d errors): want 3000 each, no error", p.Name, p.Requests, p.Errors, q.Name, q.Requests, q.Errors)
		}
		for j, op := range p.Operations {
			if o := q.Operations[j]; op.Operation != o.Operation || op.Users != o.Users || op.Requests != o.Requests {
				t.Errorf("phase %s operation %d: 3 drivers %+v, 1 driver %+v", p.Name, j, op, o)
			}
		}
		if len(q.DriverShards) != 0 {
			t.Errorf("phase %s: one driver lists driver_shards %+v", q.Name, q.DriverShards)
		}
		if len(p.DriverShards) != 3 {
			t.Fatalf("phase %s: driver_shards %+v, want 3", p.Name, p.DriverShards)
		}
		pids := map[int]bool{}
		var sum int64
		for k, d := range p.DriverShards {
			t.Logf("  shard %d: pid %d, %d requests, CPU %.3f s (%.1f %% of the machine)", d.Shard, d.PID, d.Requests, d.CPUSeconds, d.CPUPercent)
			if d.Shard != k || d.PID <= 0 || d.CPUSeconds <= 0 || d.Requests < 900 || d.Requests > 1200 {
				t.Errorf("phase %s: shard entry %d is %+v: want its index, a pid, CPU and within one user's requests of a third", p.Name, k, d)
			}
			pids[d.PID] = true
			sum += d.Requests
		}
		if len(pids) != 3 || sum != p.Requests || p.DriverPID != p.DriverShards[0].PID {
			t.Errorf("phase %s: %d distinct pids, requests %d of %d, driver_pid %d: want 3 pids adding up to the phase, driver_pid shard 0's", p.Name, len(pids), sum, p.Requests, p.DriverPID)
		}
	}
	s1, s3 := one.Phases[1].Subscriptions, three.Phases[1].Subscriptions
	if s1 == nil || s3 == nil {
		t.Fatalf("graphql-load: subscriptions %v (1 driver), %v (3 drivers)", s1, s3)
	}
	t.Logf("subscriptions: 1 driver %+v; 3 drivers %+v", *s1, *s3)
	if *s3 != *s1 || s3.Subscriptions != 10 || s3.Lost != 0 || s3.Duplicated != 0 || s3.Received != s3.Expected || s3.Expected != 3000 {
		t.Errorf("subscriptions: 3 drivers %+v, 1 driver %+v: want both 10 subscriptions receiving all 3000 events, none lost or duplicated", *s3, *s1)
	}
}

// TestShardedDriverKilledMidPhase kills shard 1 of 3 of graphql-load (a
// child of the run, found by its "driver started" log line and checked by
// its parent pid) once its load has started: the run aborts with exit 3
// within 30 s, the report's error names the shard and its pid, and the
// other two shards are gone.
func TestShardedDriverKilledMidPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sharded.yaml")
	if err := os.WriteFile(cfg, []byte(shardedConfig(3, 20000)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	cmd, stderr := startRun(t, bin, cfg, out)
	pids := map[string]int{}
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	for len(pids) < 3 && sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		var m struct {
			Msg   string `json:"msg"`
			Phase string `json:"phase"`
			PID   int    `json:"pid"`
			Shard string `json:"shard"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Msg == "driver started" && m.Phase == "graphql-load" {
			pids[m.Shard] = m.PID
		}
	}
	victim := pids["1/3"]
	if len(pids) != 3 || victim == 0 {
		t.Fatalf("want the three graphql-load shards in the log, got %v:\n%s", pids, log.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	if ppid := parentOf(t, victim); ppid != cmd.Process.Pid {
		t.Fatalf("shard 1/3 (pid %d) has parent %d, not the run %d", victim, ppid, cmd.Process.Pid)
	}
	// The shards start their load at start_at, 5 s after they were
	// started; kill one a second into it.
	time.Sleep(6 * time.Second)
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("shard killed: got %v, want exit code 3", err)
	}
	if d := time.Since(killed); d > 30*time.Second {
		t.Errorf("the run took %s to end after a shard died", d)
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep shardedReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	t.Logf("error: %s", rep.Error)
	if want := fmt.Sprintf("shard 1/3 (pid %d)", victim); rep.Status != "aborted" || !strings.Contains(rep.Error, want) || !strings.Contains(rep.Error, "graphql-load") {
		t.Errorf("status %q error %q, want aborted naming graphql-load and %s", rep.Status, rep.Error, want)
	}
	if len(rep.Phases) != 1 || rep.Phases[0].Requests != 3000 {
		t.Errorf("the finished phase must be kept: %+v", rep.Phases)
	}
	for shard, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("shard %s (pid %d) is still there after the run ended (kill 0: %v)", shard, pid, err)
		}
	}
}

// parentOf returns pid's parent pid, from /proc/pid/stat.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		t.Fatal(err)
	}
	return ppid
}
