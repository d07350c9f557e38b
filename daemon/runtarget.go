package daemon

import (
	"context"
	"os"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/metrics"
	"github.com/soakd/soakd/internal/pin"
	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

// RunTarget is the server a run measures: the built-in target, run by soakd
// as a process of its own (*processTarget, `soakd target`) or in soakd's own
// process (*Target, from StartTarget, with target.in_process), or a server
// soakd does not host (*ExternalTarget, attached to by PID or started from
// a command).
// OpenTarget opens whichever target.kind names. Runs and the sampling,
// settling and capturing they do go through it, so they work with either.
type RunTarget interface {
	// Info describes the target for the report: kind, PID, URLs and where
	// each resource figure comes from.
	Info() report.TargetInfo
	// Done is closed once the target stops serving on its own (its server
	// failed, its process died); Err then says why.
	Done() <-chan struct{}
	Err() error
	// Shutdown stops what soakd started: the built-in server, a command's
	// process. An attached process is left running.
	Shutdown(ctx context.Context) error

	// driverArgs are the `soakd drive` flags that point a driver at it.
	driverArgs() []string
	// runMetrics are soakd's own series (phase marker, KPI results).
	runMetrics() metricsSink
	// hosted is true for the built-in target, in process or not: soakd
	// pins it (hostedTarget); it pushes its own profiles to Pyroscope.
	hosted() bool
	// baseline forces GCs where it can and returns the state a phase starts from.
	baseline(ctx context.Context) restState
	// setPhase marks the samples taken from now on as the phase's.
	setPhase(name string)
	// settle waits d after a phase and returns the state after it.
	settle(ctx context.Context, base restState, d time.Duration) (report.After, error)
	// phase joins a driver result with the target's figures over its windows.
	phase(res workloads.Result, cores int) report.Phase
	// memoryChecks judges the memory verdict of phase p.
	memoryChecks(p report.Phase, m MemoryConfig) []report.Check
	// samples are the samples since from, for samples.json.
	samples(from time.Time) *report.Samples
	// captureTools are the profiles the target can give.
	captureTools() captureTools
	// cpuReadings are the target process's cumulative CPU time readings
	// between from and to, for its utilisation through a max-load ramp.
	cpuReadings(from, to time.Time) []cpuReading
}

// relationalSource is a built-in target serving the relational scenario:
// its database tally by endpoint, cumulative since it started.
type relationalSource interface {
	relationalTotals(ctx context.Context) (map[string]relational.Totals, error)
}

var (
	_ relationalSource = (*Target)(nil)
	_ relationalSource = (*processTarget)(nil)
)

// metricsSink takes soakd's own series of a run: *metrics.Metrics on the
// target's registry, or the same calls sent to the target's process.
type metricsSink interface {
	PhaseStarted(run, phase, arm string)
	PhaseEnded()
	DriverProgress(phase, arm string, p metrics.DriverProgress)
	DriverResult(res workloads.Result)
	KPIResults(rows []kpi.Result)
	CheckResults(checks []metrics.CheckOutcome)
	RunVerdict(verdict string)
}

// hostedTarget is what soakd does to the built-in target's process beyond
// RunTarget: pin it and read back its CPUs.
type hostedTarget interface {
	pinCPUs(cpus []int) error
	affinity() (cpus []int, uniform bool, err error)
}

var (
	_ hostedTarget = (*Target)(nil)
	_ hostedTarget = (*processTarget)(nil)
)

// sampleSource is where a built-in target's samples are read: its sampler,
// or their mirror in the orchestrating process.
type sampleSource interface {
	Samples(from, to time.Time) []profiles.Sample
	PauseBuckets() []float64
}

// restState is the target's state a phase is judged to return to: live
// heap and goroutines, each with the reason it could not be read ("" when
// it was).
type restState struct {
	goroutines, heapLive       uint64
	goroutinesWhy, heapLiveWhy string
}

// failSignal records the first reason a target stopped serving and closes
// a channel once, so any number of watchers see it.
type failSignal struct {
	once sync.Once
	mu   sync.Mutex
	ch   chan struct{}
	err  error
}

func newFailSignal() *failSignal { return &failSignal{ch: make(chan struct{})} }

// set records err as the reason, the first time only.
func (f *failSignal) set(err error) {
	f.once.Do(func() {
		f.mu.Lock()
		f.err = err
		f.mu.Unlock()
		close(f.ch)
	})
}

func (f *failSignal) done() <-chan struct{} { return f.ch }

func (f *failSignal) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// captureTools are the profile captures a target offers; a nil function is
// a capture it cannot take.
type captureTools struct {
	heap       func(path string) error
	goroutines func(path string) error
	startCPU   func(path string) (cpuProfiler, error)
	// missing says which captures are not offered and why ("" when all are).
	missing string
}

// cpuProfiler is a CPU profile in progress.
type cpuProfiler interface{ Stop() error }

// The built-in target's side of RunTarget.

var _ RunTarget = (*Target)(nil)

// Info describes the built-in target.
func (t *Target) Info() report.TargetInfo {
	u := t.URL()
	ws := "ws" + u[len("http"):] + "/graphql"
	return report.TargetInfo{
		Kind: report.TargetBuiltin, PID: os.Getpid(), Scenario: t.scenario,
		GraphQLURL: u + "/graphql", GraphQLWSURL: ws, RESTURL: u,
		Runtime: "go", RuntimeBasis: "the built-in target, in soakd's own process (target.in_process)",
		Figures: builtinFigures(os.Getpid()),
	}
}

// builtinFigures are the built-in target's figure sources: runtime/metrics
// read in process, and the OS by PID.
func builtinFigures(pid int) []report.FigureSource {
	osSrc := "os: gopsutil, pid " + strconv.Itoa(pid)
	rm := func(name, metric, def string) report.FigureSource {
		return report.FigureSource{Name: name, Source: "runtime/metrics " + metric + " (in process)", Definition: def, Measured: true}
	}
	return []report.FigureSource{
		{Name: "cpu_seconds", Source: osSrc, Definition: "user+system CPU seconds the process used in the window, from the OS", Measured: true},
		{Name: "gc_percent", Source: "runtime/metrics /cpu/classes/gc/total:cpu-seconds ÷ /cpu/classes/total:cpu-seconds (in process)", Definition: "GC CPU seconds ÷ CPU seconds available to the runtime × 100, both differenced over the window", Measured: true},
		rm("gc_cycles", "/gc/cycles/total:gc-cycles", "GC cycles completed in the window"),
		rm("gc_forced_cycles", "/gc/cycles/forced:gc-cycles", "GC cycles forced with runtime.GC in the window"),
		rm("gc_pause_p99_ms", "/sched/pauses/total/gc:seconds", "99th percentile stop-the-world GC pause in the window (histogram bucket upper bound)"),
		rm("alloc_bytes", "/gc/heap/allocs:bytes", "bytes allocated on the heap in the window"),
		rm("alloc_objects", "/gc/heap/allocs:objects", "heap allocations in the window"),
		rm("heap_live_bytes", "/gc/heap/live:bytes", "heap bytes marked live by the last GC cycle"),
		rm("heap_goal_bytes", "/gc/heap/goal:bytes", "heap size at which the next GC cycle starts"),
		rm("heap_objects", "/gc/heap/objects:objects", "objects live or unswept in the heap"),
		rm("goroutines", "/sched/goroutines:goroutines", "live goroutines"),
		{Name: "rss_bytes", Source: osSrc, Definition: "resident set size, from the OS", Measured: true},
		{Name: "threads", Source: osSrc, Definition: "OS threads of the process, from the OS", Measured: true},
		{Name: "fds", Source: osSrc, Definition: "open file descriptors of the process, from the OS", Measured: true},
	}
}

// Done is closed when the server stops serving on its own.
func (t *Target) Done() <-chan struct{} { return t.failed.done() }

// Err says why the server stopped serving; nil while it serves.
func (t *Target) Err() error { return t.failed.get() }

func (t *Target) driverArgs() []string    { return []string{"--target", t.URL()} }
func (t *Target) runMetrics() metricsSink { return t.Metrics }
func (t *Target) hosted() bool            { return true }
func (t *Target) setPhase(name string)    { t.Sampler.SetPhase(name) }

func (t *Target) pinCPUs(cpus []int) error                        { return thisProcess{}.pinCPUs(cpus) }
func (t *Target) affinity() (cpus []int, uniform bool, err error) { return thisProcess{}.affinity() }

// thisProcess is soakd's own process as a hostedTarget.
type thisProcess struct{}

func (thisProcess) pinCPUs(cpus []int) error                        { return pin.Process(cpus) }
func (thisProcess) affinity() (cpus []int, uniform bool, err error) { return pin.Affinity() }

// baseline forces GCs, so each phase starts from the same heap state, and
// samples.
func (t *Target) baseline(context.Context) restState {
	forceGC()
	s := t.Sampler.SampleNow()
	return restState{goroutines: s.Goroutines, heapLive: s.HeapLiveBytes}
}

func (t *Target) settle(ctx context.Context, base restState, d time.Duration) (report.After, error) {
	return settle(ctx, t, base, d)
}

func (t *Target) phase(res workloads.Result, cores int) report.Phase {
	return newPhase(t.Sampler, res, cores)
}

func (t *Target) memoryChecks(p report.Phase, m MemoryConfig) []report.Check {
	return memoryChecks(p, t.Sampler.Samples(p.SteadyStart, p.SteadyEnd), m)
}

func (t *Target) cpuReadings(from, to time.Time) []cpuReading {
	return cpuReadingsOf(t.Sampler.Samples(from, to))
}

// cpuReadingsOf are the built-in sampler's CPU readings of ss.
func cpuReadingsOf(ss []profiles.Sample) []cpuReading {
	out := make([]cpuReading, len(ss))
	for i, smp := range ss {
		out[i] = cpuReading{Time: smp.Time, CPUSeconds: smp.UserCPUSeconds + smp.SystemCPUSeconds, OK: !smp.ProcMissing,
			WaitSeconds: smp.RunqueueWaitSeconds, WaitOK: !smp.RunqueueWaitMissing}
	}
	return out
}

func (t *Target) samples(from time.Time) *report.Samples {
	return &report.Samples{PauseBuckets: t.Sampler.PauseBuckets(), Samples: t.Sampler.Samples(from, time.Now().Add(time.Hour))}
}

func (t *Target) captureTools() captureTools {
	return captureTools{
		heap:       profiles.HeapProfile,
		goroutines: profiles.GoroutineDump,
		startCPU: func(path string) (cpuProfiler, error) {
			p, err := profiles.StartCPUProfile(path)
			if err != nil {
				return nil, err
			}
			return p, nil
		},
	}
}

// OpenTarget opens the target cfg.Target names: the built-in target, as a
// process of its own (`exe target`, its output in logDir) or, with
// target.in_process or no soakd binary to start (exe ""), in this process
// (StartTarget); or a server soakd does not host, attached to by PID or
// started from a command whose output goes to logDir. Stop it with
// Shutdown.
func OpenTarget(ctx context.Context, cfg *Config, exe, logDir string, log *zap.Logger) (RunTarget, error) {
	switch cfg.Target.Kind {
	case "", report.TargetBuiltin:
		if !cfg.Target.InProcess && exe != "" {
			t, err := startProcessTarget(ctx, cfg, exe, logDir, log)
			if err != nil {
				return nil, err
			}
			return t, nil
		}
		t, err := StartTarget(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	return openExternal(ctx, cfg, logDir, log)
}
