package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/soakd/soakd/internal/echo"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testToken = "s3cret-Token-value-0123456789"

// fakeRunner is an in-memory Runner: one run at a time, Stop completes it.
type fakeRunner struct {
	mu      sync.Mutex
	runs    []RunSummary // newest last
	running string
	starts  []StartRequest // every request that reached Start
	ready   atomic.Bool
	now     time.Time
	history HistoryState
	// live is the progress states Live hands out, one a call, for the
	// running run; dir holds every run's files (live_test.go).
	live []LiveState
	dir  string
	soak json.RawMessage
}

func newFakeRunner() *fakeRunner {
	f := &fakeRunner{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	f.ready.Store(true)
	return f
}

func (f *fakeRunner) Start(_ context.Context, req StartRequest) (RunSummary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts = append(f.starts, req)
	switch req.Profile {
	case "boom":
		return RunSummary{}, errors.New("cannot start the driver: exec failed")
	case "nope":
		return RunSummary{}, fmt.Errorf("profile %q: %w", req.Profile, ErrInvalidRequest)
	case "full":
		return RunSummary{}, fmt.Errorf("%w: the history is read-only: cannot write in /data: no space left on device", ErrUnavailable)
	}
	if f.running != "" {
		return RunSummary{}, fmt.Errorf("cannot start: %w", &BusyError{RunningID: f.running})
	}
	profile := req.Profile
	if profile == "" {
		profile = "default"
	}
	s := RunSummary{
		ID:        fmt.Sprintf("run-%d", len(f.runs)+1),
		Profile:   profile,
		Status:    "running",
		Verdict:   "running",
		StartedAt: f.now,
		Dir:       "/data/runs/run-x",
	}
	f.runs = append(f.runs, s)
	f.running = s.ID
	return s, nil
}

func (f *fakeRunner) Stop(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.runs {
		if f.runs[i].ID != id {
			continue
		}
		if f.running != id {
			return fmt.Errorf("run %q: %w", id, ErrNotRunning)
		}
		f.running = ""
		f.runs[i].Status = "aborted"
		f.runs[i].Verdict = "aborted"
		f.runs[i].FinishedAt = f.now.Add(time.Minute)
		return nil
	}
	return ErrNotFound // bare: the server adds the id
}

func (f *fakeRunner) SetBaseline(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	found := false
	for i := range f.runs {
		f.runs[i].Baseline = f.runs[i].ID == id
		found = found || f.runs[i].ID == id
	}
	if !found {
		return ErrNotFound
	}
	return nil
}

func (f *fakeRunner) List(context.Context) ([]RunSummary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]RunSummary, 0, len(f.runs))
	for i := len(f.runs) - 1; i >= 0; i-- {
		out = append(out, f.runs[i])
	}
	return out, nil
}

func (f *fakeRunner) Get(_ context.Context, id string) (RunSummary, json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.runs {
		if s.ID == id {
			if s.Status == "running" {
				return s, nil, nil
			}
			return s, json.RawMessage(fmt.Sprintf(`{"run":%q,"verdict":"aborted"}`, id)), nil
		}
	}
	return RunSummary{}, nil, fmt.Errorf("run %q: %w", id, ErrNotFound)
}

func (f *fakeRunner) Ready() bool { return f.ready.Load() }

// Changes answers profile "p" with one change on run "b"; any other
// profile is invalid.
func (f *fakeRunner) Changes(_ context.Context, profile, metric string) (HistoryChanges, error) {
	if profile != "p" {
		return HistoryChanges{}, fmt.Errorf("%w: profile %q is not configured", ErrBadQuery, profile)
	}
	v := 1.0
	return HistoryChanges{Profile: profile, Metric: metric, Runs: []SeriesPoint{{ID: "a", Value: &v}, {ID: "b"}}, Changes: []ChangePoint{{Run: "b"}}}, nil
}

func (f *fakeRunner) History(context.Context) HistoryState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.history
}

func (f *fakeRunner) startCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.starts)
}

func (f *fakeRunner) start(i int) StartRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts[i]
}

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newServer starts the API over a fake runner on a real loopback listener.
func newServer(t *testing.T, token string, log *zap.Logger) (*httptest.Server, *fakeRunner) {
	t.Helper()
	f := newFakeRunner()
	srv := httptest.NewServer(NewHandler(f, token, log))
	t.Cleanup(srv.Close)
	return srv, f
}

