package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	junit "github.com/joshdk/go-junit"
)

// graphqlOnlyProfile is a tiny profile of GraphQL phases only, with no
// control group (compare.rest empty) and the memory verdict on its own
// phase, run in 2 rounds.
const graphqlOnlyProfile = `
sampler:
  interval: 100ms
default_profile: gql
profiles:
  gql:
    description: GraphQL alone, no control group
    settle: 300ms
    trim_head: 200ms
    trim_tail: 200ms
    request_timeout: 5s
    seed: 7
    rounds: 2
    memory_phase: memory-profile
    compare: {graphql: graphql-load}
    phases:
      - name: memory-profile
        arm: graphql
        ramp_up: 200ms
        think: {min: 0ms, max: 10ms}
        users:
          - {operation: graphql-query, users: 5, iterations: 300}
      - name: graphql-load
        arm: graphql
        ramp_up: 300ms
        think: {min: 0ms, max: 10ms}
        users:
          - {operation: graphql-query, users: 5, iterations: 300}
          - {operation: graphql-mutation, users: 5, iterations: 300}
        subscriptions: {clients: 5, per_client: 2, protocol: mixed, drain: 5s}
`

// noTwinSection is a command target running `soakd target` (a Go server
// with runtime/metrics series) given without its REST twin.
func (s externalServer) noTwinSection(bin string) string {
	return fmt.Sprintf(`
target:
  kind: command
  argv: [%q, target, --config, %q, --log-format, json]
  ready_url: %s
  graphql_url: %s
  metrics_url: %s
`, bin, s.config, s.url("/healthz"), s.url("/graphql"), s.url("/metrics"))
}

