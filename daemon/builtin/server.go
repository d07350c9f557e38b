package builtin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	pyropprof "github.com/grafana/pyroscope-go/http/pprof"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/soakd/soakd/control"
	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/donut"
	"github.com/soakd/soakd/internal/failsig"
	"github.com/soakd/soakd/internal/graph"
	"github.com/soakd/soakd/internal/metrics"
	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/profiles"
)

// Server is the system under test: the GraphQL endpoint and the REST control
// group over one store and broker, plus /metrics, /debug/pprof/ and the
// resource sampler, all in this process. Nothing that generates load runs
// here.
type Server struct {
	Service  *donut.Service
	Sampler  *profiles.Sampler
	Registry *prometheus.Registry
	// Metrics are soakd's own series on Registry: request metrics of both
	// arms, the driver's figures, the phase marker and the KPI results.
	Metrics *metrics.Metrics

	log      *zap.Logger
	relStore *relational.Store   // target.scenario relational; nil otherwise
	relM     *relational.Metrics // its per-endpoint tally; nil otherwise
	scenario string              // target.scenario
	server   *http.Server
	listener net.Listener
	grace    time.Duration
	stop     context.CancelFunc // stops the sampler and websocket handlers
	wg       sync.WaitGroup     // the server and sampler goroutines
	failed   *failsig.Signal    // set when the server stops serving on its own
	// pyroscope stops the profile push (flushing what it collected); a
	// no-op when profiling.pyroscope.server_address is empty.
	pyroscope func() error
	// inject is the planted regression around the GraphQL handler.
	inject *injector
}

// pyroscopeOptions is the push of this process's profiles that cfg asks
// for. Its static tags are the configured ones only: the run, phase and
// arm travel as pprof labels on the CPU samples of each request (from the
// driver's baggage), so one long-lived push serves every run.
func pyroscopeOptions(cfg *config.Config) profiles.PyroscopeOptions {
	py := cfg.Profiling.Pyroscope
	o := profiles.PyroscopeOptions{
		ServerAddress: py.ServerAddress, ApplicationName: py.ApplicationName, Tags: maps.Clone(py.Tags),
		BasicAuthUser: py.BasicAuthUser, UploadRate: py.UploadRate,
	}
	if py.BasicAuthPasswordEnv != "" {
		o.BasicAuthPassword = os.Getenv(py.BasicAuthPasswordEnv)
	}
	return o
}