func newClient(srv *httptest.Server, token string) *Client {
	return &Client{BaseURL: srv.URL + "/", Token: token, HTTP: srv.Client()}
}

// do sends a raw request and returns the status, headers and body.
func do(t *testing.T, srv *httptest.Server, method, path, token string, body io.Reader) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// errorMessage decodes the JSON error shape, failing if it is not that.
func errorMessage(t *testing.T, body []byte) errorDetail {
	t.Helper()
	var eb errorBody
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&eb); err != nil || eb.Error.Message == "" {
		t.Fatalf("body %q is not the JSON error shape (err %v)", body, err)
	}
	return eb.Error
}

func TestHappyPath(t *testing.T) {
	srv, f := newServer(t, testToken, nil)
	c := newClient(srv, testToken)
	ctx := t.Context()

	sum, err := c.Start(ctx, StartRequest{Profile: "quick", Overrides: "soak:\n  cycles: 2\n"})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if sum.ID != "run-1" || sum.Profile != "quick" || sum.Status != "running" || sum.Verdict != "running" || !sum.StartedAt.Equal(f.now) {
		t.Errorf("Start: got %+v, want run-1 quick, status and verdict running, started at %v", sum, f.now)
	}
	if got, want := f.start(0), (StartRequest{Profile: "quick", Overrides: "soak:\n  cycles: 2\n"}); got != want {
		t.Errorf("runner got %+v, want %+v", got, want)
	}

	runs, err := c.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(runs) != 1 || !reflect.DeepEqual(runs[0], sum) {
		t.Errorf("List: got %+v, want [%+v]", runs, sum)
	}

	got, rep, err := c.Get(ctx, "run-1")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if !reflect.DeepEqual(got, sum) || rep != nil {
		t.Errorf("Get while running: got %+v report %q, want %+v and a nil report", got, rep, sum)
	}

	if err := c.Stop(ctx, "run-1"); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	got, rep, err = c.Get(ctx, "run-1")
	if err != nil {
		t.Fatalf("Get after stop: %v", err)
	}
	if got.Status != "aborted" || got.FinishedAt.IsZero() {
		t.Errorf("Get after stop: got %+v, want aborted with a finish time", got)
	}
	if want := `{"run":"run-1","verdict":"aborted"}`; string(rep) != want {
		t.Errorf("Get report: got %s, want %s", rep, want)
	}
}

func TestRawResponses(t *testing.T) {
	srv, _ := newServer(t, "", nil)

	status, hdr, body := do(t, srv, http.MethodPost, "/v1/runs", "", strings.NewReader(`{"profile":"quick"}`))
	if status != http.StatusAccepted {
		t.Fatalf("POST /v1/runs: got %d, want 202 (body %s)", status, body)
	}
	if got, want := hdr.Get("Location"), "/v1/runs/run-1"; got != want {
		t.Errorf("Location: got %q, want %q", got, want)
	}
	if got := hdr.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", got)
	}
	// A running run has no finished_at; the keys are the history summary's.
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "profile", "status", "verdict", "started_at", "baseline", "dir"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary %s: missing key %q", body, k)
		}
	}
	if _, ok := m["finished_at"]; ok {
		t.Errorf("summary %s: got finished_at for a running run, want it omitted", body)
	}

	status, _, body = do(t, srv, http.MethodGet, "/v1/runs/run-1", "", nil)
	if status != http.StatusOK || !bytes.Contains(body, []byte(`"report":null`)) {
		t.Errorf("GET /v1/runs/run-1: got %d %s, want 200 with \"report\":null", status, body)
	}
	status, _, body = do(t, srv, http.MethodPost, "/v1/runs/run-1/stop", "", nil)
	if status != http.StatusAccepted || !bytes.Contains(body, []byte(`"status":"stopping"`)) {
		t.Errorf("POST stop: got %d %s, want 202 stopping", status, body)
	}
	status, _, body = do(t, srv, http.MethodGet, "/v1/runs", "", nil)
	if status != http.StatusOK || !bytes.HasPrefix(body, []byte(`{"runs":[{"id":"run-1"`)) {
		t.Errorf("GET /v1/runs: got %d %s, want 200 {\"runs\":[...]}", status, body)
	}
}

