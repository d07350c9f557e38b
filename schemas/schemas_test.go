package schemas_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/control"
	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/donut"
	"github.com/soakd/soakd/internal/graph"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/schemas"
	"github.com/soakd/soakd/workloads"
)

// builtinTarget serves both arms as the built-in target mounts them:
// GraphQL at /graphql, the REST control group at /api/donuts/.
func builtinTarget(t *testing.T) *httptest.Server {
	t.Helper()
	svc := &donut.Service{Store: donut.NewStore(1000), Broker: donut.NewBroker(0)} // the embedded operations read ids 1..1000
	mux := http.NewServeMux()
	mux.Handle("/graphql", graph.NewHandler(svc, graph.Options{}))
	mux.Handle(control.Prefix, control.NewHandler(svc, control.Options{}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// embeddedOperations are the operations config.yaml defines (the Donut
// API's), as the daemon resolves them for a driver spec.
func embeddedOperations(t *testing.T) map[workloads.Operation]workloads.OperationDef {
	t.Helper()
	b, err := os.ReadFile("../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(b, nil, "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Operations
}

// driverLines runs the driver on spec against target and returns the JSON
// lines it wrote.
func driverLines(t *testing.T, spec []byte, target string) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	_ = workloads.Drive(ctx, bytes.NewReader(spec), &out, target)
	var lines [][]byte
	for l := range bytes.Lines(out.Bytes()) {
		lines = append(lines, bytes.TrimRight(l, "\n"))
	}
	return lines
}

// TestDriverMessagesMatchTheSchema runs the driver against the real
// GraphQL and REST target and validates every line it writes: progress
// lines, the result (operations with their histograms, subscriptions) and,
// for a bad spec, the error line.
func TestDriverMessagesMatchTheSchema(t *testing.T) {
	srv := builtinTarget(t)
	// 2 users × 40 iterations × ≥ 25 ms of think time: over a second, so
	// at least one progress line is due before the result.
	p := workloads.Phase{
		Name: "graphql-load", Arm: "graphql", RequestTimeout: 5 * time.Second, Seed: 1, Run: "schema-test",
		Think: workloads.Think{Min: 25 * time.Millisecond, Max: 30 * time.Millisecond},
		Groups: []workloads.UserGroup{
			{Operation: "graphql-query", Users: 2, Iterations: 40},
			{Operation: "rest-get", Users: 2, Iterations: 40},
		},
		Operations: embeddedOperations(t),
	}
	spec, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]int{}
	lines := driverLines(t, spec, srv.URL)
	lines = append(lines, driverLines(t, []byte(`{"name": "x", "unknown_key": 1}`), srv.URL)...)
	for i, l := range lines {
		if err := schemas.Validate(schemas.Driver, l); err != nil {
			t.Errorf("driver line %d: %v\n%.300s", i, err, l)
		}
		var m struct{ Type string }
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		types[m.Type]++
	}
	timed := 0
	for _, l := range lines {
		if bytes.Contains(l, []byte(`"interval_latency":{`)) {
			timed++
		}
	}
	if timed == 0 {
		t.Errorf("no progress line carried interval_latency, so the schema is not exercised on it")
	}
	if types[workloads.MessageProgress] == 0 || types[workloads.MessageResult] != 1 || types[workloads.MessageError] != 1 {
		t.Errorf("validated %v; want progress lines, one result and one error", types)
	}
}

// cmpPhase is one round of a compared phase with the metrics compare reads.
func cmpPhase(name string, scale float64) report.Phase {
	return report.Phase{
		Name: name, Arm: "graphql", Model: "closed", Requests: 10000, ThroughputRPS: 1000 / scale, ErrorsByClass: map[string]int64{},
		LatencyMs:  workloads.Latency{P99: 10 * scale},
		Resources:  &profiles.Summary{WindowSeconds: 10, CPUKnown: true, GCPercentKnown: true, GCPercent: 2 * scale, HeapLiveBytesMax: uint64(8 << 20 * scale)},
		PerRequest: report.PerRequest{CPUMicros: 100 * scale, AllocBytes: 4000 * scale},
	}
}

// comparison is a real comparison: a phase in four rounds, 20 % costlier
// in the new run, a phase of one round, a phase in one run only, and a
// figure missing in the new run.
func comparison(t *testing.T) []byte {
	t.Helper()
	var oldPs, newPs []report.Phase
	for i, j := range []float64{0.98, 1.02, 0.99, 1.01} {
		oldPs = append(oldPs, cmpPhase(fmt.Sprintf("graphql-load#%d", i+1), j))
		newPs = append(newPs, cmpPhase(fmt.Sprintf("graphql-load#%d", i+1), 1.2*j))
	}
	oldPs = append(oldPs, cmpPhase("memory", 1), cmpPhase("old-only", 1))
	mem := cmpPhase("memory", 1)
	mem.Resources, mem.ResourcesError = nil, "sampler stopped"
	newPs = append(newPs, mem)
	old := &report.Report{Run: "old", Status: report.StatusComplete, Verdict: kpi.OutcomePass, Phases: oldPs}
	nw := &report.Report{Run: "new", Status: report.StatusComplete, Verdict: kpi.OutcomePass, Phases: newPs}
	c := report.CompareRuns(old, nw, report.CompareLimits{CPUPerRequestPercent: 10, AllocPerRequestPercent: 10, GCPercentPoints: 1,
		P99LatencyPercent: 10, P99LatencyFloorMs: 5, ThroughputDecreasePercent: 10, HeapLivePercent: 50, HeapLiveFloorBytes: 1 << 20})
	b, err := c.JSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCompareJSONMatchesTheSchema(t *testing.T) {
	b := comparison(t)
	if err := schemas.Validate(schemas.Compare, b); err != nil {
		t.Errorf("%v\n%s", err, b)
	}
	for _, want := range []string{`"outcome": "fail"`, `"interval": {`, `"floor": 5`, `"new": null`, `"change": null`, "only in the old run"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the fixture lacks %s, so the schema is not exercised on it:\n%s", want, b)
		}
	}
}

// smallReport is a report.json of one complete run, built by the report
// package from a driver result and a resource summary.
func smallReport(t *testing.T) []byte {
	t.Helper()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	phase := func(name, arm string, cpu float64) report.Phase {
		res := workloads.Result{Phase: name, Arm: arm, DriverPID: 2, Start: t0, End: t0.Add(20 * time.Second), DurationSeconds: 20,
			Requests: 1000, SteadyStart: t0.Add(3 * time.Second), SteadyEnd: t0.Add(13 * time.Second), ThroughputRPS: 100,
			LatencyMs: workloads.Latency{P50: 1, P90: 2, P99: 3, P999: 4, Max: 5, Mean: 1, Stdev: 1}}
		sum := &profiles.Summary{WindowSeconds: 10, Samples: 11, Cores: 2, CPUKnown: true, CPUSeconds: cpu, CPUMachinePercent: cpu * 5,
			GCPercentKnown: true, GCPercent: 1, GCCycles: 10, GCPauses: 10, GCPauseP99Ms: 1, AllocBytes: 1 << 20}
		ph := report.NewPhase(res, sum, nil)
		// Progress with interval latency, and a second in which no request succeeded (null latency).
		var rec report.SeriesRecorder
		for sec := 1; sec <= 3; sec++ {
			pr := workloads.Progress{ElapsedSeconds: float64(sec), Requests: int64(50 * sec), ActiveUsers: 4}
			if sec != 2 {
				pr.IntervalLatency = &workloads.IntervalLatency{Count: 50, P50Ms: 1, P90Ms: 2, P99Ms: 3, MaxMs: 4}
			}
			rec.Add(pr)
		}
		ph.DriverSeries = rec.Series()
		return ph
	}
	r := &report.Report{SchemaVersion: report.SchemaVersion, Run: "20261130T100000Z", Profile: "quick", Status: report.StatusComplete,
		StartedAt: t0, FinishedAt: t0.Add(time.Minute), TargetPID: 1, Arms: "rest,graphql", Compare: report.Compare{REST: "rest-control", GraphQL: "graphql-load"},
		Phases: []report.Phase{phase("rest-control", "rest", 1), phase("graphql-load", "graphql", 2)}, Checks: []report.Check{}, Notes: []string{}}
	r.KPIs = kpi.Evaluate(r.Phases[0].Figures(), r.Phases[1].Figures(), kpi.Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10})
	r.Verdict = kpi.Verdict(r.KPIs)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReportMatchesTheSchema(t *testing.T) {
	b := smallReport(t)
	if schemas.Validate(schemas.Report, b) != nil {
		t.Errorf("%v\n%s", schemas.Validate(schemas.Report, b), b)
	}
	if !bytes.Contains(b, []byte(`"latency_p99_ms":[3,null,3]`)) {
		t.Errorf("the fixture lacks driver_series latency with a null, so the schema is not exercised on it")
	}
}

// TestMutatedDocumentsFail shows the schemas are strict enough to catch a
// wrong document: an unknown field, an outcome or status outside its
// vocabulary, a required field missing, another version, a wrong type, and
// a driver message without its payload.
func TestMutatedDocumentsFail(t *testing.T) {
	srv := builtinTarget(t)
	spec, err := json.Marshal(workloads.Phase{Name: "p", Arm: "rest", RequestTimeout: 5 * time.Second, Seed: 1,
		Groups: []workloads.UserGroup{{Operation: "rest-get", Users: 1, Iterations: 5}}, Operations: embeddedOperations(t)})
	if err != nil {
		t.Fatal(err)
	}
	lines := driverLines(t, spec, srv.URL)
	result := lines[len(lines)-1]
	f := func(name string, doc []byte, mutate func(m map[string]any)) {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(doc, &m); err != nil {
			t.Fatal(err)
		}
		if err := schemas.Validate(name, doc); err != nil {
			t.Fatalf("the unmutated %s document is invalid: %v", name, err)
		}
		mutate(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas.Validate(name, b); err == nil {
			t.Errorf("a mutated %s document passed validation:\n%.400s", name, b)
		}
	}
	rows := func(m map[string]any) map[string]any { return m["rows"].([]any)[0].(map[string]any) }
	kpis := func(m map[string]any) map[string]any { return m["kpis"].([]any)[0].(map[string]any) }
	phase := func(m map[string]any) map[string]any { return m["phases"].([]any)[0].(map[string]any) }

	rep := smallReport(t)
	f(schemas.Report, rep, func(m map[string]any) { m["surprise"] = 1 })
	f(schemas.Report, rep, func(m map[string]any) { m["schema_version"] = 2 })
	f(schemas.Report, rep, func(m map[string]any) { m["status"] = "done" })
	f(schemas.Report, rep, func(m map[string]any) { delete(m, "verdict") })
	f(schemas.Report, rep, func(m map[string]any) { kpis(m)["outcome"] = "passed" })
	f(schemas.Report, rep, func(m map[string]any) { kpis(m)["rest"] = "17 %" })
	f(schemas.Report, rep, func(m map[string]any) { phase(m)["latency_ms"].(map[string]any)["p99.9"] = 1 })
	// null is allowed: a figure not measured is written as null (profiles.Summary.MarshalJSON)
	f(schemas.Report, rep, func(m map[string]any) { phase(m)["resources"].(map[string]any)["cpu_seconds"] = "1.5 s" })
	f(schemas.Report, rep, func(m map[string]any) { phase(m)["requests"] = -1.5 })
	f(schemas.Report, rep, func(m map[string]any) {
		phase(m)["driver_series"].(map[string]any)["latency_p99_ms"].([]any)[1] = "3 ms"
	})

	cmp := comparison(t)
	f(schemas.Compare, cmp, func(m map[string]any) { m["verdict"] = "ok" })
	f(schemas.Compare, cmp, func(m map[string]any) { rows(m)["outcome"] = "maybe" })
	f(schemas.Compare, cmp, func(m map[string]any) { delete(rows(m), "change") })
	f(schemas.Compare, cmp, func(m map[string]any) { rows(m)["delta"] = 1 })
	f(schemas.Compare, cmp, func(m map[string]any) { m["schema_version"] = 0 })

	f(schemas.Driver, result, func(m map[string]any) { delete(m, "result") })
	f(schemas.Driver, result, func(m map[string]any) { m["type"] = "done" })
	f(schemas.Driver, result, func(m map[string]any) { m["version"] = 2 })
	f(schemas.Driver, result, func(m map[string]any) { m["result"].(map[string]any)["requests"] = "5" })
}

// TestSchemasCompile checks each shipped file is a valid draft 2020-12
// schema and says which draft it is.
func TestSchemasCompile(t *testing.T) {
	for _, name := range schemas.Names() {
		if _, err := schemas.Compile(name); err != nil {
			t.Error(err)
		}
		b, err := schemas.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"$schema": "https://json-schema.org/draft/2020-12/schema"`) {
			t.Errorf("%s does not declare draft 2020-12", schemas.File(name))
		}
	}
	if _, err := schemas.Read("nope"); err == nil {
		t.Error("an unknown schema name must be an error")
	}
}
