package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/daemon/run"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/history"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/testkit"
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
			// For a person to look at: the page as drawn. --screenshot
			// leaves out a frame drawn by another process, and Chromium
			// gives a sandboxed frame (the run's report) a process of its
			// own: kept in the page's, the report is drawn.
			name := strings.NewReplacer("#/", "", "/", "-", "?", "-", "&", "-", "=", "-").Replace(hash)
			chromiumPage(t, dir, d.api+"/"+hash, width, fmt.Sprintf("--screenshot=%s/%s-%d.png", shots, cmp.Or(name, "runs"), width),
				"--disable-features=IsolateSandboxedIframes")
		}
		return dom
	}

	// The live view: a real run, its page as loaded, then its request
	// count advancing in one open page, pushed by the daemon.
	live, err := cl.Start(ctx, api.StartRequest{Profile: "live"})
	if err != nil {
		t.Fatal(err)
	}
	firstEvent(t, d.api, live.ID)
	liveDOM := page("#/run/"+live.ID, 1300)
	if !strings.Contains(liveDOM, `id="live"`) || !regexp.MustCompile(`id="live-position">phase 1 of 2, round 1 of 1, \d+s elapsed`).MatchString(liveDOM) || !strings.Contains(liveDOM, `<button id="stop"`) {
		t.Fatalf("the run in progress has no live view with its position and a stop button:\n%.4000s", liveDOM)
	}
	if !regexp.MustCompile(`data-requests="\d+"`).MatchString(liveDOM) {
		t.Fatalf("the live view shows no running phase's requests:\n%.4000s", liveDOM)
	}
	browser := testkit.StartChromium(t, "--window-size=1300,1000")
	bctx, bcancel := context.WithTimeout(ctx, 30*time.Second)
	defer bcancel()
	if err := browser.Navigate(bctx, d.api+"/#/run/"+live.ID); err != nil {
		t.Fatal(err)
	}
	const requestsJS = `Number((document.querySelector("[data-requests]") || {dataset: {requests: "-1"}}).dataset.requests)`
	if err := browser.WaitTrue(bctx, requestsJS+` >= 0`); err != nil {
		t.Fatalf("the open run page shows no live requests: %v", err)
	}
	var first int
	if err := browser.EvalInto(bctx, requestsJS, &first); err != nil {
		t.Fatal(err)
	}
	if err := browser.WaitTrue(bctx, requestsJS+` > `+strconv.Itoa(first)); err != nil {
		var last int
		_ = browser.EvalInto(context.WithoutCancel(ctx), requestsJS, &last)
		t.Errorf("the open page's live requests did not advance from %d (now %d): %v", first, last, err)
	}
	for _, l := range browser.Console() {
		t.Errorf("console on the live page: %s", l)
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

// focused is the element that has the keyboard's focus, as focusJS
// reads it.
type focused struct {
	Tag, ID, Text, Href, File string
	// Ring: its computed outline or box-shadow draws something (the
	// app.css :focus-visible rules); Visible: it matches :focus-visible;
	// HasFocus: its document has the focus; Stroke: a trend point's
	// circle's stroke width.
	Ring, Visible, HasFocus bool
	Stroke                  string
}

// key names f for comparing focus orders: a link by its href and text,
// anything else by its tag and id.
func (f focused) key() string {
	if f.Tag == "A" {
		return "A " + f.Href + " " + f.Text
	}
	return f.Tag + "#" + f.ID
}

func (f focused) String() string {
	return fmt.Sprintf("%s (text %q, file %q, ring %v, focus-visible %v)", f.key(), f.Text, f.File, f.Ring, f.Visible)
}

// focusJS reads document.activeElement into a focused.
const focusJS = `(() => {
  const a = document.activeElement;
  if (!a) return {Tag: "NONE"};
  const cs = getComputedStyle(a);
  const c = a.matches(".point-link") ? a.querySelector("circle") : null;
  return {Tag: a.tagName.toUpperCase(), ID: a.id, Text: (a.textContent || "").trim().replace(/\s+/g, " ").slice(0, 60),
    Href: a.getAttribute("href") || "", File: (a.dataset && a.dataset.file) || "",
    Ring: (cs.outlineStyle !== "none" && parseFloat(cs.outlineWidth) > 0) || cs.boxShadow !== "none",
    Visible: a.matches(":focus-visible"), HasFocus: document.hasFocus(), Stroke: c ? getComputedStyle(c).strokeWidth : ""};
})()`

// TestWebUIKeyboard walks the web page with the keyboard alone, in a
// real browser driven through the DevTools protocol (testkit.Chromium),
// on a real daemon with a planted history: Tab reaches, in document
// order, the brand and main navigation links, the profile and verdict
// filters and every run link, each with a visible focus ring, and
// Shift+Tab walks the same way back; ArrowDown on the verdict filter
// filters the list and leaves the focus on the filter; Enter on a run
// link opens that run with the focus at the top of its page, from where
// Tab reaches the "Open report.html" button, into the sandboxed report
// frame (drawn: a screenshot of it is not blank) and out to the run's
// files; on the trends, Tab reaches a chart's point and Enter opens its
// run. Nothing is logged to the console but the two 404s the page
// expects. SOAKD_WEBUI_SHOTS=DIR saves screenshots of the focused run
// link, the run page with its report and the focused trend point in DIR.
func TestWebUIKeyboard(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	b := testkit.StartChromium(t, "--window-size=1300,1000")
	bin := buildSoakd(t)
	dir := t.TempDir()
	ids := nightlyRuns(t, filepath.Join(dir, "data"), 10, 7)
	if err := os.WriteFile(filepath.Join(dir, "data", history.BaselineFile), []byte("nightly-03\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startServe(t, bin, serveConfig(t, dir, ""))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	shots := os.Getenv("SOAKD_WEBUI_SHOTS")
	shot := func(name string) {
		t.Helper()
		if shots == "" {
			return
		}
		if err := b.Screenshot(ctx, filepath.Join(shots, name)); err != nil {
			t.Error(err)
		}
	}
	wait := func(what, js string) {
		t.Helper()
		if err := b.WaitTrue(ctx, js); err != nil {
			var f focused
			lctx, lcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = b.EvalInto(lctx, focusJS, &f)
			lcancel()
			t.Fatalf("%s: %v (focus on %s)", what, err, f)
		}
	}
	current := func() focused {
		t.Helper()
		var f focused
		if err := b.EvalInto(ctx, focusJS, &f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	var frame *testkit.Frame // the report's, once attached
	// settled is where the focus is (on the page, and in the report frame
	// if it is there) once it has landed on an element, or after a
	// second: moving it into or out of a frame another process draws
	// passes it between the two, the body focused meanwhile. No key this
	// test presses leaves the focus on the body.
	settled := func() (f, in focused) {
		t.Helper()
		for deadline := time.Now().Add(time.Second); ; {
			f = current()
			in = f
			if f.Tag == "IFRAME" && frame != nil {
				if err := frame.EvalInto(ctx, focusJS, &in); err != nil {
					t.Fatal(err)
				}
			}
			if (in.Tag != "BODY" && in.HasFocus) || time.Now().After(deadline) {
				return f, in
			}
			select {
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	// press presses key and returns where the focus is then; an element
	// of the page focused without a visible ring is an error (a frame's
	// focused element is checked inside the frame).
	press := func(key string, shift bool) focused {
		t.Helper()
		if err := b.PressKey(ctx, key, shift); err != nil {
			t.Fatal(err)
		}
		f, in := settled()
		if in.Tag != "BODY" && in.Tag != "MAIN" && (!in.Ring || !in.Visible) {
			t.Errorf("%s %s: %s has no visible focus ring", key, f.Tag, in)
		}
		return f
	}

	// The list of runs: Tab through it, then Shift+Tab back.
	if err := b.Navigate(ctx, d.api+"/#/"); err != nil {
		t.Fatal(err)
	}
	wait("the runs list", `document.querySelectorAll("#runs tbody tr[data-run]").length === 10`)
	want := []string{"A #/ soakd", "A #/ Runs", "A #/trends Trends", "SELECT#filter-profile", "SELECT#filter-verdict"}
	for i := len(ids) - 1; i >= 0; i-- { // newest first
		want = append(want, "A #/run/"+ids[i]+" "+ids[i])
	}
	var got []string
	for range want {
		f := press("Tab", false)
		got = append(got, f.key())
		if f.Href == "#/run/"+ids[len(ids)-1] {
			shot("keyboard-runs-focus.png")
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("Tab through the runs list:\n got %q\nwant %q", got, want)
	}
	got = got[:0]
	for range len(want) - 1 {
		got = append(got, press("Tab", true).key())
	}
	back := slices.Clone(want[:len(want)-1])
	slices.Reverse(back)
	if !slices.Equal(got, back) {
		t.Errorf("Shift+Tab back through the runs list:\n got %q\nwant %q", got, back)
	}

	// The verdict filter, from the keyboard: all → fail.
	for range 4 {
		press("Tab", false)
	}
	if f := current(); f.key() != "SELECT#filter-verdict" {
		t.Fatalf("4 Tabs from the brand reach %s, not the verdict filter", f)
	}
	press("ArrowDown", false)
	wait("ArrowDown on the verdict filter", `location.hash === "#/?verdict=fail" && document.querySelectorAll("#runs tbody tr[data-run]").length === 2 && document.getElementById("run-count").textContent === "2 of 10 runs"`)
	if f := current(); f.key() != "SELECT#filter-verdict" || !f.Visible {
		t.Errorf("the list filtered, the focus is on %s, not back on the verdict filter", f)
	}
	if f := press("Tab", false); f.key() != "A #/run/nightly-09 nightly-09" {
		t.Fatalf("Tab from the verdict filter reaches %s, not the first failed run", f)
	}

	// Enter opens the run, the focus at the top of its page; Tab reaches
	// the report's button, the report (in its frame) and the files.
	press("Enter", false)
	wait("Enter on the run link", `location.hash === "#/run/nightly-09" && document.getElementById("main").dataset.ready === "/run/nightly-09" && document.getElementById("report").src !== ""`)
	if f := current(); f.Tag != "MAIN" {
		t.Errorf("the run page opened, the focus is on %s, not at the top of its main", f)
	}
	var err error
	if frame, err = b.AttachFrame(ctx, "/v1/runs/nightly-09/files/report.html?ticket="); err != nil {
		t.Fatal(err)
	}
	if err := frame.WaitTrue(ctx, `document.readyState === "complete" && origin === "null" && document.querySelector("h1").textContent === "soakd report nightly-09"`); err != nil {
		t.Fatalf("the report frame (sandboxed: an opaque origin) never showed the report: %v", err)
	}
	reportDrawn(ctx, t, b)
	shot("keyboard-run-report.png")
	if f := press("Tab", false); f.key() != "BUTTON#open-report" || f.Text != "Open report.html in a new tab" {
		t.Errorf("Tab from the top of the run page reaches %s, not the Open report.html button", f)
	}
	var inFrame, file bool
	for range 100 {
		f := press("Tab", false)
		inFrame = inFrame || f.Tag == "IFRAME"
		if file = f.File != ""; file {
			break
		}
	}
	if !inFrame || !file {
		t.Errorf("Tab from the Open report.html button: into the report frame %v, on to a file %v", inFrame, file)
	}
	if f := press("Tab", true); f.Tag != "IFRAME" {
		t.Errorf("Shift+Tab from the first file reaches %s, not back into the report frame", f)
	}

	// A trend's point, from the keyboard, opens its run.
	if err := b.Navigate(ctx, d.api+"/#/trends?profile=nightly"); err != nil {
		t.Fatal(err)
	}
	wait("the trends", `document.getElementById("main").dataset.ready === "/trends" && document.querySelectorAll("a.point-link").length >= 20`)
	if f := press("Tab", false); f.key() != "SELECT#trend-profile" {
		t.Errorf("Tab from the top of the trends reaches %s, not the profile", f)
	}
	f := press("Tab", false)
	if f.Tag != "A" || f.Href != "#/run/nightly-01" || f.Stroke != "3px" {
		t.Errorf("Tab from the trend's profile reaches %s (its circle's stroke %q), not the first point with a 3px ring", f, f.Stroke)
	}
	shot("keyboard-trend-point.png")
	press("Enter", false)
	wait("Enter on the trend's point", `location.hash === "#/run/nightly-01" && document.getElementById("main").dataset.ready === "/run/nightly-01"`)

	// Nothing in the console: not even a 404 (the page asks for the soak
	// only when /v1/history says there is one, and names its icon).
	for _, line := range b.Console() {
		t.Errorf("console: %s", line)
	}
}

// reportDrawn waits, with screenshots, until the report frame's area is
// drawn: at least 2 % of its pixels not white. A sandboxed frame runs in
// a process of its own (Chromium isolates sandboxed frames), which draws
// it a moment after it loaded.
func reportDrawn(ctx context.Context, t *testing.T, b *testkit.Chromium) {
	t.Helper()
	var r struct{ X, Y, W, H float64 }
	if err := b.EvalInto(ctx, `(() => { const r = document.getElementById("report").getBoundingClientRect(); return {X: r.x, Y: r.y, W: r.width, H: r.height}; })()`, &r); err != nil {
		t.Fatal(err)
	}
	var share float64
	for ctx.Err() == nil {
		raw, err := b.ScreenshotPNG(ctx)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		area := image.Rect(int(r.X)+4, int(r.Y)+4, int(r.X+r.W)-4, int(r.Y+r.H)-4).Intersect(img.Bounds())
		inked := 0
		for y := area.Min.Y; y < area.Max.Y; y++ {
			for x := area.Min.X; x < area.Max.X; x++ {
				if cr, cg, cb, _ := img.At(x, y).RGBA(); cr < 0xf000 || cg < 0xf000 || cb < 0xf000 {
					inked++
				}
			}
		}
		if share = float64(inked) / float64(max(1, area.Dx()*area.Dy())); share >= 0.02 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("the report frame is still blank in a screenshot (%.1f %% of it drawn)", 100*share)
}
