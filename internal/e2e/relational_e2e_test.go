package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// relationalProfile returns the embedded relational profile
// (daemon/config/seed000.yaml) scaled down for a test: each phase 2 s, short
// trims and settle. The phases, operations and their checks stay the
// embedded ones.
func relationalProfile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("daemon", "config", "seed000.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)\n(  relational:\n.*?)\n\n`).FindSubmatch(b)
	if m == nil {
		t.Fatal("daemon/config/seed000.yaml has no relational profile")
	}
	p := string(m[1])
	for old, repl := range map[string]string{"duration: 30s": "duration: 2s", "duration: 12s": "duration: 2s", "settle: 2s": "settle: 300ms",
		"trim_head: 2s": "trim_head: 300ms", "trim_tail: 1s": "trim_tail: 200ms", "ramp_up: 1s": "ramp_up: 100ms"} {
		if !strings.Contains(p, old) {
			t.Fatalf("the relational profile has no %q to scale down", old)
		}
		p = strings.ReplaceAll(p, old, repl)
	}
	return p
}

// TestEndToEndRelationalProfile runs `soakd run --profile relational`
// scaled down (a quarter of seed 000's users and tasks, 2 s phases) on the
// built-in target, which the profile switches to the relational scenario:
// on SQLite, and on PostgreSQL when SOAKD_TEST_PG_DSN is set (CI). Every
// request passes its checks, each phase carries the database figures the
// theory predicts (naive queries per request above batched, above joined
// at exactly one; REST embedded one call a request, chatty many) and the
// reports have the Seed 000 section.
func TestEndToEndRelationalProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	stores := map[string]string{"sqlite": "relational: {store: sqlite, scale: 0.25}\n"}
	if os.Getenv("SOAKD_TEST_PG_DSN") != "" {
		stores["postgres"] = "relational: {store: postgres, dsn_env: SOAKD_TEST_PG_DSN, scale: 0.25}\n"
	}
	for store, rel := range stores {
		t.Run(store, func(t *testing.T) {
			dir := t.TempDir()
			cfg := "sampler: {interval: 100ms}\ndata_dir: " + filepath.Join(dir, "data") + "\n" + rel +
				"profiles:\n" + relationalProfile(t) + "\n"
			path := filepath.Join(dir, "rel.yaml")
			if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "run")
			_, stderr, code := runSoakd(t, bin, "run", "--config", path, "--profile", "relational", "--out", out, "--log-format", "json")
			raw, err := os.ReadFile(filepath.Join(out, "report.json"))
			if err != nil {
				t.Fatalf("no report.json (exit %d): %v\n%s", code, err, stderr)
			}
			var rep struct {
				Status string
				Error  string
				Target struct{ Scenario string }
				Phases []struct {
					Name          string
					Requests      int64
					ErrorsByClass map[string]int64    `json:"errors_by_class"`
					Examples      map[string][]string `json:"error_examples"`
					Database      *struct {
						Endpoints         []string
						CallsPerRequest   float64 `json:"calls_per_request"`
						QueriesPerRequest float64 `json:"queries_per_request"`
						RowsPerRequest    float64 `json:"rows_per_request"`
						MsPerRequest      float64 `json:"db_ms_per_request"`
						NotMeasured       string  `json:"not_measured"`
					}
				}
				Seed000 *struct {
					Rows []struct {
						Operation, Strategy string
						Requests, Errors    int64
						RPS                 float64
					}
					Published []struct{ Operation string }
				} `json:"seed_000"`
			}
			if err := json.Unmarshal(raw, &rep); err != nil {
				t.Fatal(err)
			}
			// naive, joined (the memory profile) and chatty once; batched and
			// REST embedded, the compared pair, in 3 interleaved rounds.
			if rep.Status != "complete" || rep.Target.Scenario != "relational" || len(rep.Phases) != 9 {
				t.Fatalf("status %s (%s), target scenario %q, %d phases; want a complete run of 9 phases on the relational scenario (exit %d)\n%.3000s",
					rep.Status, rep.Error, rep.Target.Scenario, len(rep.Phases), code, stderr)
			}
			qpr := map[string]float64{}
			chattyCalls := 0.0
			for _, p := range rep.Phases {
				if len(p.ErrorsByClass) > 0 || p.Requests == 0 {
					t.Errorf("phase %s: %d requests, errors %v %v; want requests, none failed", p.Name, p.Requests, p.ErrorsByClass, p.Examples)
				}
				d := p.Database
				if d == nil || d.NotMeasured != "" || d.RowsPerRequest <= 0 || d.MsPerRequest <= 0 {
					t.Errorf("phase %s: database figures %+v; want queries, rows and time per request", p.Name, d)
					continue
				}
				base, _, _ := strings.Cut(p.Name, "#")
				if _, seen := qpr[base]; !seen {
					qpr[base] = d.QueriesPerRequest
				}
				if base == "rest-chatty" {
					chattyCalls = d.CallsPerRequest
				}
				if want := 1.0; !strings.HasPrefix(p.Name, "rest-chatty") && d.CallsPerRequest != want {
					t.Errorf("phase %s: %.2f HTTP calls a request, want 1", p.Name, d.CallsPerRequest)
				}
			}
			if !(qpr["naive"] > qpr["batched"] && qpr["batched"] > qpr["joined"] && qpr["joined"] == 1) {
				t.Errorf("queries per request %v: want naive > batched > joined = 1", qpr)
			}
			if chattyCalls <= 10 {
				t.Errorf("rest-chatty: %.1f HTTP calls a request; want many", chattyCalls)
			}
			// A row per query and phase: 15 queries by 9 phases (the compared
			// pair's rounds each a row, so their spread shows).
			if s := rep.Seed000; s == nil || len(s.Rows) != 135 || len(s.Published) != 28 {
				t.Fatalf("seed_000: %d rows, %d published; want 135 rows (15 queries by 9 phases) and the seed's 28 published", len(s.Rows), len(s.Published))
			}
			for _, r := range rep.Seed000.Rows {
				if r.Requests == 0 || r.Errors != 0 || r.RPS <= 0 {
					t.Errorf("seed_000 row %+v: want requests, no error, a rate", r)
				}
			}
			md, _ := os.ReadFile(filepath.Join(out, "report.md"))
			page, _ := os.ReadFile(filepath.Join(out, "report.html"))
			for _, want := range []string{"## Seed 000\n", "### Seed 000: soakd's measurement", "### Seed 000: cost per request", "(theirs, not this run's)"} {
				if !strings.Contains(string(md), want) {
					t.Errorf("report.md lacks %q", want)
				}
			}
			if !strings.Contains(string(page), "<h2>Seed 000</h2>") {
				t.Errorf("report.html lacks the Seed 000 section")
			}
		})
	}
}
