package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/builtin"
	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/extsample"
	"github.com/soakd/soakd/internal/failsig"
	"github.com/soakd/soakd/internal/fsutil"
	"github.com/soakd/soakd/internal/guard"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/metrics"
	"github.com/soakd/soakd/internal/nofollow"
	"github.com/soakd/soakd/internal/proctree"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

// External is a server soakd does not host: attached to by PID, or
// started from a command (and stopped at the end). It is sampled from
// outside (extsample): the OS's view of its process by PID, its runtime's
// figures scraped from its Prometheus endpoint. soakd cannot force its GC
// nor profile it in process.
type External struct {
	cfg     config.TargetConfig
	pid     int
	ep      workloads.Endpoints
	sampler ringSampler
	// replicas is the service's replica set (kind kubernetes; then also
	// sampler, and pid is 0); nil for a process.
	replicas *replicaSet
	interval time.Duration
	m        *metrics.Metrics
	log      *zap.Logger
	failed   *failsig.Signal
	proc     *commandProc // kind command; nil for attach
	// givenPID is the process soakd was given or started; pid is the one
	// it samples (with the processes under it): the holder of the socket
	// gql listens on, when local.
	givenPID      int
	local         bool
	gql           socketOf
	verified      bool // the holder of gql's socket was seen and is pid
	processes     []report.ProcessInfo
	listenerCheck string
	stop          context.CancelFunc
	wg            sync.WaitGroup
	// What a command target is started again from (Renew): the soakd
	// binary, the directories of its output and of the guard's records,
	// the secrets kept from its environment, and the sampler's settings.
	exe, logDir, recordDir string
	secrets                []string
	sampling               config.SamplerConfig
	// mu guards past: the samples of the processes Renew replaced.
	mu   sync.Mutex
	past []extsample.Sample
}

var _ Target = (*External)(nil)

// ringSampler takes an external target's samples and keeps them:
// *extsample.Sampler for a process, *replicaSet for a service's replicas.
type ringSampler interface {
	SampleNow(ctx context.Context) (extsample.Sample, error)
	Samples(from, to time.Time) []extsample.Sample
	Last() (extsample.Sample, bool)
}

// openExternal opens a target soakd does not host: for attach, the
// process named by target.pid or target.pid_file; for command, a process it
// starts (its output kept in logDir) and waits for until target.ready_url
// answers.
func openExternal(ctx context.Context, cfg *config.Config, exe, logDir string, log *zap.Logger) (Target, error) {
	tc := cfg.Target
	ep := workloads.Endpoints{GraphQL: tc.GraphQLURL, GraphQLWS: tc.GraphQLWSURL, REST: tc.RESTURL}
	ws, err := ep.WebsocketURL()
	if err != nil {
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("target: %w", err))
	}
	ep.GraphQLWS = ws
	t := &External{cfg: tc, ep: ep, interval: cfg.Sampler.Interval, log: log.Named("target"), failed: failsig.New(),
		m: metrics.New(prometheus.NewRegistry())}
	if tc.Kind == report.TargetKubernetes {
		return t.openReplicas(ctx, cfg)
	}
	gql, err := socketFor(ctx, tc.GraphQLURL)
	t.local = err == nil
	if err != nil && !errors.Is(err, errNotLocal) {
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("target.graphql_url: %w", err))
	}
	var given int
	switch tc.Kind {
	case report.TargetAttach:
		if given, err = attachPID(tc); err != nil {
			return nil, exitcode.With(exitcode.Usage, err)
		}
		if err := awaitAttached(ctx, tc, gql, given); err != nil {
			return nil, err
		}
	case report.TargetCommand:
		t.recordDir = filepath.Join(cfg.DataDir, guard.RecordDir)
		t.exe, t.logDir, t.secrets = exe, logDir, cfg.SecretEnvs()
		swept, err := guard.Sweep(t.recordDir)
		if err != nil {
			t.log.Warn("cannot clean up after a soakd that died", zap.Error(err))
		}
		for _, s := range swept {
			t.log.Warn("cleaned up after a soakd that died", zap.String("detail", s))
		}
		if given, err = t.startCommand(ctx, gql); err != nil {
			return nil, err
		}
	default:
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("target.kind %q is not a target soakd does not host", tc.Kind))
	}
	t.sampling = cfg.Sampler
	if err := t.track(ctx, gql, given); err != nil {
		return nil, err
	}
	return t, nil
}

