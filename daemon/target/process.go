package target

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/builtin"
	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/childlog"
	"github.com/soakd/soakd/internal/failsig"
	"github.com/soakd/soakd/internal/jsonhttp"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/metrics"
	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

// processTarget is the built-in target run as a process of its own: soakd
// starts `soakd target` as its child and drives it over the child's
// control surface (targetControl), so the heap measured holds the server
// and nothing of the orchestrator (reports, history, the control API,
// logging, driver results). Every Target method does in the child what
// *Target does in process: the sampler, forced GCs, settling, profiles
// and soakd's series all live there; the samples are mirrored here for
// the report.
type processTarget struct {
	log    *zap.Logger
	proc   *commandProc
	relay  *childlog.Lines
	ready  builtin.TargetReady
	token  string
	client *http.Client
	grace  time.Duration
	failed *failsig.Signal
	stop   context.CancelFunc
	wg     sync.WaitGroup
	m      *remoteMetrics
	// scenario is target.scenario, what the child serves.
	scenario string

	// What launch starts a child from: its configuration (YAML), the
	// soakd binary, where its output goes and how long it may take.
	yml          []byte
	exe, logDir  string
	readyTimeout time.Duration

	// mu guards the mirror of the children's samples and renewedAt.
	mu         sync.Mutex
	buckets    []float64
	mirror     []profiles.Sample
	maxSamples int
	// renewedAt is when the latest Renew stopped the previous child
	// (zero before any): readings before it are another process's.
	renewedAt time.Time
}

var (
	_ Target     = (*processTarget)(nil)
	_ Injectable = (*processTarget)(nil)
)

// controlTimeout bounds one control request (settle adds its own wait).
const controlTimeout = 30 * time.Second

