package daemonmetrics

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/soakd/soakd/internal/buildinfo"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/testkit"
)

// scrape returns srv's /metrics, its text and the families parsed.
func scrape(t *testing.T, url string) (string, map[string]*familyView) {
	t.Helper()
	code, body := testkit.Get(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse the scrape: %v\n%s", err, body)
	}
	out := map[string]*familyView{}
	for name, f := range fams {
		v := &familyView{values: map[string]float64{}}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			val := m.GetGauge().GetValue() + m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
			v.values[strings.Join(labels, ",")] = val
		}
		out[name] = v
	}
	return body, out
}

// familyView holds one family's values by their labels, "k=v,k=v".
type familyView struct{ values map[string]float64 }

func TestSeries(t *testing.T) {
	var mu sync.Mutex
	st := State{}
	m := New(func() State { mu.Lock(); defer mu.Unlock(); return st })
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.Handle("GET /v1/runs/{id}", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) }))
	srv := httptest.NewServer(m.Instrument(mux))
	defer srv.Close()

	_, fams := scrape(t, srv.URL+"/metrics")
	for _, o := range []string{"pass", "fail", "inconclusive", "aborted"} {
		if v, ok := fams["soakd_runs_total"].values["outcome="+o]; !ok || v != 0 {
			t.Errorf("soakd_runs_total{outcome=%q} = %v (present %v) before any run, want 0 and present", o, v, ok)
		}
	}
	if _, ok := fams["soakd_run_in_progress_info"]; ok {
		t.Error("soakd_run_in_progress_info present while idle")
	}
	build := "commit=" + buildinfo.Commit() + ",go=" + runtime.Version() + ",version=" + buildinfo.Version()
	if v := fams["soakd_build_info"].values[build]; v != 1 {
		t.Errorf("soakd_build_info{%s} = %v, want 1; have %v", build, v, fams["soakd_build_info"].values)
	}

	mu.Lock()
	rel := 0.3
	st = State{Running: true, Profile: "quick", HistoryRuns: 4, RetentionDeletions: 2, ReadOnly: true, Changes: []ChangeSeries{
		{Profile: "nightly", Metric: "cpu_us_per_request.graphql", Count: 2, LastAt: time.Unix(1764900000, 500e6), LastRunsAgo: 3, LastRelative: &rel},
		{Profile: "nightly", Metric: "gc_percent.graphql"},
	}}
	mu.Unlock()
	m.RunFinished(kpi.OutcomeFail, 12)
	m.RunFinished(kpi.OutcomePass, 3)
	m.RunFinished("", 1) // an unreadable run
	for _, id := range []string{"a", "b", "c"} {
		testkit.Get(t, srv.URL+"/v1/runs/"+id)
	}
	testkit.Get(t, srv.URL+"/nope/at/all")
	body, fams := scrape(t, srv.URL+"/metrics")
	for _, c := range []struct {
		family, labels string
		want           float64
	}{
		{"soakd_runs_total", "outcome=fail", 1},
		{"soakd_runs_total", "outcome=pass", 1},
		{"soakd_runs_total", "outcome=aborted", 1},
		{"soakd_runs_total", "outcome=inconclusive", 0},
		{"soakd_run_duration_seconds", "", 3},
		{"soakd_run_in_progress", "", 1},
		{"soakd_run_in_progress_info", "profile=quick", 1},
		{"soakd_history_runs", "", 4},
		{"soakd_retention_deletions_total", "", 2},
		{"soakd_read_only", "", 1},
		{"soakd_api_requests_total", "code=404,route=GET /v1/runs/{id}", 3},
		{"soakd_api_requests_total", "code=404,route=unmatched", 1},
		{"soakd_api_requests_total", "code=200,route=GET /metrics", 1},
		{"soakd_history_change_points", "metric=cpu_us_per_request.graphql,profile=nightly", 2},
		{"soakd_history_change_points", "metric=gc_percent.graphql,profile=nightly", 0},
		{"soakd_history_last_change_timestamp_seconds", "metric=cpu_us_per_request.graphql,profile=nightly", 1764900000.5},
		{"soakd_history_last_change_runs_ago", "metric=cpu_us_per_request.graphql,profile=nightly", 3},
		{"soakd_history_last_change_relative", "metric=cpu_us_per_request.graphql,profile=nightly", 0.3},
	} {
		f, ok := fams[c.family]
		if !ok {
			t.Errorf("no %s in the scrape", c.family)
			continue
		}
		if got, ok := f.values[c.labels]; !ok || got != c.want {
			t.Errorf("%s{%s} = %v (present %v), want %v; have %v", c.family, c.labels, got, ok, c.want, f.values)
		}
	}
	if _, ok := fams["soakd_history_last_change_runs_ago"].values["metric=gc_percent.graphql,profile=nightly"]; ok {
		t.Error("a series without a change point has a last change")
	}
	if strings.Contains(body, "/v1/runs/a") {
		t.Error("a raw path is a label value: routes must be patterns")
	}
}

// TestPromtoolCheckMetrics lints a scrape of every series, each with values.
func TestPromtoolCheckMetrics(t *testing.T) {
	promtool := testkit.LookTool(t, "promtool")
	rel := -0.1
	m := New(func() State {
		return State{Running: true, Profile: "quick", HistoryRuns: 1, Changes: []ChangeSeries{
			{Profile: "quick", Metric: "cpu_us_per_request.graphql", Count: 1, LastAt: time.Now(), LastRunsAgo: 2, LastRelative: &rel}}}
	})
	m.RunFinished(kpi.OutcomeInconclusive, 42)
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := httptest.NewServer(m.Instrument(mux))
	defer srv.Close()
	testkit.Get(t, srv.URL+"/metrics")
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("promtool check metrics: %v\n%s\n%s", err, out, b)
	}
}
