package report

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/kpi"
	"github.com/soakd/soakd/profiles"
)

const trickyPhase = `mem<&>"ory`

var timeChartIDs = []string{"chart-cpu", "chart-gc", "chart-heap", "chart-alloc"}

// htmlFixture is richFixture with the phases one after the other, a third
// phase whose name needs escaping, an overhead breakdown, and samples
// every half second over the whole run.
func htmlFixture() (*Report, *Samples) {
	r := richFixture(kpi.GateInterval)
	t0 := r.StartedAt
	r.Phases[0].Start, r.Phases[0].End = t0.Add(2*time.Second), t0.Add(22*time.Second)
	r.Phases[1].Start, r.Phases[1].End = t0.Add(25*time.Second), t0.Add(45*time.Second)
	mem := r.Phases[1]
	mem.Name, mem.Arm = trickyPhase, "graphql"
	mem.Start, mem.End = t0.Add(47*time.Second), t0.Add(50*time.Second)
	mem.Resources = nil
	mem.ResourcesError = "fewer than 2 samples <in window>"
	r.Phases = append(r.Phases, mem)
	r.Overhead, r.OverheadBasis = overheadFixture()
	r.Pinning = &Pinning{TargetCPUs: []int{0}, DriverCPUs: []int{1}}
	return r, fixtureSamples(t0, 101, 500*time.Millisecond)
}

// fixtureSamples returns n samples every step from t0: CPU that rises
// during the phases, a GC cycle every 4 samples, a sawtooth live heap and a
// steady allocation rate.
func fixtureSamples(t0 time.Time, n int, step time.Duration) *Samples {
	s := &Samples{PauseBuckets: []float64{0, 1e-4, 1e-3, 1e-2, math.Inf(1)}}
	var cpu, gcCPU, rt float64
	var cycles, alloc uint64
	for i := range n {
		sec := float64(i) * step.Seconds()
		load := 0.1 + 0.6*math.Abs(math.Sin(sec/8))
		cpu += load * step.Seconds() * 2
		rt += 2 * step.Seconds()
		alloc += uint64(40e6 * step.Seconds() * (1 + load))
		smp := profiles.Sample{Time: t0.Add(time.Duration(i) * step), AllocBytes: alloc,
			HeapLiveBytes: uint64(3<<20 + (i%8)*(256<<10)), UserCPUSeconds: cpu * 0.8, SystemCPUSeconds: cpu * 0.2,
			FDs: -1, Threads: -1}
		if i%4 == 0 {
			cycles++
			gcCPU += 0.02 + 0.01*load
			smp.GCPauses = []profiles.BucketCount{{Bucket: 1, Count: 2}}
		}
		smp.GCCycles, smp.GCCPUSeconds, smp.RuntimeCPUSeconds = cycles, gcCPU, rt
		s.Samples = append(s.Samples, smp)
	}
	return s
}

// chartSection returns the <figure> of chart id.
func chartSection(t *testing.T, page, id string) string {
	t.Helper()
	start := strings.Index(page, `<figure class="chart" id="`+id+`">`)
	if start < 0 {
		t.Fatalf("chart %s is missing", id)
	}
	end := strings.Index(page[start:], "</figure>")
	if end < 0 {
		t.Fatalf("chart %s is not closed", id)
	}
	return page[start : start+end]
}

var seriesPath = regexp.MustCompile(`<path class="series [^"]*" d="([^"]*)"`)

