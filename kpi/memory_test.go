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

func TestTQuantile975(t *testing.T) {
	// Exact values from statistics tables (and a numerical inversion of Student's t CDF).
	for _, c := range []struct {
		df   int
		want float64
	}{{1, 12.706205}, {2, 4.302653}, {3, 3.182446}, {10, 2.228139}, {30, 2.042272},
		{40, 2.021075}, {60, 2.000298}, {120, 1.979930}, {1000, 1.962339}} {
		if got := tQuantile975(c.df); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("got t(0.975, %d) = %v, want %v", c.df, got, c.want)
		}
	}
	prev := math.Inf(1)
	for df := 1; df <= 500; df++ {
		got := tQuantile975(df)
		if !(got < prev) || got <= 1.959963984540054 {
			t.Fatalf("got t(0.975, %d) = %v after %v, want strictly decreasing towards 1.96", df, got, prev)
		}
		prev = got
	}
	if got := tQuantile975(0); !math.IsNaN(got) {
		t.Errorf("got t(0.975, 0) = %v, want NaN", got)
	}
}

func TestSteadyAllocation(t *testing.T) {
	l := DefaultMemoryLimits() // k = 3, 5 s windows
	f := func(name string, rates []float64, k, wantValue float64, wantPass bool, wantDetail string) {
		t.Helper()
		l := l
		l.AllocSpikeFactor = k
		r := MemoryVerdict(MemoryInput{AllocRates: rates}, l)[0]
		if r.Name != RuleSteadyAllocation {
			t.Fatalf("got first rule %q, want %q", r.Name, RuleSteadyAllocation)
		}
		if math.Abs(r.Value-wantValue) > 1e-9 || r.Pass != wantPass || !strings.Contains(r.Detail, wantDetail) {
			t.Errorf("%s: got value %v pass %v detail %q, want %v %v containing %q", name, r.Value, r.Pass,
				r.Detail, wantValue, wantPass, wantDetail)
		}
		if r.Limit != finiteOrZero(k) {
			t.Errorf("%s: got limit %v, want %v", name, r.Limit, finiteOrZero(k))
		}
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("%s: got %v marshalling the rule, want JSON", name, err)
		}
	}
	f("steady", []float64{100, 110, 90, 105, 95}, 3, 1.1, true, "largest window 110 B/s is 1.10× the median 100 B/s over 5 windows of 5s")
	f("a spike", []float64{100, 100, 400, 100}, 3, 4, false, "4.00×")
	f("exactly k", []float64{100, 300, 100}, 3, 3, true, "3.00×")
	f("just above k", []float64{100, 300.0003, 100}, 3, 3.000003, false, "")
	f("even count median is the middle mean", []float64{300, 100, 900, 200}, 3, 3.6, false, "median 250 B/s")
	f("same data, looser k", []float64{300, 100, 900, 200}, 4, 3.6, true, "")
	f("two windows", []float64{100, 100}, 3, 0, false,
		"not enough windows (2) to judge; lengthen the phase or shorten alloc_window")
	f("no windows", nil, 3, 0, false, "not enough windows (0) to judge")
	f("nothing allocated", []float64{0, 0, 0}, 3, 1, true, "no heap allocation in any of 3 windows")
	f("median zero, one spike", []float64{0, 0, 0, 50}, 3, 0, false, "unbounded spike")
	f("NaN rate", []float64{1, math.NaN(), 1}, 3, 0, false, "window 1 has an invalid allocation rate")
	f("negative rate", []float64{1, 1, -1}, 3, 0, false, "window 2 has an invalid allocation rate")
	f("infinite rate", []float64{1, math.Inf(1), 1}, 3, 0, false, "window 1 has an invalid allocation rate")
	f("k zero", []float64{1, 1, 1}, 0, 0, false, "invalid limit alloc_spike_factor 0")
	f("k infinite", []float64{1, 1, 1}, math.Inf(1), 0, false, "invalid limit alloc_spike_factor")
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

