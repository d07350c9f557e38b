package daemon

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/soakd/soakd/api"
	"github.com/soakd/soakd/history"
	"github.com/soakd/soakd/report"
)

// apiGet sends GET path to h and decodes the JSON answer into out; it
// returns the status.
func apiGet(t *testing.T, h http.Handler, path string, out any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, rec.Body)
		}
	} else {
		t.Logf("GET %s: HTTP %d %s", path, rec.Code, rec.Body)
	}
	return rec.Code
}

// TestUnreadableReportIsServed reproduces issue 10 item 8: an old run whose
// report.json is truncated, or became garbage after the daemon started,
// made GET /v1/runs/{id} answer 500. It must answer the run with state
// unreadable and the reason, a null report, and the list must not fail.
func TestUnreadableReportIsServed(t *testing.T) {
	cfg := testConfig(t, "data_dir: x\n")
	cfg.DataDir = t.TempDir()
	write := func(id, body string) {
		t.Helper()
		dir := filepath.Join(cfg.DataDir, history.RunsDir, id)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, report.JSONFile), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("truncated", `{"run":"truncated","status":"complete","verd`)
	write("later", `{"run":"later","profile":"quick","status":"complete","verdict":"pass"}`)
	store, err := history.Open(cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	write("later", "\x00\x01garbage")
	h := api.NewHandler(&daemon{cfg: cfg, log: zap.NewNop(), store: store, base: t.Context()}, "", zap.NewNop())

	for _, id := range []string{"truncated", "later"} {
		var got struct {
			Run    api.RunSummary  `json:"run"`
			Report json.RawMessage `json:"report"`
		}
		if code := apiGet(t, h, "/v1/runs/"+id, &got); code != http.StatusOK {
			t.Errorf("GET /v1/runs/%s: HTTP %d, want 200", id, code)
			continue
		}
		if got.Run.Status != history.StatusUnreadable || got.Run.Verdict != "" || !strings.Contains(got.Run.Reason, report.JSONFile) {
			t.Errorf("GET /v1/runs/%s: run %+v, want status %q, no verdict and a reason naming %s", id, got.Run, history.StatusUnreadable, report.JSONFile)
		}
		if string(got.Report) != "null" {
			t.Errorf("GET /v1/runs/%s: report %s, want null", id, got.Report)
		}
	}
	var list struct {
		Runs []api.RunSummary `json:"runs"`
	}
	if code := apiGet(t, h, "/v1/runs", &list); code != http.StatusOK {
		t.Fatalf("GET /v1/runs: HTTP %d, want 200", code)
	}
	for _, r := range list.Runs {
		if r.Status != history.StatusUnreadable || r.Reason == "" {
			t.Errorf("GET /v1/runs lists %+v, want status %q with a reason", r, history.StatusUnreadable)
		}
	}
	if len(list.Runs) != 2 {
		t.Errorf("GET /v1/runs lists %d runs, want 2", len(list.Runs))
	}
}