func TestHTMLStructure(t *testing.T) {
	r, s := htmlFixture()
	b, err := r.HTML(s)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, id := range timeChartIDs {
		sec := chartSection(t, page, id)
		if got := strings.Count(sec, `<g class="band `); got != len(r.Phases) {
			t.Errorf("%s: got %d phase bands, want %d", id, got, len(r.Phases))
		}
		m := seriesPath.FindAllStringSubmatch(sec, -1)
		if len(m) != 1 {
			t.Fatalf("%s: got %d series paths, want 1", id, len(m))
		}
		if pts := strings.Count(m[0][1], "L") + strings.Count(m[0][1], "M"); pts < 10 {
			t.Errorf("%s: path has %d points, want at least 10: %q", id, pts, m[0][1])
		}
		if !strings.Contains(sec, "<title") || !strings.Contains(sec, "<figcaption>") {
			t.Errorf("%s: no <title> or caption", id)
		}
		if strings.Contains(sec, noSamplesTx) {
			t.Errorf("%s says %q with samples given", id, noSamplesTx)
		}
	}
	if sec := chartSection(t, page, "chart-cpu"); !strings.Contains(sec, "50 %") && !strings.Contains(sec, "40 %") {
		t.Errorf("cpu chart: no y tick with a %% unit")
	}
	if sec := chartSection(t, page, "chart-heap"); !strings.Contains(sec, "MiB<") {
		t.Errorf("heap chart: no y tick in MiB")
	}
	if sec := chartSection(t, page, "chart-alloc"); !strings.Contains(sec, "MiB/s<") {
		t.Errorf("allocation chart: no y tick in MiB/s")
	}
	if sec := chartSection(t, page, "chart-gc"); !strings.Contains(sec, "only between samples where /gc/cycles/total advanced") {
		t.Errorf("gc chart: the caption does not explain when GC %% is computed")
	}
	pauses := chartSection(t, page, "chart-pauses")
	if got, want := strings.Count(pauses, `<rect class="bar `), 2*3; got != want {
		t.Errorf("pause chart: got %d bars, want %d (3 per phase with resources)", got, want)
	}
	if !strings.Contains(pauses, "no resources") {
		t.Errorf("pause chart: the phase without resources is not marked")
	}
	lat := chartSection(t, page, "chart-latency")
	if got, want := strings.Count(lat, `<rect class="bar `), 5*len(r.Phases); got != want {
		t.Errorf("latency chart: got %d bars, want %d", got, want)
	}
	if !strings.Contains(lat, "arm: rest") || !strings.Contains(lat, "arm: graphql") {
		t.Errorf("latency chart: arms are not named")
	}
	text := html.UnescapeString(page)
	for _, want := range []string{
		`id="verdict"`, `class="verdict fail"`, "Verdict: FAIL",
		`<table id="kpis">`, "+13.00 points", "≤ +5 points",
		`<table id="checks">`, "3 of 80000 requests failed",
		`<table id="overhead">`, "encoding/json.Marshal", "160 / 367", "~ (1 sample, within noise)",
		"merged over 4 rounds (1,234 REST and 2,345 GraphQL samples at 100 Hz",
		`<table id="phases">`, `<table id="rounds">`,
		"mem&lt;&amp;&gt;&#34;ory", "Live heap &lt;trend&gt; &amp; drift", "fewer than 2 samples &lt;in window&gt;",
	} {
		src := page
		if !strings.Contains(want, "&") {
			src = text // html/template writes + as &#43;
		}
		if !strings.Contains(src, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if strings.Contains(page, trickyPhase) || strings.Contains(page, "<in window>") {
		t.Errorf("report.html contains unescaped text")
	}
}

func TestHTMLSelfContained(t *testing.T) {
	r, s := htmlFixture()
	b, err := r.HTML(s)
	if err != nil {
		t.Fatal(err)
	}
	page := strings.ToLower(string(b))
	for _, bad := range []string{"http://", "https://", "<script", "src=", "href=", "url(", "@import", "//cdn"} {
		if strings.Contains(page, bad) {
			i := strings.Index(page, bad)
			t.Errorf("report.html contains %q (…%s…): it must work offline", bad, page[max(0, i-60):min(len(page), i+60)])
		}
	}
}

func TestHTMLWithoutSamples(t *testing.T) {
	r, _ := htmlFixture()
	for _, s := range []*Samples{nil, {}, {Samples: fixtureSamples(r.StartedAt, 1, time.Second).Samples}} {
		b, err := r.HTML(s)
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		for _, id := range timeChartIDs {
			sec := chartSection(t, page, id)
			if !strings.Contains(sec, ">"+noSamplesTx+"<") {
				t.Errorf("%s: got no %q message without samples", id, noSamplesTx)
			}
			if seriesPath.MatchString(sec) {
				t.Errorf("%s: got a series without samples", id)
			}
			if got := strings.Count(sec, `<g class="band `); got != len(r.Phases) {
				t.Errorf("%s: got %d phase bands, want %d", id, got, len(r.Phases))
			}
		}
	}
}

func TestHTMLAborted(t *testing.T) {
	r := &Report{Run: "r1", Profile: "p", Status: StatusAborted, Verdict: VerdictAborted, Error: "target <exited>"}
	b, err := r.HTML(nil)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{`class="verdict aborted"`, "target &lt;exited&gt;", "No KPIs were evaluated"} {
		if !strings.Contains(page, want) {
			t.Errorf("aborted report lacks %q", want)
		}
	}
}

func TestDeriveSeries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	ss := []profiles.Sample{
		{Time: at(0), UserCPUSeconds: 10, SystemCPUSeconds: 1, GCCycles: 5, GCCPUSeconds: 1, RuntimeCPUSeconds: 100, AllocBytes: 1000, HeapLiveBytes: 7},
		// 1 s later: 1 cpu-second on 2 cores = 50 %; no GC cycle ended.
		{Time: at(1), UserCPUSeconds: 10.8, SystemCPUSeconds: 1.2, GCCycles: 5, GCCPUSeconds: 1, RuntimeCPUSeconds: 100, AllocBytes: 3000, HeapLiveBytes: 8},
		// a cycle ended: Δgc 0.5 over Δtotal 4 since the first sample = 12.5 %.
		{Time: at(2), UserCPUSeconds: 11.2, SystemCPUSeconds: 1.2, GCCycles: 6, GCCPUSeconds: 1.5, RuntimeCPUSeconds: 104, AllocBytes: 3000, HeapLiveBytes: 9},
		// OS times missing: a break in the CPU line.
		{Time: at(3), ProcMissing: true, GCCycles: 6, GCCPUSeconds: 1.5, RuntimeCPUSeconds: 104, AllocBytes: 3500, HeapLiveBytes: 9},
		// the windows on both sides of it have no CPU share.
		{Time: at(4), UserCPUSeconds: 12.2, SystemCPUSeconds: 1.2, GCCycles: 8, GCCPUSeconds: 1.6, RuntimeCPUSeconds: 108, AllocBytes: 4500, HeapLiveBytes: 10},
		{Time: at(5), UserCPUSeconds: 13, SystemCPUSeconds: 1.4, GCCycles: 8, GCCPUSeconds: 1.6, RuntimeCPUSeconds: 110, AllocBytes: 5500, HeapLiveBytes: 11},
		// Two phase-edge samples 2.9 ms apart, the second a whole 10 ms CPU tick on: folded into one window.
		{Time: at(5.5), UserCPUSeconds: 13.5, SystemCPUSeconds: 1.4, GCCycles: 8, GCCPUSeconds: 1.6, RuntimeCPUSeconds: 111, AllocBytes: 6000, HeapLiveBytes: 11},
		{Time: at(5.5029), UserCPUSeconds: 13.51, SystemCPUSeconds: 1.4, GCCycles: 8, GCCPUSeconds: 1.6, RuntimeCPUSeconds: 111, AllocBytes: 7000, HeapLiveBytes: 11},
		{Time: at(6), UserCPUSeconds: 13.6, SystemCPUSeconds: 1.8, GCCycles: 8, GCCPUSeconds: 1.6, RuntimeCPUSeconds: 112, AllocBytes: 7500, HeapLiveBytes: 11},
		// A new process: the counters went backwards, so the window is dropped and both lines break.
		{Time: at(7), UserCPUSeconds: 0.2, SystemCPUSeconds: 0, GCCycles: 1, GCCPUSeconds: 0, RuntimeCPUSeconds: 2, AllocBytes: 100, HeapLiveBytes: 2},
		{Time: at(8), UserCPUSeconds: 0.6, SystemCPUSeconds: 0, GCCycles: 1, GCCPUSeconds: 0, RuntimeCPUSeconds: 4, AllocBytes: 400, HeapLiveBytes: 2},
	}
	got := deriveSeries(ss, t0, 2, profiles.RateWindow(time.Second))
	want := timeSeries{
		cpu:   [][]tsPoint{{{1, 50}, {2, 20}}, {{5, 50}, {6, 50}}, {{8, 20}}},
		gc:    [][]tsPoint{{{2, 12.5}, {4, 2.5}}},
		heap:  [][]tsPoint{{{0, 7}, {1, 8}, {2, 9}, {3, 9}, {4, 10}, {5, 11}, {5.5, 11}, {5.5029, 11}, {6, 11}, {7, 2}, {8, 2}}},
		alloc: [][]tsPoint{{{1, 2000}, {2, 0}, {3, 500}, {4, 1000}, {5, 1000}, {6, 2000}}, {{8, 300}}},
	}
	for _, c := range []struct {
		name      string
		got, want [][]tsPoint
	}{{"cpu", got.cpu, want.cpu}, {"gc", got.gc, want.gc}, {"heap", got.heap, want.heap}, {"alloc", got.alloc, want.alloc}} {
		if fmt.Sprint(roundSegs(c.got)) != fmt.Sprint(c.want) {
			t.Errorf("%s: got %v, want %v", c.name, roundSegs(c.got), c.want)
		}
	}
}

func roundSegs(segs [][]tsPoint) [][]tsPoint {
	out := make([][]tsPoint, len(segs))
	for i, seg := range segs {
		for _, p := range seg {
			out[i] = append(out[i], tsPoint{math.Round(p.t*1e6) / 1e6, math.Round(p.v*1e6) / 1e6})
		}
	}
	return out
}

func TestReducePointsKeepsSpikes(t *testing.T) {
	ax := timeAxis{lo: 0, hi: 10000}
	seg := make([]tsPoint, 10001)
	for i := range seg {
		seg[i] = tsPoint{float64(i), 1}
	}
	seg[5000].v = 99
	got := reducePoints(seg, ax, chartW-plotLeft-plotRight)
	if len(got) > 3*int(chartW) {
		t.Errorf("got %d points, want at most %d", len(got), 3*int(chartW))
	}
	spike := false
	for i, p := range got {
		spike = spike || p.v == 99
		if i > 0 && p.t < got[i-1].t {
			t.Fatalf("points out of time order at %d", i)
		}
	}
	if !spike {
		t.Errorf("the spike was lost")
	}
}

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 50, "[0 10 20 30 40 50]"},
		{0, 1, "[0 0.2 0.4 0.6 0.8 1]"},
		{-3, 47, "[0 10 20 30 40]"},
	} {
		if got := fmt.Sprint(niceTicks(tc.lo, tc.hi, 5)); got != tc.want {
			t.Errorf("niceTicks(%v, %v): got %s, want %s", tc.lo, tc.hi, got, tc.want)
		}
	}
	top, ticks := niceAxis(37)
	if top != 40 || fmt.Sprint(ticks) != "[0 10 20 30 40]" {
		t.Errorf("niceAxis(37): got %v %v, want 40 [0 10 20 30 40]", top, ticks)
	}
}

