package api

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/soakd/soakd/internal/echo"
)

// TicketTTL is how long a file ticket opens its file: long enough for a
// page to load the frame it was asked for, short enough that a URL seen
// in a log or a history is soon worth nothing.
const TicketTTL = 5 * time.Minute

// maxTickets bounds the tickets held at once; the oldest go first.
const maxTickets = 256

// tickets are the file tickets handed out: a URL that opens one run file
// with GET, without the Authorization header, until it expires. The web
// page needs them where a browser sends no header of its own: a frame
// showing report.html, a download link. A ticket is asked for with the
// token (POST …/ticket), names one path, and is 32 random bytes.
type tickets struct {
	mu sync.Mutex
	// byValue maps a ticket to the path it opens and when it expires;
	// order is the tickets in the order they were made.
	byValue map[string]ticket
	order   []string
}

type ticket struct {
	path    string
	expires time.Time
}

// issue returns a new ticket for path.
func (ts *tickets) issue(path string, now time.Time) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	v := base64.RawURLEncoding.EncodeToString(b)
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.byValue == nil {
		ts.byValue = map[string]ticket{}
	}
	ts.sweep(now)
	for len(ts.order) >= maxTickets {
		delete(ts.byValue, ts.order[0])
		ts.order = ts.order[1:]
	}
	ts.byValue[v] = ticket{path: path, expires: now.Add(TicketTTL)}
	ts.order = append(ts.order, v)
	return v
}

// valid reports whether v is an unexpired ticket for path.
func (ts *tickets) valid(v, path string, now time.Time) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.byValue[v]
	return ok && t.path == path && now.Before(t.expires)
}

// sweep drops the expired tickets; the caller holds mu.
func (ts *tickets) sweep(now time.Time) {
	keep := ts.order[:0]
	for _, v := range ts.order {
		if now.Before(ts.byValue[v].expires) {
			keep = append(keep, v)
		} else {
			delete(ts.byValue, v)
		}
	}
	ts.order = keep
}

// ticketResponse is POST /v1/runs/{id}/files/{name}/ticket's body.
type ticketResponse struct {
	// URL opens the file with GET, without the token, until Expires.
	URL     string    `json:"url"`
	Expires time.Time `json:"expires"`
}

// ticket hands out a ticket for one run file that exists.
func (h *handler) ticket(w http.ResponseWriter, r *http.Request) error {
	id, name := r.PathValue("id"), r.PathValue("name")
	if !ValidRunFileName(name) {
		return fail(http.StatusNotFound, "run %s has no file of that name: a run file is one name of letters, digits, '.', '_', '-' and '#'", echo.Input(id))
	}
	f, err := h.runner.OpenRunFile(r.Context(), id, name)
	if err != nil {
		return runnerError(err, id)
	}
	f.Close()
	path := "/v1/runs/" + url.PathEscape(id) + "/files/" + url.PathEscape(name)
	now := time.Now()
	v := h.tickets.issue(path, now)
	h.write(w, http.StatusOK, ticketResponse{URL: path + "?ticket=" + v, Expires: now.Add(TicketTTL).UTC()})
	return nil
}

// ticketed reports whether r is a GET that a file ticket opens.
func (h *handler) ticketed(r *http.Request) bool {
	v := r.URL.Query().Get("ticket")
	return v != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && h.tickets.valid(v, r.URL.EscapedPath(), time.Now())
}
