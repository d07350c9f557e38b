package e2e

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/testkit"
)

// TestNightlyCPUStep is issue 28's nightly scenario on real runs: ten
// runs of one profile on a daemon, the seventh to the tenth with a CPU
// burn planted through the API's overrides (the built-in target's switch,
// set for the run and back after it). The change point is found on the
// seventh run by GET /v1/history/changes and `soakd history`, the web
// page's trend marks it there, a real Prometheus scraping the daemon
// fires SoakdCPUPerRequestChanged for the profile, the Grafana daemon
// dashboard's queries all have data there, its change-point annotation
// marks the seventh run's start and its last runs' table reads the
// history's verdicts, and an eleventh run
// without the override costs what the first six did: the daemon put its
// own setting back.
func TestNightlyCPUStep(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	d := startServe(t, bin, serveConfig(t, dir, ""))
	cl := &api.Client{BaseURL: d.api}
	ctx := t.Context()
	cpuPerRequest := func(id string) float64 {
		t.Helper()
		_, raw, err := cl.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			KPIs []struct {
				Name    string  `json:"name"`
				GraphQL float64 `json:"graphql"`
			} `json:"kpis"`
		}
		if err := json.Unmarshal(raw, &rep); err != nil {
			t.Fatal(err)
		}
		for _, k := range rep.KPIs {
			if k.Name == "cpu_us_per_request" {
				return k.GraphQL
			}
		}
		t.Fatalf("run %s has no cpu_us_per_request row", id)
		return 0
	}
	var ids []string
	var cpu []float64
	night := func(overrides string) {
		t.Helper()
		r, err := cl.Start(ctx, api.StartRequest{Overrides: overrides})
		if err != nil {
			t.Fatalf("run %d: %v", len(ids)+1, err)
		}
		waitStatus(t, cl, r.ID, "complete")
		ids = append(ids, r.ID)
		cpu = append(cpu, cpuPerRequest(r.ID))
	}
	// A real Prometheus scrapes the daemon, with the shipped rules, from
	// the tenth night on: that run finishes while it scrapes, so the
	// dashboard's increases and wall times have data.
	var prom string
	for i := 1; i <= 10; i++ {
		o := ""
		if i >= 7 {
			o = "inject: {graphql_cpu_us_per_request: 200}\n"
		}
		if i == 10 {
			prom = testkit.StartPrometheus(t, testkit.LookTool(t, "prometheus"), "soakd-daemon", strings.TrimPrefix(d.api, "http://"), "grafana/alerts/soakd.rules.yml")
			testkit.Get(t, d.api+"/v1/runs/no-such-run") // a refusal for the API panel: 404
		}
		night(o)
	}
	t.Logf("GraphQL CPU per request by run: %.1f µs", cpu)

	c, err := cl.Changes(ctx, "tiny", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Changes) != 1 || c.Changes[0].Run != ids[6] || c.Changes[0].Step <= 0 {
		t.Fatalf("change points %+v, want one upwards on the 7th run %s", c.Changes, ids[6])
	}
	out, stderr, code := runSoakd(t, bin, "history", "--api", d.api, "--profile", "tiny")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 12 {
		t.Fatalf("soakd history: exit %d, %d lines\n%s%s", code, len(lines), out, stderr)
	}
	for i, l := range lines[2:] {
		if marked := strings.Contains(l, "▲"); marked != (i == 6) {
			t.Errorf("soakd history line %d %q: change marked %v", i+1, l, marked)
		}
	}

	dom, console := chromiumPage(t, dir, d.api+"/#/trends?profile=tiny", 1300)
	trend := regexp.MustCompile(`(?s)<figure class="trend" data-metric="cpu_us_per_request">(.*?)</figure>`).FindStringSubmatch(dom)
	if trend == nil || !strings.Contains(trend[1], `class="change" data-run="`+ids[6]+`"`) {
		t.Errorf("the page's CPU trend does not mark the change on %s:\n%.2000s", ids[6], dom)
	}
	for _, l := range console {
		t.Errorf("console: %s", l)
	}

	if v := promValue(t, prom, `ALERTS{alertname="SoakdCPUPerRequestChanged", alertstate="firing", profile="tiny"}`, time.Minute); v != 1 {
		t.Errorf("SoakdCPUPerRequestChanged for tiny: %v, want firing", v)
	}

	// The Grafana daemon dashboard's queries, as Grafana runs them: the
	// change-point annotation marks the 7th run's start, the last runs'
	// table lists the ten with the history's verdicts.
	daemon := daemonDashboard(t)
	marks := promVector(t, prom, daemon.annotation(t, "Change points"), func(v []promSample) bool { return len(v) > 0 })
	seventh, _, err := cl.Get(ctx, ids[6])
	if err != nil {
		t.Fatal(err)
	}
	// The burn moves latency and throughput too (a closed model's users
	// wait for the slower answers): each figure that moved is marked, all
	// of them at the 7th run, CPU per request among them.
	cpuMarked := false
	for _, m := range marks {
		if m.labels["run"] != ids[6] || int64(m.value) != seventh.StartedAt.UnixMilli() {
			t.Errorf("the dashboard's change-point annotation marks %s at %.0f ms, want %s at %d ms", m.labels["metric"], m.value, ids[6], seventh.StartedAt.UnixMilli())
		}
		cpuMarked = cpuMarked || m.labels["metric"] == "cpu_us_per_request.graphql"
	}
	if !cpuMarked {
		t.Errorf("the dashboard's change-point annotation does not mark CPU per request: %+v", marks)
	}
	rows := promVector(t, prom, daemon.panelQuery(t, "Last runs"), func(v []promSample) bool { return len(v) == len(ids) })
	verdicts := map[string]string{}
	for _, r := range rows {
		verdicts[r.labels["run"]] = r.labels["verdict"]
	}
	for _, id := range ids {
		sum, _, err := cl.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if verdicts[id] != string(sum.Verdict) {
			t.Errorf("the dashboard's last runs: %s reads %q, the history %q", id, verdicts[id], sum.Verdict)
		}
	}

	// Every query of the daemon dashboard has data: a run finished while
	// Prometheus scraped (its increases and wall time).
	for _, q := range daemon.queries() {
		if v := promVector(t, prom, q, func(v []promSample) bool { return len(v) > 0 }); len(v) == 0 {
			t.Errorf("the daemon dashboard's query has no data: %s", q)
		}
	}

	night("")
	// One run back at the old level is not a change of its own (it needs
	// three), and it does not hide the one before it.
	if c, err := cl.Changes(ctx, "tiny", ""); err != nil || len(c.Changes) != 1 || c.Changes[0].Run != ids[6] {
		t.Errorf("after a run back at the old level: change points %+v (%v), want the one on the 7th run %s", c.Changes, err, ids[6])
	}
	before := cpu[:6]
	high := 0.0
	for _, v := range before {
		high = max(high, v)
	}
	if last := cpu[10]; last > high*1.5 || last > cpu[6] {
		t.Errorf("the run after the planted ones cost %.1f µs a request (the first six at most %.1f, the planted %.1f): the daemon did not restore its setting", last, high, cpu[6])
	}
	if code := d.stop(t); code != 0 {
		t.Errorf("soakd serve on SIGTERM: exit %d", code)
	}
}
