package drivers

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
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/childlog"
	"github.com/soakd/soakd/workloads"
)

// Local runs each driver as a child process of this one (`soakd drive`,
// the binary Exe), so that its CPU, allocations and GC never count against
// the target.
type Local struct {
	Log *zap.Logger
	// Exe is the soakd binary.
	Exe string
	// Target are the `soakd drive` flags naming the target's URLs.
	Target []string
	// CPUs, when not empty, pins every driver (`--cpus`).
	CPUs string
	// Secrets names the environment variables drivers must not inherit.
	Secrets []string
}

// shardStartMargin is how far ahead of now the sharded drivers of a phase
// are given their common start_at: time for every driver process to start,
// read its spec and open its subscriptions (seconds on a busy machine for
// hundreds of them). A driver not ready by then fails the phase.
const shardStartMargin = 5 * time.Second

// StartMargin is shardStartMargin for sharded drivers; one driver starts
// when it is ready.
func (l Local) StartMargin(n int) time.Duration {
	if n > 1 {
		return shardStartMargin
	}
	return 0
}

// Open starts nothing: each Shard call starts its own process.
func (l Local) Open(_ context.Context, spec workloads.Phase, _ int) (Phase, error) {
	return localPhase{l: l, spec: spec}, nil
}

type localPhase struct {
	l    Local
	spec workloads.Phase
}

func (p localPhase) Shard(ctx context.Context, sh workloads.Shard, progress func(workloads.Progress), window func(workloads.SecondWindow)) (workloads.Result, Usage, error) {
	return runDriver(ctx, p.l.Log, p.l.Exe, p.l.Target, p.l.CPUs, p.l.Secrets, sh, p.spec, progress, window)
}

func (localPhase) Close(context.Context) error { return nil }

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
func runDriver(ctx context.Context, log *zap.Logger, exe string, target []string, cpus string, secrets []string, shard workloads.Shard, spec workloads.Phase, progress func(workloads.Progress), window func(workloads.SecondWindow)) (workloads.Result, Usage, error) {
	body, err := json.Marshal(spec)
	if err != nil {
		return workloads.Result{}, Usage{}, fmt.Errorf("cannot encode the phase spec: %w", err)
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
		return workloads.Result{}, Usage{}, fmt.Errorf("cannot connect to the driver: %w", err)
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		return workloads.Result{}, Usage{}, fmt.Errorf("cannot start the driver %s: %w", exe, err)
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
	usage := Usage{PID: cmd.Process.Pid, Wall: time.Since(started)}
	if ps := cmd.ProcessState; ps != nil {
		usage.CPU, usage.OSKnown = ps.UserTime()+ps.SystemTime(), true
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
