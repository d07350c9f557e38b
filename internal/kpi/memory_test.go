package kpi

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestLinearFit(t *testing.T) {
	f := func(name string, xs, ys []float64, wantSlope, wantSE, tol float64) {
		t.Helper()
		slope, se, ok := LinearFit(xs, ys)
		if !ok {
			t.Fatalf("%s: got ok false, want a fit", name)
		}
		if math.Abs(slope-wantSlope) > tol || math.Abs(se-wantSE) > tol {
			t.Errorf("%s: got slope %v ± %v, want %v ± %v", name, slope, se, wantSlope, wantSE)
		}
	}
	// A perfect line fits exactly: the standard error is exactly 0.
	f("perfect line", []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, []float64{7, 10, 13, 16, 19, 22, 25, 28, 31, 34}, 3, 0, 0)
	// The same with the magnitudes of a real series: seconds since start, a 50 MB heap growing 1000 B/s.
	xs, ys := make([]float64, 30), make([]float64, 30)
	for i := range xs {
		xs[i] = 3600 + 20*float64(i)
		ys[i] = 50e6 + 1000*xs[i]
	}
	f("perfect line, large offsets", xs, ys, 1000, 0, 0)
	f("perfect falling line", []float64{1, 2, 3}, []float64{9, 7, 5}, -2, 0, 0)
	// By hand: x̄ = 3, ȳ = 4, Sxx = 10, Sxy = 6, slope 0.6, intercept 2.2; residuals -0.8, 0.6, 1, -0.6,
	// -0.2, RSS 2.4; SE = sqrt(2.4 / 3 / 10) = sqrt(0.08).
	f("noisy, by hand", []float64{1, 2, 3, 4, 5}, []float64{2, 4, 5, 4, 5}, 0.6, math.Sqrt(0.08), 1e-12)
	// By hand: x̄ = 2.5, ȳ = 3, Sxx = 5, Sxy = -5, slope -1; residuals -0.5, 0.5, 0.5, -0.5, RSS 1;
	// SE = sqrt(1 / 2 / 5) = sqrt(0.1).
	f("noisy falling, by hand", []float64{1, 2, 3, 4}, []float64{4, 4, 3, 1}, -1, math.Sqrt(0.1), 1e-12)

	bad := func(name string, xs, ys []float64) {
		t.Helper()
		if slope, se, ok := LinearFit(xs, ys); ok || slope != 0 || se != 0 {
			t.Errorf("%s: got (%v, %v, %v), want (0, 0, false)", name, slope, se, ok)
		}
	}
	bad("lengths differ", []float64{1, 2, 3}, []float64{1, 2})
	bad("two points", []float64{1, 2}, []float64{1, 2})
	bad("no points", nil, nil)
	bad("all x equal", []float64{4, 4, 4}, []float64{1, 2, 3})
	bad("NaN", []float64{1, 2, 3}, []float64{1, math.NaN(), 3})
	bad("Inf", []float64{1, math.Inf(1), 3}, []float64{1, 2, 3})
}

func TestTQuantile(t *testing.T) {
	// Values from statistics tables (one-sided 95 % and 97.5 % critical values of Student's t).
	f := func(p float64, df int, want float64) {
		t.Helper()
		if got := tQuantile(p, df); math.Abs(got-want) > 1e-6 {
			t.Errorf("got t(%v, %d) = %v, want %v", p, df, got, want)
		}
	}
	f(0.95, 1, 6.313752)
	f(0.95, 2, 2.919986)
	f(0.95, 3, 2.353363)
	f(0.95, 10, 1.812461)
	f(0.95, 30, 1.697261)
	f(0.95, 120, 1.657651)
	f(0.975, 10, 2.228139)
	f(0.975, 1000, 1.962339)
	prev := math.Inf(1)
	for df := 1; df <= 500; df++ {
		got := tQuantile(0.95, df)
		if !(got < prev) || got <= 1.6448536269514722 {
			t.Fatalf("got t(0.95, %d) = %v after %v, want strictly decreasing towards 1.645", df, got, prev)
		}
		prev = got
	}
	for _, c := range []struct {
		p  float64
		df int
	}{{0.95, 0}, {0, 5}, {1, 5}, {math.NaN(), 5}} {
		if got := tQuantile(c.p, c.df); !math.IsNaN(got) {
			t.Errorf("got t(%v, %d) = %v, want NaN", c.p, c.df, got)
		}
	}
}

