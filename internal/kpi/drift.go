package kpi

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// CycleFigures are one soak cycle's figures that drift rules watch.
type CycleFigures struct {
	Cycle int `json:"cycle"`
	// Run is the cycle's run id.
	Run string `json:"run"`
	// HeapLiveBytes is the live heap after the cycle's last phase, its
	// settle period and forced GCs.
	HeapLiveBytes float64 `json:"heap_live_bytes"`
	// RSSBytes is the largest resident set seen during the cycle.
	RSSBytes float64 `json:"rss_bytes"`
	// Goroutines after the cycle settled.
	Goroutines float64 `json:"goroutines"`
	// GCPercent and CPUMicrosPerRequest are the GraphQL arm's.
	GCPercent           float64 `json:"gc_percent"`
	CPUMicrosPerRequest float64 `json:"cpu_us_per_request"`
	// RESTGCPercent and RESTCPUMicrosPerRequest are the same cycle's REST
	// control arm's figures, in the same units: what the GraphQL arm's are
	// judged against (DriftLimits.RelativeToControl). nil (null) when not
	// measured, NotMeasured saying why: a profile without a REST arm, or
	// the figure not measured in any of the cycle's rounds.
	RESTGCPercent           *float64 `json:"rest_gc_percent"`
	RESTCPUMicrosPerRequest *float64 `json:"rest_cpu_us_per_request"`
	// NotMeasured names, by the JSON name of the field (gc_percent,
	// rest_cpu_us_per_request, …), the cycle's figures that were not
	// measured, with the reason: a rule whose figure a judged cycle lacks
	// is not measured, never judged on a 0.
	NotMeasured map[string]string `json:"not_measured,omitempty"`
}

// Drift bases: how a rule forms each cycle's figure (DriftRule.Basis).
const (
	// BasisAbsolute judges the figure itself: the process's (live heap,
	// RSS, goroutines) or the GraphQL arm's alone.
	BasisAbsolute = "absolute"
	// BasisRelativeToControl judges the GraphQL arm's figure against the
	// REST control arm's measured in the same cycle: CPU per request as
	// GraphQL ÷ REST, GC % as GraphQL − REST in points.
	BasisRelativeToControl = "relative_to_control"
)

// DriftLimits say how far a soak may move from its warm baseline.
type DriftLimits struct {
	// WarmupCycles are the first cycles left out of every drift rule: a
	// cold process (caches filling, the JIT of a runtime that has one, a
	// heap growing to its working size) is no baseline.
	WarmupCycles int
	// BaselineCycles is how many cycles after the warm-up form the baseline
	// (their median).
	BaselineCycles int
	// SustainedCycles is how many consecutive cycles beyond the limit fail a
	// rule (a sustained shift); fewer are warnings, never a fail.
	SustainedCycles int
	// SecondsPerCycle is the soak's mean cycle length, pause included, in
	// seconds; 0 when not known. It turns a trend per cycle into a time at
	// which the limit would be crossed.
	SecondsPerCycle float64
	// HorizonSeconds is the soak's planned length (0: none); the trend is
	// projected to it and to 24 h.
	HorizonSeconds float64
	// HeapLiveRatio, RSSRatio and CPUPerRequestRatio bound cycle N ÷ baseline.
	HeapLiveRatio      float64
	RSSRatio           float64
	CPUPerRequestRatio float64
	// GoroutinesIncrease bounds cycle N − baseline, in goroutines.
	GoroutinesIncrease float64
	// GCPercentIncreasePoints bounds cycle N − baseline, in points.
	GCPercentIncreasePoints float64
	// RelativeToControl judges cpu_per_request_drift and gc_percent_drift
	// on the GraphQL arm's figure against the REST control's of the same
	// cycle (BasisRelativeToControl), so that machine-wide noise hitting
	// both arms in a cycle (a busy neighbour, a slower hour) cancels; a
	// rule falls back to the absolute figure, saying why, when a judged
	// cycle has no control figure.
	RelativeToControl bool
}

