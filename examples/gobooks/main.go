// Command gobooks is a small books-and-authors GraphQL server with a REST
// twin over the same store: the Go server soakd's examples and end-to-end
// tests soak as a target it does not host. It is a module of its own, built
// from the module cache soakd already needs.
//
//	POST /graphql, GET /graphql   queries and mutations (JSON body; GET: query parameters, queries only)
//	GET /graphql (websocket)      subscriptions, graphql-transport-ws or the legacy graphql-ws
//	GET /books/{id}               the REST twin's read: {"id","title","pages","author":{"id","name"}}
//	PUT /books/{id}               the REST twin's write: {"title","pages","authorId"?}; raises bookUpdated
//	GET /metrics                  client_golang: the Go collector with runtime/metrics series, the process collector
//	GET /debug/pprof/             net/http/pprof's profiles (heap, goroutine, …, profile: CPU)
//	GET /healthz                  200 once serving
//
// Usage: gobooks [-port 4000] [-books 1000] [-pid-file FILE]
// [-alloc-per-request BYTES]. It listens on 127.0.0.1 only, prints one JSON
// line with its address and PID on standard output when ready, and exits 0
// after a graceful stop on SIGTERM or SIGINT.
//
// -alloc-per-request plays a regressed build, for `soakd ab` sessions that
// compare two builds (examples/gobooks-ab-old.yaml, -ab-new.yaml): every
// GraphQL query or mutation served over HTTP allocates that many more heap
// bytes, writes one byte in each 4 KiB page of them, and keeps them alive
// until its answer is written, as a handler holding a needless buffer would.
// The default, 0, allocates nothing extra.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Request body caps, in bytes: far above what the schema's requests need.
const (
	maxGraphQLBody = 1 << 20
	maxRESTBody    = 64 << 10
)

// stopGrace bounds the graceful stop of HTTP requests in flight.
const stopGrace = 5 * time.Second

// maxAllocPerRequest caps -alloc-per-request, in bytes: 16 MiB, as soakd
// caps its own inject.graphql_alloc_bytes_per_request; a regression that
// size is already hundreds of times what a request needs.
const maxAllocPerRequest = 16 << 20

// options are the command's flags.
type options struct {
	port, books int
	pidFile     string
	host        string // the address to listen on
	// allocPerRequest is the extra heap, in bytes, every GraphQL query or
	// mutation allocates and holds until its answer is written: a
	// regressed build's cost, 0 for none.
	allocPerRequest int
}

// run is the command: it returns the exit status (0 after a graceful stop,
// 2 for bad flags, 1 when it cannot serve).
func run(args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("gobooks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.port, "port", 4000, "TCP `port` to listen on")
	fs.StringVar(&o.host, "host", "127.0.0.1", "`address` to listen on (a pod's IP, in a cluster)")
	fs.IntVar(&o.books, "books", 1000, "seeded books, ids \"1\" to this `number`")
	fs.StringVar(&o.pidFile, "pid-file", "", "write the process ID to this `file` once listening (removed at exit)")
	fs.IntVar(&o.allocPerRequest, "alloc-per-request", 0,
		"play a regressed build: every GraphQL query or mutation allocates this many extra heap `bytes`, touched and held until its answer is written (0: none)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.port < 0 || o.port > 65535 || o.books < 0 || o.allocPerRequest < 0 || o.allocPerRequest > maxAllocPerRequest || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gobooks: -port must be 0 … 65535, -books not negative, -alloc-per-request 0 … %d bytes, and no arguments follow the flags\n", maxAllocPerRequest)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stdout, nil))
	if err := serve(o, log); err != nil {
		fmt.Fprintln(stderr, "gobooks:", err)
		return 1
	}
	return 0
}

