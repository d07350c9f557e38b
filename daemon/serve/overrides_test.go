package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/run"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/history"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/testkit"
)

// overrideDaemon returns a daemon whose runs are recorded by a stand-in
// suite (each run's configuration is appended to *got) and its control API.
func overrideDaemon(t *testing.T) (*daemon, http.Handler, *[]*config.Config) {
	t.Helper()
	cfg, err := config.Load(testkit.Defaults(t), nil, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	store, err := history.Open(cfg.DataDir, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	var got []*config.Config
	d := &daemon{cfg: cfg, log: zap.NewNop(), store: store, base: t.Context(),
		suite: func(_ context.Context, c *config.Config, _ run.RunOptions) (*report.Report, error) {
			got = append(got, c)
			return nil, nil
		}}
	return d, api.NewHandler(d, "", zap.NewNop()), &got
}

// post sends a start request with overrides and returns the status and body.
func post(t *testing.T, d *daemon, h http.Handler, overrides string) (int, string) {
	t.Helper()
	body, err := json.Marshal(overrides)
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/runs", strings.NewReader(`{"overrides":`+string(body)+`}`)))
	d.runs.Wait()
	return rec.Code, rec.Body.String()
}

// TestOverridesRefusedUnderServe reproduces issue 10 item 5: overrides a
// running target cannot honour for one run (its sampler, server, GraphQL
// handler, data, injected regression, pinning; the daemon's data_dir,
// retention, soak and control API; compare limits no run reads) must be
// refused with HTTP 400 naming each key and why, all at once, and start no
// run.
func TestOverridesRefusedUnderServe(t *testing.T) {
	refused := map[string]struct{ yaml, why string }{
		"sampler.interval":                            {"sampler: {interval: 200ms}", "the sampler belongs to the running target"},
		"sampler.max_samples":                         {"sampler: {max_samples: 100}", "the sampler belongs to the running target"},
		"inject.driver_cpu_us_per_request":            {"inject: {driver_cpu_us_per_request: 50}", "wired into the target when it starts"},
		"inject.graphql_leak_bytes_per_request":       {"inject: {graphql_leak_bytes_per_request: 64}", "wired into the target when it starts"},
		"server.max_body_bytes":                       {"server: {max_body_bytes: 2048}", "HTTP server"},
		"graphql.max_depth":                           {"graphql: {max_depth: 5}", "GraphQL handler"},
		"data.donuts":                                 {"data: {donuts: 50}", "donut store"},
		"data_dir":                                    {"data_dir: /tmp/elsewhere", "data directory"},
		"pinning.target":                              {"pinning: {target: \"0\", driver: \"1\"}", "long-lived"},
		"pinning.driver":                              {"pinning: {driver: \"1\"}", "long-lived"},
		"compare.p99_latency_increase_percent":        {"compare: {p99_latency_increase_percent: 5}", "only soakd compare reads"},
		"retention.keep_last":                         {"retention: {keep_last: 1}", "daemon's"},
		"soak.cycles":                                 {"soak: {cycles: 3}", "scheduled soak"},
		"api.listen":                                  {"api: {listen: \"0.0.0.0:1\"}", "control API"},
		"profiling.pyroscope.server_address":          {"profiling: {pyroscope: {server_address: \"http://10.0.0.1:4040\"}}", "operator's"},
		"profiling.pyroscope.basic_auth_password_env": {"profiling: {pyroscope: {basic_auth_password_env: HOME}}", "operator's"},
	}
	d, h, got := overrideDaemon(t)
	for key, tc := range refused {
		code, body := post(t, d, h, tc.yaml)
		if code != http.StatusBadRequest || !strings.Contains(body, key+": override refused") || !strings.Contains(body, tc.why) {
			t.Errorf("override %s: HTTP %d %s\nwant 400 naming %q and saying %q", key, code, body, key+": override refused", tc.why)
		}
	}
	// Every refused key of one request is listed in the one answer; the
	// allowed one (kpis) is not.
	code, body := post(t, d, h, `
sampler: {interval: 200ms, max_samples: 100}
inject: {driver_cpu_us_per_request: 50, graphql_leak_bytes_per_request: 64}
server: {max_body_bytes: 2048}
graphql: {max_depth: 5}
data: {donuts: 50}
data_dir: /tmp/elsewhere
pinning: {target: "0", driver: "1"}
compare: {p99_latency_increase_percent: 5}
retention: {keep_last: 1}
soak: {cycles: 3}
api: {listen: "0.0.0.0:1"}
profiling: {pyroscope: {server_address: "http://10.0.0.1:4040", basic_auth_password_env: HOME}}
kpis: {cpu_increase_points: 42}
`)
	if code != http.StatusBadRequest {
		t.Errorf("all refused overrides at once: HTTP %d, want 400", code)
	}
	for key := range refused {
		if !strings.Contains(body, key+": override refused") {
			t.Errorf("all refused overrides at once: the answer does not name %s:\n%s", key, body)
		}
	}
	if strings.Contains(body, "kpis") {
		t.Errorf("all refused overrides at once: the answer names the allowed kpis:\n%s", body)
	}
	if len(*got) != 0 {
		t.Errorf("%d runs started with refused overrides, want none", len(*got))
	}
}

// TestInjectOverrideNeedsTheSwitch: the CPU burn and allocation pass the
// override rules, but a daemon whose target cannot change them while it
// runs (here: none of the built-in target's) refuses the run, naming the
// key, and starts nothing.
func TestInjectOverrideNeedsTheSwitch(t *testing.T) {
	d, h, got := overrideDaemon(t)
	code, body := post(t, d, h, "inject: {graphql_cpu_us_per_request: 50}\n")
	if code != http.StatusBadRequest || !strings.Contains(body, "inject: override refused: only the built-in target can plant a regression for one run") {
		t.Errorf("a planted CPU burn on a target without the switch: HTTP %d %s", code, body)
	}
	if len(*got) != 0 {
		t.Errorf("%d runs started, want none", len(*got))
	}
}

// TestOverridesAllowedUnderServe: the keys every run reads afresh are
// accepted and reach the run's configuration.
func TestOverridesAllowedUnderServe(t *testing.T) {
	d, h, got := overrideDaemon(t)
	code, body := post(t, d, h, `
default_profile: seed
kpis: {cpu_increase_points: 42, confidence: 0.9}
memory: {goroutine_return_tolerance: 7}
profiling: {overhead_top: 3, heap: false, pyroscope: {tags: {env: test}}}
metrics: {linger: 2s}
`)
	if code != http.StatusAccepted {
		t.Fatalf("allowed overrides: HTTP %d %s, want 202", code, body)
	}
	if len(*got) != 1 {
		t.Fatalf("%d runs started, want 1", len(*got))
	}
	c := (*got)[0]
	if c.DefaultProfile != "seed" || c.KPIs.CPUIncreasePoints != 42 || c.KPIs.Confidence != 0.9 ||
		c.Memory.GoroutineReturnTolerance != 7 || c.Profiling.OverheadTop != 3 || c.Profiling.Heap ||
		c.Profiling.Pyroscope.Tags["env"] != "test" || c.Metrics.Linger != 2*time.Second {
		t.Errorf("the run's configuration lacks the overrides: %+v", c)
	}
}
