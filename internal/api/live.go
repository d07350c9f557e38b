package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/echo"
)

// LiveState is one event of GET /v1/runs/{id}/events: where a running run
// is, what its running phases do and what the phases it finished did.
type LiveState struct {
	// Run is the run's id.
	Run string `json:"run"`
	// Phase is the 1-based position of the running phase among Phases (0
	// before the first starts); Round the compared round it belongs to of
	// Rounds (0 outside the rounds or in a run without them).
	Phase  int `json:"phase"`
	Phases int `json:"phases"`
	Round  int `json:"round"`
	Rounds int `json:"rounds"`
	// StartedAt is when the run started (zero, and omitted, before its
	// first phase).
	StartedAt time.Time `json:"started_at,omitzero"`
	// ElapsedSeconds is the time since the run started, in seconds.
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// LeftSeconds is the expected time until the run ends, in seconds;
	// null when a phase ahead has no expected length.
	LeftSeconds *float64 `json:"left_seconds"`
	// Running are the phases running now (two in a duet).
	Running []LivePhase `json:"running"`
	// Finished are the phases the run finished, in the order they ended.
	Finished []LiveDone `json:"finished"`
}

// LivePhase is a running phase.
type LivePhase struct {
	Name string `json:"name"`
	// Fraction is how far the phase is, 0 to 1.
	Fraction float64 `json:"fraction"`
	// ElapsedSeconds is the time since the phase started, in seconds.
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	Requests       int64   `json:"requests"`
	Errors         int64   `json:"errors"`
	// RPS is the completion rate over the driver's last interval, in
	// requests per second.
	RPS float64 `json:"rps"`
	// P99Ms is the 99th percentile latency of the last interval's
	// successful requests, in ms; null when none completed.
	P99Ms *float64 `json:"p99_ms"`
}

// LiveDone is a finished phase.
type LiveDone struct {
	Name     string `json:"name"`
	Requests int64  `json:"requests"`
	Errors   int64  `json:"errors"`
	// RPS is the phase's throughput in requests per second, P99Ms its
	// 99th percentile latency in ms, ElapsedSeconds its length.
	RPS            float64 `json:"rps"`
	P99Ms          float64 `json:"p99_ms"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// Interrupted is true when the phase did not run to its end.
	Interrupted bool `json:"interrupted"`
}

// RunFile is one file of a run's directory, as GET /v1/runs/{id}/files
// lists it.
type RunFile struct {
	Name string `json:"name"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
	// Modified is when it was last written.
	Modified time.Time `json:"modified"`
}

// ValidRunFileName reports whether name may name a run file: one path
// element of at most 200 ASCII letters, digits, '.', '_', '-' and '#' (a
// phase's round), not starting with a dot and holding no "..". Anything
// else (a path, a hidden file) is no run file. The API and every Runner
// apply it before a file is opened.
func ValidRunFileName(name string) bool {
	if name == "" || len(name) > 200 || name[0] == '.' || strings.Contains(name, "..") {
		return false
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '#'
		if !ok {
			return false
		}
	}
	return true
}

// DefaultEventInterval is how often GET /v1/runs/{id}/events sends the
// run's state: often enough that a dashboard's counters move, rarely
// enough that a stream costs nothing beside a run.
const DefaultEventInterval = time.Second

// files lists a run's files.
func (h *handler) files(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	fs, err := h.runner.RunFiles(r.Context(), id)
	if err != nil {
		return runnerError(err, id)
	}
	if fs == nil {
		fs = []RunFile{}
	}
	h.write(w, http.StatusOK, map[string]any{"files": fs})
	return nil
}

// contentType is the Content-Type of a file a run writes, by its
// extension; anything else is served as bytes.
func contentType(name string) string {
	switch path.Ext(name) {
	case ".html":
		return "text/html; charset=utf-8"
	case ".json":
		return "application/json"
	case ".md":
		return "text/markdown; charset=utf-8"
	case ".xml":
		return "application/xml"
	case ".log", ".txt":
		return "text/plain; charset=utf-8"
	}
	return "application/octet-stream"
}

// file serves one run file. A served page is sandboxed (CSP sandbox, no
// same origin): report.html's scripts draw its charts, but cannot reach
// the web UI's token or call the API as the UI.
func (h *handler) file(w http.ResponseWriter, r *http.Request) error {
	id, name := r.PathValue("id"), r.PathValue("name")
	if !ValidRunFileName(name) {
		return fail(http.StatusNotFound, "run %s has no file %q: a run file is one name of letters, digits, '.', '_', '-' and '#' (GET /v1/runs/%s/files lists them)", echo.Input(id), echo.Input(name), echo.Input(id))
	}
	f, err := h.runner.OpenRunFile(r.Context(), id, name)
	if err != nil {
		return runnerError(err, id)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fail(http.StatusNotFound, "run %s has no file %q", echo.Input(id), echo.Input(name))
	}
	hdr := w.Header()
	hdr.Set("Content-Type", contentType(name))
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("Content-Security-Policy", "sandbox allow-scripts; default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:")
	http.ServeContent(w, r, "", st.ModTime(), f)
	return nil
}

// events streams a run's state as server-sent events: "progress" with a
// LiveState every interval while it runs, then one "end" with its
// RunSummary once it has finished, and the stream ends. A comment line
// keeps idle proxies from closing it.
func (h *handler) events(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	ctx := r.Context()
	// The run must exist before the stream begins, so an unknown id is a
	// 404 rather than an empty stream.
	if _, _, err := h.runner.Get(ctx, id); err != nil {
		return runnerError(err, id)
	}
	rc := http.NewResponseController(w)
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	send := func(event string, v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			h.log.Error("cannot encode an event", zap.Error(err))
			return false
		}
		// Each write gets its own deadline: the server's WriteTimeout would
		// otherwise end a stream that outlives it.
		_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	tick := time.NewTicker(h.eventInterval)
	defer tick.Stop()
	for {
		st, ok, err := h.runner.Live(ctx, id)
		if err != nil && !errors.Is(err, context.Canceled) {
			h.log.Debug("event stream ended", zap.String("run", id), zap.Error(err))
			return nil
		}
		if !ok {
			s, _, err := h.runner.Get(ctx, id)
			if err == nil {
				send("end", s)
			}
			return nil
		}
		if st.Running == nil {
			st.Running = []LivePhase{}
		}
		if st.Finished == nil {
			st.Finished = []LiveDone{}
		}
		if !send("progress", st) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