func TestSteadyAllocation(t *testing.T) {
	l := DefaultMemoryLimits() // k = 3, 5 s windows
	f := func(name string, rates []float64, k, wantValue float64, want Outcome, wantDetail string) {
		t.Helper()
		l := l
		l.AllocSpikeFactor = k
		r := MemoryVerdict(MemoryInput{AllocRates: rates}, l)[0]
		if r.Name != RuleSteadyAllocation {
			t.Fatalf("got first rule %q, want %q", r.Name, RuleSteadyAllocation)
		}
		if math.Abs(r.Value-wantValue) > 1e-9 || r.Outcome != want || r.Pass != (want == OutcomePass) ||
			!strings.Contains(r.Detail, wantDetail) {
			t.Errorf("%s: got value %v %s (pass %v) detail %q, want %v %s containing %q", name, r.Value,
				r.Outcome, r.Pass, r.Detail, wantValue, want, wantDetail)
		}
		if r.Limit != finiteOrZero(k) {
			t.Errorf("%s: got limit %v, want %v", name, r.Limit, finiteOrZero(k))
		}
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("%s: got %v marshalling the rule, want JSON", name, err)
		}
	}
	const (
		pass, fail, unmeasured = OutcomePass, OutcomeFail, OutcomeNotMeasured
	)
	f("steady", []float64{100, 110, 90, 105, 95}, 3, 1.1, pass, "largest window 110 B/s is 1.10× the median 100 B/s over 5 windows of 5s")
	f("a spike", []float64{100, 100, 400, 100}, 3, 4, fail, "4.00×")
	f("exactly k", []float64{100, 300, 100}, 3, 3, pass, "3.00×")
	f("just above k", []float64{100, 300.0003, 100}, 3, 3.000003, fail, "")
	f("even count median is the middle mean", []float64{300, 100, 900, 200}, 3, 3.6, fail, "median 250 B/s")
	f("same data, looser k", []float64{300, 100, 900, 200}, 4, 3.6, pass, "")
	f("two windows", []float64{100, 100}, 3, 0, unmeasured,
		"not measured: not enough windows (2, need at least 3) to judge; lengthen the phase or shorten alloc_window")
	f("no windows", nil, 3, 0, unmeasured, "not enough windows (0, need at least 3)")
	f("nothing allocated", []float64{0, 0, 0}, 3, 1, pass, "no heap allocation in any of 3 windows")
	f("median zero, one spike", []float64{0, 0, 0, 50}, 3, 0, fail, "unbounded spike")
	f("NaN rate", []float64{1, math.NaN(), 1}, 3, 0, unmeasured, "window 1 has an invalid allocation rate")
	f("negative rate", []float64{1, 1, -1}, 3, 0, unmeasured, "window 2 has an invalid allocation rate")
	f("infinite rate", []float64{1, math.Inf(1), 1}, 3, 0, unmeasured, "window 1 has an invalid allocation rate")
	f("k zero", []float64{1, 1, 1}, 0, 0, fail, "invalid limit alloc_spike_factor 0")
	f("k infinite", []float64{1, 1, 1}, math.Inf(1), 0, fail, "invalid limit alloc_spike_factor")
	f("k zero without data", nil, 0, 0, fail, "invalid limit alloc_spike_factor 0")
}

// finiteOrZero is what a Rule's Limit holds for a configured limit: JSON cannot carry NaN or infinity.
func finiteOrZero(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// line returns n live-heap points every step seconds from start bytes, growing perMin bytes per minute,
// plus noise[i % len(noise)] bytes.
func line(n int, step, start, perMin float64, noise ...float64) []Sample2D {
	ps := make([]Sample2D, n)
	for i := range ps {
		x := float64(i) * step
		ps[i] = Sample2D{X: x, Y: start + perMin*x/60}
		if len(noise) > 0 {
			ps[i].Y += noise[i%len(noise)]
		}
	}
	return ps
}

// xsOf returns n times every step seconds from 0.
func xsOf(n int, step float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(i) * step
	}
	return xs
}

