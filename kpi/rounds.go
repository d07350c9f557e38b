package kpi

import (
	"fmt"
	"slices"
)

// Gate rules: how interleaved rounds become one verdict.
const (
	// GateMedian judges each KPI by its median delta across rounds.
	GateMedian = "median"
	// GateWorst judges each KPI by its worst round: every round must pass.
	GateWorst = "worst"
)

// Aggregate combines the KPI rows of several interleaved rounds (each the
// output of Evaluate, same rows in the same order) into one row per metric:
// REST, GraphQL and Delta become medians across rounds, DeltaMin and DeltaMax
// give the spread, and Pass follows the gate rule. One round is returned as
// is. A round without a delta (nil) makes the median undefined and, for a
// gated row, fails it: missing data never passes.
func Aggregate(rounds [][]Result, gate string) ([]Result, error) {
	if len(rounds) == 0 {
		return nil, fmt.Errorf("no rounds to aggregate")
	}
	if gate != GateMedian && gate != GateWorst {
		return nil, fmt.Errorf("unknown gate rule %q (want %s or %s)", gate, GateMedian, GateWorst)
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
		out[i] = aggregateRow(rows, gate)
	}
	return out, nil
}

func aggregateRow(rows []Result, gate string) Result {
	r := rows[0]
	r.Rounds = len(rows)
	var rest, gql, deltas []float64
	missing := false
	for _, x := range rows {
		rest = append(rest, x.REST)
		gql = append(gql, x.GraphQL)
		if x.Delta == nil {
			missing = true
			continue
		}
		deltas = append(deltas, *x.Delta)
	}
	r.REST, r.GraphQL = median(rest), median(gql)
	r.Delta, r.DeltaMin, r.DeltaMax = nil, nil, nil
	if !missing {
		r.Delta = ptr(median(deltas))
		r.DeltaMin, r.DeltaMax = ptr(slices.Min(deltas)), ptr(slices.Max(deltas))
	}
	r.Gate = gate
	if !r.Gated {
		r.Pass = true
		return r
	}
	switch {
	case missing:
		r.Pass = false
	case gate == GateWorst:
		r.Pass = !slices.ContainsFunc(rows, func(x Result) bool { return !x.Pass })
	default:
		r.Pass = withinLimit(r, *r.Delta)
	}
	return r
}

// withinLimit applies a gated row's rule to delta d.
func withinLimit(r Result, d float64) bool {
	if r.Name == "throughput_rps" {
		return d >= *r.Threshold
	}
	return d <= *r.Threshold
}

// median of a non-empty slice (mean of the middle two for even lengths).
func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