func TestSurvivorGrowth(t *testing.T) {
	l := DefaultMemoryLimits() // 256 KiB/min
	f := func(name string, pts []Sample2D, limit, wantValue, tol float64, wantPass bool, wantDetail string) {
		t.Helper()
		l := l
		l.LiveHeapSlopeMaxBytesPerMin = limit
		r := MemoryVerdict(MemoryInput{LiveHeap: pts}, l)[1]
		if r.Name != RuleSurvivorGrowth {
			t.Fatalf("got second rule %q, want %q", r.Name, RuleSurvivorGrowth)
		}
		if math.Abs(r.Value-wantValue) > tol || r.Pass != wantPass || !strings.Contains(r.Detail, wantDetail) {
			t.Errorf("%s: got value %v pass %v detail %q, want %v %v containing %q", name, r.Value, r.Pass,
				r.Detail, wantValue, wantPass, wantDetail)
		}
		if wantLimit := finiteOrZero(limit); r.Limit != wantLimit || r.Unit != "bytes/min" {
			t.Errorf("%s: got limit %v %s, want %v bytes/min", name, r.Limit, r.Unit, wantLimit)
		}
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("%s: got %v marshalling the rule, want JSON", name, err)
		}
	}
	const kib = 1024.0
	f("flat with noise", line(20, 20, 50e6, 0, 4000, -4000, 2000, -2000), 256*kib, 0, 2000, true, "over 20 cycles")
	f("a leak above the limit", line(10, 30, 50e6, 1<<20), 256*kib, 1<<20, 1e-6, false,
		"slope 1048576 ± 0 bytes/min over 10 cycles")
	f("a leak above the limit says so", line(10, 30, 50e6, 1<<20), 256*kib, 1<<20, 1e-6, false, "above the limit")
	// Growth below the limit still fails when it is unmistakable: a perfect line has no error.
	f("small steady growth", line(10, 30, 50e6, kib), 256*kib, kib, 1e-6, false, "significantly positive")
	f("falling", line(10, 30, 50e6, -100*kib), 256*kib, -100*kib, 1e-6, true, "")
	// The hand-computed fit of TestLinearFit, one point a minute, in KB: slope 600 ± 282.8 B/min, 3 degrees
	// of freedom, t = 3.182446, lower bound 600 - 900.1 < 0: not significant.
	hand := []Sample2D{{60, 2000}, {120, 4000}, {180, 5000}, {240, 4000}, {300, 5000}}
	f("noisy growth, not significant", hand, 256*kib, 600, 1e-9, true,
		"slope 600 ± 283 bytes/min over 5 cycles; lower 97.5 % bound -300 bytes/min (t = 3.182, 3 degrees of freedom)")
	f("same, above a tight limit", hand, 500, 600, 1e-9, false, "above the limit of 500 bytes/min")
	f("two points", line(2, 30, 50e6, 0), 256*kib, 0, 0, false, "too few GC cycles in the window")
	f("no points", nil, 256*kib, 0, 0, false, "(0 live-heap points after GC, need at least 3)")
	f("one instant", []Sample2D{{5, 1}, {5, 2}, {5, 3}}, 256*kib, 0, 0, false, "cannot fit a trend")
	f("NaN limit", line(10, 30, 50e6, 0), math.NaN(), 0, 0, false, "invalid limit")
}

func TestHeapReturned(t *testing.T) {
	const mib = 1 << 20
	f := func(name string, baseline, after uint64, pct float64, bytes uint64, wantValue float64, wantPass bool,
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
		if math.Abs(r.Value-wantValue) > 1e-9 || r.Pass != wantPass || !strings.Contains(r.Detail, wantDetail) {
			t.Errorf("%s: got value %v pass %v detail %q, want %v %v containing %q", name, r.Value, r.Pass,
				r.Detail, wantValue, wantPass, wantDetail)
		}
	}
	f("back within 5 %", 100*mib, 105*mib, 10, mib, 5, true,
		"live heap 110100480 bytes after vs 104857600 bytes before the phase (+5242880 bytes, +5.0 %); tolerance 10.0 % or 1048576 bytes")
	f("12 % up", 100*mib, 112*mib, 10, mib, 12, false, "+12.0 %")
	f("exactly 10 %", 100*mib, 110*mib, 10, mib, 10, true, "")
	f("one byte past 10 %", 100*mib, 110*mib+1, 10, mib, 10+100.0/(100*mib), false, "")
	f("small heap within the byte tolerance", 2*mib, 2*mib+800<<10, 10, mib, 39.0625, true, "")
	f("small heap past both", 2*mib, 3*mib+1, 10, mib, 50+100.0/(2*mib), false, "")
	f("byte tolerance exact", 2*mib, 3*mib, 10, mib, 50, true, "")
	f("shrunk 20 % is not back", 100*mib, 80*mib, 10, mib, -20, false, "-20.0 %")
	f("unchanged with zero tolerances", 100*mib, 100*mib, 0, 0, 0, true, "")
	f("baseline missing", 0, 100*mib, 10, mib, 0, false, "baseline live heap not measured")
	f("after missing", 100*mib, 0, 10, mib, 0, false, "after the settle period not measured")
	f("negative tolerance", 100*mib, 100*mib, -1, mib, 0, false, "invalid limit heap_return_tolerance_percent")
	f("NaN tolerance", 100*mib, 100*mib, math.NaN(), mib, 0, false, "invalid limit heap_return_tolerance_percent NaN")
}

