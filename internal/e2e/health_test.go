package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
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
	if strings.Contains(text, run.ID) {
		t.Errorf("the run id is a label value: routes must be patterns")
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
