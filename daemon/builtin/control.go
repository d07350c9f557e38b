package builtin

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/metrics"
	"github.com/soakd/soakd/internal/pin"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/strictjson"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

// The built-in target as a process of its own: `soakd target` (ServeTarget)
// hosts StartTarget's server and nothing else of soakd, and answers the
// orchestrating soakd (processTarget) on a control surface: a second
// listener, on loopback, whose every request must carry the token the
// orchestrator passed in TargetTokenEnv.

// ControlPrefix is the path every control endpoint lives under.
const ControlPrefix = "/soakd/"

// maxControlBody bounds a control request's body.
const maxControlBody = 4 << 20

// TargetReady is the line `soakd target` prints on standard output once it
// serves: its target's base URL and its control surface's.
type TargetReady struct {
	URL        string `json:"url"`
	ControlURL string `json:"control_url"`
	PID        int    `json:"pid"`
}

// TargetOptions configure ServeTarget.
type TargetOptions struct {
	Log *zap.Logger
	// Stdout receives the ready line (TargetReady as JSON).
	Stdout io.Writer
	// Token is the control token; "" refuses every control request.
	Token string
}

// ServeTarget runs `soakd target`: the built-in target (StartTarget) and
// its control surface on a loopback listener of its own, until ctx ends
// (SIGTERM) or the target stops serving on its own (an error then).
func ServeTarget(ctx context.Context, cfg *config.Config, opts TargetOptions) error {
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	token := opts.Token
	if token == "" {
		token = RandomToken() // nobody knows it: the control surface is closed
		log.Info("no control token given (" + config.TargetTokenEnv + "): the control endpoints refuse every request")
	}
	t, err := Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		_ = t.Shutdown(context.WithoutCancel(ctx))
		return fmt.Errorf("cannot listen for the control surface: %w", err)
	}
	ctl := &targetControl{t: t, token: []byte(token), log: log.Named("control")}
	srv := &http.Server{
		Handler:           ctl.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(log.Named("control")),
	}
	ctlErr := make(chan error, 1)
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			ctlErr <- err
		}
	}()
	ready := TargetReady{URL: t.URL(), ControlURL: "http://" + ln.Addr().String(), PID: os.Getpid()}
	line, _ := json.Marshal(ready)
	if opts.Stdout != nil {
		if _, err := fmt.Fprintf(opts.Stdout, "%s\n", line); err != nil {
			log.Warn("cannot print the ready line", zap.Error(err))
		}
	}
	log.Info("target serving", zap.String("url", ready.URL), zap.String("control", ready.ControlURL))
	var serveErr error
	select {
	case <-ctx.Done():
		// The orchestrator's SIGTERM at the end of every run: routine, so
		// not a line on the user's terminal after the verdict.
		log.Debug("stopping", zap.String("cause", context.Cause(ctx).Error()))
	case <-t.Done():
		serveErr = fmt.Errorf("the target stopped serving: %w", t.Err())
	case err := <-ctlErr:
		serveErr = fmt.Errorf("the control surface stopped serving: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	ctl.release()
	if err := t.Shutdown(context.WithoutCancel(ctx)); err != nil {
		serveErr = errors.Join(serveErr, err)
	}
	return serveErr
}

func RandomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b)
}

// targetControl is the control surface of `soakd target`.
type targetControl struct {
	t     *Server
	token []byte
	log   *zap.Logger

	mu  sync.Mutex
	cpu *profiles.CPUProfile // the CPU profile in progress, if any
}

// release stops what the control surface started: a CPU profile (before
// the target's Pyroscope push stops, which waits for it).
func (c *targetControl) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cpu != nil {
		_ = c.cpu.Stop()
		c.cpu = nil
	}
}

