package extsample

import (
	"errors"
	"fmt"
	"time"
)

// Sample is one reading of the target: the OS's view by PID and the runtime's figures from one scrape of its
// endpoint. Counters are cumulative; Between differences two samples over a window. It is plain data.
type Sample struct {
	// Time is when the reading started.
	Time time.Time `json:"time"`
	// PID is the process the OS figures are of (0 when none was given).
	PID int32 `json:"pid,omitempty"`
	// Endpoint is the URL scraped ("" when none was given).
	Endpoint string `json:"endpoint,omitempty"`
	// Replicas is the number of a service's replicas the sample sums
	// (SumReplicas); 0 for a sample of one process.
	Replicas int `json:"replicas,omitempty"`
	// OS is the operating system's view of the process.
	OS OSFigures `json:"os"`
	// Runtime is the runtime's figures from the endpoint.
	Runtime RuntimeFigures `json:"runtime"`
	// Error describes every part of the reading that failed ("" when none did); the failed figures are not
	// measured with the same text as reason.
	Error string `json:"error,omitempty"`
	// CostNanoseconds is the wall time the reading took (the OS reads and the scrape), in nanoseconds.
	CostNanoseconds int64 `json:"cost_ns"`
	// ScrapeNanoseconds is the wall time of the scrape alone (request, the target rendering its metrics,
	// the body read and parsed), in nanoseconds; 0 when no endpoint was given.
	ScrapeNanoseconds int64 `json:"scrape_ns,omitempty"`
	// ScrapeBytes is the size of the scrape's body, in bytes (after transfer decompression); 0 when no
	// endpoint was given or no body was read.
	ScrapeBytes int64 `json:"scrape_bytes,omitempty"`
}

// Window is the figures of the span between two samples: differences of counters, rates, and the gauges of
// the later sample. Every figure is not measured, with the reason, when either sample lacks it or a counter
// went backwards.
type Window struct {
	// Start and End are the two samples' times.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Seconds is the wall time between them.
	Seconds float64 `json:"seconds"`
	// Cores is the machine's CPU count that CPUMachinePercent is relative to.
	Cores int `json:"cores"`
	// Runtime is the later sample's runtime.
	Runtime Runtime `json:"runtime"`

	// CPUSeconds is the user+system CPU time the process used in the window, from the OS.
	CPUSeconds Figure `json:"cpu_seconds"`
	// CPUMachinePercent is CPUSeconds ÷ (Seconds × Cores) × 100: the share of the whole machine.
	CPUMachinePercent Figure `json:"cpu_machine_percent"`
	// CPUCorePercent is CPUSeconds ÷ Seconds × 100: the share of one core (up to Cores × 100).
	CPUCorePercent Figure `json:"cpu_core_percent"`
	// CPUCrossCheck, when set, says that CPUSeconds and the target's own process_cpu_seconds_total over the
	// same samples disagree, by how much, and what that may mean (see CPUCrossCheck); "" when they agree or
	// the target does not export the counter.
	CPUCrossCheck string `json:"cpu_cross_check,omitempty"`

	// GCPercent is the share of time spent in GC: of the runtime's available CPU time where the runtime gives
	// it (Go with runtime/metrics), of wall time otherwise. Its Definition says which.
	GCPercent Figure `json:"gc_percent"`
	// GCCycles is the number of collections completed in the window.
	GCCycles Figure `json:"gc_cycles"`
	// GCKinds splits GCCycles (and the GC time, where given) by generation, collector, kind or trigger.
	GCKinds []KindFigures `json:"gc_kinds,omitempty"`
	// AllocBytes is the number of bytes allocated in the window.
	AllocBytes Figure `json:"alloc_bytes"`
	// AllocBytesPerSecond is AllocBytes ÷ Seconds.
	AllocBytesPerSecond Figure `json:"alloc_bytes_per_second"`

	// HeapLiveBytes, HeapUsedBytes, RSSBytes, Threads and FDs are the later sample's gauges.
	HeapLiveBytes Figure `json:"heap_live_bytes"`
	HeapUsedBytes Figure `json:"heap_used_bytes"`
	RSSBytes      Figure `json:"rss_bytes"`
	Threads       Figure `json:"threads"`
	FDs           Figure `json:"fds"`
	// Extra is the later sample's runtime-specific figures.
	Extra []Figure `json:"extra,omitempty"`
}

