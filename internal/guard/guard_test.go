package guard

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/proctree"
)

func TestVictims(t *testing.T) {
	// 5 the guard (group 5) → 6 sh → 7 server; 8 left the group with setsid
	// but is under the guard; 9 is in the group but re-parented elsewhere;
	// 30 is unrelated.
	tab := proctree.Table{5: {PID: 5, PPID: 1, PGID: 5}, 6: {PID: 6, PPID: 5, PGID: 5}, 7: {PID: 7, PPID: 6, PGID: 5},
		8: {PID: 8, PPID: 6, PGID: 8}, 9: {PID: 9, PPID: 1, PGID: 5}, 30: {PID: 30, PPID: 1, PGID: 30}}
	got := Victims(tab, 5, 5)
	same := func(got []int, want ...int) bool {
		if len(got) != len(want) {
			return false
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false
			}
		}
		return true
	}
	if !same(got, 6, 7, 8, 9) {
		t.Fatalf("victims %v, want 6 7 8 9 (never the guard itself)", got)
	}
	// A guard that does not lead its group spares the group: it is the
	// shell's or the test runner's.
	if got := Victims(tab, 6, 5); !same(got, 7, 8) {
		t.Fatalf("victims of a guard not leading its group %v, want 7 8", got)
	}
}

// TestGuardEndsOrphans: argv's shell starts a background server and is then
// killed; the server, orphaned, is re-parented to the guard (a subreaper)
// instead of PID 1, and ends when the guard is told to stop. The guard
// returns only then, with the shell's end.
func TestGuardEndsOrphans(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "bg.pid")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type end struct {
		code int
		sig  syscall.Signal
	}
	done := make(chan end, 1)
	var stderr bytes.Buffer
	go func() {
		code, sig := Run(ctx, []string{"sh", "-c", `sleep 120 & echo $! > "$0"; exec sleep 120`, pidFile}, 0, 2*time.Second, &stderr)
		done <- end{code, sig}
	}()
	var bg int
	for i := 0; bg == 0 && i < 200; i++ {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			bg, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if bg == 0 {
		t.Fatalf("the background process never started; guard said %q", stderr.String())
	}
	bgProc, err := proctree.DefaultRoot.Stat(bg)
	if err != nil {
		t.Fatal(err)
	}
	sh := bgProc.PPID
	if err := syscall.Kill(sh, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The orphan is re-parented to the guard (this test process).
	for i := 0; i < 200; i++ {
		if p, err := proctree.DefaultRoot.Stat(bg); err == nil && p.PPID == os.Getpid() {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p, err := proctree.DefaultRoot.Stat(bg); err != nil || p.PPID != os.Getpid() {
		t.Fatalf("orphan %d: %+v, %v; want it re-parented to the guard %d", bg, p, err, os.Getpid())
	}
	select {
	case e := <-done:
		t.Fatalf("the guard returned (%+v) while the orphan still ran", e)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	e := <-done
	if e.sig != syscall.SIGKILL || e.code != 128+int(syscall.SIGKILL) {
		t.Errorf("guard ended with %+v, want argv's end: killed", e)
	}
	if _, err := proctree.DefaultRoot.Stat(bg); err == nil {
		t.Errorf("the orphan %d still runs after the guard returned", bg)
	}
}

func TestLeftovers(t *testing.T) {
	r := Record{GuardPID: 50, GuardStartTicks: 1000, SoakdPID: 40, SoakdStartTicks: 900}
	// soakd 40 and the guard 50 were killed; the server 52 (group 50) runs
	// under PID 1; 60 is a later, unrelated group.
	dead := proctree.Table{1: {PID: 1}, 52: {PID: 52, PPID: 1, PGID: 50, StartTicks: 1010}, 60: {PID: 60, PPID: 1, PGID: 60, StartTicks: 2000}}
	if got := Leftovers(dead, r); len(got) != 1 || got[0] != 52 {
		t.Errorf("leftovers %v, want the server 52", got)
	}
	// The same PID 40 now names a later process: soakd is still dead.
	reused := proctree.Table{40: {PID: 40, StartTicks: 5000}, 52: {PID: 52, PPID: 1, PGID: 50, StartTicks: 1010}}
	if got := Leftovers(reused, r); len(got) != 1 {
		t.Errorf("leftovers %v with soakd's pid reused, want the server", got)
	}
	// soakd still runs: nothing is left over.
	live := proctree.Table{40: {PID: 40, StartTicks: 900}, 50: {PID: 50, PPID: 40, PGID: 50, StartTicks: 1000},
		52: {PID: 52, PPID: 50, PGID: 50, StartTicks: 1010}}
	if got := Leftovers(live, r); got != nil {
		t.Errorf("leftovers %v of a live soakd, want none", got)
	}
	// The guard survived its soakd: it and its tree are left over.
	orphanGuard := proctree.Table{50: {PID: 50, PPID: 1, PGID: 50, StartTicks: 1000}, 52: {PID: 52, PPID: 50, PGID: 50, StartTicks: 1010},
		53: {PID: 53, PPID: 52, PGID: 53, StartTicks: 1020}}
	if got := Leftovers(orphanGuard, r); len(got) != 3 {
		t.Errorf("leftovers %v, want the guard and its tree", got)
	}
}