// serve listens, serves until SIGTERM or SIGINT, then stops gracefully.
func serve(o options, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	s, err := newServer(o.books, o.allocPerRequest)
	if err != nil {
		return err
	}
	defer s.cancelWS()
	ln, err := net.Listen("tcp", net.JoinHostPort(o.host, strconv.Itoa(o.port)))
	if err != nil {
		return fmt.Errorf("cannot listen: %w", err)
	}
	hs := &http.Server{Handler: s.routes(), ReadHeaderTimeout: 5 * time.Second}
	if o.pidFile != "" {
		if err := writeFileAtomic(o.pidFile, []byte(strconv.Itoa(os.Getpid())+"\n")); err != nil {
			ln.Close()
			return fmt.Errorf("cannot write the PID file: %w", err)
		}
		defer os.Remove(o.pidFile)
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	log.Info("listening", "addr", ln.Addr().String(), "pid", os.Getpid(), "books", o.books, "alloc_per_request", o.allocPerRequest)

	select {
	case err := <-served:
		return fmt.Errorf("cannot serve: %w", err)
	case <-ctx.Done():
	}
	start := time.Now()
	// Websockets are hijacked: Shutdown does not wait for them, so they are
	// closed (going away) and awaited apart.
	s.cancelWS()
	sctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	err = hs.Shutdown(sctx)
	s.conns.closeAndWait()
	<-served // http.ErrServerClosed
	log.Info("stopped", "took", time.Since(start).String())
	if err != nil {
		return fmt.Errorf("cannot stop gracefully: %w", err)
	}
	return nil
}

// server is the running service: the store, its GraphQL executor, the open
// websockets and the metrics registry.
type server struct {
	store    *store
	broker   *broker
	exec     *executor
	registry *prometheus.Registry

	requests      *prometheus.CounterVec // by api: graphql, rest
	subscriptions prometheus.Gauge

	wsCtx    context.Context // ends at shutdown: every websocket closes
	cancelWS context.CancelFunc
	conns    tracker

	// allocPerRequest is -alloc-per-request: extra bytes per GraphQL query
	// or mutation (graphQL), 0 for none.
	allocPerRequest int
}

func newServer(books, allocPerRequest int) (*server, error) {
	reg := prometheus.NewRegistry()
	s := &server{
		registry:        reg,
		allocPerRequest: allocPerRequest,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gobooks_requests_total", Help: "Requests served, by API (graphql, rest).",
		}, []string{"api"}),
		subscriptions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "gobooks_subscriptions_open", Help: "Subscriptions open over websockets.",
		}),
	}
	dropped := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gobooks_events_dropped_total", Help: "Subscription events dropped on a full subscription buffer.",
	})
	reg.MustRegister(
		// The runtime/metrics-based Go collector, as soakd's README
		// recommends: live heap after GC, allocation counters, GC cycles,
		// goroutines, and the GC's share of CPU (the two cpu-classes series).
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.MetricsGC,
			collectors.MetricsScheduler,
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/cpu/classes/(gc/total|total):cpu-seconds$`)},
		)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		s.requests, s.subscriptions, dropped,
	)
	s.broker = newBroker(dropped.Inc)
	s.store = newStore(books, s.broker)
	// One GC cycle before serving: go_gc_heap_live_bytes reads 0 until a
	// cycle has ended, and the GC's mark workers start at the first cycle,
	// so without it a soak's first phase would have no baseline live heap
	// and would see the goroutine count rise by the mark workers.
	runtime.GC()
	var err error
	if s.exec, err = newExecutor(s.store); err != nil {
		return nil, err
	}
	s.wsCtx, s.cancelWS = context.WithCancel(context.Background())
	return s, nil
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /graphql", s.postGraphQL)
	mux.HandleFunc("GET /graphql", s.getGraphQL)
	mux.HandleFunc("GET /books/{id}", s.getBook)
	mux.HandleFunc("PUT /books/{id}", s.putBook)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}))
	// Heap profiles, goroutine dumps and CPU profiles for soakd's
	// target.pprof_url (what import _ "net/http/pprof" registers on the
	// default mux).
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	return mux
}

// postGraphQL serves a query or mutation POSTed as JSON.
func (s *server) postGraphQL(w http.ResponseWriter, r *http.Request) {
	s.requests.WithLabelValues("graphql").Inc()
	var req request
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxGraphQLBody))
	if err := dec.Decode(&req); err != nil {
		writeGraphQLErrors(w, http.StatusBadRequest, gqlerror.Errorf("the body must be a JSON object {query, operationName, variables}: %v", err))
		return
	}
	s.graphQL(w, req, true)
}

// getGraphQL serves a websocket upgrade, else a query sent as URL
// parameters (query, operationName, variables as JSON).
func (s *server) getGraphQL(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Upgrade") != "" {
		s.serveWS(w, r)
		return
	}
	s.requests.WithLabelValues("graphql").Inc()
	q := r.URL.Query()
	req := request{Query: q.Get("query"), OperationName: q.Get("operationName")}
	if v := q.Get("variables"); v != "" {
		if err := json.Unmarshal([]byte(v), &req.Variables); err != nil {
			writeGraphQLErrors(w, http.StatusBadRequest, gqlerror.Errorf("variables must be a JSON object: %v", err))
			return
		}
	}
	s.graphQL(w, req, false)
}

// graphQL prepares and executes req; mutations only when sent by POST.
func (s *server) graphQL(w http.ResponseWriter, req request, post bool) {
	ballast := s.regression()
	defer runtime.KeepAlive(ballast) // held until the answer is written
	p, errs := s.exec.prepare(req)
	if len(errs) > 0 {
		writeGraphQLErrors(w, http.StatusBadRequest, errs...)
		return
	}
	switch {
	case p.op.Operation == ast.Subscription:
		writeGraphQLErrors(w, http.StatusBadRequest, gqlerror.Errorf("subscriptions are served over a websocket on this URL"))
		return
	case p.op.Operation == ast.Mutation && !post:
		writeGraphQLErrors(w, http.StatusMethodNotAllowed, gqlerror.Errorf("mutations must be POSTed"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(s.exec.execute(p))
}

// pageSize is the stride at which regression touches its bytes: one write
// per 4 KiB page makes every page of the allocation resident.
const pageSize = 4 << 10

// regression is -alloc-per-request's cost: a fresh heap allocation of that
// many bytes with one byte written in each page, or nil when it is 0. The
// caller keeps it alive until its answer is written, so the bytes are live
// for the request's duration and count in the heap the GC works on, not
// only in the allocation counter.
func (s *server) regression() []byte {
	if s.allocPerRequest <= 0 {
		return nil
	}
	b := make([]byte, s.allocPerRequest)
	for i := 0; i < len(b); i += pageSize {
		b[i] = 1
	}
	return b
}

func writeGraphQLErrors(w http.ResponseWriter, status int, errs ...*gqlerror.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(errorBody(errs))
}

// bookJSON is the REST twin's view of a book.
type bookJSON struct {
	ID     string     `json:"id"`
	Title  string     `json:"title"`
	Pages  int        `json:"pages"`
	Author authorJSON `json:"author"`
}

type authorJSON struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func (s *server) bookJSON(b Book) bookJSON {
	a, _ := s.store.author(b.AuthorID) // the store only keeps known authors
	return bookJSON{ID: b.ID, Title: b.Title, Pages: b.Pages, Author: authorJSON{ID: a.ID, Name: a.Name}}
}

// getBook is the REST twin of Query.book.
func (s *server) getBook(w http.ResponseWriter, r *http.Request) {
	s.requests.WithLabelValues("rest").Inc()
	b, ok := s.store.book(r.PathValue("id"))
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no book " + strconv.Quote(r.PathValue("id"))})
		return
	}
	writeJSON(w, http.StatusOK, s.bookJSON(b))
}

// putBook is the REST twin of Mutation.updateBook.
func (s *server) putBook(w http.ResponseWriter, r *http.Request) {
	s.requests.WithLabelValues("rest").Inc()
	var in struct {
		Title    string `json:"title"`
		Pages    *int   `json:"pages"`
		AuthorID string `json:"authorId"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRESTBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.Pages == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("the body must be {\"title\": string, \"pages\": int, \"authorId\"?: string} (%v)", err)})
		return
	}
	b, err := s.store.update(r.PathValue("id"), in.Title, *in.Pages, in.AuthorID)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, s.bookJSON(b))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// tracker counts the open websockets so a stop can wait for them; once
// closed it refuses new ones.
type tracker struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// add counts one more websocket, or reports false once closed.
func (t *tracker) add() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.wg.Add(1)
	return true
}

func (t *tracker) done() { t.wg.Done() }

// closeAndWait refuses new websockets and waits for the open ones to end.
func (t *tracker) closeAndWait() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.wg.Wait()
}

// writeFileAtomic writes data to path through a temporary file renamed over
// it, so a reader never sees a partial PID.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