func TestEmptyListAndEmptyBody(t *testing.T) {
	srv, f := newServer(t, "", nil)
	status, _, body := do(t, srv, http.MethodGet, "/v1/runs", "", nil)
	if status != http.StatusOK || string(body) != "{\"runs\":[]}\n" {
		t.Errorf("empty list: got %d %q, want 200 {\"runs\":[]}", status, body)
	}
	// No body at all starts the default profile.
	status, _, body = do(t, srv, http.MethodPost, "/v1/runs", "", nil)
	if status != http.StatusAccepted {
		t.Fatalf("empty body: got %d %s, want 202", status, body)
	}
	if got := f.start(0); got != (StartRequest{}) {
		t.Errorf("empty body reached the runner as %+v, want the zero request", got)
	}
}

func TestSecondStartConflicts(t *testing.T) {
	srv, _ := newServer(t, "", nil)
	c := newClient(srv, "")
	first, err := c.Start(t.Context(), StartRequest{Profile: "quick"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Start(t.Context(), StartRequest{Profile: "quick"})
	ae, ok := errors.AsType[*APIError](err)
	if !ok {
		t.Fatalf("second Start: got %v, want an *APIError", err)
	}
	if ae.Status != http.StatusConflict || ae.RunningID != first.ID {
		t.Errorf("second Start: got status %d running id %q, want 409 and %q", ae.Status, ae.RunningID, first.ID)
	}
	if !strings.Contains(ae.Message, first.ID) {
		t.Errorf("message %q does not name the running run %q", ae.Message, first.ID)
	}
	busy, ok := errors.AsType[*BusyError](err)
	if !ok || busy.RunningID != first.ID {
		t.Errorf("errors.AsType[*BusyError]: got %v %v, want running id %q", busy, ok, first.ID)
	}

	// The raw body carries running_id.
	status, _, body := do(t, srv, http.MethodPost, "/v1/runs", "", strings.NewReader(`{}`))
	if ed := errorMessage(t, body); status != http.StatusConflict || ed.RunningID != first.ID {
		t.Errorf("raw second start: got %d %+v, want 409 running_id %q", status, ed, first.ID)
	}
}

func TestRunnerErrors(t *testing.T) {
	srv, _ := newServer(t, "", nil)
	c := newClient(srv, "")
	ctx := t.Context()

	f := func(name string, err error, wantStatus int, wantIs error, wantInMsg string) {
		t.Helper()
		ae, ok := errors.AsType[*APIError](err)
		if !ok {
			t.Errorf("%s: got %v, want an *APIError", name, err)
			return
		}
		if ae.Status != wantStatus {
			t.Errorf("%s: got status %d, want %d (%v)", name, ae.Status, wantStatus, err)
		}
		if wantIs != nil && !errors.Is(err, wantIs) {
			t.Errorf("%s: %v does not match %v", name, err, wantIs)
		}
		if !strings.Contains(ae.Message, wantInMsg) {
			t.Errorf("%s: message %q does not contain %q", name, ae.Message, wantInMsg)
		}
	}

	_, _, err := c.Get(ctx, "missing")
	f("get unknown", err, http.StatusNotFound, ErrNotFound, `run "missing"`)
	err = c.Stop(ctx, "missing")
	f("stop unknown (bare sentinel)", err, http.StatusNotFound, ErrNotFound, `run "missing": run not found`)

	sum, err := c.Start(ctx, StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(ctx, sum.ID); err != nil {
		t.Fatal(err)
	}
	err = c.Stop(ctx, sum.ID)
	f("stop finished", err, http.StatusConflict, ErrNotRunning, "not running")
	if _, ok := errors.AsType[*BusyError](err); ok {
		t.Errorf("stop finished: %v matches *BusyError, want only ErrNotRunning", err)
	}

	_, err = c.Start(ctx, StartRequest{Profile: "nope"})
	f("invalid profile", err, http.StatusBadRequest, ErrInvalidRequest, `profile "nope"`)
	_, err = c.Start(ctx, StartRequest{Profile: "boom"})
	f("runner failure", err, http.StatusInternalServerError, nil, "exec failed")
}

func TestAuth(t *testing.T) {
	srv, f := newServer(t, testToken, nil)

	for _, tc := range []struct {
		name      string
		header    string // Authorization; "" sends none
		wantError string // "" for a missing token; else the error param
	}{
		{"no header", "", ""},
		{"wrong token", "Bearer nope", "invalid_token"},
		{"token plus a byte", "Bearer " + testToken + "x", "invalid_token"},
		{"token prefix", "Bearer " + testToken[:len(testToken)-1], "invalid_token"},
		{"basic scheme", "Basic " + testToken, ""},
		{"bare token", testToken, ""},
		{"empty bearer", "Bearer ", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, route := range []struct{ method, path string }{
				{http.MethodGet, "/v1/runs"},
				{http.MethodPost, "/v1/runs"},
				{http.MethodGet, "/v1/runs/run-1"},
				{http.MethodPost, "/v1/runs/run-1/stop"},
				{http.MethodGet, "/v1/nowhere"},
			} {
				req, err := http.NewRequestWithContext(t.Context(), route.method, srv.URL+route.path, strings.NewReader(`{}`))
				if err != nil {
					t.Fatal(err)
				}
				if tc.header != "" {
					req.Header.Set("Authorization", tc.header)
				}
				resp, err := srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s %s: got %d, want 401", route.method, route.path, resp.StatusCode)
				}
				errorMessage(t, body)
				www := resp.Header.Get("WWW-Authenticate")
				if !strings.HasPrefix(www, "Bearer") {
					t.Errorf("%s %s: WWW-Authenticate %q, want a Bearer challenge", route.method, route.path, www)
				}
				if got := strings.Contains(www, `error="invalid_token"`); got != (tc.wantError != "") {
					t.Errorf("%s %s: WWW-Authenticate %q, want invalid_token %v", route.method, route.path, www, tc.wantError != "")
				}
			}
		})
	}
	if n := f.startCount(); n != 0 {
		t.Errorf("unauthenticated requests reached Start %d times, want 0", n)
	}

	// The client without or with a wrong token gets a 401 APIError.
	for _, tok := range []string{"", "wrong"} {
		_, err := newClient(srv, tok).List(t.Context())
		if ae, ok := errors.AsType[*APIError](err); !ok || ae.Status != http.StatusUnauthorized {
			t.Errorf("client token %q: got %v, want a 401 *APIError", tok, err)
		}
	}
	// The right token, with the scheme in any case, passes.
	if status, _, body := do(t, srv, http.MethodGet, "/v1/runs", testToken, nil); status != http.StatusOK {
		t.Errorf("right token: got %d %s, want 200", status, body)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/v1/runs", nil)
	req.Header.Set("Authorization", "bearer "+testToken)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("lower-case scheme: got %d, want 200", resp.StatusCode)
	}

	// Probes need no token.
	if status, _, body := do(t, srv, http.MethodGet, "/healthz", "", nil); status != http.StatusOK {
		t.Errorf("/healthz without token: got %d %s, want 200", status, body)
	}
	if status, _, body := do(t, srv, http.MethodGet, "/readyz", "", nil); status != http.StatusOK {
		t.Errorf("/readyz without token: got %d %s, want 200", status, body)
	}
	f.ready.Store(false)
	status, _, body := do(t, srv, http.MethodGet, "/readyz", "", nil)
	if status != http.StatusServiceUnavailable {
		t.Errorf("/readyz not ready: got %d %s, want 503", status, body)
	}
	errorMessage(t, body)
}

func TestTokenNeverLogged(t *testing.T) {
	var buf lockedBuffer
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&buf), zapcore.DebugLevel)
	f := newFakeRunner()
	srv := httptest.NewServer(NewHandler(f, testToken, zap.New(core)))

	send := func(method, path, auth, body string) {
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	good := "Bearer " + testToken
	send(http.MethodGet, "/v1/runs", "", "")
	send(http.MethodGet, "/v1/runs", "Bearer "+testToken+"x", "")
	send(http.MethodGet, "/v1/runs", "Bearer "+testToken[:10], "")
	send(http.MethodGet, "/v1/runs?token="+testToken, "Basic "+testToken, "")
	send(http.MethodPost, "/v1/runs", good, `{"profile":"boom"}`)
	send(http.MethodPost, "/v1/runs", good, `{"profile":"`+testToken+`","bad":1}`)
	send(http.MethodPost, "/v1/runs", good, `{}`)
	send(http.MethodPost, "/v1/runs", good, `{}`) // 409
	send(http.MethodGet, "/v1/runs/missing", good, "")
	send(http.MethodDelete, "/v1/runs", good, "")
	send(http.MethodGet, "/nowhere", good, "")
	srv.Close() // waits for the handlers, so every line is written

	logs := buf.String()
	if !strings.Contains(logs, `"status":401`) || !strings.Contains(logs, `"status":500`) || !strings.Contains(logs, `"status":409`) {
		t.Fatalf("the failures were not logged (so the check below proves nothing):\n%s", logs)
	}
	if strings.Contains(logs, testToken) || strings.Contains(logs, testToken[:10]) {
		t.Errorf("the token appears in the log:\n%s", logs)
	}
	if n := strings.Count(logs, "\n"); n != 10 {
		t.Errorf("got %d log lines for 10 failed requests, want one each:\n%s", n, logs)
	}
}

