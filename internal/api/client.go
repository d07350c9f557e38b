package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/soakd/soakd/internal/jsonhttp"
)

// MaxResponseBytes is the largest response body Client reads, in bytes
// (64 MiB): far above any report.json, yet a bound on what a wrong or
// hostile server can make the CLI buffer.
const MaxResponseBytes = 64 << 20

// Client talks to the control API; the `soakd runs`, `soakd status` and
// `soakd stop` subcommands use it. Its zero HTTP field is usable.
type Client struct {
	// BaseURL is the API's root, such as "http://127.0.0.1:9000"; a
	// trailing slash is ignored.
	BaseURL string
	// Token is sent as "Authorization: Bearer <token>" when non-empty.
	Token string
	// HTTP performs the requests; nil means http.DefaultClient. Set its
	// Timeout (or pass a ctx with a deadline) to bound each call.
	HTTP *http.Client
}

// APIError is a non-2xx response from the control API, carrying the
// server's status and message. Through Unwrap it also matches the Runner
// errors the status stands for: errors.Is(err, ErrNotFound) for a 404,
// errors.Is(err, ErrNotRunning) for a 409 without a running id,
// errors.AsType[*BusyError] for a 409 with one, errors.Is(err,
// ErrInvalidRequest) for a 400 and errors.Is(err, ErrUnavailable) for a
// 503.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Message is the server's error message (or, for a response that is
	// not the API's JSON error, the start of its body or the status text).
	Message string
	// RunningID is the run in progress, set on a 409 from a start request.
	RunningID string
}

// Error gives the status and the server's message.
func (e *APIError) Error() string {
	return fmt.Sprintf("control api: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Unwrap returns the Runner error the response stands for, or nil.
func (e *APIError) Unwrap() error {
	switch {
	case e.Status == http.StatusNotFound:
		return ErrNotFound
	case e.Status == http.StatusConflict && e.RunningID != "":
		return &BusyError{RunningID: e.RunningID}
	case e.Status == http.StatusConflict:
		return ErrNotRunning
	case e.Status == http.StatusBadRequest:
		return ErrInvalidRequest
	case e.Status == http.StatusServiceUnavailable:
		return ErrUnavailable
	}
	return nil
}

// Start asks the daemon to start a run and returns its summary; a run in
// progress gives an *APIError matching *BusyError.
func (c *Client) Start(ctx context.Context, req StartRequest) (RunSummary, error) {
	var sum RunSummary
	if err := c.do(ctx, http.MethodPost, "/v1/runs", req, &sum); err != nil {
		return RunSummary{}, fmt.Errorf("cannot start a run: %w", err)
	}
	return sum, nil
}

// List returns every run the daemon knows, newest first.
func (c *Client) List(ctx context.Context) ([]RunSummary, error) {
	var resp listResponse
	if err := c.do(ctx, http.MethodGet, "/v1/runs", nil, &resp); err != nil {
		return nil, fmt.Errorf("cannot list runs: %w", err)
	}
	return resp.Runs, nil
}

// Get returns one run's summary and its report.json bytes, nil when the run
// has not written a report yet.
func (c *Client) Get(ctx context.Context, id string) (RunSummary, json.RawMessage, error) {
	var resp getResponse
	if err := c.do(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id), nil, &resp); err != nil {
		return RunSummary{}, nil, fmt.Errorf("cannot get run %q: %w", id, err)
	}
	rep := resp.Report
	if len(rep) == 0 || string(rep) == "null" {
		rep = nil
	}
	return resp.Run, rep, nil
}

// History says whether the daemon's run history is read-only, and why.
func (c *Client) History(ctx context.Context) (HistoryState, error) {
	var h HistoryState
	if err := c.do(ctx, http.MethodGet, "/v1/history", nil, &h); err != nil {
		return HistoryState{}, fmt.Errorf("cannot get the history's state: %w", err)
	}
	return h, nil
}

// Schedules returns the daemon's schedules, in its configuration's order,
// with their next slots and latest outcomes. A daemon older than the
// endpoint answers 404: an *APIError matching ErrNotFound.
func (c *Client) Schedules(ctx context.Context) ([]Schedule, error) {
	var resp schedulesResponse
	if err := c.do(ctx, http.MethodGet, "/v1/schedules", nil, &resp); err != nil {
		return nil, fmt.Errorf("cannot list the schedules: %w", err)
	}
	return resp.Schedules, nil
}

// Stop asks the daemon to stop run id gracefully; it returns once the stop
// is requested, not when the run has stopped.
func (c *Client) Stop(ctx context.Context, id string) error {
	if err := c.do(ctx, http.MethodPost, "/v1/runs/"+url.PathEscape(id)+"/stop", nil, nil); err != nil {
		return fmt.Errorf("cannot stop run %q: %w", id, err)
	}
	return nil
}

// SetBaseline marks run id as the baseline for `soakd compare`.
func (c *Client) SetBaseline(ctx context.Context, id string) error {
	if err := c.do(ctx, http.MethodPost, "/v1/runs/"+url.PathEscape(id)+"/baseline", nil, nil); err != nil {
		return fmt.Errorf("cannot mark run %q as the baseline: %w", id, err)
	}
	return nil
}

// do sends one request and decodes a 2xx JSON body into out (unless nil);
// any other status becomes an *APIError.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	jc := jsonhttp.Client{BaseURL: c.BaseURL, Token: c.Token, HTTP: c.HTTP, MaxResponseBytes: MaxResponseBytes}
	err := jc.Do(ctx, method, path, in, out)
	if se, ok := errors.AsType[*jsonhttp.StatusError](err); ok {
		return responseError(se.Status, se.Body)
	}
	return err
}

// responseError builds the *APIError for a failed response, falling back
// to the body's start (or the status text) when it is not the API's JSON.
func responseError(status int, data []byte) error {
	var eb errorBody
	if err := json.Unmarshal(data, &eb); err == nil && eb.Error.Message != "" {
		return &APIError{Status: status, Message: eb.Error.Message, RunningID: eb.Error.RunningID}
	}
	msg := strings.TrimSpace(string(data))
	const maxSnippet = 200
	if len(msg) > maxSnippet {
		msg = strings.ToValidUTF8(msg[:maxSnippet], "") + "..."
	}
	if msg == "" {
		msg = strings.ToLower(http.StatusText(status))
	}
	return &APIError{Status: status, Message: msg}
}

// Compile-time check that APIError is an error.
var _ error = (*APIError)(nil)

// Changes returns profile's series of metric over the daemon's runs and its
// change points; "" means the daemon's default profile and
// DefaultChangesMetric.
func (c *Client) Changes(ctx context.Context, profile, metric string) (HistoryChanges, error) {
	q := url.Values{}
	if profile != "" {
		q.Set("profile", profile)
	}
	if metric != "" {
		q.Set("metric", metric)
	}
	path := "/v1/history/changes"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var h HistoryChanges
	if err := c.do(ctx, http.MethodGet, path, nil, &h); err != nil {
		return HistoryChanges{}, fmt.Errorf("cannot get the history's change points: %w", err)
	}
	return h, nil
}
