package kpi

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// GateInterval is the only gate rule: each gated KPI is judged by the
// confidence interval of its per-round deltas (see Decide). The former
// "median" and "worst" rules judged one number and failed unchanged builds.
const GateInterval = "interval"

// Aggregate combines the KPI rows of interleaved rounds (each the output of
// Evaluate, same rows in the same order) into one row per metric. Each round
// is one sample: REST, GraphQL and Delta become means across rounds,
// DeltaMin and DeltaMax the spread, Interval the Student t interval of the
// mean delta at confidence, and a gated row's Outcome follows Decide against
// its threshold (raised by its floor where one applies). One round gives an
// infinite interval, so its gated rows are inconclusive: a single round
// cannot tell a difference from noise. A round where a gated figure was not
// measured makes the row not measured: missing data never passes.
func Aggregate(rounds [][]Result, confidence float64) ([]Result, error) {
	if len(rounds) == 0 {
		return nil, fmt.Errorf("no rounds to aggregate")
	}
	if !(confidence > 0 && confidence < 1) {
		return nil, fmt.Errorf("confidence must be between 0 and 1 (got %v)", confidence)
	}
	out := make([]Result, len(rounds[0]))
	for i := range rounds[0] {
		rows := make([]Result, len(rounds))
		for j, rs := range rounds {
			if len(rs) != len(rounds[0]) || rs[i].Name != rounds[0][i].Name {
				return nil, fmt.Errorf("round %d has different KPI rows from round 1", j+1)
			}
			rows[j] = rs[i]
		}
		out[i] = aggregateRow(rows, confidence)
	}
	return out, nil
}

func aggregateRow(rows []Result, confidence float64) Result {
	r := rows[0]
	r.Rounds, r.Gate = len(rows), GateInterval
	r.Delta, r.DeltaMin, r.DeltaMax, r.Interval, r.Reason, r.Outcome = nil, nil, nil, nil, "", ""
	var rest, gql, deltas []float64
	// missing lists the rounds without a change, by the reason each gave,
	// so that the row's reason names every such round (or says none
	// measured it), not only the last.
	var missing []string
	byWhy := map[string][]int{}
	for k, x := range rows {
		// Each arm's mean is over the rounds that measured that arm.
		if !x.RESTNotMeasured {
			rest = append(rest, x.REST)
		}
		if !x.GraphQLNotMeasured {
			gql = append(gql, x.GraphQL)
		}
		if x.Delta == nil {
			why := x.Reason
			if why == "" {
				why = "no finite change from a REST value of 0"
			}
			if _, seen := byWhy[why]; !seen {
				missing = append(missing, why)
			}
			byWhy[why] = append(byWhy[why], k+1)
			continue
		}
		deltas = append(deltas, *x.Delta)
	}
	// Means over the rounds that measured the figure: a round that did not
	// would pull the mean towards 0. An arm no round measured is not
	// measured, not 0.
	r.Reason = roundsReason(missing, byWhy, len(rows))
	r.REST, r.GraphQL = 0, 0
	r.RESTNotMeasured, r.GraphQLNotMeasured = len(rest) == 0, len(gql) == 0
	if len(rest) > 0 {
		r.REST = mean(rest)
	}
	if len(gql) > 0 {
		r.GraphQL = mean(gql)
	}
	if r.Reason != "" {
		r.Pass = false
		if r.Gated {
			r.Outcome = OutcomeNotMeasured
		}
		return r
	}
	iv := MeanInterval(deltas, confidence)
	r.Interval = &iv
	// Delta is the change between the means shown beside it, so that the
	// three figures agree (a mean of per-round percentages can have the
	// other sign when one round is noisy); the gate judges Interval, the
	// paired per-round changes, whose centre Interval.Center keeps.
	r.Delta = ptr(iv.Center)
	if r.DeltaUnit == "percent" && !r.RESTNotMeasured && !r.GraphQLNotMeasured {
		if d := relative(r.REST, r.GraphQL); d != nil {
			r.Delta = d
		}
	}
	r.DeltaMin, r.DeltaMax = ptr(slices.Min(deltas)), ptr(slices.Max(deltas))
	if md := MinDetectable(iv); md > 0 {
		r.MinDetectable = ptr(md)
	}
	if !r.Gated {
		r.Pass = !r.NotMeasured()
		return r
	}
	lim := *r.Threshold
	if r.Floor != nil && r.DeltaUnit == "percent" && r.REST > 0 {
		if f := *r.Floor / r.REST * 100; f > lim {
			lim = f
			r.EffectiveThreshold = ptr(f)
		}
	}
	b := AtMost
	if r.Name == "throughput_rps" {
		b = AtLeast
	}
	r.Outcome = Decide(iv, lim, b)
	r.Pass = r.Outcome == OutcomePass
	if r.Outcome == OutcomeInconclusive {
		if n := RoundsToSettle(iv, lim); n > iv.N && n <= maxRoundsAdvice {
			r.SettleRounds = n
		}
		r.Reason = fmt.Sprintf("the %.0f %% interval %s straddles the limit %s; %s",
			iv.Confidence*100, formatInterval(iv, r.DeltaUnit), formatLimit(lim, r.DeltaUnit), SettleAdvice(iv, lim))
	}
	return r
}

// roundsReason words why a row has no change in some of its n rounds:
// "not measured in any of the 4 rounds: why" when every round gave the
// same reason, else each reason with its rounds ("rounds 2 and 3 of 4:
// why"); empty when every round had a change.
func roundsReason(whys []string, rounds map[string][]int, n int) string {
	var parts []string
	for _, why := range whys {
		ks := rounds[why]
		switch {
		case len(ks) == n && n == 1:
			parts = append(parts, why)
		case len(ks) == n:
			parts = append(parts, fmt.Sprintf("not measured in any of the %d rounds: %s", n, why))
		case len(ks) == 1:
			parts = append(parts, fmt.Sprintf("round %d of %d: %s", ks[0], n, why))
		default:
			names := make([]string, len(ks))
			for i, k := range ks {
				names[i] = strconv.Itoa(k)
			}
			list := strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
			parts = append(parts, fmt.Sprintf("rounds %s of %d: %s", list, n, why))
		}
	}
	return strings.Join(parts, "; ")
}

// formatInterval writes an interval as "[lo, hi] unit".
func formatInterval(iv Interval, unit string) string {
	if !iv.Finite() {
		return fmt.Sprintf("[−∞, +∞] %s (%d round)", unit, iv.N)
	}
	return fmt.Sprintf("[%+.3g, %+.3g] %s", iv.Lo, iv.Hi, unit)
}

func formatLimit(l float64, unit string) string {
	if math.Abs(l) >= 100 || l == math.Trunc(l) {
		return fmt.Sprintf("%+.0f %s", l, unit)
	}
	return fmt.Sprintf("%+.3g %s", l, unit)
}