func TestBadBodies(t *testing.T) {
	srv, f := newServer(t, "", nil)
	huge := `{"profile":"quick","overrides":"` + strings.Repeat("a", MaxBodyBytes) + `"}`
	for _, tc := range []struct {
		name, body, wantInMsg string
		chunked               bool
	}{
		{"unknown field", `{"profile":"quick","cycles":3}`, `unknown field "cycles"`, false},
		{"malformed", `{"profile":`, "malformed JSON", false},
		{"syntax", `{"profile" "x"}`, "malformed JSON at byte", false},
		{"trailing data", `{"profile":"quick"} {}`, "after the object", false},
		{"array", `[{"profile":"quick"}]`, "want a JSON object", false},
		{"null", `null`, "want a JSON object", false},
		{"wrong type", `{"profile":5}`, `invalid field "profile"`, false},
		{"oversized with length", huge, "too large", false},
		{"oversized chunked", huge, "too large", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // hides the length: chunked encoding
			}
			status, _, resp := do(t, srv, http.MethodPost, "/v1/runs", "", body)
			if status != http.StatusBadRequest {
				t.Errorf("got %d %s, want 400", status, resp)
			}
			if msg := errorMessage(t, resp).Message; !strings.Contains(msg, tc.wantInMsg) {
				t.Errorf("message %q does not contain %q", msg, tc.wantInMsg)
			}
		})
	}
	if n := f.startCount(); n != 0 {
		t.Errorf("bad bodies reached Start %d times, want 0", n)
	}
	// Exactly the limit is fine.
	pad := strings.Repeat(" ", MaxBodyBytes-len(`{"profile":"quick"}`))
	if status, _, resp := do(t, srv, http.MethodPost, "/v1/runs", "", strings.NewReader(`{"profile":"quick"}`+pad)); status != http.StatusAccepted {
		t.Errorf("body of exactly %d bytes: got %d %s, want 202", MaxBodyBytes, status, resp)
	}
}

