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
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/childlog"
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
// (driverSecrets).
func runDriver(ctx context.Context, log *zap.Logger, exe string, target []string, cpus string, secrets []string, spec workloads.Phase, progress func(workloads.Progress)) (workloads.Result, driverUsage, error) {
	body, err := json.Marshal(spec)
	if err != nil {
		return workloads.Result{}, driverUsage{}, fmt.Errorf("cannot encode the phase spec: %w", err)
	}
	cmd := driverCommand(ctx, exe, target, cpus, secrets)
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
	log.Info("driver started", zap.String("phase", spec.Name), zap.Int("pid", cmd.Process.Pid))

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
	usage := driverUsage{Wall: time.Since(started)}
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
// less the variables named in secrets. Cancelling ctx sends it SIGTERM.
func driverCommand(ctx context.Context, exe string, target []string, cpus string, secrets []string) *exec.Cmd {
	args := append(append([]string{"drive"}, target...), "--spec", "-", "--log-format", "json")
	if cpus != "" {
		args = append(args, "--cpus", cpus)
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
	CPU, Wall time.Duration
}

// MachinePercent is the driver's CPU as a share of the machine over its
// lifetime.
func (u driverUsage) MachinePercent(cores int) float64 {
	if u.Wall <= 0 || cores < 1 {
		return 0
	}
	return u.CPU.Seconds() / (u.Wall.Seconds() * float64(cores)) * 100
}