// startProcessTarget starts `exe target` with cfg (written to a temporary
// file the child reads at once), its output kept in logDir and its log
// relayed through log, and waits for its ready line.
func startProcessTarget(ctx context.Context, cfg *config.Config, exe, logDir string, log *zap.Logger) (*processTarget, error) {
	yml, err := config.EffectiveYAML(cfg)
	if err != nil {
		return nil, err
	}
	t := &processTarget{
		log: log.Named("target"), token: builtin.RandomToken(), failed: failsig.New(), scenario: cfg.Target.Scenario,
		grace:      cfg.Server.ShutdownGrace + 5*time.Second,
		maxSamples: cmpOrInt(cfg.Sampler.MaxSamples, profiles.DefaultMaxSamples),
		client: &http.Client{Transport: &http.Transport{
			// One connection, kept open: the child's goroutine count
			// (judged against its baseline) sees the same control
			// connection before and after each phase.
			MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, IdleConnTimeout: 0,
			DisableCompression: true,
		}},
		yml: yml, exe: exe, logDir: logDir, readyTimeout: cfg.Target.ReadyTimeout,
	}
	t.m = &remoteMetrics{t: t}
	t.relay = &childlog.Lines{Log: log.With(zap.String("source", "target")), What: "target output"}
	if err := t.launch(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// launch starts a child from t's configuration, waits for its ready line,
// reads the samples it took so far into the mirror and watches for its
// exit.
func (t *processTarget) launch(ctx context.Context) error {
	f, err := os.CreateTemp("", "soakd-target-*.yaml")
	if err != nil {
		return fmt.Errorf("cannot pass the configuration to the target process: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(t.yml); err != nil {
		f.Close()
		return fmt.Errorf("cannot pass the configuration to the target process: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cannot pass the configuration to the target process: %w", err)
	}
	tap := &firstLine{ch: make(chan string, 1)}
	argv := []string{t.exe, "target", "--config", f.Name(), "--log-format", "json"}
	// The child pushes its own profiles (it keeps the Pyroscope password
	// variable) and needs the relational scenario's DSN; the control API
	// token is no business of it.
	env := commandEnv(os.Environ(), map[string]string{config.TargetTokenEnv: t.token}, []string{config.TokenEnv})
	t.proc, err = startProcess(procSpec{argv: argv, env: env, what: "the target process (soakd target)", logDir: t.logDir,
		stdout: tap, stderr: t.relay, logsOptional: true}, t.log)
	if err != nil {
		return err
	}
	t.log.Info("target process started", zap.Int("pid", t.proc.pid()), zap.String("stdout", t.proc.logPath(0)), zap.String("stderr", t.proc.logPath(1)))
	if err := t.awaitReady(ctx, tap, t.readyTimeout); err != nil {
		t.stopProcess()
		return err
	}
	var s report.Samples
	if err := t.call(ctx, http.MethodGet, "samples", nil, &s); err != nil {
		t.stopProcess()
		return fmt.Errorf("the target process does not answer on its control surface: %w", err)
	}
	t.mu.Lock()
	t.buckets = s.PauseBuckets
	t.mirror = append(t.mirror, s.Samples...)
	t.mu.Unlock()
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	t.stop = stop
	proc := t.proc
	t.wg.Go(func() {
		select {
		case <-proc.exited:
			if !proc.stopping.Load() {
				t.failed.Set(proc.exitError())
			}
		case <-wctx.Done():
		}
	})
	t.log.Info("target ready", zap.Int("pid", t.ready.PID), zap.String("url", t.ready.URL))
	return nil
}

// CanRenew is true: soakd starts the child.
func (t *processTarget) CanRenew() bool { return true }

// Renew replaces the child by a fresh `soakd target` of the same
// configuration: the samples mirrored so far stay (the new child's
// follow them, its cumulative counters starting again from zero), and its
// CPU readings are the new child's alone.
func (t *processTarget) Renew(ctx context.Context) error {
	t.refresh()
	if t.stop != nil {
		t.stop()
	}
	t.wg.Wait()
	if err := t.proc.stop(ctx, t.grace); err != nil {
		return fmt.Errorf("cannot stop the target process (pid %d) to start a fresh one: %w", t.ready.PID, err)
	}
	t.client.CloseIdleConnections()
	t.mu.Lock()
	t.renewedAt = time.Now()
	t.mu.Unlock()
	if err := t.launch(ctx); err != nil {
		return fmt.Errorf("cannot start a fresh target process: %w", err)
	}
	return nil
}

func cmpOrInt(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// awaitReady waits for the child's ready line (TargetReady).
func (t *processTarget) awaitReady(ctx context.Context, tap *firstLine, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	select {
	case line := <-tap.ch:
		if err := json.Unmarshal([]byte(line), &t.ready); err != nil || t.ready.URL == "" || t.ready.ControlURL == "" {
			return fmt.Errorf("the target process (pid %d) printed %q, not its ready line", t.proc.pid(), line)
		}
		if t.ready.PID != t.proc.pid() {
			return fmt.Errorf("the target process (pid %d) says it is pid %d", t.proc.pid(), t.ready.PID)
		}
		return nil
	case <-t.proc.exited:
		return fmt.Errorf("the target process exited before it served: %w", t.proc.exitError())
	case <-ctx.Done():
		return fmt.Errorf("stopped waiting for the target to get ready: %w", ctx.Err())
	case <-deadline.C:
		return fmt.Errorf("the target process (pid %d) did not serve within target.ready_timeout %s%s", t.proc.pid(), timeout, t.proc.stderr.Context())
	}
}

// stopProcess stops a child that failed to get ready.
func (t *processTarget) stopProcess() {
	if err := t.proc.stop(context.Background(), t.grace); err != nil {
		t.log.Warn("target stop", zap.Error(err))
	}
	t.relay.Flush()
}

// firstLine passes on the first line written to it and ignores the rest;
// it never fails a write, so the output's other writers see everything.
type firstLine struct {
	mu   sync.Mutex
	buf  []byte
	done bool
	ch   chan string
}

func (f *firstLine) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return len(p), nil
	}
	f.buf = append(f.buf, p...)
	if i := bytes.IndexByte(f.buf, '\n'); i >= 0 {
		f.done = true
		f.ch <- string(f.buf[:i])
		f.buf = nil
	} else if len(f.buf) > 64<<10 {
		f.done = true
		f.ch <- string(f.buf[:256])
		f.buf = nil
	}
	return len(p), nil
}

// call makes one control request: in (when not nil) as the JSON body,
// the JSON answer into out (when not nil). A request that fails because
// the child died says so, with its exit status.
func (t *processTarget) call(ctx context.Context, method, path string, in, out any) error {
	select {
	case <-t.proc.exited:
		return t.proc.exitError()
	default:
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, controlTimeout)
		defer cancel()
	}
	c := jsonhttp.Client{BaseURL: t.ready.ControlURL, Token: t.token, HTTP: t.client}
	err := c.Do(ctx, method, builtin.ControlPrefix+path, in, out)
	if err == nil {
		return nil
	}
	if _, transport := errors.AsType[*url.Error](err); transport && ctx.Err() == nil {
		// The child's sockets close as it dies, a moment before Wait
		// returns its status.
		select {
		case <-t.proc.exited:
			return t.proc.exitError()
		case <-time.After(2 * time.Second):
		}
	}
	return fmt.Errorf("control %s: %w", path, err)
}

// refresh adds the child's samples taken since the last one mirrored,
// keeping at most maxSamples (the child's ring size). It is a no-op once
// the child is gone: the mirror keeps what it had.
func (t *processTarget) refresh() {
	t.mu.Lock()
	defer t.mu.Unlock()
	q := ""
	if n := len(t.mirror); n > 0 {
		q = "?after=" + url.QueryEscape(t.mirror[n-1].Time.Format(time.RFC3339Nano))
	}
	var s report.Samples
	if err := t.call(context.Background(), http.MethodGet, "samples"+q, nil, &s); err != nil {
		if t.failed.Err() == nil {
			t.log.Warn("cannot read the target's samples", zap.Error(err))
		}
		return
	}
	t.mirror = append(t.mirror, s.Samples...)
	if over := len(t.mirror) - t.maxSamples; over > 0 {
		t.mirror = slices.Delete(t.mirror, 0, over)
	}
}

// Samples returns the mirrored samples whose Time is in [from, to]: the
// sampleSource the summaries read.
func (t *processTarget) Samples(from, to time.Time) []profiles.Sample {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []profiles.Sample
	for _, s := range t.mirror {
		if !s.Time.Before(from) && !s.Time.After(to) {
			out = append(out, s)
		}
	}
	return out
}

// PauseBuckets are the child's pause histogram boundaries.
func (t *processTarget) PauseBuckets() []float64 { return slices.Clone(t.buckets) }

// Info describes the built-in target in its own process.
func (t *processTarget) Info() report.TargetInfo {
	u := t.ready.URL
	info := report.TargetInfo{
		Kind: report.TargetBuiltin, PID: t.ready.PID, Scenario: t.scenario,
		GraphQLURL: u + "/graphql", GraphQLWSURL: "ws" + u[len("http"):] + "/graphql", RESTURL: u,
		Runtime: "go", RuntimeBasis: "the built-in target, run by soakd as a process of its own (soakd target)",
		Figures: builtinFigures(t.ready.PID),
	}
	if !t.proc.stopping.Load() {
		info.Exit = t.proc.exitStatus() // it died on its own
	}
	return info
}

// Done is closed when the child exits on its own.
func (t *processTarget) Done() <-chan struct{} { return t.failed.Done() }

// Err says how the child ended; nil while it serves.
func (t *processTarget) Err() error { return t.failed.Err() }

// Shutdown stops the child: SIGTERM (it shuts its server down within
// server.shutdown_grace), then SIGKILL.
func (t *processTarget) Shutdown(ctx context.Context) error {
	if t.stop != nil {
		t.stop()
	}
	t.wg.Wait()
	err := t.proc.stop(ctx, t.grace)
	t.relay.Flush()
	t.client.CloseIdleConnections()
	return err
}

func (t *processTarget) DriverArgs() []string    { return []string{"--target", t.ready.URL} }
func (t *processTarget) RunMetrics() MetricsSink { return t.m }

// SeparateProcess is true: the child is not the orchestrator.
func (t *processTarget) SeparateProcess() bool { return true }

// Notes say the target runs as a process of its own.
func (t *processTarget) Notes() []string {
	return []string{fmt.Sprintf("The built-in target runs as a process of its own (soakd target, pid %d), the child of the orchestrating soakd (pid %d): "+
		"soakd's reports, logs, history and decoding of the drivers' results are not in the measured heap, GC or CPU.", t.ready.PID, os.Getpid())}
}

// SetPhase marks the child's samples from now on as the phase's.
func (t *processTarget) SetPhase(name string) {
	if err := t.call(context.Background(), http.MethodPost, "phase", builtin.CtlPhase{Name: name}, nil); err != nil && t.failed.Err() == nil {
		t.log.Warn("cannot set the target's phase", zap.Error(err))
	}
}

// SetInject changes the child's planted regression through its control
// channel; the child refuses what cannot change while it runs (the leak).
func (t *processTarget) SetInject(ctx context.Context, c config.InjectConfig) error {
	return t.call(ctx, http.MethodPost, "inject", c, nil)
}

// Baseline forces GCs in the child and returns its state.
func (t *processTarget) Baseline(ctx context.Context) RestState {
	var r builtin.Rest
	if err := t.call(ctx, http.MethodPost, "baseline", nil, &r); err != nil {
		why := "the target process did not answer: " + err.Error()
		return RestState{GoroutinesWhy: why, HeapLiveWhy: why}
	}
	return RestState{Goroutines: r.Goroutines, HeapLive: r.HeapLiveBytes}
}

// Settle runs the Settle period in the child (Settle), so it watches and
// forces GCs exactly as in process.
func (t *processTarget) Settle(ctx context.Context, base RestState, d time.Duration) (report.After, error) {
	a := report.After{BaselineGoroutines: base.Goroutines, BaselineHeapLiveBytes: base.HeapLive, ReturnedAfterSeconds: -1}
	cctx, cancel := context.WithTimeout(ctx, d+controlTimeout)
	defer cancel()
	err := t.call(cctx, http.MethodPost, "settle", builtin.CtlSettle{BaselineGoroutines: base.Goroutines, BaselineHeapLiveBytes: base.HeapLive, Duration: d}, &a)
	if err != nil {
		if ctx.Err() != nil {
			return a, ctx.Err()
		}
		return a, err
	}
	return a, nil
}

func (t *processTarget) Phase(res workloads.Result, cores int) report.Phase {
	t.refresh()
	return newPhase(t, res, cores)
}

func (t *processTarget) MemoryData(p report.Phase) MemoryData {
	t.refresh()
	ss := t.Samples(p.SteadyStart, p.SteadyEnd)
	return MemoryData{Alloc: ss, Heap: ss}
}

// CPUReadings are the current child's readings between from and to: a
// renewed target's earlier children had counters of their own.
func (t *processTarget) CPUReadings(from, to time.Time) []CPUReading {
	t.refresh()
	t.mu.Lock()
	from = latest(from, t.renewedAt)
	t.mu.Unlock()
	return cpuReadingsOf(t.Samples(from, to))
}

// latest is the later of a and b.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (t *processTarget) SamplesSince(from time.Time) *report.Samples {
	t.refresh()
	return &report.Samples{PauseBuckets: t.PauseBuckets(), Samples: t.Samples(from, time.Now().Add(time.Hour))}
}

