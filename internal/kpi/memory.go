package kpi

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// Names of the memory-profile rules, in the order MemoryVerdict returns them.
const (
	// RuleSteadyAllocation checks that no allocation window spikes above k × the median window.
	RuleSteadyAllocation = "steady_allocation"
	// RuleSurvivorGrowth checks that the live heap after GC, past a warm-up, grows by no more than a limit.
	RuleSurvivorGrowth = "survivor_growth"
	// RuleHeapReturned checks that the live heap is back at its pre-phase baseline after the settle period.
	RuleHeapReturned = "heap_returned"
	// RuleGoroutinesReturned checks that the goroutine count is back at its pre-phase baseline.
	RuleGoroutinesReturned = "goroutines_returned"
)

// MemoryLimits are the thresholds of the memory-profile verdict: seed 002's qualitative expectations
// (steady allocation without extreme spikes, little surviving each GC cycle, a return to the pre-test
// state) made measurable. DefaultMemoryLimits gives reasonable values.
type MemoryLimits struct {
	// AllocSpikeFactor is k: no window's allocation rate may exceed k × the median window rate (e.g. 3).
	AllocSpikeFactor float64
	// AllocWindow is the window length the allocation rates were computed over (e.g. 5 s); it is only
	// quoted in the rule's Detail, the rates arrive already windowed.
	AllocWindow time.Duration
	// LiveHeapSlopeMaxBytesPerMin is the largest accepted growth of the live heap after GC, in bytes per
	// minute (e.g. 256 KiB/min): the magnitude that matters. Survivor growth fails only when the slope
	// is significantly positive and even the lower bound of its confidence interval exceeds this.
	LiveHeapSlopeMaxBytesPerMin float64
	// Warmup is how long, from the start of the live-heap series (X = 0, the start of the steady window),
	// survivor growth ignores (e.g. 5 s): caches, pools and connection buffers fill at the start of a
	// phase, so the live heap climbs before it levels off, and that climb is not a leak.
	Warmup time.Duration
	// MinGCCycles is the fewest live-heap points after GC (one per observed GC cycle) past the warm-up
	// that survivor growth needs to speak (e.g. 8); at least 3, as the slope's standard error needs
	// n - 2 >= 1 degrees of freedom.
	MinGCCycles int
	// MinSpan is the shortest time, between the first and the last point used past the warm-up, that
	// survivor growth needs to speak (e.g. 10 s): a slope over a few seconds says little about minutes.
	MinSpan time.Duration
	// HeapReturnTolerancePercent is how far, in percent of the baseline, the live heap may be from the
	// pre-phase baseline after the settle period and a forced GC (e.g. 10).
	HeapReturnTolerancePercent float64
	// HeapReturnToleranceBytes is the same tolerance in bytes (e.g. 1 MiB), for small heaps where a few
	// hundred KiB are many percent; the rule passes if either tolerance holds.
	HeapReturnToleranceBytes uint64
	// GoroutineReturnTolerance is how many goroutines above the baseline are accepted after the settle
	// period (e.g. 2, for runtime and net/http helpers that come and go).
	GoroutineReturnTolerance int
}

// DefaultMemoryLimits returns the limits suggested for soakd's memory profile: k = 3 over 5 s windows,
// 256 KiB/min of survivor growth judged after a 5 s warm-up on at least 8 GC cycles spanning 10 s, and a
// return to within 10 % or 1 MiB of the live heap and within 2 goroutines of the baseline.
func DefaultMemoryLimits() MemoryLimits {
	return MemoryLimits{
		AllocSpikeFactor:            3,
		AllocWindow:                 5 * time.Second,
		LiveHeapSlopeMaxBytesPerMin: 256 << 10,
		Warmup:                      5 * time.Second,
		MinGCCycles:                 8,
		MinSpan:                     10 * time.Second,
		HeapReturnTolerancePercent:  10,
		HeapReturnToleranceBytes:    1 << 20,
		GoroutineReturnTolerance:    2,
	}
}

// Rule is one row of the memory-profile verdict: a measured Value against a Limit, and the Outcome.
type Rule struct {
	// Name identifies the rule (stable, snake_case; see the Rule* constants).
	Name string `json:"name"`
	// Title is the human label used in tables.
	Title string `json:"title"`
	// Unit is the unit of Value and Limit.
	Unit string `json:"unit"`
	// Value is the measured figure; 0 when it could not be measured (Detail then says why).
	Value float64 `json:"value"`
	// Limit is the threshold Value is judged against.
	Limit float64 `json:"limit"`
	// Pass is true when Outcome is OutcomePass, and only then; kept for readers that predate Outcome.
	// Missing or insufficient data never passes.
	Pass bool `json:"pass"`
	// Outcome is pass, fail, inconclusive (measured, but the data cannot decide) or not_measured (too
	// little data to judge; Detail says what was short and what to change).
	Outcome Outcome `json:"outcome"`
	// Detail gives the figures behind Value, or why it could not be judged.
	Detail string `json:"detail"`
	// Definition says how the figure is measured, for the report.
	Definition string `json:"definition"`
}

