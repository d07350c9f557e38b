package target

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/soakd/soakd/daemon/builtin"
	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/pin"
	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

// The built-in target in the orchestrator's own process (target.in_process)
// as a Target.

// InProcess is srv, the built-in target's server running in this process,
// as the target of a run. Shutdown stops srv.
func InProcess(srv *builtin.Server) Target { return inProcess{srv} }

type inProcess struct{ srv *builtin.Server }

var (
	_ Target           = inProcess{}
	_ Pinnable         = inProcess{}
	_ RelationalSource = inProcess{}
	_ Injectable       = inProcess{}
)

// SetInject changes the running server's planted regression.
func (t inProcess) SetInject(_ context.Context, c config.InjectConfig) error {
	return t.srv.SetInject(c)
}

// Info describes the built-in target.
func (t inProcess) Info() report.TargetInfo {
	u := t.srv.URL()
	ws := "ws" + u[len("http"):] + "/graphql"
	return report.TargetInfo{
		Kind: report.TargetBuiltin, PID: os.Getpid(), Scenario: t.srv.Scenario(),
		GraphQLURL: u + "/graphql", GraphQLWSURL: ws, RESTURL: u,
		Runtime: "go", RuntimeBasis: "the built-in target, in soakd's own process (target.in_process)",
		Figures: builtinFigures(os.Getpid()),
	}
}

func (t inProcess) Done() <-chan struct{}              { return t.srv.Done() }
func (t inProcess) Err() error                         { return t.srv.Err() }
func (t inProcess) Shutdown(ctx context.Context) error { return t.srv.Shutdown(ctx) }
func (t inProcess) DriverArgs() []string               { return []string{"--target", t.srv.URL()} }
func (t inProcess) RunMetrics() MetricsSink            { return t.srv.Metrics }

// SeparateProcess is false: the target is the orchestrator's own process.
func (t inProcess) SeparateProcess() bool { return false }

// Notes say the target's figures carry soakd's own work.
func (t inProcess) Notes() []string {
	return []string{fmt.Sprintf("The built-in target runs inside the orchestrating soakd process (pid %d, target.in_process): "+
		"its heap, GC and CPU also carry soakd's reports, logs and decoding of the drivers' results.", os.Getpid())}
}
func (t inProcess) SetPhase(name string) { t.srv.SetPhase(name) }

// PinCPUs pins this process, which is the target's.
func (t inProcess) PinCPUs(cpus []int) error { return pin.Process(cpus) }

// Affinity reads back the CPUs this process's threads may run on.
func (t inProcess) Affinity() (cpus []int, uniform bool, err error) { return pin.Affinity() }

func (t inProcess) RelationalTotals(ctx context.Context) (map[string]relational.Totals, error) {
	return t.srv.RelationalTotals(ctx)
}

// Baseline forces GCs, so each phase starts from the same heap state, and
// samples.
func (t inProcess) Baseline(context.Context) RestState {
	r := t.srv.Baseline()
	return RestState{Goroutines: r.Goroutines, HeapLive: r.HeapLiveBytes}
}

func (t inProcess) Settle(ctx context.Context, base RestState, d time.Duration) (report.After, error) {
	return t.srv.Settle(ctx, builtin.Rest{Goroutines: base.Goroutines, HeapLiveBytes: base.HeapLive}, d)
}

func (t inProcess) Phase(res workloads.Result, cores int) report.Phase {
	return newPhase(t.srv.Sampler, res, cores)
}

func (t inProcess) MemoryData(p report.Phase) MemoryData {
	ss := t.srv.Sampler.Samples(p.SteadyStart, p.SteadyEnd)
	return MemoryData{Alloc: ss, Heap: ss}
}

func (t inProcess) CPUReadings(from, to time.Time) []CPUReading {
	return cpuReadingsOf(t.srv.Sampler.Samples(from, to))
}

func (t inProcess) SamplesSince(from time.Time) *report.Samples {
	return &report.Samples{PauseBuckets: t.srv.Sampler.PauseBuckets(), Samples: t.srv.Sampler.Samples(from, time.Now().Add(time.Hour))}
}

func (t inProcess) Captures(context.Context) Captures {
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

// cpuReadingsOf are the built-in sampler's CPU readings of ss.
func cpuReadingsOf(ss []profiles.Sample) []CPUReading {
	out := make([]CPUReading, len(ss))
	for i, smp := range ss {
		out[i] = CPUReading{Time: smp.Time, CPUSeconds: smp.UserCPUSeconds + smp.SystemCPUSeconds, OK: !smp.ProcMissing,
			WaitSeconds: smp.RunqueueWaitSeconds, WaitOK: !smp.RunqueueWaitMissing}
	}
	return out
}