// pairsOf pairs xs and ys.
func pairsOf(xs, ys []float64) []Sample2D {
	ps := make([]Sample2D, len(xs))
	for i := range xs {
		ps[i] = Sample2D{X: xs[i], Y: ys[i]}
	}
	return ps
}

func TestSurvivorGrowth(t *testing.T) {
	const kib, mib = 1024.0, 1024.0 * 1024
	type limits struct {
		slopeMax  float64
		warmup    time.Duration
		minCycles int
		minSpan   time.Duration
	}
	// def is DefaultMemoryLimits' survivor-growth part: 256 KiB/min, a 5 s warm-up, 8 cycles over 10 s.
	def := limits{256 * kib, 5 * time.Second, 8, 10 * time.Second}
	with := func(f func(*limits)) limits {
		l := def
		f(&l)
		return l
	}
	f := func(name string, pts []Sample2D, lim limits, want Outcome, wantValue, tol float64, wantDetail ...string) {
		t.Helper()
		l := DefaultMemoryLimits()
		l.LiveHeapSlopeMaxBytesPerMin, l.Warmup, l.MinGCCycles, l.MinSpan = lim.slopeMax, lim.warmup, lim.minCycles, lim.minSpan
		r := MemoryVerdict(MemoryInput{LiveHeap: pts}, l)[1]
		if r.Name != RuleSurvivorGrowth {
			t.Fatalf("got second rule %q, want %q", r.Name, RuleSurvivorGrowth)
		}
		if r.Outcome != want || r.Pass != (want == OutcomePass) || math.Abs(r.Value-wantValue) > tol {
			t.Errorf("%s: got %s (pass %v) value %v, want %s value %v; detail %q", name, r.Outcome, r.Pass,
				r.Value, want, wantValue, r.Detail)
		}
		for _, d := range wantDetail {
			if !strings.Contains(r.Detail, d) {
				t.Errorf("%s: got detail %q, want it to contain %q", name, r.Detail, d)
			}
		}
		if wantLimit := finiteOrZero(lim.slopeMax); r.Limit != wantLimit || r.Unit != "bytes/min" {
			t.Errorf("%s: got limit %v %s, want %v bytes/min", name, r.Limit, r.Unit, wantLimit)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("%s: got %v marshalling the rule, want JSON", name, err)
		}
	}

	// Warm-up: the live heap climbs 1 MB a second for 5 s (caches and pools filling), then stays flat.
	// Past the warm-up the slope is 554 ± 5544 B/min, well within the limit; judged from the start, the
	// climb would read as 5.3 MB/min of growth.
	warmXs := xsOf(30, 1)
	warmYs := make([]float64, len(warmXs))
	for i, x := range warmXs {
		warmYs[i] = 50e6 + 1e6*min(x, 5) + []float64{4000, -4000, 2000, -2000}[i%4]
	}
	warm := pairsOf(warmXs, warmYs)
	f("warm-up growth then flat", warm, def, OutcomePass, 554, 1,
		"25 GC cycles over 24.0s after the 5s warm-up (5 earlier cycles ignored)", "within the limit of 262144 bytes/min")
	f("same without a warm-up", warm, with(func(l *limits) { l.warmup = 0 }), OutcomeFail, 5271297, 1,
		"the live heap grows", "above the limit of 262144 bytes/min")

	// A steady leak of 2 MiB/min over 20 cycles 2 s apart, with noise: fails.
	f("steady 2 MiB/min growth", line(20, 2, 50e6, 2*mib, 3000, -3000, 1000, -1000), def, OutcomeFail, 2*mib, 2000,
		"17 GC cycles over 32.0s after the 5s warm-up (3 earlier cycles ignored)", "the live heap grows")
	f("a perfect leak above the limit", line(20, 2, 50e6, mib), def, OutcomeFail, mib, 1e-6,
		"slope 1048576 ± 0 bytes/min (SE)", "one-sided 95 % bounds 1048576 to 1048576 bytes/min")

	// The rest,rest run: 12 GC cycles over a 15 s phase read as +145 ± 46 KB/min. It is
	// significant (the lower bound is 145 - 1.812 × 46 = 62 KB/min > 0), which the old rule failed; but
	// the upper bound, 228 KB/min, is within a 1 MiB/min limit, so growth that small passes.
	restXs := xsOf(12, 15.0/11)
	restYs := []float64{50011413, 49991883, 49995178, 50021299, 50024594, 50005065, 50031185, 50011656,
		50014951, 50041072, 50021542, 50047663}
	rest := pairsOf(restXs, restYs)
	f("rest,rest: +145 ± 46 KB/min, 12 cycles over 15 s", rest,
		limits{mib, 0, 8, 10 * time.Second}, OutcomePass, 145001, 1,
		"slope 145001 ± 46000 bytes/min (SE) from 12 GC cycles over 15.0s", "bounds 61627 to 228374 bytes/min",
		"(t = 1.812, 10 degrees of freedom)", "(a significant but small growth)")
	// With the default 5 s warm-up, the same 15 s leave 8 cycles over 9.5 s: too short to speak.
	f("rest,rest with the default warm-up", rest, with(func(l *limits) { l.slopeMax = mib }), OutcomeNotMeasured, 0, 0,
		"not measured: 8 GC cycles over 9.5s after the 5s warm-up (4 earlier cycles ignored); "+
			"need a span of at least 10s (min_span); lengthen the phase or lower warmup")

	// Magnitude matters: 1 KiB/min on a perfect line is unmistakable (SE 0) but far below the limit.
	f("tiny but significant growth", line(20, 2, 50e6, kib), def, OutcomePass, kib, 1e-6,
		"(a significant but small growth)")
	f("flat with noise", line(20, 2, 50e6, 0, 4000, -4000, 2000, -2000), def, OutcomePass, 0, 2000, "within the limit")
	f("falling", line(20, 2, 50e6, -100*kib), def, OutcomePass, -100*kib, 1e-6, "")

	// The hand-computed fit of TestLinearFit, one point a minute: slope 600 ± 282.8 B/min, 3 degrees of
	// freedom, t(0.95, 3) = 2.353363, bounds 600 ∓ 665.6.
	hand := []Sample2D{{60, 2000}, {120, 4000}, {180, 5000}, {240, 4000}, {300, 5000}}
	few := limits{256 * kib, 5 * time.Second, 3, 10 * time.Second}
	f("noisy growth within the limit", hand, few, OutcomePass, 600, 1e-9,
		"slope 600 ± 283 bytes/min (SE) from 5 GC cycles over 240.0s after the 5s warm-up (0 earlier cycles "+
			"ignored); one-sided 95 % bounds -66 to 1266 bytes/min (t = 2.353, 3 degrees of freedom); the upper "+
			"bound is within the limit of 262144 bytes/min")
	f("same, a limit inside the interval", hand, with(func(l *limits) { *l = few; l.slopeMax = 500 }),
		OutcomeInconclusive, 600, 1e-9,
		"inconclusive: the bounds straddle the limit of 500 bytes/min and the slope is not significantly positive")
	f("significant, a limit inside the interval", line(20, 2, 50e6, 300*kib, 30000, -30000, 10000, -10000), def,
		OutcomeInconclusive, 300*kib, 20000, "inconclusive: the bounds straddle the limit of 262144 bytes/min; lengthen")

	// Too little data is not measured, and says what was short and what to change.
	f("too few cycles", line(6, 5, 50e6, 0), def, OutcomeNotMeasured, 0, 0,
		"not measured: 5 GC cycles over 20.0s after the 5s warm-up (1 earlier cycles ignored); need at least "+
			"8 cycles (min_gc_cycles); lengthen the phase or lower warmup")
	f("too few and too short", line(10, 1, 50e6, 10*mib), def, OutcomeNotMeasured, 0, 0,
		"need at least 8 cycles (min_gc_cycles) and need a span of at least 10s (min_span)")
	f("all inside the warm-up", line(10, 0.5, 50e6, 10*mib), def, OutcomeNotMeasured, 0, 0,
		"0 GC cycles over 0.0s after the 5s warm-up (10 earlier cycles ignored)")
	f("no points", nil, def, OutcomeNotMeasured, 0, 0, "not measured: 0 GC cycles")
	f("one instant", []Sample2D{{5, 1}, {5, 2}, {5, 3}}, limits{256 * kib, 0, 3, 0}, OutcomeNotMeasured, 0, 0,
		"cannot fit a trend")
	f("a NaN point", append(line(20, 2, 50e6, 0), Sample2D{41, math.NaN()}), def, OutcomeNotMeasured, 0, 0,
		"live-heap point 20 (41 s, NaN bytes) is not finite")

	// Invalid limits fail and name the key (config validation keeps them out of real runs).
	f("NaN limit", line(20, 2, 50e6, 0), with(func(l *limits) { l.slopeMax = math.NaN() }), OutcomeFail, 0, 0,
		"invalid limit live_heap_slope_max_bytes_per_min NaN")
	f("negative limit", line(20, 2, 50e6, 0), with(func(l *limits) { l.slopeMax = -1 }), OutcomeFail, 0, 0,
		"invalid limit live_heap_slope_max_bytes_per_min -1")
	f("negative warm-up", line(20, 2, 50e6, 0), with(func(l *limits) { l.warmup = -time.Second }), OutcomeFail, 0, 0,
		"invalid limit warmup -1s")
	f("two cycles minimum", line(20, 2, 50e6, 0), with(func(l *limits) { l.minCycles = 2 }), OutcomeFail, 0, 0,
		"invalid limit min_gc_cycles 2: want at least 3")
	f("negative span", line(20, 2, 50e6, 0), with(func(l *limits) { l.minSpan = -time.Second }), OutcomeFail, 0, 0,
		"invalid limit min_span -1s")
}

