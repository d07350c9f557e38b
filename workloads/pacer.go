package workloads

import (
	"math"
	"time"
)

// LateThreshold is how far after its intended send time an open-model request
// may actually be sent before it counts as late (OpenResult.Late). One
// millisecond is well above the scheduling jitter of an idle driver (tens of
// microseconds) and well below the latencies being measured, so late requests
// mean the driver itself could not keep up with the schedule.
const LateThreshold = time.Millisecond

// Pacer is the open model's arrival schedule: a rate that starts at Rate
// requests per second and moves linearly to RateEnd at Duration (constant
// when RateEnd is 0 or equal to Rate), r(t) = Rate + (RateEnd-Rate)·t/Duration.
// It is pure and clock-free, in the style of vegeta's Pacer: callers pass the
// time elapsed and the number of arrivals already made.
//
// Arrival i (counting from 0) is intended at the t solving
// N(t) = Rate·t + (RateEnd-Rate)·t²/(2·Duration) = i, the instant the
// cumulative rate reaches i, so arrival 0 is at t = 0. The schedule holds every
// arrival with t < Duration: ceil(N(Duration)) of them, N(Duration) being
// (Rate+RateEnd)/2·Duration.
type Pacer struct {
	// Rate is the arrival rate at t = 0, in requests per second (above 0).
	Rate float64
	// RateEnd is the arrival rate at Duration, in requests per second; 0 means Rate.
	RateEnd float64
	// Duration is the schedule's length.
	Duration time.Duration
}

// NewPacer returns the pacer of an open-model phase.
func NewPacer(p Phase) Pacer {
	return Pacer{Rate: p.Rate, RateEnd: p.RateEnd, Duration: p.Duration}
}

// end returns the rate at Duration.
func (p Pacer) end() float64 {
	if p.RateEnd <= 0 {
		return p.Rate
	}
	return p.RateEnd
}

// Total returns the number of arrivals in the schedule: the arrivals i with
// i < N(Duration).
func (p Pacer) Total() int64 {
	n := (p.Rate + p.end()) / 2 * p.Duration.Seconds()
	if !(n > 0) {
		return 0
	}
	// Shave a relative 1e-12 first so that a product that should be a whole
	// number but came out a few ulps above it does not add an arrival at Duration.
	return int64(math.Ceil(n - n*1e-12))
}

// RateAt returns the intended arrival rate at offset at, in requests per
// second: linear from Rate at 0 to RateEnd at Duration, held after.
func (p Pacer) RateAt(at time.Duration) float64 {
	if p.Duration <= 0 {
		return p.Rate
	}
	f := min(max(at.Seconds()/p.Duration.Seconds(), 0), 1)
	return p.Rate + (p.end()-p.Rate)*f
}

// MeanRate returns the schedule's mean intended rate, in requests per second.
func (p Pacer) MeanRate() float64 { return (p.Rate + p.end()) / 2 }

// Intended returns the intended send time of arrival i as an offset from the
// schedule's start, rounded to the nanosecond; ok is false when the schedule
// has no arrival i (i < 0 or i >= Total()).
func (p Pacer) Intended(i int64) (at time.Duration, ok bool) {
	if i < 0 || i >= p.Total() || !(p.Rate > 0) {
		return 0, false
	}
	d := p.Duration.Seconds()
	k := (p.end() - p.Rate) / d // rate slope, requests/s²
	fi := float64(i)
	var t float64
	if k == 0 {
		t = fi / p.Rate
	} else {
		// The root of k/2·t² + Rate·t - i = 0 written as 2i / (Rate + sqrt(Rate² + 2ki)),
		// which avoids cancellation when k is small and also holds for k < 0.
		// Rate² + 2ki = r(t)² is positive for every scheduled arrival, since the
		// rate stays positive over [0, Duration].
		t = 2 * fi / (p.Rate + math.Sqrt(p.Rate*p.Rate+2*k*fi))
	}
	return min(time.Duration(math.Round(t*1e9)), p.Duration), true
}

// Pace returns how long to wait, from elapsed (the time since the schedule
// started), before sending the next arrival when hits arrivals have been made,
// or stop = true when the schedule holds no more arrivals. A zero wait means
// the arrival is due now or overdue.
func (p Pacer) Pace(elapsed time.Duration, hits uint64) (wait time.Duration, stop bool) {
	if hits > math.MaxInt64 {
		return 0, true
	}
	at, ok := p.Intended(int64(hits))
	if !ok {
		return 0, true
	}
	return max(at-elapsed, 0), false
}
