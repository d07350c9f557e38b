package daemon

import (
	"context"
	"os"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/metrics"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/workloads"
)

// RunTarget is the server a run measures: the built-in target this process
// hosts (*Target, from StartTarget) or a server soakd does not host
// (*ExternalTarget, attached to by PID or started from a command).
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
	runMetrics() *metrics.Metrics
	// ownProcess is true when the target is this process: pinning and the
	// Pyroscope push apply to it.
	ownProcess() bool
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
		Kind: report.TargetBuiltin, PID: os.Getpid(),
		GraphQLURL: u + "/graphql", GraphQLWSURL: ws, RESTURL: u,
		Runtime: "go", RuntimeBasis: "the built-in target is soakd's own process",
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

func (t *Target) driverArgs() []string         { return []string{"--target", t.URL()} }
func (t *Target) runMetrics() *metrics.Metrics { return t.Metrics }
func (t *Target) ownProcess() bool             { return true }
func (t *Target) setPhase(name string)         { t.Sampler.SetPhase(name) }

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
	ss := t.Sampler.Samples(from, to)
	out := make([]cpuReading, len(ss))
	for i, smp := range ss {
		out[i] = cpuReading{Time: smp.Time, CPUSeconds: smp.UserCPUSeconds + smp.SystemCPUSeconds, OK: !smp.ProcMissing}
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

// OpenTarget opens the target cfg.Target names: the built-in target
// (StartTarget), or a server soakd does not host, attached to by PID or
// started from a command whose output goes to logDir. Stop it with Shutdown.
func OpenTarget(ctx context.Context, cfg *Config, logDir string, log *zap.Logger) (RunTarget, error) {
	switch cfg.Target.Kind {
	case "", report.TargetBuiltin:
		t, err := StartTarget(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	return openExternal(ctx, cfg, logDir, log)
}
