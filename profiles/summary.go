package profiles

import (
	"fmt"
	"math"
	"time"
)

// Summary is the resource figures of one steady window, computed by Summarize from the window's samples.
// Deltas are taken between the window's first and last samples; peaks and last values over all of them.
type Summary struct {
	// WindowSeconds is the wall time between the first and last sample, in seconds.
	WindowSeconds float64 `json:"window_seconds"`
	// Samples is the number of samples in the window.
	Samples int `json:"samples"`
	// Cores is the number of CPUs of the target machine that CPUMachinePercent is relative to.
	Cores int `json:"cores"`

	// CPUKnown is false when fewer than two samples in the window had OS CPU times; the CPU fields are 0.
	CPUKnown bool `json:"cpu_known"`
	// CPUSeconds is the process's OS user+system CPU time over the window, in seconds; the daemon divides
	// it by the requests served for CPU µs per request.
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUMachinePercent is CPUSeconds / (WindowSeconds × Cores) × 100: the share of the whole machine, as
	// Process Explorer shows it.
	CPUMachinePercent float64 `json:"cpu_machine_percent"`
	// CPUCorePercent is CPUSeconds / WindowSeconds × 100: the share of one core (up to Cores × 100).
	CPUCorePercent float64 `json:"cpu_core_percent"`

	// GCPercentKnown is false when /cpu/classes/total did not advance over the window (the runtime updates
	// the CPU classes only when a GC cycle ends); GCPercent is then 0 and means "not measured".
	GCPercentKnown bool `json:"gc_percent_known"`
	// GCPercent is Δ/cpu/classes/gc/total ÷ Δ/cpu/classes/total × 100 over the whole window: the runtime's
	// estimate of the share of available CPU spent on GC. It is never divided by OS CPU time.
	GCPercent float64 `json:"gc_percent"`
	// GCCycles is the number of GC cycles completed in the window.
	GCCycles uint64 `json:"gc_cycles"`
	// GCForcedCycles is the number of those cycles forced by the application (runtime.GC).
	GCForcedCycles uint64 `json:"gc_forced_cycles"`
	// GCAutomaticCycles is GCCycles - GCForcedCycles: the cycles the runtime started on its own because
	// the heap reached its goal, the ones the allocation pattern of the workload is responsible for.
	GCAutomaticCycles uint64 `json:"gc_automatic_cycles"`
	// GCIntervalMeanSeconds is WindowSeconds / GCCycles, the mean time between cycles; 0 when no cycle ran.
	GCIntervalMeanSeconds float64 `json:"gc_interval_mean_seconds"`
	// GCIntervalMaxSeconds is the longest span, in seconds, between two consecutive samples at which
	// /gc/cycles/total had advanced (seed 002 tracked "a GC cycle about every 20 s, then every 33 s"). A
	// cycle is only seen at the next sample, so the resolution is the sampler interval: each end of a span
	// may be late by up to one interval, and several cycles between two samples count as one. Only spans
	// bounded by two observed cycles count (the open spans at the window's edges do not); forced cycles
	// count like automatic ones. 0, with a note, when fewer than two samples saw a cycle.
	GCIntervalMaxSeconds float64 `json:"gc_interval_max_seconds"`
	// GCPauses is the number of stop-the-world GC pauses in the window (about two per cycle).
	GCPauses uint64 `json:"gc_pauses"`
	// GCPauseP50Ms is the median GC pause in milliseconds, reported as the upper boundary of the histogram
	// bucket holding it (a conservative figure; see PauseQuantile).
	GCPauseP50Ms float64 `json:"gc_pause_p50_ms"`
	// GCPauseP99Ms is the 99th percentile GC pause in milliseconds, as for GCPauseP50Ms.
	GCPauseP99Ms float64 `json:"gc_pause_p99_ms"`
	// GCPauseMaxMs is the upper boundary of the highest non-empty pause bucket, in milliseconds.
	GCPauseMaxMs float64 `json:"gc_pause_max_ms"`

	// AllocBytes is the number of bytes allocated on the heap in the window.
	AllocBytes uint64 `json:"alloc_bytes"`
	// AllocObjects is the number of heap allocations in the window.
	AllocObjects uint64 `json:"alloc_objects"`
	// AllocBytesPerSecond is AllocBytes / WindowSeconds.
	AllocBytesPerSecond float64 `json:"alloc_bytes_per_second"`
	// AllocObjectsPerSecond is AllocObjects / WindowSeconds, heap allocations per second.
	AllocObjectsPerSecond float64 `json:"alloc_objects_per_second"`

	// HeapLiveBytesMax is the largest live heap after a GC seen in the window, in bytes.
	HeapLiveBytesMax uint64 `json:"heap_live_bytes_max"`
	// HeapLiveBytesLast is the live heap after GC at the window's last sample, in bytes.
	HeapLiveBytesLast uint64 `json:"heap_live_bytes_last"`
	// HeapGoalBytesMax is the largest heap goal seen in the window, in bytes.
	HeapGoalBytesMax uint64 `json:"heap_goal_bytes_max"`
	// HeapObjectsLast is the number of heap objects at the window's last sample.
	HeapObjectsLast uint64 `json:"heap_objects_last"`
	// RSSBytesMax is the largest resident set size seen in the window, in bytes (0 when never read).
	RSSBytesMax uint64 `json:"rss_bytes_max"`
	// GoroutinesMax is the largest goroutine count seen in the window.
	GoroutinesMax uint64 `json:"goroutines_max"`
	// FDsMax is the largest open file descriptor count seen in the window, or -1 when never read.
	FDsMax int32 `json:"fds_max"`
	// ThreadsMax is the largest OS thread count seen in the window, or -1 when never read.
	ThreadsMax int32 `json:"threads_max"`

	// SamplerCostMeanUs is the mean wall time spent taking one sample, in microseconds.
	SamplerCostMeanUs float64 `json:"sampler_cost_mean_us"`
	// SamplerCorePercent is SamplerCostMeanUs over the mean spacing of the window's samples, × 100: the
	// share of one core the sampler itself took (reading costs only; storing is negligible).
	SamplerCorePercent float64 `json:"sampler_core_percent"`
	// ScrapeCostMeanUs and ScrapeCostMaxUs are the mean and largest wall time of one scrape of a target's
	// metrics endpoint (the request, the target rendering its metrics, the body read and parsed), in
	// microseconds: part of SamplerCostMeanUs, and a request the target serves beside the load. Absent for
	// the built-in target and for a target without a metrics endpoint (nothing is scraped).
	ScrapeCostMeanUs float64 `json:"scrape_cost_mean_us,omitempty"`
	ScrapeCostMaxUs  float64 `json:"scrape_cost_max_us,omitempty"`
	// ScrapeBytesMean is the mean size of a scrape's body, in bytes (after transfer decompression).
	ScrapeBytesMean float64 `json:"scrape_bytes_mean,omitempty"`
	// ScrapeCorePercent is ScrapeCostMeanUs over the mean spacing of the window's samples, × 100: the
	// share of wall time a scrape was in flight (an upper bound of the CPU it cost either side).
	ScrapeCorePercent float64 `json:"scrape_core_percent,omitempty"`
	// ScrapeLimitPercent is the share of wall time the scrape may take (0.5: the sampler lengthens its
	// interval to keep within it, up to a cap), and ScrapeOverLimit is true when ScrapeCorePercent was
	// above it even so: the window's CPU, throughput and latency figures then include the scrape's cost
	// noticeably (a note and the report's KPI section say so). Absent when nothing is scraped.
	ScrapeLimitPercent float64 `json:"scrape_limit_percent,omitempty"`
	ScrapeOverLimit    bool    `json:"scrape_over_limit,omitempty"`

	// Notes explains figures that are missing or cover less than the window.
	Notes []string `json:"notes,omitempty"`
	// NotMeasured names the figures above that were not measured, with the
	// reason: their fields are 0 and mean nothing. The keys are figures, each
	// standing for the fields derived from it: cpu_seconds (every cpu_
	// field; cpu_machine_percent alone for a service's replicas without CPU
	// limits), gc_percent, gc_cycles (and the gc_interval_ fields),
	// gc_forced_cycles (and gc_automatic_cycles), gc_pauses, gc_pause_p50_ms,
	// gc_pause_p99_ms, gc_pause_max_ms, alloc_bytes (and its rate),
	// alloc_objects (and its rate), heap_live_bytes (_max and _last),
	// heap_goal_bytes, heap_objects, rss_bytes, goroutines, fds, threads. The
	// in-process sampler measures every field (CPUKnown and GCPercentKnown
	// aside), so it leaves this empty; a target sampled from outside lacks
	// what its runtime does not expose.
	NotMeasured map[string]string `json:"not_measured,omitempty"`
}

