package kpi

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// DuetSecond is one wall-clock second of a duet round (soakd ab --duet:
// both builds under the same load at the same instant): each side's
// target CPU time over that second (OS user + system, seconds) and the
// requests its driver completed over it (count, fractional where a
// progress report fell inside the second).
type DuetSecond struct {
	OldCPUSeconds float64 `json:"old_cpu_seconds"`
	NewCPUSeconds float64 `json:"new_cpu_seconds"`
	OldRequests   float64 `json:"old_requests"`
	NewRequests   float64 `json:"new_requests"`
}

// Batch means of a duet's per-second pairs.
//
// One second's ratio of the two builds' CPU per request is not
// independent of the next: a GC cycle, a burst of interference from the
// rest of the machine, a scheduler decision lasts longer than a second,
// so a Student interval over the seconds as if they were independent is
// too narrow (with a lag-one correlation of 0.5 its true coverage is near
// 78 %, not 95 %: TestDuetBatchMeansCoverage). The method of batch means
// (Law and Kelton, Simulation Modeling and Analysis, §9.5.3) averages
// consecutive seconds into batches long enough that their means are
// nearly uncorrelated and builds the interval from the batches, with the
// t quantile at batches − 1 degrees of freedom, which pays for estimating
// the spread from few batches. Batches of DuetBatchSeconds are still
// correlated a little (for AR(1) noise with ρ = 0.5, whose correlation
// time (1+ρ)/(1−ρ) is 3 s, 5-second batch means keep a lag-one
// correlation of 0.17, which alone costs two to three points of
// coverage), so the batches' variance is inflated by 1 + 2·r, r the
// lag-one correlation of the batch means that an AR(1) with the seconds'
// own measured lag-one correlation implies (duetBatchCorrelation): the
// first-order correction of the variance of a mean of correlated values.
// Fewer than DuetMinBatches leave the interval too wide to trust its own
// spread, and the figure is not measured. Batches never straddle two
// rounds (the seconds between rounds, settle and baseline, are not
// measured), and a round's last seconds short of a batch are left out.
const (
	// DuetBatchSeconds is the length of one batch, in seconds.
	DuetBatchSeconds = 5
	// DuetMinBatches is the fewest batches a session's interval is built
	// from.
	DuetMinBatches = 10
)

// DuetBatchRatios cuts each round's seconds into consecutive batches of
// batchSeconds and returns, per batch, the logarithm of the new build's
// CPU per request over the old one's within it: log((ΣnewCPU ÷ ΣnewReq) ÷
// (ΣoldCPU ÷ ΣoldReq)), a ratio of sums, so that a second with few
// requests weighs as little as it measured. A batch in which either side
// completed no request or used no CPU is skipped and counted.
func DuetBatchRatios(rounds [][]DuetSecond, batchSeconds int) (logRatios []float64, skipped int) {
	for _, b := range duetBatches(rounds, batchSeconds) {
		if math.IsNaN(b) {
			skipped++
			continue
		}
		logRatios = append(logRatios, b)
	}
	return logRatios, skipped
}

// duetBatches is DuetBatchRatios with a skipped batch as NaN, in order,
// one slice per round.
func duetBatches(rounds [][]DuetSecond, batchSeconds int) []float64 {
	var out []float64
	for _, r := range duetRoundBatches(rounds, batchSeconds) {
		out = append(out, r...)
	}
	return out
}

func duetRoundBatches(rounds [][]DuetSecond, batchSeconds int) [][]float64 {
	batchSeconds = max(batchSeconds, 1)
	out := make([][]float64, len(rounds))
	for r, secs := range rounds {
		for i := 0; i+batchSeconds <= len(secs); i += batchSeconds {
			var oc, nc, or, nr float64
			for _, s := range secs[i : i+batchSeconds] {
				oc, nc, or, nr = oc+s.OldCPUSeconds, nc+s.NewCPUSeconds, or+s.OldRequests, nr+s.NewRequests
			}
			l := math.NaN()
			if oc > 0 && nc > 0 && or > 0 && nr > 0 {
				l = math.Log((nc / nr) / (oc / or))
			}
			out[r] = append(out[r], l)
		}
	}
	return out
}

