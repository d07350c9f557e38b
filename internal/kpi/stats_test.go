package kpi

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

func TestMeanIntervalAndDecide(t *testing.T) {
	f := func(xs []float64, limit float64, b Bound, want Outcome) {
		t.Helper()
		iv := MeanInterval(xs, DefaultConfidence)
		if got := Decide(iv, limit, b); got != want {
			t.Errorf("%v against %v: got %s, want %s (interval [%v, %v])", xs, limit, got, want, iv.Lo, iv.Hi)
		}
	}
	// GraphQL CPU +10.6…+14.8 points against a +5 limit: clearly fail.
	f([]float64{10.6, 10.8, 11.9, 14.8}, 5, AtMost, OutcomeFail)
	// A self-check: deltas around 0 against +5: pass.
	f([]float64{-0.6, 0.4, 1.1, -0.2}, 5, AtMost, OutcomePass)
	// Straddling the limit: inconclusive.
	f([]float64{3, 7, 4, 6}, 5, AtMost, OutcomeInconclusive)
	// One round can never be conclusive, however far from the limit.
	f([]float64{50}, 5, AtMost, OutcomeInconclusive)
	// Throughput: a lower bound.
	f([]float64{-1, -2, 0.5, -0.8}, -10, AtLeast, OutcomePass)
	f([]float64{-25, -21, -30, -24}, -10, AtLeast, OutcomeFail)
	// No values: not measured.
	f(nil, 5, AtMost, OutcomeNotMeasured)
}

func TestDiffAndChangeInterval(t *testing.T) {
	a := []float64{100, 102, 98, 101}
	b := []float64{120, 121, 119, 122}
	d := DiffInterval(a, b, DefaultConfidence)
	if math.Abs(d.Center-20.25) > 1e-9 || !(d.Lo > 15 && d.Hi < 25) {
		t.Errorf("diff interval: %+v", d)
	}
	c, ok := ChangeInterval(a, b, DefaultConfidence)
	if !ok || !(c.Lo > 15 && c.Hi < 25) || Decide(c, 10, AtMost) != OutcomeFail {
		t.Errorf("change interval: %+v ok %v", c, ok)
	}
	if _, ok := ChangeInterval([]float64{0, 1}, b, DefaultConfidence); ok {
		t.Error("a zero value must refuse a percent change")
	}
	if one := DiffInterval(a[:1], b, DefaultConfidence); one.Finite() {
		t.Errorf("one value on a side must give an infinite interval: %+v", one)
	}
}

func TestRoundsToSettle(t *testing.T) {
	iv := MeanInterval([]float64{3.5, 4.5, 3, 5}, DefaultConfidence) // mean 4, limit 5
	if Decide(iv, 5, AtMost) != OutcomeInconclusive {
		t.Fatalf("fixture should be inconclusive: %+v", iv)
	}
	n := RoundsToSettle(iv, 5)
	if n <= 4 || n > maxRoundsAdvice {
		t.Fatalf("rounds to settle: %d", n)
	}
	// With n rounds of the same spread the interval clears the limit.
	sd := stddev([]float64{3.5, 4.5, 3, 5})
	if h := tCritical(float64(n-1), DefaultConfidence) * sd / math.Sqrt(float64(n)); h >= 1 {
		t.Errorf("at %d rounds the half-width is still %v", n, h)
	}
	if RoundsToSettle(MeanInterval([]float64{5, 5.0001, 4.9999}, DefaultConfidence), 5) != maxRoundsAdvice+1 {
		t.Error("an estimate on the limit cannot be settled")
	}
}

// simulate returns the share of trials whose outcome is want, deltas drawn
// from draw around true value mu, n rounds each.
func simulate(rng *rand.Rand, trials, n int, mu float64, draw func(*rand.Rand) float64, limit float64, want Outcome) float64 {
	hits := 0
	xs := make([]float64, n)
	for range trials {
		for i := range xs {
			xs[i] = mu + draw(rng)
		}
		if Decide(MeanInterval(xs, DefaultConfidence), limit, AtMost) == want {
			hits++
		}
	}
	return float64(hits) / float64(trials)
}

