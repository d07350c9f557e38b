package grafana

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/soakd/soakd/control"
	"github.com/soakd/soakd/internal/donut"
	"github.com/soakd/soakd/internal/graph"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/metrics"
	"github.com/soakd/soakd/internal/testkit"
	"github.com/soakd/soakd/workloads"
)

// dashboardQueries returns every PromQL expression in the committed
// dashboards (panel queries and annotations), and the label_values()
// variable queries rewritten as the PromQL Grafana runs for them, with
// Grafana's variables replaced by concrete values.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(Dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards (%v)", err)
	}
	labelValues := regexp.MustCompile(`^label_values\((.+), *([a-z_]+)\)$`)
	subst := strings.NewReplacer(
		"$__rate_interval", "1m",
		"$__interval", "15s",
		"$__range", "10m",
		// A repeated panel gets one KPI; the regex matches every KPI, so
		// the variance queries for passed and failed KPIs both have data.
		"$kpi", ".+",
		"$instance", ".+",
		"$run", ".+",
		"$profile", ".+",
	)
	var out []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		walk(doc, func(o map[string]any) {
			if e, ok := o["expr"].(string); ok {
				out = append(out, subst.Replace(e))
			}
			if o["type"] == "query" {
				if qs, ok := o["query"].(string); ok {
					if m := labelValues.FindStringSubmatch(qs); m != nil {
						out = append(out, "count by ("+m[2]+") ("+subst.Replace(m[1])+")")
					}
				}
			}
		})
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// fixture is a target like the daemon's: the Go and process collectors it
// registers, every soakd series, both arms' real handlers behind the
// metrics middleware, and /metrics.
type fixture struct {
	m   *metrics.Metrics
	svc *donut.Service
	srv *httptest.Server
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	reg := promclient.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.MetricsGC,
			collectors.MetricsScheduler,
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/cpu/classes/(gc/total|total):cpu-seconds$`)},
		)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	f := &fixture{m: metrics.New(reg), svc: &donut.Service{Store: donut.NewStore(10), Broker: donut.NewBroker(1)}}
	f.m.Broker(f.svc.Broker.Stats)
	mux := http.NewServeMux()
	mux.Handle("/graphql", f.m.Middleware("graphql", nil, graph.NewHandler(f.svc, graph.Options{})))
	mux.Handle(control.Prefix, f.m.Middleware("rest", metrics.RouteOperation(), control.NewHandler(f.svc, control.Options{})))
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// finishedPhase feeds the results of a finished phase, as the daemon does
// at a phase's end, and the KPI rows of a run (some passing, some failing).
func (f *fixture) finishedPhase() {
	f.m.PhaseStarted("20250101T000000Z", "rest", "rest")
	f.m.DriverResult(workloads.Result{
		Phase: "rest", Arm: "rest", Requests: 1000, Errors: 2, ErrorsByClass: map[string]int64{"timeout": 2},
		LatencyMs:     workloads.Latency{P50: 0.4, P90: 0.9, P99: 2.5, P999: 7, Max: 12, Mean: 0.5},
		Subscriptions: &workloads.SubscriptionResult{Expected: 100, Received: 100},
		MaxLoad:       &workloads.MaxLoadResult{Failed: true, UsersAtFailure: 80, PeakThroughputRPS: 5000, PeakUsers: 70, PeakWindowEnd: time.Now()},
	})
	f.m.PhaseEnded()
	rows := kpi.Evaluate(
		kpi.Figures{CPUMachinePercent: 20, GCPercent: 2, ThroughputRPS: 1000, CPUCorePercent: 40, CPUMicrosPerRequest: 100, AllocBytesPerRequest: 1000, GCPauseP99Ms: 0.1},
		kpi.Figures{CPUMachinePercent: 30, GCPercent: 2.5, ThroughputRPS: 950, CPUCorePercent: 60, CPUMicrosPerRequest: 150, AllocBytesPerRequest: 3000, GCPauseP99Ms: 0.2},
		kpi.Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10})
	// One of each outcome: cpu_machine_percent fails, throughput_rps
	// passes, gc_percent is inconclusive (its interval straddles the limit).
	for i := range rows {
		if rows[i].Name == "gc_percent" {
			rows[i].Outcome, rows[i].Pass = kpi.OutcomeInconclusive, false
		}
	}
	f.m.KPIResults(rows)
	f.m.RunVerdict(kpi.OutcomeInconclusive)
}

// traffic runs a phase until ctx is done: requests through both arms
// (successes, 404s and events the subscriber is too slow for), driver
// progress with growing errors, and a forced GC now and then so the pause
// histograms move.
func (f *fixture) traffic(ctx context.Context) {
	f.m.PhaseStarted("20250101T000000Z", "graphql", "graphql") // the same run: a new one drops the last run's phase series
	defer f.m.PhaseEnded()
	_, cancel := f.svc.Broker.Subscribe("1") // never read: its buffer of 1 fills and events drop
	defer cancel()
	c := f.srv.Client()
	send := func(method, path, body string) {
		req, err := http.NewRequestWithContext(ctx, method, f.srv.URL+path, strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			return // ctx done
		}
		resp.Body.Close()
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var n int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n++
		if n%100 == 0 {
			// Every 2 s the other arm's phase, as a run's rounds alternate,
			// so each arm's phase annotation has data.
			if (n/100)%2 == 1 { // not "rest": its finished phase's series stay
				f.m.PhaseStarted("20250101T000000Z", "rest-control", "rest")
			} else {
				f.m.PhaseStarted("20250101T000000Z", "graphql", "graphql")
			}
		}
		send(http.MethodGet, "/api/donuts/1", "")
		send(http.MethodGet, "/api/donuts/missing", "")
		send(http.MethodPut, "/api/donuts/1", `{"name":"n","flavor":"VANILLA"}`)
		send(http.MethodPost, "/graphql", `{"query":"query Donut { donut(id: \"1\") { id name } }"}`)
		f.m.DriverProgress("graphql", "graphql", metrics.DriverProgress{
			Requests: 10 * n, Errors: n, ErrorsByClass: map[string]int64{"graphql_error": n - n/2, "timeout": n / 2},
			ActiveUsers: 5,
		})
		if n%10 == 0 {
			goruntime.GC()
		}
	}
}

// freePort returns a loopback port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	var lc net.ListenConfig
	ln, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// startPrometheus runs a real Prometheus on loopback scraping target every
// second as job Job (testkit.StartPrometheus) and returns its base URL.
func startPrometheus(t *testing.T, bin, target string) string {
	return testkit.StartPrometheus(t, bin, Job, target, "")
}

// queryResult is the part of /api/v1/query's answer the test reads.
type queryResult struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

// instantQuery evaluates expr now and returns how many series have a
// finite value, or the error Prometheus reported.
func instantQuery(ctx context.Context, base, expr string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape(expr), nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r queryResult
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, fmt.Errorf("cannot decode the answer (HTTP %d): %w", resp.StatusCode, err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return 0, fmt.Errorf("result type %s, want vector", r.Data.ResultType)
	}
	finite := 0
	for _, s := range r.Data.Result {
		v, _ := s.Value[1].(string)
		if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			finite++
		}
	}
	return finite, nil
}

// instantValues evaluates expr now and returns each series' value by the
// value of its label key ("" when it has none).
func instantValues(ctx context.Context, base, expr, key string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape(expr), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r queryResult
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, err
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	out := map[string]float64{}
	for _, s := range r.Data.Result {
		v, _ := s.Value[1].(string)
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, err
		}
		out[s.Metric[key]] = f
	}
	return out, nil
}

// panelMapping returns the expression of the panel titled title in
// dashboard file and what its value mapping makes of a value: word and
// colour.
func panelMapping(t *testing.T, file, title string) (expr string, mapped func(v float64) (string, string)) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(Dir, file))
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var panel map[string]any
	walk(doc, func(o map[string]any) {
		if o["title"] == title && o["targets"] != nil {
			panel = o
		}
	})
	if panel == nil {
		t.Fatalf("%s has no panel %q", file, title)
	}
	expr = panel["targets"].([]any)[0].(map[string]any)["expr"].(string)
	maps := panel["fieldConfig"].(map[string]any)["defaults"].(map[string]any)["mappings"].([]any)
	opts := maps[0].(map[string]any)["options"].(map[string]any)
	return expr, func(v float64) (string, string) {
		o, ok := opts[strconv.FormatFloat(v, 'f', -1, 64)].(map[string]any)
		if !ok {
			return "unmapped", ""
		}
		return o["text"].(string), o["color"].(string)
	}
}

// TestDashboardQueriesAgainstPrometheus runs a real Prometheus scraping a
// target with traffic through both arms and a running phase, then
// evaluates every PromQL expression of the dashboards through the HTTP API:
// each must succeed and return at least one finite value.
func TestDashboardQueriesAgainstPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus for about 10 s")
	}
	bin := lookTool(t, "prometheus")
	queries := dashboardQueries(t)
	if len(queries) < 30 {
		t.Fatalf("got %d queries from the dashboards, want all of them (at least 30)", len(queries))
	}
	f := newFixture(t)
	f.finishedPhase()
	daemon := newDaemonFixture()
	defer daemon.srv.Close()
	base := testkit.StartPrometheusJobs(t, bin, []testkit.ScrapeJob{
		{Job: Job, Target: strings.TrimPrefix(f.srv.URL, "http://")},
		{Job: DaemonJob, Target: strings.TrimPrefix(daemon.srv.URL, "http://")},
	}, "")

	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() { f.traffic(ctx) })
	wg.Go(func() { daemon.traffic(ctx) })
	defer func() {
		stop()
		wg.Wait()
	}()

	// Let Prometheus collect a few scrapes first (rates need two that saw
	// the series move), then retry the failing queries until the deadline.
	deadline := time.Now().Add(45 * time.Second)
	for time.Now().Before(deadline) {
		if n, err := instantQuery(t.Context(), base, `min(count_over_time(up[1m])) >= 6`); err == nil && n > 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	pending := queries
	failed := make(map[string]string) // an error stays; no data may come with more scrapes
	for {
		var empty []string
		for _, q := range pending {
			n, err := instantQuery(t.Context(), base, q)
			switch {
			case err != nil:
				failed[q] = err.Error()
			case n == 0:
				empty = append(empty, q)
			}
		}
		pending = empty
		if len(pending) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	for _, q := range pending {
		failed[q] = "no data (no series with a finite value)"
	}
	for _, q := range slices.Sorted(maps.Keys(failed)) {
		t.Errorf("%s\n\t%s", q, failed[q])
	}
	t.Logf("evaluated %d dashboard queries against Prometheus", len(queries))

	// One verdict, shown the same everywhere: each outcome reads as its own
	// word and colour on the gate's tiles (before, INCONCLUSIVE was a red
	// FAIL and the verdict tile one colour whatever the verdict).
	subst := strings.NewReplacer("$__range", "10m", "$kpi", ".+", "$instance", ".+")
	expr, mapped := panelMapping(t, "kpi.json", "Verdict per KPI")
	got, err := instantValues(t.Context(), base, subst.Replace(expr), "kpi")
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string][2]string{
		"cpu_machine_percent": {"FAIL", "red"}, "throughput_rps": {"PASS", "green"}, "gc_percent": {"INCONCLUSIVE", "orange"},
	} {
		word, colour := mapped(got[k])
		if word != want[0] || colour != want[1] {
			t.Errorf("Verdict per KPI, %s: value %v reads %s in %s, want %s in %s", k, got[k], word, colour, want[0], want[1])
		}
	}
	expr, mapped = panelMapping(t, "kpi.json", "Run verdict")
	got, err = instantValues(t.Context(), base, subst.Replace(expr), "")
	if err != nil {
		t.Fatal(err)
	}
	if word, colour := mapped(got[""]); len(got) != 1 || word != "INCONCLUSIVE" || colour != "orange" {
		t.Errorf("Run verdict: %v reads %s in %s, want INCONCLUSIVE in orange", got, word, colour)
	}
	daemon.check(t, base)
}