func TestGoroutinesReturned(t *testing.T) {
	f := func(name string, baseline, after uint64, tol int, wantValue float64, wantPass bool, wantDetail string) {
		t.Helper()
		l := DefaultMemoryLimits()
		l.GoroutineReturnTolerance = tol
		r := MemoryVerdict(MemoryInput{BaselineGoroutines: baseline, AfterGoroutines: after}, l)[3]
		if r.Name != RuleGoroutinesReturned {
			t.Fatalf("got fourth rule %q, want %q", r.Name, RuleGoroutinesReturned)
		}
		if r.Value != wantValue || r.Pass != wantPass || !strings.Contains(r.Detail, wantDetail) {
			t.Errorf("%s: got value %v pass %v detail %q, want %v %v containing %q", name, r.Value, r.Pass,
				r.Detail, wantValue, wantPass, wantDetail)
		}
	}
	f("within tolerance", 10, 12, 2, 2, true, "12 goroutines after vs 10 before the phase (+2); tolerance +2")
	f("one too many", 10, 13, 2, 3, false, "(+3)")
	f("fewer than before", 10, 5, 2, -5, true, "(-5)")
	f("zero tolerance", 10, 10, 0, 0, true, "")
	f("baseline missing", 0, 10, 2, 0, false, "baseline goroutine count not measured")
	f("after missing", 10, 0, 2, 0, false, "after the settle period not measured")
	f("negative tolerance", 10, 10, -1, 0, false, "invalid limit goroutine_return_tolerance -1")
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
		if !r.Pass {
			t.Errorf("got %s failing (%s), want pass", r.Name, r.Detail)
		}
	}
	if !MemoryPass(rs) {
		t.Errorf("got MemoryPass false for passing rules, want true")
	}

	bad := good
	bad.AfterGoroutines = 20
	if rs := MemoryVerdict(bad, DefaultMemoryLimits()); MemoryPass(rs) {
		t.Errorf("got MemoryPass true with a goroutine leak, want false")
	}
	if MemoryPass(nil) {
		t.Errorf("got MemoryPass(nil) true, want false: no evidence is not a pass")
	}

	// Missing data fails every rule and still encodes as JSON (no NaN or infinity).
	empty := MemoryVerdict(MemoryInput{}, DefaultMemoryLimits())
	for _, r := range empty {
		if r.Pass {
			t.Errorf("got %s passing without data, want fail", r.Name)
		}
	}
	b, err := json.Marshal(empty)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	for _, key := range []string{`"name":`, `"title":`, `"unit":`, `"value":`, `"limit":`, `"pass":`, `"detail":`, `"definition":`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("got json %s, want it to contain %s", b, key)
		}
	}
}

func TestDefaultMemoryLimits(t *testing.T) {
	l := DefaultMemoryLimits()
	want := MemoryLimits{AllocSpikeFactor: 3, AllocWindow: 5 * time.Second, LiveHeapSlopeMaxBytesPerMin: 262144,
		HeapReturnTolerancePercent: 10, HeapReturnToleranceBytes: 1048576, GoroutineReturnTolerance: 2}
	if l != want {
		t.Errorf("got %+v, want %+v", l, want)
	}
}