// Captures has the child write its profiles into the run directory.
// The child is local and answers at once; its captures are taken even
// after the run was cancelled, for the partial report.
func (t *processTarget) Captures(context.Context) Captures {
	write := func(what string) func(string) error {
		return func(path string) error {
			return t.call(context.Background(), http.MethodPost, what, builtin.CtlPath{Path: absPath(path)}, nil)
		}
	}
	return Captures{
		Heap:       write("heap"),
		Goroutines: write("goroutines"),
		StartCPU: func(path string) (CPUProfiler, error) {
			if err := t.call(context.Background(), http.MethodPost, "cpu/start", builtin.CtlPath{Path: absPath(path)}, nil); err != nil {
				return nil, err
			}
			return remoteCPU{t}, nil
		},
	}
}

// remoteCPU is a CPU profile running in the child.
type remoteCPU struct{ t *processTarget }

func (c remoteCPU) Stop() error {
	return c.t.call(context.Background(), http.MethodPost, "cpu/stop", nil, nil)
}

// absPath makes p absolute, for the child (which has soakd's working
// directory, but need not keep it).
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// PinCPUs pins the child to cpus.
func (t *processTarget) PinCPUs(cpus []int) error {
	return t.call(context.Background(), http.MethodPost, "pin", builtin.CtlCPUs{CPUs: cpus}, nil)
}

