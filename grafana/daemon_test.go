package grafana

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/daemonmetrics"
	"github.com/soakd/soakd/internal/kpi"
)

// daemonFixture is a daemon's control API /metrics, as `soakd serve`
// serves it (package daemonmetrics behind its instrumented mux), over a
// state with a run in progress, the last runs of each verdict and two
// change points.
type daemonFixture struct {
	m   *daemonmetrics.Metrics
	srv *httptest.Server
	// changeAt is the planted CPU change point's time; runs the last runs.
	changeAt time.Time
	runs     []daemonmetrics.Run
}

func newDaemonFixture() *daemonFixture {
	f := &daemonFixture{changeAt: time.Now().Add(-3 * 24 * time.Hour).Truncate(time.Second)}
	up, down := 0.31, -0.12
	t0 := f.changeAt.Add(-7 * 24 * time.Hour)
	for i, v := range []kpi.Outcome{kpi.OutcomeRunning, kpi.OutcomeFail, "", kpi.OutcomeInconclusive, kpi.OutcomeAborted, kpi.OutcomePass} {
		f.runs = append(f.runs, daemonmetrics.Run{ID: "run-" + string(rune('f'-i)), Profile: "nightly", Verdict: v,
			StartedAt: t0.Add(time.Duration(10-i) * 24 * time.Hour), Baseline: v == kpi.OutcomePass})
	}
	state := daemonmetrics.State{Running: true, Profile: "nightly", HistoryRuns: len(f.runs), RetentionDeletions: 1, Recent: f.runs,
		Changes: []daemonmetrics.ChangeSeries{
			{Profile: "nightly", Metric: "cpu_us_per_request.graphql", LastRunsAgo: 3, Points: []daemonmetrics.Point{{Run: "run-c", At: f.changeAt, Relative: &up}}},
			{Profile: "nightly", Metric: "alloc_bytes_per_request.graphql", LastRunsAgo: 5, Points: []daemonmetrics.Point{{Run: "run-a", At: t0, Relative: &down}}},
			{Profile: "nightly", Metric: "gc_percent.graphql", Points: []daemonmetrics.Point{}},
		}}
	f.m = daemonmetrics.New(func() daemonmetrics.State { return state })
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", f.m.Handler())
	mux.Handle("GET /v1/runs", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	f.srv = httptest.NewServer(f.m.Instrument(mux))
	return f
}

// traffic finishes a run of each outcome and asks the API, one a refusal,
// every 300 ms until ctx is done, so that the increases and rates have
// data.
func (f *daemonFixture) traffic(ctx context.Context) {
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	outcomes := []kpi.Outcome{kpi.OutcomePass, kpi.OutcomeFail, kpi.OutcomeInconclusive, kpi.OutcomeAborted}
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		f.m.RunFinished(outcomes[n%len(outcomes)], float64(30+n%90))
		for _, path := range []string{"/v1/runs", "/v1/nope"} {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+path, nil)
			if err != nil {
				return
			}
			if resp, err := f.srv.Client().Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
}

// check reads the daemon dashboard's last runs, its change-point
// annotation and its change-point table back from Prometheus (base) as
// Grafana would run them, against what the fixture exported.
func (f *daemonFixture) check(t *testing.T, base string) {
	t.Helper()
	subst := strings.NewReplacer("$instance", ".+", "$profile", ".+")
	d := readDashboard(t, "daemon.json")

	// The last runs: one row per run, its verdict worded and coloured by
	// the table's mapping as everywhere else.
	expr, mappings := d.tableColumn(t, "Last runs", "verdict")
	got, err := instantValues(t.Context(), base, subst.Replace(expr), "verdict")
	if err != nil {
		t.Fatal(err)
	}
	want := map[kpi.Outcome][2]string{kpi.OutcomePass: {"PASS", "green"}, kpi.OutcomeFail: {"FAIL", "red"}, kpi.OutcomeInconclusive: {"INCONCLUSIVE", "orange"},
		kpi.OutcomeAborted: {"ABORTED", "dark-red"}, kpi.OutcomeRunning: {"RUNNING", "blue"}, "": {"UNREADABLE", "#8E8E8E"}}
	if len(got) != len(f.runs) {
		t.Errorf("Last runs: %d rows %v, want %d", len(got), got, len(f.runs))
	}
	for _, r := range f.runs {
		label := cmp.Or(string(r.Verdict), "unreadable")
		if ms, ok := got[label]; !ok || int64(ms) != r.StartedAt.UnixMilli() {
			t.Errorf("Last runs: run %s (%s) started %v, want %d ms", r.ID, label, ms, r.StartedAt.UnixMilli())
		}
		if m := mappings[label]; m[0] != want[r.Verdict][0] || m[1] != want[r.Verdict][1] {
			t.Errorf("Last runs: verdict %s reads %s in %s, want %s in %s", label, m[0], m[1], want[r.Verdict][0], want[r.Verdict][1])
		}
	}

	// The change-point annotation: each change point's value, as the
	// time Grafana marks it at (useValueForTime), is its first run's start.
	at, err := instantValues(t.Context(), base, subst.Replace(d.annotation(t, "Change points")), "run")
	if err != nil {
		t.Fatal(err)
	}
	if len(at) != 2 || int64(at["run-c"]) != f.changeAt.UnixMilli() {
		t.Errorf("Change points annotation: %v, want two, run-c's at %d ms", at, f.changeAt.UnixMilli())
	}
	steps, err := instantValues(t.Context(), base, `soakd_history_change_point_relative{job="`+DaemonJob+`"}`, "run")
	if err != nil || steps["run-c"] != 0.31 || steps["run-a"] != -0.12 {
		t.Errorf("change point steps %v (%v), want run-c 0.31 and run-a -0.12", steps, err)
	}
}

// panelJSON is the part of a panel the checks read.
type panelJSON struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	FieldConfig struct {
		Overrides []struct {
			Matcher struct {
				Options string `json:"options"`
			} `json:"matcher"`
			Properties []struct {
				ID    string          `json:"id"`
				Value json.RawMessage `json:"value"`
			} `json:"properties"`
		} `json:"overrides"`
	} `json:"fieldConfig"`
}

