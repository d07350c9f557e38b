package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/childlog"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/workloads"
)

// driverGrace is how long a driver gets, after SIGTERM, to let in-flight
// requests finish and send its partial result, on top of the phase's request
// timeout.
const driverGrace = 5 * time.Second

// runDriver starts `soakd drive` as a child process for one phase, feeds it
// the spec on stdin, relays its progress and returns its result. The child
// is a separate OS process so that its CPU, allocations and GC never count
// against the target. Cancelling ctx sends it SIGTERM; it then stops
// starting requests and reports what it has.
//
// cpus, when not empty, pins the driver (`--cpus`). The driver's own usage is
// returned so the report can tell when the load generator, not the target,
// was the limit.
//
// secrets names the environment variables the driver must not inherit
// (driverSecrets). shard, when Sharded, makes the driver that shard of the
// phase (`--shard i/N`); window, when not nil, gets its per-second
// windows (workloads.SecondWindow), which a sharded driver sends.
func runDriver(ctx context.Context, log *zap.Logger, exe string, target []string, cpus string, secrets []string, shard workloads.Shard, spec workloads.Phase, progress func(workloads.Progress), window func(workloads.SecondWindow)) (workloads.Result, driverUsage, error) {
	body, err := json.Marshal(spec)
	if err != nil {
		return workloads.Result{}, driverUsage{}, fmt.Errorf("cannot encode the phase spec: %w", err)
	}
	cmd := driverCommand(ctx, exe, target, cpus, secrets, shard)
	cmd.Stdin = bytes.NewReader(body)
	tail := &childlog.Tail{Max: 4096}
	relay := &childlog.Lines{Log: log.With(zap.String("phase", spec.Name), zap.String("source", "driver"))}
	defer relay.Flush()
	cmd.Stderr = io.MultiWriter(relay, tail)
	cmd.WaitDelay = spec.RequestTimeout + driverGrace
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return workloads.Result{}, driverUsage{}, fmt.Errorf("cannot connect to the driver: %w", err)
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return workloads.Result{}, driverUsage{}, fmt.Errorf("cannot start the driver %s: %w", exe, err)
	}
	log.Info("driver started", zap.String("phase", spec.Name), zap.Int("pid", cmd.Process.Pid), zap.Stringer("shard", shard))

	var (
		result   *workloads.Result
		driveErr string
	)
	readErr := workloads.ReadMessages(context.WithoutCancel(ctx), stdout, func(m workloads.Message) error {
		switch m.Type {
		case "progress":
			if progress != nil && m.Progress != nil {
				progress(*m.Progress)
			}
		case workloads.MessageWindow:
			if window != nil {
				window(*m.Window)
			}
		case "result":
			result = m.Result
		case "error":
			driveErr = m.Error
		}
		return nil
	})
	if readErr != nil {
		// Keep the pipe drained so a driver blocked on writing can still
		// exit; Wait would otherwise hang until the context ends.
		_, _ = io.Copy(io.Discard, stdout)
	}
	waitErr := cmd.Wait()
	usage := driverUsage{PID: cmd.Process.Pid, Wall: time.Since(started)}
	if ps := cmd.ProcessState; ps != nil {
		usage.CPU = ps.UserTime() + ps.SystemTime()
	}
	switch {
	case result != nil:
		// A result (possibly partial, when cancelled) is worth keeping
		// even if the process then exited non-zero.
		return *result, usage, nil
	case driveErr != "":
		return workloads.Result{}, usage, fmt.Errorf("driver failed: %s", driveErr)
	case waitErr != nil:
		return workloads.Result{}, usage, fmt.Errorf("driver (pid %d) died without a result: %w%s", cmd.Process.Pid, waitErr, tail.Context())
	case readErr != nil:
		return workloads.Result{}, usage, fmt.Errorf("cannot read the driver's output: %w", readErr)
	}
	return workloads.Result{}, usage, errors.New("driver exited without a result" + tail.Context())
}

// driverCommand returns the command running `soakd drive` (exe) against
// target (the flags naming its URLs: --target, or --graphql-url and
// --rest-url), pinned to cpus when not empty, with this process's environment
// less the variables named in secrets, as shard when it is Sharded.
// Cancelling ctx sends it SIGTERM.
func driverCommand(ctx context.Context, exe string, target []string, cpus string, secrets []string, shard workloads.Shard) *exec.Cmd {
	args := append(append([]string{"drive"}, target...), "--spec", "-", "--log-format", "json")
	if cpus != "" {
		args = append(args, "--cpus", cpus)
	}
	if shard.Sharded() {
		args = append(args, "--shard", shard.String())
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(secrets, name)
	})
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group: a terminal's Ctrl-C reaches only the
		// daemon, which then stops the driver in order.
		Setpgid: true,
		// If the daemon dies, the driver must not run on unattended.
		Pdeathsig: syscall.SIGKILL,
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	return cmd
}

