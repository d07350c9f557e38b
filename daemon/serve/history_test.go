package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/run"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/fsutil"
	"github.com/soakd/soakd/internal/history"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/testkit"
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
	cfg := testkit.Config(t, "data_dir: x\n")
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
	store, err := history.Open(cfg.DataDir, history.Options{})
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

// enospc is what a write to a full disk returns.
func enospc(path string) error {
	return fmt.Errorf("cannot write the run directory: %w", &fs.PathError{Op: "write", Path: path, Err: syscall.ENOSPC})
}

// TestWriteFailureEndsRun reproduces issue 10 item 7: when the disk fills
// up under serve, the run's last report cannot be written, so its
// report.json still says running (or it never wrote one), and the history
// cannot rewrite it either. The run must end all the same: aborted in
// memory and in the API with the write error as its reason, no longer
// running, and a new run can start.
func TestWriteFailureEndsRun(t *testing.T) {
	cfg := testkit.Config(t, "data_dir: x\n")
	cfg.DataDir = t.TempDir()
	var full atomic.Bool // the disk fills up after the daemon started
	store, err := history.Open(cfg.DataDir, history.Options{WriteFile: func(path string, data []byte, perm fs.FileMode) error {
		if full.Load() {
			return enospc(path)
		}
		return fsutil.WriteFile(path, data, perm)
	}})
	if err != nil {
		t.Fatal(err)
	}
	full.Store(true)
	t.Cleanup(func() { _ = store.Close() })
	wroteFirst := true
	d := &daemon{cfg: cfg, log: zap.NewNop(), store: store, base: t.Context(),
		suite: func(_ context.Context, _ *config.Config, ro run.RunOptions) (*report.Report, error) {
			if wroteFirst {
				rep := &report.Report{Run: ro.RunID, Profile: ro.Profile, Status: report.StatusRunning, Verdict: kpi.OutcomeRunning, StartedAt: time.Now()}
				if err := rep.Write(ro.OutDir, nil); err != nil {
					return nil, err
				}
			}
			return nil, exitcode.With(exitcode.Aborted, enospc(filepath.Join(ro.OutDir, report.JSONFile)))
		}}
	h := api.NewHandler(d, "", zap.NewNop())
	for _, first := range []bool{true, false} {
		wroteFirst = first
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/runs", strings.NewReader(`{}`)))
		if rec.Code != http.StatusAccepted {
			t.Fatalf("POST /v1/runs (first report written: %v): HTTP %d %s, want 202: a failed run must not block the next", first, rec.Code, rec.Body)
		}
		var started api.RunSummary
		if err := json.Unmarshal(rec.Body.Bytes(), &started); err != nil {
			t.Fatal(err)
		}
		d.runs.Wait()
		var got struct {
			Run api.RunSummary `json:"run"`
		}
		if code := apiGet(t, h, "/v1/runs/"+started.ID, &got); code != http.StatusOK {
			t.Fatalf("GET the failed run: HTTP %d", code)
		}
		r := got.Run
		if r.Status != report.StatusAborted || r.Verdict != kpi.OutcomeAborted || !strings.Contains(r.Reason, "no space left on device") || r.FinishedAt.IsZero() {
			t.Errorf("a run whose write failed (first report written: %v): %+v, want status and verdict aborted, finished, the write error as reason", first, r)
		}
		if err := d.Stop(t.Context(), started.ID); !errors.Is(err, api.ErrNotRunning) {
			t.Errorf("stopping the failed run: %v, want ErrNotRunning (it has ended)", err)
		}
		var list struct {
			Runs []api.RunSummary `json:"runs"`
		}
		apiGet(t, h, "/v1/runs", &list)
		for _, l := range list.Runs {
			if l.ID == started.ID && l.Status != report.StatusAborted {
				t.Errorf("the run list shows the failed run as %q, want aborted", l.Status)
			}
		}
	}
}

// TestServeReadOnlyHistory: with a data_dir that takes no writes (every
// write fails with ENOSPC), serve still starts: the log and GET
// /v1/history say the history is read-only and why, the runs are listed
// (a run interrupted by the previous daemon reads aborted, its report left
// as it was), and a start answers 503 naming the reason.
func TestServeReadOnlyHistory(t *testing.T) {
	cfg := testkit.Config(t, "data_dir: x\n")
	cfg.DataDir = t.TempDir()
	cfg.API.Listen = freeAddr(t)
	dir := filepath.Join(cfg.DataDir, history.RunsDir, "interrupted")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := (&report.Report{Run: "interrupted", Status: report.StatusRunning, Verdict: kpi.OutcomeRunning}).Write(dir, nil); err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zap.InfoLevel)
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, cfg, ServeOptions{Log: zap.New(core), History: history.Options{WriteFile: func(path string, _ []byte, _ fs.FileMode) error {
			return enospc(path)
		}}})
	}()
	cl := &api.Client{BaseURL: "http://" + cfg.API.Listen}
	var h api.HistoryState
	awaitServe(t, served, "serve with a full disk", func() (err error) { h, err = cl.History(ctx); return err })
	if !h.ReadOnly || !strings.Contains(h.Reason, "no space left on device") {
		t.Errorf("GET /v1/history: %+v, want read-only naming ENOSPC", h)
	}
	if got := logs.FilterMessageSnippet("history is read-only").All(); len(got) != 1 || !strings.Contains(fmt.Sprint(got[0].ContextMap()["error"]), "no space left on device") {
		t.Errorf("startup log: %v, want one line saying the history is read-only and why", logs.All())
	}
	runs, err := cl.List(ctx)
	if err != nil || len(runs) != 1 || runs[0].Status != report.StatusAborted || runs[0].Reason != history.StoppedMessage {
		t.Errorf("runs: %+v, %v, want the interrupted run aborted", runs, err)
	}
	if rep, err := report.Read(filepath.Join(dir, report.JSONFile)); err != nil || rep.Status != report.StatusRunning {
		t.Errorf("the interrupted run's report.json: %v, want left as it was", err)
	}
	_, err = cl.Start(ctx, api.StartRequest{})
	if ae, ok := errors.AsType[*api.APIError](err); !ok || ae.Status != http.StatusServiceUnavailable || !strings.Contains(ae.Message, "read-only") || !strings.Contains(ae.Message, "no space left on device") {
		t.Errorf("a start on a read-only history: %v, want 503 saying read-only and why", err)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve on cancel: %v", err)
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// awaitServe calls try until it succeeds (Serve answers its API), failing
// the test when Serve exits first (served) or after 30 s; what names the
// daemon in the failure.
func awaitServe(t *testing.T, served <-chan error, what string, try func() error) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		err := try()
		if err == nil {
			return
		}
		select {
		case err := <-served:
			t.Fatalf("%s exited: %v", what, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never answered: %v", what, err)
		}
	}
}
