package profiles

import "time"

// Point is one value of a time series derived from samples, such as the live heap after a GC cycle or an
// allocation rate. It is plain data for reports and charts.
type Point struct {
	// T is when the value was observed: the time of the sample that completes it.
	T time.Time `json:"t"`
	// V is the value, in the unit of the function that produced the series.
	V float64 `json:"v"`
}

// LiveHeapAfterGC returns the live heap left by the GC cycles in ss (samples in time order), in bytes: one
// point at each sample whose GCCycles advanced since the previous sample, with that sample's HeapLiveBytes
// (/gc/heap/live:bytes, the bytes the last completed cycle marked live). This is what survives a cycle, the
// honest analogue of what .NET promotes to older generations; its trend across cycles is the leak test.
// The first sample gives no point (its previous sample is unknown), nor does a sample whose cycle count did
// not advance. When several cycles ended between two samples only the last one's live heap is seen, and a
// point's time is up to one sampler interval after its cycle ended.
func LiveHeapAfterGC(ss []Sample) []Point {
	var out []Point
	for i := 1; i < len(ss); i++ {
		if ss[i].GCCycles > ss[i-1].GCCycles {
			out = append(out, Point{T: ss[i].Time, V: float64(ss[i].HeapLiveBytes)})
		}
	}
	return out
}

// AllocRates returns the heap allocation rate of ss (samples in time order), in bytes per second, over
// consecutive windows of at least window: the first window starts at the first sample and ends at the
// first later sample at least window after it, where the next window starts, and so on. Each point is
// Δ/gc/heap/allocs:bytes ÷ the window's exact duration, stamped with the window's end, so no value is
// interpolated between samples; windows may exceed window by up to one sampler interval. The last partial
// window (shorter than window) is dropped, as is a window over which the counter went backwards. It
// returns nil when window is not positive or no window completes. A single window much above the median
// is an allocation spike (see kpi.MemoryVerdict).
func AllocRates(ss []Sample, window time.Duration) []Point {
	if window <= 0 {
		return nil
	}
	var out []Point
	start := 0
	for i := 1; i < len(ss); i++ {
		d := ss[i].Time.Sub(ss[start].Time)
		if d < window {
			continue
		}
		if a, b := ss[start].AllocBytes, ss[i].AllocBytes; b >= a {
			out = append(out, Point{T: ss[i].Time, V: float64(b-a) / d.Seconds()})
		}
		start = i
	}
	return out
}

const (
	// CPUTick is the resolution of the OS CPU times in a Sample: Linux reports a process's user and system
	// time in USER_HZ clock ticks, and USER_HZ is 100, so each counter moves in steps of 10 ms. A rate of
	// CPU time taken over a wall interval close to one tick is mostly quantisation: two samples 2.9 ms
	// apart see either no step (0 %) or a whole 10 ms step (345 % of one core).
	CPUTick = 10 * time.Millisecond
	// MinRateWindow is the shortest window Rates computes a rate over: 10 CPU ticks. Over a window of w
	// on c cores the tick quantisation of the CPU share is at most 2 × CPUTick ÷ (w × c), 20 points on
	// one core at this minimum and 2 points over a 1 s window.
	MinRateWindow = 10 * CPUTick
)

// RatePoint is the CPU share of the machine and the heap allocation rate over one window of samples,
// both computed from the cumulative counters of the two samples that bound the window. It is plain data
// for reports and charts.
type RatePoint struct {
	// Start is the time of the sample that opens the window.
	Start time.Time `json:"start"`
	// End is the time of the sample that closes the window, the time a chart plots the point at.
	End time.Time `json:"end"`
	// CPUKnown is false when the CPU share of this window is unknown: a bounding sample lacks the OS CPU
	// times (ProcMissing), the core count is unknown, or the share was a data error (see Rates).
	CPUKnown bool `json:"cpu_known"`
	// CPUMachinePercent is Δ(UserCPUSeconds + SystemCPUSeconds) ÷ (Δwall × cores) × 100: the share of
	// every core of the machine the process kept busy over the window, in percent (0 to 100). It is 0
	// when CPUKnown is false.
	CPUMachinePercent float64 `json:"cpu_machine_percent"`
	// AllocBytesPerSecond is Δ/gc/heap/allocs:bytes ÷ Δwall: the bytes allocated on the heap per second
	// of the window.
	AllocBytesPerSecond float64 `json:"alloc_bytes_per_second"`
}

