package extsample

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/soakd/soakd/internal/nofollow"
)

const (
	// DefaultTimeout bounds one scrape (connect, headers and body) when Options.Timeout is zero.
	DefaultTimeout = 5 * time.Second
	// DefaultMaxBytes caps a scrape's body when Options.MaxBytes is zero. A Go server with every
	// runtime/metrics series exposes about 30 KB; 4 MiB leaves room for large applications.
	DefaultMaxBytes = 4 << 20

	// acceptHeader asks for the Prometheus text format 0.0.4, which client_golang, prom-client,
	// prometheus-net and client_java all serve.
	acceptHeader = "text/plain;version=0.0.4;q=1,*/*;q=0.1"
)

// Exposition is one scrape of a Prometheus endpoint, parsed: the metric families by name.
type Exposition map[string]*dto.MetricFamily

// Scrape fetches url with client and parses the body as Prometheus text exposition, and returns the body's
// size in bytes (after decompressing a gzip body, which it does not ask for; whatever was read, also on
// error). The request stops at
// timeout; a body larger than maxBytes, an HTTP status other than 200, a Content-Type that is not Prometheus
// text (text/plain or OpenMetrics text), a body that does not parse, and a body with no metric family are
// errors that say so.
func Scrape(ctx context.Context, client *http.Client, url string, timeout time.Duration, maxBytes int64) (Exposition, int64, error) {
	if timeout <= 0 {
		return nil, 0, fmt.Errorf("invalid scrape timeout %v: must be positive", timeout)
	}
	if maxBytes <= 0 {
		return nil, 0, fmt.Errorf("invalid scrape size cap %d: must be positive", maxBytes)
	}
	if client == nil {
		client = nofollow.Client(0)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("scrape %s: %w", url, err)
	}
	req.Header.Set("Accept", acceptHeader)
	// An uncompressed body: the scrape is on loopback, and compressing it
	// costs the measured process CPU at every scrape and, in client_golang's
	// promhttp, a pooled flate writer (about 900 KB) that stays in its live
	// heap from the first scrape on, read as heap growth. Setting the header
	// also turns off the transport's transparent gzip, so a server that
	// compresses anyway is decompressed below.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
			return nil, 0, fmt.Errorf("scrape %s: no complete response within %v", url, timeout)
		}
		return nil, 0, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("scrape %s: HTTP status %s, want 200 OK", url, resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "text/plain" && mt != "application/openmetrics-text") {
			return nil, 0, fmt.Errorf("scrape %s: Content-Type %q is not Prometheus text exposition (text/plain or application/openmetrics-text)", url, ct)
		}
	}
	var r io.Reader = resp.Body
	if strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip") {
		gz, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, 0, fmt.Errorf("scrape %s: the gzip body does not decompress: %w", url, err)
		}
		defer gz.Close()
		r = gz
	}
	body, err := io.ReadAll(io.LimitReader(r, maxBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, int64(len(body)), fmt.Errorf("scrape %s: no complete response within %v", url, timeout)
		}
		return nil, int64(len(body)), fmt.Errorf("scrape %s: reading the body: %w", url, err)
	}
	if int64(len(body)) > maxBytes {
		return nil, int64(len(body)), fmt.Errorf("scrape %s: the body exceeds the %d-byte cap", url, maxBytes)
	}
	exp, err := ParseText(body)
	if err != nil {
		return nil, int64(len(body)), fmt.Errorf("scrape %s: %w", url, err)
	}
	return exp, int64(len(body)), nil
}

// ParseText parses Prometheus text exposition (format 0.0.4; the OpenMetrics 1.0 text that the same parser
// accepts also parses). A body that is not exposition text, or holds no metric family, is an error.
func ParseText(body []byte) (Exposition, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("the body is not Prometheus text exposition: %w", err)
	}
	if len(fams) == 0 {
		return nil, errors.New("the body holds no metric family: not a Prometheus endpoint, or nothing registered")
	}
	return Exposition(fams), nil
}
