package kpi

import (
	"strings"
	"testing"
)

// ramp builds n one-second buckets with the given driver and target shares
// (a negative share is not measured).
func ramp(n int, driver, target float64) []KneePoint {
	ps := make([]KneePoint, n)
	for i := range ps {
		ps[i] = KneePoint{TSeconds: float64(i + 1), Users: 5 * (i + 1), RPS: 1000 * float64(i+1)}
		if driver >= 0 {
			ps[i].DriverCPUShare = ptr(driver)
		}
		if target >= 0 {
			ps[i].TargetCPUShare = ptr(target)
		}
	}
	return ps
}

func TestAttributeKnee(t *testing.T) {
	pinned := KneeInput{WindowSeconds: 2, DriverCPUs: 1, TargetCPUs: 1, MachineCPUs: 2}
	shared := KneeInput{WindowSeconds: 2, SharedCPUs: true, DriverCPUs: 2, TargetCPUs: 2, MachineCPUs: 2}
	for _, tc := range []struct {
		name         string
		base         KneeInput
		points       []KneePoint
		failed       bool
		want, wantRe string
	}{
		{"slow driver, pinned", pinned, ramp(10, 0.97, 0.40), true, KneeDriverBound, "driver CPU"},
		{"slow driver, no failure", pinned, ramp(10, 0.95, 0.30), false, KneeDriverBound, "driver CPU"},
		{"slow server, pinned", pinned, ramp(10, 0.35, 0.98), true, KneeTarget, "target CPU"},
		{"slow server saturates without a rule tripping", pinned, ramp(10, 0.35, 0.95), false, KneeTarget, "target CPU"},
		{"latency rule, nothing saturated", pinned, ramp(10, 0.5, 0.6), true, KneeTarget, "p99_latency"},
		{"shared machine saturated together", shared, ramp(10, 0.45, 0.50), true, KneeMachineBound, "machine CPU"},
		{"shared machine with room", shared, ramp(10, 0.20, 0.30), true, KneeTarget, "p99_latency"},
		{"ramp ended before a knee", pinned, ramp(10, 0.3, 0.4), false, KneeNone, ""},
		{"driver not measured cannot be cleared", pinned, ramp(10, -1, 0.5), true, KneeNone, "p99_latency"},
		{"shared, target not measured: machine cannot be cleared", shared, ramp(10, 0.3, -1), true, KneeNone, "p99_latency"},
		{"pinned, target not measured: the rule is the target's", pinned, ramp(10, 0.3, -1), true, KneeTarget, "p99_latency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.base
			in.Points, in.Failed, in.Rule = tc.points, tc.failed, "p99_latency"
			in.FailureT, in.PeakT = 8, 7
			k := AttributeKnee(in)
			if k.Attribution != tc.want || k.Resource != tc.wantRe || k.Reason == "" {
				t.Errorf("got %s / %q (%s), want %s / %q", k.Attribution, k.Resource, k.Reason, tc.want, tc.wantRe)
			}
			wantT, wantUsers := 7.0, 35
			if tc.failed {
				wantT, wantUsers = 8, 40
			}
			if k.AtT != wantT || k.Users != wantUsers {
				t.Errorf("knee at %v s with %d users, want %v s and %d", k.AtT, k.Users, wantT, wantUsers)
			}
		})
	}
	// Shares are averaged over the window ending at the knee, not the ramp.
	ps := ramp(10, 0.1, 0.1)
	for i := 6; i < 8; i++ { // buckets ending at 7 s and 8 s
		ps[i].DriverCPUShare = ptr(0.99)
	}
	k := AttributeKnee(KneeInput{Points: ps, Failed: true, FailureT: 8, Rule: "error_ratio", WindowSeconds: 2, DriverCPUs: 1, TargetCPUs: 1, MachineCPUs: 2})
	if k.Attribution != KneeDriverBound || !strings.Contains(k.Reason, "driver 99 %") {
		t.Errorf("window average: %+v", k)
	}
	if k := AttributeKnee(KneeInput{WindowSeconds: 1}); k.Attribution != KneeNone || k.Reason == "" {
		t.Errorf("no points: %+v", k)
	}
}
