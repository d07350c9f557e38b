// Package api is soakd's control API: a small REST/JSON interface, served on
// its own listener, through which an operator (or the `soakd runs`, `soakd
// status` and `soakd stop` subcommands, via Client) starts, lists, inspects
// and stops runs of a long-lived `soakd serve` daemon.
//
// It is not the REST "control group" that GraphQL is measured against (that
// is package control); it is the daemon's remote control. The package only
// translates HTTP to a Runner, which the daemon implements; it holds no run
// state of its own.
//
// Routes (all bodies JSON):
//
//	POST /v1/runs             {"profile":..,"overrides":..} -> 202 RunSummary (Location: /v1/runs/{id})
//	GET  /v1/runs             -> 200 {"runs":[RunSummary, ...]}
//	GET  /v1/runs/{id}        -> 200 {"run":RunSummary,"report":<report.json, or null when none or not JSON>}
//	GET  /v1/runs/{id}/events -> 200 text/event-stream: "progress" events (LiveState) every
//	                             EventInterval while the run runs, then one "end" (RunSummary)
//	GET  /v1/runs/{id}/files  -> 200 {"files":[RunFile, ...]}
//	GET  /v1/runs/{id}/files/{name}
//	                          -> 200 the file (report.html sandboxed by its CSP), Range honoured
//	POST /v1/runs/{id}/files/{name}/ticket
//	                          -> 200 {"url":..,"expires":..}: the file's URL with a ticket that opens it
//	                             with GET, without the token, for TicketTTL (a page's frame, a link)
//	POST /v1/runs/{id}/stop   -> 202 {"id":..,"status":"stopping"}
//	GET  /v1/soak             -> 200 soak.json: the soak in progress or the last one (404 when none)
//	GET  /v1/history          -> 200 HistoryState: is the run history read-only, and why
//	GET  /v1/history/changes?profile=P&metric=M
//	                          -> 200 HistoryChanges: a figure's series over the runs and its change points
//	GET  /v1/schedules        -> 200 {"schedules":[Schedule, ...]}: the configured schedules, their next
//	                             slot and recent slots (started, missed, skipped)
//	GET  /metrics             -> 200 the daemon's own series, Prometheus text format (only
//	                             with Options.Metrics; same token rule as /v1)
//	GET  /, /ui/...           -> the web page and its assets (only with Options.UI; no auth:
//	                             the page holds no data and sends its reader's token)
//	GET  /healthz             -> 200 {"status":"ok"} while the process serves (no auth)
//	GET  /readyz              -> 200 {"status":"ready"}, or 503 when Runner.Ready is false (no auth)
//
// Errors are {"error":{"message":"...","running_id":"..."}} with status 400
// (malformed or oversized body, unknown field, Runner error wrapping
// ErrInvalidRequest or ErrBadQuery), 401 (missing or wrong bearer token, when a token is
// configured), 404 (unknown run or route), 405 (wrong method, with Allow),
// 409 (a run is already in progress: running_id names it; or stopping a run
// that is not running), 503 (Runner error wrapping ErrUnavailable: the
// history is read-only, so no run can start) or 500 (any other Runner
// error).
//
// Security: when a token is configured every /v1 route and /metrics need
// the header "Authorization: Bearer <token>" (/metrics names the profiles
// run and how often runs fail: what a token keeps from a stranger; a
// Prometheus scrape job sends it with authorization.credentials_file). Tokens are compared in constant time over
// their SHA-256 digests (so neither content nor length leaks through timing),
// the handler keeps only the digest, and neither tokens nor request headers
// are ever logged. A file ticket (POST …/files/{name}/ticket, with the
// token) opens that one file with GET for TicketTTL without the header, for
// the web page's frame and links; it is 32 random bytes, held in memory
// only. CheckBind refuses to expose the API beyond loopback
// without a token.
package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/soakd/soakd/internal/echo"
	"github.com/soakd/soakd/internal/kpi"
)

// MaxBodyBytes is the largest accepted request body, in bytes (64 KiB): a
// start request is a profile name and a few lines of YAML overrides, so
// anything larger is a mistake or an attack and gets HTTP 400.
const MaxBodyBytes = 64 << 10

