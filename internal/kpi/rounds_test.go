package kpi

import (
	"fmt"
	"strings"
	"testing"
)

func TestAggregateRounds(t *testing.T) {
	l := Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10}
	round := func(restCPU, gqlCPU, restRPS, gqlRPS float64) []Result {
		return Evaluate(Figures{CPUMachinePercent: restCPU, GCPercent: 1, ThroughputRPS: restRPS}, Figures{CPUMachinePercent: gqlCPU, GCPercent: 1, ThroughputRPS: gqlRPS}, l)
	}
	f := func(rounds [][]Result, name string, want Outcome) Result {
		t.Helper()
		rs, err := Aggregate(rounds, DefaultConfidence)
		if err != nil {
			t.Fatal(err)
		}
		r := find(t, rs, name)
		if r.Outcome != want || r.Pass != (want == OutcomePass) || r.Gate != GateInterval || r.Rounds != len(rounds) {
			t.Errorf("%s: outcome %s pass %v gate %q rounds %d, want %s (interval %+v, reason %q)", name, r.Outcome, r.Pass, r.Gate, r.Rounds, want, r.Interval, r.Reason)
		}
		return r
	}
	// Deltas +2, +7, +3, +2 points: mean 3.5, one noisy round over the
	// limit; the interval straddles +5 → inconclusive, with advice.
	r := f([][]Result{round(10, 12, 100, 100), round(10, 17, 100, 100), round(11, 14, 100, 100), round(10, 12, 100, 100)}, "cpu_machine_percent", OutcomeInconclusive)
	if *r.Delta != 3.5 || *r.DeltaMin != 2 || *r.DeltaMax != 7 || r.REST != 10.25 || !strings.Contains(r.Reason, "rounds in all") {
		t.Errorf("mean/spread/reason wrong: %+v reason %q", r, r.Reason)
	}
	// The advice as a number, for the command that would settle it: the
	// same as the reason's, more rounds than were run.
	if want := RoundsToSettle(*r.Interval, 5); r.SettleRounds != want || want <= 4 || !strings.Contains(r.Reason, fmt.Sprintf("about %d rounds in all", want)) {
		t.Errorf("settle_rounds %d, want %d as the reason says: %q", r.SettleRounds, want, r.Reason)
	}
	// Steady +1 ± 0.5: pass.
	f([][]Result{round(10, 11, 100, 100), round(10, 11.5, 100, 100), round(10, 10.5, 100, 100), round(10, 11, 100, 100)}, "cpu_machine_percent", OutcomePass)
	// +12 ± 2: fail.
	f([][]Result{round(10, 22, 100, 100), round(10, 24, 100, 100), round(10, 20, 100, 100), round(10, 23, 100, 100)}, "cpu_machine_percent", OutcomeFail)
	// One round: inconclusive however large.
	r = f([][]Result{round(10, 40, 100, 100)}, "cpu_machine_percent", OutcomeInconclusive)
	if !strings.Contains(r.Reason, "one round") || r.SettleRounds != 0 {
		t.Errorf("one round's reason: %q, settle_rounds %d (one round measures no spread)", r.Reason, r.SettleRounds)
	}
	// Throughput is a lower bound: −15 ± 1 % fails a −10 % limit.
	f([][]Result{round(10, 10, 100, 85), round(10, 10, 100, 84), round(10, 10, 100, 86), round(10, 10, 100, 85)}, "throughput_rps", OutcomeFail)
}

func TestAggregateFloorAndNotMeasured(t *testing.T) {
	fifty := 50.0
	l := Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10, GCPauseP99IncreasePercent: &fifty, GCPauseP99FloorMs: 1}
	pause := func(rest, gql float64) []Result {
		return Evaluate(Figures{ThroughputRPS: 100, GCPauseP99Ms: rest}, Figures{ThroughputRPS: 100, GCPauseP99Ms: gql}, l)
	}
	// 0.4 ms → 0.6 ms is +50 % (on the limit) but 0.2 ms, under the 1 ms
	// floor: the effective limit is 1 ÷ 0.4 = +250 %.
	rs, err := Aggregate([][]Result{pause(0.4, 0.6), pause(0.4, 0.62), pause(0.4, 0.58), pause(0.4, 0.6)}, DefaultConfidence)
	if err != nil {
		t.Fatal(err)
	}
	if r := find(t, rs, "gc_pause_p99_ms"); r.Outcome != OutcomePass || r.EffectiveThreshold == nil || *r.EffectiveThreshold != 250 {
		t.Errorf("floor: %+v", r)
	}
	// A round where GraphQL's GC % was not measured: the row is not
	// measured, with the round and the reason.
	nm := Evaluate(Figures{ThroughputRPS: 100, GCPercent: 1}, Figures{ThroughputRPS: 100, NotMeasured: map[string]string{"gc_percent": "no GC cycle ended in the window"}}, l)
	ok := Evaluate(Figures{ThroughputRPS: 100, GCPercent: 1}, Figures{ThroughputRPS: 100, GCPercent: 1}, l)
	rs, _ = Aggregate([][]Result{ok, nm, ok}, DefaultConfidence)
	if r := find(t, rs, "gc_percent"); r.Outcome != OutcomeNotMeasured || r.Pass || !strings.Contains(r.Reason, "round 2 of 3: GraphQL: no GC cycle") {
		t.Errorf("not measured: %+v", r)
	}
	if Verdict(rs) != OutcomeInconclusive {
		t.Errorf("a gated row not measured makes the verdict inconclusive, got %s", Verdict(rs))
	}
	// GraphQL's GC % was measured in rounds 1 and 3: its mean is theirs;
	// in no round at all, it is not measured, never 0 (REST stays measured).
	if r := find(t, rs, "gc_percent"); r.GraphQLNotMeasured || r.RESTNotMeasured || r.GraphQL != 1 {
		t.Errorf("an arm measured in some rounds: %+v", r)
	}
	rs, _ = Aggregate([][]Result{nm, nm}, DefaultConfidence)
	if r := find(t, rs, "gc_percent"); !r.GraphQLNotMeasured || r.RESTNotMeasured || r.REST != 1 {
		t.Errorf("an arm measured in no round must be not measured, the other kept: %+v", r)
	}
	// Measured in no round: the reason says so, and names no one round
	// (it read "round 2: …", as if round 1 had measured it).
	if r := find(t, rs, "gc_percent"); r.Reason != "not measured in any of the 2 rounds: GraphQL: no GC cycle ended in the window" {
		t.Errorf("a row measured in no round: reason %q", r.Reason)
	}
	rs, _ = Aggregate([][]Result{ok, nm, nm, ok}, DefaultConfidence)
	if r := find(t, rs, "gc_percent"); !strings.HasPrefix(r.Reason, "rounds 2 and 3 of 4: GraphQL: no GC cycle") {
		t.Errorf("a row missing in two of four rounds: reason %q", r.Reason)
	}
	if r := find(t, rs, "alloc_bytes_per_request"); !r.Pass || r.Outcome != "" {
		t.Errorf("informational rows have no outcome")
	}
	if _, err := Aggregate(nil, DefaultConfidence); err == nil {
		t.Errorf("no rounds must be an error")
	}
	if _, err := Aggregate([][]Result{ok}, 1.5); err == nil {
		t.Errorf("a confidence outside (0, 1) must be an error")
	}
	if _, err := Aggregate([][]Result{ok, ok[:2]}, DefaultConfidence); err == nil {
		t.Errorf("mismatched rounds must be an error")
	}
}
