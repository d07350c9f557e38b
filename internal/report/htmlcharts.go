package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/profiles"
)

// chartData is the JSON report.html's script draws its charts from.
type chartData struct {
	// TimeRange is the extent of every time axis, in seconds since the run
	// started, so that the time charts line up.
	TimeRange [2]float64 `json:"time_range"`
	// Phases are the bands shaded on the time axes.
	Phases []chartPhase `json:"phases"`
	Charts []chartSpec  `json:"charts"`

	// The charts' frames by section, for the template.
	target, driver, perPhase []htmlChart
	knees                    map[int][]htmlChart // by phase index
}

// chartPhase is one phase's band on the time axes: seconds since the run
// started, and its fill colour.
type chartPhase struct {
	Name  string  `json:"name"`
	Arm   string  `json:"arm"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	Fill  string  `json:"fill"`
	// Span says when it ran and Class its arm, for the legend.
	Span, Class string `json:"-"`
}

// chartSpec is one chart: a shared x axis and its series. XKind is "time"
// (seconds since the run started, phases shaded), "value" (a numeric axis
// named XLabel) or "category" (x is 0, 1, … naming XCategories).
type chartSpec struct {
	ID          string        `json:"id"`
	XKind       string        `json:"x_kind"`
	XLabel      string        `json:"x_label"`
	XCategories []string      `json:"x_categories,omitempty"`
	X           nums          `json:"x"`
	Log         bool          `json:"log,omitempty"` // log10 value axes
	Series      []chartSeries `json:"series"`
	Marks       []chartMark   `json:"marks,omitempty"`
}

// chartSeries is one line. Series with the same Unit share a value axis:
// "%", "B", "B/s", "ms", "req/s", "users".
type chartSeries struct {
	Label  string `json:"label"`
	Unit   string `json:"unit"`
	Colour string `json:"colour"`
	Y      nums   `json:"y"` // NaN (null in JSON) breaks the line
	Points bool   `json:"points,omitempty"`
}

// chartMark is a dashed vertical line at X with a label.
type chartMark struct {
	X      float64 `json:"x"`
	Label  string  `json:"label"`
	Colour string  `json:"colour"`
}

// nums are chart values, written with 7 significant digits and NaN or ±Inf
// as null (a gap).
type nums []float64

// MarshalJSON writes the values as a JSON array.
func (v nums) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 9*len(v)+2)
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, x, 'g', 7, 64)
	}
	return append(b, ']'), nil
}

// Colours: one palette per arm, so a phase's line and band say its arm.
var (
	armPalettes = map[string][]string{
		"rest":    {"#0969da", "#54aeff", "#0a3069", "#218bff", "#80ccff", "#033d8b"},
		"graphql": {"#bf3989", "#e85aad", "#772057", "#d35ba1", "#ff80c8", "#99286e"},
		"":        {"#57606a", "#8c959f", "#24292f", "#6e7781"},
	}
	armFills = map[string]string{"rest": "rgba(9,105,218,0.11)", "graphql": "rgba(191,57,137,0.11)", "": "rgba(140,149,159,0.16)"}
)

// phaseColours gives each phase (its rounds as one, by base name) a shade
// of its arm's palette, in the order the phases first ran, so a phase is
// drawn in the same colour on every chart and its arm reads from the hue.
func phaseColours(phases []Phase) func(p Phase) string {
	used := map[string]int{}
	byPhase := map[string]string{}
	for _, p := range phases {
		b := baseName(p.Name)
		if _, ok := byPhase[b]; ok {
			continue
		}
		pal := armPalettes[armKey(p.Arm)]
		byPhase[b] = pal[used[armKey(p.Arm)]%len(pal)]
		used[armKey(p.Arm)]++
	}
	return func(p Phase) string {
		if c, ok := byPhase[baseName(p.Name)]; ok {
			return c
		}
		return armPalettes[armKey(p.Arm)][0]
	}
}

func armKey(arm string) string {
	if arm == "rest" || arm == "graphql" {
		return arm
	}
	return ""
}

// reduceColumns is how many time columns a long series is reduced to;
// maxSeriesPoints is the length above which it is.
const (
	reduceColumns   = 1000
	maxSeriesPoints = 2000
)

// chartData assembles every chart of the page and each one's frame.
func (r *Report) chartData(s *Samples) chartData {
	cd := chartData{knees: map[int][]htmlChart{}, Phases: []chartPhase{}, Charts: []chartSpec{}} // [] not null: the page walks them
	var ss []profiles.Sample
	if s != nil {
		ss = s.Samples
	}
	origin := r.StartedAt
	if origin.IsZero() {
		switch {
		case len(ss) > 0:
			origin = ss[0].Time
		case len(r.Phases) > 0:
			origin = r.Phases[0].Start
		}
	}
	rel := func(t time.Time) float64 { return t.Sub(origin).Seconds() }
	lo, hi := math.Inf(1), math.Inf(-1)
	widen := func(t time.Time) {
		if !t.IsZero() {
			lo, hi = min(lo, rel(t)), max(hi, rel(t))
		}
	}
	for _, smp := range ss {
		widen(smp.Time)
	}
	for _, p := range r.Phases {
		widen(p.Start)
		widen(p.End)
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
	}
	hi = max(hi, lo+1)
	cd.TimeRange = [2]float64{lo, hi}
	colour := phaseColours(r.Phases)
	for _, p := range r.Phases {
		t0, t1 := lo, hi
		if !p.Start.IsZero() {
			t0 = rel(p.Start)
		}
		if !p.End.IsZero() && p.End.After(p.Start) {
			t1 = rel(p.End)
		}
		cd.Phases = append(cd.Phases, chartPhase{Name: p.Name, Arm: p.Arm, Start: t0, End: t1, Fill: armFills[armKey(p.Arm)],
			Span: fmtRel(t0) + " – " + fmtRel(t1), Class: "arm-" + cmp.Or(armKey(p.Arm), "other")})
	}
	add := func(frames *[]htmlChart, spec chartSpec, title, caption, empty string) {
		f := htmlChart{ID: spec.ID, Title: title, Caption: caption, Empty: empty}
		if empty == "" {
			cd.Charts = append(cd.Charts, spec)
		}
		*frames = append(*frames, f)
	}
	r.targetCharts(ss, origin, lo, hi, func(spec chartSpec, title, caption, empty string) { add(&cd.target, spec, title, caption, empty) })
	r.driverCharts(origin, lo, hi, func(spec chartSpec, title, caption, empty string) { add(&cd.driver, spec, title, caption, empty) })
	r.percentileCharts(colour, func(spec chartSpec, title, caption, empty string) { add(&cd.perPhase, spec, title, caption, empty) })
	for i, p := range r.Phases {
		if p.MaxLoad == nil {
			continue
		}
		frames := cd.knees[i]
		kneeCharts(i, p, func(spec chartSpec, title, caption, empty string) { add(&frames, spec, title, caption, empty) })
		cd.knees[i] = frames
	}
	return cd
}

// addChart adds a chart and its frame; a non-empty empty says why there is
// nothing to draw.
type addChart func(spec chartSpec, title, caption, empty string)

// targetCharts draws the target's samples over time: CPU share of the
// machine, GC %, live heap and allocation rate.
func (r *Report) targetCharts(ss []profiles.Sample, origin time.Time, lo, hi float64, add addChart) {
	cores := r.Host.Cores
	coresNote := ""
	if cores < 1 {
		cores, coresNote = 1, " The report does not give the core count: 1 core assumed, so a window in which the target used more than one core is a data error."
	}
	interval := time.Duration(math.Round(r.SamplerIntervalSeconds * float64(time.Second)))
	window := profiles.RateWindow(interval)
	windowTx := fmt.Sprintf("%s (¾ of the %s sampler interval in whole %s OS CPU ticks, never under %s = %d ticks)",
		fmtDuration(window), fmtDuration(interval), fmtDuration(profiles.CPUTick), fmtDuration(profiles.MinRateWindow),
		profiles.MinRateWindow/profiles.CPUTick)
	if interval <= 0 {
		windowTx = fmt.Sprintf("%s (%d OS CPU ticks of %s; the report does not give the sampler interval)",
			fmtDuration(window), window/profiles.CPUTick, fmtDuration(profiles.CPUTick))
	}
	windows := fmt.Sprintf("over consecutive windows of at least %s, each ending at the first sample that long after its start and plotted at its end, from the cumulative counters at the window's two ends", windowTx)
	var ser timeSeries
	if len(ss) >= 2 {
		ser = deriveSeries(ss, origin, cores, window)
	}
	for _, sp := range []struct {
		id, title, caption, colour string
		segs                       [][]tsPoint
		unit, none                 string
	}{
		{"cpu", "Target CPU, share of the machine",
			fmt.Sprintf("Δ(user + system CPU seconds of the target process, from the OS) ÷ (Δ wall seconds × %d cores) × 100, %s. The OS counts CPU time in whole ticks, so a shorter window would chart tick quantisation rather than load. 100 %% is every core of the machine busy: a window whose CPU seconds exceed Δ wall seconds × cores by at most two ticks (one per counter) plus the closing sample's own read time is drawn at 100 %%, and one exceeding that is a data error and left out.%s", cores, windows, coresNote),
			"#0550ae", ser.cpu, "%", "no window with the OS CPU times read at both ends"},
		{"gc", "GC % of the runtime's CPU",
			"Δ/cpu/classes/gc/total ÷ Δ/cpu/classes/total × 100 (runtime/metrics), computed only between samples where /gc/cycles/total advanced: the runtime updates its CPU classes when a GC cycle ends, so between other samples the ratio would be stale or 0 ÷ 0. Each point covers the time since the previous cycle seen.",
			"#cf222e", ser.gc, "%", "no GC cycle ended between two samples"},
		{"heap", "Live heap",
			"/gc/heap/live:bytes at each sample: the heap marked live by the latest GC cycle (a gauge; it changes only when a cycle ends).",
			"#1a7f37", ser.heap, "B", "no heap readings"},
		{"alloc", "Allocation rate",
			fmt.Sprintf("Δ/gc/heap/allocs:bytes ÷ Δ wall seconds, %s: bytes allocated on the heap per second. A window over which a counter went backwards (a new process) is left out.", windows),
			"#8250df", ser.alloc, "B/s", "no complete window within one process"},
	} {
		x, y := segmentsXY(sp.segs, lo, hi)
		empty := ""
		switch {
		case len(ss) < 2:
			empty = noSamplesTx
		case len(x) == 0:
			empty = "no data: " + sp.none
		}
		add(chartSpec{ID: "chart-" + sp.id, XKind: "time", XLabel: "time since the run started", X: x,
			Series: []chartSeries{{Label: sp.title, Unit: sp.unit, Colour: sp.colour, Y: y}}}, sp.title, sp.caption, empty)
	}
}

// noSamplesTx is what a target chart says without two samples.
const noSamplesTx = "no samples"

// driverCharts draws the driver's progress over time: throughput and
// active users, latency (p50 and p99 of each interval's successful
// requests), and errors (and dropped arrivals) per second.
func (r *Report) driverCharts(origin time.Time, lo, hi float64, add addChart) {
	var x, rps, users, errs, dropped, p50, p99 nums
	anyDropped, anyLatency := false, false
	ms := func(v []*float64, i int) float64 {
		if v == nil || v[i] == nil || *v[i] <= 0 {
			return math.NaN() // no successful request, or no place on a log axis
		}
		return *v[i]
	}
	for _, p := range r.Phases {
		ds := p.DriverSeries
		if ds == nil || p.Start.IsZero() {
			continue
		}
		base := p.Start.Sub(origin).Seconds()
		var prevT float64
		var prevReq, prevErr, prevDrop int64
		for i, t := range ds.TSeconds {
			at := base + t
			if len(x) > 0 && at <= x[len(x)-1] {
				continue // a point out of time order cannot be drawn on a time axis
			}
			if i == 0 && len(x) > 0 { // a break between phases
				x, rps, users, errs, dropped = append(x, (x[len(x)-1]+at)/2), append(rps, math.NaN()), append(users, math.NaN()), append(errs, math.NaN()), append(dropped, math.NaN())
				p50, p99 = append(p50, math.NaN()), append(p99, math.NaN())
			}
			dt := t - prevT
			rate := func(n, prev int64) float64 {
				if dt <= 0 {
					return math.NaN()
				}
				return float64(n-prev) / dt
			}
			var d int64
			if ds.Dropped != nil {
				d, anyDropped = ds.Dropped[i], true
			}
			x = append(x, at)
			rps, errs, dropped = append(rps, rate(ds.Requests[i], prevReq)), append(errs, rate(ds.Errors[i], prevErr)), append(dropped, rate(d, prevDrop))
			users = append(users, float64(ds.ActiveUsers[i]))
			p50, p99 = append(p50, ms(ds.LatencyP50Ms, i)), append(p99, ms(ds.LatencyP99Ms, i))
			anyLatency = anyLatency || !math.IsNaN(p99[len(p99)-1])
			prevT, prevReq, prevErr, prevDrop = t, ds.Requests[i], ds.Errors[i], d
		}
	}
	empty := ""
	if len(x) == 0 {
		empty = "no driver progress in this report (reports before soakd kept it have none)"
	}
	basis := "From the driver's progress reports (about one a second; a phase over 30 minutes keeps fewer, evenly spaced), each rate the count between two reports ÷ the time between them; the line breaks between phases."
	add(chartSpec{ID: "chart-throughput", XKind: "time", XLabel: "time since the run started", X: x, Series: []chartSeries{
		{Label: "throughput", Unit: "req/s", Colour: "#0550ae", Y: rps},
		{Label: "active users", Unit: "users", Colour: "#9a6700", Y: users},
	}}, "Throughput and active users",
		basis+" Throughput: requests completed (successful or not) per second. Active users: users started and not yet finished at each report; in an open-model phase, the requests in flight.", empty)
	latEmpty := empty
	if latEmpty == "" && !anyLatency {
		latEmpty = "no latency over time in this report: the driver's progress carried none (reports before soakd kept it), or no request succeeded"
	}
	add(chartSpec{ID: "chart-latency-time", XKind: "time", XLabel: "time since the run started", X: x, Log: true, Series: []chartSeries{
		{Label: "p50", Unit: "ms", Colour: "#0550ae", Y: p50},
		{Label: "p99", Unit: "ms", Colour: "#bf3989", Y: p99},
	}}, "Latency over time",
		"From the same reports: the p50 and p99 latency of the successful requests completed between two reports, in milliseconds on a log scale, from the driver's HDR histogram of each interval (closed-model phases measure service time; open-model phases measure from each request's intended send time). A gap: no request succeeded in that interval. Where a phase over 30 minutes keeps one point for several reports, the point shows the largest of their percentiles: an upper bound on the percentile over its span, so a slow second stays visible.", latEmpty)
	ser := []chartSeries{{Label: "errors", Unit: "req/s", Colour: "#cf222e", Y: errs}}
	if anyDropped {
		ser = append(ser, chartSeries{Label: "dropped arrivals", Unit: "req/s", Colour: "#bc4c00", Y: dropped})
	}
	add(chartSpec{ID: "chart-errors", XKind: "time", XLabel: "time since the run started", X: x, Series: ser}, "Errors over time",
		basis+" Errors: failed requests per second, every class (the classes, with an example each, are in the phase's problems). Dropped arrivals (open model): arrivals per second not sent because max_in_flight requests were in flight.", empty)
}

// percentileCharts draws each phase's latency percentiles and GC pauses,
// one line per phase across the percentiles, on log scales.
func (r *Report) percentileCharts(colour func(p Phase) string, add addChart) {
	positive := func(v float64) float64 {
		if v > 0 {
			return v
		}
		return math.NaN() // no place on a log axis
	}
	lat := chartSpec{ID: "chart-latency", XKind: "category", XLabel: "percentile", XCategories: []string{"p50", "p90", "p99", "p99.9", "max"}, X: nums{0, 1, 2, 3, 4}, Log: true}
	pauses := chartSpec{ID: "chart-pauses", XKind: "category", XLabel: "percentile", XCategories: []string{"p50", "p99", "max"}, X: nums{0, 1, 2}, Log: true}
	var noPauses []string
	// Latency: one line per phase, its rounds as one (the median of the
	// rounds' percentiles), so the compared arms read as REST against
	// GraphQL rather than a line per round.
	names, groups := phaseGroups(r)
	for _, name := range names {
		var ys [5][]float64
		for _, p := range groups[name] {
			if l := p.LatencyMs; p.Requests > 0 {
				for i, v := range []float64{l.P50, l.P90, l.P99, l.P999, l.Max} {
					ys[i] = append(ys[i], v)
				}
			}
		}
		if len(ys[0]) == 0 {
			continue
		}
		label := name
		if n := len(ys[0]); n > 1 {
			label = fmt.Sprintf("%s (median of %d rounds)", name, n)
		}
		y := make(nums, 5)
		for i := range ys {
			y[i] = positive(kpi.Median(ys[i]))
		}
		lat.Series = append(lat.Series, chartSeries{Label: label, Unit: "ms", Colour: colour(groups[name][0]), Points: true, Y: y})
	}
	for _, p := range r.Phases {
		c := colour(p)
		s := p.Resources
		unmeasured := s == nil
		if s != nil {
			_, unmeasured = s.NotMeasured["gc_pause_p99_ms"]
		}
		if unmeasured || s.GCPauses == 0 {
			noPauses = append(noPauses, p.Name)
			continue
		}
		pauses.Series = append(pauses.Series, chartSeries{Label: p.Name, Unit: "ms", Colour: c, Points: true,
			Y: nums{positive(s.GCPauseP50Ms), positive(s.GCPauseP99Ms), positive(s.GCPauseMaxMs)}})
	}
	empty := func(spec chartSpec, why string) string {
		if len(spec.Series) == 0 {
			return why
		}
		return ""
	}
	add(lat, "Latency percentiles per phase",
		"Driver-side request latency over each whole phase (HDR histogram), in milliseconds on a log scale, one line per phase (blues: REST, pinks: GraphQL), a phase run in rounds drawn once as the median of its rounds' percentiles: p50, p90, p99, p99.9 and max. Closed-model phases measure service time; open-model phases measure from each request's intended send time. Latency over time is under Driver over time.",
		empty(lat, "no phase completed a request"))
	caption := "Stop-the-world GC pauses from /sched/pauses/total/gc:seconds, differenced over each phase's steady window, on a log scale: p50, p99 and max, each the upper bound of the histogram bucket holding it (never understated)."
	if len(noPauses) > 0 && len(pauses.Series) > 0 {
		caption += fmt.Sprintf(" Not drawn (no resources, no GC pause in the window, or not measured): %s.", strings.Join(noPauses, ", "))
	}
	add(pauses, "GC pauses per phase", caption, empty(pauses, "no phase had a GC pause measured in its steady window"))
}

// kneeCharts draws a max-load phase's ramp against its load: throughput
// and p99, then both sides' CPU demand and the error ratio, with the peak,
// the failure and the knee marked.
func kneeCharts(i int, p Phase, add addChart) {
	ml := p.MaxLoad
	pts := slices.Clone(ml.Chart)
	byRate := slices.ContainsFunc(pts, func(k kpi.KneePoint) bool { return k.ArrivalRPS > 0 })
	xOf := func(k kpi.KneePoint) float64 {
		if byRate {
			return k.ArrivalRPS
		}
		return float64(k.Users)
	}
	// The load at a time of the ramp: that of the bucket ending nearest it.
	loadAt := func(t float64) float64 {
		best, at := math.Inf(1), math.NaN()
		for _, k := range pts {
			if d := math.Abs(k.TSeconds - t); d < best {
				best, at = d, xOf(k)
			}
		}
		return at
	}
	var marks []chartMark
	if !ml.PeakWindowEnd.IsZero() {
		marks = append(marks, chartMark{X: loadAt(ml.PeakWindowEnd.Sub(p.Start).Seconds()), Label: fmt.Sprintf("peak %.0f req/s", ml.PeakThroughputRPS), Colour: "#1a7f37"})
	}
	if ml.Failed && !ml.FailureAt.IsZero() {
		marks = append(marks, chartMark{X: loadAt(ml.FailureAt.Sub(p.Start).Seconds()), Label: "failure: " + ml.Reason, Colour: "#cf222e"})
	}
	if k := ml.Knee; k != nil && k.Attribution != "none" {
		label := "knee: " + k.Attribution
		if k.Resource != "" {
			label += " (" + k.Resource + ")"
		}
		marks = append(marks, chartMark{X: loadAt(k.AtT), Label: label, Colour: "#bc4c00"})
	}
	slices.SortStableFunc(pts, func(a, b kpi.KneePoint) int { return cmp.Compare(xOf(a), xOf(b)) })
	var x, rps, p99, driver, target, errRatio nums
	share := func(v *float64) float64 {
		if v == nil {
			return math.NaN()
		}
		return *v * 100
	}
	for _, k := range pts {
		x, rps, p99 = append(x, xOf(k)), append(rps, k.RPS), append(p99, k.P99Ms)
		driver, target, errRatio = append(driver, share(k.DriverCPUShare)), append(target, share(k.TargetCPUShare)), append(errRatio, k.ErrorRatio*100)
	}
	xLabel, load := "active users", "the active users at each bucket's end"
	if byRate {
		xLabel, load = "intended arrival rate (req/s)", "the intended arrival rate at each bucket's end"
	}
	empty := ""
	if len(pts) == 0 {
		empty = "no ramp buckets in this report"
	}
	id := fmt.Sprintf("chart-knee-%d", i)
	add(chartSpec{ID: id, XKind: "value", XLabel: xLabel, X: x, Marks: marks, Series: []chartSeries{
		{Label: "throughput", Unit: "req/s", Colour: "#0550ae", Y: rps, Points: true},
		{Label: "p99 latency", Unit: "ms", Colour: "#bf3989", Y: p99, Points: true},
	}}, "Throughput and p99 against load: "+p.Name,
		fmt.Sprintf("Each point is one 1 s bucket of the ramp, against %s: requests completed per second and the p99 latency of the bucket's successful requests. Dashed lines: the peak window's end, the failure (the rule that tripped) and the knee with whose limit it was (target, driver-bound, machine-bound).", load), empty)
	add(chartSpec{ID: id + "-cpu", XKind: "value", XLabel: xLabel, X: x, Marks: marks, Series: []chartSeries{
		{Label: "driver CPU demand", Unit: "%", Colour: "#9a6700", Y: driver, Points: true},
		{Label: "target CPU demand", Unit: "%", Colour: "#1a7f37", Y: target, Points: true},
		{Label: "errors", Unit: "%", Colour: "#cf222e", Y: errRatio, Points: true},
	}}, "Driver and target utilisation against load: "+p.Name,
		fmt.Sprintf("The same buckets: the CPU demand (CPU time plus time spent ready but waiting for a CPU) of the driver and of the target, each as a share of the CPUs it may run on (100 %%: all of them used or wanted; from %.0f %% a side counts as saturated; a gap: not measured), and the share of the bucket's requests that failed.", kpi.SaturatedShare*100), empty)
}

// segmentsXY lays segments on one x array, reduced for drawing, with a
// gap (NaN) between segments.
func segmentsXY(segs [][]tsPoint, lo, hi float64) (x, y nums) {
	for _, seg := range segs {
		seg = reducePoints(seg, lo, hi)
		if len(seg) == 0 {
			continue
		}
		if len(x) > 0 {
			x, y = append(x, (x[len(x)-1]+seg[0].t)/2), append(y, math.NaN())
		}
		for _, p := range seg {
			x, y = append(x, p.t), append(y, p.v)
		}
	}
	return x, y
}

// reducePoints keeps a segment drawable: above maxSeriesPoints points it
// keeps, per one of reduceColumns time columns over [lo, hi], the first,
// the lowest and the highest point in time order, so spikes survive.
func reducePoints(seg []tsPoint, lo, hi float64) []tsPoint {
	if len(seg) <= maxSeriesPoints || hi <= lo {
		return seg
	}
	out := make([]tsPoint, 0, 3*reduceColumns)
	col, low, high, first := -1, tsPoint{}, tsPoint{}, tsPoint{}
	flush := func() {
		if col < 0 {
			return
		}
		pts := []tsPoint{first, low, high}
		slices.SortStableFunc(pts, func(a, b tsPoint) int { return cmp.Compare(a.t, b.t) })
		out = append(out, slices.Compact(pts)...)
	}
	for _, p := range seg {
		c := int((p.t - lo) / (hi - lo) * reduceColumns)
		if c != col {
			flush()
			col, low, high, first = c, p, p, p
			continue
		}
		if p.v < low.v {
			low = p
		}
		if p.v > high.v {
			high = p
		}
	}
	flush()
	return out
}

// fmtDuration formats d for a caption: "750 ms", "1 s", "2.5 s".
func fmtDuration(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'g', 6, 64) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'g', 6, 64) + " s"
}

// fmtRel formats seconds since the run started, to the second.
func fmtRel(sec float64) string {
	return (time.Duration(math.Round(sec)) * time.Second).String()
}

// tsPoint is one point of a time series: seconds since the axis origin and
// a value in the series' base unit.
type tsPoint struct{ t, v float64 }

// timeSeries are the four series derived from the samples, each a list of
// segments (a break wherever the data has a gap or a counter reset).
type timeSeries struct {
	cpu, gc, heap, alloc [][]tsPoint
}

// deriveSeries computes the charted series from the samples. CPU share of
// the machine and the allocation rate come from profiles.Rates over windows
// of at least window (pass profiles.RateWindow of the sampler interval):
// Δ(user+system)/(Δt × cores) × 100 and ΔAllocBytes/Δt between the
// cumulative counters at each window's ends, plotted at the window's end,
// never above 100 % of the machine; a dropped window or one with an unknown
// CPU share breaks the line. GC % is ΔGCCPUSeconds/ΔRuntimeCPUSeconds × 100
// between samples where GCCycles advanced (the runtime updates those classes
// only at the end of a cycle); the heap is HeapLiveBytes as sampled.
func deriveSeries(ss []profiles.Sample, origin time.Time, cores int, window time.Duration) timeSeries {
	var out timeSeries
	rel := func(t time.Time) float64 { return t.Sub(origin).Seconds() }
	add := func(segs [][]tsPoint, brk bool, p tsPoint) [][]tsPoint {
		if math.IsNaN(p.v) || math.IsInf(p.v, 0) {
			return segs
		}
		if brk || len(segs) == 0 {
			return append(segs, []tsPoint{p})
		}
		segs[len(segs)-1] = append(segs[len(segs)-1], p)
		return segs
	}
	var cpuEnd, allocEnd time.Time // end of the previous window drawn; a gap breaks the line
	for _, w := range profiles.Rates(ss, cores, window) {
		out.alloc = add(out.alloc, !w.Start.Equal(allocEnd), tsPoint{rel(w.End), w.AllocBytesPerSecond})
		allocEnd = w.End
		if w.CPUKnown {
			out.cpu = add(out.cpu, !w.Start.Equal(cpuEnd), tsPoint{rel(w.End), w.CPUMachinePercent})
			cpuEnd = w.End
		}
	}
	gcAnchor, gcBreak := 0, true
	for i, s := range ss {
		out.heap = add(out.heap, false, tsPoint{rel(s.Time), float64(s.HeapLiveBytes)})
		// GC %: only between samples where a cycle ended.
		switch {
		case i == 0:
		case s.GCCycles < ss[i-1].GCCycles || s.RuntimeCPUSeconds < ss[i-1].RuntimeCPUSeconds:
			gcAnchor, gcBreak = i, true // counters reset: a new process
		case s.GCCycles > ss[i-1].GCCycles:
			a := ss[gcAnchor]
			if d := s.RuntimeCPUSeconds - a.RuntimeCPUSeconds; d > 0 {
				out.gc = add(out.gc, gcBreak, tsPoint{rel(s.Time), (s.GCCPUSeconds - a.GCCPUSeconds) / d * 100})
				gcBreak = false
			}
			gcAnchor = i
		}
	}
	return out
}
