// Package guard runs a command target's process tree so that none of it
// outlives soakd: `soakd guard` is the process soakd starts for
// target.argv, and it starts argv in turn.
//
// Pdeathsig, which the kernel sends a child when its parent dies, reaches
// only the direct child. A target started through a wrapper (`sh -c
// "server; echo done"`, `npm start`, `go run .`, a launcher script) has its
// server one or more levels down: when soakd was killed (kill -9, the OOM
// killer) the wrapper died and the server ran on under PID 1, holding its
// port, and the next run's readiness check was answered by the orphan.
//
// The guard is that direct child. It gets SIGTERM when soakd dies (soakd
// sets it as the guard's Pdeathsig), is a child subreaper (so every orphan
// of the tree is re-parented to it, not to PID 1), and on SIGTERM or
// SIGINT ends the whole tree: SIGTERM to its process group and to every
// process under it, the grace to exit, then SIGKILL. It exits once no
// process of the tree is left, with the status of argv's process (exit
// code, or the same signal).
package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/soakd/soakd/internal/proctree"
)

// Command is the soakd subcommand that runs the guard.
const Command = "guard"

// Args are the arguments that make `exe` guard argv for soakd (pid
// parent), giving grace between SIGTERM and SIGKILL.
func Args(exe string, parent int, grace time.Duration, argv []string) []string {
	return append([]string{exe, Command, "--parent", fmt.Sprint(parent), "--grace", grace.String(), "--"}, argv...)
}

// Run starts argv with the guard's own standard streams, environment and
// directory, and returns the exit code the guard should exit with, once
// every process under the guard is gone. ctx ending (SIGTERM, SIGINT: soakd
// stopping the target, or dying) ends the tree. parent is the PID of the
// soakd that started the guard: when it is already gone (it died before
// the guard could arm itself) the tree is not started at all.
func Run(ctx context.Context, argv []string, parent int, grace time.Duration, stderr io.Writer) (code int, sig syscall.Signal) {
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "soakd guard: no command to run")
		return 2, 0
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(stderr, "soakd guard: cannot become a child subreaper: %v\n", err)
		return 126, 0
	}
	// Pdeathsig is armed once the guard runs; a parent that died before
	// that sent nothing, and the guard now belongs to another process.
	if parent > 0 && os.Getppid() != parent {
		fmt.Fprintf(stderr, "soakd guard: soakd (pid %d) is gone: not starting %s\n", parent, argv[0])
		return 125, 0
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "soakd guard: cannot start %s: %v\n", argv[0], err)
		return 127, 0
	}
	main := cmd.Process.Pid

	reaped := make(chan reap)
	go reapAll(reaped)
	var status *syscall.WaitStatus
	var stopping <-chan time.Time // fires after the grace, once stopping
	done := ctx.Done()
	for {
		select {
		case r := <-reaped:
			if r.err != nil { // ECHILD: nothing left
				return exitOf(status)
			}
			if r.pid == main {
				st := r.status
				status = &st
			}
		case <-done:
			done = nil
			signalTree(syscall.SIGTERM)
			t := time.NewTimer(grace)
			defer t.Stop()
			stopping = t.C
		case <-stopping:
			stopping = nil
			signalTree(syscall.SIGKILL)
		}
	}
}

// reap is one child reaped, or err once there is none left.
type reap struct {
	pid    int
	status syscall.WaitStatus
	err    error
}

// reapAll waits for every child of the guard (argv's process and every
// orphan re-parented to it) until there is none left.
func reapAll(out chan<- reap) {
	for {
		var st syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &st, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			out <- reap{err: err}
			return
		}
		out <- reap{pid: pid, status: st}
	}
}

// signalTree sends sig to every process of the guard's process group and
// under the guard (one that left the group with setsid is still under it),
// but not to the guard itself, which must stay to reap them.
func signalTree(sig syscall.Signal) {
	self, pgrp := os.Getpid(), syscall.Getpgrp()
	tab, err := proctree.DefaultRoot.Snapshot()
	if err != nil {
		if pgrp == self {
			_ = syscall.Kill(-pgrp, sig) // the best that can be done
		}
		return
	}
	for _, pid := range Victims(tab, self, pgrp) {
		_ = syscall.Kill(pid, sig)
	}
}

// Victims are the processes the guard self ends: those under it and, when
// it leads its process group pgrp (as soakd starts it), those of the group;
// never itself, and never a group it does not lead (that of the shell or
// test runner that started it).
func Victims(tab proctree.Table, self, pgrp int) []int {
	seen := map[int]bool{self: true}
	var out []int
	for _, pid := range tab.Tree(self) {
		if !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	for pid, p := range tab {
		if pgrp == self && p.PGID == pgrp && !seen[pid] {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	return out
}

// exitOf says how argv's process ended: its exit code, or the signal
// that ended it.
func exitOf(st *syscall.WaitStatus) (int, syscall.Signal) {
	switch {
	case st == nil:
		return 0, 0
	case st.Exited():
		return st.ExitStatus(), 0
	case st.Signaled():
		return 128 + int(st.Signal()), st.Signal()
	}
	return 1, 0
}
