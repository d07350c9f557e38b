package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOperationProblems: an unknown operation in a phase is named with the
// defined ones; a bad template, a missing secret variable, an arm mismatch
// and an unknown key each get their key path and line.
func TestOperationProblems(t *testing.T) {
	ps := problems(t, `
operations:
  broken:
    rest: {path: "/x/{{idd}}"}
    data: {id: {range: [1, 5]}}
  secret:
    rest: {path: "/s"}
    headers_env: {Authorization: SOAKD_TEST_SURELY_UNSET}
  typo:
    rest: {path: "/t", methd: GET}
profiles:
  m:
    request_timeout: 5s
    compare: {rest: r, graphql: g}
    phases:
      - name: r
        arm: rest
        users: [{operation: rest-gett, users: 1, iterations: 1}, {operation: graphql-query, users: 1, iterations: 1}]
      - name: g
        arm: graphql
        users: [{operation: graphql-query, users: 1, iterations: 1}]
`)
	has(t, ps, "operations.typo.rest.methd", 10, "unknown key; allowed keys here: method, path, body")
	if t.Failed() {
		return // the strict decoding stops before validation
	}
	ps = problems(t, `
operations:
  broken:
    rest: {path: "/x/{{idd}}"}
    data: {id: {range: [1, 5]}}
  secret:
    rest: {path: "/s"}
    headers_env: {Authorization: SOAKD_TEST_SURELY_UNSET}
profiles:
  m:
    request_timeout: 5s
    compare: {rest: r, graphql: g}
    phases:
      - name: r
        arm: rest
        users: [{operation: rest-gett, users: 1, iterations: 1}, {operation: graphql-query, users: 1, iterations: 1}]
      - name: g
        arm: graphql
        users: [{operation: graphql-query, users: 1, iterations: 1}]
`)
	has(t, ps, "operations.broken.rest.path", 4, `uses {{idd}}, which is not a variable of the operation; its variables: id`)
	has(t, ps, "operations.secret.headers_env.Authorization", 8, "the environment variable SOAKD_TEST_SURELY_UNSET is not set")
	has(t, ps, "profiles.m.phases[0].users[0].operation", 16,
		`unknown operation "rest-gett"; defined operations: add, broken, donut-updates, graphql-mutation, graphql-query, rest-get, rest-put, secret`)
	has(t, ps, "profiles.m.phases[0].users[1].operation", 16, "graphql-query is a graphql operation; it does not belong in a rest phase")
	for _, p := range ps {
		if strings.HasPrefix(p.Path, "profiles.m.phases") && strings.Contains(p.Path, "operations.") {
			t.Errorf("an operation's problem repeated under a phase: %v", p)
		}
	}
}

// TestOperationsFromAUserFile: a user file's operations join the embedded
// ones (redefining one replaces it whole); CSV data is read relative to the
// file, sent to the driver with its values, and a broken CSV file is a
// problem naming its line; the secret header's value is in no spec.
func TestOperationsFromAUserFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("ids.csv", "id,label\n3,three\n5,five\n")
	t.Setenv("SOAKD_TEST_TOKEN", "Bearer hidden-value")
	cfgPath := write("soak.yaml", `
operations:
  rest-get:
    rest: {path: "/api/donuts/{{id}}"}
    data: {id: {csv: ids.csv, column: id, pick: round-robin}}
    headers_env: {Authorization: SOAKD_TEST_TOKEN}
    expect: {json: {data.donut.id: "{{id}}"}}
default_profile: mine
profiles:
  mine:
    request_timeout: 5s
    compare: {rest: r, graphql: g}
    phases:
      - name: r
        arm: rest
        users: [{operation: rest-get, users: 1, iterations: 10}]
      - name: g
        arm: graphql
        users: [{operation: add, users: 1, iterations: 10}]
`)
	user, _ := os.ReadFile(cfgPath)
	cfg, err := Load(defaults(t), user, cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Operations["rest-get"]; len(got.Data) != 1 || got.Expect.NoGraphQLErrors || got.Headers != nil {
		t.Errorf("rest-get kept keys of the embedded definition: %+v", got)
	}
	specs := cfg.Phases(cfg.Profiles["mine"], "run")
	rest := specs[0]
	if len(rest.Operations) != 1 {
		t.Errorf("the REST phase's spec carries %d operations, want the one it uses", len(rest.Operations))
	}
	d := rest.Operations["rest-get"].Data["id"]
	// The spec carries the file as validated, not its values: the driver
	// reads them.
	if want := filepath.Join(dir, "ids.csv"); d.CSV != want || d.List != nil || d.File == nil || d.File.Rows != 2 || d.File.Size != 24 || len(d.File.SHA256) != 64 {
		t.Errorf("CSV data: got %s %v %+v, want %s, 2 rows of 24 bytes, no values", d.CSV, d.List, d.File, want)
	}
	if err := rest.Validate(); err != nil {
		t.Errorf("the spec: %v", err)
	}
	b, _ := json.Marshal(specs)
	if strings.Contains(string(b), "hidden-value") || strings.Contains(string(b), "five") {
		t.Errorf("a spec holds the secret header's value or a CSV value: %s", b)
	}
	if y, _ := EffectiveYAML(cfg); strings.Contains(string(y), "hidden-value") || strings.Contains(string(y), "five") {
		t.Errorf("soakd config shows a secret or the CSV's values:\n%s", y)
	}

	write("ids.csv", "id,label\n3,three\n5\n")
	_, err = Load(defaults(t), user, cfgPath)
	if err == nil || !strings.Contains(err.Error(), "operations.rest-get.data.id.csv: "+filepath.Join(dir, "ids.csv")+": line 3: wrong number of fields") {
		t.Errorf("a broken CSV file: got %v, want its line named", err)
	}
}

