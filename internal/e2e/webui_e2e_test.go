package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/daemon/run"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/history"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

// nightlyRuns writes n complete runs of profile "nightly" into data_dir's
// history, a day apart, GraphQL's CPU per request stepping from about 100
// to about 130 µs at run stepAt (1-based), every figure else steady, and
// returns their ids oldest first. Runs 2 and 9 fail their CPU KPI (a
// limit of 0.1 points).
func nightlyRuns(t *testing.T, dataDir string, n, stepAt int) []string {
	t.Helper()
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-12 * 24 * time.Hour) // within any retention
	var ids []string
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("nightly-%02d", i)
		ids = append(ids, id)
		start := t0.Add(time.Duration(i-1) * 24 * time.Hour)
		jitter := 1 + 0.01*float64((i*7)%5-2) // ±2 %, no trend
		cpu := 100 * jitter
		if i >= stepAt {
			cpu *= 1.3
		}
		phase := func(name, arm string, cpuUs, alloc, p99 float64) report.Phase {
			res := workloads.Result{Phase: name, Arm: arm, Start: start, End: start.Add(20 * time.Second), DurationSeconds: 20,
				Requests: 20000, ThroughputRPS: 1000, SteadyStart: start.Add(2 * time.Second), SteadyEnd: start.Add(18 * time.Second),
				LatencyMs: workloads.Latency{P50: p99 / 4, P90: p99 / 2, P99: p99, P999: p99 * 2, Max: p99 * 3, Mean: p99 / 3}}
			sum := &profiles.Summary{WindowSeconds: 16, Samples: 160, Cores: 2, CPUKnown: true, CPUSeconds: cpuUs * 16000 / 1e6,
				CPUMachinePercent: cpuUs * 1000 / 1e6 * 100 / 2, CPUCorePercent: cpuUs * 1000 / 1e6 * 100, GCPercentKnown: true, GCPercent: 1,
				GCCycles: 40, AllocBytes: uint64(alloc * 16000), AllocObjects: uint64(alloc * 160), HeapLiveBytesMax: 8 << 20, RSSBytesMax: 30 << 20}
			return report.NewPhase(res, sum, nil)
		}
		r := &report.Report{SchemaVersion: report.SchemaVersion, Run: id, Profile: "nightly", Description: "planted nightly history",
			Status: report.StatusComplete, StartedAt: start, FinishedAt: start.Add(45 * time.Second), TargetPID: 100,
			Host:                   report.Host{Cores: 2, GOMAXPROCS: 2, GoVersion: "go1.26", OS: "linux", Arch: "amd64", Soakd: "devel"},
			SamplerIntervalSeconds: 0.1, Compare: report.Compare{REST: "rest-control", GraphQL: "graphql-load"},
			Phases: []report.Phase{phase("rest-control", "rest", 60*jitter, 3000, 2*jitter), phase("graphql-load", "graphql", cpu, 12000, 3*jitter)}}
		limits := kpi.Limits{CPUIncreasePoints: 50, GCIncreasePoints: 5, ThroughputDecreasePercent: 50}
		if i == 2 || i == 9 {
			limits.CPUIncreasePoints = 0.1 // a run that failed its CPU KPI
		}
		r.KPIs = kpi.Evaluate(r.Phases[0].Figures(), r.Phases[1].Figures(), limits)
		r.Verdict = kpi.Verdict(r.KPIs)
		dir := filepath.Join(dataDir, history.RunsDir, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := r.Write(dir, nil); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// liveProfile is a profile long enough to be watched: two 40 s phases
// the test stops early through the API.
const liveProfile = `
  live:
    description: the web page's live view
    settle: 300ms
    request_timeout: 5s
    seed: 7
    compare: {rest: rest-control, graphql: graphql-load}
    phases:
      - name: rest-control
        arm: rest
        duration: 40s
        think: {min: 1ms, max: 5ms}
        users:
          - {operation: rest-get, users: 3, iterations: 1000000}
      - name: graphql-load
        arm: graphql
        duration: 40s
        think: {min: 1ms, max: 5ms}
        users:
          - {operation: graphql-query, users: 3, iterations: 1000000}
`

// chromiumPage loads url in headless Chromium at width px and returns
// the DOM once the page's scripts have run (virtual time), with the
// console's lines (any is a problem: the page logs nothing).
func chromiumPage(t *testing.T, dir, url string, width int, extra ...string) (dom string, console []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--enable-logging=stderr", "--v=0",
		"--virtual-time-budget=4000", fmt.Sprintf("--window-size=%d,1600", width), "--user-data-dir=" + filepath.Join(dir, "chromium")}, extra...)
	if len(extra) == 0 {
		args = append(args, "--dump-dom")
	}
	cmd := exec.CommandContext(ctx, "/usr/bin/chromium", append(args, url)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", url, err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") {
			console = append(console, line)
		}
	}
	return string(out), console
}

