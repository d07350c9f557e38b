package metrics

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// series are the pre-resolved children of one arm, operation and status
// code, so that a request after the first pays two map lookups under a read
// lock rather than label hashing.
type series struct {
	requests prometheus.Counter
	duration prometheus.Observer // nil for websocket upgrades, which are not timed
}

// seriesKey identifies a series within one arm.
type seriesKey struct {
	operation string
	code      int
}

// maxSeriesPerArm bounds the operation and code pairs one arm resolves, in
// case an operation namer returns more names than it should; beyond it
// requests count as OperationOther.
const maxSeriesPerArm = 1000

// armMetrics is the middleware of one arm.
type armMetrics struct {
	m         *Metrics
	arm       string
	operation func(*http.Request) string // nil: GraphQL, names come from SetOperation
	next      http.Handler
	inFlight  prometheus.Gauge
	sockets   prometheus.Gauge

	mu     sync.RWMutex
	series map[seriesKey]series
}

// Middleware wraps next (the handler of one arm, "rest" or "graphql") so
// every request is counted in soakd_target_requests_total{arm,operation,code}
// and timed in soakd_target_request_duration_seconds{arm,operation}, with
// soakd_target_requests_in_flight{arm} while it runs. Websocket upgrades
// are counted with operation "websocket" and tracked in
// soakd_target_websocket_connections{arm} rather than timed: they last as
// long as their connection.
//
// operation names a request after next has served it, so it sees what next
// learned (RouteOperation reads the pattern of the ServeMux inside next). It
// must return a value from a small set: a route template, never a raw URL.
// A nil operation means GraphQL: the name is whatever the GraphQL server
// reports with SetOperation while serving, OperationAnonymous if it reports
// none, bounded by MaxOperations.
func (m *Metrics) Middleware(arm string, operation func(*http.Request) string, next http.Handler) http.Handler {
	arm = label(arm)
	return &armMetrics{
		m: m, arm: arm, operation: operation, next: next,
		inFlight: m.inFlight.WithLabelValues(arm),
		sockets:  m.websockets.WithLabelValues(arm),
		series:   make(map[seriesKey]series),
	}
}

// ServeHTTP implements http.Handler.
func (a *armMetrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w, code: http.StatusOK}
	upgrade := strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
	var slot *opSlot
	if a.operation == nil && !upgrade {
		slot, r = a.slotFor(r)
	}
	gauge := a.inFlight
	if upgrade {
		gauge = a.sockets
	}
	gauge.Inc()
	start := time.Now()
	defer func() {
		// Deferred so that a panicking handler (net/http recovers it) is
		// still counted and leaves the gauge right; it is counted as a 500.
		elapsed := time.Since(start)
		gauge.Dec()
		code := rec.code
		p := recover()
		if p != nil && !rec.wrote {
			code = http.StatusInternalServerError
		}
		var op string
		switch {
		case upgrade:
			op = OperationWebsocket
		case a.operation != nil:
			op = a.operation(r)
		default:
			op = *a.m.anonymous
			if name := slot.op.Load(); name != nil {
				op = *name
			}
		}
		s := a.lookup(op, code, upgrade)
		s.requests.Inc()
		if s.duration != nil {
			s.duration.Observe(elapsed.Seconds())
		}
		if p != nil {
			panic(p) // net/http handles it as it would have
		}
	}()
	a.next.ServeHTTP(rec, r)
}

// slotFor is the slot a GraphQL request's operation is reported to, and
// the request that carries it. On a connection opened with ConnContext
// served over HTTP/1.x it is the connection's slot, cleared for this
// request: the request is the one given, so the GraphQL arm costs what the
// REST arm does (one allocation, the recorder) instead of a context and a
// copy of the request each time. Otherwise (HTTP/2, whose streams share a
// connection at once, or a server without ConnContext) a slot of its own
// is put in a derived context.
func (a *armMetrics) slotFor(r *http.Request) (*opSlot, *http.Request) {
	if s, ok := r.Context().Value(slotKey{}).(*opSlot); ok && s.conn && r.ProtoMajor < 2 {
		s.op.Store(nil)
		s.owner.Store(a.m)
		return s, r
	}
	s := &opSlot{}
	s.owner.Store(a.m)
	return s, r.WithContext(context.WithValue(r.Context(), slotKey{}, s))
}

// lookup returns the series of op and code, resolving them on first use.
func (a *armMetrics) lookup(op string, code int, upgrade bool) series {
	k := seriesKey{op, code}
	a.mu.RLock()
	s, ok := a.series[k]
	a.mu.RUnlock()
	if ok {
		return s
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if s, ok := a.series[k]; ok {
		return s
	}
	if len(a.series) >= maxSeriesPerArm {
		// An operation namer returning unbounded names: stop growing.
		k = seriesKey{OperationOther, code}
		if s, ok := a.series[k]; ok {
			return s
		}
		op = OperationOther
	}
	op = label(op)
	s = series{requests: a.m.requests.WithLabelValues(a.arm, op, strconv.Itoa(code))}
	if !upgrade {
		s.duration = a.m.duration.WithLabelValues(a.arm, op)
	}
	a.series[k] = s
	return s
}

// slotKey is the context key of the opSlot a GraphQL request's operation
// name is reported to.
type slotKey struct{}

// opSlot receives the operation name SetOperation reports for a request.
type opSlot struct {
	op    atomic.Pointer[string] // the reported GraphQL operation name
	owner atomic.Pointer[Metrics]
	// conn is true for a connection's slot (ConnContext), reused by its
	// requests one after another.
	conn bool
}

// ConnContext is for http.Server.ConnContext: it gives each connection a
// slot for the operation names of its GraphQL requests. HTTP/1.x serves a
// connection's requests one at a time, each in the connection's
// goroutine, so the slot is cleared at each request's start and read at
// its end, and the middleware need not derive a context for every
// request. A handler must report its operation (SetOperation) before it
// returns, as gqlgen's operation hook does: a report from a goroutine that
// outlives its request could name the next request on the connection.
func ConnContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, slotKey{}, &opSlot{conn: true})
}

