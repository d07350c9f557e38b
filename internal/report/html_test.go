package report

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

const (
	trickyPhase  = `mem<&>"ory`
	hostilePhase = `</script><script>alert("x")</script><!--`
)

var (
	targetChartIDs = []string{"chart-cpu", "chart-gc", "chart-heap", "chart-alloc"}
	driverChartIDs = []string{"chart-throughput", "chart-latency-time", "chart-errors"}
	phaseChartIDs  = []string{"chart-latency", "chart-pauses"}
)

// progressSeries records n reports a second apart of a phase completing
// rps requests a second with errEvery-th second adding an error, each
// report with the interval latency fixtureLatency(i) except the fourth,
// in which no request succeeded.
func progressSeries(n int, rps int64, users int64, errEvery int) *DriverSeries {
	var rec SeriesRecorder
	var req, errs int64
	for i := 1; i <= n; i++ {
		req += rps
		if errEvery > 0 && i%errEvery == 0 {
			errs++
		}
		pr := workloads.Progress{ElapsedSeconds: float64(i), Requests: req, Errors: errs, ActiveUsers: users}
		if i != 4 {
			l := fixtureLatency(i)
			pr.IntervalLatency = &l
		}
		rec.Add(pr)
	}
	return rec.Series()
}

// fixtureLatency is report i's interval latency in progressSeries.
func fixtureLatency(i int) workloads.IntervalLatency {
	p50 := 1 + 0.5*float64(i%3)
	return workloads.IntervalLatency{Count: 100, P50Ms: p50, P90Ms: 2 * p50, P99Ms: 4 + float64(i%5), MaxMs: 20}
}

// htmlFixture is richFixture with the phases one after the other, a third
// phase whose name needs escaping, driver progress, GC pauses, an overhead
// breakdown, and samples every half second over the whole run.
func htmlFixture() (*Report, *Samples) {
	r := richFixture(kpi.GateInterval)
	t0 := r.StartedAt
	r.Phases[0].Start, r.Phases[0].End = t0.Add(2*time.Second), t0.Add(22*time.Second)
	r.Phases[1].Start, r.Phases[1].End = t0.Add(25*time.Second), t0.Add(45*time.Second)
	for i := range r.Phases {
		r.Phases[i].DriverSeries = progressSeries(20, 4000, 80, 5*(i+1))
		res := *r.Phases[i].Resources
		res.GCPauses, res.GCPauseP50Ms, res.GCPauseMaxMs = 40, 0.1, 4
		r.Phases[i].Resources = &res
	}
	mem := r.Phases[1]
	mem.Name, mem.Arm = trickyPhase, "graphql"
	mem.Start, mem.End = t0.Add(47*time.Second), t0.Add(50*time.Second)
	mem.Resources = nil
	mem.ResourcesError = "fewer than 2 samples <in window>"
	mem.DriverSeries = progressSeries(3, 100, 15, 0)
	r.Phases = append(r.Phases, mem)
	r.Overhead, r.OverheadBasis = overheadFixture()
	r.Pinning = &Pinning{TargetCPUs: []int{0}, DriverCPUs: []int{1}}
	return r, fixtureSamples(t0, 101, 500*time.Millisecond)
}