// TestWebUIInChromium opens the daemon's web page in a real browser on a
// real daemon: the list of runs (verdicts worded and coloured, the
// baseline marked, the filters), the trend of a planted history with its
// change point on the run where the step was planted and every point a
// link, the live view of a real run whose progress advances between two
// loads, the run stopped through the API, the soak in progress with its
// cycles and drift rules, and a finished run's page
// framing its report.html through a file ticket. No page logs anything to
// the console, at 1300 and at 800 px. SOAKD_WEBUI_SHOTS=DIR also saves a
// screenshot of every page loaded in DIR.
func TestWebUIInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		t.Skip("skipping the browser test: /usr/bin/chromium not found (CI installs it; apt-get install -y chromium)")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	ids := nightlyRuns(t, dataDir, 10, 7)
	if err := os.WriteFile(filepath.Join(dataDir, history.BaselineFile), []byte("nightly-03\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The soak record a scheduled soak leaves: two cycles (runs of the
	// planted history), one drift rule open, one figure not measured.
	soak := run.SoakReport{SchemaVersion: run.SoakSchemaVersion, Soak: "soak-1", Profile: "nightly", StartedAt: time.Now().Add(-time.Hour),
		UpdatedAt: time.Now(), Status: "running", Verdict: kpi.OutcomeInconclusive,
		Cycles: []run.Cycle{
			{CycleFigures: kpi.CycleFigures{Cycle: 1, Run: ids[8], HeapLiveBytes: 8 << 20, RSSBytes: 30 << 20, GCPercent: 1.2, CPUMicrosPerRequest: 130}, Verdict: kpi.OutcomePass},
			{CycleFigures: kpi.CycleFigures{Cycle: 2, Run: ids[9], HeapLiveBytes: 9 << 20, RSSBytes: 31 << 20, CPUMicrosPerRequest: 131,
				NotMeasured: map[string]string{"gc_percent": "no GC cycle ended in the window"}}, Verdict: kpi.OutcomePass},
		},
		Drift: []kpi.DriftRule{{Name: "heap_live_ratio", Title: "Live heap drift", Outcome: kpi.OutcomeInconclusive, Detail: "2 cycles judged: too few for a trend"}}}
	sb, err := json.Marshal(soak)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, run.SoakFile), sb, 0o644); err != nil {
		t.Fatal(err)
	}
	port := freeLoopbackPort(t)
	cfg := filepath.Join(dir, "serve.yaml")
	body := strings.Replace(tinyConfig, "\nprofiles:\n", "\nprofiles:\n"+strings.TrimPrefix(liveProfile, "\n"), 1) +
		"\ndata_dir: " + dataDir + "\napi:\n  listen: 127.0.0.1:" + strconv.Itoa(port) + "\n" +
		"schedules:\n  - {name: nightly-tiny, cron: \"30 3 * * *\", timezone: Europe/Berlin, profile: tiny}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startServe(t, bin, cfg)
	cl := &api.Client{BaseURL: d.api}
	ctx := t.Context()
	var consoles []string
	page := func(hash string, width int) string {
		t.Helper()
		dom, console := chromiumPage(t, dir, d.api+"/"+hash, width)
		consoles = append(consoles, console...)
		if !strings.Contains(dom, `data-ready="`) {
			t.Fatalf("%s: the page never finished:\n%.3000s", hash, dom)
		}
		if shots := os.Getenv("SOAKD_WEBUI_SHOTS"); shots != "" {
			// For a person to look at: the page as drawn.
			name := strings.NewReplacer("#/", "", "/", "-", "?", "-", "&", "-", "=", "-").Replace(hash)
			chromiumPage(t, dir, d.api+"/"+hash, width, fmt.Sprintf("--screenshot=%s/%s-%d.png", shots, cmp.Or(name, "runs"), width))
		}
		return dom
	}

	// The live view: a real run, its progress read twice.
	live, err := cl.Start(ctx, api.StartRequest{Profile: "live"})
	if err != nil {
		t.Fatal(err)
	}
	firstEvent(t, d.api, live.ID)
	requests := regexp.MustCompile(`data-requests="(\d+)"`)
	var seen []int
	for range 2 {
		dom := page("#/run/"+live.ID, 1300)
		if !strings.Contains(dom, `id="live"`) || !regexp.MustCompile(`id="live-position">phase 1 of 2, round 1 of 1, \d+s elapsed`).MatchString(dom) || !strings.Contains(dom, `<button id="stop"`) {
			t.Fatalf("the run in progress has no live view with its position and a stop button:\n%.4000s", dom)
		}
		m := requests.FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("the live view shows no running phase's requests:\n%.4000s", dom)
		}
		n, _ := strconv.Atoi(m[1])
		seen = append(seen, n)
	}
	if seen[1] <= seen[0] {
		t.Errorf("the live view's requests did not advance between two loads: %v", seen)
	}
	if _, err := http.Post(d.api+"/v1/runs/"+live.ID+"/stop", "application/json", nil); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, cl, live.ID, "complete", "aborted")

	// The list of runs.
	dom := page("#/", 1300)
	rows := regexp.MustCompile(`<tr data-run="([^"]+)">`).FindAllStringSubmatch(dom, -1)
	if len(rows) != len(ids)+1 {
		t.Errorf("the list shows %d runs, want %d:\n%.3000s", len(rows), len(ids)+1, dom)
	}
	if !regexp.MustCompile(`<tr data-run="nightly-03">.*?<span class="baseline"`).MatchString(dom) {
		t.Errorf("the baseline nightly-03 is not marked")
	}
	if !regexp.MustCompile(`<tr data-run="nightly-02">.*?<span class="verdict fail">FAIL</span>`).MatchString(dom) {
		t.Errorf("nightly-02's verdict is not a red FAIL")
	}
	if !regexp.MustCompile(`<table id="schedules">.*?<td>nightly-tiny</td><td>30 3 \* \* \* Europe/Berlin</td><td>tiny</td><td>\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ</td>`).MatchString(dom) {
		t.Errorf("the list does not show the schedule with its next slot:\n%.3000s", dom)
	}
	sk := regexp.MustCompile(`(?s)<section id="soak".*?</section>`).FindString(dom)
	if !strings.Contains(sk, `<span class="verdict info">RUNNING</span>`) || strings.Count(sk, `<tr data-cycle=`) != 2 ||
		!strings.Contains(sk, `<a href="#/run/nightly-10">nightly-10</a>`) || !strings.Contains(sk, "not measured") ||
		!strings.Contains(sk, "Live heap drift: 2 cycles judged") {
		t.Errorf("the soak in progress is not shown with its cycles and drift rules:\n%.3000s", sk)
	}
	// Keyboard: everything a reader acts on is a link, a button or a
	// select (focusable in document order: no positive tabindex), and
	// every link goes somewhere.
	if m := regexp.MustCompile(`tabindex="[1-9]`).FindString(dom); m != "" {
		t.Errorf("a positive tabindex breaks the keyboard order: %s", m)
	}
	if m := regexp.MustCompile(`<a(?: [a-z-]+="[^"]*")*>`).FindAllString(dom, -1); len(m) > 0 {
		for _, a := range m {
			if !strings.Contains(a, ` href="`) {
				t.Errorf("a link without href is not reachable by keyboard: %s", a)
			}
		}
	}
	dom = page("#/?profile=nightly&verdict=fail", 1300)
	if got := regexp.MustCompile(`<tr data-run="([^"]+)">`).FindAllStringSubmatch(dom, -1); len(got) != 2 || got[0][1] != "nightly-09" || got[1][1] != "nightly-02" {
		t.Errorf("filtered by profile nightly and verdict fail: %v, want nightly-09 and nightly-02", got)
	}
	if !strings.Contains(dom, `2 of 11 runs`) {
		t.Errorf("the filtered list does not say how many it shows")
	}

	// The trends: the change point on the run where the step was planted.
	dom = page("#/trends?profile=nightly", 1300)
	cpu := regexp.MustCompile(`(?s)<figure class="trend" data-metric="cpu_us_per_request">(.*?)</figure>`).FindStringSubmatch(dom)
	if cpu == nil {
		t.Fatalf("no CPU per request trend:\n%.3000s", dom)
	}
	if !strings.Contains(cpu[1], `data-series="2" data-changes="1"`) || !strings.Contains(cpu[1], `class="change" data-run="nightly-07"`) {
		t.Errorf("the CPU trend does not mark one change at nightly-07:\n%.3000s", cpu[1])
	}
	if n := strings.Count(cpu[1], `<a href="#/run/nightly-`); n < 2*len(ids) {
		t.Errorf("the CPU trend links %d points to their runs, want %d", n, 2*len(ids))
	}
	if !strings.Contains(cpu[1], `class="point graphql baseline" data-run="nightly-03"`) {
		t.Errorf("the baseline is not marked on the trend")
	}
	for _, m := range []string{"alloc_bytes_per_request", "gc_percent", "latency_p99_ms", "throughput_rps"} {
		if !strings.Contains(dom, `data-metric="`+m+`"`) {
			t.Errorf("no trend of %s", m)
		}
	}

	// A finished run's page frames its report through a ticket.
	dom = page("#/run/"+live.ID, 800)
	src := regexp.MustCompile(`<iframe id="report"[^>]* sandbox="allow-scripts" src="(/v1/runs/[^"]+/files/report.html\?ticket=[^"]+)"`).FindStringSubmatch(dom)
	if src == nil || strings.Contains(dom, `id="live"`) || !strings.Contains(dom, `data-file="report.json"`) {
		t.Fatalf("the stopped run's page frames no report through a ticket, or still shows the live view:\n%.4000s", dom)
	}
	resp, err := http.Get(d.api + strings.ReplaceAll(src[1], "&amp;", "&"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "soakd report "+live.ID) {
		t.Errorf("the frame's URL: %d %.200s", resp.StatusCode, b)
	}
	page("#/trends?profile=nightly", 800)
	for _, c := range consoles {
		t.Errorf("console: %s", c)
	}
	if code := d.stop(t); code != 0 {
		t.Errorf("soakd serve on SIGTERM: exit %d", code)
	}
}

// firstEvent waits for run id's first progress event with a running
// phase, from the API's event stream.
func firstEvent(t *testing.T, base, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/runs/"+id+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") && strings.Contains(line, `"running":[{`) {
			return
		}
	}
	t.Fatalf("run %s's events never showed a running phase: %v", id, sc.Err())
}
