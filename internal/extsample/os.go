package extsample

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/shirou/gopsutil/v4/process"
)

// ErrExited is matched (errors.Is) by every error that reports the target process gone.
var ErrExited = errors.New("process exited")

// ExitedError reports that the process with PID is gone: it no longer exists, is a zombie (exited, not yet
// reaped by its parent), or its PID now belongs to a process started later.
type ExitedError struct {
	PID int32
	// Detail says how the exit was seen ("" when the PID simply no longer exists).
	Detail string
}

func (e *ExitedError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("process %d exited", e.PID)
	}
	return fmt.Sprintf("process %d exited (%s)", e.PID, e.Detail)
}

// Is makes errors.Is(err, ErrExited) true.
func (e *ExitedError) Is(target error) bool { return target == ErrExited }

// OSFigures is the operating system's view of a process at one time, read through gopsutil by PID. It works
// for any runtime. Each figure is not measured, with the error as its reason, when its read failed.
type OSFigures struct {
	// UserCPUSeconds is the process's cumulative user-mode CPU time, in seconds.
	UserCPUSeconds Figure `json:"user_cpu_seconds"`
	// SystemCPUSeconds is the process's cumulative kernel-mode CPU time, in seconds.
	SystemCPUSeconds Figure `json:"system_cpu_seconds"`
	// RSSBytes is the resident set size, in bytes.
	RSSBytes Figure `json:"rss_bytes"`
	// Threads is the number of OS threads.
	Threads Figure `json:"threads"`
	// FDs is the number of open file descriptors.
	FDs Figure `json:"fds"`
}

const (
	defUserCPU = "cumulative user-mode CPU time of the process since it started, from the OS"
	defSysCPU  = "cumulative kernel-mode CPU time of the process since it started, from the OS"
	defRSS     = "resident set size: bytes of the process's memory held in RAM, from the OS"
	defThreads = "number of OS threads of the process, from the OS"
	defFDs     = "number of open file descriptors of the process, from the OS"
)

// osSource names the OS as a figure's source.
func osSource(pid int32) string { return fmt.Sprintf("os: gopsutil, pid %d", pid) }

// osNotMeasured returns OS figures that are all not measured for reason; source names pid when it is set.
func osNotMeasured(pid int32, reason string) OSFigures {
	src := "os: gopsutil"
	if pid > 0 {
		src = osSource(pid)
	}
	return OSFigures{
		UserCPUSeconds:   notMeasured("user_cpu_seconds", "seconds", src, defUserCPU, reason),
		SystemCPUSeconds: notMeasured("system_cpu_seconds", "seconds", src, defSysCPU, reason),
		RSSBytes:         notMeasured("rss_bytes", "bytes", src, defRSS, reason),
		Threads:          notMeasured("threads", "count", src, defThreads, reason),
		FDs:              notMeasured("fds", "count", src, defFDs, reason),
	}
}

// Proc reads the OS figures of one process. It remembers the process's start time so that a PID taken over by
// a later process reads as the first one having exited. A Proc is not safe for concurrent use.
type Proc struct {
	pid     int32
	proc    *process.Process
	created int64 // start time in ms since the epoch, as gopsutil reports it
}

// OpenProc opens the process pid. It fails with an ExitedError when no such process is running.
func OpenProc(ctx context.Context, pid int32) (*Proc, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("invalid pid %d: must be positive", pid)
	}
	p, err := process.NewProcessWithContext(ctx, pid)
	if errors.Is(err, process.ErrorProcessNotRunning) {
		return nil, &ExitedError{PID: pid}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open process %d: %w", pid, err)
	}
	created, err := p.CreateTimeWithContext(ctx)
	if err != nil {
		if gone, _ := exited(ctx, p, 0); gone != nil {
			return nil, gone
		}
		return nil, fmt.Errorf("cannot read the start time of process %d: %w", pid, err)
	}
	pr := &Proc{pid: pid, proc: p, created: created}
	if gone, _ := exited(ctx, p, created); gone != nil {
		return nil, gone
	}
	return pr, nil
}