// Start builds the target from cfg, binds its listener and starts
// serving and sampling, and the Pyroscope push of this process's profiles
// when configured (for as long as the target runs: an idle serve pushes
// too). Stop it with Shutdown.
func Start(ctx context.Context, cfg *config.Config, log *zap.Logger) (*Server, error) {
	svc := &donut.Service{Store: donut.NewStore(cfg.Data.Donuts), Broker: donut.NewBroker(cfg.Data.SubscriberBuffer)}
	sampler, err := profiles.New(profiles.Options{Interval: cfg.Sampler.Interval, MaxSamples: cfg.Sampler.MaxSamples})
	if err != nil {
		return nil, fmt.Errorf("cannot start the sampler: %w", err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.MetricsGC,
			collectors.MetricsScheduler,
			// The GC share of CPU, the figure the GC KPI is built on.
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/cpu/classes/(gc/total|total):cpu-seconds$`)},
		)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)

	m := metrics.New(reg)
	m.Broker(svc.Broker.Stats)

	mux := http.NewServeMux()
	// Request handling runs under pprof labels (endpoint, and the driver's
	// run/phase/arm from its baggage header), so GraphQL and REST separate
	// in CPU profiles and Pyroscope flame graphs.
	gh := graph.NewHandler(svc, graph.Options{
		Introspection:         cfg.GraphQL.Introspection,
		QueryCacheSize:        cfg.GraphQL.QueryCacheSize,
		APQCacheSize:          cfg.GraphQL.APQCacheSize,
		QueryCacheBytes:       cfg.GraphQL.QueryCacheBytes,
		APQCacheBytes:         cfg.GraphQL.APQCacheBytes,
		KeepAlive:             cfg.GraphQL.KeepAlive,
		MaxBodyBytes:          cfg.Server.MaxBodyBytes,
		MaxDepth:              cfg.GraphQL.MaxDepth,
		MaxComplexity:         cfg.GraphQL.MaxComplexity,
		MaxAliases:            cfg.GraphQL.MaxAliases,
		WebsocketInitTimeout:  cfg.GraphQL.WebsocketInitTimeout,
		WebsocketWriteTimeout: cfg.GraphQL.WebsocketWriteTimeout,
		// Validated at least 1: the graph package's zero default and
		// negative "no limit" never apply here.
		MaxSubscriptionsPerSocket: cfg.GraphQL.MaxSubscriptionsPerSocket,
		Logger:                    log.Named("graphql"),
		OnOperation:               metrics.SetOperation,
	})
	m.GraphQLPanics(gh.Panics)
	planted := newInjector(cfg.Inject)
	mux.Handle("/graphql", profiles.Labeled("graphql", m.Middleware("graphql", nil, planted.wrap(gh))))
	// The request metrics sit right around the REST handler so they read
	// the route template ("GET /api/donuts/{id}") it matched.
	mux.Handle("/api/donuts/", profiles.Labeled("rest", m.Middleware("rest", metrics.RouteOperation(),
		control.NewHandler(svc, control.Options{MaxBodyBytes: cfg.Server.MaxBodyBytes, Logger: log.Named("rest")}))))
	relStore, relM, err := serveRelational(ctx, cfg, reg, mux, log)
	if err != nil {
		return nil, err
	}
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	// pyroscope-go's handler shares the CPU profiler with the push (Go has
	// one per process): net/http/pprof's would fail while it runs.
	mux.HandleFunc("/debug/pprof/profile", pyropprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})

	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Server.Listen)
	if err != nil {
		if relStore != nil {
			_ = relStore.Close()
		}
		return nil, fmt.Errorf("cannot listen on server.listen %q: %w", cfg.Server.Listen, err)
	}
	stopPush, err := profiles.StartPyroscope(pyroscopeOptions(cfg), log)
	if err != nil {
		if relStore != nil {
			_ = relStore.Close()
		}
		return nil, errors.Join(fmt.Errorf("cannot start the pyroscope push: %w", err), ln.Close())
	}
	// Request contexts derive from sctx, cancelled after the graceful
	// shutdown, so hijacked websocket connections end too.
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	srv := &http.Server{
		Handler:     mux,
		BaseContext: func(net.Listener) context.Context { return sctx },
		// Each connection carries the slot its GraphQL requests report
		// their operation to: the GraphQL arm's metrics then cost what the
		// REST arm's do (metrics.ConnContext).
		ConnContext:       metrics.ConnContext,
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout,
		ReadTimeout:       cfg.Server.ReadTimeout,
		WriteTimeout:      cfg.Server.WriteTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout,
		MaxHeaderBytes:    cfg.Server.MaxHeaderBytes,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	t := &Server{
		Service: svc, Sampler: sampler, Registry: reg, Metrics: m,
		log: log, relStore: relStore, relM: relM, scenario: cfg.Target.Scenario, server: srv, listener: ln, grace: cfg.Server.ShutdownGrace,
		stop: stop, failed: failsig.New(), pyroscope: stopPush, inject: planted,
	}
	t.wg.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			t.failed.Set(err)
		}
	})
	t.wg.Go(func() {
		if err := sampler.Run(sctx); err != nil && !errors.Is(err, context.Canceled) {
			log.Warn("sampler stopped", zap.Error(err))
		}
	})
	log.Info("target listening", zap.String("url", t.URL()))
	if host, _, _ := net.SplitHostPort(cfg.Server.Listen); !api.IsLoopback(host) {
		// Validate refuses this address without server.allow_non_loopback.
		log.Warn("server.listen is reachable from other hosts: /debug/pprof/ and the mutations (GraphQL and REST PUT) are exposed there without authentication",
			zap.String("listen", cfg.Server.Listen))
	}
	return t, nil
}

// URL is the target's base URL, e.g. http://127.0.0.1:41234. A listener on
// an unspecified address (0.0.0.0, ::) is reached through loopback.
func (t *Server) URL() string {
	addr := t.listener.Addr().(*net.TCPAddr)
	ip := addr.IP
	if ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return "http://" + net.JoinHostPort(ip.String(), strconv.Itoa(addr.Port))
}

// Shutdown stops accepting requests, gives in-flight ones the configured
// grace period, stops the sampler and waits for every goroutine it started.
func (t *Server) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, t.grace)
	defer cancel()
	start := time.Now()
	err := t.server.Shutdown(ctx)
	if err != nil {
		err = errors.Join(fmt.Errorf("graceful shutdown did not finish in %s: %w", t.grace, err), t.server.Close())
	}
	t.stop()
	t.wg.Wait()
	if t.relStore != nil {
		if cerr := t.relStore.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cannot close the relational database: %w", cerr))
		}
	}
	if perr := t.pyroscope(); perr != nil {
		t.log.Warn("pyroscope flush", zap.Error(perr))
	}
	t.log.Info("target stopped", zap.Duration("took", time.Since(start)))
	return err
}

// burn spins a xorshift generator n times: CPU work with no allocation and
// no system call, which the compiler cannot remove (the result is kept).
func burn(n uint64) uint64 {
	x := uint64(88172645463325252)
	for range n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	runtime.KeepAlive(x)
	return x
}

// spinsPerMicro calibrates burn: how many spins take one µs of CPU on this
// machine. It measures the calibrating thread's own CPU clock
// (CLOCK_THREAD_CPUTIME_ID, the thread locked for the purpose) over at least
// 20 ms of CPU, so a busy machine that preempts the loop does not make the
// switch burn less than asked; the wall clock is the fallback where the
// thread clock is unavailable.
func spinsPerMicro() float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	now := func() time.Duration {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
			return time.Duration(time.Now().UnixNano())
		}
		return time.Duration(ts.Nano())
	}
	const n = 1 << 20
	start := now()
	var total uint64
	for now()-start < 20*time.Millisecond {
		burn(n)
		total += n
	}
	return float64(total) / float64((now() - start).Microseconds())
}

// injector is the planted regression around the GraphQL handler (see
// InjectConfig). The CPU burn and the extra allocation can be changed
// while the server runs (SetInject: a daemon's run that plants one); the
// leak cannot, since what it kept stays kept. Without any configured, a
// request pays two atomic loads.
type injector struct {
	spins atomic.Uint64 // busy-loop iterations per request
	alloc atomic.Int64  // extra bytes allocated per request
	// cpuUs is the configured burn in µs (spins is derived from it).
	cpuUs atomic.Int64
	leak  int
	mu    sync.Mutex
	kept  [][]byte // grows for the life of the process, on purpose
	// perMicro is the busy loop's iterations per µs, measured once on
	// the first non-zero burn.
	perMicro func() float64
}

// newInjector returns the planted regression of c.
func newInjector(c config.InjectConfig) *injector {
	in := &injector{leak: c.GraphQLLeakBytesPerRequest, perMicro: sync.OnceValue(spinsPerMicro)}
	in.set(c.GraphQLCPUMicrosPerRequest, c.GraphQLAllocBytesPerRequest)
	return in
}

// set changes the CPU burn (µs per request) and the extra allocation
// (bytes per request); 0 turns either off.
func (in *injector) set(cpuUs, allocBytes int) {
	var spins uint64
	if cpuUs > 0 {
		spins = uint64(float64(cpuUs) * in.perMicro())
	}
	in.spins.Store(spins)
	in.cpuUs.Store(int64(cpuUs))
	in.alloc.Store(int64(allocBytes))
}

// wrap puts the planted regression in front of next.
func (in *injector) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if spins := in.spins.Load(); spins > 0 {
			burn(spins)
		}
		if n := in.alloc.Load(); n > 0 {
			b := make([]byte, n)
			b[n-1] = 1 // touched, so the allocation is real
			runtime.KeepAlive(b)
		}
		if n := in.leak; n > 0 {
			b := make([]byte, n)
			in.mu.Lock()
			in.kept = append(in.kept, b)
			in.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// SetInject changes the planted CPU burn and allocation of the running
// server to c's (a daemon's run that plants a regression, then the
// daemon's own setting again); a different leak or driver burn is an error
// naming the key, since neither can change while the server runs.
func (t *Server) SetInject(c config.InjectConfig) error {
	if c.GraphQLLeakBytesPerRequest != t.inject.leak {
		return fmt.Errorf("inject.graphql_leak_bytes_per_request cannot change while the target runs: what it leaked stays leaked")
	}
	t.inject.set(c.GraphQLCPUMicrosPerRequest, c.GraphQLAllocBytesPerRequest)
	return nil
}

// Done is closed when the server stops serving on its own.
func (t *Server) Done() <-chan struct{} { return t.failed.Done() }

// Err says why the server stopped serving; nil while it serves.
func (t *Server) Err() error { return t.failed.Err() }

// SetPhase marks the samples taken from now on as phase name's.
func (t *Server) SetPhase(name string) { t.Sampler.SetPhase(name) }

// Scenario is target.scenario, what the server serves.
func (t *Server) Scenario() string { return t.scenario }
