// Package changepoint finds the runs after which a figure's level moved, in
// the series of one figure over a daemon's runs (oldest first): E-Divisive
// means (Matteson and James, 2014) as MongoDB's performance CI used it (Daly
// et al., ICPE 2020), with the significance of each candidate decided by
// Student's t-test rather than a permutation test, as DataStax's Hunter and
// Apache Otava do, so that the same series always gives the same answer.
//
// Detect is a pure function of the series and the options: binary
// segmentation. In a segment, the split maximising the E-Divisive
// divergence (energy distance between the two sides, weighted by their
// sizes) is the candidate; it is a change point when the two sides' means
// differ by a two-sided Student's t-test at Options.Level, after the p-value
// is multiplied by the number of splits the candidate was chosen among
// (Bonferroni). Hunter tests the chosen split as if it had been the only
// one, which makes its p-value optimistic: on noise alone the largest of
// ~25 divergences is significant far more often than the level says. The
// correction bounds the chance that a series without any change gets one
// at the level, whatever split was chosen. When the split against the
// whole rest of the segment is not significant, the split against a
// shorter right side is searched too (Matteson and James's right end κ):
// a regression fixed a few runs later is low | high | low, and the whole
// rest mixes high and low. Each search has half the level (a weighted
// Bonferroni correction over both). Each accepted change splits its
// segment and both halves are searched again.
//
// Every side of a split holds at least Options.MinRuns runs, so one noisy
// run can never be a segment of its own: a change point needs evidence on
// both sides.
package changepoint

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Defaults of Options.
const (
	// DefaultMinRuns is the fewest runs on either side of a change point.
	DefaultMinRuns = 3
	// DefaultLevel is the significance level: the largest corrected
	// p-value a change point may have.
	DefaultLevel = 0.01
)

// Options tune Detect; the zero value means the defaults.
type Options struct {
	// MinRuns is the fewest runs on each side of a change point (at least
	// 2, so that each side has a variance); 0 means DefaultMinRuns.
	MinRuns int
	// Level is the significance level in (0, 1): a split is a change point
	// when its corrected p-value is below it; 0 means DefaultLevel.
	Level float64
}

// withDefaults returns o with zero fields set to their defaults, or an
// error naming a field out of range.
func (o Options) withDefaults() (Options, error) {
	if o.MinRuns == 0 {
		o.MinRuns = DefaultMinRuns
	}
	if o.Level == 0 {
		o.Level = DefaultLevel
	}
	if o.MinRuns < 2 {
		return o, fmt.Errorf("changepoint: min runs %d: each side of a change needs at least 2 runs", o.MinRuns)
	}
	if !(o.Level > 0 && o.Level < 1) {
		return o, fmt.Errorf("changepoint: level %v: it must be in (0, 1), such as 0.01", o.Level)
	}
	return o, nil
}

// Change is one change point of a series.
type Change struct {
	// Index is the position in the series of the first value after the
	// change: values[Index] is the first run at the new level.
	Index int `json:"index"`
	// Before and After are the means of the segments on either side, each
	// running to the neighbouring change point (or the series' end), in
	// the series' unit.
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	// Step is After − Before, in the series' unit.
	Step float64 `json:"step"`
	// Relative is Step / |Before|; nil when Before is 0.
	Relative *float64 `json:"relative"`
	// PValue is the t-test's two-sided p-value for the split, multiplied
	// by the number of splits it was chosen among (at most 1), computed
	// over the segment the split was found in.
	PValue float64 `json:"p_value"`
}

// Detect returns the change points of values (oldest first), by Index
// ascending. A series too short to hold a change (fewer than 2·MinRuns
// values) has none. Values must be finite: a run whose figure was not
// measured has no place in the series, leave it out.
func Detect(values []float64, o Options) ([]Change, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("changepoint: value %d is %v: leave unmeasured runs out of the series", i, v)
		}
	}
	type found struct {
		index int
		p     float64
	}
	var cps []found
	type segment struct{ lo, hi int }
	todo := []segment{{0, len(values)}}
	for len(todo) > 0 {
		s := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		x := values[s.lo:s.hi]
		tau, candidates := bestSplit(x, o.MinRuns)
		if candidates == 0 {
			continue
		}
		// Half the level for the split of the whole segment, half for the
		// split against a shorter right side (weighted Bonferroni: the
		// chance of a false change stays within the level).
		p := min(1, 2*float64(candidates)*tTest(x[:tau], x[tau:]))
		if p >= o.Level {
			bTau, kappa, pairs := bestBump(x, o.MinRuns)
			if pairs == 0 {
				continue
			}
			if p = min(1, 2*float64(pairs)*tTest(x[:bTau], x[bTau:kappa])); p >= o.Level {
				continue
			}
			tau = bTau
		}
		cps = append(cps, found{s.lo + tau, p})
		todo = append(todo, segment{s.lo, s.lo + tau}, segment{s.lo + tau, s.hi})
	}
	slices.SortFunc(cps, func(a, b found) int { return a.index - b.index })
	out := make([]Change, len(cps))
	for i, c := range cps {
		lo, hi := 0, len(values)
		if i > 0 {
			lo = cps[i-1].index
		}
		if i+1 < len(cps) {
			hi = cps[i+1].index
		}
		before, after := mean(values[lo:c.index]), mean(values[c.index:hi])
		ch := Change{Index: c.index, Before: before, After: after, Step: after - before, PValue: c.p}
		if before != 0 {
			r := ch.Step / math.Abs(before)
			ch.Relative = &r
		}
		out[i] = ch
	}
	return out, nil
}

