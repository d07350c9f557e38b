package workloads

import (
	"testing"
)

// TestBusiestShardShares: the share of shards on machines of their own is
// the busiest one's demand over its own CPUs, not the sum over one
// machine; a point one shard lacks its CPU at stays unmeasured.
func TestBusiestShardShares(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	bucket := LoadBucket.Seconds()
	shard := func(cpus int, cpu, wait []*float64) Result {
		ml := &MaxLoadResult{DriverCPUs: cpus}
		for i := range cpu {
			ml.Timeline = append(ml.Timeline, TimelinePoint{TSeconds: float64(i+1) * bucket, DriverCPUSeconds: cpu[i], DriverWaitSeconds: wait[i]})
		}
		return Result{MaxLoad: ml}
	}
	shards := []Result{
		shard(1, []*float64{f(0.2 * bucket), f(0.5 * bucket), f(0.1 * bucket)}, []*float64{nil, f(0.45 * bucket), nil}),
		shard(2, []*float64{f(0.8 * bucket), f(0.4 * bucket), nil}, []*float64{nil, nil, nil}),
	}
	res := Result{MaxLoad: &MaxLoadResult{Timeline: []TimelinePoint{{TSeconds: bucket}, {TSeconds: 2 * bucket}, {TSeconds: 3 * bucket}}}}
	SetBusiestShardShares(&res, shards)
	want := []*float64{f(0.4), f(0.95), nil} // shard 2's 0.8/2; shard 1's (0.5+0.45)/1; shard 2 unread
	for i, pt := range res.MaxLoad.Timeline {
		switch got := pt.DriverCPUShare; {
		case want[i] == nil && got != nil:
			t.Errorf("point %d: share %v, want not measured", i, *got)
		case want[i] != nil && (got == nil || *got < *want[i]-1e-9 || *got > *want[i]+1e-9):
			t.Errorf("point %d: share %v, want %v", i, got, *want[i])
		}
	}
}