// SetOperation reports the GraphQL operation a request is executing, from
// inside the handler wrapped by Middleware with a nil operation; elsewhere
// it does nothing. Only the first report of a request counts (a websocket
// connection's operations are not attributed). Call it from the GraphQL
// server's operation hook, for gqlgen:
//
//	srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
//		oc := graphql.GetOperationContext(ctx)
//		name := oc.OperationName
//		if name == "" && oc.Operation != nil {
//			name = oc.Operation.Name // a single named operation sent without operationName
//		}
//		metrics.SetOperation(ctx, name)
//		return next(ctx)
//	})
//
// name must be a GraphQL name ([_A-Za-z][_0-9A-Za-z]*, at most 64 bytes),
// else it counts as OperationOther; "" counts as OperationAnonymous. Only
// the first MaxOperations distinct names get their own series.
func SetOperation(ctx context.Context, name string) {
	slot, ok := ctx.Value(slotKey{}).(*opSlot)
	if !ok || slot.op.Load() != nil {
		return
	}
	owner := slot.owner.Load()
	if owner == nil {
		return // a connection's slot outside the middleware's requests
	}
	slot.op.CompareAndSwap(nil, owner.operationName(name))
}

// operationName returns the canonical pointer for a GraphQL operation
// name, admitting it if fewer than MaxOperations names were seen. A name
// already admitted costs a read lock.
func (m *Metrics) operationName(name string) *string {
	if name == "" {
		return m.anonymous
	}
	if !ValidOperationName(name) {
		return m.other
	}
	m.opsMu.RLock()
	p, ok := m.ops[name]
	m.opsMu.RUnlock()
	if ok {
		return p
	}
	m.opsMu.Lock()
	defer m.opsMu.Unlock()
	if p, ok := m.ops[name]; ok {
		return p
	}
	if len(m.ops) >= MaxOperations {
		return m.other
	}
	// The name arrives as a substring of the request's query text
	// (gqlparser slices names out of its source): kept as is, each admitted
	// name would hold its whole query, up to server.max_body_bytes, alive
	// for the life of the process.
	// A variable of its own: taking the parameter's address would move it
	// to the heap on every call, the read-locked hits too.
	kept := strings.Clone(name)
	p = &kept
	m.ops[kept] = p
	return p
}

// ValidOperationName reports whether name is a GraphQL name
// ([_A-Za-z][_0-9A-Za-z]*) of at most 64 bytes, the only operation names
// that get their own series.
func ValidOperationName(name string) bool {
	if name == "" || len(name) > maxLabelBytes {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// RouteOperation returns an operation namer for Middleware that labels a
// request with its method and the pattern of the http.ServeMux route that
// served it, e.g. "GET /api/donuts/{id}" (never the raw path). It reads
// Request.Pattern after the handler returned, so it sees the pattern set by
// a ServeMux inside the wrapped handler, which routes the same *Request.
// Methods other than the standard ones read "OTHER"; a request no pattern
// matched reads "unmatched". Names are cached: the set is bounded by the
// routes registered.
func RouteOperation() func(*http.Request) string {
	type key struct{ method, pattern string }
	var mu sync.RWMutex
	cache := make(map[key]string)
	return func(r *http.Request) string {
		k := key{r.Method, r.Pattern}
		mu.RLock()
		name, ok := cache[k]
		mu.RUnlock()
		if ok {
			return name
		}
		method := "OTHER"
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
			http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
			method = r.Method
		}
		switch {
		case r.Pattern == "":
			name = "unmatched"
		case strings.Contains(r.Pattern, " "): // the pattern names its method
			name = r.Pattern
		default:
			name = method + " " + r.Pattern
		}
		if method == "OTHER" {
			return name // not cached: arbitrary methods must not grow the cache
		}
		mu.Lock()
		cache[k] = name
		mu.Unlock()
		return name
	}
}

// recorder captures the response status.
type recorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

// WriteHeader records the first final status (informational 1xx other
// than 101 may precede it).
func (r *recorder) WriteHeader(code int) {
	if !r.wrote && (code >= 200 || code == http.StatusSwitchingProtocols) {
		r.code, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter; a write before WriteHeader means 200.
func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Flush implements http.Flusher for streaming transports (gqlgen's SSE and
// multipart responses assert it directly).
func (r *recorder) Flush() {
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

// Hijack implements http.Hijacker for websocket upgrades.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

var (
	_ http.Flusher  = (*recorder)(nil)
	_ http.Hijacker = (*recorder)(nil)
)
