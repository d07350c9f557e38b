package profiles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/pprof/profile"
)

func TestParseBaggage(t *testing.T) {
	f := func(h string, want map[string]string) {
		t.Helper()
		got := ParseBaggage(h)
		if !maps.Equal(got, want) {
			t.Errorf("ParseBaggage(%q): got %v, want %v", h, got, want)
		}
	}
	m := func(kv ...string) map[string]string {
		out := make(map[string]string)
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	// What the driver sends (workloads.baggage), escaped as workloads.baggageEscape does.
	f("soakd.run=run/7%20x,soakd.phase=steady%201,soakd.arm=rest",
		m(BaggageRun, "run/7 x", BaggagePhase, "steady 1", BaggageArm, "rest"))
	f("soakd.run=x%2Cy%3Bz%22w%5Cv%25,soakd.arm=caf%C3%A9", m(BaggageRun, `x,y;z"w\v%`, BaggageArm, "café"))
	f("", m())
	f("   ", m())
	f(",,,", m())
	// Spaces and tabs around tokens, properties, other keys.
	f(" soakd.arm = graphql ;prop=1;flag , k6.test_run_id=abc,\tsoakd.phase\t=\tp1\t",
		m(BaggageArm, "graphql", BaggagePhase, "p1"))
	f("soakd.arm;x=y", m())                                         // no '=' before the properties
	f("soakd.arm", m())                                             // no '=' at all
	f("soakd.arm=", m())                                            // empty value
	f("SOAKD.ARM=rest", m())                                        // keys are case-sensitive
	f("soakd.arm=a=b", m(BaggageArm, "a=b"))                        // '=' is allowed in a value
	f("soakd.arm=rest,soakd.arm=graphql", m(BaggageArm, "graphql")) // the last wins
	f("soakd.arm=rest,soakd.arm=%01", m())                          // ... even when it is empty after bounding
	// Percent signs that do not start an escape are kept.
	f("soakd.run=100%,soakd.phase=%zz%4", m(BaggageRun, "100%", BaggagePhase, "%zz%4"))
	// Control characters, invalid UTF-8 and non-printable runes are dropped.
	f("soakd.run=a%00b%0Ac%7Fd%FFe%E2%80%8Bf", m(BaggageRun, "abcdef"))
	f("soakd.run=a\x00b\xffc", m(BaggageRun, "abc"))
	// Values are cut at MaxLabelBytes, on a character boundary.
	long := strings.Repeat("x", 200)
	f("soakd.run="+long, m(BaggageRun, long[:MaxLabelBytes]))
	f("soakd.run="+strings.Repeat("%C3%A9", 40), m(BaggageRun, strings.Repeat("é", MaxLabelBytes/2)))
	f("soakd.run=x"+strings.Repeat("%C3%A9", 40), m(BaggageRun, "x"+strings.Repeat("é", MaxLabelBytes/2-1)))
}

func FuzzParseBaggage(f *testing.F) {
	f.Add("soakd.run=run/7%20x,soakd.phase=steady%201,soakd.arm=rest")
	f.Add(" soakd.arm = graphql ;p=1, other=x")
	f.Add("soakd.run=%C3%A9%E2%80%8B%FF%")
	f.Add("soakd.phase=" + strings.Repeat("%F0%9F%8D%A9", 30))
	f.Fuzz(func(t *testing.T, h string) {
		got := ParseBaggage(h)
		for k, v := range got {
			if k != BaggageRun && k != BaggagePhase && k != BaggageArm {
				t.Errorf("ParseBaggage(%q): got key %q, want only the soakd keys", h, k)
			}
			if v == "" || len(v) > MaxLabelBytes || !utf8.ValidString(v) {
				t.Errorf("ParseBaggage(%q)[%q]: got %q (%d bytes), want 1..%d bytes of valid UTF-8", h, k, v, len(v), MaxLabelBytes)
			}
			for _, r := range v {
				if !unicode.IsPrint(r) {
					t.Errorf("ParseBaggage(%q)[%q]: got non-printable %U in %q", h, k, r, v)
				}
			}
		}
	})
}

// goroutineLabels returns the pprof labels of the calling goroutine, read from a goroutine profile. It
// may run on any goroutine, so it returns errors rather than failing the test.
func goroutineLabels() (map[string]string, error) {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 0); err != nil {
		return nil, fmt.Errorf("cannot write goroutine profile: %w", err)
	}
	p, err := profile.Parse(&buf)
	if err != nil {
		return nil, fmt.Errorf("cannot parse goroutine profile: %w", err)
	}
	for _, s := range p.Sample {
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if strings.HasSuffix(line.Function.Name, "profiles.goroutineLabels") {
					out := make(map[string]string)
					for k, v := range s.Label {
						out[k] = strings.Join(v, "|")
					}
					return out, nil
				}
			}
		}
	}
	return nil, errors.New("goroutine profile has no goroutine in goroutineLabels")
}