// Sample2D is one point of a series: X in seconds since the start of the series (the steady window, for
// the live heap), Y in the series' unit (bytes for the live heap).
type Sample2D struct {
	// X is the time of the point, in seconds since the start of the series.
	X float64 `json:"x"`
	// Y is the value at X.
	Y float64 `json:"y"`
}

// MemoryInput is what the memory-profile verdict judges, all over one phase. Zero baselines or after
// values mean "not measured" (a running Go process always has goroutines, and a live heap once a GC ran).
type MemoryInput struct {
	// AllocRates are heap allocation rates in bytes per second, one per window of MemoryLimits.AllocWindow
	// over the steady window (from profiles.AllocRates).
	AllocRates []float64
	// LiveHeap is the live heap after each observed GC cycle in the steady window: X seconds since the
	// start of the steady window (MemoryLimits.Warmup counts from there), Y bytes (from
	// profiles.LiveHeapAfterGC).
	LiveHeap []Sample2D
	// BaselineHeapLive is the live heap in bytes just before the phase, after a forced GC.
	BaselineHeapLive uint64
	// AfterHeapLive is the live heap in bytes after the phase, the settle period and a forced GC.
	AfterHeapLive uint64
	// BaselineGoroutines is the goroutine count just before the phase.
	BaselineGoroutines uint64
	// AfterGoroutines is the goroutine count after the phase and the settle period.
	AfterGoroutines uint64
	// NoForcedGC is true when no GC could be forced before the two live
	// heaps were read (a target soakd does not host): each is as of the
	// target's own last GC cycle, and the rules say so.
	NoForcedGC bool
	// GoroutineAnalogue names what the two counts count on a runtime
	// without goroutines ("active handles" on Node); "" for goroutines.
	GoroutineAnalogue string
}

// MemoryVerdict judges a phase's memory profile by four rules, in this order: steady_allocation,
// survivor_growth, heap_returned and goroutines_returned. The profile passes when every rule passes
// (MemoryPass; MemoryOutcome gives the profile's Outcome). A rule without enough data is not measured,
// never passed, and says in its Detail what was short; a rule with an invalid limit fails and names it.
func MemoryVerdict(in MemoryInput, l MemoryLimits) []Rule {
	return []Rule{
		steadyAllocation(in.AllocRates, l),
		survivorGrowth(in.LiveHeap, l),
		heapReturned(in, l),
		goroutinesReturned(in, l),
	}
}

// MemoryPass reports whether every rule passed. An empty list does not pass: no evidence is not a pass.
func MemoryPass(rs []Rule) bool {
	if len(rs) == 0 {
		return false
	}
	for _, r := range rs {
		if !r.Pass {
			return false
		}
	}
	return true
}

// MemoryOutcome sums the rules up: fail if any rule failed; otherwise not_measured if any rule was not
// measured, inconclusive if any was inconclusive; pass only when every rule passed. An empty list is
// not measured. A rule without an Outcome counts as pass or fail by its Pass, one with an unknown
// Outcome as not measured.
func MemoryOutcome(rs []Rule) Outcome {
	if len(rs) == 0 {
		return OutcomeNotMeasured
	}
	var notMeasured, inconclusive bool
	for _, r := range rs {
		o := r.Outcome
		if o == "" {
			o = OutcomeFail
			if r.Pass {
				o = OutcomePass
			}
		}
		switch o {
		case OutcomeFail:
			return OutcomeFail
		case OutcomePass:
		case OutcomeInconclusive:
			inconclusive = true
		default:
			notMeasured = true
		}
	}
	switch {
	case notMeasured:
		return OutcomeNotMeasured
	case inconclusive:
		return OutcomeInconclusive
	}
	return OutcomePass
}

// judge sets the rule's Outcome to o and Pass to whether o is OutcomePass.
func (r *Rule) judge(o Outcome) {
	r.Outcome, r.Pass = o, o == OutcomePass
}

