package run

import (
	"slices"
	"strings"
	"testing"

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
