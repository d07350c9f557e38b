package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/cli"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/testkit"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/schemas"
	"github.com/soakd/soakd/workloads"
)

// runsAPI is a control API Runner that serves finished runs' reports and
// marks one as the baseline; it starts and stops nothing.
type runsAPI struct {
	reports  map[string][]byte
	baseline string
}

func (r *runsAPI) Start(context.Context, api.StartRequest) (api.RunSummary, error) {
	return api.RunSummary{}, fmt.Errorf("this test API starts no run: %w", api.ErrInvalidRequest)
}
func (r *runsAPI) Stop(context.Context, string) error { return api.ErrNotRunning }
func (r *runsAPI) List(context.Context) ([]api.RunSummary, error) {
	var out []api.RunSummary
	for id := range r.reports {
		out = append(out, api.RunSummary{ID: id, Status: report.StatusComplete, Verdict: kpi.OutcomePass, Baseline: id == r.baseline})
	}
	return out, nil
}
func (r *runsAPI) Get(_ context.Context, id string) (api.RunSummary, json.RawMessage, error) {
	b, ok := r.reports[id]
	if !ok {
		return api.RunSummary{}, nil, fmt.Errorf("run %s: %w", id, api.ErrNotFound)
	}
	return api.RunSummary{ID: id, Status: report.StatusComplete, Verdict: kpi.OutcomePass, Baseline: id == r.baseline}, b, nil
}
func (r *runsAPI) SetBaseline(context.Context, string) error { return api.ErrInvalidRequest }
func (r *runsAPI) Ready() bool                               { return true }
func (r *runsAPI) History(context.Context) api.HistoryState  { return api.HistoryState{} }
func (r *runsAPI) Changes(context.Context, string, string) (api.HistoryChanges, error) {
	return api.HistoryChanges{}, api.ErrInvalidRequest
}
func (r *runsAPI) Schedules(context.Context) ([]api.Schedule, error) { return nil, nil }

func (r *runsAPI) Live(_ context.Context, id string) (api.LiveState, bool, error) {
	if _, ok := r.reports[id]; !ok {
		return api.LiveState{}, false, api.ErrNotFound
	}
	return api.LiveState{}, false, nil
}
func (r *runsAPI) RunFiles(context.Context, string) ([]api.RunFile, error) {
	return nil, api.ErrNotFound
}
func (r *runsAPI) OpenRunFile(context.Context, string, string) (*os.File, error) {
	return nil, api.ErrNotFound
}

func (r *runsAPI) Soak(context.Context) (json.RawMessage, error) { return nil, api.ErrNotFound }

var _ api.Runner = (*runsAPI)(nil)