// DriftRule is one drift rule's outcome over all cycles.
type DriftRule struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Unit  string `json:"unit"`
	// Basis is how each cycle's figure is formed: BasisRelativeToControl
	// (the GraphQL arm's against the REST control's of the same cycle) or
	// BasisAbsolute (the figure itself); every figure of the rule
	// (Baseline, Worst, the trend) is in that basis, in Unit.
	Basis string `json:"basis"`
	// BasisReason says why a rule is absolute: the process's own figure
	// (one process serves both arms, so there is no control heap), the
	// key turned off, or a judged cycle without its control figure.
	BasisReason string `json:"basis_reason,omitempty"`
	// LeftOut are the judged cycles a relative rule left out for lacking
	// their control figure (at most a quarter of them; more, and the rule
	// is absolute), named in Detail with the first one's reason.
	LeftOut []int `json:"left_out_cycles,omitempty"`
	// Baseline is the median over the baseline cycles (after the warm-up).
	Baseline float64 `json:"baseline"`
	// JudgedCycles is how many cycles the rule judged: those after the
	// warm-up that completed.
	JudgedCycles int `json:"judged_cycles"`
	// Worst is the value of the cycle furthest past the baseline, and
	// WorstCycle that cycle.
	Worst      float64 `json:"worst"`
	WorstCycle int     `json:"worst_cycle"`
	// Measured is the drift the trend gives at the last cycle, as the rule
	// compares it (a ratio or a difference) against Limit: the change of
	// the least-squares line from the baseline cycles to the last cycle.
	// MeasuredLow and MeasuredHigh bound it (95 %); absent with fewer than
	// 3 judged cycles (no trend).
	Measured     float64  `json:"measured"`
	MeasuredLow  *float64 `json:"measured_low,omitempty"`
	MeasuredHigh *float64 `json:"measured_high,omitempty"`
	Limit        float64  `json:"limit"`
	// LongestOver is the longest run of consecutive cycles beyond the
	// limit against the baseline: SustainedCycles of them fail the rule.
	LongestOver int `json:"longest_over"`
	// Shape tells a steady slope from a warm-up that levels off: "steady
	// rise", "levelling off", "rising" (too few cycles to tell which),
	// "falling" or "flat" ("" without a trend).
	Shape string `json:"shape,omitempty"`
	// Projection says when the trend would cross the limit ("" when it is
	// not rising, or cannot be timed).
	Projection string `json:"projection,omitempty"`
	// Warnings name cycles beyond the limit that did not make a sustained
	// shift: one noisy cycle is a warning, not a fail.
	Warnings []string `json:"warnings,omitempty"`
	// SlopePerCycle is the least-squares trend over all cycles, in Unit per
	// cycle, with its standard error (0 with fewer than 3 cycles).
	SlopePerCycle float64 `json:"slope_per_cycle"`
	SlopeStdErr   float64 `json:"slope_stderr"`
	// Outcome is fail on a sustained shift (SustainedCycles in a row beyond
	// the limit) or when the trend's whole interval is beyond it, pass when
	// its whole interval is within, inconclusive otherwise (the interval
	// straddles the limit, or too few cycles for a trend), not_measured
	// while too few cycles exist for a baseline (or the baseline is 0 for a
	// ratio): a short soak never reads as a passed drift rule.
	Outcome Outcome `json:"outcome"`
	// Pass is Outcome == pass (kept for soak.json readers of version 1).
	Pass           bool   `json:"pass"`
	Detail         string `json:"detail"`
	Definition     string `json:"definition"`
	judgedByRatio  bool
	valueOfFigures func(CycleFigures) float64
	// figures are the JSON names of the CycleFigures fields the rule's
	// figure is formed from (CycleFigures.NotMeasured).
	figures []string
	// controlled is true for a rule that has a control figure (gcDrift,
	// cpuDrift), whatever basis it took.
	controlled bool
	// keep, when set, picks the judged cycles the rule judges (a relative
	// rule's: those with their control figure); leftOutWhy is why the
	// first of LeftOut was left out.
	keep       func(CycleFigures) bool
	leftOutWhy string
}

