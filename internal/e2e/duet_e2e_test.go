package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
)

// TestDuetSession runs soakd ab --duet end to end: the new side plants
// 256 KiB of allocation per GraphQL request, so the comparison fails
// naming graphql-load's alloc_bytes_per_request, exit 1; the terminal and
// both reports say it was a duet and which side ran on which CPU in each
// phase (every CPU for both with the shared layout, the halves swapped
// between rounds with halves); and both targets ran each phase at the
// same time (their phases overlap).
func TestDuetSession(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("a duet needs 2 CPUs")
	}
	bin := buildSoakd(t)
	for _, layout := range []string{"shared", "halves"} {
		t.Run(layout, func(t *testing.T) {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "ab.yaml")
			alloc := filepath.Join(dir, "alloc.yaml")
			for path, body := range map[string]string{cfg: abConfig, alloc: "inject: {graphql_alloc_bytes_per_request: 262144}\n"} {
				if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			out := filepath.Join(dir, "session")
			// Halves keeps one process per side, shared (the default) starts
			// both afresh before every round.
			processes := map[string]string{"shared": "round", "halves": "session"}[layout]
			stdout, stderr, code := runSoakd(t, bin, "ab", "--duet", "--duet-layout", layout, "--duet-processes", processes, "--config", cfg, "--new", alloc, "--out", out, "--log-format", "json")
			if code != 1 {
				t.Fatalf("soakd ab --duet exit %d, want 1 (fail)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			for _, want := range []string{"FAIL: graphql-load alloc_bytes_per_request", "note: Duet: both builds ran every phase at the same time",
				"rest-control#1: old on CPU ", "graphql-load#2: old on CPU ", report.DuetNotCompared, "session: " + out} {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			raw, err := os.ReadFile(filepath.Join(out, "compare.json"))
			if err != nil {
				t.Fatal(err)
			}
			var cmp report.Comparison
			if err := json.Unmarshal(raw, &cmp); err != nil {
				t.Fatal(err)
			}
			alloc256 := false
			for _, r := range cmp.Rows {
				if r.Phase == "graphql-load" && r.Metric == "alloc_bytes_per_request" {
					alloc256 = r.Paired && r.Outcome == "fail"
				}
			}
			if !alloc256 || cmp.Verdict != "fail" || len(cmp.Duet) != 6 {
				t.Errorf("compare.json: alloc row failed %v, verdict %s, %d placements; want a paired fail, fail, 6 placements:\n%s", alloc256, cmp.Verdict, len(cmp.Duet), raw)
			}
			// soakd compare of the two sides judges them as the session did: it
			// finds the simultaneous seconds beside them.
			if _, err := os.Stat(filepath.Join(out, report.DuetSecondsFile)); err != nil {
				t.Errorf("the session wrote no %s: %v", report.DuetSecondsFile, err)
			}
			again, stderr2, code2 := runSoakd(t, bin, "compare", "--config", cfg, "--format", "json", filepath.Join(out, "old"), filepath.Join(out, "new"))
			var recmp report.Comparison
			if err := json.Unmarshal([]byte(again), &recmp); err != nil || code2 != 1 {
				t.Fatalf("soakd compare of the sides: exit %d, %v\n%s\n%s", code2, err, again, stderr2)
			}
			rowsOf := func(c report.Comparison) []string {
				var rs []string
				for _, r := range c.Rows {
					rs = append(rs, r.Phase+"/"+r.Metric+"="+string(r.Outcome))
				}
				return rs
			}
			if !slices.Equal(rowsOf(recmp), rowsOf(cmp)) || recmp.Verdict != cmp.Verdict || !slices.Contains(rowsOf(cmp), "graphql-load/"+report.MetricCPUSeconds+"="+string(rowOutcome(cmp, report.MetricCPUSeconds))) {
				t.Errorf("soakd compare of the sides gave %v (%s), the session %v (%s)", rowsOf(recmp), recmp.Verdict, rowsOf(cmp), cmp.Verdict)
			}
			sides := map[string]*report.Report{}
			for _, side := range []string{"old", "new"} {
				rep, err := report.Read(filepath.Join(out, side, report.JSONFile))
				if err != nil {
					t.Fatal(err)
				}
				sides[side] = rep
				if rep.AB == nil || rep.AB.Side != side || len(rep.AB.Duet) != 6 || rep.Status != report.StatusComplete {
					t.Fatalf("%s/report.json: ab %+v, status %s; want a complete duet side with 6 placements", side, rep.AB, rep.Status)
				}
			}
			// Simultaneous: each phase ran on both sides at once.
			o, n := sides["old"].Phases, sides["new"].Phases
			if len(o) != 6 || len(n) != 6 {
				t.Fatalf("%d and %d phases, want 6 each", len(o), len(n))
			}
			for i := range o {
				if o[i].Name != n[i].Name || !o[i].Start.Before(n[i].End) || !n[i].Start.Before(o[i].End) {
					t.Errorf("phase %s: old %v–%v, new %s %v–%v; want the same phase overlapping", o[i].Name, o[i].Start, o[i].End, n[i].Name, n[i].Start, n[i].End)
				}
			}
			if !slices.ContainsFunc(sides["old"].Notes, func(s string) bool { return strings.HasPrefix(s, "Duet A/B session ") }) {
				t.Errorf("old/report.json has no duet note: %v", sides["old"].Notes)
			}
			for side, rep := range sides {
				if processes == "round" {
					if pids := duetFreshProcesses(t, rep, side); len(pids) != 3 {
						t.Errorf("%s side: processes %v, want one per round (3)", side, pids)
					}
					continue
				}
				for _, p := range rep.AB.Duet {
					if p.OldPID != rep.AB.Duet[0].OldPID || p.NewPID != rep.AB.Duet[0].NewPID || p.StartedFirst != "" || rep.AB.DuetProcesses != "session" {
						t.Errorf("%s side, --duet-processes session: phase %s on old pid %d, new pid %d (started first %q, duet_processes %q); want one process per side",
							side, p.Phase, p.OldPID, p.NewPID, p.StartedFirst, rep.AB.DuetProcesses)
					}
				}
			}
			if layout == "shared" {
				// Both sides on every CPU in every phase.
				for _, p := range sides["new"].AB.Duet {
					if len(p.OldCPUs) < 2 || !slices.Equal(p.OldCPUs, p.NewCPUs) {
						t.Errorf("phase %s: old on %v, new on %v; want both on every CPU", p.Phase, p.OldCPUs, p.NewCPUs)
					}
				}
				if !strings.Contains(stdout, "compare.duet_layout: shared") {
					t.Errorf("stdout does not say the layout was shared:\n%s", stdout)
				}
				return
			}
			// Halves: the sides on disjoint CPUs in every phase, swapped between
			// rounds 1 and 2 and back in round 3.
			cpuOfOld := map[string]int{}
			for _, p := range sides["new"].AB.Duet {
				if len(p.OldCPUs) != 1 || len(p.NewCPUs) != 1 || p.OldCPUs[0] == p.NewCPUs[0] {
					t.Errorf("phase %s: old on %v, new on %v; want one CPU each, apart", p.Phase, p.OldCPUs, p.NewCPUs)
					continue
				}
				cpuOfOld[p.Phase] = p.OldCPUs[0]
			}
			if a, b, c := cpuOfOld["graphql-load#1"], cpuOfOld["graphql-load#2"], cpuOfOld["graphql-load#3"]; a == b || a != c {
				t.Errorf("the old side's CPU in graphql-load rounds 1-3: %d, %d, %d; want swapped each round", a, b, c)
			}
		})
	}
}

// rowOutcome is the outcome of graphql-load's row of metric in c.
func rowOutcome(c report.Comparison, metric string) kpi.Outcome {
	for _, r := range c.Rows {
		if r.Phase == "graphql-load" && r.Metric == metric {
			return r.Outcome
		}
	}
	return "absent"
}