// Runner is what the daemon implements; the API only translates HTTP to it.
// Every method must be safe for concurrent use: the HTTP server calls them
// from one goroutine per request. The ctx passed in is the HTTP request's:
// it bounds the call, never the run (a run started by Start must outlive the
// request that started it).
type Runner interface {
	// Start begins a run of req.Profile (the daemon's default profile when
	// empty) with req.Overrides applied, and returns its summary without
	// waiting for it to finish. It returns a *BusyError naming the running
	// run when one is in progress, and an error wrapping ErrInvalidRequest
	// for an unknown profile or bad or refused overrides.
	Start(ctx context.Context, req StartRequest) (RunSummary, error)
	// Stop asks the run id to stop gracefully and returns without waiting
	// for it. It returns an error wrapping ErrNotFound for an unknown id and
	// ErrNotRunning for a run that has already finished.
	Stop(ctx context.Context, id string) error
	// List returns every known run, newest first.
	List(ctx context.Context) ([]RunSummary, error)
	// Get returns one run's summary and its report.json bytes (nil when the
	// run has not written one yet), or an error wrapping ErrNotFound.
	Get(ctx context.Context, id string) (RunSummary, json.RawMessage, error)
	// SetBaseline marks run id as the baseline `soakd compare` compares
	// releases against; retention never deletes it. An error wraps
	// ErrNotFound for an unknown id.
	SetBaseline(ctx context.Context, id string) error
	// Ready reports whether the target is up and the daemon accepts runs;
	// it backs /readyz and must be cheap and non-blocking.
	Ready() bool
	// History says whether the run history takes writes; it backs
	// /v1/history and must be cheap and non-blocking.
	History(ctx context.Context) HistoryState
	// Live returns run id's progress; ok is false when the run is not in
	// progress (finished, or not yet begun). An unknown id is an error
	// wrapping ErrNotFound. It backs GET /v1/runs/{id}/events and must be
	// cheap: it is asked every DefaultEventInterval per open stream.
	Live(ctx context.Context, id string) (st LiveState, ok bool, err error)
	// RunFiles lists the regular files of run id's directory whose names
	// pass ValidRunFileName, sorted by name; an unknown id wraps
	// ErrNotFound.
	RunFiles(ctx context.Context, id string) ([]RunFile, error)
	// OpenRunFile opens one of them for reading. A name that is not a
	// run file (ValidRunFileName, a symbolic link, a directory, a file
	// outside the run's directory) or does not exist wraps ErrNoFile.
	OpenRunFile(ctx context.Context, id, name string) (*os.File, error)
	// Soak returns the data directory's soak record (soak.json: the
	// soak in progress or the last one, its cycles and drift rules) as
	// written, or an error wrapping ErrNotFound when there is none.
	Soak(ctx context.Context) (json.RawMessage, error)
	// Changes returns profile's series of metric over the complete runs
	// and its change points; "" means the default profile and
	// DefaultChangesMetric. An unknown profile or metric is an error
	// wrapping ErrBadQuery.
	Changes(ctx context.Context, profile, metric string) (HistoryChanges, error)
	// Schedules returns every configured schedule, in the configuration's
	// order, with its next slot and its latest slots' outcomes; it backs
	// GET /v1/schedules and answers from memory.
	Schedules(ctx context.Context) ([]Schedule, error)
}

// HistoryState is GET /v1/history's body: whether the daemon can record
// runs in its data directory.
type HistoryState struct {
	// DataDir is the daemon's data directory.
	DataDir string `json:"data_dir"`
	// ReadOnly is true when the data directory took no writes when the
	// daemon started (a full disk, a read-only file system): runs are
	// listed and served, none can start, until it takes writes and the
	// daemon is restarted.
	ReadOnly bool `json:"read_only"`
	// Reason says why the history is read-only.
	Reason string `json:"reason,omitempty"`
	// Soak is true when the data directory holds a soak's soak.json, which
	// GET /v1/soak answers (404 otherwise): a page asks for it only then.
	Soak bool `json:"soak"`
}

// StartRequest is the body of POST /v1/runs. An empty body is the zero
// request: the default profile with no overrides.
type StartRequest struct {
	// Profile names the profile to run; empty means the daemon's
	// default_profile.
	Profile string `json:"profile"`
	// Overrides is YAML decoded on top of the daemon's configuration for
	// this run only (strictly, as a config file is); empty means none. Keys
	// the running daemon cannot honour for one run (its target's server,
	// sampler, pinning, …) are refused with 400, each named.
	Overrides string `json:"overrides"`
}

