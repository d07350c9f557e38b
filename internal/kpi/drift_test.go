package kpi

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func cycles(heap ...float64) []CycleFigures {
	var cs []CycleFigures
	for i, h := range heap {
		cs = append(cs, CycleFigures{Cycle: i + 1, HeapLiveBytes: h, RSSBytes: 100, Goroutines: 15, GCPercent: 2, CPUMicrosPerRequest: 50})
	}
	return cs
}

func driftRule(t *testing.T, rs []DriftRule, name string) DriftRule {
	t.Helper()
	for _, r := range rs {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no drift rule %s", name)
	return DriftRule{}
}

// soakLimits are the defaults of config.yaml's soak.drift.
func soakLimits() DriftLimits {
	return DriftLimits{WarmupCycles: 1, BaselineCycles: 3, SustainedCycles: 5, HeapLiveRatio: 1.1, RSSRatio: 1.2,
		CPUPerRequestRatio: 1.2, GoroutinesIncrease: 5, GCPercentIncreasePoints: 1}
}

func TestDrift(t *testing.T) {
	l := DriftLimits{BaselineCycles: 2, SustainedCycles: 2, HeapLiveRatio: 1.1, RSSRatio: 1.1, CPUPerRequestRatio: 1.2, GoroutinesIncrease: 5, GCPercentIncreasePoints: 1}
	f := func(heap []float64, want Outcome) DriftRule {
		t.Helper()
		r := driftRule(t, Drift(cycles(heap...), l), "heap_live_drift")
		if r.Outcome != want || r.Pass != (want == OutcomePass) {
			t.Errorf("heap %v: %s (pass %v), want %s (%s)", heap, r.Outcome, r.Pass, want, r.Detail)
		}
		return r
	}
	f([]float64{100}, OutcomeNotMeasured)      // too few cycles: not measured, never pass
	f([]float64{100, 100}, OutcomeNotMeasured) // only the baseline
	// One cycle beyond the limit is a warning, never a fail.
	if r := f([]float64{100, 100, 100, 130, 100, 100, 100, 100}, OutcomeInconclusive); len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "cycle 4") {
		t.Errorf("one noisy cycle: warnings %q, want one naming cycle 4", r.Warnings)
	}
	// Cycles in a row beyond the limit (SustainedCycles 2) where the values
	// moved up are a sustained shift; two noisy cycles the series comes
	// back from are not.
	f([]float64{100, 100, 100, 100, 130, 131, 132}, OutcomeFail)
	f([]float64{100, 100, 100, 130, 131, 100, 100, 100}, OutcomeInconclusive)
	// Three cycles give a trend; a flat one passes.
	f([]float64{100, 100, 100, 100, 100}, OutcomePass)
	// A zero baseline cannot form a ratio: not measured, never pass.
	if r := driftRule(t, Drift(cycles(0, 0, 5), l), "heap_live_drift"); r.Outcome != OutcomeNotMeasured || r.Pass {
		t.Errorf("a zero baseline must be not measured: %+v", r)
	}
	if o := DriftOutcome(Drift(cycles(100), l)); o != OutcomeInconclusive {
		t.Errorf("drift of a one-cycle soak: %s, want inconclusive", o)
	}
	// Differences, and the trend: goroutines +2 a cycle.
	cs := cycles(100, 100, 100, 100, 100, 100)
	for i := range cs {
		cs[i].Goroutines = 15 + float64(2*i)
	}
	g := driftRule(t, Drift(cs, l), "goroutine_drift")
	if g.Outcome != OutcomeFail || !nearly(g.SlopePerCycle, 2) || g.Shape == "flat" {
		t.Errorf("goroutines 15,17,…,25: %s slope %v shape %q, want fail, slope 2 (%s)", g.Outcome, g.SlopePerCycle, g.Shape, g.Detail)
	}
	if _, err := json.Marshal(Drift(cs, l)); err != nil {
		t.Errorf("drift rules must encode: %v", err)
	}
}

// TestDriftTooFewCyclesForATrend: two judged cycles give no trend, and the
// detail says so instead of "+0 ± 0 bytes per cycle".
func TestDriftTooFewCyclesForATrend(t *testing.T) {
	l := DriftLimits{BaselineCycles: 1, SustainedCycles: 2, HeapLiveRatio: 1.1}
	r := driftRule(t, Drift(cycles(100, 104), l), "heap_live_drift")
	if r.Outcome != OutcomeInconclusive || strings.Contains(r.Detail, "± 0") || !strings.Contains(r.Detail, "too few for a trend") {
		t.Errorf("two cycles: %s, %s", r.Outcome, r.Detail)
	}
}

