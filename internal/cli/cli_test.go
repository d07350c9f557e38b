package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soakd/soakd/internal/exitcode"
)

// TestConfigFileBounded: a --config that never ends (/dev/zero) is refused
// with exit 2 before a byte is read, as a device; a regular file over
// 16 MiB is refused after 16 MiB, instead of being read whole.
func TestConfigFileBounded(t *testing.T) {
	_, err := (&cli{defaults: mustRead(t, "config.yaml")}).loadConfig("/dev/zero")
	if exitcode.Of(err) != exitcode.Usage || err == nil || !strings.Contains(err.Error(), "not a regular file (a device)") {
		t.Fatalf("loadConfig(/dev/zero) = %v (code %d), want exit 2 saying it is a device", err, exitcode.Of(err))
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, make([]byte, 16<<20+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = (&cli{defaults: mustRead(t, "config.yaml")}).loadConfig(big)
	if exitcode.Of(err) != exitcode.Usage || err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Fatalf("loadConfig(17 MiB) = %v (code %d), want exit 2 saying it is too large", err, exitcode.Of(err))
	}
}

// TestRoundsFlag: --rounds outside 1 … 100 is refused with exit 2 before
// anything starts, naming the flag.
func TestRoundsFlag(t *testing.T) {
	for _, v := range []string{"0", "101", "-3"} {
		var out, errb strings.Builder
		code := Run(mustRead(t, "config.yaml"), []string{"run", "--rounds", v}, &out, &errb)
		if code != exitcode.Usage || !strings.Contains(errb.String(), "--rounds "+v+": must be between 1 and 100") {
			t.Errorf("--rounds %s: exit %d, want 2 naming the flag\n%s", v, code, errb.String())
		}
	}
}

// TestSettleCommand: the advice of an inconclusive run is the same command
// with --rounds, its config and arms kept and quoted for a shell.
func TestSettleCommand(t *testing.T) {
	for _, c := range []struct {
		config, profile, arms string
		want                  string
	}{
		{"", "quick", "rest,graphql", "soakd run --profile quick --rounds 9"},
		{"ci/soak me.yaml", "gate", "rest,rest", "soakd run --config 'ci/soak me.yaml' --profile gate --arms rest,rest --rounds 9"},
		{"it's.yaml", "q", "", `soakd run --config 'it'\''s.yaml' --profile q --rounds 9`},
	} {
		if got := settleCommand(c.config, nil, 1, c.profile, c.arms, 9); got != c.want {
			t.Errorf("settleCommand(%q, %q, %q) = %s, want %s", c.config, c.profile, c.arms, got, c.want)
		}
	}
}

// TestRunSet: soakd run --set decodes each KEY=VALUE on top of the
// configuration, validated like a file (an unknown key or a bad value is
// refused, naming it), and the settle command repeats them.
func TestRunSet(t *testing.T) {
	base, err := (&cli{defaults: mustRead(t, "config.yaml")}).loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := withSets(base, []string{"kpis.cpu_increase_points=7", "sampler.interval=500ms"})
	if err != nil || cfg.KPIs.CPUIncreasePoints != 7 || cfg.Sampler.Interval.String() != "500ms" || base.KPIs.CPUIncreasePoints == 7 {
		t.Fatalf("--set: %v, cpu %v, interval %v (base changed: %v)", err, cfg.KPIs.CPUIncreasePoints, cfg.Sampler.Interval, base.KPIs.CPUIncreasePoints == 7)
	}
	for _, bad := range [][]string{{"kpis.cpu_increase_pionts=7"}, {"sampler.interval=soon"}, {"kpis"}} {
		if _, err := withSets(base, bad); err == nil {
			t.Errorf("--set %q was taken", bad)
		}
	}
	if got, want := settleCommand("", []string{"kpis.cpu_increase_points=7", "x=a b"}, 0.5, "quick", "", 9), "soakd run --set kpis.cpu_increase_points=7 --set 'x=a b' --profile quick --scale 0.5 --rounds 9"; got != want {
		t.Errorf("settle command %s, want %s", got, want)
	}
}