// ownLabels is goroutineLabels for the test's goroutine.
func ownLabels(t *testing.T) map[string]string {
	t.Helper()
	m, err := goroutineLabels()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type labelsOrError struct {
	labels map[string]string
	err    error
}

func TestLabeledSetsLabels(t *testing.T) {
	seen := make(chan labelsOrError, 1)
	srv := httptest.NewServer(Labeled("graphql", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		m, err := goroutineLabels()
		seen <- labelsOrError{m, err}
	})))
	defer srv.Close()

	f := func(baggage []string, want map[string]string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range baggage {
			req.Header.Add("Baggage", b)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("request: %v", err)
		}
		_ = resp.Body.Close()
		got := <-seen
		if got.err != nil {
			t.Fatal(got.err)
		}
		if !maps.Equal(got.labels, want) {
			t.Errorf("labels with baggage %q: got %v, want %v", baggage, got.labels, want)
		}
	}
	full := map[string]string{LabelEndpoint: "graphql", LabelRun: "run/7 x", LabelPhase: "steady 1", LabelArm: "rest"}
	driver := "soakd.run=run/7%20x,soakd.phase=steady%201,soakd.arm=rest"
	f([]string{driver}, full)
	f([]string{driver}, full) // from the cache
	f(nil, map[string]string{LabelEndpoint: "graphql"})
	f([]string{""}, map[string]string{LabelEndpoint: "graphql"})
	f([]string{"soakd.arm=graphql, k6.scenario=x"}, map[string]string{LabelEndpoint: "graphql", LabelArm: "graphql"})
	// Several baggage headers are one list.
	f([]string{"soakd.run=r1", "soakd.arm=rest"}, map[string]string{LabelEndpoint: "graphql", LabelRun: "r1", LabelArm: "rest"})
	// A header too long to cache still works.
	f([]string{"soakd.arm=rest," + strings.Repeat("x=y,", 200)}, map[string]string{LabelEndpoint: "graphql", LabelArm: "rest"})
}

func TestLabeledRestoresLabels(t *testing.T) {
	var inside map[string]string
	var ctxEndpoint string
	h := Labeled("rest", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inside = ownLabels(t)
		ctxEndpoint, _ = pprof.Label(r.Context(), LabelEndpoint)
	}))
	serve := func(ctx context.Context) {
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/api/donuts/1", nil)
		req.Header.Set("Baggage", "soakd.arm=rest")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}

	// Fast path: the request context has no labels.
	serve(context.Background())
	if want := map[string]string{LabelEndpoint: "rest", LabelArm: "rest"}; !maps.Equal(inside, want) {
		t.Errorf("labels inside: got %v, want %v", inside, want)
	}
	if got := ownLabels(t); len(got) != 0 {
		t.Errorf("labels after the request: got %v, want none", got)
	}

	// The request context has labels: they are merged, propagated in the context and restored.
	outer := pprof.WithLabels(context.Background(), pprof.Labels("outer", "x"))
	pprof.SetGoroutineLabels(outer)
	defer pprof.SetGoroutineLabels(context.Background())
	serve(outer)
	if want := map[string]string{"outer": "x", LabelEndpoint: "rest", LabelArm: "rest"}; !maps.Equal(inside, want) {
		t.Errorf("labels inside under outer labels: got %v, want %v", inside, want)
	}
	if ctxEndpoint != "rest" {
		t.Errorf("endpoint label in r.Context() under outer labels: got %q, want %q", ctxEndpoint, "rest")
	}
	if got, want := ownLabels(t), map[string]string{"outer": "x"}; !maps.Equal(got, want) {
		t.Errorf("labels after the request: got %v, want %v", got, want)
	}
}