// Summarize computes resource figures over the window between the first and last sample of ss (the steady
// window's samples, in time order; at least 2). buckets are the pause histogram boundaries matching the
// samples' GCPauses (Sampler.PauseBuckets); cores is runtime.NumCPU() of the target. It fails on fewer than
// 2 samples, times that do not strictly increase, cumulative counters that go backwards, or pause buckets
// out of range, naming the problem.
func Summarize(ss []Sample, buckets []float64, cores int) (Summary, error) {
	if len(ss) < 2 {
		return Summary{}, fmt.Errorf("cannot summarise %d samples: need at least 2", len(ss))
	}
	if cores < 1 {
		return Summary{}, fmt.Errorf("cannot summarise for %d cores: need at least 1", cores)
	}
	if err := checkSeries(ss); err != nil {
		return Summary{}, fmt.Errorf("cannot summarise samples: %w", err)
	}
	first, last := ss[0], ss[len(ss)-1]
	window := last.Time.Sub(first.Time).Seconds()
	sum := Summary{
		WindowSeconds:  window,
		Samples:        len(ss),
		Cores:          cores,
		GCCycles:       last.GCCycles - first.GCCycles,
		GCForcedCycles: last.GCForcedCycles - first.GCForcedCycles,
		AllocBytes:     last.AllocBytes - first.AllocBytes,
		AllocObjects:   last.AllocObjects - first.AllocObjects,
		FDsMax:         -1,
		ThreadsMax:     -1,
	}
	sum.AllocBytesPerSecond = float64(sum.AllocBytes) / window
	sum.AllocObjectsPerSecond = float64(sum.AllocObjects) / window
	if sum.GCForcedCycles <= sum.GCCycles { // the two counters are read together; guard a torn reading
		sum.GCAutomaticCycles = sum.GCCycles - sum.GCForcedCycles
	}
	if sum.GCCycles > 0 {
		sum.GCIntervalMeanSeconds = window / float64(sum.GCCycles)
		summarizeGCIntervalMax(&sum, ss)
	}

	if dTotal := last.RuntimeCPUSeconds - first.RuntimeCPUSeconds; dTotal > 0 {
		sum.GCPercentKnown = true
		sum.GCPercent = (last.GCCPUSeconds - first.GCCPUSeconds) / dTotal * 100
	} else {
		sum.Notes = append(sum.Notes, "gc_percent not measured: the runtime's CPU classes did not advance "+
			"in the window (they update only when a GC cycle ends)")
	}

	summarizeCPU(&sum, ss)
	if err := summarizePauses(&sum, ss, buckets); err != nil {
		return Summary{}, fmt.Errorf("cannot summarise gc pauses: %w", err)
	}

	var cost float64
	for _, s := range ss {
		cost += float64(s.CostNanoseconds)
		sum.HeapLiveBytesMax = max(sum.HeapLiveBytesMax, s.HeapLiveBytes)
		sum.HeapGoalBytesMax = max(sum.HeapGoalBytesMax, s.HeapGoalBytes)
		sum.GoroutinesMax = max(sum.GoroutinesMax, s.Goroutines)
		sum.FDsMax = max(sum.FDsMax, s.FDs)
		sum.ThreadsMax = max(sum.ThreadsMax, s.Threads)
		if !s.ProcMissing {
			sum.RSSBytesMax = max(sum.RSSBytesMax, s.RSSBytes)
		}
	}
	sum.HeapLiveBytesLast = last.HeapLiveBytes
	sum.HeapObjectsLast = last.HeapObjects
	meanCost := cost / float64(len(ss)) // nanoseconds
	sum.SamplerCostMeanUs = meanCost / 1e3
	spacing := window / float64(len(ss)-1) // seconds
	sum.SamplerCorePercent = meanCost / 1e9 / spacing * 100
	return sum, nil
}

