package kpi

import (
	"encoding/json"
	"fmt"
	"math"

	"golang.org/x/perf/benchmath"
	"gonum.org/v1/gonum/stat/distuv"
)

// DefaultConfidence is the two-sided confidence of every interval soakd
// judges by. A figure fails only when its whole interval lies beyond the
// limit, so a build whose true difference sits exactly on the limit is
// failed by chance at most (1 − confidence) ÷ 2 = 2.5 % of the time, and a
// build with no difference far less often.
const DefaultConfidence = 0.95

// maxRoundsAdvice caps the "rounds to settle" estimate: beyond it the
// difference sits on the limit and no practical number of rounds decides.
const maxRoundsAdvice = 100

// Interval is an estimate with its two-sided confidence interval, in the
// unit of the figure (points, percent, µs…).
type Interval struct {
	// Center is the estimate: the mean of the per-round values.
	Center float64 `json:"center"`
	// Lo and Hi bound the interval; ±Inf when there are too few values.
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// N is the number of values (rounds) behind it; for a two-sample
	// interval the smaller side's.
	N int `json:"n"`
	// Confidence is the interval's level, e.g. 0.95.
	Confidence float64 `json:"confidence"`
	// SE is the standard error of Center (0 with fewer than two values).
	SE float64 `json:"se"`
	// DF is the Student t degrees of freedom behind the interval.
	DF float64 `json:"df"`
}

// Finite reports whether the interval has two finite ends.
func (iv Interval) Finite() bool { return !math.IsInf(iv.Lo, 0) && !math.IsInf(iv.Hi, 0) }

// MeanInterval is the Student t interval of the mean of xs (one value per
// round, e.g. each round's GraphQL − REST difference) at confidence. It is
// benchmath's AssumeNormal summary. Fewer than two values give an infinite
// interval: one round cannot say how noisy it was.
//
// Why the mean and t rather than benchath's distribution-free median
// interval: that interval needs at least 6 values at 95 %, and the 3-minute
// default suite runs 4 rounds; the false-alarm and detection rates of this
// rule are measured by simulation in the tests, heavy tails included.
func MeanInterval(xs []float64, confidence float64) Interval {
	iv := Interval{N: len(xs), Confidence: confidence, Lo: math.Inf(-1), Hi: math.Inf(1)}
	if len(xs) == 0 {
		iv.Center = math.NaN()
		return iv
	}
	vals := append([]float64(nil), xs...) // NewSample sorts in place
	s := benchmath.AssumeNormal.Summary(benchmath.NewSample(vals, &benchmath.DefaultThresholds), confidence)
	iv.Center = s.Center
	if len(xs) < 2 {
		return iv
	}
	iv.Lo, iv.Hi = s.Lo, s.Hi
	iv.SE = stddev(xs) / math.Sqrt(float64(len(xs)))
	iv.DF = float64(len(xs) - 1)
	if iv.SE == 0 {
		iv.Lo, iv.Hi = iv.Center, iv.Center
	}
	return iv
}

// DiffInterval is Welch's interval of mean(b) − mean(a) for two independent
// samples (e.g. one figure's per-round values in an old and a new run), at
// confidence. Either side with fewer than two values gives an infinite
// interval.
func DiffInterval(a, b []float64, confidence float64) Interval {
	iv := Interval{N: min(len(a), len(b)), Confidence: confidence, Lo: math.Inf(-1), Hi: math.Inf(1)}
	if len(a) == 0 || len(b) == 0 {
		iv.Center = math.NaN()
		return iv
	}
	iv.Center = mean(b) - mean(a)
	if len(a) < 2 || len(b) < 2 {
		return iv
	}
	va, vb := variance(a)/float64(len(a)), variance(b)/float64(len(b))
	iv.SE = math.Sqrt(va + vb)
	if iv.SE == 0 {
		iv.Lo, iv.Hi, iv.DF = iv.Center, iv.Center, float64(len(a)+len(b)-2)
		return iv
	}
	// Welch–Satterthwaite degrees of freedom.
	iv.DF = (va + vb) * (va + vb) / (va*va/float64(len(a)-1) + vb*vb/float64(len(b)-1))
	h := tCritical(iv.DF, confidence) * iv.SE
	iv.Lo, iv.Hi = iv.Center-h, iv.Center+h
	return iv
}