func TestNotFoundAndMethodNotAllowed(t *testing.T) {
	srv, _ := newServer(t, testToken, nil)
	for _, tc := range []struct {
		method, path string
		wantStatus   int
		wantAllow    string
	}{
		{http.MethodGet, "/", http.StatusNotFound, ""},
		{http.MethodGet, "/nowhere", http.StatusNotFound, ""},
		{http.MethodGet, "/v1/nowhere", http.StatusNotFound, ""},
		{http.MethodGet, "/v1/runs/run-9", http.StatusNotFound, ""},
		{http.MethodGet, "/v1/runs/run-9/logs", http.StatusNotFound, ""},
		{http.MethodDelete, "/v1/runs", http.StatusMethodNotAllowed, "GET, POST"},
		{http.MethodPut, "/v1/runs/run-1", http.StatusMethodNotAllowed, "GET"},
		{http.MethodGet, "/v1/runs/run-1/stop", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPost, "/healthz", http.StatusMethodNotAllowed, "GET"},
		{http.MethodDelete, "/readyz", http.StatusMethodNotAllowed, "GET"},
	} {
		status, hdr, body := do(t, srv, tc.method, tc.path, testToken, nil)
		if status != tc.wantStatus {
			t.Errorf("%s %s: got %d %s, want %d", tc.method, tc.path, status, body, tc.wantStatus)
			continue
		}
		errorMessage(t, body)
		if got := hdr.Get("Allow"); got != tc.wantAllow {
			t.Errorf("%s %s: Allow %q, want %q", tc.method, tc.path, got, tc.wantAllow)
		}
	}
}

func TestClientNonJSONError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream exploded", http.StatusBadGateway)
	}))
	defer srv.Close()
	_, err := (&Client{BaseURL: srv.URL, HTTP: srv.Client()}).List(t.Context())
	ae, ok := errors.AsType[*APIError](err)
	if !ok || ae.Status != http.StatusBadGateway || ae.Message != "upstream exploded" {
		t.Errorf("got %#v, want a 502 *APIError with the body as message", err)
	}
	if ae != nil && ae.Unwrap() != nil {
		t.Errorf("502 unwraps to %v, want nil", ae.Unwrap())
	}
}