func TestHeapReturned(t *testing.T) {
	const mib = 1 << 20
	f := func(name string, baseline, after uint64, pct float64, bytes uint64, wantValue float64, want Outcome,
		wantDetail string) {
		t.Helper()
		l := DefaultMemoryLimits()
		l.HeapReturnTolerancePercent, l.HeapReturnToleranceBytes = pct, bytes
		r := MemoryVerdict(MemoryInput{BaselineHeapLive: baseline, AfterHeapLive: after}, l)[2]
		if r.Name != RuleHeapReturned {
			t.Fatalf("got third rule %q, want %q", r.Name, RuleHeapReturned)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("%s: got %v marshalling the rule, want JSON", name, err)
		}
		if math.Abs(r.Value-wantValue) > 1e-9 || r.Outcome != want || r.Pass != (want == OutcomePass) ||
			!strings.Contains(r.Detail, wantDetail) {
			t.Errorf("%s: got value %v %s (pass %v) detail %q, want %v %s containing %q", name, r.Value,
				r.Outcome, r.Pass, r.Detail, wantValue, want, wantDetail)
		}
	}
	const (
		pass, fail, unmeasured = OutcomePass, OutcomeFail, OutcomeNotMeasured
	)
	f("back within 5 %", 100*mib, 105*mib, 10, mib, 5, pass,
		"live heap 110100480 bytes after vs 104857600 bytes before the phase (+5242880 bytes, +5.0 %); tolerance 10.0 % or 1048576 bytes")
	f("12 % up", 100*mib, 112*mib, 10, mib, 12, fail, "+12.0 %")
	f("exactly 10 %", 100*mib, 110*mib, 10, mib, 10, pass, "")
	f("one byte past 10 %", 100*mib, 110*mib+1, 10, mib, 10+100.0/(100*mib), fail, "")
	f("small heap within the byte tolerance", 2*mib, 2*mib+800<<10, 10, mib, 39.0625, pass, "")
	f("small heap past both", 2*mib, 3*mib+1, 10, mib, 50+100.0/(2*mib), fail, "")
	f("byte tolerance exact", 2*mib, 3*mib, 10, mib, 50, pass, "")
	f("shrunk 20 % is not back", 100*mib, 80*mib, 10, mib, -20, fail, "-20.0 %")
	f("unchanged with zero tolerances", 100*mib, 100*mib, 0, 0, 0, pass, "")
	f("baseline missing", 0, 100*mib, 10, mib, 0, unmeasured, "not measured: no baseline live heap (0 bytes)")
	f("after missing", 100*mib, 0, 10, mib, 0, unmeasured, "not measured: no live heap after the settle period (0 bytes)")
	f("negative tolerance", 100*mib, 100*mib, -1, mib, 0, fail, "invalid limit heap_return_tolerance_percent")
	f("NaN tolerance", 100*mib, 100*mib, math.NaN(), mib, 0, fail, "invalid limit heap_return_tolerance_percent NaN")
}