// DuetEstimate is the change of CPU per request over a duet's per-second
// pairs.
type DuetEstimate struct {
	// Interval is the percent change's interval (Center, Lo, Hi in
	// percent; N the batches, or the rounds when RoundLevel; DF N − 1).
	Interval Interval
	// Batches is the number of batches used; BatchSeconds their length.
	Batches, BatchSeconds int
	// SecondsCorrelation is the lag-one correlation of the per-second log
	// ratios within rounds, estimated from their lag-two correlation
	// (secondsCorrelation: √ of it, clipped at 0), and BatchCorrelation the
	// lag-one correlation of the batch means it implies, by which the
	// variance was inflated (× (1 + 2·BatchCorrelation)). SecondsLagOne
	// is the lag-one correlation read directly, which the seconds' shared
	// boundaries bias down (kept for the report).
	SecondsCorrelation, BatchCorrelation, SecondsLagOne float64
	// Rounds is the number of rounds with a batch. RoundF is the test of
	// a round effect: the variance of the mean estimated from the rounds'
	// own means over the one estimated from the batches (1 expected when
	// the rounds differ only by the batches' noise), and RoundFLimit the
	// F quantile (DuetRoundPoolLevel) above which the rounds are taken to
	// differ: then RoundLevel, and the interval is built from the rounds'
	// means (Rounds − 1 degrees of freedom) instead of the batches.
	Rounds              int
	RoundF, RoundFLimit float64
	RoundLevel          bool
}

// DuetRoundPoolLevel is the level of the preliminary test of a round
// effect (DuetChangeInterval). Something that lasts a whole round and
// favours one side, such as a competing process that the scheduler keeps
// on one side's CPUs, shifts all of that round's batches together: the
// batches are then not independent across rounds, and an interval built
// from them as if they were is too narrow (TestDuetRoundEffectCoverage).
// The rounds' means carry that variation whole, but with few degrees of
// freedom. The rule of Bancroft ("sometimes pool", Bozivich, Bancroft and
// Hartley, Ann. Math. Statist. 27, 1956) pools, that is uses the batches,
// unless the round-level variance is larger at the 25 % level, which keeps
// the coverage near the nominal level with or without a round effect.
const DuetRoundPoolLevel = 0.25

// DuetChangeInterval is the interval of the percent change of CPU per
// request from the old build to the new one over a duet's per-second
// pairs (rounds[r] the simultaneous seconds of round r, in order), by
// batch means of DuetBatchSeconds with the correction described there,
// or from the rounds' means when they differ beyond the batches' noise
// (DuetRoundPoolLevel). why is "" when the interval was built, otherwise
// what was short (fewer than DuetMinBatches batches).
func DuetChangeInterval(rounds [][]DuetSecond, confidence float64) (est DuetEstimate, why string) {
	l, skipped := DuetBatchRatios(rounds, DuetBatchSeconds)
	est = DuetEstimate{Batches: len(l), BatchSeconds: DuetBatchSeconds}
	if len(l) < DuetMinBatches {
		why = fmt.Sprintf("only %d batches of %d s of simultaneous seconds (at least %d needed", len(l), DuetBatchSeconds, DuetMinBatches)
		if skipped > 0 {
			why += fmt.Sprintf("; %d batches had no request or no CPU on a side", skipped)
		}
		return est, why + "): lengthen the compared phase's steady window or add rounds"
	}
	est.SecondsCorrelation, est.SecondsLagOne = secondsCorrelation(rounds)
	est.BatchCorrelation = duetBatchCorrelation(est.SecondsCorrelation, DuetBatchSeconds)
	d := MeanInterval(l, confidence)
	if d.SE > 0 {
		d.SE *= math.Sqrt(1 + 2*est.BatchCorrelation)
		h := tCritical(d.DF, confidence) * d.SE
		d.Lo, d.Hi = d.Center-h, d.Center+h
	}
	// The rounds' means, each over its own batches.
	var means []float64
	for _, r := range duetRoundBatches(rounds, DuetBatchSeconds) {
		var sum float64
		var n int
		for _, v := range r {
			if !math.IsNaN(v) {
				sum, n = sum+v, n+1
			}
		}
		if n > 0 {
			means = append(means, sum/float64(n))
		}
	}
	est.Rounds = len(means)
	if len(means) >= 2 && d.SE > 0 {
		rd := MeanInterval(means, confidence)
		est.RoundF = rd.SE * rd.SE / (d.SE * d.SE)
		est.RoundFLimit = distuv.F{D1: rd.DF, D2: d.DF}.Quantile(1 - DuetRoundPoolLevel)
		if est.RoundF > est.RoundFLimit {
			est.RoundLevel, d = true, rd
		}
	}
	est.Interval = percentOfLog(d)
	return est, ""
}

