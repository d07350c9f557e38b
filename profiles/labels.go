package profiles

import (
	"context"
	"net/http"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
)

// pprof label keys that Labeled sets on request-handling goroutines. They appear on CPU samples in local
// captures and in the Pyroscope push, so flame graphs can be split by endpoint and by run, phase and arm.
const (
	// LabelEndpoint names the endpoint family that served the request: "graphql" or "rest".
	LabelEndpoint = "endpoint"
	// LabelRun is the run id, from the soakd.run baggage key.
	LabelRun = "run"
	// LabelPhase is the phase name, from the soakd.phase baggage key.
	LabelPhase = "phase"
	// LabelArm is the compared arm ("graphql" or "rest"), from the soakd.arm baggage key.
	LabelArm = "arm"
)

// W3C baggage keys the soakd driver stamps on every request (see workloads' baggage header).
const (
	// BaggageRun carries the run id.
	BaggageRun = "soakd.run"
	// BaggagePhase carries the phase name.
	BaggagePhase = "soakd.phase"
	// BaggageArm carries the arm.
	BaggageArm = "soakd.arm"
)

// MaxLabelBytes bounds every label value taken from a request (bytes, after percent-decoding): a hostile or
// broken baggage header can neither grow the profiler's label storage nor smuggle control characters into
// file names or flame-graph views.
const MaxLabelBytes = 64

const (
	// labelCacheSize is how many distinct baggage headers a Labeled handler remembers. A phase stamps one
	// header on all its requests, and at most a few phases overlap (e.g. subscribers and writers), so a
	// handful of entries makes the steady state a cache hit.
	labelCacheSize = 8
	// maxCachedHeader is the longest baggage header kept in the cache (bytes); longer ones are parsed on
	// every request, so the cache's memory stays below labelCacheSize x maxCachedHeader.
	maxCachedHeader = 512
)

// Labeled wraps next so that each request runs with pprof goroutine labels endpoint=<endpoint> plus run,
// phase and arm taken from the request's W3C baggage header keys soakd.run, soakd.phase and soakd.arm (a
// missing key omits its label; values are bounded by ParseBaggage). Goroutines the handler starts inherit
// the labels, so CPU samples of request work carry them both in local captures and in Pyroscope.
//
// On the hot path it behaves like pprof.Do (labels set for the duration of next.ServeHTTP, then restored to
// the request context's labels) but allocates nothing: the label set for a baggage header is parsed once
// and cached, and the labels are set on the goroutine only, not on r.Context(). That keeps the harness out
// of the per-request allocation figures the KPIs compare. The consequence is that a nested
// pprof.Do(r.Context(), ...) inside next replaces these labels instead of adding to them. When the request
// context already carries pprof labels, Labeled uses pprof.Do and r.WithContext so those are merged and
// propagated as usual.
func Labeled(endpoint string, next http.Handler) http.Handler {
	endpoint = boundValue(endpoint)
	return &labeled{
		endpoint: endpoint,
		next:     next,
		bare:     newLabelEntry("", endpoint, nil),
	}
}

// labeled is the handler Labeled returns.
type labeled struct {
	endpoint string
	next     http.Handler
	bare     *labelEntry // the labels of a request without baggage
	cache    atomic.Pointer[labelCache]
}

var _ http.Handler = (*labeled)(nil)

// labelEntry is a parsed baggage header: its label set and a context carrying only those labels, ready
// for pprof.SetGoroutineLabels.
type labelEntry struct {
	header string
	set    pprof.LabelSet
	ctx    context.Context
}

// labelCache is an immutable set of recently seen headers; misses publish a modified copy.
type labelCache struct {
	entries [labelCacheSize]*labelEntry
	n       int // filled entries
	next    int // the slot the next miss replaces
}

// ServeHTTP runs the wrapped handler under the request's labels.
func (h *labeled) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e := h.entry(r.Header["Baggage"])
	parent := r.Context()
	if hasLabels(parent) {
		pprof.Do(parent, e.set, func(ctx context.Context) { h.next.ServeHTTP(w, r.WithContext(ctx)) })
		return
	}
	pprof.SetGoroutineLabels(e.ctx)
	defer pprof.SetGoroutineLabels(parent)
	h.next.ServeHTTP(w, r)
}

