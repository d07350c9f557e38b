package kpi

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Noise is one KPI's round-to-round noise measured by a self-check (the
// same API in both arms, so every per-round delta is noise).
type Noise struct {
	// DeltaUnit is the unit of SD and MeanDelta: the KPI's delta unit,
	// "points" or "percent".
	DeltaUnit string `json:"delta_unit"`
	// SD is the sample standard deviation (n − 1 denominator) of the
	// per-round delta, in DeltaUnit.
	SD float64 `json:"sd"`
	// Rounds is how many per-round deltas SD and MeanDelta come from (rounds
	// where the figure was measured).
	Rounds int `json:"rounds"`
	// MeanDelta is the mean per-round delta, in DeltaUnit: near 0 on a fair
	// machine; a large value means the two copies of one arm did not see the
	// same conditions (order effects, warm-up).
	MeanDelta float64 `json:"mean_delta"`
}

// NoiseSpread computes each KPI's round-to-round noise from a self-check's
// rounds (each the output of Evaluate, same rows in the same order), keyed
// by KPI name. A KPI measured in fewer than two rounds has no spread and is
// left out; rounds where its delta is undefined (not measured, or a change
// from 0) are skipped. Rounds whose rows differ are an error.
func NoiseSpread(rounds [][]Result) (map[string]Noise, error) {
	out := map[string]Noise{}
	if len(rounds) == 0 {
		return out, nil
	}
	for i, first := range rounds[0] {
		var deltas []float64
		for j, rs := range rounds {
			if len(rs) != len(rounds[0]) || rs[i].Name != first.Name {
				return nil, fmt.Errorf("round %d has different KPI rows from round 1", j+1)
			}
			if rs[i].Delta != nil && !math.IsNaN(*rs[i].Delta) && !math.IsInf(*rs[i].Delta, 0) {
				deltas = append(deltas, *rs[i].Delta)
			}
		}
		if len(deltas) < 2 {
			continue
		}
		out[first.Name] = Noise{DeltaUnit: first.DeltaUnit, SD: stddev(deltas), Rounds: len(deltas), MeanDelta: mean(deltas)}
	}
	return out, nil
}

// MinDetectableSD is the smallest true delta that n rounds whose per-round
// delta has standard deviation sd (in the delta's unit) detect as beyond a
// limit of that size with 80 % power at the two-sided confidence:
// (t(1−α/2, n−1) + t(0.8, n−1)) × sd ÷ √n, in the unit of sd. It is the
// formula of MinDetectable, with the spread given instead of measured; 0
// when n < 2 or sd is not positive.
func MinDetectableSD(sd float64, n int, confidence float64) float64 {
	if n < 2 || !(sd > 0) || math.IsInf(sd, 0) {
		return 0
	}
	return minDetectable(sd/math.Sqrt(float64(n)), float64(n-1), confidence)
}

// minDetectable is (t(1−α/2, df) + t(0.8, df)) × se.
func minDetectable(se, df, confidence float64) float64 {
	power := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.8)
	return (tCritical(df, confidence) + power) * se
}

// WithNoise adds a recorded noise floor to a run's aggregated KPI rows: each
// gated row with a record of the same name and delta unit gets NoiseSD and,
// when the run had at least two rounds, NoiseMinDetectable for the run's
// rounds at the row's interval confidence (confidence when the row has no
// interval). The rows are copied; informational rows are left as they are.
func WithNoise(rows []Result, floor map[string]Noise, rounds int, confidence float64) []Result {
	out := append([]Result(nil), rows...)
	for i := range out {
		r := &out[i]
		nz, ok := floor[r.Name]
		if !r.Gated || !ok || nz.DeltaUnit != r.DeltaUnit || math.IsNaN(nz.SD) || nz.SD < 0 {
			continue
		}
		r.NoiseSD = ptr(nz.SD)
		c := confidence
		if r.Interval != nil && r.Interval.Confidence > 0 && r.Interval.Confidence < 1 {
			c = r.Interval.Confidence
		}
		if md := MinDetectableSD(nz.SD, rounds, c); md > 0 {
			r.NoiseMinDetectable = ptr(md)
		}
	}
	return out
}