func steadyAllocation(rates []float64, l MemoryLimits) Rule {
	r := Rule{
		Name: RuleSteadyAllocation, Title: "Steady allocation", Unit: "× median", Limit: finite(l.AllocSpikeFactor),
		Definition: "largest ÷ median heap allocation rate, the rates being Δ/gc/heap/allocs:bytes ÷ duration " +
			"over consecutive windows of alloc_window in the steady window; no window may exceed k × the median; " +
			"fewer than 3 windows is not measured",
	}
	r.judge(OutcomeFail)
	if !(l.AllocSpikeFactor > 0) || math.IsInf(l.AllocSpikeFactor, 0) {
		r.Detail = fmt.Sprintf("invalid limit alloc_spike_factor %v: want a finite factor above 0", l.AllocSpikeFactor)
		return r
	}
	for i, v := range rates {
		if !(v >= 0) || math.IsInf(v, 0) {
			r.judge(OutcomeNotMeasured)
			r.Detail = fmt.Sprintf("not measured: window %d has an invalid allocation rate %v B/s", i, v)
			return r
		}
	}
	n := len(rates)
	if n < minAllocWindows {
		r.judge(OutcomeNotMeasured)
		r.Detail = fmt.Sprintf("not measured: not enough windows (%d, need at least %d) to judge; lengthen the "+
			"phase or shorten alloc_window", n, minAllocWindows)
		return r
	}
	med, top := medianRate(rates), slices.Max(rates)
	switch {
	case top == 0:
		r.Value = 1
		r.Detail = fmt.Sprintf("no heap allocation in any of %d windows of %s", n, l.AllocWindow)
	case med == 0:
		// The ratio is unbounded; Value stays 0 because JSON has no infinity.
		r.Detail = fmt.Sprintf("the median window allocated nothing while the largest allocated %.0f B/s "+
			"(%d windows of %s): an unbounded spike", top, n, l.AllocWindow)
		return r
	default:
		r.Value = top / med
		r.Detail = fmt.Sprintf("largest window %.0f B/s is %.2f× the median %.0f B/s over %d windows of %s",
			top, r.Value, med, n, l.AllocWindow)
	}
	if r.Value <= l.AllocSpikeFactor {
		r.judge(OutcomePass)
	}
	return r
}

// minAllocWindows is the fewest allocation-rate windows steady_allocation judges: a median of fewer says
// nothing about what is usual.
const minAllocWindows = 3

