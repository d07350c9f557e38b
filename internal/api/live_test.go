package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Live hands out f.live one state a call while f.running is id; when they
// are used up the run has finished.
func (f *fakeRunner) Live(_ context.Context, id string) (LiveState, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	known := false
	for _, r := range f.runs {
		known = known || r.ID == id
	}
	if !known {
		return LiveState{}, false, fmt.Errorf("run %q: %w", id, ErrNotFound)
	}
	if id != f.running || len(f.live) == 0 {
		return LiveState{}, false, nil
	}
	st := f.live[0]
	f.live = f.live[1:]
	if len(f.live) == 0 {
		f.running = ""
		for i := range f.runs {
			if f.runs[i].ID == id {
				f.runs[i].Status, f.runs[i].Verdict = "complete", "pass"
			}
		}
	}
	return st, true, nil
}

// RunFiles lists f.dir for any known run.
func (f *fakeRunner) RunFiles(ctx context.Context, id string) ([]RunFile, error) {
	if _, _, err := f.Get(ctx, id); err != nil {
		return nil, err
	}
	es, err := os.ReadDir(f.dir)
	if err != nil {
		return nil, err
	}
	var out []RunFile
	for _, e := range es {
		if info, err := e.Info(); err == nil && e.Type().IsRegular() {
			out = append(out, RunFile{Name: e.Name(), Bytes: info.Size(), Modified: info.ModTime()})
		}
	}
	return out, nil
}

// OpenRunFile opens a file of f.dir; it records every name it was asked
// for in f.starts' place of files: the test checks what reached it.
func (f *fakeRunner) OpenRunFile(ctx context.Context, id, name string) (*os.File, error) {
	if _, _, err := f.Get(ctx, id); err != nil {
		return nil, err
	}
	if !ValidRunFileName(name) {
		panic("OpenRunFile was asked for " + name + ", which the API must refuse first")
	}
	fh, err := os.Open(filepath.Join(f.dir, name))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoFile, err)
	}
	return fh, nil
}

// Soak answers f.soak, or none.
func (f *fakeRunner) Soak(context.Context) (json.RawMessage, error) {
	if f.soak == nil {
		return nil, fmt.Errorf("%w: no soak", ErrNotFound)
	}
	return f.soak, nil
}

func TestSoakRoute(t *testing.T) {
	f := newFakeRunner()
	h := NewHandler(f, "", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/soak", nil))
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "no soak") {
		t.Errorf("no soak: %d %s", rec.Code, rec.Body)
	}
	f.soak = json.RawMessage(`{"soak":"s1","status":"running","cycles":[]}`)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/soak", nil))
	if rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != string(f.soak) {
		t.Errorf("a soak: %d %s", rec.Code, rec.Body)
	}
	f.soak = json.RawMessage(`{"soak":`)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/soak", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("a half-written soak.json: %d %s", rec.Code, rec.Body)
	}
}

