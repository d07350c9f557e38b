package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/report"
)

// goBooksPlantedAlloc is the extra allocation per GraphQL request, in
// bytes, examples/gobooks-ab-new.yaml gives its server
// (-alloc-per-request).
const goBooksPlantedAlloc = 65536

// TestGoBooksAB runs soakd ab as a team comparing two builds of its own
// server would: examples/gobooks-command.yaml as --config, its side files
// as --old and --new (each moved to a free port, the binary built here),
// the new side the same server playing a regressed build. The paired
// comparison of gobooks-small's 2 rounds fails naming graphql-load's
// alloc_bytes_per_request, by about the planted amount, exit 1; each side
// is a complete run of its own command target (its own PID, the build its
// flags asked for), and both servers are gone after the session. As a duet
// (--duet) the same holds, and both servers are started afresh before
// round 2 (compare.duet_processes: round): new PIDs, each server's log
// holding two ready lines, every one of the four processes gone at the end.
func TestGoBooksAB(t *testing.T) {
	server := buildGoBooks(t)
	bin := buildSoakd(t)
	for _, mode := range []string{"sequential", "duet"} {
		t.Run(mode, func(t *testing.T) { goBooksAB(t, bin, server, mode == "duet") })
	}
}

func goBooksAB(t *testing.T, bin, server string, duet bool) {
	ports := map[int]bool{}
	for len(ports) < 3 {
		ports[freePort(t)] = true
	}
	var base, oldPort, newPort int
	for p := range ports {
		switch {
		case base == 0:
			base = p
		case oldPort == 0:
			oldPort = p
		default:
			newPort = p
		}
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gobooks-command.yaml")
	oldSide := filepath.Join(dir, "gobooks-ab-old.yaml")
	newSide := filepath.Join(dir, "gobooks-ab-new.yaml")
	for path, body := range map[string]string{
		cfg:     exampleConfig(t, "gobooks-command.yaml", base, goBooksBinary, server) + "\ndata_dir: " + filepath.Join(dir, "data") + "\n",
		oldSide: exampleConfig(t, "gobooks-ab-old.yaml", base, "4001", strconv.Itoa(oldPort), goBooksBinary, server),
		newSide: exampleConfig(t, "gobooks-ab-new.yaml", base, "4002", strconv.Itoa(newPort), goBooksBinary, server,
			`-alloc-per-request, "65536"`, `-alloc-per-request, "`+strconv.Itoa(goBooksPlantedAlloc)+`"`),
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "session")
	// Two runs of about 30 s each, back to back phase by phase; the bound
	// leaves room for a loaded 2-core machine.
	args := []string{"ab", "--config", cfg, "--old", oldSide, "--new", newSide, "--out", out, "--log-format", "json"}
	if duet {
		args = append(args, "--duet")
	}
	stdout, stderr, code := runSoakdWithin(t, 5*time.Minute, bin, args...)
	if code != 1 {
		t.Fatalf("soakd ab exit %d, want 1 (fail)\nstdout:\n%s\nstderr:\n%.5000s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "FAIL: graphql-load alloc_bytes_per_request") {
		t.Errorf("stdout does not name the failed row:\n%s", stdout)
	}

	cmp, raw := pairedFail(t, out)
	var alloc *report.CompareRow
	for i, r := range cmp.Rows {
		if r.Phase == "graphql-load" && r.Metric == "alloc_bytes_per_request" {
			alloc = &cmp.Rows[i]
		}
	}
	if alloc == nil {
		t.Fatalf("compare.json has no graphql-load alloc_bytes_per_request row: %s", raw)
	}
	if !alloc.Paired || alloc.Outcome != "fail" || alloc.Interval == nil || alloc.Interval.N != 2 || alloc.Old == nil || alloc.New == nil || alloc.Change == nil {
		t.Fatalf("alloc row %+v: want a paired fail over 2 pairs with both figures", *alloc)
	}
	limit := "none"
	if alloc.Limit != nil {
		limit = strconv.FormatFloat(*alloc.Limit, 'f', -1, 64) + " %"
	}
	t.Logf("graphql-load alloc_bytes_per_request: old %.0f B, new %.0f B, change %+.1f %% (paired %.0f %% interval %+.1f … %+.1f %%, %d pairs; limit %s)",
		*alloc.Old, *alloc.New, *alloc.Change, 100*alloc.Interval.Confidence, alloc.Interval.Lo, alloc.Interval.Hi, alloc.Interval.N, limit)
	// The regression seen is the one planted: each request's answer holds
	// the extra bytes once.
	if d := *alloc.New - *alloc.Old; d < 0.75*goBooksPlantedAlloc || d > 1.5*goBooksPlantedAlloc {
		t.Errorf("new − old allocation per request %.0f B, want about the planted %d B", d, goBooksPlantedAlloc)
	}

	pids := map[string]int{}
	var every []int
	for side, flag := range map[string]string{"old": `"alloc_per_request":0`, "new": `"alloc_per_request":` + strconv.Itoa(goBooksPlantedAlloc)} {
		sideDir := filepath.Join(out, side)
		checkGoBooksRun(t, sideDir, code, "command", 0)
		rep, err := report.Read(filepath.Join(sideDir, report.JSONFile))
		if err != nil {
			t.Fatal(err)
		}
		if rep.AB == nil || rep.AB.Side != side || rep.Status != report.StatusComplete || rep.Target == nil || rep.Target.PID == 0 {
			t.Fatalf("%s/report.json: ab %+v, status %s, target %+v; want side %s, complete, a command target's PID", side, rep.AB, rep.Status, rep.Target, side)
		}
		pids[side] = rep.Target.PID
		every = append(every, rep.Target.PID)
		if duet {
			every = append(every, duetFreshProcesses(t, rep, side)...)
		}
		if rep.Target.Exit != "exit status 0" {
			t.Errorf("%s side's server: exit %q, want exit status 0 after SIGTERM", side, rep.Target.Exit)
		}
		// Each side started the build its side file asked for.
		b, err := os.ReadFile(filepath.Join(sideDir, "target.stdout.log"))
		if err != nil || !strings.Contains(string(b), flag) {
			t.Errorf("%s/target.stdout.log lacks %s in the server's ready line (%v): %q", side, flag, err, b)
		}
		// One ready line per process the side had.
		if want := 1 + btoi(duet); strings.Count(string(b), flag) != want {
			t.Errorf("%s/target.stdout.log has %d ready lines, want %d: %q", side, strings.Count(string(b), flag), want, b)
		}
	}
	if pids["old"] == pids["new"] {
		t.Errorf("both sides measured PID %d; want a server each", pids["old"])
	}
	for _, pid := range every {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("server %d still runs after the session", pid)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// duetFreshProcesses checks that a duet side's report says its target was
// started afresh before every round after the first (ab.duet's PIDs change
// at each round and nowhere else; started_first alternates) and returns the
// PIDs it had.
func duetFreshProcesses(t *testing.T, rep *report.Report, side string) []int {
	t.Helper()
	if rep.AB.DuetProcesses != "round" || len(rep.AB.Duet) == 0 {
		t.Fatalf("%s/report.json: ab.duet_processes %q, %d placements; want round", side, rep.AB.DuetProcesses, len(rep.AB.Duet))
	}
	var pids []int
	var firsts []string
	last := 0 // the round of the phase before
	for _, p := range rep.AB.Duet {
		pid := p.OldPID
		if side == report.ABNew {
			pid = p.NewPID
		}
		round := 0
		if i := strings.LastIndexByte(p.Phase, '#'); i >= 0 {
			round, _ = strconv.Atoi(p.Phase[i+1:])
		}
		fresh := round >= 2 && round != last
		switch {
		case pid == 0:
			t.Errorf("%s: phase %s has no PID", side, p.Phase)
		case len(pids) == 0:
			pids = append(pids, pid)
		case fresh:
			if pid == pids[len(pids)-1] || p.StartedFirst == "" {
				t.Errorf("%s: phase %s (the first of round %d) ran on pid %d, started first %q; want a fresh process, the first side named", side, p.Phase, round, pid, p.StartedFirst)
			}
			firsts = append(firsts, p.StartedFirst)
			pids = append(pids, pid)
		case pid != pids[len(pids)-1] || p.StartedFirst != "":
			t.Errorf("%s: phase %s ran on pid %d (started first %q) after pid %d, not the first of a round; want the same process", side, p.Phase, pid, p.StartedFirst, pids[len(pids)-1])
		}
		if round != 0 {
			last = round
		}
	}
	for i := 1; i < len(firsts); i++ {
		if firsts[i] == firsts[i-1] {
			t.Errorf("%s: started first %v; want it to alternate from round to round", side, firsts)
		}
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "Both targets were started afresh before") {
		t.Errorf("%s/report.json's notes do not say the targets were started afresh: %v", side, rep.Notes)
	}
	return pids
}