var svgPathD = regexp.MustCompile(`<path class="series [^"]*" d="(M[^"]+)"`)

// TestHTMLInChromium loads report.html in a real headless browser: the DOM
// must hold the charts with their path data, and a screenshot must show
// something (not a blank page).
func TestHTMLInChromium(t *testing.T) {
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("skipping the browser test: %s not found (CI installs it; apt-get install -y chromium)", chromium)
	}
	r, s := htmlFixture()
	b, err := r.HTML(s)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, HTMLFile)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir=" + filepath.Join(dir, "profile")}, extra...)
		args = append(args, "file://"+file)
		cmd := exec.CommandContext(ctx, chromium, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.WaitDelay = 10 * time.Second // chromium's helpers may hold the pipes after a kill
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %v: %v\n%s", extra, err, stderr.String())
		}
		return out
	}

	dom := string(run("--dump-dom"))
	if got := strings.Count(dom, "<svg"); got != len(timeChartIDs)+2 {
		t.Errorf("DOM: got %d svg charts, want %d", got, len(timeChartIDs)+2)
	}
	for _, id := range timeChartIDs {
		i := strings.Index(dom, `id="`+id+`"`)
		if i < 0 {
			t.Errorf("DOM lacks chart %s", id)
			continue
		}
		sec := dom[i:]
		if j := strings.Index(sec, "</figure>"); j >= 0 {
			sec = sec[:j]
		}
		m := svgPathD.FindStringSubmatch(sec)
		if m == nil || strings.Count(m[1], "L") < 10 {
			t.Errorf("DOM: chart %s has no path with data", id)
		}
	}
	if !strings.Contains(dom, "mem&lt;&amp;&gt;\"ory") {
		t.Errorf("DOM: the escaped phase name did not come back as text")
	}

	shot := filepath.Join(dir, "shot.png")
	run("--screenshot="+shot, "--window-size=1280,2000", "--hide-scrollbars")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a png: %v", err)
	}
	if img.Bounds().Dx() < 100 || img.Bounds().Dy() < 100 {
		t.Errorf("screenshot is %v, want a full window", img.Bounds())
	}
	if colours := countColours(img, 16); colours < 5 {
		t.Errorf("screenshot has %d colours, want a rendered page (at least 5)", colours)
	}
	if out := os.Getenv("SOAKD_SCREENSHOT"); out != "" { // keep it for a human to look at
		if err := os.WriteFile(out, mustRead(t, shot), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(strings.TrimSuffix(out, ".png")+".html", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// countColours counts distinct colours, stopping at limit.
func countColours(img image.Image, limit int) int {
	seen := map[[4]uint32]bool{}
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y += 3 {
		for x := bd.Min.X; x < bd.Max.X; x += 3 {
			r, g, b, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, b, a}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHTMLLongRun(t *testing.T) {
	r, _ := htmlFixture()
	t0 := r.StartedAt
	r.Phases[0].Start, r.Phases[0].End = t0, t0.Add(3*time.Hour)
	r.Phases[1].Start, r.Phases[1].End = t0.Add(3*time.Hour), t0.Add(6*time.Hour)
	r.Phases = r.Phases[:2]
	s := fixtureSamples(t0, 6*3600, time.Second)
	b, err := r.HTML(s)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if len(b) > 1<<20 {
		t.Errorf("report.html is %d bytes for 6 h of samples, want under 1 MiB (series must be reduced)", len(b))
	}
	sec := chartSection(t, page, "chart-heap")
	m := seriesPath.FindStringSubmatch(sec)
	if m == nil {
		t.Fatal("heap chart has no series")
	}
	if pts := strings.Count(m[1], "L") + 1; pts > 3*int(chartW) || pts < 100 {
		t.Errorf("heap series has %d points, want between 100 and %d", pts, 3*int(chartW))
	}
	for _, want := range []string{">0 h<", ">3 h<", ">6 h<", "(hours)"} {
		if !strings.Contains(sec, want) {
			t.Errorf("6 h time axis lacks %q", want)
		}
	}
}

func TestHTMLSeriesWithoutData(t *testing.T) {
	r, s := htmlFixture()
	for i := range s.Samples {
		s.Samples[i].GCCycles = 7 // no cycle ends: GC % cannot be computed
		s.Samples[i].ProcMissing = true
	}
	b, err := r.HTML(s)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for id, want := range map[string]string{
		"chart-gc":  "no data: no GC cycle ended between two samples",
		"chart-cpu": "no data: no window with the OS CPU times read at both ends",
	} {
		sec := chartSection(t, page, id)
		if !strings.Contains(sec, want) || seriesPath.MatchString(sec) {
			t.Errorf("%s: want the message %q and no series", id, want)
		}
	}
	if !seriesPath.MatchString(chartSection(t, page, "chart-heap")) {
		t.Errorf("chart-heap: the heap series must still be drawn")
	}
}

var yTickLabel = regexp.MustCompile(`<text class="ytick"[^>]*>([0-9.]+) ([^<]*)</text>`)

// topYTick returns the value and unit of the highest y tick of a chart section.
func topYTick(t *testing.T, sec string) (float64, string) {
	t.Helper()
	top, unit := math.Inf(-1), ""
	for _, m := range yTickLabel.FindAllStringSubmatch(sec, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatalf("y tick %q: %v", m[0], err)
		}
		if v > top {
			top, unit = v, m[2]
		}
	}
	if math.IsInf(top, -1) {
		t.Fatalf("no y ticks in %.200s…", sec)
	}
	return top, unit
}

// TestHTMLRatesStayPhysical draws a target keeping both cores busy, sampled
// every second plus phase-edge pairs 2.9 ms apart, with CPU times that move in
// whole 10 ms ticks (user and system truncated separately, as Linux reports
// them) and an allocation counter that moves in 4 MiB steps, one of which
// falls between each pair: rates between samples that close read up to 345 %
// of the machine and over 1 GiB/s. The charts must show neither.
func TestHTMLRatesStayPhysical(t *testing.T) {
	r, _ := htmlFixture()
	t0 := r.StartedAt
	const cores, allocRate, allocStep = 2, 40e6, 4 << 20
	sample := func(off time.Duration) profiles.Sample {
		cpu := off.Seconds() * cores // fully busy
		tick := profiles.CPUTick.Seconds()
		return profiles.Sample{Time: t0.Add(off), FDs: -1, Threads: -1,
			UserCPUSeconds:   math.Floor(cpu*0.7/tick) * tick,
			SystemCPUSeconds: math.Floor(cpu*0.3/tick) * tick,
			AllocBytes:       uint64(math.Floor(off.Seconds()*allocRate/allocStep)) * allocStep}
	}
	s := &Samples{}
	for sec := range 51 {
		off := time.Duration(sec) * time.Second
		s.Samples = append(s.Samples, sample(off))
		if sec%5 == 2 {
			// 1 ms before the allocation counter's next step after off + 400 ms.
			next := math.Ceil((off.Seconds() + 0.4) * allocRate / allocStep)
			edge := time.Duration(next*allocStep/allocRate*float64(time.Second)) - time.Millisecond
			s.Samples = append(s.Samples, sample(edge), sample(edge+2900*time.Microsecond))
		}
	}
	b, err := r.HTML(s)
	if err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(string(b))
	cpu := chartSection(t, page, "chart-cpu")
	if top, unit := topYTick(t, cpu); unit != "%" || top > 100 {
		t.Errorf("cpu chart: the y axis reaches %v %s, want at most 100 %%", top, unit)
	}
	if !seriesPath.MatchString(cpu) {
		t.Errorf("cpu chart: no series drawn for a fully busy target")
	}
	if !strings.Contains(cpu, "at least 750 ms") {
		t.Errorf("cpu chart: the caption does not give the 750 ms window: %s", cpu[strings.Index(cpu, "<figcaption>"):])
	}
	alloc := chartSection(t, page, "chart-alloc")
	if top, unit := topYTick(t, alloc); unit != "MiB/s" || top > 60 {
		t.Errorf("allocation chart: the y axis reaches %v %s, want at most 60 MiB/s for a steady %.0f MiB/s",
			top, unit, allocRate/(1<<20))
	}
	if !strings.Contains(alloc, "at least 750 ms") {
		t.Errorf("allocation chart: the caption does not give the 750 ms window")
	}
}