// roundsReport is a complete run of one phase in four rounds, its CPU per
// request scaled by cpu.
func roundsReport(t *testing.T, id string, cpu float64) []byte {
	t.Helper()
	r := &report.Report{SchemaVersion: report.SchemaVersion, Run: id, Profile: "quick", Arms: "rest,graphql", Status: report.StatusComplete, Verdict: kpi.OutcomePass}
	for i, j := range []float64{0.99, 1.01, 0.995, 1.005} {
		r.Phases = append(r.Phases, report.Phase{
			Name: fmt.Sprintf("graphql-load#%d", i+1), Arm: "graphql", Requests: 10000, ThroughputRPS: 1000 * j,
			LatencyMs:  workloads.Latency{P99: 10 * j},
			Resources:  &profiles.Summary{WindowSeconds: 10, CPUKnown: true, GCPercentKnown: true, GCPercent: 2 * j, HeapLiveBytesMax: 8 << 20},
			PerRequest: report.PerRequest{CPUMicros: 100 * cpu * j, AllocBytes: 4000 * j},
		})
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCompareBaselineFormats compares runs named by id, and the daemon's
// baseline, fetched over a real control API, in every output format, with
// the exit codes of the verdict.
func TestCompareBaselineFormats(t *testing.T) {
	runs := &runsAPI{reports: map[string][]byte{
		"accepted": roundsReport(t, "accepted", 1),
		"same":     roundsReport(t, "same", 1),
		"slower":   roundsReport(t, "slower", 1.5),
	}, baseline: "accepted"}
	srv := httptest.NewServer(api.NewHandler(runs, "", nil))
	defer srv.Close()
	dir := t.TempDir()
	local := filepath.Join(dir, "run")
	if err := os.Mkdir(local, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(local, report.JSONFile), runs.reports["slower"], 0o644); err != nil {
		t.Fatal(err)
	}
	compare := func(args ...string) (string, string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		code := cli.Run(testkit.Defaults(t), append([]string{"compare", "--api", srv.URL}, args...), &out, &errb)
		return out.String(), errb.String(), int(code)
	}

	out, stderr, code := compare("--format", "json", "baseline", "same")
	if code != 0 {
		t.Fatalf("baseline against an identical run: exit %d, want 0\n%s%s", code, out, stderr)
	}
	if err := schemas.Validate(schemas.Compare, []byte(out)); err != nil {
		t.Errorf("compare --format json: %v\n%s", err, out)
	}
	var c report.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil || c.Old != "accepted" || c.New != "same" || c.Verdict != kpi.OutcomePass {
		t.Errorf("got old %q new %q verdict %q (%v), want the baseline accepted against same, pass", c.Old, c.New, c.Verdict, err)
	}

	// The baseline against a local run directory 50 % costlier per request.
	out, _, code = compare("--format", "json", "baseline", local)
	if code != 1 || !strings.Contains(out, `"outcome": "fail"`) {
		t.Errorf("baseline against a slower local run: exit %d, want 1 with a failed row\n%s", code, out)
	}
	out, _, code = compare("--format", "junit", "baseline", "slower")
	if code != 1 || !strings.Contains(out, `<testcase classname="compare.graphql-load" name="cpu_us_per_request">`) || !strings.Contains(out, "<failure") {
		t.Errorf("junit: exit %d, want 1 and a failing cpu case\n%s", code, out)
	}
	out, _, code = compare("--format", "markdown", "accepted", "slower")
	if code != 1 || !strings.HasPrefix(out, "<!-- soakd-comparison -->\n## soakd comparison: FAIL") || !strings.Contains(out, "Old: `accepted`; new: `slower`") || !strings.Contains(out, "**Verdict: FAIL**") || !strings.Contains(out, "Why:") {
		t.Errorf("markdown: exit %d\n%s", code, out)
	}
	out, _, code = compare("baseline", "slower")
	if code != 1 || !strings.Contains(out, "comparison accepted → slower: FAIL") {
		t.Errorf("text (the default): exit %d\n%s", code, out)
	}

	if _, stderr, code := compare("--format", "yaml", "baseline", "same"); code != 2 || !strings.Contains(stderr, "--format must be text, json, junit or markdown") {
		t.Errorf("--format yaml: exit %d, want 2 naming the formats\n%s", code, stderr)
	}
	if _, stderr, code := compare("nope", "same"); code != 7 {
		t.Errorf("an unknown run id: exit %d, want 7\n%s", code, stderr)
	}
	if _, stderr, code := compare(filepath.Join(dir, "missing"), "same"); code != 2 || !strings.Contains(stderr, "no such file or directory") {
		t.Errorf("a missing run directory: exit %d, want 2\n%s", code, stderr)
	}
	// Reports soakd cannot read are refused (exit 2), never compared: {}
	// and null compared as empty runs (exit 4) and schema_version 999 was
	// read silently.
	future := strings.Replace(string(runs.reports["same"]), `"schema_version":1`, `"schema_version":999`, 1)
	for name, body := range map[string]string{"empty.json": "{}", "null.json": "null", "future.json": future, "list.json": "[]"} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"empty.json": "has no schema_version", "null.json": "holds null", "future.json": "schema_version 999", "list.json": "cannot decode"}[name]
		if _, stderr, code := compare("baseline", path); code != 2 || !strings.Contains(stderr, want) || !strings.Contains(stderr, name) {
			t.Errorf("%s: exit %d, want 2 naming the file and %q\n%s", name, code, want, stderr)
		}
	}
	// Runs of different profiles are inconclusive (4), never a release fail.
	other := strings.Replace(string(runs.reports["slower"]), `"profile":"quick"`, `"profile":"gate"`, 1)
	otherPath := filepath.Join(dir, "other-profile.json")
	if err := os.WriteFile(otherPath, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _, code := compare("baseline", otherPath); code != 4 || !strings.Contains(out, "DIFFERENT RUNS") {
		t.Errorf("a slower run of another profile: exit %d, want 4 with DIFFERENT RUNS\n%s", code, out)
	}

	runs.baseline = ""
	if _, stderr, code := compare("baseline", "same"); code != 7 || !strings.Contains(stderr, "has no baseline run") {
		t.Errorf("no baseline marked: exit %d, want 7 saying so\n%s", code, stderr)
	}
}
