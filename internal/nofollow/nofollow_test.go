package nofollow_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/extsample"
	"github.com/soakd/soakd/internal/gqlws"
)

// redirector answers every request with a 302 to elsewhere; elsewhere
// counts the requests that reach it and the X-Api-Key they carry.
func redirector(t *testing.T) (from string, reached *atomic.Int64, keys *atomic.Int64) {
	t.Helper()
	reached, keys = new(atomic.Int64), new(atomic.Int64)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		if r.Header.Get("X-Api-Key") != "" {
			keys.Add(1)
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("go_goroutines 1\n"))
	}))
	t.Cleanup(elsewhere.Close)
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(src.Close)
	return src.URL, reached, keys
}

// TestNoClientFollowsARedirect: the metrics scrape and the websocket dial
// (with a headers_env secret) refuse a 302 to another host; before, both
// followed it, and the secret arrived there.
func TestNoClientFollowsARedirect(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	from, reached, _ := redirector(t)
	if _, _, err := extsample.Scrape(ctx, nil, from+"/metrics", 2*time.Second, 1<<20); err == nil || !strings.Contains(err.Error(), "follows no redirect") {
		t.Errorf("scrape through a redirect: %v, want it refused", err)
	}
	if reached.Load() != 0 {
		t.Errorf("the scrape reached the redirect's host %d times", reached.Load())
	}

	from, reached, keys := redirector(t)
	ws := "ws" + strings.TrimPrefix(from, "http") + "/graphql"
	_, err := gqlws.DialWith(ctx, ws, gqlws.TransportWS, gqlws.DialOptions{Header: http.Header{"X-Api-Key": {"s3cret"}}})
	if err == nil || !strings.Contains(err.Error(), "follows no redirect") {
		t.Errorf("websocket dial through a redirect: %v, want it refused", err)
	}
	if reached.Load() != 0 || keys.Load() != 0 {
		t.Errorf("the dial reached the redirect's host %d times (%d with the secret)", reached.Load(), keys.Load())
	}
}
