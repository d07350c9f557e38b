// Package testkit holds the helpers the unit tests of several packages
// share: the embedded defaults (config.yaml at the module root), a
// configuration loaded on top of them, a plain GET and finding the
// Prometheus binaries, and a synthetic run history. Only tests import it.
package testkit

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
)

// Root is the module's root directory, found from this file's path, so a
// test in any package can read config.yaml, docs/ and examples/.
func Root(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("testkit: cannot find the module root")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Defaults is config.yaml, the defaults soakd embeds.
func Defaults(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Root(t), "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Config is user decoded on top of the defaults, as soakd --config does.
func Config(t testing.TB, user string) *config.Config {
	t.Helper()
	cfg, err := config.Load(Defaults(t), []byte(user), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Get fetches url and returns its status and body.
func Get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// LookTool finds a Prometheus binary (prometheus, promtool) on PATH.
// Without it the test skips, except under CI=true, where a missing binary
// fails: .ci/run installs Debian's prometheus package, which brings both.
func LookTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := name + " is not on PATH: install Debian's prometheus package (apt-get install -y prometheus) to run this test"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// WriteRun writes a complete run of profile into data directory dataDir's
// history (runs/<id>/report.json), started at started, whose only KPI row
// is GraphQL's CPU per request, cpuUs µs against REST's 10 µs: a synthetic
// history for tests of change points. A negative cpuUs writes the row as
// not measured.
func WriteRun(t testing.TB, dataDir, id, profile string, started time.Time, cpuUs float64) {
	t.Helper()
	limit := 25.0
	row := kpi.Result{Threshold: &limit, Rule: "delta <= +25 %", Name: "cpu_us_per_request", Title: "CPU per request", Unit: "µs", REST: 10, GraphQL: cpuUs, DeltaUnit: "percent", Gated: true, Outcome: kpi.OutcomePass, Pass: true}
	if cpuUs < 0 {
		row.GraphQL, row.GraphQLNotMeasured, row.Outcome, row.Pass = 0, true, kpi.OutcomeNotMeasured, false
	} else {
		d := (cpuUs - 10) / 10 * 100
		row.Delta = &d
	}
	rep := report.Report{SchemaVersion: report.SchemaVersion, Run: id, Profile: profile, Status: report.StatusComplete, Verdict: kpi.OutcomePass,
		StartedAt: started, FinishedAt: started.Add(time.Minute), KPIs: []kpi.Result{row}}
	b, err := json.Marshal(&rep)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(dataDir, "runs", id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, report.JSONFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ShippedRole is the Role name of deploy/kubernetes/rbac.yaml.
func ShippedRole(t testing.TB, name string) rbacv1.Role {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(Root(t), "deploy", "kubernetes", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var r rbacv1.Role
		if err := yaml.UnmarshalStrict([]byte(doc), &r); err == nil && r.Kind == "Role" && r.Name == name {
			return r
		}
	}
	t.Fatalf("deploy/kubernetes/rbac.yaml has no Role %s", name)
	return rbacv1.Role{}
}

// LeastPrivilege fails t for every "resource verb" in used (what the code
// under test called) that the shipped Role role does not grant, and every
// one it grants that used lacks: each rule names only the verbs the code
// calls.
func LeastPrivilege(t testing.TB, role string, used map[string]bool) {
	t.Helper()
	granted := map[string]bool{}
	for _, r := range ShippedRole(t, role).Rules {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				granted[res+" "+v] = true
			}
		}
	}
	for u := range used {
		if !granted[u] {
			t.Errorf("the code calls %s, which the shipped Role %s does not grant", u, role)
		}
	}
	for g := range granted {
		if !used[g] {
			t.Errorf("the shipped Role %s grants %s, which the code never calls", role, g)
		}
	}
}
