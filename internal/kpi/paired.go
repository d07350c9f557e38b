package kpi

import "math"

// PairedDiffInterval is the interval of the mean of b[i] − a[i] over pairs
// measured side by side (round i of an old and a new build, run minutes
// apart in one session), at confidence. Pairing cancels what both sides of
// a pair share, a machine that slowed between rounds above all, which
// Welch's two-sample DiffInterval counts as noise. a and b must have the
// same length; fewer than two pairs give an infinite interval.
func PairedDiffInterval(a, b []float64, confidence float64) Interval {
	if len(a) != len(b) {
		return Interval{Center: math.NaN(), Lo: math.Inf(-1), Hi: math.Inf(1), Confidence: confidence}
	}
	d := make([]float64, len(a))
	for i := range a {
		d[i] = b[i] - a[i]
	}
	return MeanInterval(d, confidence)
}

// PairedChangeInterval is the interval of the percent change of b from a
// over pairs, from the mean of log(b[i] ÷ a[i]) (a change in cost is
// multiplicative): the paired form of ChangeInterval. Values must be
// positive and the sides of equal length; ok is false otherwise.
func PairedChangeInterval(a, b []float64, confidence float64) (iv Interval, ok bool) {
	if len(a) != len(b) {
		return Interval{}, false
	}
	l := make([]float64, len(a))
	for i := range a {
		if a[i] <= 0 || b[i] <= 0 {
			return Interval{}, false
		}
		l[i] = math.Log(b[i] / a[i])
	}
	return percentOfLog(MeanInterval(l, confidence)), true
}