func TestBaselineRoute(t *testing.T) {
	f := newFakeRunner()
	srv := httptest.NewServer(NewHandler(f, "", nil))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL}
	run, err := c.Start(t.Context(), StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetBaseline(t.Context(), run.ID); err != nil {
		t.Fatal(err)
	}
	got, _, err := c.Get(t.Context(), run.ID)
	if err != nil || !got.Baseline {
		t.Errorf("after SetBaseline: %+v, %v; want baseline true", got, err)
	}
	if err := c.SetBaseline(t.Context(), "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown id: got %v, want ErrNotFound", err)
	}
}

// invalidReportRunner is a Runner whose Get returns bytes that are not
// JSON, as a truncated report.json would be.
type invalidReportRunner struct{ *fakeRunner }

func (r invalidReportRunner) Get(_ context.Context, id string) (RunSummary, json.RawMessage, error) {
	return RunSummary{ID: id, Status: "unreadable", Reason: "cannot decode report.json"}, json.RawMessage(`{"run":"r","verd`), nil
}

// TestGetInvalidReportIsNull: report bytes that are not JSON are served as
// a null report next to the run, never as a 500.
func TestGetInvalidReportIsNull(t *testing.T) {
	srv := httptest.NewServer(NewHandler(invalidReportRunner{newFakeRunner()}, "", nil))
	t.Cleanup(srv.Close)
	status, _, body := do(t, srv, http.MethodGet, "/v1/runs/r", "", nil)
	if status != http.StatusOK || !bytes.Contains(body, []byte(`"report":null`)) || !bytes.Contains(body, []byte(`"status":"unreadable"`)) {
		t.Errorf("GET /v1/runs/r with a truncated report: %d %s, want 200, the run unreadable and \"report\":null", status, body)
	}
}

// TestReadOnlyHistory: GET /v1/history says whether the history is
// read-only and why, and a start the runner cannot record answers 503 with
// the reason, which the client matches as ErrUnavailable.
func TestReadOnlyHistory(t *testing.T) {
	srv, f := newServer(t, testToken, nil)
	c := newClient(srv, testToken)
	if h, err := c.History(t.Context()); err != nil || h.ReadOnly {
		t.Errorf("History of a writable daemon: %+v, %v", h, err)
	}
	want := HistoryState{DataDir: "/data", ReadOnly: true, Reason: "the history is read-only: cannot write in /data: no space left on device"}
	f.mu.Lock()
	f.history = want
	f.mu.Unlock()
	if h, err := c.History(t.Context()); err != nil || h != want {
		t.Errorf("History: %+v, %v, want %+v", h, err, want)
	}
	status, _, body := do(t, srv, http.MethodGet, "/v1/history", testToken, nil)
	if status != http.StatusOK || !bytes.Contains(body, []byte(`"read_only":true`)) {
		t.Errorf("GET /v1/history: %d %s", status, body)
	}
	if status, _, _ := do(t, srv, http.MethodGet, "/v1/history", "", nil); status != http.StatusUnauthorized {
		t.Errorf("GET /v1/history without the token: %d, want 401", status)
	}
	status, _, body = do(t, srv, http.MethodPost, "/v1/runs", testToken, strings.NewReader(`{"profile":"full"}`))
	if status != http.StatusServiceUnavailable || !strings.Contains(errorMessage(t, body).Message, "no space left on device") {
		t.Errorf("POST /v1/runs on a read-only history: %d %s, want 503 naming the reason", status, body)
	}
	if _, err := c.Start(t.Context(), StartRequest{Profile: "full"}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Client.Start on a read-only history: %v, want ErrUnavailable", err)
	}
}

