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
// flags asked for), and both servers are gone after the session.
func TestGoBooksAB(t *testing.T) {
	server := buildGoBooks(t)
	bin := buildSoakd(t)
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
	stdout, stderr, code := runSoakdWithin(t, 5*time.Minute, bin, "ab", "--config", cfg, "--old", oldSide, "--new", newSide, "--out", out, "--log-format", "json")
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
		if rep.Target.Exit != "exit status 0" {
			t.Errorf("%s side's server: exit %q, want exit status 0 after SIGTERM", side, rep.Target.Exit)
		}
		// Each side started the build its side file asked for.
		if b, err := os.ReadFile(filepath.Join(sideDir, "target.stdout.log")); err != nil || !strings.Contains(string(b), flag) {
			t.Errorf("%s/target.stdout.log lacks %s in the server's ready line (%v): %q", side, flag, err, b)
		}
	}
	if pids["old"] == pids["new"] {
		t.Errorf("both sides measured PID %d; want a server each", pids["old"])
	}
	for side, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("the %s side's server %d still runs after the session", side, pid)
		}
	}
}