// Drift judges soak cycles against their warm baseline: every rule is not
// measured while too few cycles exist to judge (with a Detail saying so), so
// a soak neither fails nor passes on its first cycles. Rules: live heap
// after GC, RSS and CPU per request as ratios; goroutines and GC % as
// differences. CPU per request and GC % are judged relative to the REST
// control of the same cycle when l.RelativeToControl (cpuDrift, gcDrift).
func Drift(cycles []CycleFigures, l DriftLimits) []DriftRule {
	judged := cycles[min(max(l.WarmupCycles, 0), len(cycles)):]
	const oneProcess = "one process serves both arms, so there is no control figure to judge it against"
	rules := []DriftRule{
		{Name: "heap_live_drift", Title: "Live heap after GC", Unit: "bytes", Limit: l.HeapLiveRatio, judgedByRatio: true,
			valueOfFigures: func(c CycleFigures) float64 { return c.HeapLiveBytes }, figures: []string{"heap_live_bytes"},
			Definition: fmt.Sprintf("live heap after each cycle's settle and forced GCs, ≤ %g × the median of cycles %d to %d (after %d warm-up)", l.HeapLiveRatio, l.WarmupCycles+1, l.WarmupCycles+max(l.BaselineCycles, 1), l.WarmupCycles)},
		{Name: "rss_drift", Title: "Resident memory", Unit: "bytes", Limit: l.RSSRatio, judgedByRatio: true,
			valueOfFigures: func(c CycleFigures) float64 { return c.RSSBytes }, figures: []string{"rss_bytes"},
			Definition: fmt.Sprintf("largest RSS of each cycle, ≤ %g × the baseline", l.RSSRatio)},
		{Name: "goroutine_drift", Title: "Goroutines", Unit: "goroutines", Limit: l.GoroutinesIncrease,
			valueOfFigures: func(c CycleFigures) float64 { return c.Goroutines }, figures: []string{"goroutines"},
			Definition: fmt.Sprintf("goroutines after each cycle settled, ≤ baseline + %g", l.GoroutinesIncrease)},
		gcDrift(judged, l),
		cpuDrift(judged, l),
	}
	for i := range rules {
		if rules[i].Basis == "" {
			rules[i].Basis, rules[i].BasisReason = BasisAbsolute, oneProcess
		}
		judgeDrift(&rules[i], cycles, l)
	}
	return rules
}

// gcDrift is gc_percent_drift. Relative to the control it judges the
// difference GraphQL − REST in points, not their ratio: the limit
// (gc_percent_increase_points) stays in the points the KPI gate's GC row
// uses; REST's GC share is small (1–2 % on the built-in target), and a
// ratio over a small share multiplies that arm's noise; and a machine-wide
// shift common to both arms of a cycle cancels in the difference when it
// adds GC time (idle GC workers taking a quiet machine's idle CPU), and
// shrinks to (f − 1) × the arms' gap, instead of (f − 1) × GraphQL's
// level, when it multiplies both by f.
func gcDrift(judged []CycleFigures, l DriftLimits) DriftRule {
	r := DriftRule{Name: "gc_percent_drift", Limit: l.GCPercentIncreasePoints, controlled: true}
	rest := func(c CycleFigures) *float64 { return c.RESTGCPercent }
	r.Basis, r.BasisReason, r.LeftOut, r.leftOutWhy = basis(judged, l, "rest_gc_percent", rest, false)
	if r.Basis == BasisRelativeToControl {
		r.keep = func(c CycleFigures) bool { return hasControl(c, rest, false) }
		r.Title, r.Unit, r.figures = "GC % time (GraphQL − REST)", "points", []string{"gc_percent", "rest_gc_percent"}
		r.valueOfFigures = func(c CycleFigures) float64 { return c.GCPercent - *c.RESTGCPercent }
		r.Definition = fmt.Sprintf("GraphQL arm's GC %% time minus the REST control's of the same cycle, in points, ≤ baseline + %g points", l.GCPercentIncreasePoints)
		return r
	}
	r.Title, r.Unit, r.figures = "GC % time (GraphQL)", "%", []string{"gc_percent"}
	r.valueOfFigures = func(c CycleFigures) float64 { return c.GCPercent }
	r.Definition = fmt.Sprintf("GraphQL arm's GC %% time, ≤ baseline + %g points", l.GCPercentIncreasePoints)
	return r
}

