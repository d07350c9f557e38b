package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// kneeConfig is a profile whose max-load phase ramps one arm on a pinned
// machine (target on CPU 0, driver on CPU 1), with %INJECT% replaced by an
// inject: section that makes one side slow.
const kneeConfig = `
sampler:
  interval: 250ms
pinning: {target: "0", driver: "1"}
%INJECT%
default_profile: knee
profiles:
  knee:
    description: knee attribution test
    settle: 200ms
    request_timeout: 5s
    compare: {rest: rest-control, graphql: graphql-load}
    phases:
      - name: rest-control
        arm: rest
        users: [{operation: rest-get, users: 2, iterations: 50}]
      - name: graphql-load
        arm: graphql
        users: [{operation: graphql-query, users: 2, iterations: 50}]
      - name: max-load
        arm: %ARM%
        model: ramping
        duration: 8s
        ramp: {start: 2, step: 6, every: 1s, max: 40}
        failure: {window: 2s, max_error_ratio: 0.01, max_p99: 150ms, min_requests: 10}
        users:
          - {operation: %OP%, users: 1, iterations: 0}
`

// TestMaxLoadKneeAttribution (issue 12): a max-load phase against a server
// made slow on purpose ends at a knee attributed to the target's CPU; the
// same ramp with a driver made slow on purpose is labelled driver-bound and
// not blamed on the server. Both with target and driver pinned apart.
func TestMaxLoadKneeAttribution(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs to pin the target and the driver apart")
	}
	bin := buildSoakd(t)
	for _, tc := range []struct {
		name, inject, arm, op, want string
		resources                   []string
	}{
		// The server's knee is its CPU saturating or, on a machine busy
		// with other work, the p99 rule tripping as its queue grows.
		{"slow server", "inject: {graphql_cpu_us_per_request: 3000}", "graphql", "graphql-query", "target", []string{"target CPU", "p99_latency"}},
		{"slow driver", "inject: {driver_cpu_us_per_request: 3000}", "rest", "rest-get", "driver-bound", []string{"driver CPU"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "knee.yaml")
			doc := strings.NewReplacer("%INJECT%", tc.inject, "%ARM%", tc.arm, "%OP%", tc.op).Replace(kneeConfig)
			if err := os.WriteFile(cfg, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "run")
			_, stderr, code := runSoakd(t, bin, "run", "--config", cfg, "--out", out, "--log-format", "json")
			raw, err := os.ReadFile(filepath.Join(out, "report.json"))
			if err != nil {
				t.Fatalf("no report.json (exit %d): %v\n%s", code, err, stderr)
			}
			var rep struct {
				Phases []struct {
					Name    string `json:"name"`
					MaxLoad *struct {
						Knee *struct {
							Attribution    string   `json:"attribution"`
							Resource       string   `json:"resource"`
							Reason         string   `json:"reason"`
							DriverCPUShare *float64 `json:"driver_cpu_share"`
							TargetCPUShare *float64 `json:"target_cpu_share"`
						} `json:"knee"`
						Chart []struct {
							DriverCPUShare *float64 `json:"driver_cpu_share"`
							TargetCPUShare *float64 `json:"target_cpu_share"`
						} `json:"chart"`
					} `json:"max_load"`
				} `json:"phases"`
			}
			if err := json.Unmarshal(raw, &rep); err != nil {
				t.Fatal(err)
			}
			for _, p := range rep.Phases {
				if p.Name != "max-load" {
					continue
				}
				if p.MaxLoad == nil || p.MaxLoad.Knee == nil || len(p.MaxLoad.Chart) == 0 {
					t.Fatalf("max-load phase without a knee or chart: %+v", p.MaxLoad)
				}
				k := p.MaxLoad.Knee
				t.Logf("%s: knee %s (%s): %s", tc.name, k.Attribution, k.Resource, k.Reason)
				if k.Attribution != tc.want || !slices.Contains(tc.resources, k.Resource) {
					t.Errorf("knee %s / %s, want %s / one of %q: %s", k.Attribution, k.Resource, tc.want, tc.resources, k.Reason)
				}
				measured := 0
				for _, c := range p.MaxLoad.Chart {
					if c.DriverCPUShare != nil && c.TargetCPUShare != nil {
						measured++
					}
				}
				if measured < len(p.MaxLoad.Chart)/2 {
					t.Errorf("only %d of %d chart points have both utilisations", measured, len(p.MaxLoad.Chart))
				}
				return
			}
			t.Fatal("no max-load phase in report.json")
		})
	}
}
