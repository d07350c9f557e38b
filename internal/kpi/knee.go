package kpi

import (
	"fmt"
	"math"
)

// SaturatedShare is the utilisation, as a share of the CPUs a process may
// run on (0..1), from which that process counts as saturated: with a 1 s
// bucket and CPU ticks of 10 ms, 90 % leaves room for measurement error
// without calling a half-busy process saturated.
const SaturatedShare = 0.9

// Knee attributions: whose limit a max-load phase found.
const (
	// KneeTarget: the target ran out (its CPUs saturated, or a failure rule
	// tripped while neither the driver nor the shared machine was
	// saturated). The only attribution a gate may judge the server by.
	KneeTarget = "target"
	// KneeDriverBound: the driver's CPUs were saturated at the knee: the
	// load generator, not the server, set the limit.
	KneeDriverBound = "driver-bound"
	// KneeMachineBound: driver and target share CPUs and together saturated
	// them: neither alone can be blamed.
	KneeMachineBound = "machine-bound"
	// KneeNone: no knee; the phase stopped at its duration or users cap with
	// nothing saturated.
	KneeNone = "none"
)

// KneePoint is one bucket (1 s) of a max-load ramp with both sides'
// utilisation: the knee chart's data.
type KneePoint struct {
	// TSeconds is the bucket's end, in seconds since the phase start.
	TSeconds float64 `json:"t_seconds"`
	// Users is the number of active users at the bucket's end (in a
	// ramping-rate phase, the requests in flight).
	Users int `json:"users"`
	// ArrivalRPS is, in a ramping-rate phase, the intended arrival rate at
	// the bucket's end in requests per second (the knee chart's x axis
	// there); 0 and left out in a ramping-users phase.
	ArrivalRPS float64 `json:"arrival_rps,omitempty"`
	// RPS is the bucket's completed requests per second.
	RPS float64 `json:"rps"`
	// P99Ms is the bucket's 99th-percentile latency of successful requests, in ms.
	P99Ms float64 `json:"p99_ms"`
	// ErrorRatio is the bucket's share of failed requests (0..1).
	ErrorRatio float64 `json:"error_ratio"`
	// DriverCPUShare is the driver process's CPU demand in the bucket (CPU
	// time plus the time its threads waited, ready, for a CPU) over the
	// bucket's length times the CPUs it may run on: 1 means it used or
	// wanted all of them, more that it wanted more than there were (a
	// driver starved by other work on its CPUs is as saturated as a busy
	// one). Nil when not measured.
	DriverCPUShare *float64 `json:"driver_cpu_share"`
	// TargetCPUShare is the same for the target process (CPU use plus
	// run-queue wait where the sampler reads it), from the sample interval
	// covering the bucket's middle; nil when not measured.
	TargetCPUShare *float64 `json:"target_cpu_share"`
}

// KneeInput is what AttributeKnee judges.
type KneeInput struct {
	// Points are the phase's buckets, oldest first.
	Points []KneePoint
	// Failed is true when a failure rule tripped at FailureT (seconds since
	// the phase start); Rule names it (error_ratio, p99_latency, ...).
	Failed   bool
	FailureT float64
	Rule     string
	// PeakT is the end of the best window that broke no rule (0 without).
	PeakT float64
	// WindowSeconds is the failure rules' sliding window: utilisation is
	// averaged over the window ending at the knee.
	WindowSeconds float64
	// SharedCPUs is true when driver and target may run on the same CPUs
	// (not pinned to disjoint sets); then their sum against MachineCPUs
	// tells when the machine, not either one, ran out.
	SharedCPUs bool
	// DriverCPUs, TargetCPUs and MachineCPUs count the CPUs each may use.
	DriverCPUs, TargetCPUs, MachineCPUs int
}

// Knee is AttributeKnee's verdict on a max-load phase.
type Knee struct {
	// Attribution is KneeTarget, KneeDriverBound, KneeMachineBound or KneeNone.
	Attribution string `json:"attribution"`
	// Resource names what ran out: "target CPU", "driver CPU", "machine
	// CPU", or the failure rule ("p99_latency", say) with the target not
	// CPU-bound; "" for no knee.
	Resource string `json:"resource"`
	// AtT is the knee's time in seconds since the phase start (the
	// failure, or the peak window's end).
	AtT float64 `json:"at_t_seconds"`
	// Users and RPS are the active users and the throughput at the knee.
	Users int     `json:"users"`
	RPS   float64 `json:"rps"`
	// DriverCPUShare and TargetCPUShare are the mean utilisations over the
	// window ending at the knee (nil when not measured).
	DriverCPUShare *float64 `json:"driver_cpu_share"`
	TargetCPUShare *float64 `json:"target_cpu_share"`
	// Reason says, in words, why this attribution.
	Reason string `json:"reason"`
}

