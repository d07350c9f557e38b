package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: soakd check sends each operation of the default profile once
// to the built-in target and raises one event on its subscription (exit
// 0, a ✓ line each, the figures listed); with a typo in one operation's
// path and a wrong expectation in another it fails (exit 1), naming each
// and what was seen, and passes the rest.
func TestCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	stdout, stderr, code := runSoakd(t, bin, "check")
	t.Logf("soakd check:\n%s", stdout)
	if code != 0 || !strings.Contains(stdout, "check: pass (5 checks)") || !strings.Contains(stdout, "✓ donut-updates ← graphql-mutation") ||
		!strings.Contains(stdout, "1 event raised by graphql-mutation, received once") || !strings.Contains(stdout, "figures measured: cpu_seconds") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}

	cfg := filepath.Join(t.TempDir(), "typo.yaml")
	if err := os.WriteFile(cfg, []byte(`operations:
  rest-get:
    rest: {method: GET, path: "/api/donutz/{{id}}"}
    data:
      id: {range: [1, 1000], pick: random}
    expect: {status: 200}
  graphql-query:
    graphql:
      document: "query Donut($id: ID!) { donut(id: $id) { id flavor } }"
      variables: {id: "{{id}}"}
    data:
      id: {range: [1, 1000], pick: random}
    expect: {status: 200, json: {data.donut.flavor: SPRINKLES}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runSoakd(t, bin, "check", "--config", cfg, "--format", "json")
	var res struct {
		Checks []struct {
			Operation string `json:"operation"`
			OK        bool   `json:"ok"`
			Detail    string `json:"detail"`
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("exit %d, not JSON: %v\n%s\n%s", code, err, stdout, stderr)
	}
	failed := map[string]string{}
	for _, c := range res.Checks {
		if !c.OK {
			failed[c.Operation] = c.Detail
		}
	}
	t.Logf("failed checks: %v", failed)
	if code != 1 || len(failed) != 2 || !strings.Contains(failed["rest-get"], "404") || !strings.Contains(failed["graphql-query"], "SPRINKLES") {
		t.Errorf("exit %d, failed %v: want 1, rest-get's 404 and graphql-query's missed expectation named\n%s", code, failed, stderr)
	}
}