// cpuDrift is cpu_per_request_drift. Relative to the control it judges the
// ratio GraphQL ÷ REST of the cycle's CPU µs per request, as soakd
// compare's cpu_per_request_vs_control does: a slower machine multiplies
// both arms' CPU per request, and that factor cancels in the ratio.
func cpuDrift(judged []CycleFigures, l DriftLimits) DriftRule {
	r := DriftRule{Name: "cpu_per_request_drift", Limit: l.CPUPerRequestRatio, judgedByRatio: true, controlled: true}
	rest := func(c CycleFigures) *float64 { return c.RESTCPUMicrosPerRequest }
	r.Basis, r.BasisReason, r.LeftOut, r.leftOutWhy = basis(judged, l, "rest_cpu_us_per_request", rest, true)
	if r.Basis == BasisRelativeToControl {
		r.keep = func(c CycleFigures) bool { return hasControl(c, rest, true) }
		r.Title, r.Unit, r.figures = "CPU per request (GraphQL ÷ REST)", "× REST", []string{"cpu_us_per_request", "rest_cpu_us_per_request"}
		r.valueOfFigures = func(c CycleFigures) float64 { return c.CPUMicrosPerRequest / *c.RESTCPUMicrosPerRequest }
		r.Definition = fmt.Sprintf("GraphQL arm's CPU µs per request ÷ the REST control's of the same cycle, ≤ %g × the baseline", l.CPUPerRequestRatio)
		return r
	}
	r.Title, r.Unit, r.figures = "CPU per request (GraphQL)", "µs", []string{"cpu_us_per_request"}
	r.valueOfFigures = func(c CycleFigures) float64 { return c.CPUMicrosPerRequest }
	r.Definition = fmt.Sprintf("GraphQL arm's CPU µs per request, ≤ %g × the baseline", l.CPUPerRequestRatio)
	return r
}

// maxLeftOut is the largest share of the judged cycles a relative rule
// may leave out for lacking their control figure: a few cycles whose REST
// phase measured no GC (a short window between two collections) do not
// throw the control away for the whole soak, while a series thinner than
// three quarters of the cycles no longer stands for the soak.
const maxLeftOut = 0.25

// basis chooses a control-judged rule's basis: relative to the control
// when l.RelativeToControl and at most maxLeftOut of the judged cycles lack
// their control figure (rest; positive: it must be above 0 to divide by),
// which are then left out of the rule (leftOut, with why for the first);
// else absolute with the reason. One basis holds for the whole series: a
// trend over ratios mixed with µs means nothing.
func basis(judged []CycleFigures, l DriftLimits, figure string, rest func(CycleFigures) *float64, positive bool) (b, reason string, leftOut []int, why string) {
	if !l.RelativeToControl {
		return BasisAbsolute, "soak.drift.relative_to_control is false: judged on the GraphQL arm's figure alone", nil, ""
	}
	for _, c := range judged {
		v := rest(c)
		w := c.NotMeasured[figure]
		switch {
		case v == nil && w == "":
			w = "the REST control's figure was not measured"
		case v != nil && positive && *v <= 0:
			w = "the REST control's figure is 0, so no ratio can be formed"
		case v != nil:
			continue
		}
		if why == "" {
			why = fmt.Sprintf("cycle %d: %s", c.Cycle, w)
		}
		leftOut = append(leftOut, c.Cycle)
	}
	if float64(len(leftOut)) <= maxLeftOut*float64(len(judged)) {
		return BasisRelativeToControl, "", leftOut, why
	}
	return BasisAbsolute, fmt.Sprintf("judged on the GraphQL arm's figure alone, not relative to the REST control: %d of the %d judged cycles had no control figure, more than %.0f %% (%s)",
		len(leftOut), len(judged), maxLeftOut*100, why), nil, ""
}