// TestCSVPathsAbsoluteAndNotInTheTarget: a CSV path relative to a relative
// --config is made absolute when the config loads, and `soakd target` (the
// measured process, LoadTarget) reads no CSV data at all.
func TestCSVPathsAbsoluteAndNotInTheTarget(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ids.csv"), []byte("id\n1\n2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := []byte("operations:\n  rest-get:\n    rest: {path: \"/api/donuts/{{id}}\"}\n    data: {id: {csv: ids.csv, column: id}}\n")
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), doc, 0o600); err != nil {
		t.Fatal(err)
	}
	def := defaults(t)
	t.Chdir(filepath.Dir(dir))
	rel := filepath.Join(filepath.Base(dir), "c.yaml") // relative to the working directory
	cfg, err := Load(def, doc, rel)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Operations["rest-get"].Data["id"].CSV
	if got != filepath.Join(dir, "ids.csv") || len(cfg.CSVFiles) != 1 {
		t.Errorf("csv %q (%d files validated), want %s, validated", got, len(cfg.CSVFiles), filepath.Join(dir, "ids.csv"))
	}
	tc, err := LoadTarget(def, doc, rel)
	if err != nil {
		t.Fatal(err)
	}
	if tc.CSVFiles != nil {
		t.Errorf("the measured process read %d CSV files, want none", len(tc.CSVFiles))
	}
}

// TestSpecCarriesNoCSVValues: the driver's spec names a CSV file, it does
// not carry its values (a 1 M-row × 300 B file cost 2.2 GB in the
// orchestrator and 1.4 GB in the driver when it did), and the config keeps
// none of them either.
func TestSpecCarriesNoCSVValues(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ids.csv"), []byte("id,note\n3,value-of-row-one\n5,value-of-row-two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	doc := []byte(`
operations:
  rest-get:
    rest: {path: "/api/donuts/{{id}}"}
    headers: {X-Note: "{{note}}"}
    data: {id: {csv: ids.csv, column: id}, note: {csv: ids.csv, column: note}}
default_profile: mine
profiles:
  mine:
    request_timeout: 5s
    compare: {rest: r, graphql: g}
    phases:
      - {name: r, arm: rest, users: [{operation: rest-get, users: 1, iterations: 10}]}
      - {name: g, arm: graphql, users: [{operation: add, users: 1, iterations: 10}]}
`)
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(defaults(t), doc, path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cfg.Phases(cfg.Profiles["mine"], "run"))
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := json.Marshal(cfg.Clone()); strings.Contains(string(b), "value-of-row") || strings.Contains(fmt.Sprintf("%+v", *cfg), "value-of-row") || strings.Contains(string(c), "value-of-row") {
		t.Errorf("the spec or the config carries the CSV file's values: %s", b)
	}
}