// ChangeInterval is the interval of the percent change of b from a,
// (mean b ÷ mean a − 1) × 100, from Welch's interval on the logarithms (a
// change in cost is multiplicative, and the log makes it symmetric). Values
// must be positive; ok is false otherwise.
func ChangeInterval(a, b []float64, confidence float64) (iv Interval, ok bool) {
	la, lb := make([]float64, len(a)), make([]float64, len(b))
	for i, v := range a {
		if v <= 0 {
			return Interval{}, false
		}
		la[i] = math.Log(v)
	}
	for i, v := range b {
		if v <= 0 {
			return Interval{}, false
		}
		lb[i] = math.Log(v)
	}
	return percentOfLog(DiffInterval(la, lb, confidence)), true
}

// percentOfLog turns an interval of a difference of logarithms into the
// interval of the percent change it stands for, (e^x − 1) × 100; its SE is
// the percent SE near the centre, for the detectable-effect estimate.
func percentOfLog(d Interval) Interval {
	pct := func(x float64) float64 { return math.Expm1(x) * 100 }
	iv := d
	iv.Center, iv.Lo, iv.Hi = pct(d.Center), pct(d.Lo), pct(d.Hi)
	iv.SE = d.SE * 100 * math.Exp(d.Center)
	return iv
}

// Bound is the kind of limit a figure is judged against.
type Bound int

const (
	// AtMost: the figure must not exceed the limit (a cost increase).
	AtMost Bound = iota
	// AtLeast: the figure must not fall below the limit (a throughput
	// decrease, written as a negative limit).
	AtLeast
)

// Decide applies the three-outcome rule: pass when the whole interval is
// inside the limit, fail when the whole interval is beyond it, inconclusive
// otherwise (an infinite interval is always inconclusive).
func Decide(iv Interval, limit float64, b Bound) Outcome {
	if math.IsNaN(iv.Center) {
		return OutcomeNotMeasured
	}
	inside, beyond := iv.Hi <= limit, iv.Lo > limit
	if b == AtLeast {
		inside, beyond = iv.Lo >= limit, iv.Hi < limit
	}
	switch {
	case inside:
		return OutcomePass
	case beyond:
		return OutcomeFail
	}
	return OutcomeInconclusive
}

// RoundsToSettle estimates how many rounds in all (per side) would probably
// make an inconclusive interval conclusive, assuming the centre and the
// round-to-round spread stay as measured: the smallest n whose interval
// half-width falls below the distance from the centre to the limit. It
// returns 0 when the spread is unknown (fewer than two rounds) and
// maxRoundsAdvice+1 when no practical number would do.
func RoundsToSettle(iv Interval, limit float64) int {
	if iv.N < 2 || iv.SE == 0 || math.IsNaN(iv.Center) {
		return 0
	}
	gap := math.Abs(iv.Center - limit)
	sd := iv.SE * math.Sqrt(float64(iv.N)) // per-round spread, scaled back
	for n := iv.N + 1; n <= maxRoundsAdvice; n++ {
		if tCritical(float64(n-1), iv.Confidence)*sd/math.Sqrt(float64(n)) < gap {
			return n
		}
	}
	return maxRoundsAdvice + 1
}

// MinDetectable is the smallest true difference from zero that n rounds
// with this spread detect as beyond a limit of that size with 80 % power:
// (t(1−α/2) + t(0.8)) × SE. 0 when the spread is unknown.
func MinDetectable(iv Interval) float64 {
	if iv.N < 2 || iv.SE == 0 || iv.DF <= 0 {
		return 0
	}
	return minDetectable(iv.SE, iv.DF, iv.Confidence)
}