func TestLabeledCacheIsBounded(t *testing.T) {
	h := Labeled("graphql", http.NotFoundHandler()).(*labeled)
	for i := range 5 * labelCacheSize {
		e := h.entry([]string{fmt.Sprintf("soakd.run=r%d", i)})
		if got, want := e.set, pprof.Labels(LabelEndpoint, "graphql", LabelRun, fmt.Sprintf("r%d", i)); !equalLabelSets(got, want) {
			t.Fatalf("entry %d: got labels %v, want %v", i, got, want)
		}
	}
	c := h.cache.Load()
	if c == nil || c.n != labelCacheSize {
		t.Fatalf("cache after %d headers: got %+v, want %d entries", 5*labelCacheSize, c, labelCacheSize)
	}
	// The most recent headers are the ones kept.
	last := fmt.Sprintf("soakd.run=r%d", 5*labelCacheSize-1)
	if e := h.entry([]string{last}); h.cache.Load() != c || e.header != last {
		t.Errorf("recent header %q: got a cache miss, want a hit", last)
	}
	long := "soakd.run=r," + strings.Repeat("k=v,", maxCachedHeader)
	h.entry([]string{long})
	if h.cache.Load() != c {
		t.Errorf("a %d-byte header was cached, want headers over %d bytes left out", len(long), maxCachedHeader)
	}
}

func equalLabelSets(a, b pprof.LabelSet) bool {
	ma := make(map[string]string)
	mb := make(map[string]string)
	pprof.ForLabels(pprof.WithLabels(context.Background(), a), func(k, v string) bool { ma[k] = v; return true })
	pprof.ForLabels(pprof.WithLabels(context.Background(), b), func(k, v string) bool { mb[k] = v; return true })
	return maps.Equal(ma, mb)
}

func TestLabeledBoundsEndpoint(t *testing.T) {
	h := Labeled("rest\x00"+strings.Repeat("e", 100), http.NotFoundHandler()).(*labeled)
	if want := strings.Repeat("e", MaxLabelBytes-4); h.endpoint != "rest"+want {
		t.Errorf("endpoint label: got %q, want %q", h.endpoint, "rest"+want)
	}
}

// BenchmarkLabeled measures what Labeled adds to every request: the steady state is a cache hit.
func BenchmarkLabeled(b *testing.B) {
	h := Labeled("graphql", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	w := httptest.NewRecorder()
	bench := func(name string, headers []string) {
		b.Run(name, func(b *testing.B) {
			reqs := make([]*http.Request, len(headers))
			for i, hd := range headers {
				reqs[i] = httptest.NewRequest(http.MethodPost, "/graphql", nil)
				if hd != "" {
					reqs[i].Header.Set("Baggage", hd)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				h.ServeHTTP(w, reqs[i])
				if i++; i == len(reqs) {
					i = 0
				}
			}
		})
	}
	bench("baggage", []string{"soakd.run=run-42,soakd.phase=graphql-steady-1,soakd.arm=graphql"})
	bench("no-baggage", []string{""})
	// More distinct headers than the cache holds, used in turn: every request parses.
	var miss []string
	for i := range 2 * labelCacheSize {
		miss = append(miss, fmt.Sprintf("soakd.run=run-%d,soakd.phase=graphql-steady-1,soakd.arm=graphql", i))
	}
	bench("cache-miss", miss)
}

func BenchmarkParseBaggage(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		ParseBaggage("soakd.run=run-42,soakd.phase=graphql%20steady%201,soakd.arm=graphql;p=1, k6.name=x")
	}
}