// hasControl reports whether c has the control figure of a relative rule
// (rest; positive: above 0).
func hasControl(c CycleFigures, rest func(CycleFigures) *float64, positive bool) bool {
	v := rest(c)
	return v != nil && (!positive || *v > 0)
}

// countCycles names cycles: "cycle 4", "cycles 4, 5 and 7", or "12 cycles"
// when there are more than five.
func countCycles(cycles []int) string {
	cs := make([]string, len(cycles))
	for i, c := range cycles {
		cs[i] = strconv.Itoa(c)
	}
	switch {
	case len(cs) == 1:
		return "cycle " + cs[0]
	case len(cs) <= 5:
		return "cycles " + strings.Join(cs[:len(cs)-1], ", ") + " and " + cs[len(cs)-1]
	}
	return fmt.Sprintf("%d cycles", len(cs))
}

// judgeDrift judges one rule: the warm-up left out, a median baseline, a
// sustained shift or the trend's interval against the limit (see
// DriftRule.Outcome), never one cycle.
func judgeDrift(r *DriftRule, cycles []CycleFigures, l DriftLimits) {
	w, b, k := max(l.WarmupCycles, 0), max(l.BaselineCycles, 1), max(l.SustainedCycles, 1)
	r.Outcome = OutcomeNotMeasured
	defer func() { r.Pass = r.Outcome == OutcomePass }()
	judged := cycles[min(w, len(cycles)):]
	if r.keep != nil {
		judged = slices.DeleteFunc(slices.Clone(judged), func(c CycleFigures) bool { return !r.keep(c) })
	}
	r.JudgedCycles = len(judged)
	if len(judged) <= b {
		r.Detail = fmt.Sprintf("not measured: %d cycles after the %d warm-up (soak.drift.warmup_cycles); drift is judged once %d baseline cycles (soak.drift.baseline_cycles) and at least one more have run",
			len(judged), w, b)
		return
	}
	for _, c := range judged {
		for _, f := range r.figures {
			if why, ok := c.NotMeasured[f]; ok {
				r.Detail = fmt.Sprintf("not measured: cycle %d's %s was not measured (%s), and a rule is never judged on a figure it lacks", c.Cycle, f, why)
				return
			}
		}
	}
	base := make([]float64, b)
	for i, c := range judged[:b] {
		base[i] = r.valueOfFigures(c)
	}
	r.Baseline = Median(base)
	if r.judgedByRatio && r.Baseline <= 0 {
		r.Detail = "not measured: the baseline is 0, so no ratio can be formed"
		return
	}
	// against is v as the rule compares it with the limit.
	against := func(v float64) float64 {
		if r.judgedByRatio {
			return v / r.Baseline
		}
		return v - r.Baseline
	}
	// A sustained shift: k cycles in a row beyond the limit.
	r.Worst, r.WorstCycle = math.Inf(-1), 0
	run := 0
	var over []string
	for _, c := range judged[b:] {
		v := r.valueOfFigures(c)
		if v > r.Worst {
			r.Worst, r.WorstCycle = v, c.Cycle
		}
		if against(v) > r.Limit {
			run++
			r.LongestOver = max(r.LongestOver, run)
			over = append(over, fmt.Sprintf("cycle %d at %s", c.Cycle, r.amount(v, false)))
		} else {
			run = 0
		}
	}
	// The trend over the judged cycles: its change from the baseline
	// cycles to the last, with its interval.
	xs, ys := make([]float64, len(judged)), make([]float64, len(judged))
	for i, c := range judged {
		xs[i], ys[i] = float64(c.Cycle), r.valueOfFigures(c)
	}
	slope, se, haveTrend := LinearFit(xs, ys)
	var lo, hi float64
	if haveTrend {
		r.SlopePerCycle, r.SlopeStdErr = slope, se
		xb := mean(xs[:b])
		span := xs[len(xs)-1] - xb
		t := tCritical(float64(len(xs)-2), 0.95)
		change := slope * span
		lo, hi = change-t*se*span, change+t*se*span
		if r.judgedByRatio {
			r.Measured, lo, hi = 1+change/r.Baseline, 1+lo/r.Baseline, 1+hi/r.Baseline
		} else {
			r.Measured = change
		}
		r.MeasuredLow, r.MeasuredHigh = &lo, &hi
		r.Shape = shape(xs, ys, slope, se)
		r.Projection = projection(r, l, xs[len(xs)-1], slope)
	} else {
		r.Measured = against(ys[len(ys)-1])
	}
	// A run of cycles beyond the limit fails only where the values did move
	// up (the trend's interval above 0): a noisy baseline alone makes runs
	// beyond a limit set inside the noise.
	sustained := r.LongestOver >= k && (!haveTrend || slope-2*se > 0)
	switch {
	case sustained:
		r.Outcome = OutcomeFail
	case haveTrend && lo > r.Limit:
		r.Outcome = OutcomeFail
	case haveTrend && hi <= r.Limit:
		r.Outcome = OutcomePass
	default:
		r.Outcome = OutcomeInconclusive
	}
	if !sustained && len(over) > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s beyond the limit (%d at most in a row; %d in a row fail): noise, not a fail", strings.Join(over, ", "), r.LongestOver, k))
	}
	var d strings.Builder
	if r.Basis == BasisRelativeToControl {
		d.WriteString("relative to the REST control of the same cycle: ")
	}
	fmt.Fprintf(&d, "baseline %s (median of cycles %d–%d, after %d warm-up)", r.amount(r.Baseline, false), judged[0].Cycle, judged[b-1].Cycle, w)
	if len(r.LeftOut) > 0 {
		fmt.Fprintf(&d, "; %s left out, without a control figure (%s)", countCycles(r.LeftOut), r.leftOutWhy)
	}
	if sustained {
		fmt.Fprintf(&d, "; %d cycles in a row beyond the limit (soak.drift.sustained_cycles %d): a sustained shift", r.LongestOver, k)
	}
	if haveTrend {
		fmt.Fprintf(&d, "; trend %s per cycle over %d cycles (%s): %s at the last cycle, 95 %% [%s, %s], limit %s",
			r.plusMinus(slope, se), len(judged), r.Shape, r.fmtMeasure(r.Measured), r.fmtMeasure(lo), r.fmtMeasure(hi), r.fmtMeasure(r.Limit))
		if r.Projection != "" {
			d.WriteString("; " + r.Projection)
		}
	} else {
		fmt.Fprintf(&d, "; %d judged cycles are too few for a trend (3 needed): inconclusive unless a sustained shift fails it", len(judged))
	}
	if r.controlled && r.Basis == BasisAbsolute {
		d.WriteString("; " + r.BasisReason)
	}
	r.Detail = d.String()
}

