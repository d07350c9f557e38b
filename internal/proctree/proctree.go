// Package proctree reads the Linux process table from /proc: each process's
// parent, state and CPU time, the tree under a process, and which processes
// hold the socket listening on a TCP port. soakd uses it to know that the
// process it samples is the server that answers: the process holding the
// listening socket of the GraphQL URL, and the processes under it.
//
// Everything here reads /proc at the time of the call; processes come and
// go between two reads, so a process that vanished mid-read is skipped, not
// an error.
package proctree

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ClockTicks is the unit of the CPU times in /proc/<pid>/stat, per second.
// Linux reports them in USER_HZ, which is 100 on every architecture Go
// supports (sysconf(_SC_CLK_TCK)).
const ClockTicks = 100

// Proc is one process as /proc/<pid>/stat describes it.
type Proc struct {
	PID, PPID int
	// PGID is its process group.
	PGID int
	// Comm is the executable's name as the kernel keeps it (at most 15 bytes).
	Comm string
	// State is the one-letter state: R, S, D, Z (zombie), T, ...
	State byte
	// StartTicks is when it started, in clock ticks after boot: with PID it
	// names one process even after the PID is reused.
	StartTicks uint64
	// UTime and STime are its own user and kernel CPU time; CUTime and
	// CSTime those of its children that exited and were waited for, all in
	// clock ticks (ClockTicks per second).
	UTime, STime, CUTime, CSTime uint64
	// Threads is its number of threads.
	Threads int
	// RSSPages is its resident set in pages.
	RSSPages int64
}

// CPUTicks is the CPU time of the process and of its children it has
// waited for, in clock ticks: summed over a tree of live processes it counts
// every process of the tree that ever ran, once, as long as each exited one
// was reaped by a process of the tree.
func (p Proc) CPUTicks() uint64 { return p.UTime + p.STime + p.CUTime + p.CSTime }

// ErrNoProcess is returned for a process that does not exist.
var ErrNoProcess = errors.New("no such process")

// Root is the proc file system's mount point; tests point it elsewhere.
type Root string

// DefaultRoot is /proc.
const DefaultRoot Root = "/proc"

// Stat reads /proc/<pid>/stat.
func (r Root) Stat(pid int) (Proc, error) {
	b, err := os.ReadFile(string(r) + "/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return Proc{}, fmt.Errorf("process %d: %w", pid, ErrNoProcess)
	}
	if err != nil {
		return Proc{}, err
	}
	return ParseStat(b)
}

// ParseStat parses the text of /proc/<pid>/stat (proc(5)). The command name
// is in parentheses and may itself hold spaces and parentheses, so the
// fields are counted from the last ')'.
func ParseStat(b []byte) (Proc, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return Proc{}, fmt.Errorf("malformed stat line %q", truncate(b))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:open])))
	if err != nil {
		return Proc{}, fmt.Errorf("malformed stat line %q: pid: %w", truncate(b), err)
	}
	f := strings.Fields(string(b[end+1:]))
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 22 {
		return Proc{}, fmt.Errorf("malformed stat line %q: %d fields", truncate(b), len(f)+2)
	}
	p := Proc{PID: pid, Comm: string(b[open+1 : end]), State: f[0][0]}
	ints := []struct {
		field int
		into  *uint64
	}{{14, &p.UTime}, {15, &p.STime}, {16, &p.CUTime}, {17, &p.CSTime}, {22, &p.StartTicks}}
	for _, x := range ints {
		v, err := strconv.ParseInt(f[x.field-3], 10, 64)
		if err != nil {
			return Proc{}, fmt.Errorf("malformed stat line of pid %d: field %d: %w", pid, x.field, err)
		}
		*x.into = uint64(max(v, 0))
	}
	for _, x := range []struct {
		field int
		into  *int
	}{{4, &p.PPID}, {5, &p.PGID}, {20, &p.Threads}} {
		if *x.into, err = strconv.Atoi(f[x.field-3]); err != nil {
			return Proc{}, fmt.Errorf("malformed stat line of pid %d: field %d: %w", pid, x.field, err)
		}
	}
	if p.RSSPages, err = strconv.ParseInt(f[24-3], 10, 64); err != nil {
		return Proc{}, fmt.Errorf("malformed stat line of pid %d: field 24: %w", pid, err)
	}
	return p, nil
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// Table is a snapshot of the process table.
type Table map[int]Proc

// Snapshot reads every process.
func (r Root) Snapshot() (Table, error) {
	ents, err := os.ReadDir(string(r))
	if err != nil {
		return nil, fmt.Errorf("cannot read the process table: %w", err)
	}
	t := Table{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		p, err := r.Stat(pid)
		if err != nil {
			continue // it exited while we read
		}
		t[pid] = p
	}
	return t, nil
}

