package workloads

import (
	"fmt"
	"math/bits"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// LoadBucket is the ramping model's time resolution: completions are counted
// in buckets of this width, the failure rules judge a sliding window made of
// the last Failure.Window/LoadBucket buckets each time a bucket closes, and
// the timeline has one point per bucket.
const LoadBucket = time.Second

// Why a ramping phase ended (MaxLoadResult.Reason). The first three are
// failures, named after the Failure rule that tripped.
const (
	// ReasonErrorRatio: the window's share of failed requests exceeded Failure.MaxErrorRatio.
	ReasonErrorRatio = "error_ratio"
	// ReasonP99Latency: the window's p99 latency exceeded Failure.MaxP99.
	ReasonP99Latency = "p99_latency"
	// ReasonConnectionErrors: the window's refused and reset connections exceeded Failure.MaxConnectionErrors.
	ReasonConnectionErrors = "connection_errors"
	// ReasonMaxUsers: Ramp.Max users ran for one full Failure.Window without a failure.
	ReasonMaxUsers = "max_users"
	// ReasonDuration: Phase.Duration elapsed without a failure.
	ReasonDuration = "duration"
	// ReasonAborted: the run was cancelled.
	ReasonAborted = "aborted"
)

// WindowStats are the figures of one sliding window of a ramping phase.
type WindowStats struct {
	// Requests is the number of requests completed in the window.
	Requests int64 `json:"requests"`
	// Errors is the number of those that failed.
	Errors int64 `json:"errors"`
	// ConnectionErrors is the number of failures of class connection_refused or connection_reset.
	ConnectionErrors int64 `json:"connection_errors"`
	// P99 is the 99th-percentile latency of the successful requests (0 when there were none).
	P99 time.Duration `json:"p99_ns"`
	// Seconds is the window's length in seconds (shorter than Failure.Window at the phase start).
	Seconds float64 `json:"seconds"`
}

// ErrorRatio returns Errors/Requests, or 0 without requests.
func (w WindowStats) ErrorRatio() float64 {
	if w.Requests <= 0 {
		return 0
	}
	return float64(w.Errors) / float64(w.Requests)
}

// RPS returns the window's throughput, Requests/Seconds, in requests per second.
func (w WindowStats) RPS() float64 {
	if w.Seconds <= 0 {
		return 0
	}
	return float64(w.Requests) / w.Seconds
}

// Judge applies the failure rules f to the window w. A window with fewer than
// f.MinRequests requests is not judged. Each enabled rule trips when the
// window's figure is strictly above its limit: the error ratio above
// MaxErrorRatio, the p99 above MaxP99, the connection errors above
// MaxConnectionErrors. reason names the first rule that tripped in that order
// (ReasonErrorRatio, ReasonP99Latency, ReasonConnectionErrors) and detail gives
// every tripped rule's measured value and limit; failed is false, with empty
// reason and detail, when no rule tripped.
func Judge(w WindowStats, f Failure) (reason string, detail string, failed bool) {
	if w.Requests < f.MinRequests {
		return "", "", false
	}
	var details []string
	trip := func(r, d string) {
		if reason == "" {
			reason = r
		}
		details = append(details, d)
	}
	if f.MaxErrorRatio > 0 && w.Requests > 0 && w.ErrorRatio() > f.MaxErrorRatio {
		trip(ReasonErrorRatio, fmt.Sprintf("error ratio %.4g (%d of %d requests) above the limit %.4g",
			w.ErrorRatio(), w.Errors, w.Requests, f.MaxErrorRatio))
	}
	if f.MaxP99 > 0 && w.P99 > f.MaxP99 {
		trip(ReasonP99Latency, fmt.Sprintf("p99 latency %s above the limit %s", w.P99, f.MaxP99))
	}
	if f.MaxConnectionErrors > 0 && w.ConnectionErrors > f.MaxConnectionErrors {
		trip(ReasonConnectionErrors, fmt.Sprintf("%d connection errors (refused or reset) above the limit %d",
			w.ConnectionErrors, f.MaxConnectionErrors))
	}
	if reason == "" {
		return "", "", false
	}
	return reason, strings.Join(details, "; ") + fmt.Sprintf(" over a %gs window", w.Seconds), true
}

// RampUsers returns how many users a ramping phase runs at offset t from its
// start: r.Start + r.Step·floor(t/r.Every), capped at r.Max (MaxUsers when
// r.Max is 0). It is exact and cannot overflow.
func RampUsers(r Ramp, t time.Duration) int {
	limit := MaxUsers
	if r.Max > 0 {
		limit = min(r.Max, MaxUsers)
	}
	start := max(r.Start, 0)
	if start >= limit {
		return limit
	}
	if r.Step <= 0 || r.Every <= 0 || t < 0 {
		return start
	}
	steps := uint64(t / r.Every)
	hi, lo := bits.Mul64(steps, uint64(r.Step))
	if hi != 0 || lo >= uint64(limit-start) {
		return limit
	}
	return start + int(lo)
}

// rampCap returns the most users a ramp ever runs.
func rampCap(r Ramp) int {
	if r.Max > 0 {
		return min(r.Max, MaxUsers)
	}
	return MaxUsers
}

// Window histograms record the latency of successful requests in
// microseconds with 2 significant figures (p99 within 1 %, enough to judge a
// limit): about 20 KiB each, so a window of MaxFailureWindow costs about 1.3 MiB.
const windowSigFigs = 2

// windowSlack is how many buckets beyond the judged window the ring keeps,
// so completions may run ahead of a late controller by up to this many
// buckets without overwriting a bucket still to be judged.
const windowSlack = 4

// loadBucket counts the completions of one LoadBucket.
type loadBucket struct {
	requests, errors, connErrors int64
	hist                         *hdrhistogram.Histogram // successful requests' latency, µs
}

// loadWindow is the ramping model's sliding window: a ring of LoadBucket-wide
// buckets, bucket b at ring[b%len(ring)] for b in (head-len(ring), head]. Its
// memory is bounded by Failure.Window, not by the run length. It is
// clock-free: callers pass offsets from the phase start. It is not safe for
// concurrent use.
type loadWindow struct {
	width   int64 // buckets per judged window
	ring    []loadBucket
	head    int64 // the newest bucket
	scratch *hdrhistogram.Histogram
}

// newLoadWindow returns a window judging the last window (a whole number of LoadBuckets).
func newLoadWindow(window time.Duration) *loadWindow {
	width := max(int64(window/LoadBucket), 1)
	w := &loadWindow{width: width, ring: make([]loadBucket, width+windowSlack)}
	for i := range w.ring {
		w.ring[i].hist = hdrhistogram.New(histMinMicros, histMaxMicros, windowSigFigs)
	}
	w.scratch = hdrhistogram.New(histMinMicros, histMaxMicros, windowSigFigs)
	return w
}

// advance makes b the newest bucket, clearing the buckets it reuses.
func (w *loadWindow) advance(b int64) {
	n := int64(len(w.ring))
	for i := w.head + 1; i <= b && i <= w.head+n; i++ {
		c := &w.ring[i%n]
		c.requests, c.errors, c.connErrors = 0, 0, 0
		c.hist.Reset()
	}
	w.head = max(w.head, b)
}

// add counts one completion at offset at with error class (empty on success)
// and latency.
func (w *loadWindow) add(at time.Duration, class string, latency time.Duration) {
	b := int64(at / LoadBucket)
	w.advance(b)
	n := int64(len(w.ring))
	if b <= w.head-n {
		return // older than the ring; cannot happen when offsets are read in order
	}
	c := &w.ring[b%n]
	c.requests++
	switch class {
	case "":
		_ = c.hist.RecordValue(clampMicros(latency))
	case ClassConnectionRefused, ClassConnectionReset:
		c.connErrors++
		c.errors++
	default:
		c.errors++
	}
}

// bucket returns the figures of bucket b alone, which must be in the ring.
func (w *loadWindow) bucket(b int64) WindowStats {
	w.advance(b)
	c := &w.ring[b%int64(len(w.ring))]
	return WindowStats{
		Requests:         c.requests,
		Errors:           c.errors,
		ConnectionErrors: c.connErrors,
		P99:              time.Duration(c.hist.ValueAtQuantile(99)) * time.Microsecond,
		Seconds:          LoadBucket.Seconds(),
	}
}

// stats returns the figures of the window ending with bucket b (included):
// buckets max(0, b-width+1)..b, merging their histograms for the p99. ok is
// false when some of those buckets have already been reused, which happens
// only when completions ran more than windowSlack buckets ahead of the caller.
func (w *loadWindow) stats(b int64) (s WindowStats, ok bool) {
	w.advance(b)
	first := max(b-w.width+1, 0)
	n := int64(len(w.ring))
	if first <= w.head-n {
		return WindowStats{}, false
	}
	w.scratch.Reset()
	for i := first; i <= b; i++ {
		c := &w.ring[i%n]
		s.Requests += c.requests
		s.Errors += c.errors
		s.ConnectionErrors += c.connErrors
		w.scratch.Merge(c.hist)
	}
	s.P99 = time.Duration(w.scratch.ValueAtQuantile(99)) * time.Microsecond
	s.Seconds = float64(b-first+1) * LoadBucket.Seconds()
	return s, true
}

// clampMicros converts a latency to whole microseconds within the histograms' range.
func clampMicros(d time.Duration) int64 {
	return min(max(d.Microseconds(), histMinMicros), histMaxMicros)
}
