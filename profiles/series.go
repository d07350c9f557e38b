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
