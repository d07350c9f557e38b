package run

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"strings"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/target"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
)

// roundPhases pairs each round's REST-arm and GraphQL-arm phase results.
func roundPhases(ps []report.Phase, plans []planned) (rest, gql map[int]report.Phase) {
	rest, gql = map[int]report.Phase{}, map[int]report.Phase{}
	byName := map[string]report.Phase{}
	for _, p := range ps {
		byName[p.Name] = p
	}
	for _, pl := range plans {
		p, ok := byName[pl.spec.Name]
		if !ok {
			continue
		}
		switch pl.role {
		case roleRESTArm:
			rest[pl.round] = p
		case roleGQLArm:
			gql[pl.round] = p
		}
	}
	return rest, gql
}

// evaluateKPIs compares the arms round by round and judges each KPI by the
// confidence interval of its per-round deltas (kpi.Aggregate). One round
// gives inconclusive gated rows: one sample cannot measure its own noise.
func evaluateKPIs(rest, gql map[int]report.Phase, rounds int, confidence float64, l kpi.Limits) (kpis []kpi.Result, rs []report.Round, err error) {
	var all [][]kpi.Result
	for r := 1; r <= rounds; r++ {
		a, okA := rest[r]
		b, okB := gql[r]
		if !okA || !okB {
			return nil, nil, fmt.Errorf("round %d did not run both arms", r)
		}
		k := kpi.Evaluate(a.Figures(), b.Figures(), l)
		all = append(all, k)
		rs = append(rs, report.Round{Round: r, REST: a.Name, GraphQL: b.Name, KPIs: k, Verdict: kpi.Verdict(k)})
	}
	kpis, err = kpi.Aggregate(all, confidence)
	return kpis, rs, err
}

// graphqlOnlyKPIs gives the KPI rows of a run without a control group
// (kpi.GraphQLOnly): GraphQL's figures over its rounds, nothing compared,
// and no per-round rows (each would compare nothing too).
func graphqlOnlyKPIs(gql map[int]report.Phase, l kpi.Limits) ([]kpi.Result, []report.Round, error) {
	figs := make([]kpi.Figures, 0, len(gql))
	for r := 1; r <= len(gql); r++ {
		p, ok := gql[r]
		if !ok {
			return nil, nil, fmt.Errorf("round %d did not run the GraphQL arm", r)
		}
		figs = append(figs, p.Figures())
	}
	kpis, err := kpi.GraphQLOnly(figs, l)
	return kpis, nil, err
}

// checkOutcome is a check's outcome: its own when set, else from Pass.
func checkOutcome(c report.Check) kpi.Outcome {
	switch {
	case c.Outcome != "":
		return c.Outcome
	case c.Pass:
		return kpi.OutcomePass
	}
	return kpi.OutcomeFail
}

// verdict rolls the gated KPI rows and the checks up into the run's
// verdict (kpi.Combine): fail if anything failed, inconclusive if anything
// was inconclusive or not measured, pass otherwise.
func verdict(kpis []kpi.Result, cs []report.Check) kpi.Outcome {
	os := []kpi.Outcome{kpi.Outcome(kpi.Verdict(kpis))}
	for _, c := range cs {
		os = append(os, checkOutcome(c))
	}
	return kpi.Combine(os...)
}

