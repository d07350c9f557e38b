package kpi

import "testing"

func TestAggregateRounds(t *testing.T) {
	l := Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10}
	// Three rounds: CPU deltas +2, +7, +3 points (one noisy round over the limit).
	rounds := [][]Result{
		Evaluate(Figures{CPUMachinePercent: 10, ThroughputRPS: 100}, Figures{CPUMachinePercent: 12, ThroughputRPS: 100}, l),
		Evaluate(Figures{CPUMachinePercent: 10, ThroughputRPS: 100}, Figures{CPUMachinePercent: 17, ThroughputRPS: 100}, l),
		Evaluate(Figures{CPUMachinePercent: 11, ThroughputRPS: 100}, Figures{CPUMachinePercent: 14, ThroughputRPS: 100}, l),
	}
	f := func(gate string, wantPass bool) {
		t.Helper()
		rs, err := Aggregate(rounds, gate)
		if err != nil {
			t.Fatal(err)
		}
		cpu := find(t, rs, "cpu_machine_percent")
		if *cpu.Delta != 3 || *cpu.DeltaMin != 2 || *cpu.DeltaMax != 7 || cpu.Rounds != 3 || cpu.REST != 10 || cpu.GraphQL != 14 {
			t.Errorf("%s: median/spread wrong: delta %v [%v, %v] rest %v graphql %v rounds %d", gate, *cpu.Delta, *cpu.DeltaMin, *cpu.DeltaMax, cpu.REST, cpu.GraphQL, cpu.Rounds)
		}
		if cpu.Pass != wantPass || cpu.Gate != gate {
			t.Errorf("%s: pass %v gate %q, want %v", gate, cpu.Pass, cpu.Gate, wantPass)
		}
	}
	f(GateMedian, true)
	f(GateWorst, false)

	// Even number of rounds: the median is the mean of the middle two.
	rs, err := Aggregate(rounds[:2], GateMedian)
	if err != nil {
		t.Fatal(err)
	}
	if d := *find(t, rs, "cpu_machine_percent").Delta; d != 4.5 {
		t.Errorf("median of 2 and 7: got %v, want 4.5", d)
	}
	// Throughput: the decrease rule with the median.
	tr := [][]Result{
		Evaluate(Figures{ThroughputRPS: 100}, Figures{ThroughputRPS: 85}, l),
		Evaluate(Figures{ThroughputRPS: 100}, Figures{ThroughputRPS: 95}, l),
		Evaluate(Figures{ThroughputRPS: 100}, Figures{ThroughputRPS: 80}, l),
	}
	rs, _ = Aggregate(tr, GateMedian)
	if r := find(t, rs, "throughput_rps"); r.Pass || *r.Delta != -15 {
		t.Errorf("throughput median -15 %% must fail a 10 %% limit: %+v", r)
	}
}

func TestAggregateMissingAndErrors(t *testing.T) {
	fifty := 50.0
	l := Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10, GCPauseP99IncreasePercent: &fifty}
	rounds := [][]Result{
		Evaluate(Figures{ThroughputRPS: 100, GCPauseP99Ms: 1}, Figures{ThroughputRPS: 100, GCPauseP99Ms: 1}, l),
		Evaluate(Figures{ThroughputRPS: 100, GCPauseP99Ms: 0}, Figures{ThroughputRPS: 100, GCPauseP99Ms: 1}, l),
	}
	rs, err := Aggregate(rounds, GateMedian)
	if err != nil {
		t.Fatal(err)
	}
	if r := find(t, rs, "gc_pause_p99_ms"); r.Pass || r.Delta != nil {
		t.Errorf("a round without a delta must fail a gated row: %+v", r)
	}
	if r := find(t, rs, "alloc_bytes_per_request"); !r.Pass {
		t.Errorf("informational rows always pass")
	}
	if _, err := Aggregate(nil, GateMedian); err == nil {
		t.Errorf("no rounds must be an error")
	}
	if _, err := Aggregate(rounds, "mean"); err == nil {
		t.Errorf("an unknown gate must be an error")
	}
	if _, err := Aggregate([][]Result{rounds[0], rounds[1][:2]}, GateWorst); err == nil {
		t.Errorf("mismatched rounds must be an error")
	}
}
