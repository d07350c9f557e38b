package extsample

import (
	"fmt"
	"math"
	"strings"

	"github.com/soakd/soakd/profiles"
)

// PauseHistogram is a target's cumulative histogram of stop-the-world GC
// pauses as its Prometheus endpoint gives it (client_golang's Go collector
// publishes runtime/metrics /sched/pauses/total/gc:seconds, and the older
// /gc/pauses:seconds, as histograms).
type PauseHistogram struct {
	// Series is the histogram family read, e.g. go_sched_pauses_total_gc_seconds.
	Series string `json:"series"`
	// UpperBounds are the finite bucket bounds (le), in seconds, increasing.
	UpperBounds []float64 `json:"upper_bounds"`
	// Cumulative[i] is the count of pauses at most UpperBounds[i] since the
	// process started.
	Cumulative []uint64 `json:"cumulative"`
	// Count is every pause since the process started (the +Inf bucket).
	Count uint64 `json:"count"`
}

// goPauseSeries are the names client_golang gives the Go runtime's pause
// histograms, newest first: /sched/pauses/total/gc:seconds (Go 1.22+), and
// /gc/pauses:seconds (deprecated), named with and without _total across
// client_golang versions.
var goPauseSeries = []string{"go_sched_pauses_total_gc_seconds", "go_gc_pauses_seconds", "go_gc_pauses_seconds_total"}

// readPauses returns the first of series that e holds as a histogram.
func readPauses(e Exposition, series ...string) *PauseHistogram {
	for _, name := range series {
		mf, ok := e[name]
		if !ok || len(mf.GetMetric()) != 1 || mf.GetMetric()[0].GetHistogram() == nil {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		p := &PauseHistogram{Series: name, Count: h.GetSampleCount()}
		for _, b := range h.GetBucket() {
			if math.IsInf(b.GetUpperBound(), 1) {
				continue
			}
			p.UpperBounds = append(p.UpperBounds, b.GetUpperBound())
			p.Cumulative = append(p.Cumulative, b.GetCumulativeCount())
		}
		return p
	}
	return nil
}

// PausesMissing says why a runtime's pause quantiles are not measured:
// which series was looked for, or that the runtime's standard series have
// no pause histogram.
func PausesMissing(rt Runtime) string {
	if rt == RuntimeGo {
		return "the target exposes none of " + strings.Join(goPauseSeries, ", ") +
			" (client_golang's Go collector publishes them with runtime/metrics collection: collectors.WithGoCollectorRuntimeMetrics)"
	}
	return fmt.Sprintf("the %s runtime's standard Prometheus series have no GC pause histogram (pause totals at best)", rt)
}

// PausesBetween differences two cumulative pause histograms: the pauses
// between the samples, as the boundaries and per-bucket counts
// profiles.PauseQuantile reads (seconds). It fails when the buckets differ
// or a count went backwards (a restarted target).
func PausesBetween(a, b *PauseHistogram) (bounds []float64, counts []uint64, err error) {
	if a == nil || b == nil {
		return nil, nil, fmt.Errorf("no pause histogram at one end of the window")
	}
	if a.Series != b.Series || len(a.UpperBounds) != len(b.UpperBounds) {
		return nil, nil, fmt.Errorf("the pause histogram changed buckets within the window")
	}
	if b.Count < a.Count {
		return nil, nil, fmt.Errorf("%s: count went backwards (%d -> %d)", b.Series, a.Count, b.Count)
	}
	bounds = append([]float64{0}, b.UpperBounds...)
	bounds = append(bounds, math.Inf(1))
	var prev uint64
	for i := range b.UpperBounds {
		if a.UpperBounds[i] != b.UpperBounds[i] {
			return nil, nil, fmt.Errorf("the pause histogram changed buckets within the window")
		}
		if b.Cumulative[i] < a.Cumulative[i] {
			return nil, nil, fmt.Errorf("%s: bucket le=%g went backwards", b.Series, b.UpperBounds[i])
		}
		d := b.Cumulative[i] - a.Cumulative[i]
		if d < prev {
			return nil, nil, fmt.Errorf("%s: buckets are not cumulative", b.Series)
		}
		counts, prev = append(counts, d-prev), d
	}
	total := b.Count - a.Count
	if total < prev {
		return nil, nil, fmt.Errorf("%s: count below its last bucket", b.Series)
	}
	return bounds, append(counts, total-prev), nil
}

// summarizePauses fills the pause figures of sum from the window's end
// samples, or names why they are not measured.
func summarizePauses(sum *profiles.Summary, first, last Sample, miss func(key, why string)) {
	keys := []string{"gc_pauses", "gc_pause_p50_ms", "gc_pause_p99_ms", "gc_pause_max_ms"}
	why := ""
	switch {
	case last.Runtime.GCPauses == nil:
		why = PausesMissing(last.Runtime.Runtime)
	default:
		bounds, counts, err := PausesBetween(first.Runtime.GCPauses, last.Runtime.GCPauses)
		if err != nil {
			why = err.Error()
			break
		}
		for _, c := range counts {
			sum.GCPauses += c
		}
		if sum.GCPauses == 0 {
			why = "no GC pause in the window (" + last.Runtime.GCPauses.Series + " did not advance)"
			break
		}
		for _, f := range []struct {
			q   float64
			dst *float64
		}{{0.5, &sum.GCPauseP50Ms}, {0.99, &sum.GCPauseP99Ms}, {1, &sum.GCPauseMaxMs}} {
			v, err := profiles.PauseQuantile(bounds, counts, f.q)
			if err != nil {
				why = err.Error()
				break
			}
			*f.dst = v * 1e3
		}
		if why != "" {
			sum.GCPauses, sum.GCPauseP50Ms, sum.GCPauseP99Ms, sum.GCPauseMaxMs = 0, 0, 0, 0
		}
		keys = keys[1:] // the count of pauses is measured, even when no quantile is
		if why == "" {
			return
		}
	}
	for _, k := range keys {
		miss(k, why)
	}
}