// finite returns v, or 0 when v is NaN or infinite: a Rule must encode as JSON, which has neither. Rules
// with such a limit fail and name the bad value in their Detail.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// medianRate returns the median of a non-empty slice (the mean of the middle two for an even length) without
// modifying it.
func medianRate(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// survivorAlpha is the significance level of survivor growth's one-sided test on the slope, and 1 -
// survivorAlpha the coverage of each of its one-sided confidence bounds.
const survivorAlpha = 0.05

func survivorGrowth(pts []Sample2D, l MemoryLimits) Rule {
	r := Rule{
		Name: RuleSurvivorGrowth, Title: "Survivor growth (live heap after GC)", Unit: "bytes/min",
		Limit: finite(l.LiveHeapSlopeMaxBytesPerMin),
		Definition: "ordinary least squares slope of /gc/heap/live:bytes after each observed GC cycle against " +
			"time over the steady window, past the warm-up, with its standard error SE and t = t(0.95, n-2); " +
			"fails when the slope is significantly positive (one-sided t-test, alpha 0.05) and its lower bound " +
			"slope - t × SE is above the limit, passes when the upper bound slope + t × SE is at most the limit, " +
			"and is inconclusive otherwise; fewer than min_gc_cycles cycles or a span shorter than min_span is " +
			"not measured",
	}
	r.judge(OutcomeFail)
	limit := l.LiveHeapSlopeMaxBytesPerMin
	switch {
	case !(limit >= 0) || math.IsInf(limit, 0):
		r.Detail = fmt.Sprintf("invalid limit live_heap_slope_max_bytes_per_min %v: want a finite number >= 0", limit)
		return r
	case l.Warmup < 0:
		r.Detail = fmt.Sprintf("invalid limit warmup %s: want a duration >= 0", l.Warmup)
		return r
	case l.MinGCCycles < 3:
		r.Detail = fmt.Sprintf("invalid limit min_gc_cycles %d: want at least 3 (the standard error needs "+
			"n - 2 >= 1 degrees of freedom)", l.MinGCCycles)
		return r
	case l.MinSpan < 0:
		r.Detail = fmt.Sprintf("invalid limit min_span %s: want a duration >= 0", l.MinSpan)
		return r
	}

	warm := l.Warmup.Seconds()
	var xs, ys []float64
	for i, p := range pts {
		if math.IsNaN(p.X) || math.IsInf(p.X, 0) || math.IsNaN(p.Y) || math.IsInf(p.Y, 0) {
			r.judge(OutcomeNotMeasured)
			r.Detail = fmt.Sprintf("not measured: live-heap point %d (%v s, %v bytes) is not finite", i, p.X, p.Y)
			return r
		}
		if p.X >= warm {
			xs, ys = append(xs, p.X), append(ys, p.Y)
		}
	}
	n, dropped := len(xs), len(pts)-len(xs)
	var span float64
	if n > 0 {
		span = slices.Max(xs) - slices.Min(xs)
	}
	used := fmt.Sprintf("%d GC cycles over %.1fs after the %s warm-up (%d earlier cycles ignored)",
		n, span, l.Warmup, dropped)
	var short []string
	if n < l.MinGCCycles {
		short = append(short, fmt.Sprintf("need at least %d cycles (min_gc_cycles)", l.MinGCCycles))
	}
	if span < l.MinSpan.Seconds() {
		short = append(short, fmt.Sprintf("need a span of at least %s (min_span)", l.MinSpan))
	}
	if len(short) > 0 {
		r.judge(OutcomeNotMeasured)
		r.Detail = fmt.Sprintf("not measured: %s; %s; lengthen the phase or lower warmup", used,
			strings.Join(short, " and "))
		return r
	}
	slope, se, ok := LinearFit(xs, ys)
	if !ok {
		r.judge(OutcomeNotMeasured)
		r.Detail = fmt.Sprintf("not measured: cannot fit a trend to %s: their times are all equal", used)
		return r
	}
	slope, se = slope*60, se*60 // bytes/s -> bytes/min
	t := tQuantile(1-survivorAlpha, n-2)
	lower, upper := slope-t*se, slope+t*se
	significant := lower > 0 // slope / SE > t, written so that SE = 0 needs no division
	r.Value = slope
	r.Detail = fmt.Sprintf("slope %.0f ± %.0f bytes/min (SE) from %s; one-sided 95 %% bounds %.0f to %.0f "+
		"bytes/min (t = %.3f, %d degrees of freedom)", slope, se, used, lower, upper, t, n-2)
	switch {
	case significant && lower > limit:
		r.judge(OutcomeFail)
		r.Detail += fmt.Sprintf("; the live heap grows: significantly positive, and even the lower bound is "+
			"above the limit of %.0f bytes/min", limit)
	case upper <= limit:
		r.judge(OutcomePass)
		r.Detail += fmt.Sprintf("; the upper bound is within the limit of %.0f bytes/min", limit)
		if significant {
			r.Detail += " (a significant but small growth)"
		}
	default:
		r.judge(OutcomeInconclusive)
		r.Detail += fmt.Sprintf("; inconclusive: the bounds straddle the limit of %.0f bytes/min", limit)
		if !significant {
			r.Detail += " and the slope is not significantly positive"
		}
		r.Detail += "; lengthen the phase for more GC cycles"
	}
	return r
}

// LinearFit fits ys = a + slope × xs by ordinary least squares and returns the slope (in units of y per
// unit of x) and its standard error sqrt(RSS / (n-2) / Σ(x - x̄)²). ok is false, with zero results, when
// the slices differ in length, hold fewer than 3 points (the standard error needs n-2 >= 1 degrees of
// freedom), contain a non-finite value, or all xs are equal. Sums are taken about the means so large
// offsets (bytes near 1e9, seconds since an epoch) lose no precision; a perfect line gives stderr 0.
func LinearFit(xs, ys []float64) (slope, stderr float64, ok bool) {
	n := len(xs)
	if n != len(ys) || n < 3 {
		return 0, 0, false
	}
	var mx, my float64
	for i := range n {
		if math.IsNaN(xs[i]) || math.IsInf(xs[i], 0) || math.IsNaN(ys[i]) || math.IsInf(ys[i], 0) {
			return 0, 0, false
		}
		mx += xs[i]
		my += ys[i]
	}
	mx /= float64(n)
	my /= float64(n)
	var sxx, sxy float64
	for i := range n {
		dx := xs[i] - mx
		sxx += dx * dx
		sxy += dx * (ys[i] - my)
	}
	if sxx == 0 {
		return 0, 0, false
	}
	slope = sxy / sxx
	var rss float64
	for i := range n {
		e := (ys[i] - my) - slope*(xs[i]-mx)
		rss += e * e
	}
	stderr = math.Sqrt(rss / float64(n-2) / sxx)
	return slope, stderr, true
}

// tQuantile returns the p quantile of Student's t distribution with df >= 1 degrees of freedom (NaN for
// df < 1 or p outside (0, 1)), e.g. t(0.95, 10) = 1.812461.
func tQuantile(p float64, df int) float64 {
	if df < 1 || !(p > 0 && p < 1) {
		return math.NaN()
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p)
}

func heapReturned(in MemoryInput, l MemoryLimits) Rule {
	r := Rule{
		Name: RuleHeapReturned, Title: "Heap returned to baseline", Unit: "%", Limit: finite(l.HeapReturnTolerancePercent),
		Definition: "live heap (/gc/heap/live:bytes) after the phase, the settle period and a forced GC, as a " +
			"change from the same figure just before the phase; passes when the absolute change is within " +
			"the percent tolerance or the byte tolerance; a figure of 0 is not measured",
	}
	if in.NoForcedGC {
		r.Definition = "live heap after the phase and the settle period, as of the target's own last GC cycle (none can be forced), as a " +
			"change from the same figure just before the phase; passes when the absolute change is within " +
			"the percent tolerance or the byte tolerance; a figure of 0 is not measured"
	}
	r.judge(OutcomeFail)
	if !(l.HeapReturnTolerancePercent >= 0) || math.IsInf(l.HeapReturnTolerancePercent, 0) {
		r.Detail = fmt.Sprintf("invalid limit heap_return_tolerance_percent %v: want a finite percentage >= 0",
			l.HeapReturnTolerancePercent)
		return r
	}
	b, a := in.BaselineHeapLive, in.AfterHeapLive
	switch {
	case b == 0:
		r.judge(OutcomeNotMeasured)
		r.Detail = "not measured: no baseline live heap (0 bytes)"
		return r
	case a == 0:
		r.judge(OutcomeNotMeasured)
		r.Detail = "not measured: no live heap after the settle period (0 bytes)"
		return r
	}
	diff := a - b
	if a < b {
		diff = b - a
	}
	signed := float64(a) - float64(b)
	r.Value = signed / float64(b) * 100
	withinPercent := float64(diff)*100 <= l.HeapReturnTolerancePercent*float64(b)
	withinBytes := diff <= l.HeapReturnToleranceBytes
	if withinPercent || withinBytes {
		r.judge(OutcomePass)
	}
	r.Detail = fmt.Sprintf("live heap %d bytes after vs %d bytes before the phase (%+.0f bytes, %+.1f %%); "+
		"tolerance %.1f %% or %d bytes", a, b, signed, r.Value, l.HeapReturnTolerancePercent,
		l.HeapReturnToleranceBytes)
	return r
}

func goroutinesReturned(in MemoryInput, l MemoryLimits) Rule {
	r := Rule{
		Name: RuleGoroutinesReturned, Title: "Goroutines returned to baseline", Unit: "goroutines",
		Limit: float64(l.GoroutineReturnTolerance),
		Definition: "goroutine count (/sched/goroutines:goroutines) after the phase and the settle period " +
			"minus the count just before the phase; passes when at most the tolerance; a count of 0 is not measured",
	}
	if w := in.GoroutineAnalogue; w != "" {
		r.Title, r.Unit = strings.ToUpper(w[:1])+w[1:]+" returned to baseline", w
		r.Definition = w + " (the runtime's analogue of goroutines) after the phase and the settle period " +
			"minus the count just before the phase; passes when at most the tolerance; a count of 0 is not measured"
	}
	r.judge(OutcomeFail)
	if l.GoroutineReturnTolerance < 0 {
		r.Detail = fmt.Sprintf("invalid limit goroutine_return_tolerance %d: want 0 or more", l.GoroutineReturnTolerance)
		return r
	}
	b, a := in.BaselineGoroutines, in.AfterGoroutines
	switch {
	case b == 0:
		r.judge(OutcomeNotMeasured)
		r.Detail = "not measured: no baseline count of " + r.Unit + " (0)"
		return r
	case a == 0:
		r.judge(OutcomeNotMeasured)
		r.Detail = "not measured: no count of " + r.Unit + " after the settle period (0)"
		return r
	}
	r.Value = float64(a) - float64(b)
	if r.Value <= r.Limit {
		r.judge(OutcomePass)
	}
	r.Detail = fmt.Sprintf("%d %s after vs %d before the phase (%+.0f); tolerance +%d",
		a, r.Unit, b, r.Value, l.GoroutineReturnTolerance)
	return r
}