// summarizeGCIntervalMax fills GCIntervalMaxSeconds from the samples at which the cycle count advanced
// since the previous sample, or adds a note when fewer than two did.
func summarizeGCIntervalMax(sum *Summary, ss []Sample) {
	var prev time.Time
	seen := 0
	for i := 1; i < len(ss); i++ {
		if ss[i].GCCycles == ss[i-1].GCCycles {
			continue
		}
		if seen > 0 {
			sum.GCIntervalMaxSeconds = max(sum.GCIntervalMaxSeconds, ss[i].Time.Sub(prev).Seconds())
		}
		prev = ss[i].Time
		seen++
	}
	if seen < 2 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("gc_interval_max_seconds not measured: %d sample(s) in the "+
			"window saw a gc cycle complete, need 2", seen))
	}
}

// summarizeCPU fills the OS CPU figures from the first and last samples that have OS CPU times.
func summarizeCPU(sum *Summary, ss []Sample) {
	fi, li := -1, -1
	for i, s := range ss {
		if s.ProcMissing {
			continue
		}
		if fi < 0 {
			fi = i
		}
		li = i
	}
	if fi < 0 || fi == li {
		sum.Notes = append(sum.Notes, "cpu not measured: fewer than 2 samples had os cpu times")
		return
	}
	a, b := ss[fi], ss[li]
	span := b.Time.Sub(a.Time).Seconds()
	sum.CPUKnown = true
	sum.CPUSeconds = (b.UserCPUSeconds + b.SystemCPUSeconds) - (a.UserCPUSeconds + a.SystemCPUSeconds)
	sum.CPUCorePercent = sum.CPUSeconds / span * 100
	sum.CPUMachinePercent = sum.CPUCorePercent / float64(sum.Cores)
	if fi != 0 || li != len(ss)-1 {
		sum.Notes = append(sum.Notes, fmt.Sprintf("cpu figures cover %.3f s of the %.3f s window: "+
			"os cpu times were missing at its edge", span, sum.WindowSeconds))
	}
}