// TestRepliesCapEchoedInput: no error reply quotes more than
// echo.MaxBytes of a run id, path or method, whichever route answers: 404
// for an unknown run (the runner's error names the id whole, as the
// daemon's does) or route, 409 for a run not running, 405 for a wrong
// method.
func TestRepliesCapEchoedInput(t *testing.T) {
	srv, _ := newServer(t, "", nil)
	long := strings.Repeat("a", 5000)
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/v1/runs/" + long, http.StatusNotFound},
		{"POST", "/v1/runs/" + long + "/stop", http.StatusNotFound},
		{"POST", "/v1/runs/" + long + "/baseline", http.StatusNotFound},
		{"PUT", "/v1/runs/" + long, http.StatusMethodNotAllowed},
		{"DELETE", "/v1/runs/" + long + "/stop", http.StatusMethodNotAllowed},
		{"GET", "/v1/" + long, http.StatusNotFound},
		{"GET", "/" + long, http.StatusNotFound},
		{strings.Repeat("X", 5000), "/v1/runs", http.StatusMethodNotAllowed},
		{"PUT", "/healthz/" + long, http.StatusNotFound},
	} {
		status, _, body := do(t, srv, c.method, c.path, "", nil)
		msg := errorMessage(t, body).Message
		if status != c.status || len(msg) > 2*echo.MaxBytes+100 || strings.Contains(msg, strings.Repeat("a", echo.MaxBytes+1)) || strings.Contains(msg, strings.Repeat("X", echo.MaxBytes+1)) {
			t.Errorf("%.10s %.20s…: got %d with a %d-byte message %.200q, want %d quoting at most %d bytes of the input", c.method, c.path, status, len(msg), msg, c.status, echo.MaxBytes)
		}
	}
}

// TestMetricsRoute: /metrics serves Options.Metrics behind the token, like
// /v1; without Options.Metrics it is a 404.
func TestMetricsRoute(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "soakd_build_info 1\n")
	})
	srv := httptest.NewServer(NewHandlerWith(newFakeRunner(), Options{Token: testToken, Metrics: metrics}))
	defer srv.Close()
	if code, hdr, _ := do(t, srv, http.MethodGet, "/metrics", "", nil); code != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") == "" {
		t.Errorf("GET /metrics without the token: %d, want 401 with WWW-Authenticate", code)
	}
	if code, _, _ := do(t, srv, http.MethodGet, "/metrics", "wrong", nil); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics with a wrong token: %d, want 401", code)
	}
	if code, _, body := do(t, srv, http.MethodGet, "/metrics", testToken, nil); code != http.StatusOK || string(body) != "soakd_build_info 1\n" {
		t.Errorf("GET /metrics with the token: %d %q, want 200 and the series", code, body)
	}
	if code, hdr, _ := do(t, srv, http.MethodPost, "/metrics", testToken, nil); code != http.StatusMethodNotAllowed || hdr.Get("Allow") != "GET" {
		t.Errorf("POST /metrics: %d, want 405 Allow: GET", code)
	}
	plain, _ := newServer(t, "", nil)
	if code, _, _ := do(t, plain, http.MethodGet, "/metrics", "", nil); code != http.StatusNotFound {
		t.Errorf("GET /metrics without Options.Metrics: %d, want 404", code)
	}
}

// TestChangesRoute: GET /v1/history/changes passes the query to the
// runner, answers its series and changes, and 400 for its invalid request.
func TestChangesRoute(t *testing.T) {
	srv, _ := newServer(t, "", nil)
	cl := newClient(srv, "")
	c, err := cl.Changes(t.Context(), "p", "gc_percent.delta")
	if err != nil {
		t.Fatal(err)
	}
	if c.Profile != "p" || c.Metric != "gc_percent.delta" || len(c.Runs) != 2 || c.Runs[1].Value != nil || len(c.Changes) != 1 || c.Changes[0].Run != "b" {
		t.Errorf("changes %+v", c)
	}
	code, _, body := do(t, srv, http.MethodGet, "/v1/history/changes?profile=p", "", nil)
	if code != http.StatusOK || !strings.Contains(string(body), `"runs":[{"id":"a"`) || !strings.Contains(string(body), `"value":null`) || !strings.Contains(string(body), `"run":"b","index":0`) {
		t.Errorf("GET /v1/history/changes: %d %s", code, body)
	}
	if _, err := cl.Changes(t.Context(), "nope", ""); err == nil || !strings.Contains(err.Error(), `profile "nope"`) {
		t.Errorf("unknown profile: %v, want a 400 naming it", err)
	} else if ae, ok := errors.AsType[*APIError](err); !ok || ae.Status != http.StatusBadRequest {
		t.Errorf("unknown profile: %v, want 400", err)
	}
	if code, _, _ := do(t, srv, http.MethodPost, "/v1/history/changes", "", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST /v1/history/changes: %d, want 405", code)
	}
}
