package daemon

import (
	"context"
	"os"
	"strconv"
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

	// DriverArgs are the `soakd drive` flags that point a driver at it.
	DriverArgs() []string
	// RunMetrics are soakd's own series (phase marker, KPI results).
	RunMetrics() MetricsSink
	// Hosted is true for the built-in target, in process or not: soakd
	// pins it (hostedTarget); it pushes its own profiles to Pyroscope.
	Hosted() bool
	// Baseline forces GCs where it can and returns the state a phase starts from.
	Baseline(ctx context.Context) RestState
	// SetPhase marks the samples taken from now on as the phase's.
	SetPhase(name string)
	// Settle waits d after a phase and returns the state after it.
	Settle(ctx context.Context, base RestState, d time.Duration) (report.After, error)
	// Phase joins a driver result with the target's figures over its windows.
	Phase(res workloads.Result, cores int) report.Phase
	// memoryChecks judges the memory verdict of phase p.
	memoryChecks(p report.Phase, m MemoryConfig) []report.Check
	// SamplesSince are the SamplesSince since from, for SamplesSince.json.
	SamplesSince(from time.Time) *report.Samples
	// Captures are the profiles the target can give.
	Captures() Captures
	// CPUReadings are the target process's cumulative CPU time readings
	// between from and to, for its utilisation through a max-load ramp.
	CPUReadings(from, to time.Time) []CPUReading
}

// RelationalSource is a built-in target serving the relational scenario:
// its database tally by endpoint, cumulative since it started.
type RelationalSource interface {
	RelationalTotals(ctx context.Context) (map[string]relational.Totals, error)
}

var (
	_ RelationalSource = (*Target)(nil)
	_ RelationalSource = (*processTarget)(nil)
)

// MetricsSink takes soakd's own series of a run: *metrics.Metrics on the
// target's registry, or the same calls sent to the target's process.
type MetricsSink interface {
	PhaseStarted(run, phase, arm string)
	PhaseEnded()
	DriverProgress(phase, arm string, p metrics.DriverProgress)
	DriverResult(res workloads.Result)
	KPIResults(rows []kpi.Result)
	CheckResults(checks []metrics.CheckOutcome)
	RunVerdict(verdict string)
}

// Pinnable is what soakd does to the built-in target's process beyond
// RunTarget: pin it and read back its CPUs.
type Pinnable interface {
	PinCPUs(cpus []int) error
	Affinity() (cpus []int, uniform bool, err error)
}

var (
	_ Pinnable = (*Target)(nil)
	_ Pinnable = (*processTarget)(nil)
)

// sampleSource is where a built-in target's samples are read: its sampler,
// or their mirror in the orchestrating process.
type sampleSource interface {
	Samples(from, to time.Time) []profiles.Sample
	PauseBuckets() []float64
}

// RestState is the target's state a phase is judged to return to: live
// heap and goroutines, each with the reason it could not be read ("" when
// it was).
type RestState struct {
	Goroutines, HeapLive       uint64
	GoroutinesWhy, HeapLiveWhy string
}

// Captures are the profile captures a target offers; a nil function is
// a capture it cannot take.
type Captures struct {
	Heap       func(path string) error
	Goroutines func(path string) error
	StartCPU   func(path string) (CPUProfiler, error)
	// Missing says which captures are not offered and why ("" when all are).
	Missing string
}

// CPUProfiler is a CPU profile in progress.
type CPUProfiler interface{ Stop() error }

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
func (t *Target) Done() <-chan struct{} { return t.failed.Done() }

// Err says why the server stopped serving; nil while it serves.
func (t *Target) Err() error { return t.failed.Err() }

func (t *Target) DriverArgs() []string    { return []string{"--target", t.URL()} }
func (t *Target) RunMetrics() MetricsSink { return t.Metrics }
func (t *Target) Hosted() bool            { return true }
func (t *Target) SetPhase(name string)    { t.Sampler.SetPhase(name) }

func (t *Target) PinCPUs(cpus []int) error                        { return ThisProcess{}.PinCPUs(cpus) }
func (t *Target) Affinity() (cpus []int, uniform bool, err error) { return ThisProcess{}.Affinity() }

// ThisProcess is soakd's own process as a hostedTarget.
type ThisProcess struct{}

func (ThisProcess) PinCPUs(cpus []int) error                        { return pin.Process(cpus) }
func (ThisProcess) Affinity() (cpus []int, uniform bool, err error) { return pin.Affinity() }

// Baseline forces GCs, so each phase starts from the same heap state, and
// samples.
func (t *Target) Baseline(context.Context) RestState {
	ForceGC()
	s := t.Sampler.SampleNow()
	return RestState{Goroutines: s.Goroutines, HeapLive: s.HeapLiveBytes}
}

func (t *Target) Settle(ctx context.Context, base RestState, d time.Duration) (report.After, error) {
	return settle(ctx, t, base, d)
}

func (t *Target) Phase(res workloads.Result, cores int) report.Phase {
	return newPhase(t.Sampler, res, cores)
}

func (t *Target) memoryChecks(p report.Phase, m MemoryConfig) []report.Check {
	return memoryChecks(p, t.Sampler.Samples(p.SteadyStart, p.SteadyEnd), m)
}

func (t *Target) CPUReadings(from, to time.Time) []CPUReading {
	return cpuReadingsOf(t.Sampler.Samples(from, to))
}

// cpuReadingsOf are the built-in sampler's CPU readings of ss.
func cpuReadingsOf(ss []profiles.Sample) []CPUReading {
	out := make([]CPUReading, len(ss))
	for i, smp := range ss {
		out[i] = CPUReading{Time: smp.Time, CPUSeconds: smp.UserCPUSeconds + smp.SystemCPUSeconds, OK: !smp.ProcMissing,
			WaitSeconds: smp.RunqueueWaitSeconds, WaitOK: !smp.RunqueueWaitMissing}
	}
	return out
}

func (t *Target) SamplesSince(from time.Time) *report.Samples {
	return &report.Samples{PauseBuckets: t.Sampler.PauseBuckets(), Samples: t.Sampler.Samples(from, time.Now().Add(time.Hour))}
}

func (t *Target) Captures() Captures {
	return Captures{
		Heap:       profiles.HeapProfile,
		Goroutines: profiles.GoroutineDump,
		StartCPU: func(path string) (CPUProfiler, error) {
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