// summarizePauses sums the sparse pause deltas of every sample after the first (the first sample's delta
// covers time before the window) and fills the pause count and quantiles.
func summarizePauses(sum *Summary, ss []Sample, buckets []float64) error {
	var counts []uint64
	if len(buckets) >= 2 {
		counts = make([]uint64, len(buckets)-1)
	}
	for i, s := range ss[1:] {
		for _, bc := range s.GCPauses {
			if bc.Bucket < 0 || bc.Bucket >= len(counts) {
				return fmt.Errorf("sample %d: pause bucket %d out of range [0, %d)", i+1, bc.Bucket, len(counts))
			}
			counts[bc.Bucket] += bc.Count
			sum.GCPauses += bc.Count
		}
	}
	if sum.GCPauses == 0 {
		return nil
	}
	for _, f := range []struct {
		q   float64
		dst *float64
	}{{0.5, &sum.GCPauseP50Ms}, {0.99, &sum.GCPauseP99Ms}, {1, &sum.GCPauseMaxMs}} {
		v, err := PauseQuantile(buckets, counts, f.q)
		if err != nil {
			return err
		}
		*f.dst = v * 1e3
	}
	return nil
}

// checkSeries verifies that times strictly increase and that no cumulative counter goes backwards.
func checkSeries(ss []Sample) error {
	lastProc := -1 // index of the previous sample with OS CPU times
	for i, s := range ss {
		if !s.ProcMissing {
			if lastProc >= 0 {
				p := ss[lastProc]
				if err := notBackwards(i, "user_cpu_seconds", p.UserCPUSeconds, s.UserCPUSeconds); err != nil {
					return err
				}
				if err := notBackwards(i, "system_cpu_seconds", p.SystemCPUSeconds, s.SystemCPUSeconds); err != nil {
					return err
				}
			}
			lastProc = i
		}
		if i == 0 {
			continue
		}
		p := ss[i-1]
		if !s.Time.After(p.Time) {
			return fmt.Errorf("sample %d: time %s is not after the previous sample's %s",
				i, s.Time.Format("15:04:05.000000000"), p.Time.Format("15:04:05.000000000"))
		}
		for _, c := range []struct {
			name      string
			prev, cur float64
		}{
			{"gc_cpu_seconds", p.GCCPUSeconds, s.GCCPUSeconds},
			{"runtime_cpu_seconds", p.RuntimeCPUSeconds, s.RuntimeCPUSeconds},
		} {
			if err := notBackwards(i, c.name, c.prev, c.cur); err != nil {
				return err
			}
		}
		for _, c := range []struct {
			name      string
			prev, cur uint64
		}{
			{"gc_cycles", p.GCCycles, s.GCCycles},
			{"gc_forced_cycles", p.GCForcedCycles, s.GCForcedCycles},
			{"alloc_bytes", p.AllocBytes, s.AllocBytes},
			{"alloc_objects", p.AllocObjects, s.AllocObjects},
		} {
			if err := notBackwards(i, c.name, c.prev, c.cur); err != nil {
				return err
			}
		}
	}
	return nil
}