// Control requests and answers, shared with processTarget.
type (
	CtlPath   struct{ Path string }
	CtlPhase  struct{ Name string }
	Rest      struct{ Goroutines, HeapLiveBytes uint64 }
	CtlSettle struct {
		BaselineGoroutines, BaselineHeapLiveBytes uint64
		Duration                                  time.Duration
	}
	CtlCPUs     struct{ CPUs []int }
	CtlAffinity struct {
		CPUs    []int
		Uniform bool
		Error   string
	}
	// CtlMetrics is one call on the target's soakd series (runMetrics).
	CtlMetrics struct {
		Op              string
		Run, Phase, Arm string                  `json:",omitempty"`
		Progress        *metrics.DriverProgress `json:",omitempty"`
		Result          *workloads.Result       `json:",omitempty"`
		KPIs            []kpi.Result            `json:",omitempty"`
		Checks          []metrics.CheckOutcome  `json:",omitempty"`
		Verdict         kpi.Outcome             `json:",omitempty"`
	}
)

// Operations of ctlMetrics.
const (
	OpPhaseStarted   = "phase_started"
	OpPhaseEnded     = "phase_ended"
	OpDriverProgress = "driver_progress"
	OpDriverResult   = "driver_result"
	OpKPIResults     = "kpi_results"
	OpCheckResults   = "check_results"
	OpRunVerdict     = "run_verdict"
)

func (c *targetControl) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /soakd/samples", c.samples)
	mux.HandleFunc("POST /soakd/phase", c.phase)
	mux.HandleFunc("POST /soakd/inject", c.inject)
	mux.HandleFunc("POST /soakd/baseline", c.baseline)
	mux.HandleFunc("POST /soakd/settle", c.settle)
	mux.HandleFunc("POST /soakd/heap", c.write(profiles.HeapProfile))
	mux.HandleFunc("POST /soakd/goroutines", c.write(profiles.GoroutineDump))
	mux.HandleFunc("POST /soakd/cpu/start", c.cpuStart)
	mux.HandleFunc("POST /soakd/cpu/stop", c.cpuStop)
	mux.HandleFunc("POST /soakd/metrics", c.metrics)
	mux.HandleFunc("POST /soakd/pin", c.pin)
	mux.HandleFunc("GET /soakd/affinity", c.affinity)
	mux.HandleFunc("GET /soakd/relational", c.relational)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil || !api.IsLoopback(host) {
			http.Error(w, "the control surface answers loopback only", http.StatusForbidden)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), c.token) != 1 {
			http.Error(w, "missing or wrong control token", http.StatusUnauthorized)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxControlBody)
		mux.ServeHTTP(w, r)
	})
}

