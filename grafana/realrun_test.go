package grafana

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testkit"
)

// realRunConfig is a short soakd suite with every kind of phase the
// dashboards show (REST and GraphQL arms, subscriptions, max load), its
// target on a known loopback port, and a linger so the final KPI series are
// scraped before the process exits.
const realRunConfig = `
server:
  listen: 127.0.0.1:%PORT%
sampler:
  interval: 200ms
metrics:
  linger: 60s
# Limits wide enough that some KPI passes whatever the machine's load (the
# "variance (pass)" panel needs one): on a busy CI machine three rounds
# gave intervals too wide for the default limits.
kpis:
  gc_increase_points: 50
  throughput_decrease_percent: 95
default_profile: short
profiles:
  short:
    description: dashboard test
    settle: 500ms
    trim_head: 200ms
    trim_tail: 200ms
    request_timeout: 5s
    rounds: 3               # one round is always inconclusive: the "variance (pass)" panel needs a KPI that passed
    compare: {rest: rest-control, graphql: graphql-load}
    phases:
      - name: rest-control
        arm: rest
        ramp_up: 300ms
        think: {min: 0ms, max: 10ms}
        users:
          - {operation: rest-get, users: 5, iterations: 600}
          - {operation: rest-put, users: 5, iterations: 600}
      - name: graphql-load
        arm: graphql
        ramp_up: 300ms
        think: {min: 0ms, max: 10ms}
        users:
          - {operation: graphql-query, users: 5, iterations: 600}
          - {operation: graphql-mutation, users: 5, iterations: 600}
        subscriptions: {clients: 5, per_client: 2, protocol: mixed, drain: 5s}
      - name: max-load-graphql
        arm: graphql
        model: ramping
        duration: 4s
        think: {min: 0ms, max: 10ms}
        ramp: {start: 5, step: 5, every: 1s, max: 20}
        failure: {window: 1s, max_error_ratio: 0.01, max_p99: 2s, min_requests: 10}
        users:
          - {operation: graphql-query, users: 1, iterations: 0}
`

// TestDashboardQueriesAgainstARealRun scrapes a real `soakd run` (the built
// binary: target, drivers, KPIs) with a real Prometheus and evaluates every
// PromQL expression of the dashboards: each must succeed and return data.
func TestDashboardQueriesAgainstARealRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds soakd and runs a suite under a real Prometheus for about 30 s")
	}
	prom := lookTool(t, "prometheus")
	// A run has a target, no daemon: the daemon dashboard's queries are
	// TestDashboardQueriesAgainstPrometheus's (and the nightly e2e's).
	queries := slices.DeleteFunc(dashboardQueries(t), func(q string) bool { return strings.Contains(q, `job="`+DaemonJob+`"`) })
	dir := t.TempDir()
	bin := filepath.Join(dir, "soakd")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/soakd/soakd").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	port := freePort(t)
	cfg := filepath.Join(dir, "short.yaml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(realRunConfig, "%PORT%", strconv.Itoa(port))), 0o644); err != nil {
		t.Fatal(err)
	}
	base := startPrometheus(t, prom, "127.0.0.1:"+strconv.Itoa(port))

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	run := exec.CommandContext(ctx, bin, "run", "--config", cfg, "--out", filepath.Join(dir, "run"), "--log-format", "json")
	run.Cancel = func() error { return run.Process.Signal(syscall.SIGTERM) }
	run.WaitDelay = 15 * time.Second
	var log testkit.SyncBuilder
	run.Stderr = &log
	started := time.Now()
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- run.Wait() }()
	defer func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("soakd log:\n%s", log.String())
		}
	}()

	// The KPI series appear when the run has finished its phases; it then
	// lingers, serving /metrics, while the queries run.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if n, err := instantQuery(ctx, base, `count(soakd_kpi_pass) > 0`); err == nil && n > 0 {
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("soakd exited before its KPIs were scraped: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no KPI series scraped within 2 minutes")
		}
	}
	// promtool on a live scrape of the real daemon (lingering, all series set).
	promtool := lookTool(t, "promtool")
	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scrape, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	check := exec.CommandContext(ctx, promtool, "check", "metrics")
	check.Stdin = bytes.NewReader(scrape)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics on a real soakd scrape: %v\n%s", err, out)
	}

	// Queries run over the whole run (a phase marker exists only while its
	// phase runs). Panels of failures have no series in an error-free run;
	// TestDashboardQueriesAgainstPrometheus checks them with errors.
	failed := map[string]string{}
	skipped := 0
	for _, q := range queries {
		n, err := rangeQuery(ctx, base, q, started, time.Now())
		switch {
		case err != nil:
			failed[q] = err.Error()
		case n == 0 && errorOnly(q):
			skipped++
		case n == 0:
			failed[q] = "no data (no series with a finite value during the run)"
		}
	}
	if skipped > 5 {
		t.Errorf("%d failure-only queries had no data; at most 5 exist", skipped)
	}
	for _, q := range slices.Sorted(maps.Keys(failed)) {
		t.Errorf("%s\n\t%s", q, failed[q])
	}
	t.Logf("evaluated %d dashboard queries against a real soakd run", len(queries))
}

// errorOnly reports whether q graphs failures only: driver errors,
// non-2xx target responses, or failing KPIs, which an error-free, passing
// run never creates.
func errorOnly(q string) bool {
	return strings.Contains(q, "soakd_driver_errors_total") || strings.Contains(q, `code!~"2..|101"`) ||
		(strings.Contains(q, "soakd_kpi_pass") && strings.HasSuffix(strings.TrimSpace(q), "== 0"))
}

// rangeQuery evaluates expr every second over [from, to] and returns how
// many series had at least one finite value.
func rangeQuery(ctx context.Context, base, expr string, from, to time.Time) (int, error) {
	u := base + "/api/v1/query_range?query=" + url.QueryEscape(expr) +
		"&start=" + strconv.FormatInt(from.Unix(), 10) + "&end=" + strconv.FormatInt(to.Unix()+1, 10) + "&step=1"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Status, ErrorType, Error string
		Data                     struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, fmt.Errorf("cannot decode the answer (HTTP %d): %w", resp.StatusCode, err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	n := 0
	for _, s := range r.Data.Result {
		for _, v := range s.Values {
			if str, ok := v[1].(string); ok {
				if f, err := strconv.ParseFloat(str, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
					n++
					break
				}
			}
		}
	}
	return n, nil
}