func TestGoroutinesReturned(t *testing.T) {
	f := func(name string, baseline, after uint64, tol int, wantValue float64, want Outcome, wantDetail string) {
		t.Helper()
		l := DefaultMemoryLimits()
		l.GoroutineReturnTolerance = tol
		r := MemoryVerdict(MemoryInput{BaselineGoroutines: baseline, AfterGoroutines: after}, l)[3]
		if r.Name != RuleGoroutinesReturned {
			t.Fatalf("got fourth rule %q, want %q", r.Name, RuleGoroutinesReturned)
		}
		if r.Value != wantValue || r.Outcome != want || r.Pass != (want == OutcomePass) ||
			!strings.Contains(r.Detail, wantDetail) {
			t.Errorf("%s: got value %v %s (pass %v) detail %q, want %v %s containing %q", name, r.Value,
				r.Outcome, r.Pass, r.Detail, wantValue, want, wantDetail)
		}
	}
	const (
		pass, fail, unmeasured = OutcomePass, OutcomeFail, OutcomeNotMeasured
	)
	f("within tolerance", 10, 12, 2, 2, pass, "12 goroutines after vs 10 before the phase (+2); tolerance +2")
	f("one too many", 10, 13, 2, 3, fail, "(+3)")
	f("fewer than before", 10, 5, 2, -5, pass, "(-5)")
	f("zero tolerance", 10, 10, 0, 0, pass, "")
	f("baseline missing", 0, 10, 2, 0, unmeasured, "not measured: no baseline count of goroutines (0)")
	f("after missing", 10, 0, 2, 0, unmeasured, "not measured: no count of goroutines after the settle period (0)")
	f("negative tolerance", 10, 10, -1, 0, fail, "invalid limit goroutine_return_tolerance -1")

	// A target soakd does not host: no forced GC is claimed.
	if h := MemoryVerdict(MemoryInput{BaselineHeapLive: 10 << 20, AfterHeapLive: 10 << 20, NoForcedGC: true}, DefaultMemoryLimits())[2]; h.Name != RuleHeapReturned || strings.Contains(h.Definition, "forced GC") {
		t.Errorf("heap_returned without a forced GC: %+v", h)
	}
	// Node has no goroutines: the rule counts its analogue and says so
	// (it read "9 goroutines after vs 7 before" for libuv handles).
	r := MemoryVerdict(MemoryInput{BaselineGoroutines: 7, AfterGoroutines: 9, GoroutineAnalogue: "active handles"}, DefaultMemoryLimits())[3]
	if r.Title != "Active handles returned to baseline" || r.Unit != "active handles" || r.Outcome != OutcomePass ||
		r.Detail != "9 active handles after vs 7 before the phase (+2); tolerance +2" || !strings.Contains(r.Definition, "analogue of goroutines") {
		t.Errorf("Node's analogue: %+v", r)
	}
}

