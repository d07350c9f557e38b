package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/schemas"
)

// leakSoakConfig is a soak of small cycles (a REST control phase and a
// GraphQL phase, 1,600 requests each, about 6 s a cycle on two cores) with the
// built-in target's leak switch at leakBytes per GraphQL request (0: off),
// drift judged after one warm-up cycle against the next one, and 3 cycles
// in a row beyond a limit failing a rule.
func leakSoakConfig(dataDir string, leakBytes int) string {
	return fmt.Sprintf(`
sampler:
  interval: 100ms
kpis:
  alloc_per_request_increase_percent: 2000
default_profile: leak
data_dir: %s
profiles:
  leak:
    description: the leak switch's soak proof
    settle: 300ms
    trim_head: 200ms
    trim_tail: 200ms
    request_timeout: 5s
    seed: 7
    compare: {rest: rest-control, graphql: graphql-load}
    phases:
      - name: rest-control
        arm: rest
        ramp_up: 200ms
        think: {min: 0ms, max: 10ms}
        users:
          - {operation: rest-get, users: 4, iterations: 400}
      - name: graphql-load
        arm: graphql
        ramp_up: 200ms
        think: {min: 0ms, max: 10ms}
        users:
          - {operation: graphql-query, users: 4, iterations: 400}
soak:
  pause: 200ms
  drift: {warmup_cycles: 1, baseline_cycles: 1, sustained_cycles: 3}
inject:
  graphql_leak_bytes_per_request: %d
`, dataDir, leakBytes)
}

// leakSoak is what the test reads of a soak.json.
type leakSoak struct {
	Verdict string
	Cycles  []struct {
		Cycle                   int
		HeapLiveBytes           float64           `json:"heap_live_bytes"`
		RESTCPUMicrosPerRequest *float64          `json:"rest_cpu_us_per_request"`
		RESTGCPercent           *float64          `json:"rest_gc_percent"`
		NotMeasured             map[string]string `json:"not_measured"`
	}
	Drift []leakDriftRule
}

// leakDriftRule is what the test reads of a drift rule.
type leakDriftRule struct {
	Name, Outcome, Basis, Detail string
	BasisReason                  string  `json:"basis_reason"`
	SlopePerCycle                float64 `json:"slope_per_cycle"`
	Projection                   string
}

