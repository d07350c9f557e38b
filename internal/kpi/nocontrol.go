package kpi

import (
	"fmt"
	"strings"
)

// NoControlGroup is the reason every KPI row of a run without a REST arm
// carries: seed 002's KPIs are GraphQL's cost over its REST twin's, and a
// target without one gives nothing to compare with.
const NoControlGroup = "no control group: the profile compares no REST phase (compare.rest is empty), so GraphQL's cost has nothing to be measured against; " +
	"the verdict rests on the checks (errors, delivery, return to rest, memory)"

// GraphQLOnly gives the KPI rows of a run whose GraphQL arm ran alone, one
// Figures per round: the same rows as Aggregate over Evaluate, each with
// GraphQL's mean over the rounds that measured it and no REST value, no
// variance and no limit. Every row is not measured with NoControlGroup as
// its reason, flagged NoControl, and not gated: a comparison that cannot be
// made neither passes nor fails, and does not hold the verdict at
// inconclusive by itself. A GraphQL figure a round did not measure is
// named in the reason too.
func GraphQLOnly(gql []Figures, l Limits) ([]Result, error) {
	if len(gql) == 0 {
		return nil, fmt.Errorf("no rounds of the GraphQL arm to report")
	}
	rounds := make([][]Result, len(gql))
	for k, g := range gql {
		rounds[k] = Evaluate(Figures{}, g, l)
	}
	var out []Result
	for i, base := range rounds[0] {
		r := Result{
			Name: base.Name, Title: base.Title, Unit: base.Unit, DeltaUnit: base.DeltaUnit,
			Rule: "no control group", Outcome: OutcomeNotMeasured, Reason: NoControlGroup,
			Definition: base.Definition, Rounds: len(gql), NoControl: true,
		}
		var sum float64
		var n int
		var missing []string
		var why string
		for k, g := range gql {
			if w, ok := g.NotMeasured[r.Name]; ok {
				missing, why = append(missing, fmt.Sprint(k+1)), w
				continue
			}
			sum += rounds[k][i].GraphQL
			n++
		}
		switch {
		case n == 0:
			// No round measured it: absent and flagged, with the reason
			// (the last round's), not a mean of nothing read as 0.
			r.GraphQLNotMeasured = true
			r.Reason += "; GraphQL not measured in any round: " + why
		case len(missing) > 0:
			r.GraphQL = sum / float64(n)
			r.Reason += fmt.Sprintf("; GraphQL not measured in round %s: %s", strings.Join(missing, ", "), why)
		default:
			r.GraphQL = sum / float64(n)
		}
		out = append(out, r)
	}
	return out, nil
}