func notBackwards[T uint64 | float64](i int, name string, prev, cur T) error {
	if cur < prev {
		return fmt.Errorf("sample %d: %s went backwards (%v -> %v)", i, name, prev, cur)
	}
	return nil
}

// PauseQuantile returns the q-th quantile (0 <= q <= 1) of a histogram, in the buckets' unit. buckets are
// the len(counts)+1 boundaries: bucket i spans [buckets[i], buckets[i+1]). It finds the bucket holding
// observation ceil(q × total) (at least the first) and returns that bucket's upper boundary, so the figure
// never understates a pause; when the upper boundary is +Inf it returns the lower one. q = 1 gives the
// upper boundary of the highest non-empty bucket (the maximum). An empty histogram gives 0.
func PauseQuantile(buckets []float64, counts []uint64, q float64) (float64, error) {
	if len(buckets) != len(counts)+1 {
		return 0, fmt.Errorf("cannot take quantile: %d boundaries for %d buckets, want %d",
			len(buckets), len(counts), len(counts)+1)
	}
	if !(q >= 0 && q <= 1) { // also rejects NaN
		return 0, fmt.Errorf("cannot take quantile %v: want 0 <= q <= 1", q)
	}
	var total uint64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return 0, nil
	}
	rank := min(max(uint64(math.Ceil(q*float64(total))), 1), total)
	var cum uint64
	for i, c := range counts {
		cum += c
		if cum < rank {
			continue
		}
		if upper := buckets[i+1]; !math.IsInf(upper, 0) {
			return upper, nil
		}
		if lower := buckets[i]; !math.IsInf(lower, 0) {
			return lower, nil
		}
		return 0, fmt.Errorf("cannot take quantile %v: bucket %d has no finite boundary", q, i)
	}
	return 0, fmt.Errorf("cannot take quantile %v: rank %d not reached (total %d)", q, rank, total) // unreachable
}
