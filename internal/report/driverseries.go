package report

import (
	"math"

	"github.com/soakd/soakd/workloads"
)

// MaxDriverSeriesPoints caps a phase's DriverSeries: 30 minutes at the
// driver's one report a second, about 50 KiB of report.json. A longer phase
// keeps every second report, then every fourth, and so on: the counters are
// cumulative, so a coarser series still adds up to every request.
const MaxDriverSeriesPoints = 1800

// DriverSeries is a phase's driver progress over time, one point per
// progress report the driver sent (about one a second), in columns so that
// report.json stays small and a chart reads it directly. Requests, Errors
// and Dropped are cumulative since the phase start: the rate between two
// points is their difference over the time between them, whatever the
// spacing.
//
// The latency columns describe each point's span instead: the successful
// requests completed since the previous point (the first point: since the
// phase start). A point that stands for one report holds that report's
// interval figures. A point that stands for several (a phase longer than
// MaxDriverSeriesPoints reports) holds their summed count, the largest of
// their maxima (the span's max, exactly) and the largest of their
// percentiles: the reports carry percentiles, not histograms, so the
// span's own percentile cannot be computed, but it is at most that (no
// distribution's p99 exceeds the largest p99 of the parts it is made of),
// and a slow second in the span stays visible.
type DriverSeries struct {
	// TSeconds is each point's time since the phase start, in seconds
	// (rounded to the millisecond).
	TSeconds []float64 `json:"t_seconds"`
	// Requests is the number of requests completed so far (count).
	Requests []int64 `json:"requests"`
	// Errors is the number of failed requests so far (count).
	Errors []int64 `json:"errors"`
	// ActiveUsers is the number of users started and not yet finished at
	// the point; in the open model, the requests in flight (count).
	ActiveUsers []int64 `json:"active_users"`
	// Dropped is, in the open model, the arrivals not sent so far because
	// max_in_flight requests were in flight (count); nil in other models.
	Dropped []int64 `json:"dropped,omitempty"`
	// LatencyCount is the number of successful requests completed in each
	// point's span (count): those LatencyP50Ms … LatencyMaxMs describe.
	// The latency columns are nil when no point has a successful request
	// (or the driver sent no latency).
	LatencyCount []int64 `json:"latency_count,omitempty"`
	// LatencyP50Ms is the median latency of each point's span, in ms; an
	// upper bound when the point stands for several reports; null when
	// LatencyCount is 0.
	LatencyP50Ms []*float64 `json:"latency_p50_ms,omitempty"`
	// LatencyP90Ms is the 90th percentile, as LatencyP50Ms, in ms.
	LatencyP90Ms []*float64 `json:"latency_p90_ms,omitempty"`
	// LatencyP99Ms is the 99th percentile, as LatencyP50Ms, in ms.
	LatencyP99Ms []*float64 `json:"latency_p99_ms,omitempty"`
	// LatencyMaxMs is the largest latency of each point's span, in ms;
	// null when LatencyCount is 0.
	LatencyMaxMs []*float64 `json:"latency_max_ms,omitempty"`
}

// SeriesRecorder builds a DriverSeries from the driver's progress reports,
// keeping at most MaxDriverSeriesPoints: when full it drops every other
// point and from then on keeps one report in twice as many. The zero value
// is ready to use; it is not safe for concurrent use.
type SeriesRecorder struct {
	s       DriverSeries
	stride  int // keep one report in stride
	skipped int // reports skipped since the last one kept
	dropped bool
	// lat is each point's latency (Count 0: none), pending that of the
	// reports since the last point kept, which the next point takes.
	lat     []workloads.IntervalLatency
	pending workloads.IntervalLatency
	timed   bool // some point has latency
}

