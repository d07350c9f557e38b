package kpi

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Names of the memory-profile rules, in the order MemoryVerdict returns them.
const (
	// RuleSteadyAllocation checks that no allocation window spikes above k × the median window.
	RuleSteadyAllocation = "steady_allocation"
	// RuleSurvivorGrowth checks that the live heap after GC has no significant upward trend.
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
	// minute (e.g. 256 KiB/min).
	LiveHeapSlopeMaxBytesPerMin float64
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
// 256 KiB/min of survivor growth, and a return to within 10 % or 1 MiB of the live heap and within 2
// goroutines of the baseline.
func DefaultMemoryLimits() MemoryLimits {
	return MemoryLimits{
		AllocSpikeFactor:            3,
		AllocWindow:                 5 * time.Second,
		LiveHeapSlopeMaxBytesPerMin: 256 << 10,
		HeapReturnTolerancePercent:  10,
		HeapReturnToleranceBytes:    1 << 20,
		GoroutineReturnTolerance:    2,
	}
}

// Rule is one row of the memory-profile verdict: a measured Value against a Limit.
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
	// Pass is true when the rule holds. Missing or insufficient data never passes.
	Pass bool `json:"pass"`
	// Detail gives the figures behind Value, or why it could not be judged.
	Detail string `json:"detail"`
	// Definition says how the figure is measured, for the report.
	Definition string `json:"definition"`
}

// Sample2D is one point of a series: X in seconds since the start of the phase, Y in the series' unit
// (bytes for the live heap).
type Sample2D struct {
	// X is the time of the point, in seconds since the start of the phase.
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
	// start, Y bytes (from profiles.LiveHeapAfterGC).
	LiveHeap []Sample2D
	// BaselineHeapLive is the live heap in bytes just before the phase, after a forced GC.
	BaselineHeapLive uint64
	// AfterHeapLive is the live heap in bytes after the phase, the settle period and a forced GC.
	AfterHeapLive uint64
	// BaselineGoroutines is the goroutine count just before the phase.
	BaselineGoroutines uint64
	// AfterGoroutines is the goroutine count after the phase and the settle period.
	AfterGoroutines uint64
}

// MemoryVerdict judges a phase's memory profile by four rules, in this order: steady_allocation,
// survivor_growth, heap_returned and goroutines_returned. The profile passes when every rule passes
// (MemoryPass). A rule without enough data, or with an invalid limit, fails and says why in its Detail.
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

