package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/soakd/soakd/internal/fsutil"
	"github.com/soakd/soakd/internal/proctree"
)

// RecordDir is where, under data_dir, soakd records the guards of the
// command targets it runs: one file per guard, removed when soakd stops
// the target. A record left behind is a soakd that died without stopping
// its target; the next soakd on the same data_dir ends what is left of
// that target's tree (Sweep). It is data_dir's, not a run directory's,
// because a run directory can be anywhere (--out), and every soakd of a
// configuration looks in its data_dir.
const RecordDir = "targets"

// Record names one guard and the soakd that started it, each by PID and
// start time (so a reused PID is never taken for them).
type Record struct {
	GuardPID        int       `json:"guard_pid"`
	GuardStartTicks uint64    `json:"guard_start_ticks"`
	SoakdPID        int       `json:"soakd_pid"`
	SoakdStartTicks uint64    `json:"soakd_start_ticks"`
	Argv            []string  `json:"argv"`
	Started         time.Time `json:"started"`
}

// recordPath is the record of guard pid in dir.
func recordPath(dir string, pid int) string {
	return filepath.Join(dir, strconv.Itoa(pid)+".json")
}

// Write records the guard pid started by this process for argv in dir.
func Write(dir string, pid int, argv []string) (path string, err error) {
	g, err := proctree.DefaultRoot.Stat(pid)
	if err != nil {
		return "", fmt.Errorf("cannot record the target's guard: %w", err)
	}
	self, err := proctree.DefaultRoot.Stat(os.Getpid())
	if err != nil {
		return "", fmt.Errorf("cannot record the target's guard: %w", err)
	}
	b, err := json.MarshalIndent(Record{GuardPID: pid, GuardStartTicks: g.StartTicks, SoakdPID: self.PID,
		SoakdStartTicks: self.StartTicks, Argv: argv, Started: time.Now().UTC()}, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cannot record the target's guard: %w", err)
	}
	path = recordPath(dir, pid)
	return path, fsutil.WriteFile(path, append(b, '\n'), 0o644)
}

// alive reports whether pid runs and started at start.
func alive(tab proctree.Table, pid int, start uint64) bool {
	p, ok := tab[pid]
	return ok && p.StartTicks == start && p.State != 'Z'
}

// Leftovers are the processes a record's dead soakd left: its guard and
// everything under it, when the guard still runs, and every process still
// in the guard's process group (its PGID is the guard's PID). None when
// that soakd still runs: its target is not left over.
func Leftovers(tab proctree.Table, r Record) []int {
	if alive(tab, r.SoakdPID, r.SoakdStartTicks) {
		return nil
	}
	seen := map[int]bool{}
	var out []int
	if alive(tab, r.GuardPID, r.GuardStartTicks) {
		for _, p := range tab.Tree(r.GuardPID) {
			seen[p] = true
			out = append(out, p)
		}
	}
	for pid, p := range tab {
		if p.PGID == r.GuardPID && !seen[pid] && p.StartTicks >= r.GuardStartTicks {
			seen[pid] = true
			out = append(out, pid)
		}
	}
	return out
}

// Sweep ends what dead soakds left in dir's records: SIGKILL to every
// leftover process (they already outlived their soakd), and removes the
// records of dead soakds. It returns one line per record swept, naming
// what was ended.
func Sweep(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the target records in %s: %w", dir, err)
	}
	tab, err := proctree.DefaultRoot.Snapshot()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil || r.GuardPID <= 0 {
			out = append(out, fmt.Sprintf("removed %s: not a target record (%v)", path, err))
			_ = os.Remove(path)
			continue
		}
		if alive(tab, r.SoakdPID, r.SoakdStartTicks) {
			continue // another soakd's target, still running
		}
		left := Leftovers(tab, r)
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		awaitGone(left, 5*time.Second)
		if len(left) > 0 {
			out = append(out, fmt.Sprintf("ended %s, left running by soakd pid %d (which died) from target.argv %q started %s",
				tab.DescribeAll(left), r.SoakdPID, r.Argv, r.Started.Format(time.RFC3339)))
		}
		_ = os.Remove(path)
	}
	return out, nil
}

// awaitGone waits, up to limit, for the processes pids to be gone (a
// SIGKILLed server releases its port only once it has exited).
func awaitGone(pids []int, limit time.Duration) {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		left := false
		for _, pid := range pids {
			if p, err := proctree.DefaultRoot.Stat(pid); err == nil && p.State != 'Z' {
				left = true
				break
			}
		}
		if !left {
			return
		}
	}
}