// RunSummary is one run as the API reports it. Its fields, in order, and
// their JSON names are those of the daemon's history summary, so a
// history.Summary converts to it with a plain type conversion.
type RunSummary struct {
	// ID is the run id, also its directory name under the data directory.
	ID string `json:"id"`
	// Profile is the profile the run executes (the daemon's default
	// profile when the start request named none).
	Profile string `json:"profile"`
	// Status is running, complete, aborted, or unreadable (report.json
	// missing, truncated or not a report; Reason says why).
	Status string `json:"status"`
	// Verdict is pass, fail or inconclusive once complete, running while in
	// progress, aborted when the run could not finish; empty when
	// unreadable.
	Verdict kpi.Outcome `json:"verdict"`
	// StartedAt is when the run began.
	StartedAt time.Time `json:"started_at"`
	// FinishedAt is when the run ended; zero (and omitted) while running.
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Baseline is true for the run marked as `soakd compare`'s baseline.
	Baseline bool `json:"baseline"`
	// Dir is the run's directory on the daemon's host.
	Dir string `json:"dir"`
	// Reasons name every gated KPI and check that did not pass, with its
	// numbers: why the verdict is fail or inconclusive.
	Reasons []string `json:"reasons,omitempty"`
	// Reason says why an aborted run stopped, or why an unreadable run's
	// report.json cannot be read.
	Reason string `json:"reason,omitempty"`
}

// sentinel is the type of this package's sentinel errors. A string type
// lets them be constants, so no package variable exists that anyone could
// reassign; compare them with errors.Is.
type sentinel string

// Error returns the sentinel's text.
func (e sentinel) Error() string { return string(e) }

// Sentinel errors a Runner returns (wrapped with %w, ideally naming the run)
// and that errors from Client also match, through APIError.Unwrap.
const (
	// ErrNotFound means no run has the given id (HTTP 404).
	ErrNotFound sentinel = "run not found"
	// ErrNotRunning means the run exists but has already finished, so it
	// cannot be stopped (HTTP 409 without running_id).
	ErrNotRunning sentinel = "run is not running"
	// ErrInvalidRequest means a start request names an unknown profile or
	// carries overrides that do not decode or validate (HTTP 400).
	ErrInvalidRequest sentinel = "invalid start request"
	// ErrBadQuery means a query names what does not exist: an unknown
	// profile or metric for GET /v1/history/changes (HTTP 400).
	ErrBadQuery sentinel = "invalid query"
	// ErrUnavailable means the daemon cannot do what was asked right now:
	// its history is read-only, so no run can start nor baseline be set
	// (HTTP 503). The wrapped error says why.
	ErrUnavailable sentinel = "the daemon cannot record runs"
	// ErrNoFile means the run exists but has no file of that name that
	// the API serves (HTTP 404).
	ErrNoFile sentinel = "no such run file"
)

// BusyError is returned by Runner.Start when a run is already in progress:
// soakd runs one suite at a time, because two would measure each other.
// Return it as a pointer (&BusyError{...}); errors.AsType[*BusyError]
// finds it through wrapping. The API answers 409 with running_id set.
type BusyError struct {
	// RunningID is the id of the run in progress.
	RunningID string
}

// Error names the run in progress.
func (e *BusyError) Error() string {
	return fmt.Sprintf("a run is already in progress (id %s); stop it or wait for it to finish", e.RunningID)
}

// handler serves the control API.
type handler struct {
	runner Runner
	// tokenHash is the SHA-256 of the configured token; the token itself
	// is not kept. auth is false when no token is configured.
	tokenHash [sha256.Size]byte
	auth      bool
	log       *zap.Logger
	// eventInterval is the time between two events of a run's stream.
	eventInterval time.Duration
	// tickets open single run files without the header (ticket.go).
	tickets tickets
}

// NewHandler returns the control API's handler over r. A non-empty token
// makes every /v1 route require "Authorization: Bearer <token>"; /healthz and
// /readyz never need it, so probes work without a secret. log receives one
// line per error response (5xx at error level, 401 at warn, other 4xx at
// debug); nil means no logging.
func NewHandler(r Runner, token string, log *zap.Logger) http.Handler {
	return NewHandlerWith(r, Options{Token: token, Log: log})
}

// Options configure NewHandlerWith.
type Options struct {
	// Token, when not empty, is the bearer token every /v1 route and
	// /metrics require.
	Token string
	// Log receives one line per error response; nil means no logging.
	Log *zap.Logger
	// Metrics, when not nil, serves GET /metrics (the daemon's own series,
	// package daemonmetrics), behind the token like /v1; nil leaves
	// /metrics a 404.
	Metrics http.Handler
	// UI, when not nil, serves the web page (package webui) at GET / and
	// its assets under /ui/, without the token: the page holds no data of
	// its own and asks the token of its reader for every /v1 call it makes.
	UI http.Handler
	// EventInterval is how often GET /v1/runs/{id}/events sends the run's
	// state; 0 means DefaultEventInterval.
	EventInterval time.Duration
}

