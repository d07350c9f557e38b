package kpi

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestNotMeasuredRowsCarryNoFigureAndNoPass: a row whose arms were not
// measured (a Node target's heap allocated per request, GC pause p99)
// is written with null values and without "pass"; before, it read
// "pass": true beside rest 0 and graphql 0.
func TestNotMeasuredRowsCarryNoFigureAndNoPass(t *testing.T) {
	why := map[string]string{"alloc_bytes_per_request": "no heap allocation counter", "gc_pause_p99_ms": "no pause histogram"}
	rows := Evaluate(Figures{ThroughputRPS: 100, NotMeasured: why}, Figures{ThroughputRPS: 90, NotMeasured: why}, Limits{ThroughputDecreasePercent: 20})
	agg, err := Aggregate([][]Result{rows, rows}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	only, err := GraphQLOnly([]Figures{{ThroughputRPS: 90, NotMeasured: why}}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for set, rs := range map[string][]Result{"evaluate": rows, "aggregate": agg, "graphql only": only} {
		for _, r := range rs {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			_, hasPass := m["pass"]
			if _, nm := why[r.Name]; nm || r.NoControl {
				if hasPass || r.Pass {
					t.Errorf("%s %s not measured: pass written (%s)", set, r.Name, b)
				}
				if m["graphql"] != nil && why[r.Name] != "" {
					t.Errorf("%s %s: graphql %v, want null", set, r.Name, m["graphql"])
				}
				if m["rest"] != nil {
					t.Errorf("%s %s: rest %v, want null", set, r.Name, m["rest"])
				}
				continue
			}
			if !hasPass || m["rest"] == nil || m["graphql"] == nil {
				t.Errorf("%s %s measured: want rest, graphql and pass written: %s", set, r.Name, b)
			}
			var back Result
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.REST != r.REST || back.GraphQL != r.GraphQL || back.Pass != r.Pass || !strings.EqualFold(string(back.Outcome), string(r.Outcome)) {
				t.Errorf("%s %s: round trip %+v, want %+v", set, r.Name, back, r)
			}
		}
	}
}

// TestGraphQLOnlyNoRoundMeasured: a figure no round measured is flagged
// not measured and its reason says so, rather than naming the last round
// and leaving a mean of nothing (0) to be printed as "0 B".
func TestGraphQLOnlyNoRoundMeasured(t *testing.T) {
	why := map[string]string{"alloc_bytes_per_request": "no heap allocation counter"}
	rs, err := GraphQLOnly([]Figures{{NotMeasured: why}, {NotMeasured: why}, {AllocBytesPerRequest: 0, NotMeasured: nil}}[:2], Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Name != "alloc_bytes_per_request" {
			continue
		}
		if !r.GraphQLNotMeasured || !strings.Contains(r.Reason, "in any round") || strings.Contains(r.Reason, "round 2") {
			t.Errorf("flag %v, reason %q", r.GraphQLNotMeasured, r.Reason)
		}
	}
}

// TestVarianceAgreesWithTheMeans: three rounds of throughput, one noisy
// and the other way: the mean of per-round percentages is +1.5 % while
// the means read 1760 and 1657 req/s. The row's variance is the change
// between the means (−5.9 %); the interval stays the per-round one.
func TestVarianceAgreesWithTheMeans(t *testing.T) {
	l := Limits{ThroughputDecreasePercent: 50}
	var rounds [][]Result
	for _, p := range [][2]float64{{1000, 1100}, {1000, 1100}, {3280, 2771}} {
		rounds = append(rounds, Evaluate(Figures{ThroughputRPS: p[0]}, Figures{ThroughputRPS: p[1]}, l))
	}
	agg, err := Aggregate(rounds, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range agg {
		if r.Name != "throughput_rps" {
			continue
		}
		want := (r.GraphQL - r.REST) / r.REST * 100
		if r.Delta == nil || *r.Delta != want || want > 0 {
			t.Errorf("delta %v beside means %.0f and %.0f, want %.2f", r.Delta, r.REST, r.GraphQL, want)
		}
		if r.Interval == nil || r.Interval.Center <= 0 {
			t.Errorf("the per-round interval %+v should keep its own centre (the fixture's mean of percentages is positive)", r.Interval)
		}
	}
}
