package kpi

import (
	"strings"
	"testing"
)

func TestGraphQLOnly(t *testing.T) {
	l := Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10}
	rows, err := GraphQLOnly([]Figures{
		{CPUMachinePercent: 20, GCPercent: 2, ThroughputRPS: 1000, NotMeasured: map[string]string{"alloc_bytes_per_request": "no allocation counter"}},
		{CPUMachinePercent: 30, GCPercent: 4, ThroughputRPS: 1200, NotMeasured: map[string]string{"gc_percent": "no GC cycle", "alloc_bytes_per_request": "no allocation counter"}},
	}, l)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Result{}
	for _, r := range rows {
		by[r.Name] = r
		if r.Gated || r.Pass || r.Outcome != OutcomeNotMeasured || !r.NoControl || r.Delta != nil || r.Threshold != nil || r.REST != 0 {
			t.Errorf("%s: %+v, want an ungated, not measured row without REST, delta or limit", r.Name, r)
		}
		if !strings.HasPrefix(r.Reason, "no control group") || r.Rounds != 2 {
			t.Errorf("%s: reason %q, rounds %d", r.Name, r.Reason, r.Rounds)
		}
	}
	if len(rows) != len(Evaluate(Figures{}, Figures{}, l)) {
		t.Errorf("got %d rows, want Evaluate's", len(rows))
	}
	f := func(name string, want float64, reason string) {
		t.Helper()
		r := by[name]
		if r.GraphQL != want {
			t.Errorf("%s: GraphQL %v, want %v (the mean of the rounds that measured it)", name, r.GraphQL, want)
		}
		if !strings.Contains(r.Reason, reason) {
			t.Errorf("%s: reason %q, want it to contain %q", name, r.Reason, reason)
		}
	}
	f("cpu_machine_percent", 25, NoControlGroup)
	f("throughput_rps", 1100, NoControlGroup)
	f("gc_percent", 2, "GraphQL not measured in round 2: no GC cycle")
	f("alloc_bytes_per_request", 0, "no allocation counter")
	if v := Verdict(rows); v != OutcomeInconclusive {
		t.Errorf("Verdict of rows alone: %s; no gated row is no evidence, so inconclusive", v)
	}
	if _, err := GraphQLOnly(nil, l); err == nil {
		t.Error("no rounds: want an error")
	}
}
