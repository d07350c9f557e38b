package kpi

import (
	"fmt"
	"math"
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
}

// DriftLimits say how far cycle N may move from the first cycles.
type DriftLimits struct {
	// BaselineCycles is how many first cycles form the baseline (their mean).
	BaselineCycles int
	// HeapLiveRatio, RSSRatio and CPUPerRequestRatio bound cycle N ÷ baseline.
	HeapLiveRatio      float64
	RSSRatio           float64
	CPUPerRequestRatio float64
	// GoroutinesIncrease bounds cycle N − baseline, in goroutines.
	GoroutinesIncrease float64
	// GCPercentIncreasePoints bounds cycle N − baseline, in points.
	GCPercentIncreasePoints float64
}

// DriftRule is one drift rule's outcome over all cycles.
type DriftRule struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	Unit  string `json:"unit"`
	// Baseline is the mean over the baseline cycles.
	Baseline float64 `json:"baseline"`
	// Worst is the value of the cycle furthest past the baseline, and
	// WorstCycle that cycle.
	Worst      float64 `json:"worst"`
	WorstCycle int     `json:"worst_cycle"`
	// Measured is Worst as the rule compares it (a ratio or a difference),
	// against Limit.
	Measured float64 `json:"measured"`
	Limit    float64 `json:"limit"`
	// SlopePerCycle is the least-squares trend over all cycles, in Unit per
	// cycle, with its standard error (0 with fewer than 3 cycles).
	SlopePerCycle float64 `json:"slope_per_cycle"`
	SlopeStdErr   float64 `json:"slope_stderr"`
	// Outcome is pass when Measured is within Limit, fail when beyond it,
	// not_measured while too few cycles exist (or the baseline is 0 for a
	// ratio): a short soak never reads as a passed drift rule.
	Outcome Outcome `json:"outcome"`
	// Pass is Outcome == pass (kept for soak.json readers of version 1).
	Pass           bool   `json:"pass"`
	Detail         string `json:"detail"`
	Definition     string `json:"definition"`
	judgedByRatio  bool
	valueOfFigures func(CycleFigures) float64
}

// Drift judges soak cycles against their first cycles: every rule is not
// measured while too few cycles exist to judge (with a Detail saying so), so
// a soak neither fails nor passes on its first cycles. Rules: live heap after GC, RSS and CPU per
// request as ratios; goroutines and GC % as differences.
func Drift(cycles []CycleFigures, l DriftLimits) []DriftRule {
	rules := []DriftRule{
		{Name: "heap_live_drift", Title: "Live heap after GC", Unit: "bytes", Limit: l.HeapLiveRatio, judgedByRatio: true,
			valueOfFigures: func(c CycleFigures) float64 { return c.HeapLiveBytes },
			Definition:     fmt.Sprintf("live heap after each cycle's settle and forced GCs, at cycle N ≤ %g × the mean of the first %d cycles", l.HeapLiveRatio, l.BaselineCycles)},
		{Name: "rss_drift", Title: "Resident memory", Unit: "bytes", Limit: l.RSSRatio, judgedByRatio: true,
			valueOfFigures: func(c CycleFigures) float64 { return c.RSSBytes },
			Definition:     fmt.Sprintf("largest RSS of each cycle, at cycle N ≤ %g × the baseline", l.RSSRatio)},
		{Name: "goroutine_drift", Title: "Goroutines", Unit: "goroutines", Limit: l.GoroutinesIncrease,
			valueOfFigures: func(c CycleFigures) float64 { return c.Goroutines },
			Definition:     fmt.Sprintf("goroutines after each cycle settled, at cycle N ≤ baseline + %g", l.GoroutinesIncrease)},
		{Name: "gc_percent_drift", Title: "GC % time (GraphQL)", Unit: "%", Limit: l.GCPercentIncreasePoints,
			valueOfFigures: func(c CycleFigures) float64 { return c.GCPercent },
			Definition:     fmt.Sprintf("GraphQL arm's GC %% time, at cycle N ≤ baseline + %g points", l.GCPercentIncreasePoints)},
		{Name: "cpu_per_request_drift", Title: "CPU per request (GraphQL)", Unit: "µs", Limit: l.CPUPerRequestRatio, judgedByRatio: true,
			valueOfFigures: func(c CycleFigures) float64 { return c.CPUMicrosPerRequest },
			Definition:     fmt.Sprintf("GraphQL arm's CPU µs per request, at cycle N ≤ %g × the baseline", l.CPUPerRequestRatio)},
	}
	for i := range rules {
		judgeDrift(&rules[i], cycles, l.BaselineCycles)
	}
	return rules
}

func judgeDrift(r *DriftRule, cycles []CycleFigures, k int) {
	k = max(k, 1)
	r.Outcome = OutcomeNotMeasured
	defer func() { r.Pass = r.Outcome == OutcomePass }()
	if len(cycles) <= k {
		r.Detail = fmt.Sprintf("not measured: %d cycles, and drift is judged from cycle %d on (soak.drift.baseline_cycles %d + 1)", len(cycles), k+1, k)
		return
	}
	var sum float64
	for _, c := range cycles[:k] {
		sum += r.valueOfFigures(c)
	}
	r.Baseline = sum / float64(k)
	r.Measured = math.Inf(-1)
	for _, c := range cycles[k:] {
		v := r.valueOfFigures(c)
		m := v - r.Baseline
		if r.judgedByRatio {
			if r.Baseline <= 0 {
				continue // no ratio from a zero baseline; the detail says so below
			}
			m = v / r.Baseline
		}
		if m > r.Measured {
			r.Measured, r.Worst, r.WorstCycle = m, v, c.Cycle
		}
	}
	if math.IsInf(r.Measured, -1) {
		r.Measured = 0
		r.Detail = "not measured: the baseline is 0, so no ratio can be formed"
		return
	}
	r.Outcome = OutcomeFail
	if r.Measured <= r.Limit {
		r.Outcome = OutcomePass
	}
	xs, ys := make([]float64, len(cycles)), make([]float64, len(cycles))
	for i, c := range cycles {
		xs[i], ys[i] = float64(c.Cycle), r.valueOfFigures(c)
	}
	if slope, se, ok := LinearFit(xs, ys); ok {
		r.SlopePerCycle, r.SlopeStdErr = slope, se
	}
	r.Detail = fmt.Sprintf("baseline %.4g %s; worst cycle %d at %.4g %s; trend %+.4g ± %.4g %s per cycle over %d cycles",
		r.Baseline, r.Unit, r.WorstCycle, r.Worst, r.Unit, r.SlopePerCycle, r.SlopeStdErr, r.Unit, len(cycles))
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