// fmtMeasure writes a ratio as "1.05×" and a difference with its unit.
func (r *DriftRule) fmtMeasure(v float64) string {
	if r.judgedByRatio {
		return fmt.Sprintf("%.3g×", v)
	}
	return r.amount(v, true)
}

// amount writes v in the rule's unit, signed when asked: bytes as B, KiB
// or MiB (as the soak's table prints the heap), anything else as 4
// significant digits and the unit.
func (r *DriftRule) amount(v float64, signed bool) string {
	sign := ""
	if signed && v >= 0 {
		sign = "+"
	}
	if r.Unit != "bytes" {
		return fmt.Sprintf("%s%.4g %s", sign, v, r.Unit)
	}
	switch a := math.Abs(v); {
	case a >= 1<<20:
		return fmt.Sprintf("%s%.4g MiB", sign, v/(1<<20))
	case a >= 1<<10:
		return fmt.Sprintf("%s%.4g KiB", sign, v/(1<<10))
	}
	return fmt.Sprintf("%s%.4g B", sign, v)
}

// plusMinus writes v ± se in the rule's unit: "+1.6 MiB ± 9.1 KiB" for
// bytes (the two may differ in scale), "+0.03 ± 0.01 points" otherwise.
func (r *DriftRule) plusMinus(v, se float64) string {
	if r.Unit == "bytes" {
		return r.amount(v, true) + " ± " + r.amount(se, false)
	}
	return fmt.Sprintf("%+.4g ± %.4g %s", v, se, r.Unit)
}

