package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/builtin"
	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/target"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/testkit"
	"github.com/soakd/soakd/workloads"
)

// TestSeed000QueryOfEveryEmbeddedOperation: every rel-<query>-<strategy>
// operation of seed000.yaml is told to send its query by its strategy, and
// an operation sending anything else is none of seed 000's.
func TestSeed000QueryOfEveryEmbeddedOperation(t *testing.T) {
	cfg := testkit.Config(t, "sampler: {interval: 1s}\n")
	ops := relational.Operations()
	n := 0
	for name, d := range cfg.Operations {
		if !strings.HasPrefix(string(name), "rel-") {
			if _, _, ok := seed000Query(d, ops); ok {
				t.Errorf("%s is taken for one of seed 000's queries", name)
			}
			continue
		}
		n++
		op, s, ok := seed000Query(d, ops)
		if !ok || "rel-"+op.Name+"-"+s != string(name) {
			t.Errorf("%s: got query %q by %q (%v)", name, op.Name, s, ok)
		}
	}
	if n != 75 {
		t.Errorf("%d rel- operations, want 15 queries by 5 strategies", n)
	}
	// The same document to another path, or a chatty view that follows
	// other fields, is not the seed's.
	d := cfg.Operations["rel-tasks-user-25-naive"]
	g := *d.GraphQL
	g.Path = "/graphql"
	if _, _, ok := seed000Query(workloads.OperationDef{GraphQL: &g}, ops); ok {
		t.Error("the document sent to /graphql counts as a strategy's")
	}
	c := cfg.Operations["rel-tasks-user-25-rest-chatty"]
	r := *c.REST
	r.Follow = []workloads.FollowDef{{Path: r.Follow[0].Path, IDField: "id"}}
	if _, _, ok := seed000Query(workloads.OperationDef{REST: &r}, ops); ok {
		t.Error("a chatty view following another field counts as the seed's")
	}
}

// TestSeed000Section: rows per query and phase, rates per the phase's
// duration, phases with their strategy; none without the seed's queries.
func TestSeed000Section(t *testing.T) {
	cfg := testkit.Config(t, "sampler: {interval: 1s}\n")
	lat := workloads.Latency{Mean: 12, P50: 10, P90: 20, P99: 30, Max: 40}
	phases := []report.Phase{
		{Name: "graphql-load", DurationSeconds: 10, Operations: []report.Operation{{Operation: "graphql-query", Requests: 100}}},
		{Name: "batched", DurationSeconds: 4, Operations: []report.Operation{
			{Operation: "rel-users-tasks-25-batched", Users: 1, Requests: 40, LatencyMs: lat},
			{Operation: "rel-projects-users-batched", Users: 1, Requests: 10, Errors: 1, LatencyMs: lat},
		}},
	}
	s := seed000Section(cfg.Operations, phases)
	if s == nil || len(s.Rows) != 2 || len(s.Phases) != 1 || len(s.Published) != 28 {
		t.Fatalf("got %+v; want two rows of one phase and the seed's table", s)
	}
	want := report.Seed000Row{Operation: "users-tasks-25", Shape: "Single has many", X: 25, Strategy: "batched", Phase: "batched",
		ConfigOperation: "rel-users-tasks-25-batched", Users: 1, Requests: 40, RPS: 10, LatencyMs: lat}
	if s.Rows[0] != want {
		t.Errorf("row: got %+v, want %+v", s.Rows[0], want)
	}
	if p := s.Phases[0]; p.Phase != "batched" || p.Strategy != "batched" || len(p.Operations) != 2 {
		t.Errorf("phase: got %+v", p)
	}
	if s := seed000Section(cfg.Operations, phases[:1]); s != nil {
		t.Errorf("a run without the seed's queries has a section: %+v", s)
	}
}

// TestDatabaseFigures: per request of the driver, from the endpoints that
// served the phase; a failed reading or no request is not measured.
func TestDatabaseFigures(t *testing.T) {
	before := map[string]relational.Totals{"rest": {Requests: 5, Queries: 10, Rows: 100, Time: time.Second}, "graphql_naive": {Requests: 7, Queries: 70}}
	after := map[string]relational.Totals{"rest": {Requests: 45, Queries: 90, Rows: 900, Time: 3 * time.Second}, "graphql_naive": {Requests: 7, Queries: 70}}
	d := databaseFigures(before, after, nil, nil, 20)
	want := report.Database{Endpoints: []string{"rest"}, HTTPRequests: 40, Queries: 80, Rows: 800, Seconds: 2,
		CallsPerRequest: 2, QueriesPerRequest: 4, RowsPerRequest: 40, MsPerRequest: 100}
	if d.NotMeasured != "" || d.HTTPRequests != want.HTTPRequests || d.QueriesPerRequest != want.QueriesPerRequest ||
		d.CallsPerRequest != want.CallsPerRequest || d.RowsPerRequest != want.RowsPerRequest || d.MsPerRequest != want.MsPerRequest ||
		len(d.Endpoints) != 1 || d.Endpoints[0] != "rest" {
		t.Errorf("got %+v, want %+v", *d, want)
	}
	if d := databaseFigures(before, nil, nil, errors.New("control surface gone"), 20); !strings.Contains(d.NotMeasured, "control surface gone") || d.QueriesPerRequest != 0 {
		t.Errorf("a failed reading: got %+v", *d)
	}
	if d := databaseFigures(before, before, nil, nil, 20); !strings.Contains(d.NotMeasured, "no request to the relational scenario") {
		t.Errorf("a phase off the scenario: got %+v", *d)
	}
	if d := databaseFigures(before, after, nil, nil, 0); !strings.Contains(d.NotMeasured, "no request") {
		t.Errorf("no request: got %+v", *d)
	}
}

// TestNeedScenario: a profile needing the relational scenario switches a
// target the run starts to it, and is refused, naming what to change, on a
// running target without it or on a server soakd does not host.
func TestNeedScenario(t *testing.T) {
	cfg := testkit.Config(t, "sampler: {interval: 1s}\n")
	r := &run{cfg: cfg.Clone(), prof: cfg.Profiles["relational"]}
	if err := r.needScenario("relational"); err != nil || r.cfg.Target.Scenario != config.ScenarioRelational || cfg.Target.Scenario != config.ScenarioDonut {
		t.Errorf("a target to start: %v, scenario %q (caller's %q); want relational on the run's copy only", err, r.cfg.Target.Scenario, cfg.Target.Scenario)
	}
	r = &run{cfg: testkit.Config(t, "target: {kind: attach, pid: 1, graphql_url: \"http://127.0.0.1:1/graphql\"}\n"), prof: cfg.Profiles["relational"]}
	if err := r.needScenario("relational"); exitcode.Of(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "target.kind is attach") {
		t.Errorf("an attached target: got %v, want a usage error naming target.kind", err)
	}
	tg, err := builtin.Start(t.Context(), cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tg.Shutdown(context.Background()) }()
	r = &run{cfg: cfg.Clone(), prof: cfg.Profiles["seed-000"], opts: RunOptions{Target: target.InProcess(tg)}}
	if err := r.needScenario("seed-000"); exitcode.Of(err) != exitcode.Usage || !strings.Contains(fmt.Sprint(err), "the running target is target.scenario donut") {
		t.Errorf("a running donut target: got %v, want a usage error naming its scenario", err)
	}
}