// NewHandlerWith is NewHandler with every option.
func NewHandlerWith(r Runner, o Options) http.Handler {
	token, log := o.Token, o.Log
	if log == nil {
		log = zap.NewNop()
	}
	h := &handler{runner: r, log: log, eventInterval: o.EventInterval}
	if h.eventInterval <= 0 {
		h.eventInterval = DefaultEventInterval
	}
	if token != "" {
		h.auth = true
		h.tokenHash = sha256.Sum256([]byte(token))
	}

	// Each route has a method pattern for its happy path and a method-less
	// pattern for the same path, which ServeMux prefers less; the latter
	// answers a JSON 405 rather than ServeMux's plain-text one.
	v1 := http.NewServeMux()
	v1.Handle("POST /v1/runs", h.serve(h.start))
	v1.Handle("GET /v1/runs", h.serve(h.list))
	v1.Handle("/v1/runs", h.serve(notAllowed("GET, POST")))
	v1.Handle("GET /v1/runs/{id}", h.serve(h.get))
	v1.Handle("/v1/runs/{id}", h.serve(notAllowed("GET")))
	v1.Handle("GET /v1/runs/{id}/events", h.serve(h.events))
	v1.Handle("/v1/runs/{id}/events", h.serve(notAllowed("GET")))
	v1.Handle("GET /v1/runs/{id}/files", h.serve(h.files))
	v1.Handle("/v1/runs/{id}/files", h.serve(notAllowed("GET")))
	v1.Handle("GET /v1/runs/{id}/files/{name}", h.serve(h.file))
	v1.Handle("/v1/runs/{id}/files/{name}", h.serve(notAllowed("GET")))
	v1.Handle("POST /v1/runs/{id}/files/{name}/ticket", h.serve(h.ticket))
	v1.Handle("/v1/runs/{id}/files/{name}/ticket", h.serve(notAllowed("POST")))
	v1.Handle("POST /v1/runs/{id}/stop", h.serve(h.stop))
	v1.Handle("/v1/runs/{id}/stop", h.serve(notAllowed("POST")))
	v1.Handle("POST /v1/runs/{id}/baseline", h.serve(h.baseline))
	v1.Handle("/v1/runs/{id}/baseline", h.serve(notAllowed("POST")))
	v1.Handle("GET /v1/soak", h.serve(h.soak))
	v1.Handle("/v1/soak", h.serve(notAllowed("GET")))
	v1.Handle("GET /v1/history", h.serve(h.history))
	v1.Handle("/v1/history", h.serve(notAllowed("GET")))
	v1.Handle("GET /v1/history/changes", h.serve(h.changes))
	v1.Handle("/v1/history/changes", h.serve(notAllowed("GET")))
	v1.Handle("GET /v1/schedules", h.serve(h.schedules))
	v1.Handle("/v1/schedules", h.serve(notAllowed("GET")))
	v1.Handle("/", h.serve(notFound))

	mux := http.NewServeMux()
	mux.Handle("/v1/", h.serve(h.authenticate(v1)))
	mux.Handle("GET /healthz", h.serve(h.healthz))
	mux.Handle("/healthz", h.serve(notAllowed("GET")))
	mux.Handle("GET /readyz", h.serve(h.readyz))
	mux.Handle("/readyz", h.serve(notAllowed("GET")))
	if o.Metrics != nil {
		mux.Handle("GET /metrics", h.serve(h.authenticate(o.Metrics)))
		mux.Handle("/metrics", h.serve(notAllowed("GET")))
	}
	if o.UI != nil {
		mux.Handle("GET /{$}", o.UI)
		mux.Handle("GET /ui/", o.UI)
	}
	mux.Handle("/", h.serve(notFound))
	return mux
}

// handlerFunc is an HTTP handler that returns its failure for the one error
// renderer, h.serve, to write and log.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// httpError is a failure with its status and the message the client sees.
type httpError struct {
	status    int
	message   string
	runningID string
	// header holds extra response headers (Allow, WWW-Authenticate).
	header map[string]string
	// cause is the underlying error, logged but not sent, for 500s.
	cause error
}

func (e *httpError) Error() string { return e.message }

func fail(status int, format string, args ...any) *httpError {
	return &httpError{status: status, message: fmt.Sprintf(format, args...)}
}