// Between computes the figures of the window from first to last, two samples of the same target; cores is the
// machine's CPU count (runtime.NumCPU() of the machine running both). It fails only when last is not after
// first or cores is below 1: a figure that cannot be computed is not measured, with the reason.
func Between(first, last Sample, cores int) (Window, error) {
	if !last.Time.After(first.Time) {
		return Window{}, fmt.Errorf("cannot compute a window from %s to %s: the end must be after the start",
			first.Time.Format(time.RFC3339Nano), last.Time.Format(time.RFC3339Nano))
	}
	if cores < 1 {
		return Window{}, errors.New("cannot compute a window for fewer than 1 core")
	}
	secs := last.Time.Sub(first.Time).Seconds()
	w := Window{
		Start: first.Time, End: last.Time, Seconds: secs, Cores: cores, Runtime: last.Runtime.Runtime,
		HeapLiveBytes: atEnd(last.Runtime.HeapLiveBytes),
		HeapUsedBytes: atEnd(last.Runtime.HeapUsedBytes),
		RSSBytes:      atEnd(last.OS.RSSBytes),
		Threads:       atEnd(last.OS.Threads),
		FDs:           atEnd(last.OS.FDs),
	}
	for _, x := range last.Runtime.Extra {
		w.Extra = append(w.Extra, atEnd(x))
	}

	// CPU, from the OS.
	const cpuDef = "user+system CPU seconds the process used in the window, from the OS"
	user := delta("user_cpu_seconds", "seconds", first.OS.UserCPUSeconds, last.OS.UserCPUSeconds)
	sys := delta("system_cpu_seconds", "seconds", first.OS.SystemCPUSeconds, last.OS.SystemCPUSeconds)
	self := delta("cpu_seconds", "seconds", first.ExtraFigure(selfCPUFigure), last.ExtraFigure(selfCPUFigure))
	switch {
	case first.Replicas > 0 && last.Replicas > 0 && self.Measured:
		// No process to read (a service's replicas, SumReplicas): the
		// target's own count of its CPU is the figure.
		w.CPUSeconds = measured("cpu_seconds", "seconds", self.Source, "user+system CPU seconds the target counted for itself in the window ("+selfCPUSeries+")", self.Value)
	case first.Replicas > 0 && last.Replicas > 0:
		w.CPUSeconds = notMeasured("cpu_seconds", "seconds", self.Source, cpuDef, "no process to read by PID, and the target's own "+selfCPUSeries+": "+self.Reason)
	case first.PID != last.PID:
		w.CPUSeconds = notMeasured("cpu_seconds", "seconds", last.OS.UserCPUSeconds.Source, cpuDef,
			fmt.Sprintf("the window's samples are of different processes (pid %d, pid %d)", first.PID, last.PID))
	case !user.Measured:
		w.CPUSeconds = notMeasured("cpu_seconds", "seconds", user.Source, cpuDef, user.Reason)
	case !sys.Measured:
		w.CPUSeconds = notMeasured("cpu_seconds", "seconds", sys.Source, cpuDef, sys.Reason)
	default:
		w.CPUSeconds = measured("cpu_seconds", "seconds", user.Source, cpuDef, user.Value+sys.Value)
	}
	machineDef := fmt.Sprintf("CPU seconds ÷ (window seconds × %d cores) × 100: the share of the whole machine", cores)
	coreDef := fmt.Sprintf("CPU seconds ÷ window seconds × 100: the share of one core (up to %d)", cores*100)
	if w.CPUSeconds.Measured {
		w.CPUMachinePercent = measured("cpu_machine_percent", "percent", w.CPUSeconds.Source, machineDef, w.CPUSeconds.Value/(secs*float64(cores))*100)
		w.CPUCorePercent = measured("cpu_core_percent", "percent", w.CPUSeconds.Source, coreDef, w.CPUSeconds.Value/secs*100)
	} else {
		w.CPUMachinePercent = notMeasured("cpu_machine_percent", "percent", w.CPUSeconds.Source, machineDef, w.CPUSeconds.Reason)
		w.CPUCorePercent = notMeasured("cpu_core_percent", "percent", w.CPUSeconds.Source, coreDef, w.CPUSeconds.Reason)
	}

	w.CPUCrossCheck = CPUCrossCheck(first, last, w.CPUSeconds)

	// GC.
	w.GCCycles = delta("gc_cycles", "count", first.Runtime.GCCycles, last.Runtime.GCCycles)
	w.GCPercent = gcPercent(first.Runtime, last.Runtime, secs)
	w.GCKinds = kindDeltas(first.Runtime, last.Runtime)

	// Allocation.
	w.AllocBytes = delta("alloc_bytes", "bytes", first.Runtime.AllocBytes, last.Runtime.AllocBytes)
	rateDef := "bytes allocated in the window ÷ window seconds"
	if w.AllocBytes.Measured {
		w.AllocBytesPerSecond = measured("alloc_bytes_per_second", "bytes/s", w.AllocBytes.Source, rateDef, w.AllocBytes.Value/secs)
	} else {
		w.AllocBytesPerSecond = notMeasured("alloc_bytes_per_second", "bytes/s", w.AllocBytes.Source, rateDef, w.AllocBytes.Reason)
	}
	return w, nil
}