// checks are the verdict's rules beyond the KPI rows: compared phases
// without failed requests and with resource figures, exact subscription
// delivery, and every phase back to rest.
func checks(ps []report.Phase, compared map[string]bool) []report.Check {
	var cs []report.Check
	for _, p := range ps {
		if compared[p.Name] {
			cs = append(cs, report.Check{
				Group: "errors", Name: "no_failed_requests", Title: "No failed requests", Phase: p.Name, Unit: "requests",
				Value: float64(p.Errors), Limit: 0, Pass: p.Errors == 0,
				Detail:     fmt.Sprintf("%d of %d requests failed", p.Errors, p.Requests),
				Definition: "every response had HTTP 200, the expected payload and no GraphQL errors",
			}, report.Check{
				Group: "errors", Name: "resources_measured", Title: "Resource figures measured", Phase: p.Name, Unit: "",
				Value: b2f(p.Resources != nil), Limit: 1, Pass: p.Resources != nil, Outcome: measuredOutcome(p.Resources != nil), Detail: p.ResourcesError,
				Definition: fmt.Sprintf("the phase had a steady window holding at least %d samples of the target", config.MinSteadySamples),
			})
		}
		if sr := p.Subscriptions; sr != nil {
			bad := sr.Lost + sr.Duplicated + sr.Foreign
			cs = append(cs, report.Check{
				Group: "delivery", Name: "exact_delivery", Title: "Subscription events delivered exactly once", Phase: p.Name, Unit: "events",
				Value: float64(bad), Limit: 0, Pass: bad == 0,
				Detail:     fmt.Sprintf("%d expected, %d received, %d lost, %d duplicated, %d misrouted", sr.Expected, sr.Received, sr.Lost, sr.Duplicated, sr.Foreign),
				Definition: "each subscription receives each successful mutation of its id once: lost, duplicated and misrouted events must all be 0",
			})
		}
		if a := p.After; a != nil {
			// word is what the count counts: goroutines, or a runtime's
			// analogue (Node's active handles).
			word, title := "goroutines", "Connections, subscriptions and goroutines released"
			if a.GoroutineAnalogue != "" {
				word, title = a.GoroutineAnalogue, "Connections, subscriptions and "+a.GoroutineAnalogue+" released"
			}
			c := report.Check{
				Group: "rest", Name: "released", Title: title, Phase: p.Name, Unit: word,
				Value: float64(int64(a.Goroutines) - int64(a.BaselineGoroutines)), Limit: kpi.GoroutineSlack, Pass: a.Returned,
				Detail:     fmt.Sprintf("%s %d → %d, %d subscriptions still open after %.1fs", word, a.BaselineGoroutines, a.Goroutines, a.Subscribers, a.SettleSeconds),
				Definition: fmt.Sprintf("after the settle period and forced GCs: no subscription open and %s within %d of the pre-phase baseline", word, kpi.GoroutineSlack),
			}
			if why, ok := a.NotMeasured["goroutines"]; ok {
				c.Value, c.Pass, c.Outcome = 0, false, kpi.OutcomeNotMeasured
				c.Detail = "not measured: " + why
			} else if why, ok := a.NotMeasured["subscribers"]; ok {
				c.Detail = fmt.Sprintf("%s %d → %d after %.1fs; open subscriptions not measured: %s", word, a.BaselineGoroutines, a.Goroutines, a.SettleSeconds, why)
			}
			if a.NoForcedGC {
				c.Definition = fmt.Sprintf("after the settle period (no GC can be forced in this target): %s within %d of the pre-phase baseline, read from the target's metrics endpoint", word, kpi.GoroutineSlack)
			}
			cs = append(cs, c)
		}
	}
	return cs
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// memoryChecks judges the memory-profile phase p from what the target
// measured over its steady window (d): steady allocation, no survivor
// growth and the return to the pre-phase state. The live-heap points are
// timed from the window's start (the first sample when p has none), where
// memory.warmup starts. Each check carries its rule's outcome; a rule whose
// figure was not measured (by the target, or after the phase) says why.
func memoryChecks(p report.Phase, d target.MemoryData, m config.MemoryConfig) []report.Check {
	in := kpi.MemoryInput{}
	for _, pt := range profiles.AllocRates(d.Alloc, m.AllocWindow) {
		in.AllocRates = append(in.AllocRates, pt.V)
	}
	t0 := p.SteadyStart
	if t0.IsZero() {
		for _, ss := range [][]profiles.Sample{d.Alloc, d.Heap} {
			if len(ss) > 0 && (t0.IsZero() || ss[0].Time.Before(t0)) {
				t0 = ss[0].Time
			}
		}
	}
	for _, pt := range profiles.LiveHeapAfterGC(d.Heap) {
		in.LiveHeap = append(in.LiveHeap, kpi.Sample2D{X: pt.T.Sub(t0).Seconds(), Y: pt.V})
	}
	why := maps.Clone(d.NotMeasured)
	if why == nil {
		why = map[string]string{}
	}
	if a := p.After; a != nil {
		in.BaselineHeapLive, in.AfterHeapLive = a.BaselineHeapLiveBytes, a.HeapLiveBytes
		in.BaselineGoroutines, in.AfterGoroutines = a.BaselineGoroutines, a.Goroutines
		in.GoroutineAnalogue, in.NoForcedGC = a.GoroutineAnalogue, a.NoForcedGC
		if r, ok := a.NotMeasured["heap_live_bytes"]; ok {
			why[kpi.RuleHeapReturned], in.BaselineHeapLive, in.AfterHeapLive = r, 0, 0
		}
		if r, ok := a.NotMeasured["goroutines"]; ok {
			why[kpi.RuleGoroutinesReturned], in.BaselineGoroutines, in.AfterGoroutines = r, 0, 0
		}
	}
	cs := judgeMemory(p, in, m)
	for i := range cs {
		c := &cs[i]
		if r, ok := why[c.Name]; ok && c.Outcome == kpi.OutcomeNotMeasured {
			c.Detail = "not measured: " + r
		}
		if src, ok := d.Sources[c.Name]; ok {
			c.Definition += "; " + src
		}
	}
	return cs
}

// judgeMemory runs the memory verdict on in and turns its rules into checks
// of phase p.
func judgeMemory(p report.Phase, in kpi.MemoryInput, m config.MemoryConfig) []report.Check {
	rules := kpi.MemoryVerdict(in, kpi.MemoryLimits{
		AllocSpikeFactor:            m.AllocSpikeFactor,
		AllocWindow:                 m.AllocWindow,
		LiveHeapSlopeMaxBytesPerMin: m.LiveHeapSlopeMaxBytesPerMin,
		Warmup:                      m.Warmup,
		MinGCCycles:                 m.MinGCCycles,
		MinSpan:                     m.MinSpan,
		HeapReturnTolerancePercent:  m.HeapReturnTolerancePercent,
		HeapReturnToleranceBytes:    m.HeapReturnToleranceBytes,
		GoroutineReturnTolerance:    m.GoroutineReturnTolerance,
	})
	cs := make([]report.Check, 0, len(rules))
	for _, r := range rules {
		cs = append(cs, report.Check{Group: "memory", Name: r.Name, Title: r.Title, Phase: p.Name, Unit: r.Unit,
			Value: r.Value, Limit: r.Limit, Pass: r.Pass, Outcome: r.Outcome, Detail: r.Detail,
			Definition: r.Definition})
	}
	return cs
}

// measuredOutcome is pass when a figure was measured and not_measured
// otherwise: a missing figure keeps the gate shut without claiming a fail.
func measuredOutcome(ok bool) kpi.Outcome {
	if ok {
		return kpi.OutcomePass
	}
	return kpi.OutcomeNotMeasured
}

// absoluteChecks judge the compared GraphQL phase's own figures, by round
// (gql), against kpis.absolute (l): one check per limit set, its value the
// mean across rounds, pass when the interval of that mean (at confidence)
// is wholly within the limit, fail when wholly beyond, inconclusive
// otherwise; with one round the point value decides. A round that did not
// measure the figure makes the check not measured.
func absoluteChecks(gql map[int]report.Phase, l config.AbsoluteLimits, confidence float64) []report.Check {
	type rule struct {
		name, title, unit string
		limit             float64
		bound             kpi.Bound
		value             func(p report.Phase) (float64, string)
		def               string
	}
	rules := []rule{
		{"p99_latency_ms", "p99 latency", "ms", l.P99LatencyMs, kpi.AtMost, func(p report.Phase) (float64, string) {
			if p.Requests-p.Errors <= 0 {
				return 0, "no request succeeded"
			}
			return p.LatencyMs.P99, ""
		}, "the 99th percentile latency of the phase's successful requests (HDR histogram), mean over the rounds"},
		{"error_ratio", "Error ratio", "", l.ErrorRatio, kpi.AtMost, func(p report.Phase) (float64, string) {
			if p.Requests <= 0 {
				return 0, "no request completed"
			}
			return float64(p.Errors) / float64(p.Requests), ""
		}, "failed requests (HTTP status, payload, GraphQL errors, transport) ÷ requests, mean over the rounds"},
		{"cpu_us_per_request", "CPU per request", "µs", l.CPUMicrosPerRequest, kpi.AtMost, func(p report.Phase) (float64, string) {
			f := p.Figures()
			if why, ok := f.NotMeasured["cpu_us_per_request"]; ok {
				return 0, why
			}
			return f.CPUMicrosPerRequest, ""
		}, "the target's CPU seconds over the steady window ÷ the requests completed in it, in µs, mean over the rounds"},
		{"throughput_rps", "Throughput", "req/s", l.ThroughputRPS, kpi.AtLeast, func(p report.Phase) (float64, string) {
			f := p.Figures()
			if why, ok := f.NotMeasured["throughput_rps"]; ok {
				return 0, why
			}
			return f.ThroughputRPS, ""
		}, "requests completed and validated per second in the steady window, mean over the rounds"},
	}
	var cs []report.Check
	for _, ru := range rules {
		if ru.limit <= 0 {
			continue
		}
		c := report.Check{Group: "absolute", Name: ru.name, Title: ru.title, Unit: ru.unit, Limit: ru.limit, Definition: ru.def}
		var xs []float64
		var why string
		for r := 1; r <= len(gql); r++ {
			p, ok := gql[r]
			if !ok {
				continue
			}
			c.Phase = strings.TrimSuffix(p.Name, fmt.Sprintf("#%d", r))
			v, w := ru.value(p)
			if w != "" {
				why = fmt.Sprintf("round %d: %s", r, w)
				break
			}
			xs = append(xs, v)
		}
		rel := "at most"
		if ru.bound == kpi.AtLeast {
			rel = "at least"
		}
		switch {
		case why != "" || len(xs) == 0:
			c.Outcome = kpi.OutcomeNotMeasured
			c.Detail = "not measured: " + cmp.Or(why, "no round of the GraphQL phase")
		case len(xs) == 1:
			c.Value = xs[0]
			c.Pass = (ru.bound == kpi.AtMost && c.Value <= ru.limit) || (ru.bound == kpi.AtLeast && c.Value >= ru.limit)
			c.Outcome = kpi.OutcomeFail
			if c.Pass {
				c.Outcome = kpi.OutcomePass
			}
			c.Detail = fmt.Sprintf("%s in one round (no interval), limit %s %s", absFigure(c.Value, ru.unit), rel, absFigure(ru.limit, ru.unit))
		default:
			iv := kpi.MeanInterval(xs, confidence)
			c.Value = iv.Center
			c.Outcome = kpi.Decide(iv, ru.limit, ru.bound)
			c.Pass = c.Outcome == kpi.OutcomePass
			c.Detail = fmt.Sprintf("%s [%s, %s] over %d rounds (%.0f %%), limit %s %s", absFigure(iv.Center, ru.unit), absFigure(iv.Lo, ru.unit), absFigure(iv.Hi, ru.unit),
				len(xs), confidence*100, rel, absFigure(ru.limit, ru.unit))
		}
		cs = append(cs, c)
	}
	return cs
}

// absFigure writes an absolute check's figure in its unit.
func absFigure(v float64, unit string) string {
	switch unit {
	case "":
		return fmt.Sprintf("%.4g %%", v*100)
	case "req/s":
		return fmt.Sprintf("%.0f req/s", v)
	}
	if math.Abs(v) >= 1000 {
		return fmt.Sprintf("%.0f %s", v, unit)
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}