// Add records one progress report.
func (r *SeriesRecorder) Add(p workloads.Progress) {
	if r.stride == 0 {
		r.stride = 1
	}
	if l := p.IntervalLatency; l != nil {
		r.pending = mergeLatency(r.pending, *l)
	}
	if r.skipped++; r.skipped < r.stride {
		return
	}
	r.skipped = 0
	if len(r.s.TSeconds) == MaxDriverSeriesPoints {
		r.halve()
	}
	r.lat = append(r.lat, r.pending)
	r.timed = r.timed || r.pending.Count > 0
	r.pending = workloads.IntervalLatency{}
	r.s.TSeconds = append(r.s.TSeconds, math.Round(p.ElapsedSeconds*1000)/1000)
	r.s.Requests = append(r.s.Requests, p.Requests)
	r.s.Errors = append(r.s.Errors, p.Errors)
	r.s.ActiveUsers = append(r.s.ActiveUsers, p.ActiveUsers)
	r.s.Dropped = append(r.s.Dropped, p.Dropped)
	r.dropped = r.dropped || p.Dropped > 0
}

// halve keeps every other point, those a whole stride before the point
// being added (so the spacing stays even), and doubles the stride.
func (r *SeriesRecorder) halve() {
	s := &r.s
	keep := func(v []int64) []int64 {
		out := v[:0]
		for i := len(v) % 2; i < len(v); i += 2 {
			out = append(out, v[i])
		}
		return out
	}
	t := s.TSeconds[:0]
	for i := len(s.TSeconds) % 2; i < len(s.TSeconds); i += 2 {
		t = append(t, s.TSeconds[i])
	}
	s.TSeconds = t
	s.Requests, s.Errors, s.ActiveUsers, s.Dropped = keep(s.Requests), keep(s.Errors), keep(s.ActiveUsers), keep(s.Dropped)
	// A point left out passes its span's latency to the next point: the
	// one kept after it, or, for the last (always left out), the point
	// being added.
	r.pending = mergeLatency(r.pending, r.lat[len(r.lat)-1])
	lat := r.lat[:0]
	for i := len(r.lat) % 2; i < len(r.lat); i += 2 {
		l := r.lat[i]
		if i > 0 {
			l = mergeLatency(r.lat[i-1], l)
		}
		lat = append(lat, l)
	}
	r.lat = lat
	r.stride *= 2
}

// mergeLatency is the latency of two spans together: counts add, and each
// figure is the larger of the two, which for the maximum is exact and for
// a percentile an upper bound (see DriverSeries). A span without a
// successful request (Count 0) adds nothing.
func mergeLatency(a, b workloads.IntervalLatency) workloads.IntervalLatency {
	switch {
	case a.Count == 0:
		return b
	case b.Count == 0:
		return a
	}
	return workloads.IntervalLatency{
		Count: a.Count + b.Count,
		P50Ms: max(a.P50Ms, b.P50Ms),
		P90Ms: max(a.P90Ms, b.P90Ms),
		P99Ms: max(a.P99Ms, b.P99Ms),
		MaxMs: max(a.MaxMs, b.MaxMs),
	}
}

// Series returns the recorded series, nil when no report came; Dropped is
// left out when no arrival was dropped, the latency columns when no point
// has a successful request.
func (r *SeriesRecorder) Series() *DriverSeries {
	if len(r.s.TSeconds) == 0 {
		return nil
	}
	s := r.s
	if !r.dropped {
		s.Dropped = nil
	}
	if r.timed {
		n := len(r.lat)
		s.LatencyCount = make([]int64, n)
		s.LatencyP50Ms, s.LatencyP90Ms, s.LatencyP99Ms, s.LatencyMaxMs = make([]*float64, n), make([]*float64, n), make([]*float64, n), make([]*float64, n)
		for i, l := range r.lat {
			s.LatencyCount[i] = l.Count
			if l.Count == 0 {
				continue // null: no request succeeded in the span
			}
			s.LatencyP50Ms[i], s.LatencyP90Ms[i], s.LatencyP99Ms[i], s.LatencyMaxMs[i] = &l.P50Ms, &l.P90Ms, &l.P99Ms, &l.MaxMs
		}
	}
	return &s
}
