package target

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/builtin"
	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/metrics"
	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

// Target is the server a run measures: the built-in target, run by soakd
// as a process of its own (*processTarget, `soakd target`) or in soakd's own
// process (*Target, from StartTarget, with target.in_process), or a server
// soakd does not host (*ExternalTarget, attached to by PID or started from
// a command).
// OpenTarget opens whichever target.kind names. Runs and the sampling,
// settling and capturing they do go through it, so they work with either.
type Target interface {
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
	// Notes are what the report must say about this kind of target
	// (where it runs, what its figures carry).
	Notes() []string
	// Baseline forces GCs where it can and returns the state a phase starts from.
	Baseline(ctx context.Context) RestState
	// SetPhase marks the samples taken from now on as the phase's.
	SetPhase(name string)
	// Settle waits d after a phase and returns the state after it.
	Settle(ctx context.Context, base RestState, d time.Duration) (report.After, error)
	// Phase joins a driver result with the target's figures over its windows.
	Phase(res workloads.Result, cores int) report.Phase
	// MemoryData is what the target measured over phase p's steady window
	// for the memory verdict, which the run judges.
	MemoryData(p report.Phase) MemoryData
	// SamplesSince are the SamplesSince since from, for SamplesSince.json.
	SamplesSince(from time.Time) *report.Samples
	// Captures are the profiles the target can give; a fetch over the
	// network is bound to ctx (none after the run is cancelled).
	Captures(ctx context.Context) Captures
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
	RunVerdict(verdict kpi.Outcome)
}

// Pinnable is a target soakd hosts (the built-in one, in a process of its
// own or in soakd's): soakd pins it to the CPUs pinning.target names and
// reads back the CPUs its threads may run on. A target that is not
// Pinnable is one soakd does not host: it is not pinned, and Pyroscope (which
// profiles the built-in target's process) is off for it.
type Pinnable interface {
	PinCPUs(cpus []int) error
	Affinity() (cpus []int, uniform bool, err error)
	// SeparateProcess is true when the target runs in a process other
	// than the orchestrator's, which then keeps off the target's CPUs.
	SeparateProcess() bool
}

var (
	_ Pinnable = (*processTarget)(nil)
)

// Renewable is a target whose process soakd starts, and can therefore
// replace between phases by a fresh one of the same configuration: the
// built-in target in a process of its own and a command target. An A/B
// duet renews both sides' targets between rounds, so that what differs
// between two processes of one build (where their heaps and code landed,
// what the machine was doing as each warmed up) is drawn afresh each round
// instead of favouring one side for a whole session.
// Injectable is a target whose planted regression (inject.graphql_cpu_us_per_request,
// inject.graphql_alloc_bytes_per_request) can be changed while it runs:
// the built-in target, in its own process or in soakd's. A daemon's run that
// plants one sets it for the run and the daemon's own setting afterwards.
type Injectable interface {
	SetInject(ctx context.Context, c config.InjectConfig) error
}

type Renewable interface {
	// CanRenew is false for a target of this type that soakd did not
	// start (an attached process, a service's replicas).
	CanRenew() bool
	// Renew stops the target's process and starts another from the same
	// configuration, returning once it serves. The samples taken so far
	// stay; every figure of a phase run after Renew is the new process's.
	// Info gives the new process's PID.
	Renew(ctx context.Context) error
}