// Affinity reads back the child's CPUs.
func (t *processTarget) Affinity() ([]int, bool, error) {
	var a builtin.CtlAffinity
	if err := t.call(context.Background(), http.MethodGet, "affinity", nil, &a); err != nil {
		return nil, false, err
	}
	if a.Error != "" {
		return a.CPUs, a.Uniform, errors.New(a.Error)
	}
	return a.CPUs, a.Uniform, nil
}

// remoteMetrics sets soakd's series on the child's registry, so its
// /metrics carries them under the same names as in process.
type remoteMetrics struct{ t *processTarget }

func (m *remoteMetrics) send(c builtin.CtlMetrics) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.t.call(ctx, http.MethodPost, "metrics", c, nil); err != nil && m.t.failed.Err() == nil {
		m.t.log.Warn("cannot set the target's metrics", zap.String("op", c.Op), zap.Error(err))
	}
}

func (m *remoteMetrics) PhaseStarted(run, phase, arm string) {
	m.send(builtin.CtlMetrics{Op: builtin.OpPhaseStarted, Run: run, Phase: phase, Arm: arm})
}
func (m *remoteMetrics) PhaseEnded() { m.send(builtin.CtlMetrics{Op: builtin.OpPhaseEnded}) }
func (m *remoteMetrics) DriverProgress(phase, arm string, p metrics.DriverProgress) {
	m.send(builtin.CtlMetrics{Op: builtin.OpDriverProgress, Phase: phase, Arm: arm, Progress: &p})
}

