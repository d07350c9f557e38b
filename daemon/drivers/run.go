package drivers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/workloads"
)

// closeTimeout bounds Phase.Close after a phase (deleting a Job, say),
// also when the run was cancelled.
const closeTimeout = 30 * time.Second

// judgedStop is the cause with which Run stops the shards of a phase when
// the merged windows decided the stop: the phase's end, not a failure of
// the run.
type judgedStop struct{}

func (judgedStop) Error() string {
	return "the failure rules, judged on every shard's windows together, stopped the phase"
}

// Run runs one phase with n drivers started by b, shard i of n each, all
// given one start_at (now plus b.StartMargin(n)) when the margin is not
// zero, relays their merged progress (workloads.ProgressMerger; progress
// is called from one goroutine at a time) and returns their results merged
// into one (workloads.MergeShards) with each driver's usage, in shard
// order. One unsharded driver (n <= 1) is relayed as it is.
//
// A shard that fails, dies, or stops before its share of the phase ended
// (an aborted result while ctx lives) stops the others and fails the phase
// with its reason, naming the shard; Run returns only once every driver has
// ended, every goroutine it started has returned and the backend's phase is
// closed. Cancelling ctx stops every shard, which then sends its partial
// result; those are merged as one driver's partial result would be.
func Run(ctx context.Context, log *zap.Logger, b Backend, n int, spec workloads.Phase, progress func(workloads.Progress)) (workloads.Result, []Usage, error) {
	n = max(n, 1)
	if m := b.StartMargin(n); m > 0 {
		spec.StartAt = time.Now().Add(m).UTC()
	}
	ph, err := b.Open(ctx, spec, n)
	if err != nil {
		return workloads.Result{}, nil, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		if err := ph.Close(cctx); err != nil {
			log.Warn("cannot clean up the phase's drivers", zap.String("phase", spec.Name), zap.Error(err))
		}
	}()
	if n == 1 {
		res, u, err := ph.Shard(ctx, workloads.Shard{}, progress, nil)
		u.withResult(res)
		return res, []Usage{u}, err
	}
	shardCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var mu sync.Mutex // serialises merger, windows and progress
	merger := workloads.NewProgressMerger(n)
	windows := workloads.NewPhaseWindows(spec, n)
	judged := func(stopNow bool) {
		if stopNow {
			log.Info("the merged windows decided the stop; stopping every shard", zap.String("phase", spec.Name), zap.Int("seconds", windows.Seconds()))
			stop(judgedStop{})
		}
	}
	relay := func(p workloads.Progress, ok bool) {
		if ok && progress != nil {
			progress(p)
		}
	}
	results := make([]workloads.Result, n)
	usages := make([]Usage, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		sh := workloads.Shard{Index: i, Count: n}
		wg.Go(func() {
			res, u, err := ph.Shard(shardCtx, sh, func(p workloads.Progress) {
				mu.Lock()
				defer mu.Unlock()
				relay(merger.Add(i, p))
			}, func(w workloads.SecondWindow) {
				mu.Lock()
				defer mu.Unlock()
				if w.Shard != i {
					stop(fmt.Errorf("shard %s sent a window of shard %d (seq %d)", sh, w.Shard, w.Seq))
					return
				}
				stopNow, err := windows.Add(w)
				if err != nil {
					stop(fmt.Errorf("shard %s: %w", sh, err))
					return
				}
				judged(stopNow)
			})
			mu.Lock()
			relay(merger.Done(i))
			judged(windows.Done(i))
			mu.Unlock()
			u.withResult(res)
			results[i], usages[i] = res, u
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("shard %s (%s): %w", sh, u.where(), err)
			case res.Aborted && ctx.Err() == nil && shardCtx.Err() == nil:
				errs[i] = fmt.Errorf("shard %s (%s) stopped before its share of the phase ended", sh, u.where())
			}
			if errs[i] != nil {
				stop(errs[i])
			}
		})
	}
	wg.Wait()
	if ctx.Err() == nil {
		if cause := context.Cause(shardCtx); cause != nil && !errors.Is(cause, judgedStop{}) {
			return workloads.Result{}, usages, fmt.Errorf("%w; the other shards were stopped", cause)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return workloads.Result{}, usages, err
	}
	res, err := workloads.MergeShards(results, windows)
	if err != nil {
		return workloads.Result{}, usages, fmt.Errorf("cannot merge the %d shards' results: %w", n, err)
	}
	if s, ok := b.(separate); ok && s.SeparateMachines() {
		workloads.SetBusiestShardShares(&res, results)
	}
	return res, usages, nil
}

// separate is a Backend whose drivers run on machines of their own (a
// pod each), so a phase's driver saturation is its busiest shard's, not
// the shards' CPU summed over one machine's CPUs.
type separate interface{ SeparateMachines() bool }

// where names a driver in an error: its pod, else its pid.
func (u Usage) where() string {
	if u.Pod != "" {
		return "pod " + u.Pod
	}
	return fmt.Sprintf("pid %d", u.PID)
}