// errorBody is the JSON shape of every error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

// errorDetail is an error response's content.
type errorDetail struct {
	Message   string `json:"message"`
	RunningID string `json:"running_id,omitempty"`
}

// serve adapts f to http.Handler: it is the single place that renders an
// error as JSON and logs it, once.
func (h *handler) serve(f handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := f(w, r)
		if err == nil {
			return
		}
		he, ok := errors.AsType[*httpError](err)
		if !ok {
			he = &httpError{status: http.StatusInternalServerError, message: err.Error(), cause: err}
		}
		// Only the method, path and client address are logged: never
		// headers (Authorization) nor the query string.
		fields := []zap.Field{
			zap.String("method", r.Method),
			zap.String("path", r.URL.Path),
			zap.String("remote", r.RemoteAddr),
			zap.Int("status", he.status),
			zap.String("message", he.message),
		}
		if he.runningID != "" {
			fields = append(fields, zap.String("running_id", he.runningID))
		}
		if he.cause != nil {
			fields = append(fields, zap.Error(he.cause))
		}
		level := zapcore.DebugLevel
		switch {
		case he.status >= 500 && he.status != http.StatusServiceUnavailable:
			level = zapcore.ErrorLevel
		case he.status == http.StatusUnauthorized:
			level = zapcore.WarnLevel
		}
		h.log.Log(level, "control api request failed", fields...)
		for k, v := range he.header {
			w.Header().Set(k, v)
		}
		h.write(w, he.status, errorBody{Error: errorDetail{Message: he.message, RunningID: he.runningID}})
	})
}

