package run

import (
	"runtime"
	"slices"
	"time"

	"github.com/soakd/soakd/daemon/target"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/workloads"
)

// cpuLayout says which CPUs the target and the drivers may use, for telling
// whose limit a max-load phase found.
type cpuLayout struct {
	// TargetCPUs are the CPUs the target may run on; DriverCPUs those the
	// drivers were pinned to (empty: they inherit the target's).
	TargetCPUs, DriverCPUs []int
	// Machine is the number of CPUs of the machine.
	Machine int
}

// layoutOf reads the layout from the run's pinning record (nil: nothing
// pinned, everything shares every CPU).
func layoutOf(p *report.Pinning) cpuLayout {
	l := cpuLayout{Machine: runtime.NumCPU()}
	if p != nil {
		l.TargetCPUs, l.DriverCPUs = p.TargetCPUs, p.DriverCPUs
	}
	return l
}

// shared reports whether target and drivers may run on a common CPU.
func (l cpuLayout) shared() bool {
	if len(l.TargetCPUs) == 0 || len(l.DriverCPUs) == 0 {
		return true
	}
	for _, c := range l.DriverCPUs {
		if slices.Contains(l.TargetCPUs, c) {
			return true
		}
	}
	return false
}

func (l cpuLayout) targetCount() int {
	if len(l.TargetCPUs) > 0 {
		return len(l.TargetCPUs)
	}
	return l.Machine
}

// kneeOf joins a max-load phase's timeline (the driver's throughput, p99,
// errors and own CPU per bucket) with the target's CPU over the same
// seconds (samples), and judges whose limit the phase found
// (kpi.AttributeKnee). window is the failure rules' window.
func kneeOf(ml *workloads.MaxLoadResult, start time.Time, samples []target.CPUReading, l cpuLayout, window time.Duration) ([]kpi.KneePoint, kpi.Knee) {
	driverCPUs := ml.DriverCPUs
	if driverCPUs < 1 {
		driverCPUs = l.Machine
	}
	points := make([]kpi.KneePoint, len(ml.Timeline))
	for i, tp := range ml.Timeline {
		p := kpi.KneePoint{TSeconds: tp.TSeconds, Users: tp.Users, ArrivalRPS: tp.ArrivalRPS, RPS: tp.RPS, P99Ms: tp.P99Ms, ErrorRatio: tp.ErrorRatio}
		bucket := workloads.LoadBucket.Seconds()
		if tp.DriverCPUShare != nil {
			v := *tp.DriverCPUShare // the busiest of shards on machines of their own
			p.DriverCPUShare = &v
		} else if tp.DriverCPUSeconds != nil && driverCPUs > 0 {
			demand := *tp.DriverCPUSeconds
			if tp.DriverWaitSeconds != nil {
				demand += *tp.DriverWaitSeconds // ready to run, but no CPU free
			}
			v := demand / (bucket * float64(driverCPUs))
			p.DriverCPUShare = &v
		}
		mid := start.Add(time.Duration((tp.TSeconds - bucket/2) * float64(time.Second)))
		if v, ok := cpuShareAt(samples, mid, l.targetCount()); ok {
			p.TargetCPUShare = &v
		}
		points[i] = p
	}
	in := kpi.KneeInput{
		Points: points, Failed: ml.Failed, Rule: ml.Reason, WindowSeconds: window.Seconds(),
		SharedCPUs: l.shared(), DriverCPUs: driverCPUs, TargetCPUs: l.targetCount(), MachineCPUs: l.Machine,
	}
	if ml.Failed {
		in.FailureT = ml.FailureAt.Sub(start).Seconds()
	}
	if !ml.PeakWindowEnd.IsZero() {
		in.PeakT = ml.PeakWindowEnd.Sub(start).Seconds()
	}
	return points, kpi.AttributeKnee(in)
}

// cpuShareAt is the target's CPU demand over the sample interval holding
// t, as a share of cpus CPUs: its CPU use (user + system, clamped to its
// CPUs' capacity, since a sample's timestamp and its CPU reading are not
// taken at the same instant) plus, when read, the time its threads waited
// for a CPU (so a target whose CPUs are also busy with softirqs or other
// work shows as saturated). false when no two measured samples bracket t.
func cpuShareAt(ss []target.CPUReading, t time.Time, cpus int) (float64, bool) {
	for i := 1; i < len(ss); i++ {
		a, b := ss[i-1], ss[i]
		if t.Before(a.Time) || !t.Before(b.Time) {
			continue
		}
		dt := b.Time.Sub(a.Time).Seconds()
		if !a.OK || !b.OK || dt <= 0 || cpus < 1 {
			return 0, false
		}
		share := min(max((b.CPUSeconds-a.CPUSeconds)/(dt*float64(cpus)), 0), 1)
		if a.WaitOK && b.WaitOK && b.WaitSeconds >= a.WaitSeconds {
			share += (b.WaitSeconds - a.WaitSeconds) / (dt * float64(cpus))
		}
		return share, true
	}
	return 0, false
}