func TestMemoryVerdict(t *testing.T) {
	good := MemoryInput{
		AllocRates:       []float64{1e6, 1.1e6, 0.9e6, 1e6},
		LiveHeap:         line(12, 20, 30e6, 0, 1000, -1000),
		BaselineHeapLive: 30e6, AfterHeapLive: 30.5e6,
		BaselineGoroutines: 8, AfterGoroutines: 9,
	}
	rs := MemoryVerdict(good, DefaultMemoryLimits())
	wantNames := []string{RuleSteadyAllocation, RuleSurvivorGrowth, RuleHeapReturned, RuleGoroutinesReturned}
	if len(rs) != len(wantNames) {
		t.Fatalf("got %d rules, want %d", len(rs), len(wantNames))
	}
	for i, r := range rs {
		if r.Name != wantNames[i] || r.Title == "" || r.Unit == "" || r.Definition == "" || r.Detail == "" {
			t.Errorf("got rule %d %+v, want %s with title, unit, definition and detail", i, r, wantNames[i])
		}
		if !r.Pass || r.Outcome != OutcomePass {
			t.Errorf("got %s %s (pass %v: %s), want pass", r.Name, r.Outcome, r.Pass, r.Detail)
		}
	}
	if !MemoryPass(rs) || MemoryOutcome(rs) != OutcomePass {
		t.Errorf("got MemoryPass %v, MemoryOutcome %s for passing rules, want true, pass", MemoryPass(rs), MemoryOutcome(rs))
	}

	bad := good
	bad.AfterGoroutines = 20
	if rs := MemoryVerdict(bad, DefaultMemoryLimits()); MemoryPass(rs) || MemoryOutcome(rs) != OutcomeFail {
		t.Errorf("got MemoryPass %v, MemoryOutcome %s with a goroutine leak, want false, fail", MemoryPass(rs),
			MemoryOutcome(rs))
	}
	if MemoryPass(nil) {
		t.Errorf("got MemoryPass(nil) true, want false: no evidence is not a pass")
	}

	// Missing data leaves every rule not measured, none passing, and still encodes as JSON (no NaN or
	// infinity).
	empty := MemoryVerdict(MemoryInput{}, DefaultMemoryLimits())
	for _, r := range empty {
		if r.Pass || r.Outcome != OutcomeNotMeasured || !strings.HasPrefix(r.Detail, "not measured: ") {
			t.Errorf("got %s %s (pass %v: %q) without data, want not_measured with the reason", r.Name,
				r.Outcome, r.Pass, r.Detail)
		}
	}
	if MemoryPass(empty) || MemoryOutcome(empty) != OutcomeNotMeasured {
		t.Errorf("got MemoryPass %v, MemoryOutcome %s without data, want false, not_measured", MemoryPass(empty),
			MemoryOutcome(empty))
	}
	b, err := json.Marshal(empty)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	for _, key := range []string{`"name":`, `"title":`, `"unit":`, `"value":`, `"limit":`, `"pass":`, `"outcome":"not_measured"`, `"detail":`, `"definition":`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("got json %s, want it to contain %s", b, key)
		}
	}
}