// write encodes v in one buffer, so the response has a Content-Length.
func (h *handler) write(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only a Runner's malformed report.json can get here.
		h.log.Error("cannot encode control api response", zap.Error(err))
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"internal error: cannot encode the response"}}`)
	}
	hdr := w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if _, err := w.Write(append(b, '\n')); err != nil {
		h.log.Debug("cannot write control api response", zap.Error(err))
	}
}

// authenticate requires the bearer token on next when one is configured.
func (h *handler) authenticate(next http.Handler) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if !h.auth || h.ticketed(r) {
			next.ServeHTTP(w, r)
			return nil
		}
		given, ok := bearer(r.Header.Get("Authorization"))
		if !ok {
			e := fail(http.StatusUnauthorized, "missing bearer token: send the header \"Authorization: Bearer <token>\"")
			e.header = map[string]string{"WWW-Authenticate": `Bearer realm="soakd"`}
			return e
		}
		// Hashing both sides first makes the comparison fixed-length, so
		// its timing reveals neither the token's bytes nor its length.
		givenHash := sha256.Sum256([]byte(given))
		if subtle.ConstantTimeCompare(givenHash[:], h.tokenHash[:]) != 1 {
			e := fail(http.StatusUnauthorized, "invalid bearer token")
			e.header = map[string]string{"WWW-Authenticate": `Bearer realm="soakd", error="invalid_token"`}
			return e
		}
		next.ServeHTTP(w, r)
		return nil
	}
}

// bearer extracts the token from an Authorization header value; the scheme
// is case-insensitive (RFC 9110 section 11.1).
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	return token, token != ""
}

func notAllowed(allow string) handlerFunc {
	return func(_ http.ResponseWriter, r *http.Request) error {
		e := fail(http.StatusMethodNotAllowed, "method %s not allowed on %s; use %s", echo.Input(r.Method), echo.Input(r.URL.Path), allow)
		e.header = map[string]string{"Allow": allow}
		return e
	}
}

func notFound(_ http.ResponseWriter, r *http.Request) error {
	return fail(http.StatusNotFound, "no route for %s", echo.Input(r.URL.Path))
}

// runnerError maps a Runner error to its response; id names the run for
// an unknown run or one not running, quoted through echo.Input (the
// runner's own wording may quote it whole).
func runnerError(err error, id string) error {
	if busy, ok := errors.AsType[*BusyError](err); ok {
		e := fail(http.StatusConflict, "%s", busy.Error())
		e.runningID = busy.RunningID
		return e
	}
	var status int
	var about sentinel // what the reply says of run id, instead of err's text
	switch {
	case errors.Is(err, ErrNoFile):
		status = http.StatusNotFound
	case errors.Is(err, ErrNotFound):
		status, about = http.StatusNotFound, ErrNotFound
	case errors.Is(err, ErrNotRunning):
		status, about = http.StatusConflict, ErrNotRunning
	case errors.Is(err, ErrInvalidRequest), errors.Is(err, ErrBadQuery):
		status = http.StatusBadRequest
	case errors.Is(err, ErrUnavailable):
		status = http.StatusServiceUnavailable
	default:
		return &httpError{status: http.StatusInternalServerError, message: err.Error(), cause: err}
	}
	msg := err.Error()
	switch {
	case about != "" && id != "":
		msg = fmt.Sprintf("run %q: %s", echo.Input(id), about)
	case id != "":
		msg = strings.ReplaceAll(msg, id, echo.Input(id))
	}
	return &httpError{status: status, message: msg}
}

func (h *handler) start(w http.ResponseWriter, r *http.Request) error {
	if r.ContentLength > MaxBodyBytes {
		return fail(http.StatusBadRequest, "request body too large: the limit is %d bytes", MaxBodyBytes)
	}
	req, err := decodeStartRequest(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		return fail(http.StatusBadRequest, "%s", err.Error())
	}
	sum, err := h.runner.Start(r.Context(), req)
	if err != nil {
		return runnerError(err, "")
	}
	w.Header().Set("Location", "/v1/runs/"+url.PathEscape(sum.ID))
	h.write(w, http.StatusAccepted, sum)
	return nil
}

// listResponse is GET /v1/runs's body: an object rather than a bare array,
// so that fields (paging, say) can be added without breaking clients.
type listResponse struct {
	Runs []RunSummary `json:"runs"`
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) error {
	runs, err := h.runner.List(r.Context())
	if err != nil {
		return runnerError(err, "")
	}
	if runs == nil {
		runs = []RunSummary{} // [] rather than null
	}
	h.write(w, http.StatusOK, listResponse{Runs: runs})
	return nil
}

// getResponse is GET /v1/runs/{id}'s body; Report is null until the run has
// written report.json, and when what it holds is not JSON.
type getResponse struct {
	Run    RunSummary      `json:"run"`
	Report json.RawMessage `json:"report"`
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	sum, rep, err := h.runner.Get(r.Context(), id)
	if err != nil {
		return runnerError(err, id)
	}
	if !json.Valid(rep) {
		// Encodes as null; an empty or truncated RawMessage would not
		// encode at all.
		rep = nil
	}
	h.write(w, http.StatusOK, getResponse{Run: sum, Report: rep})
	return nil
}

// stopResponse is POST /v1/runs/{id}/stop's body: the stop was requested;
// poll GET /v1/runs/{id} for the run's final status.
type stopResponse struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

func (h *handler) stop(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := h.runner.Stop(r.Context(), id); err != nil {
		return runnerError(err, id)
	}
	h.write(w, http.StatusAccepted, stopResponse{ID: id, Status: "stopping"})
	return nil
}

func (h *handler) baseline(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if err := h.runner.SetBaseline(r.Context(), id); err != nil {
		return runnerError(err, id)
	}
	h.write(w, http.StatusOK, stopResponse{ID: id, Status: "baseline"})
	return nil
}

func (h *handler) soak(w http.ResponseWriter, r *http.Request) error {
	b, err := h.runner.Soak(r.Context())
	if err != nil {
		return runnerError(err, "")
	}
	if !json.Valid(b) {
		return fail(http.StatusNotFound, "the data directory's soak.json is not JSON (being written, or damaged)")
	}
	h.write(w, http.StatusOK, b)
	return nil
}

func (h *handler) history(w http.ResponseWriter, r *http.Request) error {
	h.write(w, http.StatusOK, h.runner.History(r.Context()))
	return nil
}

func (h *handler) changes(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	c, err := h.runner.Changes(r.Context(), q.Get("profile"), q.Get("metric"))
	if err != nil {
		return runnerError(err, "")
	}
	if c.Runs == nil {
		c.Runs = []SeriesPoint{}
	}
	if c.Changes == nil {
		c.Changes = []ChangePoint{}
	}
	h.write(w, http.StatusOK, c)
	return nil
}

// statusResponse is the body of a successful probe.
type statusResponse struct {
	Status string `json:"status"`
}

func (h *handler) healthz(w http.ResponseWriter, _ *http.Request) error {
	h.write(w, http.StatusOK, statusResponse{Status: "ok"})
	return nil
}

func (h *handler) readyz(w http.ResponseWriter, _ *http.Request) error {
	if !h.runner.Ready() {
		return fail(http.StatusServiceUnavailable, "not ready: the target is not up or not accepting runs")
	}
	h.write(w, http.StatusOK, statusResponse{Status: "ready"})
	return nil
}