// allSectionsFixture is htmlFixture with every section report.md can
// have: a max-load phase with its knee, an open-model phase, subscriptions,
// the return to rest, a target soakd does not host and its figures' sources.
func allSectionsFixture() (*Report, *Samples) {
	r, s := htmlFixture()
	t0 := r.StartedAt
	share := func(v float64) *float64 { return &v }
	ml := &MaxLoad{MaxLoadResult: workloads.MaxLoadResult{Reason: workloads.ReasonP99Latency, Detail: "p99 31 ms > 20 ms", Failed: true,
		UsersAtFailure: 120, FailureAt: t0.Add(58 * time.Second), PeakThroughputRPS: 9100, PeakUsers: 100,
		PeakWindowStart: t0.Add(53 * time.Second), PeakWindowEnd: t0.Add(56 * time.Second)},
		PeakResources: &profiles.Summary{CPUMachinePercent: 91, CPUCorePercent: 182, RSSBytesMax: 30 << 20}}
	for sec := 1; sec <= 7; sec++ {
		ml.Chart = append(ml.Chart, kpi.KneePoint{TSeconds: float64(sec), Users: 20 * sec, RPS: 1500 * float64(sec), P99Ms: 2 * float64(sec*sec),
			DriverCPUShare: share(0.05 * float64(sec)), TargetCPUShare: share(0.14 * float64(sec)), ErrorRatio: 0})
	}
	ml.Knee = &kpi.Knee{Attribution: kpi.KneeTarget, Resource: "target CPU", AtT: 6, Users: 120, RPS: 9000, Reason: "the target's CPUs saturated"}
	maxLoad := Phase{Name: "max-load-rest", Arm: "rest", Model: "ramping", Start: t0.Add(52 * time.Second), End: t0.Add(59 * time.Second),
		Requests: 40000, ThroughputRPS: 9100, LatencyMs: workloads.Latency{P50: 1, P90: 5, P99: 20, P999: 30, Max: 50},
		MaxLoad: ml, DriverSeries: progressSeries(7, 6000, 100, 0)}
	open := Phase{Name: "open-graphql", Arm: "graphql", Model: "open", Start: t0.Add(60 * time.Second), End: t0.Add(70 * time.Second),
		Requests: 5000, ThroughputRPS: 500, LatencyMs: workloads.Latency{P50: 1, P90: 2, P99: 3, P999: 4, Max: 9},
		Open: &workloads.OpenResult{IntendedRateRPS: 500, AchievedRateRPS: 490, Arrivals: 5000, Sent: 4900, Dropped: 100, LateThresholdMs: 10}}
	var rec SeriesRecorder
	for i := 1; i <= 10; i++ {
		rec.Add(workloads.Progress{ElapsedSeconds: float64(i), Requests: int64(490 * i), ActiveUsers: 3, Dropped: int64(10 * i)})
	}
	open.DriverSeries = rec.Series()
	r.Phases[1].Subscriptions = &workloads.SubscriptionResult{Clients: 5, Subscriptions: 10, Expected: 100, Received: 100, LatencyNote: "publish-to-receive"}
	r.Phases[0].After = &After{BaselineGoroutines: 10, Goroutines: 11, Returned: true}
	r.Phases[1].After = &After{BaselineGoroutines: 10, Goroutines: 40, Subscribers: 2, Returned: false}
	r.Phases = append(r.Phases, maxLoad, open)
	r.Phases[1].Database = &Database{Endpoints: []string{"graphql_batched"}, HTTPRequests: 100, Queries: 250, Rows: 9000, Seconds: 0.5,
		CallsPerRequest: 1, QueriesPerRequest: 2.5, RowsPerRequest: 90, MsPerRequest: 5}
	r.Seed000 = &Seed000{
		Rows: []Seed000Row{{Operation: "users-tasks-250", Shape: "Single has many", X: 250, Strategy: "batched", Phase: r.Phases[1].Name,
			ConfigOperation: "rel-users-tasks-250-batched", Users: 20, Requests: 500, RPS: 41.5, LatencyMs: workloads.Latency{Mean: 480, P50: 470, P90: 530, P99: 610, Max: 650}}},
		Phases:    []Seed000Phase{{Phase: r.Phases[1].Name, Strategy: "batched", Operations: []string{"users-tasks-250"}}},
		Published: relational.PublishedResults()[2:4],
	}
	r.Target = &TargetInfo{Kind: TargetAttach, PID: 4242, GraphQLURL: "http://127.0.0.1:1/graphql", Figures: []FigureSource{
		{Name: "cpu_seconds", Source: "os: gopsutil, pid 4242", Definition: "user + system CPU", Measured: true},
		{Name: "gc_percent", Source: "series go_gc_cpu", Definition: "GC share", Reason: "no such series"},
	}}
	r.Checks = append(r.Checks,
		Check{Group: "delivery", Name: "exactly_once", Title: "Every event once", Phase: "graphql-load", Unit: "events", Pass: true, Definition: "lost + duplicated"},
		Check{Group: "rest", Name: "returned", Title: "Returned to rest", Phase: "graphql-load", Unit: "goroutines", Value: 30, Limit: 2, Definition: "goroutines after − before"})
	r.Flame = &profiles.IcicleNode{Name: "all", REST: 100, GraphQL: 200, Children: []*profiles.IcicleNode{
		{Name: "net/http.(*conn).serve", REST: 90, GraphQL: 150, Children: []*profiles.IcicleNode{
			{Name: "github.com/99designs/gqlgen/graphql/executor.(*Executor).DispatchOperation", GraphQL: 110},
			{Name: "encoding/json.Marshal", REST: 40, GraphQL: 30},
		}},
		{Name: "runtime.gcBgMarkWorker", REST: 10, GraphQL: 50},
	}}
	return r, s
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

func render(t *testing.T, r *Report, s *Samples) string {
	t.Helper()
	b, err := r.HTML(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var dataBlob = regexp.MustCompile(`(?s)<script id="soakd-data" type="application/json">(.*?)</script>`)

// pageData decodes the page's chart data.
func pageData(t *testing.T, page string) (chartData, map[string]chartSpec) {
	t.Helper()
	m := dataBlob.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("report.html has no chart data")
	}
	var raw struct {
		TimeRange [2]float64 `json:"time_range"`
		Phases    []chartPhase
		Charts    []struct {
			chartSpec
			X      []*float64 `json:"x"`
			Series []struct {
				chartSeries
				Y []*float64 `json:"y"`
			} `json:"series"`
		} `json:"charts"`
	}
	if err := json.Unmarshal([]byte(m[1]), &raw); err != nil {
		t.Fatalf("chart data is not JSON: %v", err)
	}
	unnull := func(v []*float64) nums {
		out := make(nums, len(v))
		for i, p := range v {
			out[i] = math.NaN()
			if p != nil {
				out[i] = *p
			}
		}
		return out
	}
	cd := chartData{TimeRange: raw.TimeRange, Phases: raw.Phases}
	byID := map[string]chartSpec{}
	for _, c := range raw.Charts {
		spec := c.chartSpec
		spec.X, spec.Series = unnull(c.X), nil
		for _, s := range c.Series {
			cs := s.chartSeries
			cs.Y = unnull(s.Y)
			if len(cs.Y) != len(spec.X) {
				t.Errorf("%s: series %s has %d values for %d x values", spec.ID, cs.Label, len(cs.Y), len(spec.X))
			}
			spec.Series = append(spec.Series, cs)
		}
		cd.Charts = append(cd.Charts, spec)
		byID[spec.ID] = spec
	}
	return cd, byID
}

// defined counts the values that are not gaps.
func defined(v nums) int {
	n := 0
	for _, x := range v {
		if !math.IsNaN(x) {
			n++
		}
	}
	return n
}

// chartFrame returns the <figure> of chart id.
func chartFrame(t *testing.T, page, id string) string {
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

var (
	mdHeading   = regexp.MustCompile(`(?m)^#{2,3} (.+)$`)
	htmlHeading = regexp.MustCompile(`(?s)<h[23][^>]*>(.*?)</h[23]>`)
	tag         = regexp.MustCompile(`<[^>]+>`)
)

// missingSections returns report.md's ## and ### headings that report.html
// does not have as <h2> or <h3>, or has out of report.md's order.
func missingSections(md, page string) []string {
	var have []string
	for _, m := range htmlHeading.FindAllStringSubmatch(page, -1) {
		have = append(have, strings.TrimSpace(html.UnescapeString(tag.ReplaceAllString(m[1], ""))))
	}
	var missing []string
	at := 0
	for _, m := range mdHeading.FindAllStringSubmatch(md, -1) {
		want := mdPlain(strings.TrimSpace(m[1]))
		i := slices.Index(have[at:], want)
		if i < 0 {
			if slices.Contains(have, want) {
				want += " (out of order)"
			}
			missing = append(missing, want)
			continue
		}
		at += i + 1
	}
	return missing
}

// TestHTMLHasEverySection: report.html has every section report.md has,
// under the same heading and in the same order, for reports with every
// kind of section, an aborted one and a running one.
func TestHTMLHasEverySection(t *testing.T) {
	all, s := allSectionsFixture()
	rich, _ := htmlFixture()
	aborted := &Report{Run: "r1", Profile: "p", Status: StatusAborted, Verdict: kpi.OutcomeAborted, Error: "target <exited>"}
	running := fixture()
	running.Status, running.Verdict, running.KPIs = StatusRunning, kpi.OutcomeRunning, nil
	for name, r := range map[string]*Report{"all sections": all, "rich": rich, "aborted": aborted, "running": running} {
		t.Run(name, func(t *testing.T) {
			md := r.Markdown()
			page := render(t, r, s)
			if miss := missingSections(md, page); len(miss) > 0 {
				t.Errorf("report.html lacks report.md's sections %q", miss)
			}
		})
	}
	md, page := all.Markdown(), render(t, all, s)
	for _, want := range []string{"Max load: max-load-rest", "Open model: open-graphql", "Subscriptions during graphql-load",
		"Back to rest after each phase", "Where the resource figures come from", "Memory profile verdict", "Subscription delivery",
		"Compared phases", "Return to rest", "Where the overhead goes", "Notes", trickyPhase + ": problems",
		"Seed 000", "Seed 000: soakd's measurement", "Seed 000: cost per request", "Seed 000: the seed's published figures (theirs, not this run's)"} {
		if !strings.Contains(md, "# "+mdText(want)+"\n") {
			t.Errorf("the fixture's report.md lacks the section %q: the test no longer covers it", want)
		}
	}
	// The comparison itself must catch a missing or reordered section.
	cut := strings.Replace(page, "<h2>Max load: max-load-rest</h2>", "", 1)
	if miss := missingSections(md, cut); !slices.Equal(miss, []string{"Max load: max-load-rest"}) {
		t.Errorf("with the max-load heading removed: got missing %q", miss)
	}
	i, j := strings.Index(page, "<h2>Notes</h2>"), strings.Index(page, "<h2>Memory profile verdict</h2>")
	swapped := page[:j] + "<h2>Notes</h2>" + page[j+len("<h2>Memory profile verdict</h2>"):i] + "<h2>Memory profile verdict</h2>" + page[i+len("<h2>Notes</h2>"):]
	if miss := missingSections(md, swapped); len(miss) == 0 {
		t.Errorf("sections out of order went unnoticed")
	}
}

// TestHTMLContent: the sections carry report.md's figures and sentences.
func TestHTMLContent(t *testing.T) {
	r, s := allSectionsFixture()
	page := render(t, r, s)
	text := html.UnescapeString(page)
	for _, want := range []string{
		`class="verdict fail"`, "Verdict: FAIL",
		"+13.00 points", "≤ +5 points", "3 of 80000 requests failed",
		"encoding/json.Marshal", "160 / 367", "~ (1 sample, within noise)",
		"merged over 4 rounds (1,234 REST and 2,345 GraphQL samples at 100 Hz",
		"Knee: target (target CPU ran out) at 6 s, 120 users, 9000 req/s: the target's CPUs saturated.",
		"Outcome: failed (p99_latency): p99 31 ms > 20 ms.", "Users at failure: 120.",
		"Target at the peak: CPU 91.0 % of the machine",
		"Intended 500.0 req/s, achieved 490.0 req/s; 5000 arrivals, 4900 sent, 100 dropped",
		"Expected is, for every subscription, the successful mutations of the id it follows.",
		"10 → 40", "not measured: no such series", "Target: attach, pid 4242",
		"CPU affinity: target on CPUs [0], drivers on CPUs [1].",
		"Smallest effect detectable (80 % power)", "Definitions:", "least-squares slope of the live heap after GC",
		"Resources could not be summarised: fewer than 2 samples <in window>",
		"Shaded bands are the phases",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	for _, want := range []string{"mem&lt;&amp;&gt;&#34;ory", "Live heap &lt;trend&gt; &amp; drift"} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks the escaped %q", want)
		}
	}
	if strings.Contains(page, trickyPhase) || strings.Contains(page, "<in window>") {
		t.Errorf("report.html contains unescaped text")
	}
	for _, id := range slices.Concat(targetChartIDs, driverChartIDs, phaseChartIDs, []string{"chart-knee-3", "chart-knee-3-cpu"}) {
		if f := chartFrame(t, page, id); !strings.Contains(f, "<figcaption>") || !strings.Contains(f, `data-chart="`+id+`"`) {
			t.Errorf("%s: no caption or no place to draw: %s", id, f)
		}
	}
}

// TestHTMLChartData checks the charts' data: every chart's series, the
// driver's rates from its cumulative counts, the knee chart's axis and marks.
func TestHTMLChartData(t *testing.T) {
	r, s := allSectionsFixture()
	cd, byID := pageData(t, render(t, r, s))
	if len(cd.Phases) != len(r.Phases) || cd.Phases[0].Name != "rest-control" || cd.Phases[0].Start != 2 || cd.Phases[0].End != 22 {
		t.Errorf("phase bands: got %+v", cd.Phases)
	}
	for _, id := range targetChartIDs {
		c := byID[id]
		if c.XKind != "time" || len(c.Series) != 1 || defined(c.Series[0].Y) < 10 {
			t.Errorf("%s: want a time chart with one series of at least 10 points, got %+v", id, c)
		}
	}
	th := byID["chart-throughput"]
	if len(th.Series) != 2 || th.Series[0].Unit != "req/s" || th.Series[1].Label != "active users" {
		t.Fatalf("throughput chart: got %+v", th.Series)
	}
	// rest-control starts at 2 s: one report a second of 4000 more requests.
	if th.X[0] != 3 || th.Series[0].Y[0] != 4000 || th.Series[0].Y[5] != 4000 || th.Series[1].Y[0] != 80 {
		t.Errorf("throughput: got x %v, y %v", th.X[:6], th.Series[0].Y[:6])
	}
	if gaps := len(th.X) - defined(th.Series[0].Y); gaps != len(r.Phases)-1 {
		t.Errorf("throughput: got %d breaks, want one between each two phases", gaps)
	}
	lt := byID["chart-latency-time"]
	if lt.XKind != "time" || !lt.Log || len(lt.Series) != 2 || lt.Series[0].Label != "p50" || lt.Series[1].Label != "p99" || lt.Series[1].Unit != "ms" {
		t.Fatalf("latency over time: got %+v", lt)
	}
	if fmt.Sprint(lt.X) != fmt.Sprint(th.X) {
		t.Errorf("latency over time: x differs from the throughput chart's")
	}
	// rest-control's first report (at 3 s) and its fourth, in which no request succeeded.
	if l := fixtureLatency(1); lt.Series[0].Y[0] != l.P50Ms || lt.Series[1].Y[0] != l.P99Ms || lt.Series[1].Y[4] != fixtureLatency(5).P99Ms {
		t.Errorf("latency over time: got p50 %v, p99 %v", lt.Series[0].Y[:6], lt.Series[1].Y[:6])
	}
	if !math.IsNaN(lt.Series[0].Y[3]) || !math.IsNaN(lt.Series[1].Y[3]) {
		t.Errorf("latency over time: a report without a successful request must be a gap, got %v and %v", lt.Series[0].Y[3], lt.Series[1].Y[3])
	}
	// The open phase's reports carry no latency: its points are gaps too.
	if last := lt.Series[1].Y[len(lt.X)-1]; !math.IsNaN(last) {
		t.Errorf("latency over time: the open phase has no latency, got %v", last)
	}
	errs := byID["chart-errors"]
	if got := errs.Series[0].Y[4]; got != 1 { // rest-control: an error every 5 s
		t.Errorf("errors at 5 s: got %v /s, want 1", got)
	}
	if len(errs.Series) != 2 || errs.Series[1].Label != "dropped arrivals" || errs.Series[1].Y[len(errs.X)-1] != 10 {
		t.Errorf("errors chart: want the open phase's dropped arrivals at 10/s, got %+v", errs.Series)
	}
	lat := byID["chart-latency"]
	if !lat.Log || len(lat.XCategories) != 5 || len(lat.Series) != len(r.Phases) || lat.Series[0].Y[2] != 1.5 {
		t.Errorf("latency chart: got %+v", lat)
	}
	if p := byID["chart-pauses"]; len(p.Series) != 2 {
		t.Errorf("pause chart: got %d series, want the 2 phases with pauses", len(p.Series))
	}
	knee := byID["chart-knee-3"]
	if knee.XKind != "value" || knee.XLabel != "active users" || !slices.Equal(knee.X, nums{20, 40, 60, 80, 100, 120, 140}) {
		t.Errorf("knee chart x: got %s %v", knee.XLabel, knee.X)
	}
	var labels []string
	for _, m := range knee.Marks {
		labels = append(labels, fmt.Sprintf("%s@%g", m.Label, m.X))
	}
	if want := []string{"peak 9100 req/s@80", "failure: p99_latency@120", "knee: target (target CPU)@120"}; !slices.Equal(labels, want) {
		t.Errorf("knee marks: got %q, want %q", labels, want)
	}
	cpu := byID["chart-knee-3-cpu"]
	if len(cpu.Series) != 3 || math.Abs(cpu.Series[1].Y[6]-98) > 1e-9 {
		t.Errorf("knee cpu chart: got %+v", cpu.Series)
	}
}

// TestHTMLKneeByArrivalRate: a ramping-rate phase's knee chart is drawn
// against the intended arrival rate.
func TestHTMLKneeByArrivalRate(t *testing.T) {
	r, s := allSectionsFixture()
	ml := r.Phases[3].MaxLoad
	for i := range ml.Chart {
		ml.Chart[i].ArrivalRPS = 1000 * float64(i+1)
	}
	_, byID := pageData(t, render(t, r, s))
	if k := byID["chart-knee-3"]; k.XLabel != "intended arrival rate (req/s)" || k.X[6] != 7000 {
		t.Errorf("got %s %v", k.XLabel, k.X)
	}
}

// TestHTMLScriptInjection: a phase name, an error example and a flame
// graph frame that try to close the data's <script> element stay data.
func TestHTMLScriptInjection(t *testing.T) {
	r, s := allSectionsFixture()
	r.Phases[0].Name = hostilePhase
	r.Phases[0].ErrorsByClass = map[string]int64{"http_500": 1}
	r.Phases[0].ErrorExamples = map[string][]string{"http_500": {"</SCRIPT><img src=x onerror=alert(1)>"}}
	r.Flame.Children[0].Name = "</SCRIPT><img src=x onerror=alert(1)>" // a function name is a server's text
	page := render(t, r, s)
	if got := strings.Count(strings.ToLower(page), "</script"); got != 4 {
		t.Errorf("got %d </script, want 4 (data, flame graph, uPlot, charts)", got)
	}
	if strings.Contains(page, "<img") || strings.Contains(page, "<script>alert") {
		t.Errorf("hostile text was not escaped")
	}
	cd, _ := pageData(t, page)
	if cd.Phases[0].Name != hostilePhase {
		t.Errorf("the phase name did not survive as data: %q", cd.Phases[0].Name)
	}
}

func TestHTMLSelfContained(t *testing.T) {
	r, s := allSectionsFixture()
	page := strings.ToLower(render(t, r, s))
	// uPlot's own header comment names its home page; nothing else may.
	lib := strings.ToLower(uplotJS)
	if strings.Count(page, lib) != 1 {
		t.Fatalf("the page does not embed uPlot once")
	}
	// The fixture's target URLs are text, not links.
	rest := strings.ReplaceAll(strings.Replace(page, lib, "", 1), "http://127.0.0.1:1/graphql", "")
	for _, bad := range []string{"http://", "https://", " src=", " href=", "url(", "@import", "//cdn", "<link", "<img", "<iframe", "<object", "<embed"} {
		if i := strings.Index(rest, bad); i >= 0 {
			t.Errorf("report.html contains %q (…%s…): it must work offline", bad, rest[max(0, i-60):min(len(rest), i+60)])
		}
	}
	for _, bad := range []string{"fetch(", "xmlhttprequest", "import(", "</script", "<!--", "websocket"} {
		if strings.Contains(lib, bad) || strings.Contains(strings.ToLower(chartScript), bad) {
			t.Errorf("the charts' script contains %q", bad)
		}
	}
}

// TestUPlotVendored: the embedded uPlot is the release VERSION names,
// byte for byte.
func TestUPlotVendored(t *testing.T) {
	version := string(mustRead(t, filepath.Join("uplot", "VERSION")))
	m := regexp.MustCompile(`uPlot (\d+\.\d+\.\d+)`).FindStringSubmatch(version)
	if m == nil || !strings.HasPrefix(uplotJS, "/*! https://github.com/leeoniya/uPlot (v"+m[1]+") */") {
		t.Errorf("uplot/VERSION names %v, the script's header is %.60q", m, uplotJS)
	}
	for name, body := range map[string]string{"uPlot.iife.min.js": uplotJS, "uPlot.min.css": uplotCSS} {
		sum := sha256.Sum256([]byte(body))
		if want := hex.EncodeToString(sum[:]) + "  " + name; !strings.Contains(version, want) {
			t.Errorf("uplot/VERSION lacks %q", want)
		}
	}
	if !strings.Contains(string(mustRead(t, filepath.Join("uplot", "LICENSE"))), "MIT License") {
		t.Errorf("uplot/LICENSE is not uPlot's MIT licence")
	}
}

func TestHTMLWithoutSamples(t *testing.T) {
	r, _ := htmlFixture()
	for _, s := range []*Samples{nil, {}, {Samples: fixtureSamples(r.StartedAt, 1, time.Second).Samples}} {
		page := render(t, r, s)
		cd, byID := pageData(t, page)
		for _, id := range targetChartIDs {
			if f := chartFrame(t, page, id); !strings.Contains(f, ">"+noSamplesTx+"<") {
				t.Errorf("%s: got no %q message without samples", id, noSamplesTx)
			}
			if _, ok := byID[id]; ok {
				t.Errorf("%s: got chart data without samples", id)
			}
		}
		if len(cd.Phases) != len(r.Phases) {
			t.Errorf("got %d phase bands, want %d", len(cd.Phases), len(r.Phases))
		}
		if _, ok := byID["chart-throughput"]; !ok {
			t.Errorf("the driver's charts need no samples")
		}
	}
}

func TestHTMLWithoutDriverSeries(t *testing.T) {
	r, s := htmlFixture()
	for i := range r.Phases {
		r.Phases[i].DriverSeries = nil
	}
	page := render(t, r, s)
	for _, id := range driverChartIDs {
		if f := chartFrame(t, page, id); !strings.Contains(f, "no driver progress in this report") {
			t.Errorf("%s: no message for a report without driver progress", id)
		}
	}

	// Progress from a driver that sent no latency: throughput, no latency.
	for i := range r.Phases {
		var rec SeriesRecorder
		for sec := 1; sec <= 5; sec++ {
			rec.Add(workloads.Progress{ElapsedSeconds: float64(sec), Requests: int64(100 * sec), ActiveUsers: 4})
		}
		r.Phases[i].DriverSeries = rec.Series()
	}
	page = render(t, r, s)
	_, byID := pageData(t, page)
	if f := chartFrame(t, page, "chart-latency-time"); !strings.Contains(f, "no latency over time in this report") || byID["chart-latency-time"].ID != "" {
		t.Errorf("chart-latency-time: want a message and no chart data without latency, got %s", f)
	}
	if byID["chart-throughput"].ID == "" {
		t.Errorf("chart-throughput: must still be drawn")
	}
}

func TestHTMLAborted(t *testing.T) {
	r := &Report{Run: "r1", Profile: "p", Status: StatusAborted, Verdict: kpi.OutcomeAborted, Error: "target <exited>"}
	page := render(t, r, nil)
	for _, want := range []string{`class="verdict aborted"`, "target &lt;exited&gt;", "No KPIs were evaluated"} {
		if !strings.Contains(page, want) {
			t.Errorf("aborted report lacks %q", want)
		}
	}
}

func TestSeriesRecorder(t *testing.T) {
	var rec SeriesRecorder
	if rec.Series() != nil {
		t.Errorf("no report: want no series")
	}
	const n = 3*MaxDriverSeriesPoints + 7
	for i := 1; i <= n; i++ {
		rec.Add(workloads.Progress{ElapsedSeconds: float64(i), Requests: int64(10 * i), Errors: int64(i / 100), ActiveUsers: 5})
	}
	s := rec.Series()
	if len(s.TSeconds) > MaxDriverSeriesPoints || len(s.TSeconds) < MaxDriverSeriesPoints/2 {
		t.Fatalf("got %d points, want between %d and %d", len(s.TSeconds), MaxDriverSeriesPoints/2, MaxDriverSeriesPoints)
	}
	for i := 1; i < len(s.TSeconds); i++ {
		if d := s.TSeconds[i] - s.TSeconds[i-1]; d != 4 {
			t.Fatalf("points %d and %d are %v s apart, want an even 4 s", i-1, i, d)
		}
		if s.Requests[i] != int64(10*s.TSeconds[i]) {
			t.Fatalf("point %d: %d requests at %v s, want the cumulative count", i, s.Requests[i], s.TSeconds[i])
		}
	}
	if last := s.TSeconds[len(s.TSeconds)-1]; last < n-4 {
		t.Errorf("the last point is at %v s, want within one stride of %d", last, n)
	}
	if s.Dropped != nil || len(s.Errors) != len(s.TSeconds) || len(s.ActiveUsers) != len(s.TSeconds) {
		t.Errorf("columns: got %d errors, %d users, dropped %v", len(s.Errors), len(s.ActiveUsers), s.Dropped)
	}
	if s.LatencyCount != nil || s.LatencyP99Ms != nil {
		t.Errorf("no report carried latency: want no latency columns, got %d and %d values", len(s.LatencyCount), len(s.LatencyP99Ms))
	}
}

// TestSeriesRecorderLatency: through the halving cap, each point's latency
// covers every report since the previous point: counts add up, the max is
// the largest, each percentile the largest of the reports' (an upper
// bound), a spike in a report left out still shows, and a span without a
// successful request is null.
func TestSeriesRecorderLatency(t *testing.T) {
	const n = 3*MaxDriverSeriesPoints + 7
	lat := func(i int) *workloads.IntervalLatency {
		switch {
		case i >= 2001 && i <= 2008: // no request succeeded for 8 s
			return nil
		case i == 1001: // a spike in a report the cap leaves out
			return &workloads.IntervalLatency{Count: 1, P50Ms: 900, P90Ms: 900, P99Ms: 900, MaxMs: 950}
		}
		p50 := 1 + float64(i%7)
		return &workloads.IntervalLatency{Count: int64(i%3 + 1), P50Ms: p50, P90Ms: p50 + 1, P99Ms: p50 + float64(i%11), MaxMs: p50 + 20}
	}
	var rec SeriesRecorder
	for i := 1; i <= n; i++ {
		rec.Add(workloads.Progress{ElapsedSeconds: float64(i), Requests: int64(i), IntervalLatency: lat(i)})
	}
	s := rec.Series()
	cols := [][]*float64{s.LatencyP50Ms, s.LatencyP90Ms, s.LatencyP99Ms, s.LatencyMaxMs}
	for _, c := range cols {
		if len(c) != len(s.TSeconds) || len(s.LatencyCount) != len(s.TSeconds) {
			t.Fatalf("latency columns: got %d and %d values for %d points", len(c), len(s.LatencyCount), len(s.TSeconds))
		}
	}
	prev, nulls, spike := 0, 0, false
	for k, ts := range s.TSeconds {
		var want workloads.IntervalLatency
		for i := prev + 1; i <= int(ts); i++ {
			if l := lat(i); l != nil {
				want = mergeLatency(want, *l)
			}
		}
		prev = int(ts)
		if s.LatencyCount[k] != want.Count {
			t.Fatalf("point %d (%v s): count %d, want %d", k, ts, s.LatencyCount[k], want.Count)
		}
		if want.Count == 0 {
			nulls++
			for _, c := range cols {
				if c[k] != nil {
					t.Fatalf("point %d (%v s): got %v, want null without a successful request", k, ts, *c[k])
				}
			}
			continue
		}
		got := workloads.IntervalLatency{Count: want.Count, P50Ms: *s.LatencyP50Ms[k], P90Ms: *s.LatencyP90Ms[k], P99Ms: *s.LatencyP99Ms[k], MaxMs: *s.LatencyMaxMs[k]}
		if got != want {
			t.Fatalf("point %d (%v s): got %+v, want %+v", k, ts, got, want)
		}
		spike = spike || got.MaxMs == 950
	}
	if nulls == 0 || !spike {
		t.Errorf("got %d null points and spike %v: want the 8 s without success null and the spike kept", nulls, spike)
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
	x, y := segmentsXY(got.cpu, 0, 8)
	if fmt.Sprint(x) != "[1 2 3.5 5 6 7 8]" || defined(y) != 5 {
		t.Errorf("segments on one axis: got x %v, y %v", x, y)
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
	seg := make([]tsPoint, 10001)
	for i := range seg {
		seg[i] = tsPoint{float64(i), 1}
	}
	seg[5000].v = 99
	got := reducePoints(seg, 0, 10000)
	if len(got) > 3*reduceColumns+3 {
		t.Errorf("got %d points, want at most %d", len(got), 3*reduceColumns+3)
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

func TestHTMLLongRun(t *testing.T) {
	r, _ := htmlFixture()
	t0 := r.StartedAt
	r.Phases[0].Start, r.Phases[0].End = t0, t0.Add(3*time.Hour)
	r.Phases[1].Start, r.Phases[1].End = t0.Add(3*time.Hour), t0.Add(6*time.Hour)
	r.Phases = r.Phases[:2]
	for i := range r.Phases {
		r.Phases[i].DriverSeries = progressSeries(3*3600, 100, 10, 7)
	}
	page := render(t, r, fixtureSamples(t0, 6*3600, time.Second))
	if len(page) > 1<<20 {
		t.Errorf("report.html is %d bytes for 6 h of samples, want under 1 MiB (series must be reduced)", len(page))
	}
	_, byID := pageData(t, page)
	if n := len(byID["chart-heap"].X); n > 3*reduceColumns+3 || n < 100 {
		t.Errorf("heap series has %d points, want between 100 and %d", n, 3*reduceColumns+3)
	}
	if n := len(byID["chart-throughput"].X); n > 2*MaxDriverSeriesPoints+1 {
		t.Errorf("throughput series has %d points, want at most %d", n, 2*MaxDriverSeriesPoints+1)
	}
}

func TestHTMLSeriesWithoutData(t *testing.T) {
	r, s := htmlFixture()
	for i := range s.Samples {
		s.Samples[i].GCCycles = 7 // no cycle ends: GC % cannot be computed
		s.Samples[i].ProcMissing = true
	}
	page := render(t, r, s)
	_, byID := pageData(t, page)
	for id, want := range map[string]string{
		"chart-gc":  "no data: no GC cycle ended between two samples",
		"chart-cpu": "no data: no window with the OS CPU times read at both ends",
	} {
		if f := chartFrame(t, page, id); !strings.Contains(f, want) || byID[id].ID != "" {
			t.Errorf("%s: want the message %q and no chart data", id, want)
		}
	}
	if byID["chart-heap"].ID == "" {
		t.Errorf("chart-heap: the heap series must still be drawn")
	}
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
	page := render(t, r, s)
	_, byID := pageData(t, page)
	top := func(c chartSpec) float64 {
		m := math.Inf(-1)
		for _, v := range c.Series[0].Y {
			if !math.IsNaN(v) {
				m = max(m, v)
			}
		}
		return m
	}
	if c := byID["chart-cpu"]; c.ID == "" || top(c) > 100 {
		t.Errorf("cpu chart: no series, or it reaches over 100 %% of the machine")
	}
	if c := byID["chart-alloc"]; top(c) > 60<<20 {
		t.Errorf("allocation chart: reaches %.0f MiB/s, want at most 60 MiB/s for a steady %.0f MiB/s", top(c)/(1<<20), allocRate/(1<<20))
	}
	text := html.UnescapeString(page)
	for _, id := range []string{"chart-cpu", "chart-alloc"} {
		if !strings.Contains(chartFrame(t, text, id), "at least 750 ms") {
			t.Errorf("%s: the caption does not give the 750 ms window", id)
		}
	}
}

var (
	drawnPlot = regexp.MustCompile(`<div class="plot" data-chart="([^"]+)" data-drawn="(\d+)">`)
	canvasTag = regexp.MustCompile(`<canvas width="(\d+)" height="(\d+)"`)
)

// TestHTMLInChromium loads report.html in a real headless browser: every
// chart must be drawn (a canvas of non-zero size where the page holds its
// data) with no script error, every section must be there, and a
// screenshot must show a rendered page.
func TestHTMLInChromium(t *testing.T) {
	const chromium = "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("skipping the browser test: %s not found (CI installs it; apt-get install -y chromium)", chromium)
	}
	r, s := allSectionsFixture()
	b, err := r.HTML(s)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, HTMLFile)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) ([]byte, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync", "--enable-logging=stderr", "--v=0",
			"--virtual-time-budget=5000", "--user-data-dir=" + filepath.Join(dir, "profile")}, extra...)
		args = append(args, "file://"+file)
		cmd := exec.CommandContext(ctx, chromium, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cmd.WaitDelay = 10 * time.Second // chromium's helpers may hold the pipes after a kill
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %v: %v\n%s", extra, err, stderr.String())
		}
		return out, stderr.String()
	}

	out, stderr := run("--window-size=1300,2000", "--dump-dom")
	dom := string(out)
	// The page logs nothing: any console line (chromium prints them as
	// "INFO:CONSOLE…", uncaught exceptions included) is a problem.
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, ":CONSOLE") {
			t.Errorf("console: %s", line)
		}
	}
	if !strings.Contains(dom, `<div id="charts-not-drawn" hidden=""><strong>Some charts could not be drawn:</strong><ul></ul></div>`) {
		i := strings.Index(dom, `id="charts-not-drawn"`)
		t.Errorf("the page reports chart errors: %.600s", dom[max(0, i):])
	}
	_, byID := pageData(t, string(b))
	drawn := map[string]bool{}
	for _, m := range drawnPlot.FindAllStringSubmatchIndex(dom, -1) {
		id, series := dom[m[2]:m[3]], dom[m[4]:m[5]]
		if want := fmt.Sprint(len(byID[id].Series)); series != want {
			t.Errorf("%s: drew %s series, want %s", id, series, want)
		}
		rest := dom[m[1]:]
		c := canvasTag.FindStringSubmatch(rest[:min(len(rest), 3000)])
		if c == nil || c[1] == "0" || c[2] == "0" {
			t.Errorf("%s: no canvas of non-zero size: %v", id, c)
		}
		drawn[id] = true
	}
	for id := range byID {
		if !drawn[id] {
			t.Errorf("chart %s was not drawn", id)
		}
	}
	if !drawn["chart-latency-time"] || len(byID["chart-latency-time"].Series) != 2 {
		t.Errorf("latency over time: drawn %v with %d series, want drawn with p50 and p99", drawn["chart-latency-time"], len(byID["chart-latency-time"].Series))
	}
	if len(drawn) < len(targetChartIDs)+len(driverChartIDs)+len(phaseChartIDs)+2 {
		t.Errorf("drew %d charts, want every chart of the fixture", len(drawn))
	}
	if miss := missingSections(r.Markdown(), dom); len(miss) > 0 {
		t.Errorf("the rendered page lacks sections %q", miss)
	}
	// The section bar links every section, each heading given its id.
	heads := regexp.MustCompile(`<h2 id="([^"]+)">`).FindAllStringSubmatch(dom, -1)
	nav := regexp.MustCompile(`(?s)<nav id="sections" aria-label="Sections">(.*?)</nav>`).FindStringSubmatch(dom)
	if nav == nil || len(heads) < 5 || strings.Count(nav[1], "<a href=") != len(heads) {
		t.Errorf("section bar %.300q links %d of %d headings", nav, strings.Count(fmt.Sprint(nav), "<a href="), len(heads))
	}
	for _, h := range heads {
		if nav != nil && !strings.Contains(nav[1], `href="#`+h[1]+`"`) {
			t.Errorf("the section bar has no link to #%s", h[1])
		}
	}
	// At 800 px no chart is wider than the window.
	narrow, _ := run("--window-size=800,2000", "--dump-dom")
	canvases := canvasTag.FindAllStringSubmatch(string(narrow), -1)
	if len(canvases) < len(drawn) {
		t.Errorf("at 800 px %d canvases, want one per chart (%d)", len(canvases), len(drawn))
	}
	for _, c := range canvases {
		if w, _ := strconv.Atoi(c[1]); w > 800 {
			t.Errorf("at 800 px a chart's canvas is %d px wide", w)
		}
	}
	// The flame graph drew every frame of the fixture's tree (the root and
	// its four frames), in the GraphQL view.
	if fr := regexp.MustCompile(`<div id="flame" class="flame"[^>]*data-frames="(\d+)"`).FindStringSubmatch(dom); fr == nil || fr[1] != "5" || !strings.Contains(dom, `data-view="graphql"`) {
		i := strings.Index(dom, `id="flame"`)
		t.Errorf("the flame graph was not drawn with 5 frames: %v %.400s", fr, dom[max(0, i):])
	}
	if !strings.Contains(dom, "mem&lt;&amp;&gt;\"ory") {
		t.Errorf("DOM: the escaped phase name did not come back as text")
	}

	shot := filepath.Join(dir, "shot.png")
	run("--screenshot="+shot, "--window-size=1300,2600", "--hide-scrollbars")
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

