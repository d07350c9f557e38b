package extsample

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/soakd/soakd/internal/proctree"
)

// TreeProc reads the OS figures of a process and of every process under it,
// summed: a server that forks workers (Node's cluster, a pre-fork server)
// is measured as the sum of them. CPU time counts the live processes and
// the ones that exited and were waited for by a process of the tree (the
// kernel adds those to their parent's children's times), so it does not go
// back when a worker exits. A TreeProc is not safe for concurrent use.
type TreeProc struct {
	root  proctree.Root
	pid   int
	start uint64 // the root's start time, in clock ticks after boot
	// Members are the PIDs of the tree at the last reading, root first.
	Members []int
}

// OpenTree opens the tree under pid. It fails with an ExitedError when
// pid is not running.
func OpenTree(pid int32) (*TreeProc, error) {
	return openTree(proctree.DefaultRoot, pid)
}

func openTree(root proctree.Root, pid int32) (*TreeProc, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("invalid pid %d: must be positive", pid)
	}
	p, err := root.Stat(int(pid))
	if errors.Is(err, proctree.ErrNoProcess) {
		return nil, &ExitedError{PID: pid}
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open process %d: %w", pid, err)
	}
	if p.State == 'Z' {
		return nil, &ExitedError{PID: pid, Detail: "zombie: not yet reaped by its parent"}
	}
	return &TreeProc{root: root, pid: int(pid), start: p.StartTicks, Members: []int{int(pid)}}, nil
}

const (
	defTreeCPUUser = "cumulative user-mode CPU time of the process, every process under it and the ones of them that exited, from /proc"
	defTreeCPUSys  = "cumulative kernel-mode CPU time of the process, every process under it and the ones of them that exited, from /proc"
	defTreeRSS     = "resident set size summed over the process and every process under it (memory they share is counted once per process), from /proc"
	defTreeThreads = "number of OS threads of the process and every process under it, from /proc"
	defTreeFDs     = "number of open file descriptors of the process and every process under it, from /proc"
)

// Read reads the tree's figures. When the root process has exited (or its
// PID now names a later process) it returns figures that are all not
// measured and an ExitedError, never zeros.
func (p *TreeProc) Read(context.Context) (OSFigures, error) {
	src := fmt.Sprintf("os: /proc, pid %d and the processes under it", p.pid)
	gone := func(detail string) (OSFigures, error) {
		e := &ExitedError{PID: int32(p.pid), Detail: detail}
		return osNotMeasured(int32(p.pid), e.Error()), e
	}
	t, err := p.root.Subtree(p.pid)
	if err != nil {
		msg := "process table: " + err.Error()
		return OSFigures{
			UserCPUSeconds:   notMeasured("user_cpu_seconds", "seconds", src, defTreeCPUUser, msg),
			SystemCPUSeconds: notMeasured("system_cpu_seconds", "seconds", src, defTreeCPUSys, msg),
			RSSBytes:         notMeasured("rss_bytes", "bytes", src, defTreeRSS, msg),
			Threads:          notMeasured("threads", "count", src, defTreeThreads, msg),
			FDs:              notMeasured("fds", "count", src, defTreeFDs, msg),
		}, fmt.Errorf("process %d: %s", p.pid, msg)
	}
	rootProc, ok := t[p.pid]
	switch {
	case !ok:
		return gone("")
	case rootProc.StartTicks != p.start:
		return gone("the pid now belongs to a process started later")
	case rootProc.State == 'Z':
		return gone("zombie: not yet reaped by its parent")
	}
	p.Members = t.Tree(p.pid)
	var user, sys uint64
	var rss int64
	threads, fds := 0, 0
	fdErr := ""
	for _, pid := range p.Members {
		m := t[pid]
		user += m.UTime + m.CUTime
		sys += m.STime + m.CSTime
		rss += m.RSSPages
		threads += m.Threads
		ents, err := os.ReadDir(string(p.root) + "/" + strconv.Itoa(pid) + "/fd")
		switch {
		case err == nil:
			fds += len(ents)
		case errors.Is(err, os.ErrNotExist):
			// it exited since the snapshot
		default:
			fdErr = "open fds: " + err.Error()
		}
	}
	const tick = 1.0 / proctree.ClockTicks
	f := OSFigures{
		UserCPUSeconds:   measured("user_cpu_seconds", "seconds", src, defTreeCPUUser, float64(user)*tick),
		SystemCPUSeconds: measured("system_cpu_seconds", "seconds", src, defTreeCPUSys, float64(sys)*tick),
		RSSBytes:         measured("rss_bytes", "bytes", src, defTreeRSS, float64(rss*int64(os.Getpagesize()))),
		Threads:          measured("threads", "count", src, defTreeThreads, float64(threads)),
		FDs:              measured("fds", "count", src, defTreeFDs, float64(fds)),
	}
	if fdErr != "" {
		f.FDs = notMeasured("fds", "count", src, defTreeFDs, fdErr)
		return f, fmt.Errorf("process %d: %s", p.pid, fdErr)
	}
	return f, nil
}
