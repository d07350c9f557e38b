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
}

// Add records one progress report.
func (r *SeriesRecorder) Add(p workloads.Progress) {
	if r.stride == 0 {
		r.stride = 1
	}
	if r.skipped++; r.skipped < r.stride {
		return
	}
	r.skipped = 0
	if len(r.s.TSeconds) == MaxDriverSeriesPoints {
		r.halve()
	}
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
	r.stride *= 2
}

// Series returns the recorded series, nil when no report came; Dropped is
// left out when no arrival was dropped.
func (r *SeriesRecorder) Series() *DriverSeries {
	if len(r.s.TSeconds) == 0 {
		return nil
	}
	s := r.s
	if !r.dropped {
		s.Dropped = nil
	}
	return &s
}