// decode reads the request's JSON body into v, answering 400 when it
// cannot.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := strictjson.Decode(r.Body, v, "the orchestrator and this target disagree on the control protocol (two soakd builds?)"); err != nil {
		http.Error(w, "bad request body: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if v == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}

// samples answers the samples taken after the time in ?after= (RFC 3339,
// nanoseconds); without it, all of them and the pause buckets.
func (c *targetControl) samples(w http.ResponseWriter, r *http.Request) {
	var after time.Time
	if s := r.URL.Query().Get("after"); s != "" {
		var err error
		if after, err = time.Parse(time.RFC3339Nano, s); err != nil {
			http.Error(w, "bad ?after=: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	ss := c.t.Sampler.Samples(after, time.Now().Add(time.Hour))
	for len(ss) > 0 && !ss[0].Time.After(after) {
		ss = ss[1:]
	}
	s := report.Samples{Samples: ss}
	if after.IsZero() {
		s.PauseBuckets = c.t.Sampler.PauseBuckets()
	}
	reply(w, s)
}

func (c *targetControl) phase(w http.ResponseWriter, r *http.Request) {
	var p CtlPhase
	if decode(w, r, &p) {
		c.t.SetPhase(p.Name)
		reply(w, nil)
	}
}

// inject changes the planted regression (Server.SetInject).
func (c *targetControl) inject(w http.ResponseWriter, r *http.Request) {
	var in config.InjectConfig
	if !decode(w, r, &in) {
		return
	}
	if err := c.t.SetInject(in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	reply(w, nil)
}

func (c *targetControl) baseline(w http.ResponseWriter, r *http.Request) {
	reply(w, c.t.Baseline())
}

func (c *targetControl) settle(w http.ResponseWriter, r *http.Request) {
	var s CtlSettle
	if !decode(w, r, &s) {
		return
	}
	a, err := c.t.Settle(r.Context(), Rest{Goroutines: s.BaselineGoroutines, HeapLiveBytes: s.BaselineHeapLiveBytes}, s.Duration)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	reply(w, a)
}

// profilePath checks a path the orchestrator asks a profile to be written
// to: absolute, and named as a capture is (.pb.gz, .txt), so a token
// holder cannot have the target overwrite just any file.
func profilePath(w http.ResponseWriter, p string) bool {
	if !filepath.IsAbs(p) || !(strings.HasSuffix(p, ".pb.gz") || strings.HasSuffix(p, ".txt")) {
		http.Error(w, fmt.Sprintf("%q is not an absolute path to a .pb.gz or .txt profile", p), http.StatusBadRequest)
		return false
	}
	return true
}

// write answers a request to write a profile to a path of the run
// directory with f.
func (c *targetControl) write(f func(string) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var p CtlPath
		if !decode(w, r, &p) || !profilePath(w, p.Path) {
			return
		}
		if err := f(p.Path); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		reply(w, nil)
	}
}

func (c *targetControl) cpuStart(w http.ResponseWriter, r *http.Request) {
	var p CtlPath
	if !decode(w, r, &p) || !profilePath(w, p.Path) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cpu != nil {
		http.Error(w, profiles.ErrCPUProfilerBusy.Error(), http.StatusConflict)
		return
	}
	prof, err := profiles.StartCPUProfile(p.Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	c.cpu = prof
	reply(w, nil)
}

func (c *targetControl) cpuStop(w http.ResponseWriter, _ *http.Request) {
	c.mu.Lock()
	prof := c.cpu
	c.cpu = nil
	c.mu.Unlock()
	if prof == nil {
		http.Error(w, "no cpu profile is running", http.StatusConflict)
		return
	}
	if err := prof.Stop(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	reply(w, nil)
}

func (c *targetControl) metrics(w http.ResponseWriter, r *http.Request) {
	var m CtlMetrics
	if !decode(w, r, &m) {
		return
	}
	tm := c.t.Metrics
	switch m.Op {
	case OpPhaseStarted:
		tm.PhaseStarted(m.Run, m.Phase, m.Arm)
	case OpPhaseEnded:
		tm.PhaseEnded()
	case OpDriverProgress:
		if m.Progress == nil {
			http.Error(w, "driver_progress without progress", http.StatusBadRequest)
			return
		}
		tm.DriverProgress(m.Phase, m.Arm, *m.Progress)
	case OpDriverResult:
		if m.Result == nil {
			http.Error(w, "driver_result without result", http.StatusBadRequest)
			return
		}
		tm.DriverResult(*m.Result)
	case OpKPIResults:
		tm.KPIResults(m.KPIs)
	case OpCheckResults:
		tm.CheckResults(m.Checks)
	case OpRunVerdict:
		tm.RunVerdict(m.Verdict)
	default:
		http.Error(w, fmt.Sprintf("unknown metrics operation %q", m.Op), http.StatusBadRequest)
		return
	}
	reply(w, nil)
}

func (c *targetControl) pin(w http.ResponseWriter, r *http.Request) {
	var p CtlCPUs
	if !decode(w, r, &p) {
		return
	}
	if err := pin.Process(p.CPUs); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	reply(w, nil)
}

// relational answers the relational scenario's tally by endpoint (409
// when the target does not serve the scenario).
func (c *targetControl) relational(w http.ResponseWriter, r *http.Request) {
	tot, err := c.t.RelationalTotals(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	reply(w, tot)
}

func (c *targetControl) affinity(w http.ResponseWriter, _ *http.Request) {
	cpus, uniform, err := pin.Affinity()
	a := CtlAffinity{CPUs: cpus, Uniform: uniform}
	if err != nil {
		a.Error = err.Error()
	}
	reply(w, a)
}
