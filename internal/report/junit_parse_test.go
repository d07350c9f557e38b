package report

import (
	"io"
	"strings"
	"testing"
	"time"

	junit "github.com/joshdk/go-junit"

	"github.com/soakd/soakd/internal/kpi"
)

// TestJUnitReadByAJUnitParser reads junit.xml with a JUnit parser as CI
// servers use one (github.com/joshdk/go-junit): the widget must show what
// the exit code says. Before, an inconclusive run (exit 4) was only skipped
// cases (green), and the cases' times summed every phase once per rule
// (1,867 s of cases for a 158 s run).
func TestJUnitReadByAJUnitParser(t *testing.T) {
	for _, c := range []struct {
		verdict                 kpi.Outcome
		mode                    string // report.junit_inconclusive
		failed, errored, passed int    // the run's own case among them
		runStatus               junit.Status
	}{
		{kpi.OutcomePass, "", 0, 0, 1, junit.StatusPassed},
		{kpi.OutcomeFail, "", 1, 0, 0, junit.StatusFailed},
		{kpi.OutcomeInconclusive, "", 1, 0, 0, junit.StatusFailed},
		{kpi.OutcomeInconclusive, "failure", 1, 0, 0, junit.StatusFailed},
		{kpi.OutcomeInconclusive, JUnitSkipped, 0, 0, 0, junit.StatusSkipped},
		{kpi.OutcomeFail, JUnitSkipped, 1, 0, 0, junit.StatusFailed},
		{kpi.OutcomeAborted, JUnitSkipped, 0, 1, 0, junit.StatusError},
		{kpi.OutcomeAborted, "", 0, 1, 0, junit.StatusError},
	} {
		r := richFixture(kpi.GateInterval)
		r.Verdict, r.Status, r.JUnitInconclusive = c.verdict, StatusComplete, c.mode
		if c.verdict == kpi.OutcomeAborted {
			r.Status = StatusAborted
		}
		r.KPIs, r.Checks, r.Rounds = nil, nil, nil // the run's case alone decides the counts here
		b, err := r.JUnit()
		if err != nil {
			t.Fatal(err)
		}
		suites, err := junit.Ingest(b)
		if err != nil || len(suites) != 1 {
			t.Fatalf("%s: the parser read %d suites: %v", c.verdict, len(suites), err)
		}
		tot := suites[0].Totals
		if tot.Failed != c.failed || tot.Error != c.errored || tot.Passed != c.passed {
			t.Errorf("%s (%q): parsed totals %+v, want %d failed, %d error, %d passed", c.verdict, c.mode, tot, c.failed, c.errored, c.passed)
		}
		if got := suites[0].Tests[0]; got.Name != "run" || got.Status != c.runStatus {
			t.Errorf("%s (%q): first case %s is %s, want run %s", c.verdict, c.mode, got.Name, got.Status, c.runStatus)
		}
	}

	// With every rule: the times add up to the run's duration.
	r := richFixture(kpi.GateInterval)
	r.Verdict = kpi.OutcomeInconclusive
	b, err := r.JUnit()
	if err != nil {
		t.Fatal(err)
	}
	suites, err := junit.Ingest(b)
	if err != nil {
		t.Fatal(err)
	}
	var sum time.Duration
	for _, tc := range suites[0].Tests {
		sum += tc.Duration
	}
	if want := r.FinishedAt.Sub(r.StartedAt); sum != want {
		t.Errorf("the cases' times add up to %s, want the run's %s", sum, want)
	}
	if suites[0].Totals.Failed == 0 {
		t.Errorf("an inconclusive run read no failure: %+v", suites[0].Totals)
	}
}

// TestSelfCheckReasonsNameTheArms: a self-check (--arms rest,rest) compares
// REST with a copy of itself, and its reasons say so, not "GraphQL − REST".
func TestSelfCheckReasonsNameTheArms(t *testing.T) {
	r := richFixture(kpi.GateInterval)
	r.Arms = "rest,rest"
	reasons := strings.Join(r.Reasons(), "\n")
	if strings.Contains(reasons, "GraphQL − REST") || !strings.Contains(reasons, "REST (copy) − REST") {
		t.Errorf("self-check reasons:\n%s", reasons)
	}
}

