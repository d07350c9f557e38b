// Package drivers runs a phase's load generators, `soakd drive`, and
// merges what they send into the phase's one result.
//
// Where the drivers run is a Backend: Local starts them as child processes
// of this one; Kubernetes runs them as the pods of an Indexed Job. What
// they send and how it is judged is the same for both and written once
// (Run): every shard of a phase starts at one instant (start_at), its
// per-second windows are merged and the failure rules judged on the merge
// (a global stop), the first shard that fails stops the others, and the
// shards' results merge exactly (workloads.MergeShards).
package drivers

import (
	"context"
	"time"

	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/workloads"
)

// A Backend starts the drivers of one phase.
type Backend interface {
	// StartMargin is how far ahead of now a phase of n drivers gets its
	// common start instant (start_at): time for every driver to start,
	// read its spec and open its subscriptions. Zero: a single driver
	// starts as soon as it is ready, with no start_at.
	StartMargin(n int) time.Duration
	// Open starts the n drivers of spec (its StartAt set by Run when
	// StartMargin is not zero). Close must be called on what it returns.
	Open(ctx context.Context, spec workloads.Phase, n int) (Phase, error)
}

// A Phase is the running drivers of one phase.
type Phase interface {
	// Shard follows driver sh to its end, relaying its progress and
	// windows in order, and returns its result and usage. It returns once
	// that driver has ended; cancelling ctx stops it (it then sends its
	// partial result, which Shard returns).
	Shard(ctx context.Context, sh workloads.Shard, progress func(workloads.Progress), window func(workloads.SecondWindow)) (workloads.Result, Usage, error)
	// Close removes what Open created; it is bounded by ctx and safe to
	// call once every Shard has returned.
	Close(ctx context.Context) error
}

// Usage is one driver's CPU and lifetime.
type Usage struct {
	// PID is the driver's process id (0 when it did not start); in a pod,
	// the id inside the pod's namespace.
	PID int
	// Pod is the driver's pod, "namespace/name" (empty for a local driver).
	Pod string
	// CPU is its CPU time (user + system) over Wall, from the OS once a
	// local process exited; OSKnown is false where soakd cannot see the
	// process (a pod).
	CPU, Wall time.Duration
	OSKnown   bool
	// LoadCPU is the CPU time the driver itself reported over its load
	// (workloads.Result.LoadCPUSeconds), and LoadSpan that load's length;
	// LoadCPU is nil when it did not report one.
	LoadCPU  *time.Duration
	LoadSpan time.Duration
	// Requests is the requests its result reports (0 without a result).
	Requests int64
	// End is when its load ended, from its result (zero without one).
	End time.Time
}

// withResult records in u what driver result res says about its usage.
func (u *Usage) withResult(res workloads.Result) {
	u.Requests, u.End = res.Requests, res.End
	if res.LoadCPUSeconds != nil {
		cpu := time.Duration(*res.LoadCPUSeconds * float64(time.Second))
		u.LoadCPU = &cpu
		u.LoadSpan = time.Duration(res.DurationSeconds * float64(time.Second))
	}
}

// MachinePercent is the driver's CPU as a share of a machine of cores
// CPUs over its lifetime (0 when the OS's figure is not known).
func (u Usage) MachinePercent(cores int) float64 {
	if !u.OSKnown || u.Wall <= 0 || cores < 1 {
		return 0
	}
	return u.CPU.Seconds() / (u.Wall.Seconds() * float64(cores)) * 100
}

// Combined is the usage of drivers run side by side: their CPU summed
// over the longest lifetime, so MachinePercent is their share of the
// machine together; not known unless every driver's is.
func Combined(us []Usage) Usage {
	c := Usage{OSKnown: len(us) > 0}
	for _, u := range us {
		c.CPU += u.CPU
		c.Wall = max(c.Wall, u.Wall)
		c.OSKnown = c.OSKnown && u.OSKnown
	}
	if len(us) == 1 {
		c.PID, c.Pod = us[0].PID, us[0].Pod
	}
	return c
}

// ReportShards lists a sharded phase's drivers for the report: each one's
// shard, pid (and pod), requests, CPU and when its load ended, in seconds
// after start (the phase's start_at); nil for one driver. A figure the
// backend could not measure is nil, never 0.
func ReportShards(us []Usage, cores int, start time.Time) []report.DriverShard {
	if len(us) <= 1 {
		return nil
	}
	out := make([]report.DriverShard, len(us))
	for i, u := range us {
		out[i] = report.DriverShard{Shard: i, PID: u.PID, Pod: u.Pod, Requests: u.Requests}
		if u.OSKnown {
			cpu, pct := u.CPU.Seconds(), u.MachinePercent(cores)
			out[i].CPUSeconds, out[i].CPUPercent = &cpu, &pct
		}
		if u.LoadCPU != nil {
			cpu := u.LoadCPU.Seconds()
			out[i].LoadCPUSeconds = &cpu
			if u.LoadSpan > 0 {
				pct := cpu / u.LoadSpan.Seconds() * 100
				out[i].LoadCPUCorePercent = &pct
			}
		}
		if !u.End.IsZero() && !start.IsZero() {
			end := u.End.Sub(start).Seconds()
			out[i].EndSeconds = &end
		}
	}
	return out
}
