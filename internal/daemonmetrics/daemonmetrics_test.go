package daemonmetrics

import (
	"bytes"
	"fmt"
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
	down := -0.2
	st = State{Running: true, Profile: "quick", HistoryRuns: 4, RetentionDeletions: 2, ReadOnly: true, Changes: []ChangeSeries{
		{Profile: "nightly", Metric: "cpu_us_per_request.graphql", LastRunsAgo: 3, Points: []Point{
			{Run: "n04", At: time.Unix(1764500000, 0), Relative: &down},
			{Run: "n09", At: time.Unix(1764900000, 500e6), Relative: &rel},
		}},
		{Profile: "nightly", Metric: "alloc_bytes_per_request.graphql", LastRunsAgo: 2, Points: []Point{{Run: "n05", At: time.Unix(1764600000, 0)}}},
		{Profile: "nightly", Metric: "gc_percent.graphql"},
	}}
	// 25 runs, newest first: the newest 20 are exported.
	for i := 25; i >= 1; i-- {
		r := Run{ID: fmt.Sprintf("r%02d", i), Profile: "nightly", Verdict: kpi.OutcomePass, StartedAt: time.Unix(1764000000+int64(i)*86400, 0)}
		switch i {
		case 25:
			r.Verdict = kpi.OutcomeRunning
		case 24:
			r.Verdict = ""
		case 23:
			r.Verdict, r.Baseline = kpi.OutcomeFail, true
		}
		st.Recent = append(st.Recent, r)
	}
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
		{"soakd_history_change_point_timestamp_seconds", "metric=cpu_us_per_request.graphql,profile=nightly,run=n04", 1764500000},
		{"soakd_history_change_point_timestamp_seconds", "metric=cpu_us_per_request.graphql,profile=nightly,run=n09", 1764900000.5},
		{"soakd_history_change_point_timestamp_seconds", "metric=alloc_bytes_per_request.graphql,profile=nightly,run=n05", 1764600000},
		{"soakd_history_change_point_relative", "metric=cpu_us_per_request.graphql,profile=nightly,run=n04", -0.2},
		{"soakd_history_change_point_relative", "metric=cpu_us_per_request.graphql,profile=nightly,run=n09", 0.3},
		{"soakd_history_run_started_timestamp_seconds", "baseline=false,profile=nightly,run=r25,verdict=running", 1764000000 + 25*86400},
		{"soakd_history_run_started_timestamp_seconds", "baseline=false,profile=nightly,run=r24,verdict=unreadable", 1764000000 + 24*86400},
		{"soakd_history_run_started_timestamp_seconds", "baseline=true,profile=nightly,run=r23,verdict=fail", 1764000000 + 23*86400},
		{"soakd_history_run_started_timestamp_seconds", "baseline=false,profile=nightly,run=r06,verdict=pass", 1764000000 + 6*86400},
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
	if _, ok := fams["soakd_history_change_point_relative"].values["metric=alloc_bytes_per_request.graphql,profile=nightly,run=n05"]; ok {
		t.Error("a change point whose mean before is 0 has a relative step")
	}
	if n := len(fams["soakd_history_run_started_timestamp_seconds"].values); n != RecentRuns {
		t.Errorf("%d recent runs exported, want the newest %d: %v", n, RecentRuns, fams["soakd_history_run_started_timestamp_seconds"].values)
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
			{Profile: "quick", Metric: "cpu_us_per_request.graphql", LastRunsAgo: 2, Points: []Point{{Run: "r1", At: time.Now(), Relative: &rel}}}},
			Recent: []Run{{ID: "r2", Profile: "quick", Verdict: kpi.OutcomeRunning, StartedAt: time.Now()}}}
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
