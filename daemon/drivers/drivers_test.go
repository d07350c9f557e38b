package drivers

import (
	"testing"
	"time"

	"github.com/soakd/soakd/workloads"
)

func TestUsageMachinePercent(t *testing.T) {
	u := Usage{CPU: 2 * time.Second, Wall: 4 * time.Second, OSKnown: true}
	if got := u.MachinePercent(2); got != 25 {
		t.Errorf("2 cpu-s over 4 s on 2 cores: got %v %%, want 25", got)
	}
	if got := (Usage{CPU: time.Second, OSKnown: true}).MachinePercent(2); got != 0 {
		t.Errorf("no wall time: got %v, want 0", got)
	}
	if c := Combined([]Usage{u, {Pod: "ns/p-1", Wall: time.Second}}); c.OSKnown {
		t.Errorf("a pod's CPU is not known to the OS here, yet the combined usage is: %+v", c)
	}
}

// TestReportShardsNeverZeroForUnmeasured: a driver whose process soakd
// cannot see (a pod) has null OS figures, not 0; its own load CPU, when it
// reported one, is kept with its share of one core over the load.
func TestReportShardsNeverZeroForUnmeasured(t *testing.T) {
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	var a, b Usage
	a.PID, a.OSKnown, a.CPU, a.Wall = 41, true, 3*time.Second, 10*time.Second
	a.withResult(workloads.Result{Requests: 5, End: start.Add(8 * time.Second), DurationSeconds: 8, LoadCPUSeconds: ptr(2.0)})
	b.Pod = "soak/run-x-1"
	b.withResult(workloads.Result{Requests: 6, End: start.Add(8 * time.Second), DurationSeconds: 8})
	out := ReportShards([]Usage{a, b}, 2, start)
	if out[0].CPUSeconds == nil || *out[0].CPUSeconds != 3 || *out[0].CPUPercent != 15 {
		t.Errorf("local shard: %+v", out[0])
	}
	if out[0].LoadCPUSeconds == nil || *out[0].LoadCPUSeconds != 2 || *out[0].LoadCPUCorePercent != 25 {
		t.Errorf("local shard's own load CPU: %+v", out[0])
	}
	if out[1].CPUSeconds != nil || out[1].CPUPercent != nil || out[1].LoadCPUSeconds != nil || out[1].Pod != "soak/run-x-1" {
		t.Errorf("pod shard without figures: %+v, want nulls and its pod", out[1])
	}
	if ReportShards([]Usage{a}, 2, start) != nil {
		t.Error("one driver is not listed as shards")
	}
}

func ptr[T any](v T) *T { return &v }
