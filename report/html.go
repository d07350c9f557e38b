package report

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/soakd/soakd/kpi"
	"github.com/soakd/soakd/profiles"
)

// HTML renders report.html: one self-contained page (no script, no
// stylesheet or image fetched from anywhere) with the verdict, the KPI,
// checks, overhead and phases tables, and inline SVG charts drawn here: the
// target's CPU share of the machine, GC %, live heap and allocation rate
// over time with each phase shaded, GC pauses per phase and latency
// percentiles per phase grouped by arm. s holds the time series; when it is
// nil or has fewer than two samples the time-series charts say "no
// samples". Every piece of text goes through html/template's escaping.
func (r *Report) HTML(s *Samples) ([]byte, error) {
	page := r.htmlPage(s)
	t, err := template.New("report").Funcs(template.FuncMap{
		"f":     svgNum,
		"plus":  func(a, b float64) float64 { return a + b },
		"minus": func(a, b float64) float64 { return a - b },
		"half":  func(a float64) float64 { return a / 2 },
	}).Parse(htmlTemplate)
	if err != nil {
		return nil, fmt.Errorf("cannot parse the html template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, page); err != nil {
		return nil, fmt.Errorf("cannot render report.html: %w", err)
	}
	return b.Bytes(), nil
}

// Chart geometry, in SVG user units (the page scales the charts to fit).
const (
	chartW      = 960.0
	chartH      = 270.0
	plotLeft    = 84.0
	plotRight   = 16.0
	plotTop     = 16.0
	plotBottom  = 44.0
	barChartH   = 300.0
	barBottom   = 62.0
	charPx      = 6.2  // approximate width of one character at the chart font size
	maxPathPts  = 2000 // above this a series is reduced to the min and max per pixel column
	noSamplesTx = "no samples"
)

// htmlPage is everything the template shows, already formatted.
type htmlPage struct {
	Run, Profile, Description, Status string
	Verdict, VerdictClass, Error      string
	Failed                            []string
	HasSpread                         bool
	Started, Finished                 string
	Heading, ArmA, ArmB, ArmSep       string
	PhasesA, PhasesB                  []string
	KPIs                              []htmlKPI
	Rounds                            []Round
	Gate                              string
	Checks                            []htmlCheck
	Overhead                          []htmlOverhead
	OverheadBasis, OverheadRule       string
	Phases                            []htmlPhase
	HasProblems                       bool
	TimeCharts                        []svgChart
	PhaseCharts                       []svgChart
	Notes                             []string
	Host, Pinning                     string
}

type htmlKPI struct {
	Title, Name, REST, GraphQL, Variance, Spread, Interval, Limit, Outcome, Class, Definition, Reason string
}

type htmlCheck struct {
	Group, Phase, Title, Value, Limit, Outcome, Class, Detail, Definition string
}

type htmlOverhead struct {
	Function, REST, GraphQL, Extra, Share, Samples, Class string
}

type htmlPhase struct {
	Name, Arm, Model, DriverPID, Requests, Errors, Throughput string
	P50, P90, P99, P999, Max                                  string
	CPU, GC, GCCycles, PauseP99, HeapLive, RSS                string
	CPUPerReq, AllocPerReq                                    string
	Problems                                                  []string
	ErrorClass                                                string
}

// svgChart is one chart: a plot area with axes, optional phase bands, line
// series or bars, and a caption defining what is drawn.
type svgChart struct {
	ID, Title, Caption string
	W, H               float64
	PX, PY, PW, PH     float64
	Bands              []svgBand
	XTicks, YTicks     []svgTick
	XLabel             string
	Series             []svgSeries
	Bars               []svgBar
	Labels             []svgText
	Spans              []svgSpan
	Legend             []svgLegend
	Empty              string
}

// svgBand is one phase's shaded interval on a time axis.
type svgBand struct {
	X, W, LX, LY   float64
	Class, Label   string
	Tip            string
	VerticalLabel  bool
	LabelTransform string
}

type svgTick struct {
	Pos   float64
	Label string
}

type svgSeries struct {
	Name, Class, D string
}

type svgBar struct {
	X, Y, W, H float64
	Class, Tip string
}

type svgText struct {
	X, Y        float64
	Text, Class string
}

// svgSpan is a bracket under a bar chart naming a group of categories
// (the phases of one arm).
type svgSpan struct {
	X, W, Y     float64
	Label       string
	Class       string
	LabelX      float64
	LabelY      float64
	BackgroundH float64
}

type svgLegend struct {
	X, Y         float64
	Class, Label string
}

// svgNum formats an SVG coordinate.
func svgNum(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func (r *Report) htmlPage(s *Samples) htmlPage {
	p := htmlPage{
		Run: r.Run, Profile: r.Profile, Description: r.Description, Status: r.Status,
		Verdict: strings.ToUpper(r.Verdict), Error: r.Error, Gate: r.Gate,
		Notes: r.Notes, Heading: r.comparisonHeading(),
	}
	p.ArmA, p.ArmB = r.ArmTitles()
	p.PhasesA, p.PhasesB = r.Compare.Ran()
	p.ArmSep = armSeparator(p.PhasesA, p.PhasesB)
	switch r.Verdict {
	case "pass":
		p.VerdictClass = "pass"
	case "fail":
		p.VerdictClass = "fail"
	case VerdictAborted:
		p.VerdictClass = "aborted"
	case VerdictRunning:
		p.VerdictClass = "running"
	case kpi.Inconclusive:
		p.VerdictClass = "inconclusive"
	default:
		p.VerdictClass = "other"
	}
	if p.Verdict == "" {
		p.Verdict = "NONE YET"
	}
	if !r.StartedAt.IsZero() {
		p.Started = r.StartedAt.UTC().Format(time.RFC3339)
	}
	if !r.FinishedAt.IsZero() {
		p.Finished = r.FinishedAt.UTC().Format(time.RFC3339)
	}
	for _, k := range r.KPIs {
		hk := htmlKPI{Title: k.Title, Name: k.Name, REST: value(k.REST, k.Unit), GraphQL: value(k.GraphQL, k.Unit),
			Variance: variance(k), Interval: intervalText(k), Limit: limit(k), Outcome: outcome(k), Definition: k.Definition}
		if k.Gated {
			hk.Reason = k.Reason // why a gated row is inconclusive or not measured
		}
		hk.Class = map[string]string{"info": "info", "pass": "pass", "FAIL": "fail", "INCONCLUSIVE": "open", "NOT MEASURED": "open"}[hk.Outcome]
		if k.DeltaMin != nil && k.DeltaMax != nil {
			hk.Spread = fmt.Sprintf("%+.2f … %+.2f %s", *k.DeltaMin, *k.DeltaMax, k.DeltaUnit)
			p.HasSpread = true
		}
		p.KPIs = append(p.KPIs, hk)
	}
	// The banner names every rule that did not pass, as the terminal does.
	p.Failed = r.Reasons()
	if len(r.Rounds) > 1 {
		p.Rounds = r.Rounds
	}
	p.HasProblems = slices.ContainsFunc(r.Phases, func(ph Phase) bool {
		return ph.ResourcesError != "" || ph.SteadyFallback != "" || len(ph.ErrorsByClass) > 0 || ph.Aborted
	})
	for _, c := range r.Checks {
		hc := htmlCheck{Group: c.Group, Phase: c.Phase, Title: c.Title, Value: checkValue(c.Value, c.Unit),
			Limit: checkValue(c.Limit, c.Unit), Outcome: "pass", Class: "pass", Detail: c.Detail, Definition: c.Definition}
		switch {
		case c.Pass:
		case c.Outcome == kpi.OutcomeInconclusive, c.Outcome == kpi.OutcomeNotMeasured:
			hc.Outcome, hc.Class = strings.ToUpper(strings.ReplaceAll(string(c.Outcome), "_", " ")), "open"
		default:
			hc.Outcome, hc.Class = "FAIL", "fail"
		}
		p.Checks = append(p.Checks, hc)
	}
	for _, o := range r.Overhead {
		ho := htmlOverhead{Function: o.Function,
			REST: fmt.Sprintf("%.2f µs", o.RESTMicrosPerReq), GraphQL: fmt.Sprintf("%.2f µs", o.GraphQLMicrosPerReq),
			Samples: thousands(o.RESTSamples) + " / " + thousands(o.GraphQLSamples)}
		ho.Extra, ho.Share = overheadExtra(o)
		if o.WithinNoise {
			ho.Class = "info"
		}
		p.Overhead = append(p.Overhead, ho)
	}
	if len(r.Overhead) > 0 {
		p.OverheadBasis = r.overheadBasis()
		p.OverheadRule = overheadNoiseRule
	}
	for _, ph := range r.Phases {
		p.Phases = append(p.Phases, htmlPhaseRow(ph))
	}
	p.Host = fmt.Sprintf("Target PID %d on %d cores (GOMAXPROCS %d), %s %s/%s, soakd %s. Sampler interval %g s.",
		r.TargetPID, r.Host.Cores, r.Host.GOMAXPROCS, r.Host.GoVersion, r.Host.OS, r.Host.Arch, r.Host.Soakd, r.SamplerIntervalSeconds)
	if pin := r.Pinning; pin != nil {
		p.Pinning = pin.Describe()
	}
	p.TimeCharts = r.timeCharts(s)
	p.PhaseCharts = []svgChart{r.pauseChart(), r.latencyChart()}
	return p
}

func htmlPhaseRow(ph Phase) htmlPhase {
	l := ph.LatencyMs
	ms := func(v float64) string { return fmt.Sprintf("%.2f ms", v) }
	h := htmlPhase{
		Name: ph.Name, Arm: ph.Arm, Model: ph.Model, DriverPID: strconv.Itoa(ph.DriverPID),
		Requests: strconv.FormatInt(ph.Requests, 10), Errors: strconv.FormatInt(ph.Errors, 10),
		Throughput: fmt.Sprintf("%.0f req/s", ph.ThroughputRPS),
		P50:        ms(l.P50), P90: ms(l.P90), P99: ms(l.P99), P999: ms(l.P999), Max: ms(l.Max),
		CPU: "—", GC: "—", GCCycles: "—", PauseP99: "—", HeapLive: "—", RSS: "—",
		CPUPerReq: fmt.Sprintf("%.1f µs", ph.PerRequest.CPUMicros), AllocPerReq: fmt.Sprintf("%.0f B", ph.PerRequest.AllocBytes),
	}
	if ph.Errors > 0 {
		h.ErrorClass = "fail"
	}
	if s := ph.Resources; s != nil {
		if s.CPUKnown {
			h.CPU = fmt.Sprintf("%.2f %%", s.CPUMachinePercent)
		}
		if s.GCPercentKnown {
			h.GC = fmt.Sprintf("%.2f %%", s.GCPercent)
		}
		h.GCCycles = strconv.FormatUint(s.GCCycles, 10)
		h.PauseP99 = fmt.Sprintf("%.3f ms", s.GCPauseP99Ms)
		h.HeapLive = mib(s.HeapLiveBytesMax)
		h.RSS = mib(s.RSSBytesMax)
	}
	var probs []string
	if ph.ResourcesError != "" {
		probs = append(probs, "resources: "+ph.ResourcesError)
	}
	if ph.SteadyFallback != "" {
		probs = append(probs, "no steady window: "+ph.SteadyFallback)
	}
	for _, class := range slices.Sorted(maps.Keys(ph.ErrorsByClass)) {
		pr := fmt.Sprintf("%s: %d", class, ph.ErrorsByClass[class])
		if ex := ph.ErrorExamples[class]; len(ex) > 0 {
			pr += fmt.Sprintf(" (e.g. %q)", ex[0])
		}
		probs = append(probs, pr)
	}
	if ph.Aborted {
		probs = append(probs, "aborted")
	}
	h.Problems = probs
	return h
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

// timeAxis maps run time to the plot's x coordinate.
type timeAxis struct {
	origin time.Time
	lo, hi float64 // seconds since origin
}

func (a timeAxis) x(t float64) float64 {
	return plotLeft + (t-a.lo)/(a.hi-a.lo)*(chartW-plotLeft-plotRight)
}

func (r *Report) timeCharts(s *Samples) []svgChart {
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
	ax := timeAxis{origin: origin, lo: math.Inf(1), hi: math.Inf(-1)}
	widen := func(t time.Time) {
		if t.IsZero() {
			return
		}
		v := t.Sub(origin).Seconds()
		ax.lo, ax.hi = min(ax.lo, v), max(ax.hi, v)
	}
	for _, smp := range ss {
		widen(smp.Time)
	}
	for _, p := range r.Phases {
		widen(p.Start)
		widen(p.End)
	}
	if math.IsInf(ax.lo, 0) {
		ax.lo, ax.hi = 0, 1
	}
	if ax.hi <= ax.lo {
		ax.hi = ax.lo + 1
	}
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
	empty := ""
	var ser timeSeries
	if len(ss) < 2 {
		empty = noSamplesTx
	} else {
		ser = deriveSeries(ss, origin, cores, window)
	}
	specs := []struct {
		id, title, caption, class string
		segs                      [][]tsPoint
		unit, none                string
	}{
		{"cpu", "Target CPU, share of the machine",
			fmt.Sprintf("Δ(user + system CPU seconds of the target process, from the OS) ÷ (Δ wall seconds × %d cores) × 100, %s. The OS counts CPU time in whole ticks, so a shorter window would chart tick quantisation rather than load. 100 %% is every core of the machine busy: a window whose CPU seconds exceed Δ wall seconds × cores by at most two ticks (one per counter) plus the closing sample's own read time is drawn at 100 %%, and one exceeding that is a data error and left out.%s", cores, windows, coresNote),
			"s-cpu", ser.cpu, "%", "no window with the OS CPU times read at both ends"},
		{"gc", "GC % of the runtime's CPU",
			"Δ/cpu/classes/gc/total ÷ Δ/cpu/classes/total × 100 (runtime/metrics), computed only between samples where /gc/cycles/total advanced: the runtime updates its CPU classes when a GC cycle ends, so between other samples the ratio would be stale or 0 ÷ 0. Each point covers the time since the previous cycle seen.",
			"s-gc", ser.gc, "%", "no GC cycle ended between two samples"},
		{"heap", "Live heap",
			"/gc/heap/live:bytes at each sample: the heap marked live by the latest GC cycle (a gauge; it changes only when a cycle ends).",
			"s-heap", ser.heap, "B", "no heap readings"},
		{"alloc", "Allocation rate",
			fmt.Sprintf("Δ/gc/heap/allocs:bytes ÷ Δ wall seconds, %s: bytes allocated on the heap per second. A window over which a counter went backwards (a new process) is left out.", windows),
			"s-alloc", ser.alloc, "B/s", "no complete window within one process"},
	}
	charts := make([]svgChart, 0, len(specs))
	for _, sp := range specs {
		c := svgChart{ID: "chart-" + sp.id, Title: sp.title, Caption: sp.caption, W: chartW, H: chartH,
			PX: plotLeft, PY: plotTop, PW: chartW - plotLeft - plotRight, PH: chartH - plotTop - plotBottom, Empty: empty}
		c.Bands = r.phaseBands(ax, c)
		c.XTicks, c.XLabel = timeTicks(ax)
		vmax := 0.0
		for _, seg := range sp.segs {
			for _, pt := range seg {
				vmax = max(vmax, pt.v)
			}
		}
		scale, suffix := unitScale(sp.unit, vmax)
		top, ticks := niceAxis(vmax / scale)
		y := func(v float64) float64 { return c.PY + c.PH - v/scale/top*c.PH }
		for _, tv := range ticks {
			c.YTicks = append(c.YTicks, svgTick{Pos: c.PY + c.PH - tv/top*c.PH, Label: tickLabel(tv, ticks) + " " + suffix})
		}
		if empty == "" && len(sp.segs) == 0 {
			c.Empty = "no data: " + sp.none
		}
		var d strings.Builder
		for _, seg := range sp.segs {
			for i, pt := range reducePoints(seg, ax, c.PW) {
				cmd := "L"
				if i == 0 {
					cmd = "M"
				}
				fmt.Fprintf(&d, "%s%s %s", cmd, svgNum(ax.x(pt.t)), svgNum(y(pt.v)))
			}
			if len(seg) == 1 { // a lone point: draw a dot-sized stroke
				fmt.Fprintf(&d, "h0.01")
			}
		}
		if d.Len() > 0 {
			c.Series = []svgSeries{{Name: sp.title, Class: sp.class, D: d.String()}}
		}
		charts = append(charts, c)
	}
	return charts
}

// phaseBands shades each phase from its Start to its End (a phase without an
// end runs to the axis' end), labelled with its name.
func (r *Report) phaseBands(ax timeAxis, c svgChart) []svgBand {
	bands := make([]svgBand, 0, len(r.Phases))
	for i, p := range r.Phases {
		t0, t1 := ax.lo, ax.hi
		if !p.Start.IsZero() {
			t0 = p.Start.Sub(ax.origin).Seconds()
		}
		if !p.End.IsZero() && p.End.After(p.Start) {
			t1 = p.End.Sub(ax.origin).Seconds()
		}
		x0, x1 := ax.x(t0), ax.x(t1)
		b := svgBand{X: x0, W: max(x1-x0, 1), Class: armClass(p.Arm), Label: p.Name,
			Tip: fmt.Sprintf("phase %s (%s): %s to %s", p.Name, p.Arm, fmtRel(t0), fmtRel(t1))}
		if i%2 == 1 {
			b.Class += " odd"
		}
		if float64(utf8.RuneCountInString(p.Name))*charPx+6 <= b.W {
			b.LX, b.LY = x0+3, c.PY+11
		} else {
			// Narrow band: write the name upwards along its left edge.
			b.VerticalLabel = true
			b.Label = clipText(p.Name, int((c.PH-6)/charPx))
			b.LX, b.LY = x0+11, c.PY+4
			b.LabelTransform = fmt.Sprintf("rotate(90 %s %s)", svgNum(b.LX), svgNum(b.LY))
		}
		bands = append(bands, b)
	}
	return bands
}

func armClass(arm string) string {
	switch arm {
	case "rest":
		return "arm-rest"
	case "graphql":
		return "arm-graphql"
	}
	return "arm-other"
}

// fmtDuration formats d for a caption: "750 ms", "1 s", "2.5 s".
func fmtDuration(d time.Duration) string {
	if d < time.Second {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'g', 6, 64) + " ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'g', 6, 64) + " s"
}

func fmtRel(sec float64) string {
	return (time.Duration(math.Round(sec)) * time.Second).String()
}

// clipText shortens s to at most n characters, ending with "…" when cut.
func clipText(s string, n int) string {
	if n < 2 {
		n = 2
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	rs := []rune(s)
	return string(rs[:n-1]) + "…"
}

// reducePoints keeps a segment drawable: above maxPathPts points it keeps,
// per pixel column, the first, the lowest and the highest point in time
// order, so spikes survive.
func reducePoints(seg []tsPoint, ax timeAxis, width float64) []tsPoint {
	if len(seg) <= maxPathPts {
		return seg
	}
	cols := int(width)
	out := make([]tsPoint, 0, 3*cols)
	col, lo, hi, first := -1, tsPoint{}, tsPoint{}, tsPoint{}
	flush := func() {
		if col < 0 {
			return
		}
		pts := []tsPoint{first, lo, hi}
		slices.SortStableFunc(pts, func(a, b tsPoint) int { return cmp.Compare(a.t, b.t) })
		pts = slices.CompactFunc(pts, func(a, b tsPoint) bool { return a == b })
		out = append(out, pts...)
	}
	for _, p := range seg {
		c := int((ax.x(p.t) - plotLeft) / width * float64(cols))
		if c != col {
			flush()
			col, lo, hi, first = c, p, p, p
			continue
		}
		if p.v < lo.v {
			lo = p
		}
		if p.v > hi.v {
			hi = p
		}
	}
	flush()
	return out
}

// timeTicks returns the x ticks of a time axis and its label, in seconds,
// minutes or hours since the run started, by span.
func timeTicks(ax timeAxis) ([]svgTick, string) {
	span := ax.hi - ax.lo
	div, unit, name := 1.0, "s", "seconds"
	switch {
	case span >= 3*3600:
		div, unit, name = 3600, "h", "hours"
	case span >= 600:
		div, unit, name = 60, "min", "minutes"
	}
	vals := niceTicks(ax.lo/div, ax.hi/div, 8)
	ticks := make([]svgTick, 0, len(vals))
	for _, v := range vals {
		ticks = append(ticks, svgTick{Pos: ax.x(v * div), Label: tickLabel(v, vals) + " " + unit})
	}
	return ticks, "time since the run started (" + name + "); shaded: phases"
}

// unitScale picks the divisor and suffix for a value axis in unit whose
// largest value is vmax.
func unitScale(unit string, vmax float64) (float64, string) {
	switch unit {
	case "B", "B/s":
		rate := strings.TrimPrefix(unit, "B")
		for _, u := range []struct {
			div  float64
			name string
		}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
			if vmax >= u.div {
				return u.div, u.name + rate
			}
		}
		return 1, unit
	}
	return 1, unit
}

// niceStep is a round step (1, 2, 2.5 or 5 × 10^k) giving about target
// intervals over span.
func niceStep(span float64, target int) float64 {
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return 1
	}
	raw := span / float64(target)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}

// niceTicks lists the multiples of a round step within [lo, hi].
func niceTicks(lo, hi float64, target int) []float64 {
	step := niceStep(hi-lo, target)
	first := math.Ceil(lo/step - 1e-9)
	var out []float64
	for i := first; i*step <= hi+step*1e-9; i++ {
		// Round away float noise (0.6000000000000001) and negative zero.
		v, _ := strconv.ParseFloat(strconv.FormatFloat(i*step, 'g', 12, 64), 64)
		out = append(out, v+0)
	}
	return out
}

// niceAxis returns a round top for a value axis starting at 0 and holding
// vmax, with its ticks.
func niceAxis(vmax float64) (float64, []float64) {
	if !(vmax > 0) || math.IsInf(vmax, 0) {
		return 1, []float64{0, 0.25, 0.5, 0.75, 1}
	}
	step := niceStep(vmax, 4)
	top := math.Ceil(vmax/step-1e-9) * step
	return top, niceTicks(0, top, 4)
}

// tickLabel formats v with as many decimals as the ticks' spacing needs.
func tickLabel(v float64, ticks []float64) string {
	dec := 0
	if len(ticks) > 1 {
		step := math.Abs(ticks[1] - ticks[0])
		for dec < 6 && math.Abs(step*math.Pow(10, float64(dec))-math.Round(step*math.Pow(10, float64(dec)))) > 1e-6 {
			dec++
		}
	}
	if math.Abs(v) < 1e-12 {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// barGroup is one category of a bar chart: a phase and its bar values.
type barGroup struct {
	label, arm string
	values     []float64 // NaN when unknown
	missing    string
}

// barChart lays out grouped bars; log selects a log10 value axis (latency
// spans orders of magnitude).
func barChart(id, title, caption, unit string, series []string, groups []barGroup, log bool) svgChart {
	c := svgChart{ID: id, Title: title, Caption: caption, W: chartW, H: barChartH,
		PX: plotLeft, PY: plotTop + 18, PW: chartW - plotLeft - plotRight}
	c.PH = barChartH - c.PY - barBottom
	for i, name := range series {
		c.Legend = append(c.Legend, svgLegend{X: c.PX + float64(i)*90, Y: plotTop, Class: fmt.Sprintf("b%d", i), Label: name})
	}
	if len(groups) == 0 {
		c.Empty = "no phases"
		return c
	}
	vmax, vminPos := 0.0, math.Inf(1)
	for _, g := range groups {
		for _, v := range g.values {
			if v > 0 && !math.IsInf(v, 0) {
				vmax, vminPos = max(vmax, v), min(vminPos, v)
			}
		}
	}
	var y func(float64) float64
	if log {
		lo, hi := -1.0, 1.0
		if vmax > 0 {
			lo, hi = math.Floor(math.Log10(vminPos)), math.Ceil(math.Log10(vmax))
			if hi <= lo {
				hi = lo + 1
			}
		}
		y = func(v float64) float64 {
			if !(v > 0) {
				return c.PY + c.PH
			}
			return c.PY + c.PH - (math.Log10(v)-lo)/(hi-lo)*c.PH
		}
		for e := lo; e <= hi; e++ {
			c.YTicks = append(c.YTicks, svgTick{Pos: y(math.Pow(10, e)), Label: strconv.FormatFloat(math.Pow(10, e), 'f', max(0, int(-e)), 64) + " " + unit})
		}
	} else {
		top, ticks := niceAxis(vmax)
		y = func(v float64) float64 { return c.PY + c.PH - v/top*c.PH }
		for _, tv := range ticks {
			c.YTicks = append(c.YTicks, svgTick{Pos: y(tv), Label: tickLabel(tv, ticks) + " " + unit})
		}
	}
	gw := c.PW / float64(len(groups))
	bw := gw * 0.8 / float64(len(series))
	maxChars := int((gw - 4) / charPx)
	for gi, g := range groups {
		gx := c.PX + float64(gi)*gw
		c.Labels = append(c.Labels, svgText{X: gx + gw/2, Y: c.PY + c.PH + 14, Text: clipText(g.label, maxChars), Class: "glabel"})
		if g.missing != "" {
			c.Labels = append(c.Labels, svgText{X: gx + gw/2, Y: c.PY + c.PH - 8, Text: clipText(g.missing, maxChars), Class: "gmissing"})
			continue
		}
		for si, v := range g.values {
			if math.IsNaN(v) {
				continue
			}
			top := y(v)
			c.Bars = append(c.Bars, svgBar{X: gx + gw*0.1 + float64(si)*bw, Y: top, W: bw * 0.92, H: c.PY + c.PH - top,
				Class: fmt.Sprintf("b%d", si), Tip: fmt.Sprintf("%s %s: %.3f %s", g.label, series[si], v, unit)})
		}
	}
	// Brackets naming the arm of consecutive groups.
	for i := 0; i < len(groups); {
		j := i
		for j < len(groups) && groups[j].arm == groups[i].arm {
			j++
		}
		x0, x1 := c.PX+float64(i)*gw, c.PX+float64(j)*gw
		c.Spans = append(c.Spans, svgSpan{X: x0 + 2, W: x1 - x0 - 4, Y: c.PY + c.PH + 22, Label: clipText("arm: "+groups[i].arm, int((x1-x0)/charPx)),
			Class: armClass(groups[i].arm), LabelX: (x0 + x1) / 2, LabelY: c.PY + c.PH + 36, BackgroundH: c.PH})
		i = j
	}
	return c
}

// pauseChart draws each phase's GC pause p50, p99 and max.
func (r *Report) pauseChart() svgChart {
	groups := make([]barGroup, 0, len(r.Phases))
	for _, p := range r.Phases {
		g := barGroup{label: p.Name, arm: p.Arm}
		if s := p.Resources; s != nil {
			g.values = []float64{s.GCPauseP50Ms, s.GCPauseP99Ms, s.GCPauseMaxMs}
		} else {
			g.missing = "no resources"
		}
		groups = append(groups, g)
	}
	return barChart("chart-pauses", "GC pauses per phase",
		"Stop-the-world GC pauses from /sched/pauses/total/gc:seconds, differenced over each phase's steady window: p50, p99 and max, each the upper bound of the histogram bucket holding it (never understated).",
		"ms", []string{"p50", "p99", "max"}, groups, false)
}

// latencyChart draws each phase's latency percentiles, phases grouped by arm.
func (r *Report) latencyChart() svgChart {
	phases := slices.Clone(r.Phases)
	order := map[string]int{"rest": 0, "graphql": 1}
	rank := func(arm string) int {
		if v, ok := order[arm]; ok {
			return v
		}
		return 2
	}
	slices.SortStableFunc(phases, func(a, b Phase) int { return rank(a.Arm) - rank(b.Arm) })
	groups := make([]barGroup, 0, len(phases))
	for _, p := range phases {
		l := p.LatencyMs
		g := barGroup{label: p.Name, arm: p.Arm, values: []float64{l.P50, l.P90, l.P99, l.P999, l.Max}}
		if p.Requests == 0 {
			g.values, g.missing = nil, "no requests"
		}
		groups = append(groups, g)
	}
	return barChart("chart-latency", "Latency percentiles per phase, grouped by arm",
		"Driver-side request latency over each whole phase (HDR histogram), in milliseconds on a log scale: p50, p90, p99, p99.9 and max. Closed-model phases measure service time; open-model phases measure from each request's intended send time.",
		"ms", []string{"p50", "p90", "p99", "p99.9", "max"}, groups, true)
}

const htmlTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>soakd report {{.Run}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0 auto; max-width: 1200px; padding: 16px 24px; color: #1f2328; background: #fff; line-height: 1.4; }
h1 { font-size: 1.6em; margin: 0.2em 0; }
h2 { font-size: 1.25em; margin-top: 1.6em; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
.meta { color: #57606a; }
.verdict { padding: 12px 18px; border-radius: 6px; font-size: 1.3em; font-weight: 700; color: #fff; margin: 12px 0; }
.verdict.pass { background: #1a7f37; } .verdict.fail { background: #cf222e; } .verdict.aborted { background: #bc4c00; } .verdict.running { background: #0969da; } .verdict.inconclusive { background: #9a6700; } .verdict.other { background: #57606a; }
.verdict .err { font-weight: 400; font-size: 0.8em; display: block; margin: 0.3em 0 0 0; padding-left: 1.2em; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 8px 0; font-size: 0.9em; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.pass { color: #1a7f37; font-weight: 600; } td.fail { color: #cf222e; font-weight: 700; } td.info { color: #57606a; } td.open { color: #9a6700; font-weight: 700; }
dl.defs dt { font-weight: 600; } dl.defs dd { margin: 0 0 6px 16px; color: #57606a; }
figure.chart { margin: 16px 0 24px; }
figure.chart svg { width: 100%; max-width: 960px; height: auto; display: block; border: 1px solid #d0d7de; background: #fff; }
figcaption { font-size: 0.85em; color: #57606a; max-width: 960px; margin-top: 4px; }
svg text { font-family: system-ui, sans-serif; font-size: 11px; fill: #1f2328; }
svg .plot-bg { fill: #fff; }
svg .axis { stroke: #1f2328; stroke-width: 1; }
svg .grid { stroke: #d8dee4; stroke-width: 1; }
svg .xtick, svg .ytick { font-size: 10px; fill: #424a53; }
svg .axis-label { font-size: 11px; fill: #57606a; }
svg .band rect { fill-opacity: 0.16; stroke: none; }
svg .band.odd rect { fill-opacity: 0.26; }
svg .band .band-label { font-size: 10px; fill: #424a53; }
svg .arm-rest rect, svg rect.arm-rest { fill: #0969da; }
svg .arm-graphql rect, svg rect.arm-graphql { fill: #bf3989; }
svg .arm-other rect, svg rect.arm-other { fill: #8c959f; }
svg rect.span-bg { fill-opacity: 0.07; }
svg line.span { stroke: #57606a; stroke-width: 1.5; }
svg path.series { fill: none; stroke-width: 1.6; stroke-linejoin: round; }
svg path.s-cpu { stroke: #0550ae; } svg path.s-gc { stroke: #cf222e; } svg path.s-heap { stroke: #1a7f37; } svg path.s-alloc { stroke: #8250df; }
svg .empty { font-size: 16px; fill: #57606a; }
svg .glabel { font-size: 10px; text-anchor: middle; }
svg .gmissing { font-size: 10px; text-anchor: middle; fill: #57606a; }
svg .b0 { fill: #9ecae1; } svg .b1 { fill: #4292c6; } svg .b2 { fill: #08519c; } svg .b3 { fill: #08306b; } svg .b4 { fill: #f16913; }
#chart-pauses .b0 { fill: #fdd0a2; } #chart-pauses .b1 { fill: #fd8d3c; } #chart-pauses .b2 { fill: #a63603; }
</style>
</head>
<body>
<h1>soakd report {{.Run}}</h1>
<p class="meta">Profile <strong>{{.Profile}}</strong>{{if .Description}}: {{.Description}}{{end}}. Status: {{.Status}}.{{if .Started}} Started {{.Started}}{{end}}{{if .Finished}}, finished {{.Finished}}{{end}}.</p>
<div class="verdict {{.VerdictClass}}" id="verdict">Verdict: {{.Verdict}}{{if .Error}}<span class="err">{{.Error}}</span>{{end}}{{if .Failed}}<ul class="err">{{range .Failed}}<li>{{.}}</li>{{end}}</ul>{{end}}</div>

<h2>{{.Heading}}</h2>
{{if .KPIs}}
<p>{{.ArmA}} phase{{if gt (len .PhasesA) 1}}s{{end}} {{range $i, $n := .PhasesA}}{{if $i}}, {{end}}<code>{{$n}}</code>{{end}}{{.ArmSep}}{{.ArmB}} phase{{if gt (len .PhasesB) 1}}s{{end}} {{range $i, $n := .PhasesB}}{{if $i}}, {{end}}<code>{{$n}}</code>{{end}}{{.ArmSep}}each over its steady window. Variance is {{.ArmB}} − {{.ArmA}}, in points for percentages and in percent of {{.ArmA}} otherwise.</p>
<div class="scroll"><table id="kpis">
<tr><th>Metric</th><th>{{.ArmA}}</th><th>{{.ArmB}}</th><th>Variance (mean)</th>{{if .HasSpread}}<th>Confidence interval</th><th>Spread across rounds</th>{{end}}<th>KPI</th><th>Result</th></tr>
{{range .KPIs}}<tr><td title="{{.Definition}}">{{.Title}}</td><td class="num">{{.REST}}</td><td class="num">{{.GraphQL}}</td><td class="num">{{.Variance}}</td>{{if $.HasSpread}}<td class="num">{{.Interval}}</td><td class="num">{{.Spread}}</td>{{end}}<td class="num">{{.Limit}}</td><td class="{{.Class}}"{{if .Reason}} title="{{.Reason}}"{{end}}>{{.Outcome}}</td></tr>
{{end}}</table></div>
{{if .Rounds}}<p>{{len .Rounds}} interleaved rounds (A B, B A, …); values are means across rounds and the gate rule is <strong>{{.Gate}}</strong>: pass when the whole confidence interval is inside the limit, fail when it is wholly beyond, inconclusive otherwise. A round's own verdict compares its point values only.</p>
<table id="rounds"><tr><th>Round</th><th>{{.ArmA}} phase</th><th>{{.ArmB}} phase</th><th>Verdict</th></tr>
{{range .Rounds}}<tr><td class="num">{{.Round}}</td><td>{{.REST}}</td><td>{{.GraphQL}}</td><td>{{.Verdict}}</td></tr>
{{end}}</table>{{end}}
<dl class="defs">{{range .KPIs}}<dt>{{.Title}} (<code>{{.Name}}</code>)</dt><dd>{{.Definition}}.</dd>{{end}}</dl>
{{else}}<p>No KPIs were evaluated: the run did not reach the end of both arms.</p>{{end}}

{{if .Checks}}<h2>Checks</h2>
<div class="scroll"><table id="checks">
<tr><th>Group</th><th>Phase</th><th>Rule</th><th>Measured</th><th>Limit</th><th>Result</th><th>Detail</th></tr>
{{range .Checks}}<tr><td>{{.Group}}</td><td>{{.Phase}}</td><td title="{{.Definition}}">{{.Title}}</td><td class="num">{{.Value}}</td><td class="num">{{.Limit}}</td><td class="{{.Class}}">{{.Outcome}}</td><td>{{.Detail}}</td></tr>
{{end}}</table></div>{{end}}

{{if .Overhead}}<h2>Where GraphQL spends the extra CPU</h2>
<p>Self CPU per request by function in each arm's CPU profiles, {{.OverheadBasis}}; extra is GraphQL − REST. {{.OverheadRule}}</p>
<div class="scroll"><table id="overhead">
<tr><th>Function</th><th>REST</th><th>GraphQL</th><th>Extra</th><th>Share of extra</th><th>Samples (REST / GraphQL)</th></tr>
{{range .Overhead}}<tr><td><code>{{.Function}}</code></td><td class="num">{{.REST}}</td><td class="num">{{.GraphQL}}</td><td class="num {{.Class}}">{{.Extra}}</td><td class="num {{.Class}}">{{.Share}}</td><td class="num">{{.Samples}}</td></tr>
{{end}}</table></div>{{end}}

<h2>Target over time</h2>
{{range .TimeCharts}}{{template "chart" .}}{{end}}

<h2>Per phase</h2>
{{range .PhaseCharts}}{{template "chart" .}}{{end}}

<h2>Phases</h2>
<p>Driver view: every request of the phase; throughput over the steady window.</p>
<div class="scroll"><table id="phases">
<tr><th>Phase</th><th>Arm</th><th>Model</th><th>Driver PID</th><th>Requests</th><th>Errors</th><th>Throughput</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>
{{range .Phases}}<tr><td>{{.Name}}</td><td>{{.Arm}}</td><td>{{.Model}}</td><td class="num">{{.DriverPID}}</td><td class="num">{{.Requests}}</td><td class="num {{.ErrorClass}}">{{.Errors}}</td><td class="num">{{.Throughput}}</td><td class="num">{{.P50}}</td><td class="num">{{.P90}}</td><td class="num">{{.P99}}</td><td class="num">{{.P999}}</td><td class="num">{{.Max}}</td></tr>
{{end}}</table></div>
<p>Target view over each steady window; per request is the target's rate ÷ throughput.</p>
<div class="scroll"><table id="resources">
<tr><th>Phase</th><th>CPU (machine)</th><th>GC %</th><th>GC cycles</th><th>GC pause p99</th><th>Heap live max</th><th>RSS max</th><th>CPU / request</th><th>Allocated / request</th></tr>
{{range .Phases}}<tr><td>{{.Name}}</td><td class="num">{{.CPU}}</td><td class="num">{{.GC}}</td><td class="num">{{.GCCycles}}</td><td class="num">{{.PauseP99}}</td><td class="num">{{.HeapLive}}</td><td class="num">{{.RSS}}</td><td class="num">{{.CPUPerReq}}</td><td class="num">{{.AllocPerReq}}</td></tr>
{{end}}</table></div>
{{if .HasProblems}}<h3>Problems</h3>
<ul id="problems">{{range .Phases}}{{if .Problems}}<li><strong>{{.Name}}</strong>: {{range $i, $p := .Problems}}{{if $i}}; {{end}}{{$p}}{{end}}</li>{{end}}{{end}}</ul>{{end}}

{{if .Notes}}<h2>Notes</h2>
<ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<p class="meta">{{.Host}}{{if .Pinning}} {{.Pinning}}{{end}}</p>
</body>
</html>
{{define "chart"}}<figure class="chart" id="{{.ID}}">
<svg class="chart-svg" viewBox="0 0 {{f .W}} {{f .H}}" role="img" aria-labelledby="{{.ID}}-title">
<title id="{{.ID}}-title">{{.Title}}: {{.Caption}}</title>
<rect class="plot-bg" x="{{f .PX}}" y="{{f .PY}}" width="{{f .PW}}" height="{{f .PH}}"></rect>
{{range .Spans}}<rect class="span-bg {{.Class}}" x="{{f .X}}" y="{{f $.PY}}" width="{{f .W}}" height="{{f .BackgroundH}}"></rect>
{{end}}{{range .Bands}}<g class="band {{.Class}}"><rect x="{{f .X}}" y="{{f $.PY}}" width="{{f .W}}" height="{{f $.PH}}"><title>{{.Tip}}</title></rect>{{if .VerticalLabel}}<text class="band-label" x="{{f .LX}}" y="{{f .LY}}" transform="{{.LabelTransform}}">{{.Label}}</text>{{else}}<text class="band-label" x="{{f .LX}}" y="{{f .LY}}">{{.Label}}</text>{{end}}</g>
{{end}}{{range .YTicks}}<line class="grid" x1="{{f $.PX}}" x2="{{f (plus $.PX $.PW)}}" y1="{{f .Pos}}" y2="{{f .Pos}}"></line><text class="ytick" x="{{f (minus $.PX 6)}}" y="{{f (plus .Pos 3.5)}}" text-anchor="end">{{.Label}}</text>
{{end}}{{range .XTicks}}<line class="axis" x1="{{f .Pos}}" x2="{{f .Pos}}" y1="{{f (plus $.PY $.PH)}}" y2="{{f (plus $.PY (plus $.PH 5))}}"></line><text class="xtick" x="{{f .Pos}}" y="{{f (plus $.PY (plus $.PH 17))}}" text-anchor="middle">{{.Label}}</text>
{{end}}<line class="axis" x1="{{f .PX}}" x2="{{f .PX}}" y1="{{f .PY}}" y2="{{f (plus .PY .PH)}}"></line><line class="axis" x1="{{f .PX}}" x2="{{f (plus .PX .PW)}}" y1="{{f (plus .PY .PH)}}" y2="{{f (plus .PY .PH)}}"></line>
{{range .Series}}<path class="series {{.Class}}" d="{{.D}}"><title>{{.Name}}</title></path>
{{end}}{{range .Bars}}<rect class="bar {{.Class}}" x="{{f .X}}" y="{{f .Y}}" width="{{f .W}}" height="{{f .H}}"><title>{{.Tip}}</title></rect>
{{end}}{{range .Labels}}<text class="{{.Class}}" x="{{f .X}}" y="{{f .Y}}">{{.Text}}</text>
{{end}}{{range .Spans}}<line class="span" x1="{{f .X}}" x2="{{f (plus .X .W)}}" y1="{{f .Y}}" y2="{{f .Y}}"></line><text class="glabel" x="{{f .LabelX}}" y="{{f .LabelY}}">{{.Label}}</text>
{{end}}{{range .Legend}}<rect class="{{.Class}}" x="{{f .X}}" y="{{f (minus .Y 9)}}" width="12" height="10"></rect><text x="{{f (plus .X 16)}}" y="{{f .Y}}">{{.Label}}</text>
{{end}}{{if .XLabel}}<text class="axis-label" x="{{f (plus .PX (half .PW))}}" y="{{f (minus .H 6)}}" text-anchor="middle">{{.XLabel}}</text>
{{end}}{{if .Empty}}<text class="empty" x="{{f (plus .PX (half .PW))}}" y="{{f (plus .PY (half .PH))}}" text-anchor="middle">{{.Empty}}</text>
{{end}}</svg>
<figcaption><strong>{{.Title}}.</strong> {{.Caption}}</figcaption>
</figure>
{{end}}`