// bestSplit returns the split tau of x (x[:tau] | x[tau:], each side at
// least k values) with the largest E-Divisive divergence, and how many
// splits were candidates (0 when x is too short for any). Ties go to the
// earliest split, so the result is deterministic.
//
// The divergence of a split into sides of m and r values is
// m·r/(m+r) · (2/(m·r)·B − W_L/C(m,2) − W_R/C(r,2)), with B the sum of
// |a−b| over pairs across the split and W_L, W_R those within each side
// (the sample energy distance with exponent 1). The within sums of every
// prefix and suffix are built incrementally, so a segment of n values
// costs O(n²).
func bestSplit(x []float64, k int) (tau, candidates int) {
	n := len(x)
	if n < 2*k {
		return 0, 0
	}
	// pre[t] = sum over pairs i<j<t of |x_i−x_j|; suf[t] = pairs t≤i<j.
	pre := make([]float64, n+1)
	for t := 1; t <= n; t++ {
		pre[t] = pre[t-1]
		for i := range t - 1 {
			pre[t] += math.Abs(x[i] - x[t-1])
		}
	}
	suf := make([]float64, n+1)
	for t := n - 1; t >= 0; t-- {
		suf[t] = suf[t+1]
		for j := t + 1; j < n; j++ {
			suf[t] += math.Abs(x[t] - x[j])
		}
	}
	best := math.Inf(-1)
	for t := k; t <= n-k; t++ {
		m, r := float64(t), float64(n-t)
		wl, wr := pre[t], suf[t]
		between := pre[n] - wl - wr
		q := m * r / (m + r) * (2*between/(m*r) - wl/(m*(m-1)/2) - wr/(r*(r-1)/2))
		if q > best {
			best, tau = q, t
		}
	}
	return tau, n - 2*k + 1
}

// bestBump returns the split tau and right end kappa of x (x[:tau] |
// x[tau:kappa], each side at least k values, kappa ≤ len(x)) with the
// largest E-Divisive divergence, and how many such pairs were candidates.
// This is Matteson and James's search over the right end: a level that
// moved and moved back (a regression fixed a few runs later) is a split
// against a shorter right side, where the split against the whole rest
// of the segment mixes both levels on its right and proves nothing. Ties
// go to the earliest pair. O(len(x)²) time, O(len(x)) memory.
func bestBump(x []float64, k int) (tau, kappa, candidates int) {
	n := len(x)
	if n < 2*k {
		return 0, 0, 0
	}
	// pre[b] = W(0, b), the sum of |x_i−x_j| over pairs i<j<b.
	pre := make([]float64, n+1)
	for b := 1; b <= n; b++ {
		pre[b] = pre[b-1]
		for i := range b - 1 {
			pre[b] += math.Abs(x[i] - x[b-1])
		}
	}
	// row[b] = W(a, b) for the current a, from W(a+1, b) and the pairs
	// (a, j), a < j < b, rows taken from the end.
	row := make([]float64, n+1)
	best := math.Inf(-1)
	for a := n - 1; a >= 0; a-- {
		acc := 0.0 // sum of |x_a − x_j| for a < j < b
		for b := a + 1; b <= n; b++ {
			if b-1 > a {
				acc += math.Abs(x[a] - x[b-1])
			}
			row[b] += acc
		}
		if a < k || a > n-k {
			continue
		}
		m := float64(a)
		wl := pre[a]
		for b := a + k; b <= n; b++ {
			candidates++
			r := float64(b - a)
			wr := row[b]
			between := pre[b] - wl - wr
			q := m * r / (m + r) * (2*between/(m*r) - wl/(m*(m-1)/2) - wr/(r*(r-1)/2))
			if q > best || (q == best && (a < tau || a == tau && b < kappa)) {
				best, tau, kappa = q, a, b
			}
		}
	}
	return tau, kappa, candidates
}

// tTest returns the two-sided p-value of Student's two-sample t-test
// (pooled variance) that a and b have the same mean; both hold at least
// 2 values. Two constant sides are 0 apart (p 1) or apart with no noise
// at all (p 0).
func tTest(a, b []float64) float64 {
	ma, mb := mean(a), mean(b)
	na, nb := float64(len(a)), float64(len(b))
	ss := 0.0
	for _, v := range a {
		ss += (v - ma) * (v - ma)
	}
	for _, v := range b {
		ss += (v - mb) * (v - mb)
	}
	df := na + nb - 2
	se := math.Sqrt(ss / df * (1/na + 1/nb))
	if se == 0 {
		if ma == mb {
			return 1
		}
		return 0
	}
	t := math.Abs(ma-mb) / se
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(t)
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}