// SettleAdvice words RoundsToSettle for a reader.
func SettleAdvice(iv Interval, limit float64) string {
	switch n := RoundsToSettle(iv, limit); {
	case iv.N < 2:
		return "one round cannot measure its own noise: run at least 3 rounds (rounds: 4 or more is better)"
	case n == 0:
		return "the rounds did not vary: nothing more to learn from more rounds"
	case n > maxRoundsAdvice:
		return fmt.Sprintf("the estimate sits on the limit: more than %d rounds would be needed", maxRoundsAdvice)
	default:
		return fmt.Sprintf("about %d rounds in all would probably settle it (%d run)", n, iv.N)
	}
}

// tCritical is the two-sided critical value of Student's t with df degrees
// of freedom at confidence (e.g. 2.776 for df 4 at 0.95).
func tCritical(df, confidence float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-confidence)/2)
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// variance is the sample variance (n − 1 denominator).
func variance(xs []float64) float64 {
	m := mean(xs)
	s := 0.0
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}

func stddev(xs []float64) float64 { return math.Sqrt(variance(xs)) }

// Sequential is the adaptive-rounds rule: look after every round from
// MinRounds to MaxRounds and stop at the first conclusive look. Testing at
// every look at the full level would inflate false alarms (five looks at
// 0.05 give about 0.14), so each look uses confidence 1 − (1 − Confidence)
// ÷ K with K = MaxRounds − MinRounds + 1 looks fixed in advance
// (Bonferroni; conservative). The false-alarm rate is measured by
// simulation in the tests.
type Sequential struct {
	MinRounds, MaxRounds int
	// Confidence is the overall level, e.g. DefaultConfidence.
	Confidence float64
}

// Looks is K, the number of looks fixed in advance.
func (s Sequential) Looks() int { return max(1, s.MaxRounds-s.MinRounds+1) }

// LookConfidence is the confidence each look is tested at.
func (s Sequential) LookConfidence() float64 {
	return 1 - (1-s.Confidence)/float64(s.Looks())
}

// Look judges the per-round values so far. stop is true when the rounds
// should end: the outcome is conclusive (pass or fail) at MinRounds or
// later, or MaxRounds is reached (the outcome is then final, conclusive or
// not).
func (s Sequential) Look(xs []float64, limit float64, b Bound) (o Outcome, stop bool) {
	if len(xs) < s.MinRounds {
		return OutcomeInconclusive, false
	}
	o = Decide(MeanInterval(xs, s.LookConfidence()), limit, b)
	return o, o == OutcomePass || o == OutcomeFail || len(xs) >= s.MaxRounds
}

// intervalJSON is Interval on the wire: an infinite end (too few rounds) is
// null, since JSON numbers cannot hold ±Inf.
type intervalJSON struct {
	Center     float64  `json:"center"`
	Lo         *float64 `json:"lo"`
	Hi         *float64 `json:"hi"`
	N          int      `json:"n"`
	Confidence float64  `json:"confidence"`
	SE         float64  `json:"se"`
	DF         float64  `json:"df"`
}

// MarshalJSON writes infinite ends as null.
func (iv Interval) MarshalJSON() ([]byte, error) {
	finite := func(v float64) *float64 {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil
		}
		return &v
	}
	c := iv.Center
	if math.IsNaN(c) || math.IsInf(c, 0) {
		c = 0
	}
	return json.Marshal(intervalJSON{Center: c, Lo: finite(iv.Lo), Hi: finite(iv.Hi), N: iv.N, Confidence: iv.Confidence, SE: iv.SE, DF: iv.DF})
}

// UnmarshalJSON reads what MarshalJSON writes: a null end is infinite.
func (iv *Interval) UnmarshalJSON(b []byte) error {
	var w intervalJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*iv = Interval{Center: w.Center, Lo: math.Inf(-1), Hi: math.Inf(1), N: w.N, Confidence: w.Confidence, SE: w.SE, DF: w.DF}
	if w.Lo != nil {
		iv.Lo = *w.Lo
	}
	if w.Hi != nil {
		iv.Hi = *w.Hi
	}
	return nil
}