// DriverResult sends only what metrics.DriverResult reads of res.
func (m *remoteMetrics) DriverResult(res workloads.Result) {
	r := workloads.Result{Phase: res.Phase, Arm: res.Arm, Requests: res.Requests, Errors: res.Errors,
		ErrorsByClass: res.ErrorsByClass, LatencyMs: res.LatencyMs}
	if o := res.Open; o != nil {
		r.Open = &workloads.OpenResult{Dropped: o.Dropped}
	}
	if s := res.Subscriptions; s != nil {
		r.Subscriptions = &workloads.SubscriptionResult{Expected: s.Expected, Received: s.Received, Lost: s.Lost, Duplicated: s.Duplicated}
	}
	if ml := res.MaxLoad; ml != nil {
		r.MaxLoad = &workloads.MaxLoadResult{Failed: ml.Failed, UsersAtFailure: ml.UsersAtFailure,
			PeakThroughputRPS: ml.PeakThroughputRPS, PeakUsers: ml.PeakUsers, PeakWindowStart: ml.PeakWindowStart, PeakWindowEnd: ml.PeakWindowEnd}
	}
	m.send(builtin.CtlMetrics{Op: builtin.OpDriverResult, Result: &r})
}
func (m *remoteMetrics) KPIResults(rows []kpi.Result) {
	m.send(builtin.CtlMetrics{Op: builtin.OpKPIResults, KPIs: rows})
}
func (m *remoteMetrics) CheckResults(checks []metrics.CheckOutcome) {
	m.send(builtin.CtlMetrics{Op: builtin.OpCheckResults, Checks: checks})
}
func (m *remoteMetrics) RunVerdict(verdict kpi.Outcome) {
	m.send(builtin.CtlMetrics{Op: builtin.OpRunVerdict, Verdict: verdict})
}

// RelationalTotals asks the target process for its relational tally.
func (t *processTarget) RelationalTotals(ctx context.Context) (map[string]relational.Totals, error) {
	var tot map[string]relational.Totals
	if err := t.call(ctx, http.MethodGet, "relational", nil, &tot); err != nil {
		return nil, err
	}
	return tot, nil
}