// envInt is the environment variable name as a positive int, else def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// TestSoakLeakSwitchDrift runs the same `soakd soak` twice against the
// built-in target: with the leak switch on (inject.graphql_leak_bytes_per_request)
// heap_live_drift fails, the verdict is fail (exit 1) and the terminal says
// why, naming the live heap and its slope per cycle; with it off the same
// soak passes heap_live_drift. CPU and GC drift say their basis (relative to
// the REST control of the same cycle, or absolute with the reason).
// SOAKD_LEAK_PROOF_CYCLES (default 5) and SOAKD_LEAK_PROOF_BYTES (default
// 1024) lengthen it: make soak-leak-proof runs 20 cycles of a 64-byte leak.
func TestSoakLeakSwitchDrift(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	cycles := envInt(t, "SOAKD_LEAK_PROOF_CYCLES", 5)
	leak := envInt(t, "SOAKD_LEAK_PROOF_BYTES", 1024)
	bin := buildSoakd(t)
	dir := t.TempDir()
	soak := func(name string, leakBytes int) (leakSoak, string, int) {
		t.Helper()
		data := filepath.Join(dir, name)
		cfg := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(cfg, []byte(leakSoakConfig(data, leakBytes)), 0o644); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		stdout, stderr, code := runSoakdWithin(t, time.Minute+time.Duration(cycles)*20*time.Second, bin, "soak", "--config", cfg, "--cycles", strconv.Itoa(cycles), "--log-format", "json")
		raw, err := os.ReadFile(filepath.Join(data, "soak.json"))
		if err != nil {
			t.Fatalf("%s: no soak.json (exit %d): %v\n%s", name, code, err, stderr)
		}
		if err := schemas.Validate(schemas.Soak, raw); err != nil {
			t.Errorf("%s: soak.json: %v", name, err)
		}
		var s leakSoak
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		// A line per finished cycle, as it finished (a json log line here).
		for n := 1; n <= cycles; n++ {
			if !strings.Contains(stderr, fmt.Sprintf(`"line":"◆ cycle %d  `, n)) {
				t.Errorf("%s: no line for cycle %d on stderr", name, n)
			}
		}
		t.Logf("%s (leak %d B per GraphQL request, %d cycles in %s), exit %d:", name, leakBytes, cycles, time.Since(start).Round(time.Second), code)
		for _, line := range strings.Split(stdout, "\n") {
			if strings.Contains(line, "drift ") || strings.Contains(line, "live heap") || strings.HasPrefix(line, "soak verdict") {
				t.Log(line)
			}
		}
		return s, stdout, code
	}
	rule := func(s leakSoak, name string) leakDriftRule {
		t.Helper()
		for _, d := range s.Drift {
			if d.Name == name {
				return d
			}
		}
		t.Fatalf("no drift rule %s", name)
		return leakDriftRule{}
	}
	checkBases := func(name string, s leakSoak) {
		t.Helper()
		if h := rule(s, "heap_live_drift"); h.Basis != "absolute" || !strings.Contains(h.BasisReason, "one process") {
			t.Errorf("%s: heap_live_drift basis %s (%s), want absolute: one process serves both arms", name, h.Basis, h.BasisReason)
		}
		for _, n := range []string{"cpu_per_request_drift", "gc_percent_drift"} {
			r := rule(s, n)
			switch {
			case r.Basis == "relative_to_control" && strings.HasPrefix(r.Detail, "relative to the REST control"):
			case r.Basis == "absolute" && strings.Contains(r.BasisReason, "no control figure") && strings.Contains(r.Detail, r.BasisReason):
			default:
				t.Errorf("%s: %s basis %s (%s): %s", name, n, r.Basis, r.BasisReason, r.Detail)
			}
		}
		for _, c := range s.Cycles {
			if c.RESTCPUMicrosPerRequest == nil && c.NotMeasured["rest_cpu_us_per_request"] == "" || c.RESTGCPercent == nil && c.NotMeasured["rest_gc_percent"] == "" {
				t.Errorf("%s: cycle %d lacks a REST figure without saying why: %+v", name, c.Cycle, c)
			}
		}
	}

	on, stdout, code := soak("leak-on", leak)
	h := rule(on, "heap_live_drift")
	if code != 1 || on.Verdict != "fail" || h.Outcome != "fail" || h.SlopePerCycle <= 0 {
		t.Errorf("leak on: exit %d, verdict %s, heap_live_drift %s (slope %v): want 1, fail, fail with a rising slope\n%s", code, on.Verdict, h.Outcome, h.SlopePerCycle, stdout)
	}
	// The terminal says why: the live heap, its slope per cycle, and the
	// rule on the verdict line.
	why := regexp.MustCompile(`drift heap_live_drift +FAIL  Live heap after GC: .*trend \+[0-9.]+ (B|KiB|MiB) ± [0-9.]+ (B|KiB|MiB) per cycle`)
	if !why.MatchString(stdout) || !strings.Contains(stdout, "soak verdict: fail (failed: drift heap_live_drift") {
		t.Errorf("leak on: the terminal does not say the live heap rose by a slope per cycle, or the verdict line does not name heap_live_drift:\n%s", stdout)
	}
	checkBases("leak-on", on)

	off, stdout, _ := soak("leak-off", 0)
	if h := rule(off, "heap_live_drift"); h.Outcome != "pass" {
		t.Errorf("leak off: heap_live_drift %s, want pass: %s\n%s", h.Outcome, h.Detail, stdout)
	}
	checkBases("leak-off", off)
}