// entry returns the labels for the request's baggage header values, from the cache when it can.
func (h *labeled) entry(values []string) *labelEntry {
	var header string
	switch len(values) {
	case 0:
		return h.bare
	case 1:
		header = values[0]
	default:
		// W3C: several baggage headers are one list.
		header = strings.Join(values, ",")
	}
	if header == "" {
		return h.bare
	}
	c := h.cache.Load()
	if c != nil {
		for _, e := range c.entries[:c.n] {
			if e.header == header {
				return e
			}
		}
	}
	if len(header) > maxCachedHeader {
		return newLabelEntry("", h.endpoint, ParseBaggage(header))
	}
	e := newLabelEntry(strings.Clone(header), h.endpoint, ParseBaggage(header))
	nc := new(labelCache)
	if c != nil {
		*nc = *c
	}
	nc.entries[nc.next] = e
	nc.next = (nc.next + 1) % labelCacheSize
	nc.n = min(nc.n+1, labelCacheSize)
	// A lost race only means another miss later.
	h.cache.CompareAndSwap(c, nc)
	return e
}

// newLabelEntry builds the label set endpoint + the soakd baggage values in kv.
func newLabelEntry(header, endpoint string, kv map[string]string) *labelEntry {
	args := make([]string, 0, 8)
	if endpoint != "" {
		args = append(args, LabelEndpoint, endpoint)
	}
	for _, k := range [...][2]string{{BaggageRun, LabelRun}, {BaggagePhase, LabelPhase}, {BaggageArm, LabelArm}} {
		if v, ok := kv[k[0]]; ok && v != "" {
			args = append(args, k[1], v)
		}
	}
	set := pprof.Labels(args...)
	return &labelEntry{header: header, set: set, ctx: pprof.WithLabels(context.Background(), set)}
}

// hasLabels reports whether ctx carries any pprof labels.
func hasLabels(ctx context.Context) bool {
	found := false
	pprof.ForLabels(ctx, func(string, string) bool {
		found = true
		return false
	})
	return found
}

// ParseBaggage returns the soakd keys (soakd.run, soakd.phase, soakd.arm) of a W3C baggage header value,
// percent-decoded and bounded: each value keeps only printable characters (invalid UTF-8 is dropped) and
// is cut at MaxLabelBytes bytes on a character boundary. It tolerates spaces and tabs around keys, values
// and separators, list members without '=', and member properties (";k=v" or ";flag"), which it ignores.
// Other keys are ignored. When a key repeats, the last occurrence wins, and a value that is empty after
// bounding removes the key. It never fails: a malformed header yields fewer keys.
func ParseBaggage(h string) map[string]string {
	out := make(map[string]string, 3)
	for h != "" {
		var member string
		member, h, _ = strings.Cut(h, ",")
		member, _, _ = strings.Cut(member, ";") // properties
		key, value, ok := strings.Cut(member, "=")
		if !ok {
			continue
		}
		key = trimOWS(key)
		if key != BaggageRun && key != BaggagePhase && key != BaggageArm {
			continue
		}
		if v := decodeBounded(trimOWS(value)); v != "" {
			out[key] = v
		} else {
			delete(out, key)
		}
	}
	return out
}

// trimOWS trims the optional white space (spaces and tabs) that W3C baggage allows around its tokens.
func trimOWS(s string) string { return strings.Trim(s, " \t") }

// boundValue keeps the printable characters of s up to MaxLabelBytes bytes, without percent-decoding.
func boundValue(s string) string {
	var b strings.Builder
	for s != "" {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		if r == utf8.RuneError && size == 1 {
			continue // invalid UTF-8
		}
		if !appendPrintable(&b, r) {
			break
		}
	}
	return b.String()
}

// decodeBounded percent-decodes a baggage value (a '%' not followed by two hex digits is kept as is) and
// keeps its printable characters up to MaxLabelBytes bytes. It stops reading as soon as the output is
// full, so its work is bounded however long the header is.
func decodeBounded(s string) string {
	// Decode into a small buffer: at most MaxLabelBytes bytes plus one partial UTF-8 sequence.
	var raw [MaxLabelBytes + utf8.UTFMax]byte
	var b strings.Builder
	n := 0
	flush := func(final bool) bool {
		for n > 0 {
			if !final && !utf8.FullRune(raw[:n]) {
				return true // wait for the rest of the sequence
			}
			r, size := utf8.DecodeRune(raw[:n])
			if r == utf8.RuneError && size <= 1 {
				size = 1 // invalid byte: drop it
			} else if !appendPrintable(&b, r) {
				return false
			}
			copy(raw[:], raw[size:n])
			n -= size
		}
		return true
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			c = unhex(s[i+1])<<4 | unhex(s[i+2])
			i += 2
		}
		raw[n] = c
		n++
		if !flush(false) {
			return b.String()
		}
	}
	flush(true)
	return b.String()
}

// appendPrintable appends r to b if it is printable (letters, marks, numbers, punctuation, symbols and
// the ASCII space) and fits in MaxLabelBytes; it returns false once b is full.
func appendPrintable(b *strings.Builder, r rune) bool {
	if !unicode.IsPrint(r) {
		return true
	}
	if b.Len()+utf8.RuneLen(r) > MaxLabelBytes {
		return false
	}
	b.WriteRune(r)
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