func TestValidRunFileName(t *testing.T) {
	for name, want := range map[string]bool{
		"report.html": true, "graphql-load#1.cpu.pb.gz": true, "target.stderr.log": true, "rest_1.cpu.pb.gz": true,
		"": false, ".": false, "..": false, ".hidden": false, "../report.json": false, "a/b": false, `a\b`: false,
		"a..b": false, "report.html\x00": false, "répört.html": false, strings.Repeat("a", 201): false, "a b": false,
	} {
		if got := ValidRunFileName(name); got != want {
			t.Errorf("ValidRunFileName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestRunFiles: a run's files are listed and served with their type, a
// page sandboxed; a name that is no run file never reaches the Runner; an
// unknown run or file is 404; the token rule holds.
func TestRunFiles(t *testing.T) {
	f := newFakeRunner()
	f.dir = t.TempDir()
	for name, body := range map[string]string{"report.html": "<!doctype html><p>report", "report.json": `{"run":"run-1"}`, "graphql.cpu.pb.gz": "\x1f\x8b"} {
		if err := os.WriteFile(filepath.Join(f.dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.runs = []RunSummary{{ID: "run-1", Status: "complete", Verdict: "pass"}}
	srv := httptest.NewServer(NewHandler(f, testToken, nil))
	defer srv.Close()
	get := func(path string, auth bool) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+testToken)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		return resp, b.String()
	}
	resp, body := get("/v1/runs/run-1/files", true)
	if resp.StatusCode != 200 || !strings.Contains(body, `"name":"report.html"`) || !strings.Contains(body, `"bytes":24`) {
		t.Errorf("files: %d %s", resp.StatusCode, body)
	}
	resp, body = get("/v1/runs/run-1/files/report.html", true)
	if resp.StatusCode != 200 || body != "<!doctype html><p>report" || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
		!strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "sandbox allow-scripts") {
		t.Errorf("report.html: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if resp, _ := get("/v1/runs/run-1/files/graphql.cpu.pb.gz", true); resp.Header.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("a profile is served as %s", resp.Header.Get("Content-Type"))
	}
	for path, want := range map[string]int{
		"/v1/runs/run-1/files/report.html":            http.StatusUnauthorized, // without the token
		"/v1/runs/run-1/files/..%2F..%2Fetc%2Fpasswd": http.StatusNotFound,
		"/v1/runs/run-1/files/%2e%2e":                 http.StatusNotFound,
		"/v1/runs/run-1/files/.hidden":                http.StatusNotFound,
		"/v1/runs/run-1/files/missing.json":           http.StatusNotFound,
		"/v1/runs/nope/files/report.html":             http.StatusNotFound,
		"/v1/runs/nope/files":                         http.StatusNotFound,
	} {
		resp, body := get(path, !strings.HasSuffix(path, "report.html") || strings.Contains(path, "nope"))
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d %s, want %d", path, resp.StatusCode, body, want)
		}
	}
	if _, body := get("/v1/runs/run-1/files/missing.json", true); !strings.Contains(body, "no such run file") {
		t.Errorf("a missing file's 404 says %s", body)
	}
}

// TestRunEvents: the stream sends a progress event per state while the
// run runs, then one end event with the finished run, and ends; an unknown
// run is a 404 before any stream.
func TestRunEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRunner()
		f.runs = []RunSummary{{ID: "run-1", Status: "running", Verdict: "running"}}
		f.running = "run-1"
		for i := range 3 {
			f.live = append(f.live, LiveState{Run: "run-1", Phase: i + 1, Phases: 3, Running: []LivePhase{{Name: fmt.Sprintf("p%d", i+1), Requests: int64(100 * (i + 1))}}})
		}
		h := NewHandlerWith(f, Options{EventInterval: 500 * time.Millisecond})
		rec := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/runs/run-1/events", nil))
		if took := time.Since(start); took != 1500*time.Millisecond {
			t.Errorf("the stream took %v (fake time), want three events 500ms apart", took)
		}
		body := rec.Body.String()
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/event-stream" {
			t.Fatalf("events: %d %v", rec.Code, rec.Header())
		}
		if n := strings.Count(body, "event: progress\n"); n != 3 {
			t.Errorf("%d progress events, want 3:\n%s", n, body)
		}
		for i := range 3 {
			if !strings.Contains(body, fmt.Sprintf(`"phase":%d,"phases":3`, i+1)) || !strings.Contains(body, fmt.Sprintf(`"requests":%d`, 100*(i+1))) {
				t.Errorf("event %d missing:\n%s", i+1, body)
			}
		}
		if !strings.HasSuffix(body, "\n\n") || !strings.Contains(body, "event: end\ndata: {\"id\":\"run-1\"") || !strings.Contains(body, `"status":"complete"`) {
			t.Errorf("no end event with the finished run:\n%s", body)
		}

		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/runs/nope/events", nil))
		if rec.Code != http.StatusNotFound || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("unknown run: %d %s", rec.Code, rec.Body)
		}
		// A finished run's stream is its end event alone.
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/runs/run-1/events", nil))
		if b := rec.Body.String(); strings.Count(b, "event: ") != 1 || !strings.HasPrefix(b, "event: end\n") {
			t.Errorf("a finished run's stream: %q", b)
		}
	})
}