// TestFalseAlarmAndPower proves the gate's two rates on simulated rounds:
// a build whose true difference is at the limit (the worst case for a false
// alarm) fails at most α/2 = 2.5 % of the time, whatever the number of
// rounds and for normal and heavy-tailed (Laplace) noise; a build beyond the
// limit by twice the round-to-round noise fails at least 80 % of the time
// with 6 rounds or more.
func TestFalseAlarmAndPower(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials = 20000
	normal := func(r *rand.Rand) float64 { return r.NormFloat64() }
	laplace := func(r *rand.Rand) float64 { // variance 1
		u := r.Float64() - 0.5
		return -math.Copysign(math.Log(1-2*math.Abs(u)), u) / math.Sqrt2
	}
	for _, n := range []int{3, 4, 6, 8} {
		for name, draw := range map[string]func(*rand.Rand) float64{"normal": normal, "laplace": laplace} {
			if fa := simulate(rng, trials, n, 5, draw, 5, OutcomeFail); fa > 0.03 {
				t.Errorf("%s noise, %d rounds, true delta on the limit: false alarms %.3f > 0.03", name, n, fa)
			}
			if fa := simulate(rng, trials, n, 0, draw, 5*1, OutcomeFail); fa > 0.001 {
				t.Errorf("%s noise, %d rounds, no difference: false alarms %.4f", name, n, fa)
			}
		}
	}
	for _, n := range []int{6, 8} {
		if p := simulate(rng, trials, n, 5+2, normal, 5, OutcomeFail); p < 0.8 {
			t.Errorf("%d rounds, effect 2σ beyond the limit: power %.3f < 0.8", n, p)
		}
	}
	// Adaptive rounds (looks at 4…8 rounds, each at confidence
	// 1 − α/K, stop at the first conclusive look) keep the false-alarm rate.
	s := Sequential{MinRounds: 4, MaxRounds: 8, Confidence: DefaultConfidence}
	fails, power := 0, 0
	for range trials {
		var xs, ys []float64
		doneX, doneY := false, false
		for n := 1; n <= s.MaxRounds; n++ {
			xs = append(xs, 5+rng.NormFloat64())
			ys = append(ys, 7+rng.NormFloat64())
			if !doneX {
				if o, stop := s.Look(xs, 5, AtMost); stop {
					doneX = true
					if o == OutcomeFail {
						fails++
					}
				}
			}
			if !doneY {
				if o, stop := s.Look(ys, 5, AtMost); stop {
					doneY = true
					if o == OutcomeFail {
						power++
					}
				}
			}
		}
	}
	if fa := float64(fails) / trials; fa > 0.025 {
		t.Errorf("adaptive rounds: false alarms %.4f > 0.025", fa)
	}
	if p := float64(power) / trials; p < 0.8 {
		t.Errorf("adaptive rounds: power %.3f < 0.8 at 2σ beyond the limit", p)
	}
}

func TestCombine(t *testing.T) {
	f := func(want Outcome, os ...Outcome) {
		t.Helper()
		if got := Combine(os...); got != want {
			t.Errorf("Combine(%v) = %s, want %s", os, got, want)
		}
	}
	f(OutcomePass, OutcomePass, "", OutcomePass)
	f(OutcomeFail, OutcomePass, OutcomeFail, OutcomeNotMeasured)
	f(OutcomeInconclusive, OutcomePass, OutcomeNotMeasured)
	f(OutcomeInconclusive, OutcomePass, OutcomeInconclusive)
	f(OutcomeInconclusive)
	f(OutcomeAborted, OutcomePass, OutcomeAborted)
}

func TestIntervalJSON(t *testing.T) {
	for _, iv := range []Interval{MeanInterval([]float64{7}, DefaultConfidence), MeanInterval([]float64{1, 2, 4}, DefaultConfidence)} {
		b, err := json.Marshal(iv)
		if err != nil {
			t.Fatalf("marshal %+v: %v", iv, err)
		}
		var back Interval
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back != iv {
			t.Errorf("round trip: %s gave %+v, want %+v", b, back, iv)
		}
	}
	// A Result holding an infinite interval encodes (report.json of a one-round run).
	rs, _ := Aggregate([][]Result{Evaluate(Figures{ThroughputRPS: 1, CPUMachinePercent: 1}, Figures{ThroughputRPS: 1, CPUMachinePercent: 2}, Limits{CPUIncreasePoints: 5})}, DefaultConfidence)
	if _, err := json.Marshal(rs); err != nil {
		t.Errorf("one round's rows must encode: %v", err)
	}
}
