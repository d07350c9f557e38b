package extsample

import (
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serve starts a loopback server answering every request with h.
func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

func TestScrapeErrors(t *testing.T) {
	big := strings.Repeat("# padding comment line\n", 100) + "go_goroutines 3\n"
	for _, tc := range []struct {
		name    string
		h       http.HandlerFunc
		maxSize int64
		want    string
	}{
		{"over the cap", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			w.Write([]byte(big))
		}, 1024, "the body exceeds the 1024-byte cap"},
		{"html page", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte("<html><body>Welcome</body></html>\n"))
		}, 1 << 20, `Content-Type "text/html; charset=utf-8" is not Prometheus text exposition`},
		{"json", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"status":"ok"}`))
		}, 1 << 20, `Content-Type "application/json" is not Prometheus text exposition`},
		{"html served as text/plain", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("<html><body>Welcome</body></html>\n"))
		}, 1 << 20, "the body is not Prometheus text exposition"},
		{"json without a content type", func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			w.Write([]byte(`{"status":"ok"}` + "\n"))
		}, 1 << 20, "the body is not Prometheus text exposition"},
		{"empty", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		}, 1 << 20, "the body holds no metric family"},
		{"not found", func(w http.ResponseWriter, r *http.Request) {
			http.NotFound(w, r)
		}, 1 << 20, "HTTP status 404 Not Found, want 200 OK"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := serve(t, tc.h)
			_, _, err := Scrape(context.Background(), nil, url, 5*time.Second, tc.maxSize)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), url) {
				t.Errorf("Scrape: %v; want an error naming %s and containing %q", err, url, tc.want)
			}
		})
	}
}

func TestScrapeTimeout(t *testing.T) {
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("go_goroutines 1\n"))
		w.(http.Flusher).Flush()
		select { // a body that never ends
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	start := time.Now()
	_, _, err := Scrape(context.Background(), nil, url, 200*time.Millisecond, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "no complete response within 200ms") {
		t.Errorf("Scrape: %v; want a timeout error", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Scrape took %v with a 200ms timeout", d)
	}
}

func TestScrapeAcceptsTextAndGzip(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "node-prom-client-1.prom"))
	if err != nil {
		t.Fatal(err)
	}
	var accept, encoding string
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		accept, encoding = r.Header.Get("Accept"), r.Header.Get("Accept-Encoding")
		// prom-client's register.contentType, gzipped although the client did not ask for it.
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		gz.Write(body)
		gz.Close()
	})
	e, n, err := Scrape(context.Background(), nil, url, 5*time.Second, int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(accept, "text/plain;version=0.0.4") {
		t.Errorf("Accept %q, want the text format first", accept)
	}
	// Compression would cost the measured process CPU and heap at every scrape.
	if encoding != "identity" {
		t.Errorf("Accept-Encoding %q, want identity", encoding)
	}
	if !e.has("nodejs_heap_size_used_bytes") {
		t.Error("scrape lost nodejs_heap_size_used_bytes")
	}
	if n != int64(len(body)) {
		t.Errorf("scrape size %d bytes, want the decompressed body's %d", n, len(body))
	}
	// The cap applies to the decompressed body.
	if _, _, err := Scrape(context.Background(), nil, url, 5*time.Second, int64(len(body))-1); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("Scrape over the cap after decompression: %v", err)
	}
}