// PID returns the process id.
func (p *Proc) PID() int32 { return p.pid }

// Read reads the OS figures. When the process has exited it returns figures that are all not measured and an
// ExitedError ("process 1234 exited"), never zeros. Other failed reads leave their figure not measured, with
// the error as reason, and are returned joined.
func (p *Proc) Read(ctx context.Context) (OSFigures, error) {
	src := osSource(p.pid)
	var f OSFigures
	var errs []string
	fail := func(what string, err error) string {
		msg := what + ": " + err.Error()
		errs = append(errs, msg)
		return msg
	}
	if t, err := p.proc.TimesWithContext(ctx); err != nil {
		msg := fail("cpu times", err)
		f.UserCPUSeconds = notMeasured("user_cpu_seconds", "seconds", src, defUserCPU, msg)
		f.SystemCPUSeconds = notMeasured("system_cpu_seconds", "seconds", src, defSysCPU, msg)
	} else {
		f.UserCPUSeconds = measured("user_cpu_seconds", "seconds", src, defUserCPU, t.User)
		f.SystemCPUSeconds = measured("system_cpu_seconds", "seconds", src, defSysCPU, t.System)
	}
	if m, err := p.proc.MemoryInfoWithContext(ctx); err != nil {
		f.RSSBytes = notMeasured("rss_bytes", "bytes", src, defRSS, fail("memory info", err))
	} else {
		f.RSSBytes = measured("rss_bytes", "bytes", src, defRSS, float64(m.RSS))
	}
	if n, err := p.proc.NumThreadsWithContext(ctx); err != nil {
		f.Threads = notMeasured("threads", "count", src, defThreads, fail("threads", err))
	} else {
		f.Threads = measured("threads", "count", src, defThreads, float64(n))
	}
	if n, err := p.proc.NumFDsWithContext(ctx); err != nil {
		f.FDs = notMeasured("fds", "count", src, defFDs, fail("open fds", err))
	} else {
		f.FDs = measured("fds", "count", src, defFDs, float64(n))
	}
	// Checked after the reads, so figures that were read belong to a process that was still running.
	gone, err := exited(ctx, p.proc, p.created)
	if gone != nil {
		return osNotMeasured(p.pid, gone.Error()), gone
	}
	if err != nil {
		errs = append(errs, "liveness: "+err.Error())
	}
	if len(errs) > 0 {
		return f, fmt.Errorf("process %d: %s", p.pid, strings.Join(errs, "; "))
	}
	return f, nil
}

// exited reports the process gone: no longer existing, a zombie, or its PID reused by a process started at
// another time than created (0: not checked). The error is for a check that could not be made.
func exited(ctx context.Context, p *process.Process, created int64) (*ExitedError, error) {
	exists, err := process.PidExistsWithContext(ctx, p.Pid)
	if err != nil {
		return nil, err
	}
	if !exists {
		return &ExitedError{PID: p.Pid}, nil
	}
	// A fresh handle: gopsutil caches the start time in p.
	fresh := &process.Process{Pid: p.Pid}
	status, err := fresh.StatusWithContext(ctx)
	if err != nil {
		if ok, _ := process.PidExistsWithContext(ctx, p.Pid); !ok {
			return &ExitedError{PID: p.Pid}, nil
		}
		return nil, err
	}
	if slices.Contains(status, process.Zombie) {
		return &ExitedError{PID: p.Pid, Detail: "zombie: not yet reaped by its parent"}, nil
	}
	if created != 0 {
		c, err := fresh.CreateTimeWithContext(ctx)
		if err != nil {
			if ok, _ := process.PidExistsWithContext(ctx, p.Pid); !ok {
				return &ExitedError{PID: p.Pid}, nil
			}
			return nil, err
		}
		if c != created {
			return &ExitedError{PID: p.Pid, Detail: "the pid now belongs to a process started later"}, nil
		}
	}
	return nil, nil
}