// simulateSoak is one soak of n cycles of GraphQL CPU per request: noise of
// the spread the issue saw (175–274 µs over 58 cycles: sd about 20 µs
// around 210), plus a slope per cycle from cycle 1 and a step from cycle
// stepAt.
func simulateSoak(rng *rand.Rand, n int, slope, step float64, stepAt int) []CycleFigures {
	cs := make([]CycleFigures, n)
	for i := range cs {
		v := 210 + rng.NormFloat64()*20 + slope*float64(i)
		if stepAt > 0 && i+1 >= stepAt {
			v += step
		}
		g := 3.4 + rng.NormFloat64()*0.9 // GC 1.8–6 %
		cs[i] = CycleFigures{Cycle: i + 1, CPUMicrosPerRequest: v, GCPercent: g, HeapLiveBytes: 2.8e6 + rng.NormFloat64()*5e3,
			RSSBytes: 60e6 + rng.NormFloat64()*1e6, Goroutines: 15}
	}
	return cs
}

// rate is the share of 1,000 simulated soaks whose rule failed.
func rate(t *testing.T, rule string, gen func(*rand.Rand) []CycleFigures) float64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	fails := 0
	const n = 1000
	for range n {
		if driftRule(t, Drift(gen(rng), soakLimits()), rule).Outcome == OutcomeFail {
			fails++
		}
	}
	return float64(fails) / n
}

// TestDriftSimulated proves the rules on simulated 58-cycle soaks at the
// noise the issue measured on this machine: before, judging the worst
// cycle against cycle 1, a soak of pure noise failed cpu_per_request_drift
// (one cycle at 274 µs against 210) and gc_percent_drift.
func TestDriftSimulated(t *testing.T) {
	noise := func(r *rand.Rand) []CycleFigures { return simulateSoak(r, 58, 0, 0, 0) }
	cpuFA, gcFA := rate(t, "cpu_per_request_drift", noise), rate(t, "gc_percent_drift", noise)
	// A slope of +1.5 µs a cycle: +87 µs (+41 %) by the end.
	slope := rate(t, "cpu_per_request_drift", func(r *rand.Rand) []CycleFigures { return simulateSoak(r, 58, 1.5, 0, 0) })
	// A step of +30 % from cycle 30.
	step := rate(t, "cpu_per_request_drift", func(r *rand.Rand) []CycleFigures { return simulateSoak(r, 58, 0, 63, 30) })
	t.Logf("1,000 simulated 58-cycle soaks: false alarms cpu %.1f %%, gc %.1f %%; detected: slope +1.5 µs/cycle %.1f %%, step +30 %% at cycle 30 %.1f %%",
		cpuFA*100, gcFA*100, slope*100, step*100)
	if cpuFA > 0.03 || gcFA > 0.03 {
		t.Errorf("false alarms cpu %.1f %%, gc %.1f %%: want at most 3 %%", cpuFA*100, gcFA*100)
	}
	if slope < 0.9 || step < 0.9 {
		t.Errorf("detection: slope %.1f %%, step %.1f %%: want at least 90 %%", slope*100, step*100)
	}
}

// TestDriftTellsAWarmUpFromALeak: a live heap that rises and levels off is
// a warm-up; one that keeps rising is a slope, projected to when it
// crosses the limit.
func TestDriftTellsAWarmUpFromALeak(t *testing.T) {
	l := soakLimits()
	l.SecondsPerCycle = 110
	warm, leak := make([]CycleFigures, 40), make([]CycleFigures, 40)
	for i := range warm {
		h := 2.78e6 + 80e3*(1-math.Exp(-float64(i)/4)) // rises, then levels off
		warm[i] = CycleFigures{Cycle: i + 1, HeapLiveBytes: h, RSSBytes: 1, Goroutines: 1, GCPercent: 1, CPUMicrosPerRequest: 1}
		leak[i] = CycleFigures{Cycle: i + 1, HeapLiveBytes: 2.78e6 + 320*float64(i), RSSBytes: 1, Goroutines: 1, GCPercent: 1, CPUMicrosPerRequest: 1}
	}
	w := driftRule(t, Drift(warm, l), "heap_live_drift")
	if w.Shape != "levelling off" || w.Outcome == OutcomeFail || w.Projection != "" {
		t.Errorf("a warm-up: shape %q, %s, projection %q (%s)", w.Shape, w.Outcome, w.Projection, w.Detail)
	}
	k := driftRule(t, Drift(leak, l), "heap_live_drift")
	if k.Shape != "steady rise" || !strings.Contains(k.Projection, "crosses the limit in about") || !strings.Contains(k.Projection, "after 24 h") {
		t.Errorf("a slow leak: shape %q, projection %q (%s)", k.Shape, k.Projection, k.Detail)
	}
	t.Logf("slow leak: %s", k.Projection)
}

func nearly(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
