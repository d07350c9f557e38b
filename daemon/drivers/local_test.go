package drivers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/testkit"
	"github.com/soakd/soakd/workloads"
)

// TestDriverEnvHasNoSecrets checks that a driver process does not inherit
// the secrets soakd reads from its environment (the control token, the
// Pyroscope password), and does inherit the rest.
func TestDriverEnvHasNoSecrets(t *testing.T) {
	t.Setenv(config.TokenEnv, "control-secret")
	t.Setenv("SOAKD_TEST_PYROSCOPE_PASSWORD", "pyroscope-secret")
	t.Setenv("SOAKD_TEST_KEPT", "kept")
	cfg := testkit.Config(t, "profiling:\n  pyroscope:\n    basic_auth_password_env: SOAKD_TEST_PYROSCOPE_PASSWORD\n")
	cmd := driverCommand(t.Context(), "/bin/true", []string{"--target", "http://127.0.0.1:1"}, "1", cfg.SecretEnvs(), workloads.Shard{})
	if cmd.Env == nil {
		t.Fatal("cmd.Env is nil: the driver inherits the whole environment")
	}
	for _, kv := range cmd.Env {
		if strings.Contains(kv, "secret") {
			t.Errorf("the driver's environment holds %q", kv)
		}
	}
	if !slices.Contains(cmd.Env, "SOAKD_TEST_KEPT=kept") {
		t.Errorf("the driver's environment lost SOAKD_TEST_KEPT: %v", cmd.Env)
	}
	if want := []string{"/bin/true", "drive", "--target", "http://127.0.0.1:1", "--spec", "-", "--log-format", "json", "--cpus", "1"}; !slices.Equal(cmd.Args, want) {
		t.Errorf("args = %q, want %q", cmd.Args, want)
	}
}

// TestDriverCommandShard passes --shard i/N to a sharded driver only.
func TestDriverCommandShard(t *testing.T) {
	target := []string{"--target", "http://127.0.0.1:1"}
	cmd := driverCommand(t.Context(), "/bin/true", target, "", nil, workloads.Shard{Index: 1, Count: 3})
	if i := slices.Index(cmd.Args, "--shard"); i < 0 || i+1 >= len(cmd.Args) || cmd.Args[i+1] != "1/3" {
		t.Errorf("args %q: want --shard 1/3", cmd.Args)
	}
	cmd = driverCommand(t.Context(), "/bin/true", target, "", nil, workloads.Shard{})
	if slices.Contains(cmd.Args, "--shard") {
		t.Errorf("args %q: one driver gets no --shard", cmd.Args)
	}
}

// fakeDriver writes a shell script standing in for `soakd drive`: shard
// fail (as "i/N") exits 7 at once without a result; every other shard
// waits (at most 30 s) until SIGTERM, then writes an aborted result of
// its shard and exits (it touches exe.i.ready once its trap is set).
func fakeDriver(t *testing.T, fail string) string {
	t.Helper()
	return fakeDriverSending(t, fail, "", nil)
}