// RateWindow returns the minimum window to pass to Rates for samples taken every interval: the interval
// less a quarter, but at least MinRateWindow, rounded up to a whole number of CPU ticks. The quarter is
// slack for scheduling: periodic samples land a little late by varying amounts, so about every other one
// is slightly less than interval after its predecessor, and a minimum of exactly interval would stretch
// those windows to two intervals. Extra samples (such as those taken at phase edges, which can be
// milliseconds apart) are still folded into a window of about one interval. A non-positive interval gives
// MinRateWindow.
func RateWindow(interval time.Duration) time.Duration {
	w := max(interval-interval/4, MinRateWindow)
	return (w + CPUTick - 1) / CPUTick * CPUTick
}

// Rates returns the CPU share of the machine and the heap allocation rate of ss (samples in time order)
// over consecutive windows, one RatePoint per window. The first window starts at the first sample and
// closes at the first later sample at least minWindow after it, which starts the next window, and so on;
// the last, partial window is dropped. minWindow below MinRateWindow is raised to it: over a shorter
// window the 10 ms steps of the OS CPU counters would dominate the share (see CPUTick). Pass RateWindow of
// the sampler interval. cores is the number of cores of the machine.
//
// Both rates are differences of the cumulative counters at the window's two ends divided by the window's
// exact duration, never sums of per-sample increments, so no value is interpolated between samples and
// windows may exceed minWindow by up to one sampler interval.
//
// A window over which AllocBytes or the OS CPU time (user + system) went backwards, between any two of its
// samples, is dropped: the samples came from two processes. The next window starts at its end, so a
// dropped window shows as a gap between one point's End and the next point's Start.
//
// The CPU share of a window is unknown (CPUKnown false) when either bounding sample has ProcMissing set
// or cores is less than 1. The process cannot use more than every core, but each of the user and system
// counters is truncated to a whole tick when read, and the OS times are read up to CostNanoseconds after
// a sample's Time, so a window can read up to 2 ticks plus the closing sample's cost above Δwall × cores.
// A share above 100 % within that allowance is reported as 100 %, the most the machine can give; a share
// beyond it is not quantisation but a data error (a wrong core count, a counter from another process), and
// the window's CPU share is left unknown rather than clamped.
//
// Rates returns nil when fewer than two samples or no complete window are given.
func Rates(ss []Sample, cores int, minWindow time.Duration) []RatePoint {
	minWindow = max(minWindow, MinRateWindow)
	var out []RatePoint
	start, lastOS := 0, -1 // lastOS: the window's latest sample with OS times
	if len(ss) > 0 && !ss[0].ProcMissing {
		lastOS = 0
	}
	backwards := false
	for i := 1; i < len(ss); i++ {
		b := &ss[i]
		backwards = backwards || b.AllocBytes < ss[i-1].AllocBytes
		if !b.ProcMissing {
			if lastOS >= 0 && osCPUSeconds(b) < osCPUSeconds(&ss[lastOS]) {
				backwards = true
			}
			lastOS = i
		}
		a := &ss[start]
		d := b.Time.Sub(a.Time)
		if d < minWindow {
			continue
		}
		drop := backwards
		start, backwards = i, false
		if b.ProcMissing {
			lastOS = -1
		}
		if drop {
			continue
		}
		p := RatePoint{Start: a.Time, End: b.Time, AllocBytesPerSecond: float64(b.AllocBytes-a.AllocBytes) / d.Seconds()}
		if !a.ProcMissing && !b.ProcMissing && cores >= 1 {
			cpu := osCPUSeconds(b) - osCPUSeconds(a)
			capacity := d.Seconds() * float64(cores)
			allowance := (2 * CPUTick).Seconds() + time.Duration(max(b.CostNanoseconds, 0)).Seconds()*float64(cores)
			switch {
			case cpu <= capacity:
				p.CPUKnown, p.CPUMachinePercent = true, cpu/capacity*100
			case cpu <= capacity+allowance:
				p.CPUKnown, p.CPUMachinePercent = true, 100
			}
		}
		out = append(out, p)
	}
	return out
}

// osCPUSeconds is the OS CPU time of s: user + system seconds.
func osCPUSeconds(s *Sample) float64 { return s.UserCPUSeconds + s.SystemCPUSeconds }
