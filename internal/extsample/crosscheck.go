package extsample

import (
	"fmt"
	"math"
)

// selfCPUSeries is the process CPU counter that client_golang, prom-client
// and most Prometheus clients export: the process's own user+system CPU
// seconds since it started.
const selfCPUSeries = "process_cpu_seconds_total"

// selfCPUFigure is the Extra figure read from selfCPUSeries.
const selfCPUFigure = "process_cpu_seconds"

// appendSelfCPU adds the target's own CPU counter to r's extra figures
// when the scrape has it.
func appendSelfCPU(e Exposition, r *RuntimeFigures) {
	if !e.has(selfCPUSeries) {
		return
	}
	r.Extra = append(r.Extra, pick(e, selfCPUFigure, "seconds", "", read{
		series: selfCPUSeries,
		def:    "the target's own count of its process's user+system CPU seconds since it started (" + selfCPUSeries + ")",
	}))
}

// CPU cross-check tolerance: the OS and the target's own counter disagree
// when they differ by more than this share of the larger and by more than
// crossCheckFloor seconds (both count in 10 ms ticks, and a scrape and an
// OS read are not the same instant).
const (
	crossCheckShare = 0.25
	crossCheckFloor = 0.05
)

// CPUCrossCheck compares the OS's CPU seconds of the sampled processes in a
// window with the target's own process_cpu_seconds_total over the same
// samples. It returns "" when they agree or the target does not export the
// counter, else a sentence saying by how much they differ and what it
// means: a server that forks workers counts only its own process, while
// the OS figure sums the tree; a wrong process sampled reads far less.
func CPUCrossCheck(first, last Sample, osCPU Figure) string {
	a, b := first.ExtraFigure(selfCPUFigure), last.ExtraFigure(selfCPUFigure)
	if !osCPU.Measured || !a.Measured || !b.Measured || b.Value < a.Value {
		return ""
	}
	self := b.Value - a.Value
	diff := math.Abs(osCPU.Value - self)
	if diff <= crossCheckFloor || diff <= crossCheckShare*math.Max(osCPU.Value, self) {
		return ""
	}
	hint := "the sampled processes do more than the process that exports the counter (workers, a launcher), or a scrape was slow"
	if osCPU.Value < self {
		hint = "the OS saw less CPU than the target reports for itself: the sampled process may not be the one that answers the scrape"
	}
	return fmt.Sprintf("CPU cross-check: the OS counted %.2f s of CPU for the sampled processes, the target's own %s %.2f s (%+.0f %%): %s",
		osCPU.Value, selfCPUSeries, self, (osCPU.Value-self)/math.Max(self, 1e-9)*100, hint)
}