// shape tells a steady slope from a warm-up that levels off: a rise whose
// second half still rises (its slope's interval above 0, and at least a
// quarter of the first half's slope) is steady; one that rose mostly in
// the first half levels off.
func shape(xs, ys []float64, slope, se float64) string {
	rising := slope-2*se > 0
	falling := slope+2*se < 0
	half := len(xs) / 2
	s1, _, ok1 := LinearFit(xs[:half+1], ys[:half+1])
	s2, se2, ok2 := LinearFit(xs[half:], ys[half:])
	switch {
	case rising && (!ok1 || !ok2):
		return "rising" // too few cycles to tell a warm-up from a slope
	case rising && s2-2*se2 > 0 && s2 >= s1/4:
		return "steady rise"
	case rising:
		return "levelling off"
	case falling:
		return "falling"
	}
	return "flat"
}

// projection says when a rising trend would cross the limit: in cycles,
// and in hours when the cycle length is known, and what it would reach at
// the soak's horizon and at 24 h.
func projection(r *DriftRule, l DriftLimits, last, slope float64) string {
	if (r.Shape != "steady rise" && r.Shape != "rising") || slope <= 0 {
		return ""
	}
	limitValue := r.Baseline + r.Limit
	if r.judgedByRatio {
		limitValue = r.Baseline * r.Limit
	}
	// Where the trend stands at the last cycle: the baseline moved by the
	// trend's change since the baseline cycles.
	fittedLast := r.Baseline + r.Measured
	if r.judgedByRatio {
		fittedLast = r.Measured * r.Baseline
	}
	left := (limitValue - fittedLast) / slope // cycles to the limit
	out := r.amount(slope, true) + " per cycle"
	if left <= 0 {
		return out + ": the trend is past the limit"
	}
	switch {
	case left < 1:
		out += ": crosses the limit within the next cycle" // not "in about 0 min (0 more cycles)"
	case l.SecondsPerCycle <= 0:
		return out + fmt.Sprintf(": crosses the limit in about %.0f more cycles", left)
	default:
		hours := left * l.SecondsPerCycle / 3600
		out += fmt.Sprintf(": crosses the limit in about %s (%.0f more cycles)", humanHours(hours), left)
	}
	if l.SecondsPerCycle <= 0 {
		return out
	}
	at := func(secs float64) string {
		v := fittedLast + slope*(secs/l.SecondsPerCycle-last)
		if r.judgedByRatio {
			return fmt.Sprintf("%.3g×", v/r.Baseline)
		}
		return r.amount(v-r.Baseline, true)
	}
	if l.HorizonSeconds > 0 {
		out += fmt.Sprintf("; at the soak's end %s", at(l.HorizonSeconds))
	}
	out += fmt.Sprintf("; after 24 h %s", at(24*3600))
	return out
}

// humanHours writes a duration in hours as "17 h", "40 min", "18 s" or
// "3 days".
func humanHours(h float64) string {
	switch {
	case h < 1.0/60:
		return fmt.Sprintf("%.0f s", h*3600)
	case h < 1:
		return fmt.Sprintf("%.0f min", h*60)
	case h < 72:
		return fmt.Sprintf("%.0f h", h)
	}
	return fmt.Sprintf("%.0f days", h/24)
}

// DriftOutcome rolls the drift rules up (Combine): fail when one failed,
// inconclusive when one was not measured, pass when all passed.
func DriftOutcome(rs []DriftRule) Outcome {
	os := make([]Outcome, len(rs))
	for i, r := range rs {
		os[i] = r.Outcome
	}
	return Combine(os...)
}

// Median is the middle value of vs (the mean of the two middle ones for an
// even count); vs is not changed.
func Median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
