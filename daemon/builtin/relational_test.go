package builtin

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/internal/testkit"
)

func TestTargetServesRelational(t *testing.T) {
	cfg := testkit.Config(t, "target:\n  scenario: relational\nrelational:\n  seed: 7\n  scale: 0.05\n")
	tg, err := Start(t.Context(), cfg, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tg.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	f := func(path string, wantCode int, wantBody string) {
		t.Helper()
		code, body := testkit.Get(t, tg.URL()+path)
		if code != wantCode || !strings.Contains(body, wantBody) {
			t.Errorf("GET %s: got %d %.300q, want %d containing %q", path, code, body, wantCode, wantBody)
		}
	}
	q := url.QueryEscape("{ users(limit: 2) { name subordinates { edges { node { id } } } } }")
	for _, s := range []string{"naive", "batched", "joined"} {
		f("/graphql/"+s+"?query="+q, 200, `{"data":{"users":[{"name":"User 1","subordinates":{"edges":[{"node":{"id":"`)
	}
	f("/api/rel/users/1", 200, `{"data":{"id":1,"name":"User 1"}}`)
	f("/api/rel/users?limit=1&include=tasks", 200, `"tasks":[{"id":`)
	// The Donut arms are still there.
	f("/api/donuts/3", 200, `"donut"`)
	// The database figures on the target's /metrics.
	f("/metrics", 200, `soakd_relational_db_queries_total{endpoint="graphql_joined"} 1`)
	f("/metrics", 200, `soakd_relational_db_queries_total{endpoint="graphql_naive"} 3`)
	f("/metrics", 200, `soakd_relational_db_seconds_total{endpoint="rest"}`)
	f("/metrics", 200, `go_sql_max_open_connections{db_name="relational"} 25`)
}

func TestRelationalBadDSN(t *testing.T) {
	t.Setenv("SOAKD_TEST_BAD_DSN", "postgres://u:pw@127.0.0.1:notaport/db")
	cfg := testkit.Config(t, "target:\n  scenario: relational\nrelational:\n  store: postgres\n  dsn_env: SOAKD_TEST_BAD_DSN\n")
	tg, err := Start(t.Context(), cfg, zap.NewNop())
	if err == nil {
		_ = tg.Shutdown(context.Background())
		t.Fatal("a bad DSN started the target")
	}
	if !strings.Contains(err.Error(), "$SOAKD_TEST_BAD_DSN (relational.dsn_env) is not a PostgreSQL connection string") || strings.Contains(err.Error(), ":pw@") {
		t.Fatalf("error %q: want it to name the variable, and not to show the password", err)
	}
	if !slices.Contains(cfg.SecretEnvs(), "SOAKD_TEST_BAD_DSN") {
		t.Errorf("drivers would inherit the DSN: secrets %v", cfg.SecretEnvs())
	}
}

func TestRelationalConfigValidation(t *testing.T) {
	f := func(user, path, want string) {
		t.Helper()
		_, err := config.Load(testkit.Defaults(t), []byte(user), "test.yaml")
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %s: %s", user, err, path, want)
		}
	}
	f("target:\n  scenario: sql\n", "target.scenario", `must be donut or relational (got "sql")`)
	f("target:\n  scenario: relational\n  kind: command\n  argv: [x]\n  graphql_url: http://127.0.0.1:1/graphql\n  rest_url: http://127.0.0.1:1\n  ready_url: http://127.0.0.1:1/\n",
		"target.scenario", "relational is served by the built-in target")
	f("target:\n  scenario: relational\nrelational:\n  store: mysql\n", "relational.store", "must be sqlite or postgres")
	f("target:\n  scenario: relational\nrelational:\n  store: postgres\n  dsn_env: \"\"\n", "relational.dsn_env", "needs the name of the environment variable")
	f("target:\n  scenario: relational\nrelational:\n  pool_size: 0\n", "relational.pool_size", "between 1 and 1000")
	f("target:\n  scenario: relational\nrelational:\n  request_timeout: 0s\n", "relational.request_timeout", "between 1ms and 10m")
}

// TestRelationalTallyOnTheControlSurface: `soakd target` answers its
// relational tally by endpoint, as processTarget reads it after a phase.
func TestRelationalTallyOnTheControlSurface(t *testing.T) {
	cfg := testkit.Config(t, "target:\n  scenario: relational\nrelational:\n  scale: 0.05\n")
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- ServeTarget(ctx, cfg, TargetOptions{Log: zap.NewNop(), Stdout: pw, Token: "tok"})
		pw.Close()
	}()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	var ready TargetReady
	if err := json.Unmarshal([]byte(line), &ready); err != nil {
		t.Fatal(err)
	}
	code, body := testkit.Get(t, ready.URL+"/graphql/joined?query="+url.QueryEscape("{ users(limit: 2) { name } }"))
	if code != 200 {
		t.Fatalf("GET /graphql/joined: %d %s", code, body)
	}
	code, body = ctlDo(t, ready.ControlURL, "tok", "GET", "/soakd/relational", "")
	var tot map[string]relational.Totals
	if err := json.Unmarshal([]byte(body), &tot); code != 200 || err != nil || tot["graphql_joined"].Requests != 1 || tot["graphql_joined"].Queries != 1 {
		t.Errorf("GET /soakd/relational: %d %s (%v); want graphql_joined with 1 request and 1 query", code, body, err)
	}
}
