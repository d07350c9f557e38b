package metrics

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/soakd/soakd/control"
	"github.com/soakd/soakd/internal/graph"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/workloads"
)

// lookTool finds a Prometheus binary. Without it the test skips, except
// under CI=true, where a missing binary fails: CI installs Debian's
// prometheus package, which brings prometheus and promtool.
func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := name + " is not on PATH: install Debian's prometheus package (apt-get install -y prometheus) to run this test"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// TestPromtoolCheckMetrics lints a live scrape of a registry holding the
// daemon's Go and process collectors and every soakd series, after traffic
// through both arms' real handlers and a phase's worth of driver updates.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool := lookTool(t, "promtool")

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.MetricsGC,
			collectors.MetricsScheduler,
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/cpu/classes/(gc/total|total):cpu-seconds$`)},
		)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m := New(reg)
	svc := newService()
	m.Broker(svc.Broker.Stats)
	mux := http.NewServeMux()
	mux.Handle("/graphql", m.Middleware("graphql", nil, graph.NewHandler(svc, graph.Options{})))
	mux.Handle(control.Prefix, m.Middleware("rest", RouteOperation(), control.NewHandler(svc, control.Options{})))
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := srv.Client()

	do(t, c, http.MethodGet, srv.URL+"/api/donuts/1", "")
	do(t, c, http.MethodGet, srv.URL+"/api/donuts/nope", "")
	do(t, c, http.MethodPost, srv.URL+"/graphql", `{"query":"{ donut(id: \"1\") { id } }"}`)
	m.PhaseStarted("20250101T000000Z", "graphql", "graphql")
	m.DriverProgress("graphql", "graphql", DriverProgress{Requests: 10, Errors: 1, ErrorsByClass: map[string]int64{"timeout": 1}, ActiveUsers: 2})
	m.DriverResult(workloads.Result{Phase: "graphql", Arm: "graphql", Requests: 20, Errors: 1, LatencyMs: workloads.Latency{P50: 1, P99: 3, Max: 4},
		Subscriptions: &workloads.SubscriptionResult{Expected: 3, Received: 3},
		MaxLoad:       &workloads.MaxLoadResult{PeakThroughputRPS: 10, PeakUsers: 2, PeakWindowEnd: time.Unix(100, 0)}})
	m.KPIResults(kpi.Evaluate(kpi.Figures{CPUMachinePercent: 10, ThroughputRPS: 100}, kpi.Figures{CPUMachinePercent: 12, ThroughputRPS: 95}, kpi.Limits{CPUIncreasePoints: 5}))

	resp, err := c.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	scrape, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	for _, name := range []string{"soakd_target_requests_total", "soakd_phase_info", "soakd_driver_latency_seconds", "soakd_kpi_pass", "soakd_kpi_value_ratio", "soakd_kpi_delta_ratio", "soakd_broker_published_events_total", "go_gc_pauses_seconds_bucket", "process_cpu_seconds_total"} {
		if !bytes.Contains(scrape, []byte("\n"+name)) {
			t.Errorf("the scrape has no %s", name)
		}
	}

	cmd := exec.CommandContext(t.Context(), promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(scrape)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