// Children returns the PIDs whose parent is pid, in order.
func (t Table) Children(pid int) []int {
	var out []int
	for c, p := range t {
		if p.PPID == pid && c != pid {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// Tree returns root and every process under it, root first and then in
// breadth-first order (each level by PID). It is empty when root is not in
// the table.
func (t Table) Tree(root int) []int {
	if _, ok := t[root]; !ok {
		return nil
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, t.Children(out[i])...)
	}
	return out
}

// Ancestors returns pid's parent, its parent's parent and so on up to the
// first process not in the table (or PID 1, or 0), nearest first.
func (t Table) Ancestors(pid int) []int {
	var out []int
	seen := map[int]bool{pid: true}
	for p, ok := t[pid]; ok && p.PPID > 0 && !seen[p.PPID]; p, ok = t[p.PPID] {
		out = append(out, p.PPID)
		seen[p.PPID] = true
	}
	return out
}

// IsUnder reports whether pid is ancestor or ancestor's descendant: pid ==
// ancestor, or ancestor is among pid's ancestors.
func (t Table) IsUnder(pid, ancestor int) bool {
	return pid == ancestor || slices.Contains(t.Ancestors(pid), ancestor)
}

// CommonAncestor returns the nearest process that is, or is an ancestor
// of, every one of pids; 0 when there is none in the table (pids empty, or
// their chains meet only outside it).
func (t Table) CommonAncestor(pids []int) int {
	if len(pids) == 0 {
		return 0
	}
	cand := append([]int{pids[0]}, t.Ancestors(pids[0])...)
	for _, c := range cand {
		if _, ok := t[c]; !ok {
			continue
		}
		all := true
		for _, p := range pids[1:] {
			if !t.IsUnder(p, c) {
				all = false
				break
			}
		}
		if all {
			return c
		}
	}
	return 0
}

// Describe names a process in messages: "pid 1234 (node)".
func (t Table) Describe(pid int) string {
	if p, ok := t[pid]; ok {
		return fmt.Sprintf("pid %d (%s)", pid, p.Comm)
	}
	return fmt.Sprintf("pid %d", pid)
}

// Comm is pid's executable name, "?" when it is not in the table.
func (t Table) Comm(pid int) string {
	if p, ok := t[pid]; ok {
		return p.Comm
	}
	return "?"
}

// DescribeAll names several processes: "pid 1 (a), pid 2 (b)".
func (t Table) DescribeAll(pids []int) string {
	s := make([]string, len(pids))
	for i, p := range pids {
		s[i] = t.Describe(p)
	}
	return strings.Join(s, ", ")
}

// Cmdline reads a process's command line, its arguments joined by spaces
// (at most 200 bytes); "" when it cannot be read.
func (r Root) Cmdline(pid int) string {
	b, err := os.ReadFile(string(r) + "/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Located is the process tree that serves a listening socket.
type Located struct {
	// Root is the process to sample with everything under it: the nearest
	// common ancestor of the socket's holders (the holder itself when there
	// is one).
	Root int
	// Holders are the processes holding the listening socket.
	Holders []int
	// Note says how Root relates to the process soakd was given, when it is
	// another one ("" when Root is that process).
	Note string
}

// Locate finds the process tree serving a listening socket held by
// holders, and checks it against the process soakd was given: given must be
// Root, under it (a worker of a server that forks) or above it (a launcher:
// npm, go run, a shell script). what names the socket in messages
// ("127.0.0.1:4000"); who names given ("target.pid 1234", "the target
// command").
func (t Table) Locate(holders []int, given int, what, who string) (Located, error) {
	if len(holders) == 0 {
		return Located{}, fmt.Errorf("no process on this machine listens on %s", what)
	}
	root := t.CommonAncestor(holders)
	if root <= 1 {
		return Located{}, fmt.Errorf("the socket listening on %s is held by unrelated processes (%s): soakd cannot tell which one is the server",
			what, t.DescribeAll(holders))
	}
	l := Located{Root: root, Holders: holders}
	switch {
	case given == root:
	case t.IsUnder(given, root):
		l.Note = fmt.Sprintf("%s (%s) is under %s, which holds the socket listening on %s: soakd samples %s and every process under it",
			who, t.Comm(given), t.Describe(root), what, t.Describe(root))
	case t.IsUnder(root, given):
		l.Note = fmt.Sprintf("%s (%s) started %s, which holds the socket listening on %s: soakd samples %s and every process under it",
			who, t.Comm(given), t.Describe(root), what, t.Describe(root))
	default:
		return Located{}, fmt.Errorf("%s (%s) is not the server listening on %s: that socket is held by %s, which is neither it, under it nor above it "+
			"(attach to the server's own pid, or point the URLs at the server the pid runs)",
			who, t.Comm(given), what, t.DescribeAll(holders))
	}
	return l, nil
}

// Subtree reads root and every process under it, without reading the rest
// of the process table: each process's children come from
// /proc/<pid>/task/*/children (one file per thread). Reading the whole table
// costs a stat read per process of the machine at every sample; the tree of a
// server is a handful. On a kernel without those files (CONFIG_PROC_CHILDREN)
// it reads the whole table. The table holds the tree's processes only; a
// root that does not exist gives an empty table.
func (r Root) Subtree(root int) (Table, error) {
	t := Table{}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if _, seen := t[pid]; seen {
			continue
		}
		p, err := r.Stat(pid)
		if err != nil {
			continue // it exited while we read
		}
		t[pid] = p
		kids, ok := r.children(pid)
		if !ok {
			all, err := r.Snapshot()
			if err != nil {
				return nil, err
			}
			sub := Table{}
			for _, q := range all.Tree(root) {
				sub[q] = all[q]
			}
			return sub, nil
		}
		queue = append(queue, kids...)
	}
	return t, nil
}

// children lists pid's children from its threads' children files; ok is
// false when the kernel has no such files.
func (r Root) children(pid int) (kids []int, ok bool) {
	dir := string(r) + "/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, true // it exited: no children to follow
	}
	for _, task := range tasks {
		b, err := os.ReadFile(dir + "/" + task.Name() + "/children")
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat(dir + "/" + task.Name()); serr == nil {
				return nil, false // the thread exists, its children file does not
			}
			continue
		}
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				kids = append(kids, c)
			}
		}
	}
	return kids, true
}