// TestNoControlGroup soaks a target without a REST twin: the GraphQL-only
// profile runs, its KPIs read "no control group" while the memory verdict
// is judged from the target's figures, the run compares with another and
// a soak of it judges drift; a profile that needs the REST arm is refused
// before anything starts, naming its REST phases.
func TestNoControlGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	srv := newExternalServer(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "gql.yaml")
	cfg := graphqlOnlyProfile + srv.noTwinSection(bin) + "data_dir: " + filepath.Join(dir, "data") + "\n" +
		"soak:\n  drift: {warmup_cycles: 0, baseline_cycles: 1, sustained_cycles: 1}\n" // a 2-cycle soak judges drift
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	// A profile with REST phases: refused up front (exit 2), nothing run.
	refused := filepath.Join(dir, "refused")
	_, stderr, code := runSoakd(t, bin, "run", "-v", "--config", cfgPath, "--profile", "quick", "--out", refused)
	if code != 2 || !strings.Contains(stderr, "profile quick drives the REST twin in phase(s) rest-control#1, rest-control#2, rest-control#3, rest-control#4, max-load-rest") ||
		!strings.Contains(stderr, "target.rest_url is empty") {
		t.Errorf("quick without a REST twin: exit %d, want 2 naming the REST phases\n%s", code, stderr)
	}
	if _, err := os.Stat(refused); !os.IsNotExist(err) {
		t.Errorf("a refused run left a run directory (%v)", err)
	}
	if strings.Contains(stderr, "target command started") {
		t.Errorf("the target was started for a refused run:\n%s", stderr)
	}
	_, stderr, code = runSoakd(t, bin, "soak", "-v", "--config", cfgPath, "--profile", "quick", "--cycles", "1")
	if code != 2 || !strings.Contains(stderr, "target.rest_url is empty") || strings.Contains(stderr, "target command started") {
		t.Errorf("soak of quick without a REST twin: exit %d, want 2 before the target starts\n%s", code, stderr)
	}

	out := filepath.Join(dir, "run")
	_, stderr, code = runSoakd(t, bin, "run", "--config", cfgPath, "--out", out, "--log-format", "json")
	rep, raw := readNodeReport(t, out)
	if rep.Status != "complete" || (code != 0 && code != 1 && code != 4) {
		t.Fatalf("status %q (error %q), exit %d\n%.3000s\n%s", rep.Status, rep.Error, code, raw, stderr)
	}
	checkNoControlGroup(t, rep)
	// The memory verdict is judged from the Go target's own series.
	measured := 0
	for _, c := range rep.Checks {
		if c.Group == "memory" && c.Phase == "memory-profile" && c.outcome() != "not_measured" {
			measured++
		}
		if c.Name == "exact_delivery" && c.outcome() != "pass" {
			t.Errorf("exact delivery %s: %s", c.Phase, c.Detail)
		}
	}
	if measured < 2 {
		t.Errorf("only %d memory rules were judged on the memory profile, want heap and goroutines at least\n%.3000s", measured, raw)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## GraphQL without a control group") || !strings.Contains(string(md), "| — |") {
		t.Errorf("report.md does not say there is no control group:\n%.2000s", md)
	}

	// Absolute limits gate it: generous ones pass, so the run can pass; an
	// impossible throughput fails it (exit 1), naming the check.
	for _, tc := range []struct {
		name string
		sets []string
		want map[string]string
		code int
	}{
		{"generous", []string{"kpis.absolute.p99_latency_ms=2000", "kpis.absolute.error_ratio=0.5"}, map[string]string{"p99_latency_ms": "pass", "error_ratio": "pass"}, -1},
		{"impossible", []string{"kpis.absolute.throughput_rps=1e9"}, map[string]string{"throughput_rps": "fail"}, 1},
	} {
		out := filepath.Join(dir, "abs-"+tc.name)
		args := []string{"run", "--config", cfgPath, "--out", out, "--log-format", "json"}
		for _, kv := range tc.sets {
			args = append(args, "--set", kv)
		}
		_, stderr, code := runSoakd(t, bin, args...)
		rep, raw := readNodeReport(t, out)
		got := map[string]string{}
		for _, c := range rep.Checks {
			if c.Group == "absolute" {
				got[c.Name] = c.outcome()
				t.Logf("%s: absolute %s %s: %s", tc.name, c.Name, c.outcome(), c.Detail)
			}
		}
		if !maps.Equal(got, tc.want) || (tc.code >= 0 && code != tc.code) {
			t.Errorf("%s: exit %d, absolute checks %v, want %v (exit %d)\n%.2000s\n%s", tc.name, code, got, tc.want, tc.code, raw, stderr)
		}
	}

	// It compares with another run (here itself) phase by phase.
	stdout, stderr, code := runSoakd(t, bin, "compare", out, out)
	if (code != 0 && code != 1 && code != 4) || !strings.Contains(stdout, "graphql-load") {
		t.Errorf("compare: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// A soak of it judges drift from the GraphQL arm's own figures.
	_, stderr, code = runSoakd(t, bin, "soak", "--config", cfgPath, "--cycles", "2", "--log-format", "json")
	rawSoak, err := os.ReadFile(filepath.Join(dir, "data", "soak.json"))
	if err != nil {
		t.Fatalf("no soak.json (exit %d): %v\n%s", code, err, stderr)
	}
	var soak struct {
		Status string
		Cycles []struct {
			GCPercent float64 `json:"gc_percent"`
			CPUUs     float64 `json:"cpu_us_per_request"`
		}
		Drift []struct{ Name, Outcome, Detail string }
	}
	if err := json.Unmarshal(rawSoak, &soak); err != nil {
		t.Fatal(err)
	}
	if soak.Status != "complete" || len(soak.Cycles) != 2 {
		t.Fatalf("soak: %s\n%s", soak.Status, rawSoak)
	}
	for _, c := range soak.Cycles {
		if c.CPUUs <= 0 {
			t.Errorf("cycle CPU per request %v: the drift figure must come from the GraphQL arm", c.CPUUs)
		}
	}
	for _, d := range soak.Drift {
		if d.Name == "cpu_per_request_drift" && d.Outcome == "not_measured" {
			t.Errorf("cpu_per_request_drift not measured after 2 cycles: %s", d.Detail)
		}
	}
}

// TestCommandTargetFaults: a command that never becomes ready, and one that
// exposes no metrics endpoint, each end with a clear message, an exit code
// and a kept report.
func TestCommandTargetFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	srv := newExternalServer(t)

	t.Run("never ready", func(t *testing.T) {
		// The server answers, but not on the readiness URL given.
		cfg := tinyConfig + strings.Replace(srv.commandSection(bin), "ready_timeout: 30s", "ready_timeout: 2s", 1)
		cfg = strings.Replace(cfg, "ready_url: "+srv.url("/healthz"), "ready_url: "+srv.url("/not-ready"), 1)
		_, out, code := runConfig(t, bin, cfg)
		rep, raw := readExternalReport(t, out)
		if code != 3 || rep.Status != "aborted" || !strings.Contains(rep.Error, "/not-ready") || !strings.Contains(rep.Error, "2s") {
			t.Errorf("exit %d, status %q, error %q; want 3, aborted, naming the readiness URL and its timeout\n%.2000s", code, rep.Status, rep.Error, raw)
		}
		if _, err := http.Get(srv.url("/healthz")); err == nil {
			t.Error("the command that never got ready still runs")
		}
		if _, err := os.Stat(filepath.Join(out, "target.stderr.log")); err != nil {
			t.Errorf("its output is not kept: %v", err)
		}
	})

	t.Run("no metrics endpoint", func(t *testing.T) {
		// metrics_url points at a path the server does not serve: every
		// scrape fails, OS figures stay, runtime figures are not measured.
		cfg := tinyConfig + strings.Replace(srv.commandSection(bin), "metrics_url: "+srv.url("/metrics"), "metrics_url: "+srv.url("/no-metrics"), 1)
		cfg = strings.Replace(cfg, "  pprof_url: "+srv.url("/debug/pprof/")+"\n", "", 1)
		// This team lets exit 4 through and wants its CI widget to agree.
		cfg += "report:\n  junit_inconclusive: skipped\n"
		_, out, code := runConfig(t, bin, cfg)
		rep, raw := readExternalReport(t, out)
		if rep.Status != "complete" || code != 4 {
			t.Fatalf("exit %d, status %q (error %q); want a complete, inconclusive run (4)\n%.2000s", code, rep.Status, rep.Error, raw)
		}
		if junitXML, err := os.ReadFile(filepath.Join(out, "junit.xml")); err != nil {
			t.Error(err)
		} else if suites, err := junit.Ingest(junitXML); err != nil || len(suites) != 1 || suites[0].Tests[0].Name != "run" ||
			suites[0].Tests[0].Status != junit.StatusSkipped || suites[0].Totals.Failed != 0 {
			t.Errorf("junit.xml with report.junit_inconclusive: skipped: want the run case skipped and no failure (%v)\n%.1500s", err, junitXML)
		}
		if !strings.Contains(string(raw), `"junit_inconclusive": "skipped"`) {
			t.Error("report.json does not record junit_inconclusive: skipped")
		}
		for _, p := range rep.Phases[:2] {
			r := p.Resources
			if r == nil || !r.CPUKnown || !strings.Contains(r.NotMeasured["gc_percent"], "/no-metrics: HTTP status 404") {
				t.Errorf("%s: resources %+v; want CPU from the OS and GC not measured naming the failed scrape", p.Name, r)
			}
		}
		found := false
		for _, k := range rep.KPIs {
			if k.Name == "gc_percent" {
				found = true
				if k.Outcome != "not_measured" || !strings.Contains(k.Reason, "HTTP status 404") {
					t.Errorf("gc_percent: %s (%s), want not measured naming the failed scrape", k.Outcome, k.Reason)
				}
			}
		}
		if !found {
			t.Error("no gc_percent KPI row")
		}
	})
}