// AttributeKnee says whose limit a max-load phase found. The knee is the
// failure when a rule tripped, else the peak window's end. Over the failure
// window ending there: a saturated driver makes it driver-bound (whatever
// else happened); driver and target on shared CPUs that together used
// SaturatedShare of them make it machine-bound; a saturated target, or a
// tripped rule with neither of those, makes it the target's. Without a
// failure and without a saturated target there is no knee. A utilisation
// that was not measured cannot clear a side: a failure whose driver share is
// unknown is not attributed to the target.
func AttributeKnee(in KneeInput) Knee {
	k := Knee{Attribution: KneeNone}
	at := in.PeakT
	if in.Failed {
		at = in.FailureT
	}
	k.AtT = at
	window := math.Max(in.WindowSeconds, 1)
	var dSum, tSum float64
	var dN, tN, n int
	for _, p := range in.Points {
		if p.TSeconds <= at-window || p.TSeconds > at {
			continue
		}
		n++
		k.Users, k.RPS = p.Users, p.RPS
		if p.DriverCPUShare != nil {
			dSum += *p.DriverCPUShare
			dN++
		}
		if p.TargetCPUShare != nil {
			tSum += *p.TargetCPUShare
			tN++
		}
	}
	if dN > 0 {
		k.DriverCPUShare = ptr(dSum / float64(dN))
	}
	if tN > 0 {
		k.TargetCPUShare = ptr(tSum / float64(tN))
	}
	pct := func(p *float64) string {
		if p == nil {
			return "not measured"
		}
		return fmt.Sprintf("%.0f %%", *p*100)
	}
	shares := fmt.Sprintf("CPU demand, use plus run-queue wait: driver %s of its %d CPUs, target %s of its %d CPUs", pct(k.DriverCPUShare), in.DriverCPUs, pct(k.TargetCPUShare), in.TargetCPUs)
	if n == 0 {
		k.Reason = "no ramp bucket at the knee: nothing to attribute"
		if !in.Failed {
			k.Reason = "no failure and no peak window: no knee"
		}
		return k
	}
	driverSat := k.DriverCPUShare != nil && *k.DriverCPUShare >= SaturatedShare
	targetSat := k.TargetCPUShare != nil && *k.TargetCPUShare >= SaturatedShare
	machineSat := false
	if in.SharedCPUs && k.DriverCPUShare != nil && k.TargetCPUShare != nil && in.MachineCPUs > 0 {
		used := *k.DriverCPUShare*float64(in.DriverCPUs) + *k.TargetCPUShare*float64(in.TargetCPUs)
		machineSat = used >= SaturatedShare*float64(in.MachineCPUs)
	}
	switch {
	case driverSat:
		k.Attribution, k.Resource = KneeDriverBound, "driver CPU"
		k.Reason = fmt.Sprintf("the driver was saturated at the knee (%s): the load generator set the limit; pin it to CPUs of its own or move it to another machine", shares)
	case machineSat:
		k.Attribution, k.Resource = KneeMachineBound, "machine CPU"
		k.Reason = fmt.Sprintf("driver and target share %d CPUs and together saturated them (%s): pin them to disjoint CPUs (pinning:) to tell whose limit this is", in.MachineCPUs, shares)
	case targetSat:
		k.Attribution, k.Resource = KneeTarget, "target CPU"
		k.Reason = fmt.Sprintf("the target's CPUs saturated (%s)", shares)
	case in.Failed && k.DriverCPUShare == nil:
		k.Resource = in.Rule
		k.Reason = fmt.Sprintf("rule %s tripped but the driver's utilisation was not measured (%s): it cannot be cleared, so the knee is not attributed", in.Rule, shares)
	case in.Failed && in.SharedCPUs && k.TargetCPUShare == nil:
		k.Resource = in.Rule
		k.Reason = fmt.Sprintf("rule %s tripped on CPUs the driver and target share, and the target's utilisation was not measured (%s): the machine cannot be cleared, so the knee is not attributed", in.Rule, shares)
	case in.Failed:
		k.Attribution, k.Resource = KneeTarget, in.Rule
		k.Reason = fmt.Sprintf("rule %s tripped with neither the driver nor the machine saturated (%s)", in.Rule, shares)
	default:
		k.Reason = fmt.Sprintf("no failure rule tripped and nothing saturated at the peak (%s): the ramp ended before a knee", shares)
	}
	return k
}