// dashboardJSON is a committed dashboard's panels and annotations.
type dashboardJSON struct {
	Panels      []panelJSON `json:"panels"`
	Annotations struct {
		List []struct {
			Name string `json:"name"`
			Expr string `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
}

func readDashboard(t *testing.T, file string) dashboardJSON {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(Dir, file))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboardJSON
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// tableColumn returns the first query of the table titled title and what
// the value mapping of its column field makes of each text: word, colour.
func (d dashboardJSON) tableColumn(t *testing.T, title, field string) (string, map[string][2]string) {
	t.Helper()
	for _, p := range d.Panels {
		if p.Title != title {
			continue
		}
		out := map[string][2]string{}
		for _, o := range p.FieldConfig.Overrides {
			for _, prop := range o.Properties {
				if o.Matcher.Options != field || prop.ID != "mappings" {
					continue
				}
				var ms []struct {
					Options map[string]struct {
						Text  string `json:"text"`
						Color string `json:"color"`
					} `json:"options"`
				}
				if err := json.Unmarshal(prop.Value, &ms); err != nil {
					t.Fatal(err)
				}
				for _, m := range ms {
					for k, v := range m.Options {
						out[k] = [2]string{v.Text, v.Color}
					}
				}
			}
		}
		if len(p.Targets) == 0 || len(out) == 0 {
			t.Fatalf("panel %q has no query or no mapping on %s", title, field)
		}
		return p.Targets[0].Expr, out
	}
	t.Fatalf("no panel %q", title)
	return "", nil
}

// annotation returns the expression of the annotation named name.
func (d dashboardJSON) annotation(t *testing.T, name string) string {
	t.Helper()
	for _, a := range d.Annotations.List {
		if a.Name == name {
			return a.Expr
		}
	}
	t.Fatalf("no annotation %q", name)
	return ""
}