func steadyAllocation(rates []float64, l MemoryLimits) Rule {
	r := Rule{
		Name: RuleSteadyAllocation, Title: "Steady allocation", Unit: "× median", Limit: finite(l.AllocSpikeFactor),
		Definition: "largest ÷ median heap allocation rate, the rates being Δ/gc/heap/allocs:bytes ÷ duration " +
			"over consecutive windows of alloc_window in the steady window; no window may exceed k × the median",
	}
	if !(l.AllocSpikeFactor > 0) || math.IsInf(l.AllocSpikeFactor, 0) {
		r.Detail = fmt.Sprintf("invalid limit alloc_spike_factor %v: want a finite factor above 0", l.AllocSpikeFactor)
		return r
	}
	for i, v := range rates {
		if !(v >= 0) || math.IsInf(v, 0) {
			r.Detail = fmt.Sprintf("window %d has an invalid allocation rate %v B/s", i, v)
			return r
		}
	}
	n := len(rates)
	if n < 3 {
		r.Detail = fmt.Sprintf("not enough windows (%d) to judge; lengthen the phase or shorten alloc_window", n)
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
	r.Pass = r.Value <= l.AllocSpikeFactor
	return r
}

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

func survivorGrowth(pts []Sample2D, l MemoryLimits) Rule {
	r := Rule{
		Name: RuleSurvivorGrowth, Title: "Survivor growth (live heap after GC)", Unit: "bytes/min",
		Limit: finite(l.LiveHeapSlopeMaxBytesPerMin),
		Definition: "ordinary least squares slope of /gc/heap/live:bytes after each observed GC cycle against " +
			"time over the steady window, with its standard error; passes when the slope is at most the limit " +
			"and not significantly positive (slope - t(0.975, n-2) × SE <= 0, a one-sided 97.5 % test)",
	}
	if math.IsNaN(l.LiveHeapSlopeMaxBytesPerMin) || math.IsInf(l.LiveHeapSlopeMaxBytesPerMin, 0) {
		r.Detail = fmt.Sprintf("invalid limit live_heap_slope_max_bytes_per_min %v: want a finite number",
			l.LiveHeapSlopeMaxBytesPerMin)
		return r
	}
	n := len(pts)
	if n < 3 {
		r.Detail = fmt.Sprintf("too few GC cycles in the window to fit a trend (%d live-heap points after GC, "+
			"need at least 3); lengthen the phase", n)
		return r
	}
	xs, ys := make([]float64, n), make([]float64, n)
	for i, p := range pts {
		xs[i], ys[i] = p.X, p.Y
	}
	slope, se, ok := LinearFit(xs, ys)
	if !ok {
		r.Detail = fmt.Sprintf("cannot fit a trend to %d live-heap points: their times are all equal or a "+
			"value is not finite", n)
		return r
	}
	slope, se = slope*60, se*60 // bytes/s -> bytes/min
	t := tQuantile975(n - 2)
	lower := slope - t*se
	r.Value = slope
	r.Pass = slope <= l.LiveHeapSlopeMaxBytesPerMin && lower <= 0
	r.Detail = fmt.Sprintf("slope %.0f ± %.0f bytes/min over %d cycles; lower 97.5 %% bound %.0f bytes/min "+
		"(t = %.3f, %d degrees of freedom)", slope, se, n, lower, t, n-2)
	switch {
	case slope > l.LiveHeapSlopeMaxBytesPerMin:
		r.Detail += fmt.Sprintf("; above the limit of %.0f bytes/min", l.LiveHeapSlopeMaxBytesPerMin)
	case lower > 0:
		r.Detail += "; significantly positive: the live heap grows"
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

// tQuantile975 returns the 0.975 quantile of Student's t with df >= 1 degrees of freedom: from the table
// up to 30, beyond that by the Cornish-Fisher expansion about the normal quantile (Abramowitz & Stegun
// 26.7.5, four terms), which is within 1e-6 of the exact value for df > 30.
func tQuantile975(df int) float64 {
	if df < 1 {
		return math.NaN()
	}
	// The 0.975 quantiles for 1..30 degrees of freedom (index df-1), to six decimals: the two-sided 95 %
	// critical values of any statistics table.
	t975 := [...]float64{
		12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
		2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
		2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
	}
	if df <= len(t975) {
		return t975[df-1]
	}
	const z = 1.959963984540054 // the normal distribution's 0.975 quantile
	v := float64(df)
	z2 := z * z
	g1 := (z2 + 1) * z / 4
	g2 := ((5*z2+16)*z2 + 3) * z / 96
	g3 := (((3*z2+19)*z2+17)*z2 - 15) * z / 384
	g4 := ((((79*z2+776)*z2+1482)*z2-1920)*z2 - 945) * z / 92160
	return z + g1/v + g2/(v*v) + g3/(v*v*v) + g4/(v*v*v*v)
}

func heapReturned(in MemoryInput, l MemoryLimits) Rule {
	r := Rule{
		Name: RuleHeapReturned, Title: "Heap returned to baseline", Unit: "%", Limit: finite(l.HeapReturnTolerancePercent),
		Definition: "live heap (/gc/heap/live:bytes) after the phase, the settle period and a forced GC, as a " +
			"change from the same figure just before the phase; passes when the absolute change is within " +
			"the percent tolerance or the byte tolerance",
	}
	if !(l.HeapReturnTolerancePercent >= 0) || math.IsInf(l.HeapReturnTolerancePercent, 0) {
		r.Detail = fmt.Sprintf("invalid limit heap_return_tolerance_percent %v: want a finite percentage >= 0",
			l.HeapReturnTolerancePercent)
		return r
	}
	b, a := in.BaselineHeapLive, in.AfterHeapLive
	switch {
	case b == 0:
		r.Detail = "baseline live heap not measured (0 bytes)"
		return r
	case a == 0:
		r.Detail = "live heap after the settle period not measured (0 bytes)"
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
	r.Pass = withinPercent || withinBytes
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
			"minus the count just before the phase; passes when at most the tolerance",
	}
	if l.GoroutineReturnTolerance < 0 {
		r.Detail = fmt.Sprintf("invalid limit goroutine_return_tolerance %d: want 0 or more", l.GoroutineReturnTolerance)
		return r
	}
	b, a := in.BaselineGoroutines, in.AfterGoroutines
	switch {
	case b == 0:
		r.Detail = "baseline goroutine count not measured (0)"
		return r
	case a == 0:
		r.Detail = "goroutine count after the settle period not measured (0)"
		return r
	}
	r.Value = float64(a) - float64(b)
	r.Pass = r.Value <= r.Limit
	r.Detail = fmt.Sprintf("%d goroutines after vs %d before the phase (%+.0f); tolerance +%d",
		a, b, r.Value, l.GoroutineReturnTolerance)
	return r
}
