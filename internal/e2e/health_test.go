package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/testkit"
)

// scrapeDaemon GETs the daemon's /metrics with token and returns the text
// and each sample's value by "name{labels}" as the exposition writes it
// (labels sorted, values quoted).
func scrapeDaemon(t *testing.T, base, token string) (string, map[string]float64) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v\n%s", resp.StatusCode, err, b)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, b)
	}
	vals := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			key := name + "{" + strings.Join(ls, ",") + "}"
			switch {
			case m.Histogram != nil:
				vals[key] = float64(m.GetHistogram().GetSampleCount())
			case m.Counter != nil:
				vals[key] = m.GetCounter().GetValue()
			default:
				vals[key] = m.GetGauge().GetValue()
			}
		}
	}
	return string(b), vals
}

// TestServeMetrics: the daemon's /metrics on the control API's listener,
// behind the token, before and after a tiny run: the run's outcome counter
// moves by one, its duration is observed, the history grows, the API's
// requests are counted by route pattern, soakd_build_info is 1, and the
// scrape is promtool-clean.
func TestServeMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	const secret = "metrics-token-for-the-test"
	d := startServe(t, bin, serveConfig(t, t.TempDir(), ""), "SOAKD_CONTROL_TOKEN="+secret)
	if resp, err := http.Get(d.api + "/metrics"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /metrics without the token: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	_, before := scrapeDaemon(t, d.api, secret)
	if before["soakd_run_in_progress{}"] != 0 || before["soakd_history_runs{}"] != 0 || before["soakd_read_only{}"] != 0 {
		t.Errorf("an idle, empty daemon: %v", before)
	}
	cl := &api.Client{BaseURL: d.api, Token: secret}
	run, err := cl.Start(t.Context(), api.StartRequest{Profile: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	_, during := scrapeDaemon(t, d.api, secret)
	if during["soakd_run_in_progress{}"] != 1 || during["soakd_run_in_progress_info{profile=tiny}"] != 1 {
		t.Errorf("during the run: in progress %v, info %v; want 1 and profile tiny", during["soakd_run_in_progress{}"], during["soakd_run_in_progress_info{profile=tiny}"])
	}
	done := waitStatus(t, cl, run.ID, "complete", "aborted")
	// The report may say complete a moment before the slot is released
	// (retention runs first): poll, bounded, until it is.
	var text string
	var after map[string]float64
	for range 100 {
		if text, after = scrapeDaemon(t, d.api, secret); after["soakd_run_in_progress{}"] == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	outcome := "soakd_runs_total{outcome=" + string(done.Verdict) + "}"
	if got := after[outcome] - before[outcome]; got != 1 {
		t.Errorf("%s moved by %v over one %s run, want 1", outcome, got, done.Verdict)
	}
	total := 0.0
	for _, o := range []string{"pass", "fail", "inconclusive", "aborted"} {
		k := "soakd_runs_total{outcome=" + o + "}"
		if _, ok := before[k]; !ok {
			t.Errorf("%s absent before any run: it must start at 0", k)
		}
		total += after[k] - before[k]
	}
	if total != 1 {
		t.Errorf("soakd_runs_total moved by %v in all, want 1", total)
	}
	if after["soakd_run_duration_seconds{}"] != 1 || after["soakd_history_runs{}"] != 1 {
		t.Errorf("after the run: duration count %v, history runs %v; want 1 and 1", after["soakd_run_duration_seconds{}"], after["soakd_history_runs{}"])
	}
	if after["soakd_api_requests_total{code=202,route=POST /v1/runs}"] != 1 || after["soakd_api_requests_total{code=200,route=GET /v1/runs/{id}}"] < 1 {
		t.Errorf("API requests by route: %v", after)
	}
	if after["soakd_api_requests_total{code=401,route=GET /metrics}"] != 1 {
		t.Errorf("the refused scrape is not counted as a 401 on GET /metrics")
	}
	// Routes are patterns: no series of the API's requests names the run
	// (the history's last runs do, by design: bounded to 20).
	for k := range after {
		if strings.HasPrefix(k, "soakd_api_requests_total{") && strings.Contains(k, run.ID) {
			t.Errorf("the run id is a route's label value: routes must be patterns: %s", k)
		}
	}
	if !strings.Contains(text, `soakd_history_run_started_timestamp_seconds{baseline="false",profile="tiny",run="`+run.ID+`",verdict="`) {
		t.Errorf("the finished run is not among the last runs' series")
	}
	build := false
	for k, v := range after {
		if strings.HasPrefix(k, "soakd_build_info{commit=") && strings.Contains(k, ",go=go") && v == 1 {
			build = true
		}
	}
	if !build {
		t.Errorf("no soakd_build_info{commit,go,version} = 1 in the scrape:\n%s", text)
	}
	promtool := testkit.LookTool(t, "promtool")
	cmd := exec.CommandContext(t.Context(), promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("promtool check metrics on the daemon's scrape: %v\n%s", err, out)
	}
	if code := d.stop(t); code != 0 {
		t.Errorf("soakd serve on SIGTERM: exit %d", code)
	}
}

// TestServeHistoryChanges: soakd history against a real soakd serve whose
// data_dir holds ten nightly runs of profile tiny, GraphQL CPU per request
// about 20 µs for five nights, then about 30 µs. The CPU switch through the
// API's overrides is refused (inject.* belongs to the running target, see
// TestServeOverrides), so the history is written as synthetic reports
// before the daemon starts, which loads it. The change point is on the
// sixth run, in the table and in GET /v1/history/changes.
func TestServeHistoryChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	cfg := serveConfig(t, dir, "")
	t0 := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	for i, v := range []float64{20.1, 19.8, 20.3, 19.9, 20.2, 30.2, 29.9, 30.1, 30.0, 29.8} {
		testkit.WriteRun(t, filepath.Join(dir, "data"), fmt.Sprintf("night%02d", i+1), "tiny", t0.Add(time.Duration(i)*24*time.Hour), v)
	}
	// A profile whose CPU stepped up three runs ago: recent enough for the
	// alert rule.
	for i, v := range []float64{20.1, 19.8, 20.3, 19.9, 20.2, 20.0, 19.7, 30.2, 29.9, 30.1} {
		testkit.WriteRun(t, filepath.Join(dir, "data"), fmt.Sprintf("recent%02d", i+1), "nightly", t0.Add(time.Duration(i)*24*time.Hour+time.Hour), v)
	}
	d := startServe(t, bin, cfg)

	// A real Prometheus scrapes the daemon's change points and evaluates
	// the shipped alert rules on them.
	prom := testkit.StartPrometheus(t, testkit.LookTool(t, "prometheus"), "soakd-daemon", strings.TrimPrefix(d.api, "http://"), "grafana/alerts/soakd.rules.yml")
	for q, want := range map[string]float64{
		`soakd_history_change_points{profile="tiny", metric="cpu_us_per_request.graphql"}`:                 float64(1),
		`soakd_history_last_change_runs_ago{profile="tiny", metric="cpu_us_per_request.graphql"}`:          float64(4),
		`soakd_history_last_change_timestamp_seconds{profile="tiny", metric="cpu_us_per_request.graphql"}`: float64(t0.Add(5 * 24 * time.Hour).Unix()),
		`soakd_history_change_points{profile="tiny", metric="gc_percent.graphql"}`:                         float64(0),
		`ALERTS{alertname="SoakdCPUPerRequestChanged", alertstate="firing", profile="nightly"}`:            float64(1),
	} {
		if got := promValue(t, prom, q, time.Minute); got != want {
			t.Errorf("%s = %v, want %v", q, got, want)
			for _, q := range []string{`count(soakd_history_last_change_runs_ago)`, `soakd_history_last_change_runs_ago{profile="nightly"}`, `soakd_history_last_change_relative{profile="nightly"}`, `count(ALERTS)`, `soakd_history_change_points{profile="nightly",metric="cpu_us_per_request.graphql"}`} {
				t.Logf("%s: %v", q, promValue(t, prom, q, 0))
			}
		}
	}
	if got := promValue(t, prom, `count(ALERTS{alertname="SoakdCPUPerRequestChanged", profile="tiny"}) or vector(0)`, 0); got != 0 {
		t.Errorf("the alert fires for tiny, whose change is 4 runs old")
	}

	out, stderr, code := runSoakd(t, bin, "history", "--api", d.api, "--profile", "tiny")
	if code != 0 {
		t.Fatalf("soakd history: exit %d\n%s%s", code, out, stderr)
	}
	t.Logf("soakd history --profile tiny:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 12 || !strings.Contains(lines[0], "10 complete runs, 1 change points") {
		t.Fatalf("soakd history printed %d lines, want a header, the columns and 10 runs with 1 change point:\n%s", len(lines), out)
	}
	for i, l := range lines[2:] {
		marked := strings.Contains(l, "▲")
		if want := i == 5; marked != want || !strings.HasPrefix(l, fmt.Sprintf("night%02d", i+1)) {
			t.Errorf("line %q: change marked %v, want %v", l, marked, want)
		}
	}
	if !strings.Contains(lines[7], "+49.6 %") || !strings.Contains(lines[7], "µs") {
		t.Errorf("the change's step is not worded: %q", lines[7])
	}
	c, err := (&api.Client{BaseURL: d.api}).Changes(t.Context(), "tiny", "")
	if err != nil || len(c.Changes) != 1 || c.Changes[0].Run != "night06" || c.Changes[0].Index != 5 {
		t.Errorf("GET /v1/history/changes: %+v %v, want one change on night06", c, err)
	}
	if out, stderr, code := runSoakd(t, bin, "history", "--api", d.api, "--metric", "p99"); code != 2 || !strings.Contains(stderr, "cpu_us_per_request") {
		t.Errorf("soakd history --metric p99: exit %d, want 2 naming the valid metrics\n%s%s", code, out, stderr)
	}
	if code := d.stop(t); code != 0 {
		t.Errorf("soakd serve on SIGTERM: exit %d", code)
	}
}

// promValue polls Prometheus at base for query's single value until it has
// one (or within gives up, 0 meaning ask once) and returns it; NaN when it
// never had one.
func promValue(t *testing.T, base, query string, within time.Duration) float64 {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err == nil && len(r.Data.Result) == 1 {
			if s, ok := r.Data.Result[0].Value[1].(string); ok {
				v, err := strconv.ParseFloat(s, 64)
				if err == nil {
					return v
				}
			}
		}
		if time.Now().After(deadline) {
			return math.NaN()
		}
		time.Sleep(500 * time.Millisecond)
	}
}