// driverUsage is a driver process's CPU time (user + system, from the OS
// once it has exited) and its wall-clock lifetime, which also covers
// subscription setup and drain around the phase: the two are compared with
// each other, never with the phase's own duration.
type driverUsage struct {
	// PID is the driver's process id (0 when it did not start).
	PID       int
	CPU, Wall time.Duration
	// Requests is the requests its result reports (0 without a result).
	Requests int64
	// End is when its load ended, from its result (zero without one).
	End time.Time
}

// MachinePercent is the driver's CPU as a share of the machine over its
// lifetime.
func (u driverUsage) MachinePercent(cores int) float64 {
	if u.Wall <= 0 || cores < 1 {
		return 0
	}
	return u.CPU.Seconds() / (u.Wall.Seconds() * float64(cores)) * 100
}

// shardStartMargin is how far ahead of now the sharded drivers of a phase
// are given their common start_at: time for every driver process to start,
// read its spec and open its subscriptions (seconds on a busy machine for
// hundreds of them). A driver not ready by then fails the phase.
const shardStartMargin = 5 * time.Second

// judgedStop is the cause with which runDrivers stops the shards of a
// phase when the merged windows decided the stop: the phase's end, not a
// failure of the run.
type judgedStop struct{}

func (judgedStop) Error() string {
	return "the failure rules, judged on every shard's windows together, stopped the phase"
}

// runDrivers runs one phase with n driver processes (runDriver), shard i
// of n each, all given one start_at (now plus shardStartMargin), relays
// their merged progress (workloads.ProgressMerger; progress is called from
// one goroutine at a time) and returns their results merged into one
// (workloads.MergeResults) with each driver's usage, in shard order. With
// n <= 1 it is runDriver.
//
// A shard that fails, dies, or stops before its share of the phase ended
// (an aborted result while ctx lives) stops the others (SIGTERM, as
// cancelling ctx does) and fails the phase with its reason, naming the
// shard and its pid; runDrivers returns only once every driver has exited
// and every goroutine it started has returned. Cancelling ctx stops every
// shard, which then sends its partial result; those are merged as one
// driver's partial result would be.
func runDrivers(ctx context.Context, log *zap.Logger, exe string, target []string, cpus string, secrets []string, n int, spec workloads.Phase, progress func(workloads.Progress)) (workloads.Result, []driverUsage, error) {
	if n <= 1 {
		res, u, err := runDriver(ctx, log, exe, target, cpus, secrets, workloads.Shard{}, spec, progress, nil)
		return res, []driverUsage{u}, err
	}
	spec.StartAt = time.Now().Add(shardStartMargin).UTC()
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
	usages := make([]driverUsage, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		sh := workloads.Shard{Index: i, Count: n}
		wg.Go(func() {
			res, u, err := runDriver(shardCtx, log, exe, target, cpus, secrets, sh, spec, func(p workloads.Progress) {
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
			u.Requests, u.End = res.Requests, res.End
			results[i], usages[i] = res, u
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("shard %s (pid %d): %w", sh, u.PID, err)
			case res.Aborted && ctx.Err() == nil && shardCtx.Err() == nil:
				errs[i] = fmt.Errorf("shard %s (pid %d) stopped before its share of the phase ended", sh, u.PID)
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
	return res, usages, nil
}

// combinedUsage is the usage of drivers run side by side: their CPU summed
// over the longest lifetime, so MachinePercent is their share of the
// machine together.
func combinedUsage(us []driverUsage) driverUsage {
	var c driverUsage
	for _, u := range us {
		c.CPU += u.CPU
		c.Wall = max(c.Wall, u.Wall)
	}
	if len(us) == 1 {
		c.PID = us[0].PID
	}
	return c
}

// driverShards lists a sharded phase's drivers for the report: each one's
// shard, pid, requests, CPU and when its load ended, in seconds after
// start (the phase's start_at); nil for one driver.
func driverShards(us []driverUsage, cores int, start time.Time) []report.DriverShard {
	if len(us) <= 1 {
		return nil
	}
	out := make([]report.DriverShard, len(us))
	for i, u := range us {
		out[i] = report.DriverShard{Shard: i, PID: u.PID, Requests: u.Requests, CPUSeconds: u.CPU.Seconds(), CPUPercent: u.MachinePercent(cores)}
		if !u.End.IsZero() && !start.IsZero() {
			end := u.End.Sub(start).Seconds()
			out[i].EndSeconds = &end
		}
	}
	return out
}