// TestNotMeasuredChecksShowNoFigure: a check not measured gives its reason,
// never a figure (the reasons read "0 B against 0 B: no baseline sample").
func TestNotMeasuredChecksShowNoFigure(t *testing.T) {
	r := richFixture(kpi.GateInterval)
	reasons := strings.Join(r.Reasons(), "\n")
	if !strings.Contains(reasons, "NOT_MEASURED: check Heap returned: no baseline sample") || strings.Contains(reasons, "0 B against") {
		t.Errorf("reasons:\n%s", reasons)
	}
	md := r.Markdown()
	if !strings.Contains(md, "| Heap returned | not measured |") {
		t.Errorf("report.md's check row for a not-measured check:\n%s", md)
	}
}

// TestCompareJUnitInconclusiveFollowsTheOldRun: an inconclusive comparison
// is a failed verdict case unless the old (base) run's report chose
// skipped; the new run's choice does not count.
func TestCompareJUnitInconclusiveFollowsTheOldRun(t *testing.T) {
	for _, c := range []struct {
		old, new string
		want     junit.Status
	}{
		{"", "", junit.StatusFailed},
		{"", JUnitSkipped, junit.StatusFailed},
		{JUnitSkipped, "", junit.StatusSkipped},
	} {
		old, new := richFixture(kpi.GateInterval), richFixture(kpi.GateInterval)
		old.JUnitInconclusive, new.JUnitInconclusive = c.old, c.new
		new.Profile = "other" // different workloads: inconclusive whatever the rows
		cmp := CompareRuns(old, new, CompareLimits{})
		if cmp.Verdict != kpi.OutcomeInconclusive {
			t.Fatalf("verdict %s, want inconclusive", cmp.Verdict)
		}
		b, err := cmp.JUnit()
		if err != nil {
			t.Fatal(err)
		}
		suites, err := junit.Ingest(b)
		if err != nil {
			t.Fatal(err)
		}
		tests := suites[0].Tests
		if got := tests[len(tests)-1]; got.Name != "verdict" || got.Status != c.want {
			t.Errorf("old %q, new %q: the verdict case %s is %s, want %s", c.old, c.new, got.Name, got.Status, c.want)
		}
	}
}

// TestSettleRounds: the command's advice settles every undecided gated
// KPI row, or none is given.
func TestSettleRounds(t *testing.T) {
	r := richFixture(kpi.GateInterval)
	r.KPIs = []kpi.Result{
		{Name: "a", Gated: true, Outcome: kpi.OutcomeInconclusive, SettleRounds: 7},
		{Name: "b", Gated: true, Outcome: kpi.OutcomeInconclusive, SettleRounds: 11},
		{Name: "c", Gated: true, Outcome: kpi.OutcomePass, Pass: true},
		{Name: "d", Gated: false, Outcome: kpi.OutcomeInconclusive},
	}
	if n := r.SettleRounds(); n != 11 {
		t.Errorf("SettleRounds = %d, want the largest, 11", n)
	}
	r.KPIs = append(r.KPIs, kpi.Result{Name: "e", Gated: true, Outcome: kpi.OutcomeNotMeasured})
	if n := r.SettleRounds(); n != 0 {
		t.Errorf("with a row rounds cannot settle: SettleRounds = %d, want 0", n)
	}
}

// TestDriverPIDsNameEveryShard: a sharded phase's table cell names every
// driver process, not shard 0's alone.
func TestDriverPIDsNameEveryShard(t *testing.T) {
	p := Phase{DriverPID: 101}
	if got := p.DriverPIDs(); got != "101" {
		t.Errorf("one driver: %q", got)
	}
	p.DriverShards = []DriverShard{{Shard: 0, PID: 101}, {Shard: 1, PID: 102}, {Shard: 2, PID: 103}}
	if got := p.DriverPIDs(); got != "101, 102, 103 (3 shards)" {
		t.Errorf("three shards: %q", got)
	}
	r := richFixture(kpi.GateInterval)
	r.Phases[0].DriverShards = p.DriverShards
	if md := r.Markdown(); !strings.Contains(md, "| 101, 102, 103 (3 shards) |") {
		t.Errorf("report.md's phase table does not name the shards")
	}
}

// TestGatedRowWithoutThresholdRenders: a report.json read back with a gated
// row lacking its threshold (edited by hand) renders; it panicked, and one
// such report in data_dir stopped the daemon from starting.
func TestGatedRowWithoutThresholdRenders(t *testing.T) {
	r := richFixture(kpi.GateInterval)
	d := 3.0
	r.KPIs = []kpi.Result{{Name: "cpu_machine_percent", Title: "CPU", Gated: true, Outcome: kpi.OutcomeFail, Delta: &d, DeltaUnit: "points"}}
	_ = r.Reasons()
	_ = r.Markdown()
	if err := r.Table(io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, err := r.JUnit(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.HTML(nil); err != nil {
		t.Fatal(err)
	}
}
