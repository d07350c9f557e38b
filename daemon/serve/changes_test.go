package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/daemonmetrics"
	"github.com/soakd/soakd/internal/history"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/testkit"
)

// TestChangesEndpoint: GET /v1/history/changes over a history of synthetic
// reports: six runs of profile quick at about 20 µs of GraphQL CPU per
// request, one not measured, then five at about 30 µs, and runs of another
// profile and an aborted one that must not count. The change is on the
// first 30 µs run, with its step and p-value; a metric or profile that does
// not exist is a 400 naming the valid ones.
func TestChangesEndpoint(t *testing.T) {
	cfg, store, _, values := nightlyHistory(t)
	h := api.NewHandler(&daemon{cfg: cfg, log: zap.NewNop(), store: store, base: t.Context()}, "", zap.NewNop())

	var c api.HistoryChanges
	if code := apiGet(t, h, "/v1/history/changes?profile=quick", &c); code != http.StatusOK {
		t.Fatalf("GET changes: %d", code)
	}
	if c.Profile != "quick" || c.Metric != "cpu_us_per_request.graphql" || c.Unit != "µs" || c.MinRuns != 3 || c.Level != 0.01 || len(c.Runs) != len(values) {
		t.Fatalf("changes: %+v", c)
	}
	if c.Runs[0].ID != "n00" || c.Runs[6].Value != nil || c.Runs[7].Value == nil || *c.Runs[7].Value != 30.2 {
		t.Errorf("the series: %+v", c.Runs)
	}
	if len(c.Changes) != 1 {
		t.Fatalf("change points %+v, want one, on n07", c.Changes)
	}
	cp := c.Changes[0]
	if cp.Run != "n07" || cp.Index != 7 || cp.Step < 9.5 || cp.Step > 10.5 || cp.Relative == nil || *cp.Relative < 0.45 || *cp.Relative > 0.55 || !(cp.PValue < 0.01) {
		t.Errorf("the change: %+v (relative %v), want on n07 (index 7), about +10 µs, +50 %%, p < 0.01", cp, cp.Relative)
	}
	var delta api.HistoryChanges
	if apiGet(t, h, "/v1/history/changes?profile=quick&metric=cpu_us_per_request.delta", &delta); delta.Unit != "percent" || len(delta.Changes) != 1 || delta.Changes[0].Run != "n07" {
		t.Errorf("the delta's changes: %+v", delta)
	}
	var other api.HistoryChanges
	if apiGet(t, h, "/v1/history/changes?profile=other", &other); len(other.Runs) != len(values) || len(other.Changes) != 0 {
		t.Errorf("a flat profile: %d runs, changes %+v; want %d and none", len(other.Runs), other.Changes, len(values))
	}
	for path, want := range map[string]string{
		"/v1/history/changes?metric=p99":                      "metric \"p99\": want a KPI (cpu_machine_percent,",
		"/v1/history/changes?metric=cpu_us_per_request.sides": "optionally followed by .graphql",
		"/v1/history/changes?profile=nope":                    `profile "nope" has no runs and is not configured`,
	} {
		code, msg := getError(h, path)
		if code != http.StatusBadRequest || !strings.HasPrefix(msg, "invalid query: ") || !strings.Contains(msg, want) {
			t.Errorf("GET %s: %d %q, want 400 saying %q", path, code, msg, want)
		}
	}
}

// getError sends GET path to h and returns the status and the error
// reply's message.
func getError(h http.Handler, path string) (int, string) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &e)
	return rec.Code, e.Error.Message
}

// TestChangeSeriesMetrics: the daemon's /metrics exports, per profile with
// complete runs and followed figure, the change points of the same
// history as TestChangesEndpoint: one in quick's CPU per request, on n07
// (its start as the timestamp, 4 measured runs after it, +50 %), none in
// other's; the cache is reused while the history is unchanged and
// recomputed when a run is added.
func TestChangeSeriesMetrics(t *testing.T) {
	cfg, store, t0, _ := nightlyHistory(t)
	d := &daemon{cfg: cfg, log: zap.NewNop(), store: store, base: t.Context()}
	series := d.changeSeries()
	by := map[string]daemonmetrics.ChangeSeries{}
	for _, cs := range series {
		by[cs.Profile+" "+cs.Metric] = cs
	}
	if len(series) != 2*len(followedMetrics()) {
		t.Fatalf("%d series, want %d (2 profiles × the followed figures): %+v", len(series), 2*len(followedMetrics()), series)
	}
	cpu := by["quick cpu_us_per_request.graphql"]
	if len(cpu.Points) != 1 || cpu.Points[0].Run != "n07" || !cpu.Points[0].At.Equal(t0.Add(7*24*time.Hour)) || cpu.LastRunsAgo != 4 ||
		cpu.Points[0].Relative == nil || *cpu.Points[0].Relative < 0.45 || *cpu.Points[0].Relative > 0.55 {
		t.Errorf("quick's CPU per request: %+v, want one change at n07's start, 4 runs ago, about +50 %%", cpu)
	}
	if o := by["other cpu_us_per_request.graphql"]; len(o.Points) != 0 {
		t.Errorf("other's flat series has %d change points", len(o.Points))
	}
	if again := d.changeSeries(); &again[0] != &series[0] {
		t.Errorf("an unchanged history recomputed the series")
	}
	// A report read before is not read again: damaged on disk now, its
	// figures still count.
	if err := os.WriteFile(filepath.Join(cfg.DataDir, history.RunsDir, "n03", report.JSONFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.WriteRun(t, cfg.DataDir, "n12", "quick", t0.Add(12*24*time.Hour), 30.1)
	if err := store.Update("n12"); err != nil {
		t.Fatal(err)
	}
	for _, cs := range d.changeSeries() {
		if cs.Profile == "quick" && cs.Metric == "cpu_us_per_request.graphql" && (cs.LastRunsAgo != 5 || len(cs.Points) != 1) {
			t.Errorf("after one more run: %+v, want the one change 5 runs ago", cs)
		}
	}
	if _, ok := d.changes.runs["n03"]; !ok || len(d.changes.runs) != 25 {
		t.Errorf("the cache holds %d runs (n03 %v), want all 25, n03's figures from before it was damaged", len(d.changes.runs), ok)
	}
}

// nightlyHistory is a history of synthetic reports: twelve nights of
// profile quick at about 20 µs of GraphQL CPU per request, one not
// measured (-1), then about 30 µs from n07 on; and profile other, flat
// about 50 µs, an hour after each. It returns the configuration, the open
// store, the first night and quick's values.
func nightlyHistory(t *testing.T) (*config.Config, *history.Store, time.Time, []float64) {
	t.Helper()
	cfg := testkit.Config(t, "data_dir: x\n")
	cfg.DataDir = t.TempDir()
	t0 := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	values := []float64{20.1, 19.8, 20.3, 19.9, 20.2, 20.0, -1, 30.2, 29.9, 30.1, 30.0, 29.8}
	for i, v := range values {
		night := t0.Add(time.Duration(i) * 24 * time.Hour)
		testkit.WriteRun(t, cfg.DataDir, fmt.Sprintf("n%02d", i), "quick", night, v)
		testkit.WriteRun(t, cfg.DataDir, fmt.Sprintf("o%02d", i), "other", night.Add(time.Hour), 50+float64(i%2))
	}
	store, err := history.Open(cfg.DataDir, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return cfg, store, t0, values
}