// startCommand starts target.argv, once the GraphQL URL's port (when it
// is this machine's) is seen free, and returns the PID of its process.
func (t *External) startCommand(ctx context.Context, gql socketOf) (int, error) {
	if t.local {
		holder, err := portInUse(proctree.DefaultRoot, gql)
		if err != nil {
			return 0, fmt.Errorf("cannot check that %s is free before starting the target: %w", gql.what, err)
		}
		if holder != "" {
			return 0, exitcode.With(exitcode.Usage, fmt.Errorf(
				"target.graphql_url: %s is already served by %s before soakd started target.argv: stop that process (or point target.graphql_url at another port); "+
					"soakd would drive load at it while measuring the process it starts", gql.what, holder))
		}
	}
	var err error
	if t.proc, err = startCommand(ctx, t.cfg, t.exe, t.logDir, t.recordDir, t.secrets, t.log); err != nil {
		return 0, err
	}
	return t.proc.mainPID(), nil
}

// track finds the process that serves gql under the given one (when local)
// and starts sampling it; a command's process is stopped when it cannot.
func (t *External) track(ctx context.Context, gql socketOf, given int) error {
	tc := t.cfg
	t.gql = gql
	t.pid, t.givenPID = given, given
	if !t.local {
		t.listenerCheck = fmt.Sprintf("not checked: %s is not an address of this machine, so soakd cannot see which process serves it; the OS figures are of pid %d", gql.what, given)
	} else {
		who := "target.pid " + strconv.Itoa(given)
		if t.proc != nil {
			who = "the target command's process"
		}
		l, tree, check, err := locateServer(proctree.DefaultRoot, gql, given, who)
		if err != nil {
			t.stopProcess()
			return exitcode.With(exitcode.Usage, fmt.Errorf("target: %w", err))
		}
		t.pid, t.processes, t.gql, t.listenerCheck = l.Root, tree, gql, check
		if l.Note != "" {
			t.log.Warn("the measured process is not the one given", zap.String("detail", l.Note))
		}
		t.verified = len(l.Holders) > 0
	}
	rt := extsample.RuntimeUnknown
	if tc.Runtime != "auto" {
		rt = extsample.Runtime(tc.Runtime)
	}
	proc, err := extsample.New(ctx, extsample.Options{
		PID: int32(t.pid), Tree: true, Endpoint: tc.MetricsURL, Runtime: rt, Interval: t.sampling.Interval,
		// A scrape may take longer than a short interval on a loaded
		// machine; the next tick then waits for it.
		Timeout:    min(max(t.sampling.Interval, 500*time.Millisecond), extsample.DefaultTimeout),
		MaxSamples: min(t.sampling.MaxSamples, extsample.MaxMaxSamples),
	})
	if err != nil {
		t.stopProcess()
		if errors.Is(err, extsample.ErrExited) && tc.Kind == report.TargetAttach {
			return exitcode.With(exitcode.Usage, fmt.Errorf("target.pid: cannot attach: %w", err))
		}
		return fmt.Errorf("cannot sample the target: %w", err)
	}
	t.sampler = proc
	if s, err := proc.SampleNow(ctx); err != nil {
		if errors.Is(err, extsample.ErrExited) {
			t.stopProcess()
			return fmt.Errorf("the target process %d exited before the run started: %w", t.pid, t.exitErr(err))
		}
		t.log.Warn("the first sample of the target is incomplete: the figures it lacks are not measured", zap.String("error", s.Error))
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	t.stop = stop
	cmdProc := t.proc
	t.wg.Go(func() {
		err := proc.Run(sctx)
		if err == nil || !errors.Is(err, extsample.ErrExited) || (cmdProc != nil && cmdProc.stopping.Load()) {
			return
		}
		t.failed.Set(t.exitErr(err))
	})
	if cmdProc != nil {
		t.wg.Go(func() {
			select {
			case <-cmdProc.exited:
				if !cmdProc.stopping.Load() {
					t.failed.Set(cmdProc.exitError())
				}
			case <-sctx.Done():
			}
		})
	}
	t.log.Info("target opened", zap.String("kind", tc.Kind), zap.Int("pid", t.pid), zap.String("graphql", t.ep.GraphQL),
		zap.String("rest", t.ep.REST), zap.String("metrics", tc.MetricsURL))
	return nil
}

// CanRenew is true for a command target, which soakd started.
func (t *External) CanRenew() bool { return t.proc != nil && t.replicas == nil }

// Renew stops a command target's process and starts target.argv again,
// waiting for target.ready_url as at the start. The samples taken so far
// stay (SamplesSince); every other figure is the new process's. An
// attached process or a service's replicas are not soakd's to restart.
func (t *External) Renew(ctx context.Context) error {
	if !t.CanRenew() {
		return fmt.Errorf("target.kind %s: soakd did not start the target, so it cannot start it afresh", t.cfg.Kind)
	}
	if t.stop != nil {
		t.stop()
	}
	t.wg.Wait()
	t.mu.Lock()
	t.past = append(t.past, t.sampler.Samples(time.Time{}, time.Now().Add(time.Hour))...)
	if over := len(t.past) - max(t.sampling.MaxSamples, 1); over > 0 {
		t.past = slices.Delete(t.past, 0, over)
	}
	t.mu.Unlock()
	old := t.pid
	if err := t.proc.stop(ctx, t.cfg.StopGrace); err != nil {
		return fmt.Errorf("cannot stop the target command (pid %d) to start it afresh: %w", old, err)
	}
	given, err := t.startCommand(ctx, t.gql)
	if err != nil {
		return fmt.Errorf("cannot start the target command afresh: %w", err)
	}
	return t.track(ctx, t.gql, given)
}

// allSamples are the samples of every process this target has had, in
// time order, whose Time is in [from, to].
func (t *External) allSamples(from, to time.Time) []extsample.Sample {
	t.mu.Lock()
	var out []extsample.Sample
	for _, s := range t.past {
		if !s.Time.Before(from) && !s.Time.After(to) {
			out = append(out, s)
		}
	}
	t.mu.Unlock()
	return append(out, t.sampler.Samples(from, to)...)
}

// exitErr says why the target process is gone: for a command, its exit
// status and the tail of its standard error; for an attached process, that
// it disappeared.
func (t *External) exitErr(err error) error {
	if t.proc != nil {
		// The process is soakd's child: its exit status comes with Wait,
		// which the exit just seen is about to return.
		select {
		case <-t.proc.exited:
			return t.proc.exitError()
		case <-time.After(2 * time.Second):
		}
		return fmt.Errorf("the target command (pid %d) is gone: %w%s", t.pid, err, t.proc.stderr.Context())
	}
	return fmt.Errorf("the attached target process %d disappeared (%w); soakd never stops an attached process, so something else ended it", t.pid, err)
}

// attachPID returns the PID target.pid names, or reads it from
// target.pid_file.
func attachPID(tc config.TargetConfig) (int, error) {
	if tc.PIDFile == "" {
		return tc.PID, nil
	}
	// A regular file only: a FIFO blocked soakd in open(2) for ever.
	b, err := config.ReadRegular(tc.PIDFile, config.MaxPIDFileBytes)
	if err != nil {
		return 0, fmt.Errorf("target.pid_file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("target.pid_file %s does not hold a process id (got %q)", tc.PIDFile, strings.TrimSpace(string(b)))
	}
	if pid == os.Getpid() {
		return 0, fmt.Errorf("target.pid_file %s names soakd itself (pid %d)", tc.PIDFile, pid)
	}
	return pid, nil
}

// Info describes the target and where each of its figures comes from.
func (t *External) Info() report.TargetInfo {
	info := report.TargetInfo{
		Kind: t.cfg.Kind, PID: t.pid, GraphQLURL: t.ep.GraphQL, GraphQLWSURL: t.ep.GraphQLWS, RESTURL: t.ep.REST,
		MetricsURL: t.cfg.MetricsURL, PprofURL: t.cfg.PprofURL,
		Processes: t.processes, ListenerCheck: t.listenerCheck,
	}
	if t.givenPID != t.pid {
		info.GivenPID = t.givenPID
	}
	if t.cfg.Runtime != "auto" {
		info.Runtime, info.RuntimeBasis = t.cfg.Runtime, "set in target.runtime"
	}
	if t.proc != nil {
		info.Argv = slices.Clone(t.cfg.Argv)
		info.Exit = t.proc.exitStatus()
	}
	if t.replicas != nil {
		info.PID, info.Processes = 0, nil
		t.replicaInfo(&info)
	}
	if t.sampler == nil {
		return info
	}
	all := t.sampler.Samples(time.Time{}, time.Now().Add(time.Hour))
	if len(all) == 0 {
		return info
	}
	last := all[len(all)-1]
	if rt := last.Runtime.Runtime; rt != extsample.RuntimeUnknown {
		info.Runtime, info.RuntimeBasis = string(rt), last.Runtime.RuntimeBasis
	}
	cores := runtime.NumCPU()
	if t.replicas != nil {
		cores = 1 // no machine: the share of the replicas' limits is per phase (shareOfLimits)
	}
	info.Figures = figureSources(all, cores)
	return info
}

// Done is closed when the target process is gone.
func (t *External) Done() <-chan struct{} { return t.failed.Done() }

// Err says why the target stopped; nil while it runs.
func (t *External) Err() error { return t.failed.Err() }

// Shutdown stops sampling and, for a command, stops the process (SIGTERM,
// target.stop_grace, SIGKILL). An attached process is left running.
func (t *External) Shutdown(ctx context.Context) error {
	if t.stop != nil {
		t.stop()
	}
	t.wg.Wait()
	if t.proc != nil {
		return t.proc.stop(ctx, t.cfg.StopGrace)
	}
	return nil
}

// stopProcess stops a command target that failed to open.
func (t *External) stopProcess() {
	if t.proc != nil {
		if err := t.proc.stop(context.Background(), t.cfg.StopGrace); err != nil {
			t.log.Warn("target stop", zap.Error(err))
		}
	}
}

func (t *External) DriverArgs() []string {
	args := []string{"--graphql-url", t.ep.GraphQL, "--graphql-ws-url", t.ep.GraphQLWS}
	if t.ep.REST != "" { // none without a REST twin: its GraphQL-only phases need none
		args = append(args, "--rest-url", t.ep.REST)
	}
	return args
}

func (t *External) RunMetrics() MetricsSink { return t.m }

// Notes: the run describes a target soakd does not host from its Info
// (externalNotes), so it adds none of its own.
func (t *External) Notes() []string { return nil }

// SetPhase checks that the sampled process still serves the GraphQL URL
// and takes a sample at the phase's edge, as the built-in sampler does, so
// a phase's first sample is at its start. A server that another process
// now serves (restarted by a supervisor, replaced by a leftover copy) fails
// the target: every figure from then on would be of the wrong process.
func (t *External) SetPhase(name string) {
	if err := t.checkListener(); err != nil {
		t.failed.Set(fmt.Errorf("before phase %s: %w", name, err))
	}
	_, _ = t.sampler.SampleNow(context.Background())
}

// checkListener checks that the socket the GraphQL URL listens on is still
// held by the sampled process or a process under it.
func (t *External) checkListener() error {
	if !t.verified {
		return nil
	}
	holders, _, _, err := holdersOf(proctree.DefaultRoot, t.gql)
	if err != nil {
		t.log.Warn("cannot check which process serves the GraphQL URL", zap.Error(err))
		return nil
	}
	tab, err := proctree.DefaultRoot.Snapshot()
	if err != nil {
		t.log.Warn("cannot check which process serves the GraphQL URL", zap.Error(err))
		return nil
	}
	return listenerStillOurs(tab, holders, t.pid, t.gql.what)
}

// Baseline samples the target; no GC can be forced in another process.
func (t *External) Baseline(ctx context.Context) RestState {
	s, _ := t.sampler.SampleNow(ctx)
	return restStateOf(s)
}

// restStateOf reads the live heap and goroutines of an external sample.
func restStateOf(s extsample.Sample) RestState {
	var st RestState
	if f := s.Runtime.HeapLiveBytes; f.Measured {
		st.HeapLive = uint64(f.Value)
	} else {
		st.HeapLiveWhy = f.Reason
	}
	g := s.ExtraFigure("goroutines")
	if g.Measured {
		st.Goroutines = uint64(g.Value)
		st.GoroutineAnalogue = extsample.GoroutineAnalogue(s.Runtime.Runtime)
	} else {
		st.GoroutinesWhy = g.Reason
	}
	return st
}

// Settle waits d after a phase, watching the periodic samples for the
// goroutines to come back to the baseline, then samples. It cannot force a
// GC: the live heap it reports is as of the target's own last GC cycle.
func (t *External) Settle(ctx context.Context, base RestState, d time.Duration) (report.After, error) {
	start := time.Now()
	a := report.After{BaselineGoroutines: base.Goroutines, BaselineHeapLiveBytes: base.HeapLive, ReturnedAfterSeconds: -1, NoForcedGC: true}
	if err := builtin.PollFor(ctx, d, func() {
		if s, ok := t.sampler.Last(); ok && a.ReturnedAfterSeconds < 0 && base.GoroutinesWhy == "" && s.Time.After(start) {
			if st := restStateOf(s); st.GoroutinesWhy == "" && st.Goroutines <= base.Goroutines+kpi.GoroutineSlack {
				a.ReturnedAfterSeconds = time.Since(start).Seconds()
			}
		}
	}); err != nil {
		return a, err
	}
	s, _ := t.sampler.SampleNow(ctx)
	after := restStateOf(s)
	a.Goroutines, a.HeapLiveBytes = after.Goroutines, after.HeapLive
	a.GoroutineAnalogue = cmpOr(after.GoroutineAnalogue, base.GoroutineAnalogue)
	a.NotMeasured = map[string]string{
		"subscribers": "the open subscriptions of a target soakd does not host are not visible from outside",
	}
	if why := cmpOr(base.GoroutinesWhy, after.GoroutinesWhy); why != "" {
		a.NotMeasured["goroutines"] = why
	}
	if why := cmpOr(base.HeapLiveWhy, after.HeapLiveWhy); why != "" {
		a.NotMeasured["heap_live_bytes"] = why
	}
	// A live heap of 0 bytes is no figure: the sample was not taken (the
	// target not yet answering, a failed scrape), not an empty heap.
	if _, ok := a.NotMeasured["heap_live_bytes"]; !ok && (a.BaselineHeapLiveBytes == 0 || a.HeapLiveBytes == 0) {
		a.NotMeasured["heap_live_bytes"] = "no live-heap sample before or after the phase (0 bytes read)"
	}
	if why, ok := a.NotMeasured["goroutines"]; ok {
		a.ReturnedNotMeasured = cmpOr(a.GoroutineAnalogue, "goroutines") + " not measured: " + why
	} else {
		a.Returned = a.Goroutines <= a.BaselineGoroutines+kpi.GoroutineSlack
	}
	a.SettleSeconds = time.Since(start).Seconds()
	return a, nil
}

// cmpOr returns the first non-empty string.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Phase joins a driver result with the target's figures over the steady
// window (and a max-load Phase's peak window).
func (t *External) Phase(res workloads.Result, cores int) report.Phase {
	var win *extsample.Window
	if t.replicas != nil {
		cores = 1
	}
	p := newPhaseFrom(func(from, to time.Time) (*profiles.Summary, error) {
		sum, w, err := extsample.Summarize(t.allSamples(from, to), to.Sub(from), cores, config.MinSteadySamples)
		if t.replicas != nil {
			shareOfLimits(sum, w, t.replicas.capacityCores())
		}
		if win == nil {
			win = w // the steady window's, summarised first
		}
		return sum, err
	}, res)
	p.ResourceFigures = win
	return p
}

func (t *External) MemoryData(p report.Phase) MemoryData {
	// The phase's own process's samples: a renewed target's earlier
	// phases ran on processes Renew replaced.
	return externalMemoryData(t.allSamples(p.SteadyStart, p.SteadyEnd))
}

// CPUReadings are the process's CPU readings; none for a service's
// replicas, whose share of a machine's CPUs means nothing (a knee is then
// attributed without the target's share).
func (t *External) CPUReadings(from, to time.Time) []CPUReading {
	if t.replicas != nil {
		return nil
	}
	ss := t.sampler.Samples(from, to)
	out := make([]CPUReading, len(ss))
	for i, smp := range ss {
		u, k := smp.OS.UserCPUSeconds, smp.OS.SystemCPUSeconds
		out[i] = CPUReading{Time: smp.Time, CPUSeconds: u.Value + k.Value, OK: u.Measured && k.Measured}
	}
	return out
}

func (t *External) SamplesSince(from time.Time) *report.Samples {
	return &report.Samples{External: t.allSamples(from, time.Now().Add(time.Hour))}
}

// Captures fetches a Go target's heap profile, goroutine dump and CPU
// profile (in chunks over the steady window: startChunkedCPU) from
// target.pprof_url.
func (t *External) Captures(ctx context.Context) Captures {
	base := t.cfg.PprofURL
	if t.replicas != nil {
		return Captures{Missing: "no pprof files: target.kind kubernetes reads each replica's metrics endpoint only (its profiles are per replica, and not fetched)"}
	}
	if base == "" {
		return Captures{Missing: "no pprof files: soakd does not host the target and target.pprof_url is not set"}
	}
	base = strings.TrimRight(base, "/") + "/"
	return Captures{
		Heap:       func(path string) error { return fetchProfile(ctx, base+"heap", path) },
		Goroutines: func(path string) error { return fetchProfile(ctx, base+"goroutine?debug=2", path) },
		StartCPU: func(path string) (CPUProfiler, error) {
			return startChunkedCPU(ctx, base, path, RemoteCPUChunk), nil
		},
	}
}

// maxProfileBytes bounds a profile fetched over HTTP.
const maxProfileBytes = 64 << 20

// profileTimeout bounds one profile fetch: a heap profile or goroutine dump
// of a healthy server takes well under a second, and three fetches a phase
// of 30 s each kept a hanging pprof_url's run alive for minutes after
// SIGINT.
const profileTimeout = 5 * time.Second

// fetchProfile GETs url and stores the body at path, within
// profileTimeout and while ctx (the run's) lasts: none is started after
// the run was cancelled. It follows no redirect.
func fetchProfile(ctx context.Context, url, path string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("GET %s: not fetched: %w", url, err)
	}
	ctx, cancel := context.WithTimeout(ctx, profileTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := nofollow.Client(0).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxProfileBytes+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if len(b) > maxProfileBytes {
		return fmt.Errorf("GET %s: over %d bytes", url, maxProfileBytes)
	}
	return fsutil.WriteFile(path, b, 0o644)
}

// figureSources says where each resource figure of an external target
// comes from, from its samples so far: the window from the first to the
// last good sample, or the last sample's own figures when there is no
// window yet.
func figureSources(ss []extsample.Sample, cores int) []report.FigureSource {
	first, last := extsample.GoodEnds(ss)
	src := func(name string, f extsample.Figure) report.FigureSource {
		return report.FigureSource{Name: name, Source: f.Source, Definition: f.Definition, Measured: f.Measured, Reason: f.Reason}
	}
	var out []report.FigureSource
	if w, err := extsample.Between(first, last, cores); err == nil {
		out = append(out, src("cpu_seconds", w.CPUSeconds), src("gc_percent", w.GCPercent), src("gc_cycles", w.GCCycles))
		forced := extsample.Figure{Source: "prometheus endpoint", Definition: "GC cycles forced by the application in the window",
			Reason: "the target's runtime does not split forced collections from the others"}
		for _, k := range w.GCKinds {
			if k.Kind == "forced" {
				forced = k.Cycles
			}
		}
		out = append(out, src("gc_forced_cycles", forced), src("alloc_bytes", w.AllocBytes))
	} else {
		out = append(out, src("cpu_seconds", last.OS.UserCPUSeconds), src("gc_seconds", last.Runtime.GCSeconds),
			src("gc_cycles", last.Runtime.GCCycles), src("alloc_bytes", last.Runtime.AllocBytes))
	}
	out = append(out,
		pauseSource(last), src("alloc_objects", allocObjectsSource(last)),
		src("heap_live_bytes", last.Runtime.HeapLiveBytes), src("heap_used_bytes", last.Runtime.HeapUsedBytes),
		src("heap_goal_bytes", last.ExtraFigure("heap_goal_bytes")), src("goroutines", last.ExtraFigure("goroutines")),
		src("rss_bytes", last.OS.RSSBytes), src("threads", last.OS.Threads), src("fds", last.OS.FDs),
	)
	for _, x := range last.Runtime.Extra {
		if x.Name != "goroutines" && x.Name != "heap_goal_bytes" {
			out = append(out, src(x.Name, x))
		}
	}
	return out
}

// pauseSource says where the GC pause quantiles come from: the target's
// pause histogram, or why it has none.
func pauseSource(last extsample.Sample) report.FigureSource {
	fs := report.FigureSource{Name: "gc_pause_p99_ms", Source: "none", Definition: "99th percentile stop-the-world GC pause, the upper bound of its histogram bucket, over the pauses between the window's ends"}
	if h := last.Runtime.GCPauses; h != nil {
		fs.Source, fs.Measured = "series "+h.Series+" (histogram)", true
		return fs
	}
	fs.Reason = extsample.PausesMissing(last.Runtime.Runtime)
	return fs
}

// allocObjectsSource is the allocated-objects figure, or why there is none.
func allocObjectsSource(last extsample.Sample) extsample.Figure {
	f := last.Runtime.AllocObjects
	if f.Measured || f.Reason != "" {
		return f
	}
	return extsample.Figure{Name: "alloc_objects", Unit: "count", Source: "none", Definition: "heap allocations (objects)",
		Reason: fmt.Sprintf("the %s runtime's standard Prometheus series give no count of allocated objects", last.Runtime.Runtime)}
}

// externalMemoryData is the memory verdict's input from an external
// target's samples of a steady window. A rule whose figure the target does
// not give is not measured with that reason; the live heap it gives is as
// of the target's own GC cycles, since none can be forced.
func externalMemoryData(ss []extsample.Sample) MemoryData {
	slices.SortFunc(ss, func(a, b extsample.Sample) int { return a.Time.Compare(b.Time) })
	const liveHeap = "soakd does not host the target, so no GC can be forced in it: each live heap is as of the target's own last GC cycle, read from its metrics endpoint"
	d := MemoryData{NotMeasured: map[string]string{}, Sources: map[string]string{
		kpi.RuleHeapReturned:       liveHeap,
		kpi.RuleSurvivorGrowth:     liveHeap,
		kpi.RuleSteadyAllocation:   "the allocation counter is read from the target's metrics endpoint",
		kpi.RuleGoroutinesReturned: "the goroutine count is read from the target's metrics endpoint",
	}}
	allocWhy, heapWhy := "no sample in the steady window", "no sample in the steady window"
	for _, s := range ss {
		if f := s.Runtime.AllocBytes; f.Measured {
			d.Alloc = append(d.Alloc, profiles.Sample{Time: s.Time, AllocBytes: uint64(f.Value)})
		} else {
			allocWhy = f.Reason
		}
		c, h := s.Runtime.GCCycles, s.Runtime.HeapLiveBytes
		switch {
		case c.Measured && h.Measured:
			d.Heap = append(d.Heap, profiles.Sample{Time: s.Time, GCCycles: uint64(c.Value), HeapLiveBytes: uint64(h.Value)})
		case !h.Measured:
			heapWhy = h.Reason
		default:
			heapWhy = c.Reason
		}
	}
	if len(d.Alloc) == 0 {
		d.NotMeasured[kpi.RuleSteadyAllocation] = allocWhy
	}
	if len(d.Heap) == 0 {
		d.NotMeasured[kpi.RuleSurvivorGrowth] = heapWhy
	}
	return d
}
