package kpi

import (
	"encoding/json"
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

func TestDrift(t *testing.T) {
	l := DriftLimits{BaselineCycles: 2, HeapLiveRatio: 1.1, RSSRatio: 1.1, CPUPerRequestRatio: 1.2, GoroutinesIncrease: 5, GCPercentIncreasePoints: 1}
	f := func(heap []float64, want Outcome, wantMeasured float64, wantWorst int) {
		t.Helper()
		r := driftRule(t, Drift(cycles(heap...), l), "heap_live_drift")
		if r.Outcome != want || r.Pass != (want == OutcomePass) || (wantMeasured != 0 && !nearly(r.Measured, wantMeasured)) || r.WorstCycle != wantWorst {
			t.Errorf("heap %v: %s (pass %v) measured %v worst %d, want %s %v %d (%s)", heap, r.Outcome, r.Pass, r.Measured, r.WorstCycle, want, wantMeasured, wantWorst, r.Detail)
		}
	}
	f([]float64{100}, OutcomeNotMeasured, 0, 0)      // too few cycles: not measured, never pass
	f([]float64{100, 100}, OutcomeNotMeasured, 0, 0) // only the baseline
	f([]float64{100, 100, 105, 110}, OutcomePass, 1.1, 4)
	f([]float64{100, 100, 105, 111}, OutcomeFail, 1.11, 4)
	f([]float64{90, 110, 120, 100}, OutcomeFail, 1.2, 3) // baseline is the mean of the first two
	// A zero baseline cannot form a ratio: not measured, never pass.
	if r := driftRule(t, Drift(cycles(0, 0, 5), l), "heap_live_drift"); r.Outcome != OutcomeNotMeasured || r.Pass {
		t.Errorf("a zero baseline must be not measured: %+v", r)
	}
	if o := DriftOutcome(Drift(cycles(100), l)); o != OutcomeInconclusive {
		t.Errorf("drift of a one-cycle soak: %s, want inconclusive", o)
	}
	if o := DriftOutcome(Drift(cycles(100, 100, 100, 100), l)); o != OutcomePass {
		t.Errorf("steady cycles: %s, want pass", o)
	}
	// Differences, and the trend.
	cs := cycles(100, 100, 100, 100, 100)
	for i := range cs {
		cs[i].Goroutines = 15 + float64(2*i)
	}
	g := driftRule(t, Drift(cs, l), "goroutine_drift")
	if g.Pass || g.Measured != 7 || !nearly(g.SlopePerCycle, 2) {
		t.Errorf("goroutines 15,17,…,23: pass %v measured %v slope %v, want fail, 7 over the baseline 16, slope 2", g.Pass, g.Measured, g.SlopePerCycle)
	}
	if DriftOutcome(Drift(cs, l)) != OutcomeFail {
		t.Errorf("a failing rule must fail the drift verdict")
	}
	if _, err := json.Marshal(Drift(cs, l)); err != nil {
		t.Errorf("drift rules must encode: %v", err)
	}
}

func nearly(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
