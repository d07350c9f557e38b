package run

import (
	"testing"
	"time"

	"github.com/soakd/soakd/daemon/target"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/workloads"
)

// TestKneeOfJoinsBothSides: each ramp bucket gets the driver's demand (CPU
// plus run-queue wait over its CPUs) and the target's CPU share over the
// sample interval holding the bucket's middle (clamped to 1); a driver that
// wanted all of its CPU makes the knee driver-bound.
func TestKneeOfJoinsBothSides(t *testing.T) {
	start := time.Unix(1000, 0)
	var ss []target.CPUReading
	for i := range 6 { // target: 0.5 s of CPU per second, then a jittery 1.2 s
		cpu := 0.5 * float64(i)
		if i == 5 {
			cpu = 2.0 + 1.2
		}
		ss = append(ss, target.CPUReading{Time: start.Add(time.Duration(i) * time.Second), CPUSeconds: cpu, OK: true})
	}
	f := func(v float64) *float64 { return &v }
	ml := &workloads.MaxLoadResult{
		Reason: workloads.ReasonP99Latency, Failed: true, FailureAt: start.Add(4 * time.Second), DriverCPUs: 1,
		Timeline: []workloads.TimelinePoint{
			{TSeconds: 1, Users: 2, RPS: 100, DriverCPUSeconds: f(0.5), DriverWaitSeconds: f(0.1)},
			{TSeconds: 2, Users: 4, RPS: 200, DriverCPUSeconds: f(0.6)},
			{TSeconds: 3, Users: 6, RPS: 300, DriverCPUSeconds: f(0.7), DriverWaitSeconds: f(0.3)},
			{TSeconds: 4, Users: 8, RPS: 310, DriverCPUSeconds: f(0.8), DriverWaitSeconds: f(0.2)},
			{TSeconds: 5, Users: 8, RPS: 310},
		},
	}
	l := layoutOf(&report.Pinning{TargetCPUs: []int{0}, DriverCPUs: []int{1}})
	l.Machine = 2
	chart, knee := kneeOf(ml, start, ss, l, 2*time.Second)
	if len(chart) != 5 {
		t.Fatalf("chart has %d points", len(chart))
	}
	want := []struct{ driver, target float64 }{{0.6, 0.5}, {0.6, 0.5}, {1.0, 0.5}, {1.0, 0.5}, {-1, 1}}
	for i, w := range want {
		c := chart[i]
		if (w.driver < 0) != (c.DriverCPUShare == nil) || (c.DriverCPUShare != nil && !near(*c.DriverCPUShare, w.driver)) {
			t.Errorf("point %d driver share %v, want %v", i, c.DriverCPUShare, w.driver)
		}
		if c.TargetCPUShare == nil || !near(*c.TargetCPUShare, w.target) {
			t.Errorf("point %d target share %v, want %v", i, c.TargetCPUShare, w.target)
		}
	}
	if knee.Attribution != kpi.KneeDriverBound || knee.Users != 8 || knee.AtT != 4 {
		t.Errorf("knee %+v, want driver-bound at 4 s with 8 users", knee)
	}
	if l.shared() || !layoutOf(nil).shared() {
		t.Error("disjoint pinning must not be shared; no pinning must be")
	}
}

// TestKneeOfReadsTheBusiestPod: with driver pods (DriverCPUShare set by
// the merge), the drivers' share is the busiest pod's, not the summed CPU
// over the orchestrator's machine: one pod at 97 % bends the load.
func TestKneeOfReadsTheBusiestPod(t *testing.T) {
	start := time.Unix(1000, 0)
	f := func(v float64) *float64 { return &v }
	ml := &workloads.MaxLoadResult{
		Reason: workloads.ReasonP99Latency, Failed: true, FailureAt: start.Add(3 * time.Second), DriverCPUs: 8,
		Timeline: []workloads.TimelinePoint{
			{TSeconds: 1, Users: 2, RPS: 100, DriverCPUSeconds: f(0.9), DriverCPUShare: f(0.4)},
			{TSeconds: 2, Users: 4, RPS: 200, DriverCPUSeconds: f(1.2), DriverCPUShare: f(0.97)},
			{TSeconds: 3, Users: 6, RPS: 200, DriverCPUSeconds: f(1.3), DriverCPUShare: f(0.98)},
		},
	}
	chart, _ := kneeOf(ml, start, nil, cpuLayout{Machine: 8}, 2*time.Second)
	for i, want := range []float64{0.4, 0.97, 0.98} {
		if c := chart[i].DriverCPUShare; c == nil || !near(*c, want) {
			t.Errorf("point %d: driver share %v, want the busiest pod's %v (the summed CPU over 8 CPUs would read %v)", i, c, want, *ml.Timeline[i].DriverCPUSeconds/8)
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestCPUShareAtAddsRunqueueWait: a target using 85 % of its CPU while its
// threads waited 0.1 s a second for it demanded 95 %: saturated. A wait
// that went back (a thread exited) or was not read adds nothing.
func TestCPUShareAtAddsRunqueueWait(t *testing.T) {
	start := time.Unix(0, 0)
	ss := []target.CPUReading{
		{Time: start, CPUSeconds: 0, OK: true, WaitSeconds: 1, WaitOK: true},
		{Time: start.Add(time.Second), CPUSeconds: 0.85, OK: true, WaitSeconds: 1.1, WaitOK: true},
		{Time: start.Add(2 * time.Second), CPUSeconds: 1.7, OK: true, WaitSeconds: 0.5, WaitOK: true},
		{Time: start.Add(3 * time.Second), CPUSeconds: 2.55, OK: true},
	}
	for _, tc := range []struct {
		at   time.Duration
		want float64
	}{{500 * time.Millisecond, 0.95}, {1500 * time.Millisecond, 0.85}, {2500 * time.Millisecond, 0.85}} {
		got, ok := cpuShareAt(ss, start.Add(tc.at), 1)
		if !ok || !near(got, tc.want) {
			t.Errorf("share at %s = %v (%v), want %v", tc.at, got, ok, tc.want)
		}
	}
}
