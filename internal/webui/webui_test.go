package webui

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestHandler: the page and its two assets are served with their types
// and the policy that keeps everything on this origin; any other path is
// a 404, and the page loads nothing from elsewhere.
func TestHandler(t *testing.T) {
	h := Handler()
	for path, ct := range map[string]string{"/": "text/html", "/ui/app.js": "text/javascript", "/ui/app.css": "text/css", "/ui/index.html": "text/html"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), ct) {
			t.Errorf("GET %s: %d %s", path, rec.Code, rec.Header().Get("Content-Type"))
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: policy %q", path, csp)
		}
		body := rec.Body.String()
		// Nothing from another origin: no URL with a scheme and host in
		// an attribute, a fetch or a CSS url().
		if m := regexp.MustCompile(`(?i)(src|href)=["']?(https?:)?//|url\(\s*["']?(https?:)?//|fetch\(\s*["'](https?:)?//`).FindString(body); m != "" {
			t.Errorf("GET %s loads from elsewhere: %s", path, m)
		}
	}
	for _, path := range []string{"/ui/", "/ui/nope.js", "/ui/assets/app.js", "/ui/../webui.go", "/other"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, rec.Code)
		}
	}
}

// TestScriptWritesNoMarkup: what a run or a report says reaches the page
// as text only: the script never assigns HTML.
func TestScriptWritesNoMarkup(t *testing.T) {
	b, err := assets.ReadFile("assets/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
		if strings.Contains(string(b), bad) {
			t.Errorf("app.js uses %s", bad)
		}
	}
}
