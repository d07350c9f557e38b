package kpi

import (
	"math"
	"testing"
)

func TestNoiseSpread(t *testing.T) {
	l := Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10}
	round := func(restCPU, gqlCPU, restRPS, gqlRPS float64) []Result {
		return Evaluate(Figures{CPUMachinePercent: restCPU, GCPercent: 1, ThroughputRPS: restRPS}, Figures{CPUMachinePercent: gqlCPU, GCPercent: 1, ThroughputRPS: gqlRPS}, l)
	}
	f := func(rounds [][]Result, name string, wantOK bool, want Noise) {
		t.Helper()
		got, err := NoiseSpread(rounds)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := got[name]
		if ok != wantOK {
			t.Fatalf("%s: present %v, want %v (%v)", name, ok, wantOK, got)
		}
		if !ok {
			return
		}
		if n.DeltaUnit != want.DeltaUnit || n.Rounds != want.Rounds || math.Abs(n.SD-want.SD) > 1e-9 || math.Abs(n.MeanDelta-want.MeanDelta) > 1e-9 {
			t.Errorf("%s: got %+v, want %+v", name, n, want)
		}
	}
	// Deltas +1, −1, +1, −1 points: mean 0, sample sd √(4/3).
	rs := [][]Result{round(10, 11, 100, 100), round(10, 9, 100, 100), round(10, 11, 100, 100), round(10, 9, 100, 100)}
	f(rs, "cpu_machine_percent", true, Noise{DeltaUnit: "points", SD: math.Sqrt(4.0 / 3), Rounds: 4, MeanDelta: 0})
	// Throughput −2 %, +2 %: percent, mean 0, sd √8.
	f([][]Result{round(10, 10, 100, 98), round(10, 10, 100, 102)}, "throughput_rps", true, Noise{DeltaUnit: "percent", SD: math.Sqrt(8), Rounds: 2})
	// No variation: sd 0, still recorded.
	f(rs, "gc_percent", true, Noise{DeltaUnit: "points", SD: 0, Rounds: 4})
	// One round: no spread.
	f([][]Result{round(10, 11, 100, 100)}, "cpu_machine_percent", false, Noise{})
	// A round without the figure is skipped: two rounds left.
	miss := round(10, 12, 100, 100)
	miss[0].Delta = nil
	f([][]Result{round(10, 11, 100, 100), miss, round(10, 13, 100, 100)}, "cpu_machine_percent", true, Noise{DeltaUnit: "points", SD: math.Sqrt(2), Rounds: 2, MeanDelta: 2})
	// Three rounds, one measured: left out.
	f([][]Result{round(10, 11, 100, 100), miss, miss}, "cpu_machine_percent", false, Noise{})
	// No rounds: empty, no error.
	f(nil, "cpu_machine_percent", false, Noise{})
	// Different rows: an error.
	short := round(10, 11, 100, 100)[:2]
	if _, err := NoiseSpread([][]Result{round(10, 11, 100, 100), short}); err == nil {
		t.Error("rounds with different rows: no error")
	}
}

func TestMinDetectableSD(t *testing.T) {
	f := func(sd float64, n int, want float64) {
		t.Helper()
		if got := MinDetectableSD(sd, n, DefaultConfidence); math.Abs(got-want) > 1e-3 {
			t.Errorf("MinDetectableSD(%v, %d): got %.4f, want %.4f", sd, n, got, want)
		}
	}
	// n 4, df 3: t(0.975) 3.182, t(0.8) 0.978; (3.182 + 0.978) × 2 ÷ 2.
	f(2, 4, 4.1610)
	f(2, 1, 0)
	f(0, 4, 0)
	f(math.NaN(), 4, 0)
	// The same formula as MinDetectable on a measured interval.
	xs := []float64{1, -1, 2, 0.5, -0.3}
	iv := MeanInterval(xs, DefaultConfidence)
	if a, b := MinDetectable(iv), MinDetectableSD(stddev(xs), len(xs), DefaultConfidence); math.Abs(a-b) > 1e-12 {
		t.Errorf("MinDetectable %v != MinDetectableSD %v", a, b)
	}
	// Four times the rounds roughly halve it (and t shrinks too).
	if a, b := MinDetectableSD(1, 4, DefaultConfidence), MinDetectableSD(1, 16, DefaultConfidence); !(b < a/2) {
		t.Errorf("16 rounds %v not below half of 4 rounds %v", b, a)
	}
}

func TestWithNoise(t *testing.T) {
	l := Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10}
	round := func(gqlCPU float64) []Result {
		return Evaluate(Figures{CPUMachinePercent: 10, GCPercent: 1, ThroughputRPS: 100}, Figures{CPUMachinePercent: gqlCPU, GCPercent: 1, ThroughputRPS: 100}, l)
	}
	rows, err := Aggregate([][]Result{round(11), round(12), round(11.5)}, DefaultConfidence)
	if err != nil {
		t.Fatal(err)
	}
	floor := map[string]Noise{
		"cpu_machine_percent": {DeltaUnit: "points", SD: 2, Rounds: 4},
		"throughput_rps":      {DeltaUnit: "points", SD: 1, Rounds: 4}, // wrong unit: ignored
		"cpu_core_percent":    {DeltaUnit: "points", SD: 1, Rounds: 4}, // informational: ignored
	}
	f := func(got []Result, name string, wantSD, wantMD *float64) {
		t.Helper()
		r := find(t, got, name)
		eq := func(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || math.Abs(*a-*b) < 1e-9) }
		if !eq(r.NoiseSD, wantSD) || !eq(r.NoiseMinDetectable, wantMD) {
			t.Errorf("%s: noise_sd %v noise_min_detectable %v, want %v %v", name, deref(r.NoiseSD), deref(r.NoiseMinDetectable), deref(wantSD), deref(wantMD))
		}
	}
	got := WithNoise(rows, floor, 3, DefaultConfidence)
	f(got, "cpu_machine_percent", ptr(2), ptr(MinDetectableSD(2, 3, DefaultConfidence)))
	f(got, "throughput_rps", nil, nil)
	f(got, "cpu_core_percent", nil, nil)
	f(got, "gc_percent", nil, nil)
	f(rows, "cpu_machine_percent", nil, nil) // the input is not modified
	// One round: the spread is shown, nothing is detectable.
	f(WithNoise(rows, floor, 1, DefaultConfidence), "cpu_machine_percent", ptr(2), nil)
	// The row's own (adaptive, corrected) confidence is used.
	rows[0].Interval.Confidence = 0.99
	f(WithNoise(rows, floor, 3, DefaultConfidence), "cpu_machine_percent", ptr(2), ptr(MinDetectableSD(2, 3, 0.99)))
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