var (
	_ Renewable = (*processTarget)(nil)
	_ Renewable = (*External)(nil)
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
	// GoroutineAnalogue names what Goroutines counts on a runtime without
	// goroutines ("active handles" on Node); "" for goroutines.
	GoroutineAnalogue string
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

// Open opens the target cfg.Target names: the built-in target, as a
// process of its own (`exe target`, its output in logDir) or, with
// target.in_process or no soakd binary to start (exe ""), in this process
// (StartTarget); or a server soakd does not host, attached to by PID or
// started from a command whose output goes to logDir. Stop it with
// Shutdown.
func Open(ctx context.Context, cfg *config.Config, exe, logDir string, log *zap.Logger) (Target, error) {
	switch cfg.Target.Kind {
	case "", report.TargetBuiltin:
		if !cfg.Target.InProcess && exe != "" {
			t, err := startProcessTarget(ctx, cfg, exe, logDir, log)
			if err != nil {
				return nil, err
			}
			return t, nil
		}
		t, err := builtin.Start(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		return InProcess(t), nil
	}
	return openExternal(ctx, cfg, exe, logDir, log)
}

// CPUReading is one reading of the target process's cumulative CPU time
// (user + system, seconds; OK is false when it could not be read) and of
// its threads' cumulative run-queue wait (seconds; WaitOK false when not
// read).
type CPUReading struct {
	Time        time.Time
	CPUSeconds  float64
	OK          bool
	WaitSeconds float64
	WaitOK      bool
}

// newPhase joins a driver result with the target's figures over the
// phase's steady window and, for a max-load phase, over its peak window.
//
// A phase without a steady window has no resource figures: falling back to
// the whole phase would give a shorter phase more data than a longer one
// (whose window exists but holds few samples), so "more work never yields
// less data" holds only if no fallback is measured.
func newPhase(s sampleSource, res workloads.Result, cores int) report.Phase {
	return newPhaseFrom(func(from, to time.Time) (*profiles.Summary, error) { return summarize(s, from, to, cores) }, res)
}

// newPhaseFrom is newPhase with the target's figures over a window given by
// sum.
func newPhaseFrom(sum func(from, to time.Time) (*profiles.Summary, error), res workloads.Result) report.Phase {
	var (
		steady *profiles.Summary
		serr   error
	)
	if res.SteadyFallback {
		serr = fmt.Errorf("no steady window (%s): lengthen the phase (more iterations) or shorten ramp_up, trim_head and trim_tail", res.SteadyFallbackReason)
	} else {
		steady, serr = sum(res.SteadyStart, res.SteadyEnd)
		distrustIdleCPU(steady, res.ThroughputRPS)
	}
	p := report.NewPhase(res, steady, serr)
	if ml := res.MaxLoad; ml != nil {
		p.MaxLoad = &report.MaxLoad{MaxLoadResult: *ml}
		if ml.PeakWindowEnd.After(ml.PeakWindowStart) {
			peak, err := sum(ml.PeakWindowStart, ml.PeakWindowEnd)
			distrustIdleCPU(peak, ml.PeakThroughputRPS)
			p.MaxLoad.PeakResources = peak
			if err != nil {
				p.MaxLoad.PeakResourcesError = err.Error()
			}
		} else {
			p.MaxLoad.PeakResourcesError = "no peak window: no window was judged before the phase ended"
		}
	}
	return p
}

// distrustIdleCPU makes a window's CPU figures not measured when the
// sampled process used no CPU to speak of while the target served rps
// requests a second (kpi.ImplausibleCPU): they are not the server's.
func distrustIdleCPU(s *profiles.Summary, rps float64) {
	if s == nil || !s.CPUKnown {
		return
	}
	why := kpi.ImplausibleCPU(rps*s.WindowSeconds, s.CPUSeconds)
	if why == "" {
		return
	}
	s.CPUKnown, s.CPUSeconds, s.CPUMachinePercent, s.CPUCorePercent = false, 0, 0, 0
	if s.NotMeasured == nil {
		s.NotMeasured = map[string]string{}
	}
	s.NotMeasured["cpu_seconds"] = why
}

// summarize reduces the target's samples inside [from, to] to resource
// figures.
func summarize(s sampleSource, from, to time.Time, cores int) (*profiles.Summary, error) {
	ss := s.Samples(from, to)
	if len(ss) < config.MinSteadySamples {
		return nil, fmt.Errorf("only %d samples in the %.1fs steady window (at least %d needed): lower sampler.interval or lengthen the phase", len(ss), to.Sub(from).Seconds(), config.MinSteadySamples)
	}
	sum, err := profiles.Summarize(ss, s.PauseBuckets(), cores)
	if err != nil {
		return nil, err
	}
	return &sum, nil
}

// MemoryData is what a target measured over a phase's steady window for
// the memory verdict (kpi.MemoryVerdict): the target gathers it, the run
// judges it.
type MemoryData struct {
	// Alloc are the samples carrying the cumulative heap allocation
	// (AllocBytes), in time order; Heap those carrying GC cycles and the
	// live heap (GCCycles, HeapLiveBytes). The built-in target's samples
	// carry both.
	Alloc, Heap []profiles.Sample
	// NotMeasured gives, by memory rule (kpi.Rule*), why the target could
	// not give its figure.
	NotMeasured map[string]string
	// Sources gives, by memory rule, a clause added to its definition
	// saying where a target soakd does not host gave the figure.
	Sources map[string]string
}
