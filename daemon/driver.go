package daemon

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
	tail := &TailBuffer{max: 4096}
	relay := &LineLogger{log: log.With(zap.String("phase", spec.Name), zap.String("source", "driver"))}
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
		return workloads.Result{}, usage, fmt.Errorf("driver (pid %d) died without a result: %w%s", cmd.Process.Pid, waitErr, tail.context())
	case readErr != nil:
		return workloads.Result{}, usage, fmt.Errorf("cannot read the driver's output: %w", readErr)
	}
	return workloads.Result{}, usage, errors.New("driver exited without a result" + tail.context())
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

// DriverSecrets names the environment variables holding secrets soakd
// reads under cfg: SOAKD_CONTROL_TOKEN, SOAKD_TARGET_TOKEN, the one named by
// profiling.pyroscope.basic_auth_password_env and the relational scenario's
// DSN (relational.dsn_env). A driver needs none of them.
func DriverSecrets(cfg *Config) []string {
	secrets := []string{TokenEnv, TargetTokenEnv}
	if name := cfg.Profiling.Pyroscope.BasicAuthPasswordEnv; name != "" {
		secrets = append(secrets, name)
	}
	if name := RelationalDSNEnv(cfg); name != "" {
		secrets = append(secrets, name)
	}
	return secrets
}

// LineLogger relays a child process's standard error through the daemon's
// logger, one entry per line, so that under --log-format json every line on
// the daemon's standard error is JSON, whatever the child printed (a Go
// panic's trace, say). A line that is itself a JSON log entry keeps its
// level and message; its other fields come along as one "fields" object.
type LineLogger struct {
	log *zap.Logger
	// what names a line that is not a JSON log entry ("driver output"
	// when empty).
	what string
	mu   sync.Mutex
	buf  []byte
}

// maxRelayedLine bounds one relayed line in bytes; a longer line is cut, so
// a child writing without newlines cannot make the daemon buffer without end.
const maxRelayedLine = 16 << 10

func (l *LineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) > maxRelayedLine {
				l.emit(l.buf[:maxRelayedLine])
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

// Flush relays a last line that had no newline.
func (l *LineLogger) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = nil
	}
}

func (l *LineLogger) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	var entry map[string]any
	if json.Unmarshal(line, &entry) == nil {
		if msg, ok := entry["msg"].(string); ok {
			level, _ := entry["level"].(string)
			for _, k := range []string{"msg", "level", "ts", "caller"} {
				delete(entry, k)
			}
			fields := []zap.Field{}
			if len(entry) > 0 {
				fields = append(fields, zap.Any("fields", entry))
			}
			switch level {
			case "error", "dpanic", "panic", "fatal":
				l.log.Error(msg, fields...)
			case "warn":
				l.log.Warn(msg, fields...)
			default:
				l.log.Info(msg, fields...)
			}
			return
		}
	}
	what := l.what
	if what == "" {
		what = "driver output"
	}
	l.log.Warn(what, zap.ByteString("line", line))
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

// TailBuffer keeps the last max bytes written to it: the end of a driver's
// stderr, quoted when it dies.
type TailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *TailBuffer) context() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return "; its last output: " + s
}