// secondsCorrelation estimates the lag-one correlation ρ of the seconds'
// noise from their lag-two correlation r₂, as √max(0, r₂): for AR(1)
// noise r₂ = ρ², and r₂ is free of what biases the lag-one reading. A
// second's counts are read by interpolating cumulative counters at its
// two ends, which it shares with its neighbours: a reading that is off at
// a boundary adds to one second what it takes from the next, a negative
// correlation between neighbours only, which cancelled the real positive
// one (a busy A/A duet read a lag-one correlation of 0; simulated with
// ρ = 0.5 and boundary errors of 3 requests in 100 it reads 0.09 where √r₂
// reads 0.38: TestDuetCorrelationThroughBoundaryNoise). The estimate is
// the larger of the two readings (and 0): the lag-one one is the less
// noisy where no boundary error biases it, and an underestimate narrows
// the interval (√r₂ alone raised the false alarms at the limit from 2.6
// to 3.1 % in TestDuetFalseAlarmAndPower's short sessions). It also
// returns the lag-one correlation read directly.
func secondsCorrelation(rounds [][]DuetSecond) (rho, lagOne float64) {
	lagOne = lagCorrelation(rounds, 1)
	return max(0, lagOne, math.Sqrt(max(0, lagCorrelation(rounds, 2)))), lagOne
}

// lagCorrelation is the lag-k autocorrelation of the per-second log
// ratios of CPU per request, pairs taken within rounds only, about their
// overall mean; 0 with fewer than three usable seconds.
func lagCorrelation(rounds [][]DuetSecond, k int) float64 {
	per := duetRoundBatches(rounds, 1)
	var sum float64
	var n int
	for _, r := range per {
		for _, v := range r {
			if !math.IsNaN(v) {
				sum, n = sum+v, n+1
			}
		}
	}
	if n < 3 {
		return 0
	}
	m := sum / float64(n)
	var num, den float64
	for _, r := range per {
		for i, v := range r {
			if math.IsNaN(v) {
				continue
			}
			den += (v - m) * (v - m)
			if i >= k && !math.IsNaN(r[i-k]) {
				num += (v - m) * (r[i-k] - m)
			}
		}
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// duetBatchCorrelation is the lag-one correlation of the means of
// consecutive batches of b values of an AR(1) series with lag-one
// correlation rho: cov(mean₁, mean₂) ÷ var(mean) =
// (Σ_{k<b} ρᵏ)(Σ_{1≤k≤b} ρᵏ) ÷ (b + 2 Σ_{1≤k<b} (b−k) ρᵏ).
func duetBatchCorrelation(rho float64, b int) float64 {
	if rho <= 0 || b < 1 {
		return 0
	}
	var head, tail, v float64 = 0, 0, float64(b)
	for k := range b {
		head += math.Pow(rho, float64(k))
		tail += math.Pow(rho, float64(k+1))
		if k > 0 {
			v += 2 * float64(b-k) * math.Pow(rho, float64(k))
		}
	}
	return head * tail / v
}
