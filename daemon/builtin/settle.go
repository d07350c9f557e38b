package builtin

import (
	"context"
	"runtime"
	"time"

	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
)

// settleCheck is how often the target's state is checked while settling.
const settleCheck = 100 * time.Millisecond

// ForceGC runs two collections: sync.Pool keeps its contents through one GC
// in a victim cache (net/http pools a reader and writer per connection), so
// only the second shows what the phase really left behind.
func ForceGC() {
	runtime.GC()
	runtime.GC()
}

// Settle waits d after a phase (the target rests before the next one and
// the driver's connections close), watching for the target to return to its
// pre-phase state, then forces a GC and takes the sample that closes the
// phase. It reports the state before and after.
func (t *Server) Settle(ctx context.Context, base Rest, d time.Duration) (report.After, error) {
	start := time.Now()
	a := report.After{BaselineGoroutines: base.Goroutines, BaselineHeapLiveBytes: base.HeapLiveBytes, ReturnedAfterSeconds: -1}
	if err := PollFor(ctx, d, func() {
		if a.ReturnedAfterSeconds < 0 && kpi.Returned(base.Goroutines, uint64(runtime.NumGoroutine()), t.Service.Broker.Stats().Subscribers) {
			a.ReturnedAfterSeconds = time.Since(start).Seconds()
		}
	}); err != nil {
		return a, err
	}
	ForceGC()
	s := t.Sampler.SampleNow()
	a.Goroutines, a.HeapLiveBytes, a.Subscribers = s.Goroutines, s.HeapLiveBytes, t.Service.Broker.Stats().Subscribers
	a.Returned = kpi.Returned(base.Goroutines, s.Goroutines, a.Subscribers)
	a.SettleSeconds = time.Since(start).Seconds()
	return a, nil
}

// PollFor calls check at once and every settleCheck until d has passed;
// it returns ctx's error when ctx ends first.
func PollFor(ctx context.Context, d time.Duration, check func()) error {
	tick := time.NewTicker(settleCheck)
	defer tick.Stop()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	for {
		check()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return nil
		case <-tick.C:
		}
	}
}

// Baseline forces GCs, so each phase starts from the same heap state, and
// returns the state the phase must return to.
func (t *Server) Baseline() Rest {
	ForceGC()
	s := t.Sampler.SampleNow()
	return Rest{Goroutines: s.Goroutines, HeapLiveBytes: s.HeapLiveBytes}
}
