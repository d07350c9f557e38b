package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEndToEndOperationsFromConfig runs `soakd run` on the built-in target
// with a profile whose phases send only operations a user config defines:
// seed 003's add sent as application/graphql, and a REST read whose ids and
// expected flavours come from one CSV file next to the config (a row per
// request keeps an id with its flavour). Every request must pass its
// expectations.
func TestEndToEndOperationsFromConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	// Seeded donut i has flavour VANILLA, STRAWBERRY or CHOCOLATE by i mod 3.
	csv := "id,flavor\n3,VANILLA\n4,STRAWBERRY\n5,CHOCOLATE\n\"10\",STRAWBERRY\n"
	cfg := `
sampler: {interval: 100ms}
data_dir: ` + filepath.Join(dir, "data") + `
operations:
  read-by-csv:
    rest: {method: GET, path: "/api/donuts/{{id}}"}
    headers: {Accept: application/json, X-Wanted: "{{flavor}}"}
    data:
      id: {csv: donuts.csv, column: id, pick: round-robin}
      flavor: {csv: donuts.csv, column: flavor, pick: round-robin}
    expect: {status: 200, json: {data.donut.id: "{{id}}", data.donut.flavor: "{{flavor}}"}, present: [data.donut.name]}
  sum:
    graphql: {document: "query Add { add(x: 40, y: 2) }", transport: graphql}
    expect: {no_graphql_errors: true, json: {data.add: "42"}}
default_profile: ops
profiles:
  ops:
    settle: 200ms
    trim_head: 100ms
    trim_tail: 100ms
    request_timeout: 5s
    seed: 3
    compare: {rest: rest-csv, graphql: graphql-add}
    phases:
      - name: rest-csv
        arm: rest
        think: {min: 0ms, max: 5ms}
        users: [{operation: read-by-csv, users: 3, iterations: 200}]
      - name: graphql-add
        arm: graphql
        think: {min: 0ms, max: 5ms}
        users: [{operation: sum, users: 3, iterations: 200}]
`
	for name, text := range map[string]string{"donuts.csv": csv, "ops.yaml": cfg} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "run")
	// From another directory: the CSV path is relative to the config file.
	_, stderr, code := runSoakd(t, bin, "run", "--config", filepath.Join(dir, "ops.yaml"), "--out", out, "--log-format", "json")
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatalf("no report.json (exit %d): %v\n%s", code, err, stderr)
	}
	var rep struct {
		Phases []struct {
			Name       string
			Requests   int64
			Errors     int64
			Examples   map[string][]string `json:"error_examples"`
			Operations []struct {
				Operation string
				Requests  int64
				Errors    int64
			}
		}
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"rest-csv": "read-by-csv", "graphql-add": "sum"}
	if len(rep.Phases) != 2 {
		t.Fatalf("got %d phases, want 2:\n%s", len(rep.Phases), stderr)
	}
	for _, p := range rep.Phases {
		if p.Requests != 600 || p.Errors != 0 || len(p.Operations) != 1 || p.Operations[0].Operation != want[p.Name] || p.Operations[0].Requests != 600 {
			t.Errorf("phase %s: %d requests, %d errors %v, operations %+v; want 600 requests of %s, none failed",
				p.Name, p.Requests, p.Errors, p.Examples, p.Operations, want[p.Name])
		}
	}

	// A wrong expectation is counted by its class, not hidden.
	bad := strings.Replace(cfg, `data.add: "42"`, `data.add: "43"`, 1)
	if err := os.WriteFile(filepath.Join(dir, "ops.yaml"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(dir, "run2")
	_, stderr, _ = runSoakd(t, bin, "run", "--config", filepath.Join(dir, "ops.yaml"), "--out", out2, "--log-format", "json")
	raw, err = os.ReadFile(filepath.Join(out2, "report.json"))
	if err != nil {
		t.Fatalf("no report.json: %v\n%s", err, stderr)
	}
	if !strings.Contains(string(raw), `"payload_mismatch": 600`) || !strings.Contains(string(raw), `data.add: got 42, want \"43\"`) {
		t.Errorf("a failed expectation is not counted as payload_mismatch with its example:\n%.2000s", raw)
	}
}
