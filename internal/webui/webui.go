// Package webui is the daemon's web page: a small, self-contained
// single-page application served by `soakd serve` at GET / of the control
// API's listener, its script and style under /ui/. It lists the runs
// (filterable by profile and verdict), shows a run's verdict, its files
// and its report.html, follows a run in progress through the API's event
// stream (with a stop button that goes through POST /v1/runs/{id}/stop),
// and draws each profile's figures across runs with their change points.
//
// The page holds no data: everything it shows it asks of the /v1 API with
// the reader's bearer token (asked for when the API answers 401, kept in
// the tab's sessionStorage), so the token rule is the API's. Nothing is
// loaded from elsewhere: the assets are embedded and the Content Security
// Policy allows this origin only.
package webui

import (
	"embed"
	"net/http"
	"path"
)

//go:embed assets
var assets embed.FS

// csp is the pages' Content Security Policy: scripts, styles and API calls
// from this origin only, report.html framed from this origin (served
// sandboxed, with a file ticket: api.TicketTTL), no
// other frame, form target or base URL.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the page: GET / is index.html, GET /ui/{file} its
// assets; any other path under /ui/ is 404.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := "index.html"
		if r.URL.Path != "/" {
			name = path.Base(r.URL.Path)
			if r.URL.Path != "/ui/"+name {
				http.NotFound(w, r)
				return
			}
		}
		b, err := assets.ReadFile("assets/" + name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		hdr := w.Header()
		switch path.Ext(name) {
		case ".html":
			hdr.Set("Content-Type", "text/html; charset=utf-8")
		case ".js":
			hdr.Set("Content-Type", "text/javascript; charset=utf-8")
		case ".css":
			hdr.Set("Content-Type", "text/css; charset=utf-8")
		}
		hdr.Set("Content-Security-Policy", csp)
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("Referrer-Policy", "no-referrer")
		hdr.Set("Cache-Control", "no-cache")
		_, _ = w.Write(b)
	})
}