// TestSeed000Section: report.md prints the seed's table as measured, the
// cost per request with the database's figures, and the seed's published
// figures labelled as theirs; a report without it has no such section.
func TestSeed000Section(t *testing.T) {
	r, _ := allSectionsFixture()
	md := r.Markdown()
	for _, want := range []string{
		"| users-tasks-250 | 250 | batched | " + r.Phases[1].Name + " | 20 | 500 | 0 | 41.50 | 480.0 | 470.0 | 530.0 | 610.0 | 650.0 |",
		"| 1.00 | 2.50 | 90 | 5.00 ms |",
		"| users-tasks-250 | includes | 8.02 | 2458 | 2429 | 2685 | 2757 | 2933 |",
		"theirs, not this run's",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	r.Phases[1].Database = &Database{NotMeasured: "cannot read the target's relational tally: gone"}
	if md := r.Markdown(); !strings.Contains(md, "| not measured: cannot read the target's relational tally: gone | — | — | — |") {
		t.Errorf("a tally not read is not said so")
	}
	r.Phases[1].Resources, r.Phases[1].ResourcesError = nil, "only 0 samples in the 0.4s steady window"
	if md := r.Markdown(); !strings.Contains(md, "| not measured: only 0 samples in the 0.4s steady window | — | — | — |") {
		t.Errorf("resources not measured are not said so")
	}
	if md := fixture().Markdown(); strings.Contains(md, "Seed 000") {
		t.Errorf("a report without seed 000's queries has the section")
	}
}

// TestHTMLLatencyByPhaseNotByRound: a phase run in rounds is one line of
// the latency chart, the median of its rounds' percentiles, so the
// compared arms read as REST against GraphQL.
func TestHTMLLatencyByPhaseNotByRound(t *testing.T) {
	r, s := htmlFixture()
	var phases []Phase
	for k, p99 := range []float64{4, 9, 5} {
		for _, arm := range []string{"rest", "graphql"} {
			phases = append(phases, Phase{Name: fmt.Sprintf("%s-load#%d", arm, k+1), Arm: arm, Requests: 100,
				Start: r.StartedAt, End: r.StartedAt.Add(time.Second),
				LatencyMs: workloads.Latency{P50: 1, P90: 2, P99: p99, P999: 2 * p99, Max: 3 * p99}})
		}
	}
	r.Phases = phases
	_, byID := pageData(t, render(t, r, s))
	lat := byID["chart-latency"]
	if len(lat.Series) != 2 || lat.Series[0].Label != "rest-load (median of 3 rounds)" || lat.Series[1].Label != "graphql-load (median of 3 rounds)" {
		t.Fatalf("series %+v, want one per phase", lat.Series)
	}
	if y := lat.Series[1].Y; y[2] != 5 || y[3] != 10 || y[4] != 15 {
		t.Errorf("graphql-load: p99 %v, p99.9 %v, max %v; want the rounds' medians 5, 10, 15", y[2], y[3], y[4])
	}
}

// TestChartsColourPhasesByArm: on every chart a phase is drawn in one
// colour (its rounds as one), a shade of its arm's palette, and the
// phase bands take the arm's fill, so REST reads blue and GraphQL pink
// wherever they appear.
func TestChartsColourPhasesByArm(t *testing.T) {
	r := fixture()
	base := r.Phases
	r.Phases = nil
	for round := 1; round <= 2; round++ {
		for _, p := range base {
			p.Name = fmt.Sprintf("%s#%d", p.Name, round)
			p.Resources.GCPauses = 40
			p.Resources.GCPauseP50Ms, p.Resources.GCPauseMaxMs = 0.4, 2
			r.Phases = append(r.Phases, p)
		}
	}
	extra := base[1]
	extra.Name, extra.Resources.GCPauses = "graphql-subscriptions", 40
	r.Phases = append(r.Phases, extra)
	arms := map[string]string{"rest-control": "rest", "graphql-load": "graphql", "graphql-subscriptions": "graphql"}

	cd := r.chartData(fixtureSamples(r.StartedAt, 30, time.Second))
	seen := map[string]string{} // phase → colour
	drawn := 0
	for _, c := range cd.Charts {
		for _, s := range c.Series {
			phase := baseName(strings.Fields(s.Label)[0])
			arm, ok := arms[phase]
			if !ok {
				continue // a series that is no phase's (CPU over time, …)
			}
			drawn++
			if !slices.Contains(armPalettes[arm], s.Colour) {
				t.Errorf("%s: %q is drawn in %s, not a shade of the %s palette %v", c.ID, s.Label, s.Colour, arm, armPalettes[arm])
			}
			if prev, ok := seen[phase]; ok && prev != s.Colour {
				t.Errorf("%s: %q is drawn in %s here and %s elsewhere", c.ID, s.Label, s.Colour, prev)
			}
			seen[phase] = s.Colour
		}
	}
	if drawn < 5 || len(seen) != 3 {
		t.Fatalf("the per-phase charts drew %d series of %d phases (%v), want the latency and pause lines of all 3", drawn, len(seen), seen)
	}
	if seen["graphql-load"] == seen["graphql-subscriptions"] {
		t.Errorf("two GraphQL phases share the colour %s", seen["graphql-load"])
	}
	for _, b := range cd.Phases {
		if want := armFills[arms[baseName(b.Name)]]; b.Fill != want {
			t.Errorf("band %s: fill %s, want its arm's %s", b.Name, b.Fill, want)
		}
	}
	for _, c := range armPalettes["rest"] {
		if slices.Contains(armPalettes["graphql"], c) {
			t.Errorf("%s is in both arms' palettes", c)
		}
	}
}

// TestChartDataOfAnEmptyRun: a run stopped before any phase finished has
// no charts and no phases; the page's script walks both, so they encode
// as [] (null made report.html throw in the browser).
func TestChartDataOfAnEmptyRun(t *testing.T) {
	r := &Report{SchemaVersion: SchemaVersion, Run: "x", Status: StatusAborted, StartedAt: time.Now()}
	b, err := json.Marshal(r.chartData(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"phases":[]`) || !strings.Contains(string(b), `"charts":[]`) {
		t.Errorf("an empty run's chart data: %s", b)
	}
}
