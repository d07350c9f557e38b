package workloads

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"go.uber.org/goleak"
)

// testPhase returns a small valid phase.
func testPhase(groups ...UserGroup) Phase {
	return Phase{
		Name:           "steady 1",
		Arm:            "rest",
		Groups:         groups,
		Think:          Think{Min: time.Millisecond, Max: 3 * time.Millisecond},
		RampUp:         20 * time.Millisecond,
		RequestTimeout: 5 * time.Second,
		Operations:     donutOps(50),
		Seed:           42,
		Run:            "run/7 x",
	}
}

func TestRunLoopback(t *testing.T) {
	fake := newFakeTarget(50)
	srv := httptest.NewServer(fake.handler())
	defer srv.Close()
	p := testPhase(
		UserGroup{Operation: RESTGet, Users: 4, Iterations: 25},
		UserGroup{Operation: RESTPut, Users: 3, Iterations: 20},
		UserGroup{Operation: GraphQLQuery, Users: 4, Iterations: 25},
		UserGroup{Operation: GraphQLMutation, Users: 3, Iterations: 20},
	)
	client := NewClient(p.Users(), p.RequestTimeout)
	defer client.CloseIdleConnections()

	r, err := Run(context.Background(), srv.URL, p, client, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := r.Requests, int64(4*25+3*20+4*25+3*20); got != want {
		t.Errorf("requests: got %d, want %d", got, want)
	}
	if r.Errors != 0 || len(r.ErrorsByClass) != 0 {
		t.Errorf("errors: got %d %v %v, want none", r.Errors, r.ErrorsByClass, r.ErrorExamples)
	}
	if r.Aborted || !r.ClosedModel || r.Phase != p.Name || r.Arm != p.Arm || r.DriverPID == 0 {
		t.Errorf("header fields: got aborted %v closed %v phase %q arm %q pid %d", r.Aborted, r.ClosedModel, r.Phase, r.Arm, r.DriverPID)
	}
	// 320 requests cost this process some CPU, which the driver reports
	// itself (a pod's driver has no other way to say it).
	if r.LoadCPUSeconds == nil || *r.LoadCPUSeconds <= 0 {
		t.Errorf("load_cpu_seconds %v: want the driver's own CPU over the load", r.LoadCPUSeconds)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(r.Operations) != len(p.Groups) {
		t.Fatalf("operations: got %d, want %d", len(r.Operations), len(p.Groups))
	}
	for i, g := range p.Groups {
		op := r.Operations[i]
		want := int64(g.Users * g.Iterations)
		if op.Operation != g.Operation || op.Requests != want || op.Errors != 0 {
			t.Errorf("operation %d: got %s %d requests %d errors, want %s %d requests 0 errors", i, op.Operation, op.Requests, op.Errors, g.Operation, want)
		}
		if got := fake.counts[g.Operation]; int64(got) != want {
			t.Errorf("server saw %d %s requests, want %d", got, g.Operation, want)
		}
		if got := hdrhistogram.Import(op.Histogram).TotalCount(); got != want {
			t.Errorf("%s histogram holds %d values, want %d", g.Operation, got, want)
		}
		if op.LatencyMs.Max <= 0 || op.LatencyMs.P50 > op.LatencyMs.P99 || op.LatencyMs.P99 > op.LatencyMs.Max {
			t.Errorf("%s latency summary is inconsistent: %+v", g.Operation, op.LatencyMs)
		}
	}
	wantBaggage := "soakd.run=run/7%20x,soakd.phase=steady%201,soakd.arm=rest"
	if len(fake.baggage) != 1 || fake.baggage[wantBaggage] != int(r.Requests) {
		t.Errorf("baggage headers: got %v, want %d x %q", fake.baggage, r.Requests, wantBaggage)
	}
	// Closed model: consecutive requests of one user arrive at least think.min apart.
	if len(fake.arrivals) != 6 {
		t.Errorf("writers seen: got %d, want 6", len(fake.arrivals))
	}
	for id, times := range fake.arrivals {
		if len(times) != 20 {
			t.Errorf("writer %s: got %d requests, want 20", id, len(times))
		}
		for i := 1; i < len(times); i++ {
			if gap := times[i].Sub(times[i-1]); gap < p.Think.Min {
				t.Errorf("writer %s: gap %d is %s, want >= %s", id, i, gap, p.Think.Min)
			}
		}
	}
	if r.SteadyRequests < 0 || r.SteadyRequests > r.Requests || r.ThroughputRPS <= 0 {
		t.Errorf("steady: got %d requests at %.1f rps (fallback %v: %s)", r.SteadyRequests, r.ThroughputRPS, r.SteadyFallback, r.SteadyFallbackReason)
	}
	if r.SteadyStart.Before(r.Start) || r.SteadyEnd.After(r.End) {
		t.Errorf("steady window [%v, %v] outside phase [%v, %v]", r.SteadyStart, r.SteadyEnd, r.Start, r.End)
	}
	if got := Summarize(hdrhistogram.Import(r.Operations[0].Histogram)); got != r.Operations[0].LatencyMs {
		t.Errorf("imported histogram summary: got %+v, want %+v", got, r.Operations[0].LatencyMs)
	}
	// The result survives a JSON round trip, histograms included.
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if got := hdrhistogram.Import(back.Operations[2].Histogram).TotalCount(); got != 100 {
		t.Errorf("histogram after JSON round trip holds %d values, want 100", got)
	}
	for _, key := range []string{`"throughput_rps"`, `"steady_fallback"`, `"latency_ms"`, `"p999"`, `"errors_by_class"`, `"closed_model":true`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("result JSON lacks %s", key)
		}
	}
}

func TestRunErrorClasses(t *testing.T) {
	// f runs 2 users x 3 iterations of op against a fake whose fault hook
	// answers every request, and checks they all fail with class want.
	// Every case runs with both clients: NewClient's (fasthttp) and HTTPClient's (net/http).
	f := func(name string, op Operation, timeout time.Duration, fault func(w http.ResponseWriter, r *http.Request, op Operation) bool, want string) {
		for _, std := range []bool{false, true} {
			t.Run(map[bool]string{false: "fasthttp", true: "net-http"}[std]+"/"+name, func(t *testing.T) {
				fake := newFakeTarget(50)
				fake.fault = fault
				srv := httptest.NewServer(fake.handler())
				defer srv.Close()
				p := testPhase(UserGroup{Operation: op, Users: 2, Iterations: 3})
				p.RequestTimeout = timeout
				client := NewClient(p.Users(), p.RequestTimeout)
				if std {
					client = HTTPClient(&http.Client{})
				}
				defer client.CloseIdleConnections()
				r, err := Run(context.Background(), srv.URL, p, client, nil)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				checkAllFailed(t, r, want, 6)
			})
		}
	}
	ok := time.Second
	f("http 500", RESTGet, ok, func(w http.ResponseWriter, _ *http.Request, _ Operation) bool {
		http.Error(w, "boom", http.StatusInternalServerError)
		return true
	}, "http_500")
	f("graphql errors with 200", GraphQLQuery, ok, func(w http.ResponseWriter, _ *http.Request, _ Operation) bool {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"errors":[{"message":"resolver failed","path":["donut"]}],"data":{"donut":null}}`))
		return true
	}, ClassGraphQLError)
	f("wrong flavor", RESTGet, ok, func(w http.ResponseWriter, r *http.Request, _ Operation) bool {
		reply(w, "donut", donutJSON{ID: r.PathValue("id"), Name: "x", Flavor: "PISTACHIO"})
		return true
	}, ClassPayloadMismatch)
	f("writer reads back another flavor", GraphQLMutation, ok, func(w http.ResponseWriter, _ *http.Request, _ Operation) bool {
		reply(w, "addOrUpdateDonut", donutJSON{ID: "w0", Flavor: "PISTACHIO"})
		return true
	}, ClassPayloadMismatch)
	f("missing data", RESTPut, ok, func(w http.ResponseWriter, _ *http.Request, _ Operation) bool {
		_, _ = w.Write([]byte(`{"data":{}}`))
		return true
	}, ClassPayloadMismatch)
	f("not json", RESTGet, ok, func(w http.ResponseWriter, _ *http.Request, _ Operation) bool {
		_, _ = w.Write([]byte(`<html>oops</html>`))
		return true
	}, ClassDecodeError)
	f("timeout reading the body", GraphQLMutation, 50*time.Millisecond, func(w http.ResponseWriter, r *http.Request, _ Operation) bool {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"data":`))
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
		return true
	}, ClassTimeout)
	f("connection reset", GraphQLQuery, ok, func(w http.ResponseWriter, _ *http.Request, _ Operation) bool {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.(*net.TCPConn).SetLinger(0) // RST rather than FIN
			conn.Close()
		}
		return true
	}, ClassConnectionReset)
	f("timeout", RESTGet, 50*time.Millisecond, func(w http.ResponseWriter, r *http.Request, _ Operation) bool {
		<-r.Context().Done() // the client gives up and closes the connection
		return true
	}, ClassTimeout)

	// The requested seeded donut as the target answers it (the fake sets
	// the path value "id" for GraphQL queries too).
	want := func(r *http.Request, _ Operation) donutJSON {
		d, ok := newFakeTarget(50).get(r.PathValue("id"))
		if !ok {
			t.Errorf("no seeded donut %q", r.PathValue("id"))
		}
		return d
	}
	f("right body, wrong status", RESTGet, ok, func(w http.ResponseWriter, r *http.Request, op Operation) bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"donut": want(r, op)}})
		return true
	}, "http_201")
	f("another donut", RESTGet, ok, func(w http.ResponseWriter, r *http.Request, op Operation) bool {
		d := want(r, op)
		d.ID += "0" // same flavor, same shape, another id
		reply(w, "donut", d)
		return true
	}, ClassPayloadMismatch)
	f("another donut by GraphQL", GraphQLQuery, ok, func(w http.ResponseWriter, r *http.Request, op Operation) bool {
		d := want(r, op)
		d.ID = "1" + d.ID
		reply(w, "donut", d)
		return true
	}, ClassPayloadMismatch)
	f("graphql errors beside the right data", GraphQLQuery, ok, func(w http.ResponseWriter, r *http.Request, op Operation) bool {
		b, _ := json.Marshal(want(r, op))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"donut":` + string(b) + `},"errors":[{"message":"partial failure"}]}`))
		return true
	}, ClassGraphQLError)
	f("truncated JSON", GraphQLQuery, ok, func(w http.ResponseWriter, r *http.Request, op Operation) bool {
		b, _ := json.Marshal(map[string]any{"data": map[string]any{"donut": want(r, op)}})
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b[:len(b)-1]) // a complete response whose body lacks its last brace
		return true
	}, ClassDecodeError)
	f("body cut short", RESTGet, ok, func(w http.ResponseWriter, r *http.Request, op Operation) bool {
		b, _ := json.Marshal(map[string]any{"data": map[string]any{"donut": want(r, op)}})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		_, _ = w.Write(b[:len(b)/2]) // the server closes the connection half way
		return true
	}, ClassConnectionReset)

	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		p := testPhase(UserGroup{Operation: RESTPut, Users: 2, Iterations: 3})
		r, err := Run(context.Background(), "http://"+addr, p, nil, nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		checkAllFailed(t, r, ClassConnectionRefused, 6)
	})
}

// checkAllFailed asserts that all n requests of r failed with class.
func checkAllFailed(t *testing.T, r Result, class string, n int64) {
	t.Helper()
	t.Logf("examples: %q", r.ErrorExamples[class])
	if r.Requests != n || r.Errors != n {
		t.Errorf("got %d requests %d errors, want %d and %d", r.Requests, r.Errors, n, n)
	}
	if len(r.ErrorsByClass) != 1 || r.ErrorsByClass[class] != n {
		t.Errorf("errors by class: got %v, want {%s: %d}; examples %q", r.ErrorsByClass, class, n, r.ErrorExamples)
	}
	if op := r.Operations[0]; op.Errors != n || op.ErrorsByClass[class] != n {
		t.Errorf("operation errors: got %d %v, want %d of %s", op.Errors, op.ErrorsByClass, n, class)
	}
	if got := len(r.ErrorExamples[class]); got != maxExamples {
		t.Errorf("examples of %s: got %d, want %d: %q", class, got, maxExamples, r.ErrorExamples)
	}
	if got := hdrhistogram.Import(r.Operations[0].Histogram).TotalCount(); got != 0 {
		t.Errorf("failed requests in the latency histogram: got %d, want 0", got)
	}
}

func TestRunCancel(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreConnsCleaner)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := newFakeTarget(50)
	var once sync.Once
	var n int
	var mu sync.Mutex
	fake.seen = func(Operation) {
		mu.Lock()
		defer mu.Unlock()
		if n++; n == 50 {
			once.Do(cancel)
		}
	}
	srv := httptest.NewServer(fake.handler())
	defer srv.Close()
	p := testPhase(
		UserGroup{Operation: RESTGet, Users: 3, Iterations: 1000},
		UserGroup{Operation: GraphQLMutation, Users: 3, Iterations: 1000},
	)
	r, err := Run(ctx, srv.URL, p, nil, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !r.Aborted {
		t.Errorf("aborted: got false, want true")
	}
	if r.Requests < 50 || r.Requests >= p.Requests() {
		t.Errorf("requests: got %d, want between 50 and %d", r.Requests, p.Requests())
	}
	// Requests in flight at the cancel finished and were validated.
	if r.Errors != 0 {
		t.Errorf("errors: got %d %v, want 0", r.Errors, r.ErrorExamples)
	}
	mu.Lock()
	defer mu.Unlock()
	if int64(n) != r.Requests {
		t.Errorf("server saw %d requests, result counts %d", n, r.Requests)
	}
}

func TestRunRejects(t *testing.T) {
	p := testPhase(UserGroup{Operation: RESTGet, Users: 1, Iterations: 1})
	for _, target := range []string{"", "127.0.0.1:80", "ftp://127.0.0.1", "http://127.0.0.1/?q=1"} {
		if _, err := Run(context.Background(), target, p, nil, nil); err == nil {
			t.Errorf("target %q: got no error, want one", target)
		}
	}
	p.Groups = nil
	if _, err := Run(context.Background(), "http://127.0.0.1:1", p, nil, nil); err == nil || !strings.Contains(err.Error(), "users:") {
		t.Errorf("invalid phase: got %v, want an error naming users", err)
	}
}
