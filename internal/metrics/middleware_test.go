package metrics

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soakd/soakd/control"
	"github.com/soakd/soakd/internal/donut"
	"github.com/soakd/soakd/internal/gqlws"
	"github.com/soakd/soakd/internal/graph"
)

// do sends a request and drains the response, returning its status.
func do(t *testing.T, c *http.Client, method, url, body string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func newService() *donut.Service {
	return &donut.Service{Store: donut.NewStore(10), Broker: donut.NewBroker(16)}
}

// TestMiddlewareREST serves the real REST control group behind the
// middleware, mounted as the daemon mounts it.
func TestMiddlewareREST(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	mux := http.NewServeMux()
	mux.Handle(control.Prefix, m.Middleware("rest", RouteOperation(), control.NewHandler(newService(), control.Options{})))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c := srv.Client()

	for range 3 {
		if got := do(t, c, http.MethodGet, srv.URL+"/api/donuts/1", ""); got != http.StatusOK {
			t.Fatalf("GET: got status %d, want 200", got)
		}
	}
	do(t, c, http.MethodGet, srv.URL+"/api/donuts/no-such-donut", "")
	do(t, c, http.MethodPut, srv.URL+"/api/donuts/2", `{"name":"n","flavor":"VANILLA"}`)
	do(t, c, http.MethodPatch, srv.URL+"/api/donuts/2", "")
	do(t, c, "BREW", srv.URL+"/api/donuts/2", "")
	do(t, c, http.MethodGet, srv.URL+"/api/donuts/a/b/c", "") // control's own 404 route

	f := func(want float64, labels ...string) {
		t.Helper()
		if got := mustValue(t, reg, "soakd_target_requests_total", labels...); got != want {
			t.Errorf("requests%v: got %v, want %v", labels, got, want)
		}
	}
	f(3, "arm=rest", "operation=GET /api/donuts/{id}", "code=200")
	f(1, "arm=rest", "operation=GET /api/donuts/{id}", "code=404")
	f(1, "arm=rest", "operation=PUT /api/donuts/{id}", "code=200")
	f(1, "arm=rest", "operation=PATCH /api/donuts/{id}", "code=405")
	f(1, "arm=rest", "operation=OTHER /api/donuts/{id}", "code=405")
	f(1, "arm=rest", "operation=GET /", "code=404")
	if got := mustValue(t, reg, "soakd_target_request_duration_seconds", "arm=rest", "operation=GET /api/donuts/{id}"); got != 4 {
		t.Errorf("duration observations: got %v, want 4", got)
	}
	if got := mustValue(t, reg, "soakd_target_requests_in_flight", "arm=rest"); got != 0 {
		t.Errorf("in flight after the requests: got %v, want 0", got)
	}
	for _, s := range gather(t, reg, "soakd_target_requests_total") {
		if strings.Contains(s.labels["operation"], "no-such-donut") || strings.Contains(s.labels["operation"], "/2") {
			t.Errorf("a raw path leaked into a label: %v", s.labels)
		}
	}
}

// gqlStub stands in for a GraphQL server: it reports the operation named
// by the "op" query parameter, as gqlgen's AroundOperations hook would.
func gqlStub(report bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if report {
			SetOperation(r.Context(), r.URL.Query().Get("op"))
			SetOperation(r.Context(), "Ignored") // only the first report counts
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{}}`))
	})
}

// TestMiddlewareGraphQLOperationNames: each request is counted under the
// operation it reported, on a server without ConnContext (a slot per
// request), with ConnContext over one HTTP/1.1 connection (the
// connection's slot, cleared per request: an anonymous request after a
// named one on the same connection stays anonymous) and over unencrypted
// HTTP/2 (streams of one connection at once: a slot per request again).
func TestMiddlewareGraphQLOperationNames(t *testing.T) {
	for _, tc := range []struct {
		name        string
		connContext bool
		h2          bool
	}{{"per request", false, false}, {"connection slot", true, false}, {"http2", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m := New(reg)
			srv := httptest.NewUnstartedServer(m.Middleware("graphql", nil, gqlStub(true)))
			if tc.connContext {
				srv.Config.ConnContext = ConnContext
			}
			var tr *http.Transport
			if tc.h2 {
				var p http.Protocols
				p.SetUnencryptedHTTP2(true)
				srv.Config.Protocols = &p
				tr = &http.Transport{Protocols: &p}
			} else {
				tr = &http.Transport{MaxConnsPerHost: 1} // one connection, its requests in turn
			}
			srv.Start()
			defer srv.Close()
			c := &http.Client{Transport: tr}
			defer tr.CloseIdleConnections()
			ops := []string{"Donut", "Donut", "", "not-a-name", "Donut", ""}
			if tc.h2 {
				// At once on one connection: each stream its own name.
				done := make(chan struct{})
				for _, op := range ops {
					go func() {
						defer func() { done <- struct{}{} }()
						do(t, c, http.MethodPost, srv.URL+"?op="+op, "{}")
					}()
				}
				for range ops {
					<-done
				}
			} else {
				for _, op := range ops {
					do(t, c, http.MethodPost, srv.URL+"?op="+op, "{}")
				}
			}
			f := func(want float64, labels ...string) {
				t.Helper()
				if got := mustValue(t, reg, "soakd_target_requests_total", labels...); got != want {
					t.Errorf("requests%v: got %v, want %v", labels, got, want)
				}
			}
			f(3, "arm=graphql", "operation=Donut", "code=200")
			f(2, "arm=graphql", "operation=anonymous", "code=200")
			f(1, "arm=graphql", "operation=other", "code=200")
		})
	}
}

// TestMiddlewareArmsAllocateAlike: on a server connection (ConnContext)
// the GraphQL arm's middleware allocates what the REST arm's does, one
// object a request (the recorder): soakd's instrumentation must not be a
// difference between the arms it compares.
func TestMiddlewareArmsAllocateAlike(t *testing.T) {
	m := New(prometheus.NewRegistry())
	rest := m.Middleware("rest", RouteOperation(), noop())
	gql := m.Middleware("graphql", nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetOperation(r.Context(), "Donut")
		w.WriteHeader(http.StatusOK)
	}))
	conn := ConnContext(context.Background(), nil)
	allocs := func(h http.Handler, pattern string) float64 {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/api/donuts/1", nil).WithContext(conn)
		return testing.AllocsPerRun(200, func() {
			r.Pattern = pattern
			h.ServeHTTP(w, r)
		})
	}
	r, g := allocs(rest, "/api/donuts/{id}"), allocs(gql, "")
	if r > 1 || g != r {
		t.Errorf("allocations a request: REST %.1f, GraphQL %.1f; want the same, at most 1", r, g)
	}
}

// TestMiddlewareRealGraphQL serves the real gqlgen handler behind the
// middleware: without a SetOperation hook every request is anonymous, and
// a websocket subscription goes through the recorder's Hijack.
func TestMiddlewareRealGraphQL(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	svc := newService()
	srv := httptest.NewServer(m.Middleware("graphql", nil, graph.NewHandler(svc, graph.Options{})))
	defer srv.Close()
	c := srv.Client()
	if got := do(t, c, http.MethodPost, srv.URL, `{"query":"query Donut { donut(id: \"1\") { id } }"}`); got != http.StatusOK {
		t.Fatalf("query: got status %d, want 200", got)
	}
	if got := mustValue(t, reg, "soakd_target_requests_total", "arm=graphql", "operation=anonymous", "code=200"); got != 1 {
		t.Errorf("anonymous requests: got %v, want 1", got)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := gqlws.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), gqlws.TransportWS)
	if err != nil {
		t.Fatalf("websocket through the middleware: %v", err)
	}
	if got := mustValue(t, reg, "soakd_target_websocket_connections", "arm=graphql"); got != 1 {
		t.Errorf("open websockets: got %v, want 1", got)
	}
	if got := mustValue(t, reg, "soakd_target_requests_in_flight", "arm=graphql"); got != 0 {
		t.Errorf("in flight with only a websocket open: got %v, want 0", got)
	}
	if err := conn.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	// The server notices the close asynchronously.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if v, ok := value(t, reg, "soakd_target_requests_total", "arm=graphql", "operation=websocket", "code=101"); ok && v == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the websocket request was not counted: %v", gather(t, reg, "soakd_target_requests_total"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := mustValue(t, reg, "soakd_target_websocket_connections", "arm=graphql"); got != 0 {
		t.Errorf("open websockets after close: got %v, want 0", got)
	}
	if _, ok := value(t, reg, "soakd_target_request_duration_seconds", "arm=graphql", "operation=websocket"); ok {
		t.Errorf("a websocket connection was timed as a request")
	}
}

func TestMiddlewareCountsPanics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	h := m.Middleware("rest", func(*http.Request) string { return "boom" }, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic(http.ErrAbortHandler)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	if resp, err := srv.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("got a response from an aborted handler, want an error")
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if v, ok := value(t, reg, "soakd_target_requests_total", "arm=rest", "operation=boom", "code=500"); ok && v == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the panicking request was not counted as a 500: %v", gather(t, reg, "soakd_target_requests_total"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := mustValue(t, reg, "soakd_target_requests_in_flight", "arm=rest"); got != 0 {
		t.Errorf("in flight after a panic: got %v, want 0", got)
	}
}

func TestMiddlewareBoundsUnboundedNamers(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	h := m.Middleware("rest", func(r *http.Request) string { return r.URL.Path }, http.NotFoundHandler())
	for i := range maxSeriesPerArm + 20 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/"+strings.Repeat("x", i%200)+string(rune('a'+i%26))+strings.Repeat("y", i/200), nil))
	}
	if got := len(gather(t, reg, "soakd_target_requests_total")); got > maxSeriesPerArm+1 {
		t.Errorf("got %d series, want at most %d", got, maxSeriesPerArm+1)
	}
}

func TestRouteOperation(t *testing.T) {
	op := RouteOperation()
	f := func(method, pattern, want string) {
		t.Helper()
		r := httptest.NewRequest(method, "/x", nil)
		r.Pattern = pattern
		for range 2 { // the cached answer too
			if got := op(r); got != want {
				t.Errorf("%s %q: got %q, want %q", method, pattern, got, want)
			}
		}
	}
	f(http.MethodGet, "/api/donuts/{id}", "GET /api/donuts/{id}")
	f(http.MethodPut, "/api/donuts/{id}", "PUT /api/donuts/{id}")
	f("BREW", "/api/donuts/{id}", "OTHER /api/donuts/{id}")
	f(http.MethodGet, "POST /items", "POST /items")
	f(http.MethodGet, "", "unmatched")
}

// noop is the cheapest possible handler, so the benchmarks show the
// middleware's own cost.
func noop() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
}

// BenchmarkMiddleware measures the per-request cost of the middleware
// around a handler that does nothing: REST (route template) and GraphQL
// (operation reported through the context), against no middleware.
func BenchmarkMiddleware(b *testing.B) {
	bench := func(b *testing.B, h http.Handler, pattern string, ctx context.Context) {
		b.Helper()
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "/api/donuts/1", nil).WithContext(ctx)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			r.Pattern = pattern
			h.ServeHTTP(w, r)
		}
	}
	b.Run("none", func(b *testing.B) { bench(b, noop(), "/api/donuts/{id}", context.Background()) })
	b.Run("rest", func(b *testing.B) {
		m := New(prometheus.NewRegistry())
		bench(b, m.Middleware("rest", RouteOperation(), noop()), "/api/donuts/{id}", context.Background())
	})
	gql := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetOperation(r.Context(), "Donut")
		w.WriteHeader(http.StatusOK)
	})
	// graphql: on a server connection (ConnContext), as the built-in
	// target serves it; graphql-no-conn-slot: a server without it (or
	// HTTP/2), a context and a request copy each time.
	b.Run("graphql", func(b *testing.B) {
		m := New(prometheus.NewRegistry())
		bench(b, m.Middleware("graphql", nil, gql), "", ConnContext(context.Background(), nil))
	})
	b.Run("graphql-no-conn-slot", func(b *testing.B) {
		m := New(prometheus.NewRegistry())
		bench(b, m.Middleware("graphql", nil, gql), "", context.Background())
	})
}