// atEnd returns a gauge as the window's figure: the later sample's value.
func atEnd(f Figure) Figure {
	f.Definition = "at the window's end: " + f.Definition
	return f
}

// delta returns the change of a cumulative counter from a to b, named name. It is not measured when either
// reading is, when the two were read from different sources, or when the counter went backwards.
func delta(name, unit string, a, b Figure) Figure {
	def := "change over the window of: " + b.Definition
	switch {
	case !a.Measured:
		return notMeasured(name, unit, b.Source, def, "at the window's start: "+a.Reason)
	case !b.Measured:
		return notMeasured(name, unit, b.Source, def, "at the window's end: "+b.Reason)
	case a.Source != b.Source:
		return notMeasured(name, unit, b.Source, def,
			fmt.Sprintf("the window's samples read different sources (%s, then %s)", a.Source, b.Source))
	case b.Value < a.Value:
		return notMeasured(name, unit, b.Source, def,
			fmt.Sprintf("the counter went backwards from %s to %s: the target restarted or reset its metrics",
				formatFloat(a.Value), formatFloat(b.Value)))
	}
	return measured(name, unit, b.Source, def, b.Value-a.Value)
}

// gcPercent is the GC time share over the window: over the runtime's available CPU time when both samples
// give it, over wall time otherwise.
func gcPercent(a, b RuntimeFigures, secs float64) Figure {
	gc := delta("gc_seconds", "seconds", a.GCSeconds, b.GCSeconds)
	if b.RuntimeCPUSeconds.Measured {
		def := "GC CPU seconds ÷ CPU seconds available to the runtime × 100, both differenced over the window: the runtime's estimate of its CPU share spent on GC (" + b.GCSeconds.Definition + ")"
		rt := delta("runtime_cpu_seconds", "seconds", a.RuntimeCPUSeconds, b.RuntimeCPUSeconds)
		src := gc.Source + " ÷ " + rt.Source
		switch {
		case !gc.Measured:
			return notMeasured("gc_percent", "percent", src, def, gc.Reason)
		case !rt.Measured:
			return notMeasured("gc_percent", "percent", src, def, rt.Reason)
		case rt.Value <= 0:
			return notMeasured("gc_percent", "percent", src, def,
				"no GC cycle ended in the window: the runtime updates its CPU classes only when a cycle ends")
		}
		return measured("gc_percent", "percent", src, def, gc.Value/rt.Value*100)
	}
	def := "GC seconds in the window ÷ window seconds × 100: the share of wall time spent in GC (" + b.GCSeconds.Definition + ")"
	src := gc.Source + " ÷ wall time"
	if !gc.Measured {
		return notMeasured("gc_percent", "percent", src, def, gc.Reason)
	}
	return measured("gc_percent", "percent", src, def, gc.Value/secs*100)
}

// kindDeltas differences the GC kinds of b against a, in b's order. A kind b has and a lacks is not measured,
// except for Node, whose GC histogram gains a kind's label value only once a GC of that kind happened: there
// it counts from 0 when a already had the histogram.
func kindDeltas(a, b RuntimeFigures) []KindFigures {
	var out []KindFigures
	for _, kb := range b.GCKinds {
		var ka *KindFigures
		for i := range a.GCKinds {
			if a.GCKinds[i].Kind == kb.Kind {
				ka = &a.GCKinds[i]
				break
			}
		}
		if ka == nil {
			zero := KindFigures{Kind: kb.Kind, Cycles: kb.Cycles, Seconds: kb.Seconds}
			if b.Runtime == RuntimeNode && a.Runtime == RuntimeNode && a.GCCycles.Measured {
				zero.Cycles.Value, zero.Seconds.Value = 0, 0
			} else {
				reason := "not exposed at the window's start"
				zero.Cycles = zero.Cycles.withReason(reason)
				zero.Seconds = zero.Seconds.withReason(reason)
			}
			ka = &zero
		}
		out = append(out, KindFigures{
			Kind:    kb.Kind,
			Cycles:  delta("gc_cycles", "count", ka.Cycles, kb.Cycles),
			Seconds: delta("gc_seconds", "seconds", ka.Seconds, kb.Seconds),
		})
	}
	return out
}