// fakeDriverSending is fakeDriver whose shard sender (as "i/N") writes
// lines on its output once its trap is set.
func fakeDriverSending(t *testing.T, fail, sender string, lines []string) string {
	t.Helper()
	send := "\t:\n" // an if needs a command
	for _, l := range lines {
		send += "	printf '%s\\n' '" + l + "'\n"
	}
	script := `#!/bin/sh
shard=""
while [ $# -gt 0 ]; do
	if [ "$1" = "--shard" ]; then shard="$2"; fi
	shift
done
if [ "$shard" = "` + fail + `" ]; then
	echo "boom" >&2
	exit 7
fi
i=${shard%/*}
n=${shard#*/}
trap 'kill $sleeper 2>/dev/null; echo "{\"version\":1,\"type\":\"result\",\"result\":{\"phase\":\"p\",\"aborted\":true,\"shard\":{\"index\":$i,\"count\":$n}}}"; exit 0' TERM
sleep 30 </dev/null >/dev/null 2>&1 &
sleeper=$!
if [ "$shard" = "` + sender + `" ]; then
` + send + `fi
touch "$0.$i.ready"
wait $sleeper
`
	path := filepath.Join(t.TempDir(), "fake-soakd")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunDriversFailedShardStopsTheOthers: a shard that dies without a
// result fails the phase with an error naming it and its pid, once the
// other shards, stopped by SIGTERM, have exited.
func TestRunDriversFailedShardStopsTheOthers(t *testing.T) {
	exe := fakeDriver(t, "1/3")
	spec := workloads.Phase{Name: "p", RequestTimeout: time.Second}
	_, usages, err := Run(t.Context(), zap.NewNop(), Local{Log: zap.NewNop(), Exe: exe, Target: []string{"--target", "http://127.0.0.1:1"}}, 3, spec, nil)
	if err == nil {
		t.Fatal("a shard died, yet the phase succeeded")
	}
	if len(usages) != 3 || usages[1].PID == 0 {
		t.Fatalf("usages %+v: want 3, shard 1's pid known", usages)
	}
	if want := fmt.Sprintf("shard 1/3 (pid %d)", usages[1].PID); !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "other shards were stopped") {
		t.Errorf("error %q: want it to name %s, its stderr and that the others were stopped", err, want)
	}
	for _, i := range []int{0, 2} {
		if usages[i].PID == 0 {
			continue // stopped before it started
		}
		if err := syscall.Kill(usages[i].PID, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("shard %d (pid %d) still exists after runDrivers returned: %v", i, usages[i].PID, err)
		}
	}
}

// TestRunDriversMergesPartialResults: cancelling the phase stops every
// shard, whose partial results are merged into one aborted result.
func TestRunDriversMergesPartialResults(t *testing.T) {
	exe := fakeDriver(t, "none")
	ctx, cancel := context.WithCancel(t.Context())
	spec := workloads.Phase{Name: "p", RequestTimeout: time.Second}
	done := make(chan struct{})
	var (
		res    workloads.Result
		usages []Usage
		err    error
	)
	go func() {
		defer close(done)
		res, usages, err = Run(ctx, zap.NewNop(), Local{Log: zap.NewNop(), Exe: exe, Target: []string{"--target", "http://127.0.0.1:1"}}, 2, spec, nil)
	}()
	// Cancel once both fakes have set their trap.
	for !ready(exe, 2) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	if err != nil {
		t.Fatalf("cancelled shards with partial results: %v", err)
	}
	if !res.Aborted || res.Phase != "p" || res.Shard.Sharded() || len(usages) != 2 || usages[0].PID == usages[1].PID {
		t.Errorf("result %+v usages %+v: want one aborted whole-phase result from two drivers", res, usages)
	}
}

// ready reports whether the fake drivers exe of shards 0..n-1 have set their trap.
func ready(exe string, n int) bool {
	for i := range n {
		if _, err := os.Stat(fmt.Sprintf("%s.%d.ready", exe, i)); err != nil {
			return false
		}
	}
	return true
}

// TestRunDriversRefusesAWindowGap: a shard whose windows skip a seq (a
// lost line) fails the phase naming the shard and the seq, and the other
// shards are stopped.
func TestRunDriversRefusesAWindowGap(t *testing.T) {
	exe := fakeDriverSending(t, "none", "1/2", []string{
		`{"version":1,"type":"window","window":{"shard":1,"seq":0,"second":0,"requests":1}}`,
		`{"version":1,"type":"window","window":{"shard":1,"seq":2,"second":2,"requests":1}}`,
	})
	spec := workloads.Phase{Name: "p", RequestTimeout: time.Second}
	_, usages, err := Run(t.Context(), zap.NewNop(), Local{Log: zap.NewNop(), Exe: exe, Target: []string{"--target", "http://127.0.0.1:1"}}, 2, spec, nil)
	if err == nil || !strings.Contains(err.Error(), "shard 1/2: window of shard 1 seq 2 leaves a gap: seq 1 was expected next") || !strings.Contains(err.Error(), "other shards were stopped") {
		t.Fatalf("error %v: want the gap named, shard 1 seq 2, and the others stopped", err)
	}
	for i, u := range usages {
		if u.PID != 0 {
			if err := syscall.Kill(u.PID, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("shard %d (pid %d) still exists after runDrivers returned: %v", i, u.PID, err)
			}
		}
	}
}