func TestDefaultMemoryLimits(t *testing.T) {
	l := DefaultMemoryLimits()
	want := MemoryLimits{AllocSpikeFactor: 3, AllocWindow: 5 * time.Second, LiveHeapSlopeMaxBytesPerMin: 262144,
		Warmup: 5 * time.Second, MinGCCycles: 8, MinSpan: 10 * time.Second,
		HeapReturnTolerancePercent: 10, HeapReturnToleranceBytes: 1048576, GoroutineReturnTolerance: 2}
	if l != want {
		t.Errorf("got %+v, want %+v", l, want)
	}
}

func TestMemoryOutcome(t *testing.T) {
	rule := func(o Outcome) Rule { return Rule{Outcome: o, Pass: o == OutcomePass} }
	p, f, i, n := rule(OutcomePass), rule(OutcomeFail), rule(OutcomeInconclusive), rule(OutcomeNotMeasured)
	for _, c := range []struct {
		name string
		rs   []Rule
		want Outcome
	}{
		{"all pass", []Rule{p, p, p, p}, OutcomePass},
		{"one fail", []Rule{p, f, p, p}, OutcomeFail},
		{"fail beats not measured", []Rule{n, i, f, p}, OutcomeFail},
		{"one not measured", []Rule{p, n, p, p}, OutcomeNotMeasured},
		{"one inconclusive", []Rule{p, p, i, p}, OutcomeInconclusive},
		{"not measured beats inconclusive", []Rule{i, n}, OutcomeNotMeasured},
		{"no rules", nil, OutcomeNotMeasured},
		{"no outcome, passing", []Rule{{Pass: true}, p}, OutcomePass},
		{"no outcome, failing", []Rule{{Pass: false}, p}, OutcomeFail},
		{"unknown outcome", []Rule{{Outcome: "maybe", Pass: true}}, OutcomeNotMeasured},
	} {
		if got := MemoryOutcome(c.rs); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}