// TestUIIsServedWithoutToken: with Options.UI the page and its assets
// answer without the token (they hold no data), /v1 still needs it, and
// without UI / stays a JSON 404.
func TestUIIsServedWithoutToken(t *testing.T) {
	ui := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "page "+r.URL.Path) })
	h := NewHandlerWith(newFakeRunner(), Options{Token: testToken, UI: ui})
	for path, want := range map[string]int{"/": 200, "/ui/app.js": 200, "/v1/runs": 401, "/nope": 404} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Errorf("GET %s: %d %s, want %d", path, rec.Code, rec.Body, want)
		}
	}
	rec := httptest.NewRecorder()
	NewHandler(newFakeRunner(), "", nil).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), `"error"`) {
		t.Errorf("without UI, GET /: %d %s", rec.Code, rec.Body)
	}
}

// TestFileTickets: a ticket, asked for with the token, opens its one file
// without the header until TicketTTL has passed; not another file, not a
// POST, not after it expired; asking needs the token and a file that
// exists.
func TestFileTickets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRunner()
		f.dir = t.TempDir()
		for _, name := range []string{"report.html", "report.json"} {
			if err := os.WriteFile(filepath.Join(f.dir, name), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		f.runs = []RunSummary{{ID: "run-1", Status: "complete"}}
		h := NewHandler(f, testToken, nil)
		do := func(method, path string, auth bool) *httptest.ResponseRecorder {
			req := httptest.NewRequest(method, path, nil)
			if auth {
				req.Header.Set("Authorization", "Bearer "+testToken)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec
		}
		if rec := do(http.MethodPost, "/v1/runs/run-1/files/report.html/ticket", false); rec.Code != http.StatusUnauthorized {
			t.Errorf("a ticket without the token: %d", rec.Code)
		}
		if rec := do(http.MethodPost, "/v1/runs/run-1/files/missing.html/ticket", true); rec.Code != http.StatusNotFound {
			t.Errorf("a ticket for a missing file: %d", rec.Code)
		}
		rec := do(http.MethodPost, "/v1/runs/run-1/files/report.html/ticket", true)
		var tr struct {
			URL     string    `json:"url"`
			Expires time.Time `json:"expires"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &tr); err != nil || rec.Code != 200 || !strings.HasPrefix(tr.URL, "/v1/runs/run-1/files/report.html?ticket=") {
			t.Fatalf("ticket: %d %s %v", rec.Code, rec.Body, err)
		}
		v := strings.TrimPrefix(tr.URL, "/v1/runs/run-1/files/report.html?ticket=")
		if len(v) < 40 {
			t.Errorf("ticket %q is short", v)
		}
		if rec := do(http.MethodGet, tr.URL, false); rec.Code != 200 || rec.Body.String() != "x" {
			t.Errorf("the ticket's URL: %d %s", rec.Code, rec.Body)
		}
		for _, path := range []string{"/v1/runs/run-1/files/report.json?ticket=" + v, "/v1/runs/run-1/files?ticket=" + v, "/v1/runs?ticket=" + v, "/v1/runs/run-1/files/report.html?ticket=" + v + "x"} {
			if rec := do(http.MethodGet, path, false); rec.Code != http.StatusUnauthorized {
				t.Errorf("GET %s: %d, want 401 (the ticket opens one file)", path, rec.Code)
			}
		}
		if rec := do(http.MethodPost, "/v1/runs/run-1/stop?ticket="+v, false); rec.Code != http.StatusUnauthorized {
			t.Errorf("a ticket stops a run: %d", rec.Code)
		}
		time.Sleep(TicketTTL)
		if rec := do(http.MethodGet, tr.URL, false); rec.Code != http.StatusUnauthorized {
			t.Errorf("after %v the ticket still opens its file: %d", TicketTTL, rec.Code)
		}
	})
}
