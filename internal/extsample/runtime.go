package extsample

import (
	"fmt"
	"strings"
)

// Runtime names the runtime of a target, by the Prometheus library its endpoint is served by.
type Runtime string

const (
	// RuntimeUnknown means: detect the runtime from the series the endpoint exposes.
	RuntimeUnknown Runtime = ""
	// RuntimeGo is a Go program serving client_golang's Go collector.
	RuntimeGo Runtime = "go"
	// RuntimeNode is a Node.js program serving prom-client's collectDefaultMetrics.
	RuntimeNode Runtime = "node"
	// RuntimeDotNet is a .NET program serving prometheus-net's default metrics.
	RuntimeDotNet Runtime = "dotnet"
	// RuntimeJVM is a JVM program serving client_java's JVM metrics (0.x simpleclient_hotspot or 1.x).
	RuntimeJVM Runtime = "jvm"
)

// markers are, per runtime, series only that runtime's standard library exposes; any one of them identifies it.
var markers = []struct {
	rt     Runtime
	series []string
}{
	{RuntimeGo, []string{"go_goroutines", "go_gc_duration_seconds_count", "go_sched_goroutines_goroutines", "go_info"}},
	{RuntimeNode, []string{"nodejs_heap_size_used_bytes", "nodejs_eventloop_lag_seconds", "nodejs_version_info", "nodejs_gc_duration_seconds_count"}},
	{RuntimeDotNet, []string{"dotnet_collection_count_total", "dotnet_total_memory_bytes"}},
	{RuntimeJVM, []string{"jvm_memory_used_bytes", "jvm_memory_bytes_used", "jvm_gc_collection_seconds_count", "jvm_threads_current"}},
}

// Detect tells the runtime from the series the exposition holds, and returns the series that told it. It fails
// when no runtime's series are there, or those of more than one are (set the runtime explicitly then).
func Detect(e Exposition) (Runtime, string, error) {
	var found []Runtime
	var by []string
	for _, m := range markers {
		for _, s := range m.series {
			if e.has(s) {
				found = append(found, m.rt)
				by = append(by, s)
				break
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], by[0], nil
	case 0:
		return RuntimeUnknown, "", fmt.Errorf("cannot tell the target's runtime: it exposes none of the standard series of client_golang, prom-client, prometheus-net or client_java (set the runtime explicitly)")
	default:
		var parts []string
		for i := range found {
			parts = append(parts, fmt.Sprintf("%s (%s)", found[i], by[i]))
		}
		return RuntimeUnknown, "", fmt.Errorf("cannot tell the target's runtime: it exposes the standard series of %s (set the runtime explicitly)", strings.Join(parts, " and "))
	}
}

// ParseRuntime accepts "go", "node", "dotnet", "jvm", or "" (detect).
func ParseRuntime(s string) (Runtime, error) {
	switch rt := Runtime(s); rt {
	case RuntimeUnknown, RuntimeGo, RuntimeNode, RuntimeDotNet, RuntimeJVM:
		return rt, nil
	}
	return RuntimeUnknown, fmt.Errorf("unknown runtime %q: want go, node, dotnet, jvm, or empty to detect it", s)
}

// RuntimeFigures are a target's runtime figures at one scrape. Counters are cumulative (from process start,
// or from when the target's metrics library started counting, as each Definition says); the rest are gauges.
type RuntimeFigures struct {
	// Runtime is the runtime the series were read as.
	Runtime Runtime `json:"runtime"`
	// RuntimeBasis says how Runtime was chosen: "set by the caller" or "detected from series <name>".
	RuntimeBasis string `json:"runtime_basis"`

	// GCCycles counts completed garbage collections (cumulative).
	GCCycles Figure `json:"gc_cycles"`
	// GCKinds splits the collections by generation (.NET: gen0, gen1, gen2), collector (JVM: the gc label),
	// kind of GC event (Node: major, minor, incremental, weakcb) or trigger (Go: automatic, forced), as the
	// target reports them (cumulative). Empty when the target gives no split.
	GCKinds []KindFigures `json:"gc_kinds,omitempty"`
	// GCSeconds is the time spent in GC (cumulative): CPU seconds for Go with runtime/metrics, wall seconds
	// of pauses or collections otherwise; its Definition says which.
	GCSeconds Figure `json:"gc_seconds"`
	// RuntimeCPUSeconds is the CPU time available to the runtime (cumulative; Go with runtime/metrics only):
	// the denominator of the GC time share when GCSeconds is CPU time.
	RuntimeCPUSeconds Figure `json:"runtime_cpu_seconds"`
	// AllocBytes counts bytes allocated on the heap (cumulative).
	AllocBytes Figure `json:"alloc_bytes"`
	// AllocObjects counts heap allocations (objects, cumulative; Go's
	// runtime/metrics series only). A zero Figure for the other runtimes.
	AllocObjects Figure `json:"alloc_objects"`
	// GCPauses is the cumulative stop-the-world pause histogram (Go's
	// runtime/metrics series); nil when the target gives none.
	GCPauses *PauseHistogram `json:"gc_pauses,omitempty"`

	// HeapLiveBytes is the heap that survived the last collection (a gauge).
	HeapLiveBytes Figure `json:"heap_live_bytes"`
	// HeapUsedBytes is the heap in use now, garbage not yet collected included (a gauge).
	HeapUsedBytes Figure `json:"heap_used_bytes"`
	// Extra holds figures particular to the runtime: goroutines and the heap goal (Go), the event-loop delay
	// (Node), thread-pool threads and time in GC (.NET), JVM threads.
	Extra []Figure `json:"extra,omitempty"`
}

const (
	endpointSource = "prometheus endpoint"
	defGCCycles    = "completed garbage collections (cumulative)"
	defGCSeconds   = "time spent in garbage collection (cumulative)"
	defRuntimeCPU  = "CPU time available to the runtime (cumulative), the denominator of a CPU-based GC time share"
	defAlloc       = "bytes allocated on the heap (cumulative)"
	defHeapLive    = "heap bytes that survived the last collection"
	defHeapUsed    = "heap bytes in use now, garbage not yet collected included"

	reasonWallTime = "only Go's runtime/metrics gives the CPU time available to the runtime; the GC time share is taken over wall time"
)

// runtimeNotMeasured returns runtime figures that are all not measured for reason.
func runtimeNotMeasured(rt Runtime, basis, reason string) RuntimeFigures {
	return RuntimeFigures{
		Runtime:           rt,
		RuntimeBasis:      basis,
		GCCycles:          notMeasured("gc_cycles", "count", endpointSource, defGCCycles, reason),
		GCSeconds:         notMeasured("gc_seconds", "seconds", endpointSource, defGCSeconds, reason),
		RuntimeCPUSeconds: notMeasured("runtime_cpu_seconds", "seconds", endpointSource, defRuntimeCPU, reason),
		AllocBytes:        notMeasured("alloc_bytes", "bytes", endpointSource, defAlloc, reason),
		HeapLiveBytes:     notMeasured("heap_live_bytes", "bytes", endpointSource, defHeapLive, reason),
		HeapUsedBytes:     notMeasured("heap_used_bytes", "bytes", endpointSource, defHeapUsed, reason),
	}
}

// MapRuntime reads the runtime figures from a scrape. rt is the target's runtime, or RuntimeUnknown to detect
// it (see Detect). When the runtime cannot be told, every figure is not measured with the reason, and the
// error says so too.
func MapRuntime(e Exposition, rt Runtime) (RuntimeFigures, error) {
	basis := "set by the caller"
	if rt == RuntimeUnknown {
		detected, by, err := Detect(e)
		if err != nil {
			return runtimeNotMeasured(RuntimeUnknown, "", err.Error()), err
		}
		rt, basis = detected, "detected from series "+by
	}
	var r RuntimeFigures
	switch rt {
	case RuntimeGo:
		r = mapGo(e)
	case RuntimeNode:
		r = mapNode(e)
	case RuntimeDotNet:
		r = mapDotNet(e)
	case RuntimeJVM:
		r = mapJVM(e)
	default:
		_, err := ParseRuntime(string(rt))
		return runtimeNotMeasured(rt, basis, err.Error()), err
	}
	appendSelfCPU(e, &r)
	r.Runtime, r.RuntimeBasis = rt, basis
	return r, nil
}

// Go: client_golang's Go collector (prometheus/go_collector.go, go_collector_latest.go). Its runtime/metrics
// series are named by internal.RuntimeMetricsToProm: "go_" + path with "/" and "-" as "_" + "_" + unit, and
// "_total" for cumulative non-histograms, so /gc/cycles/total:gc-cycles is go_gc_cycles_total_gc_cycles_total.
func mapGo(e Exposition) RuntimeFigures {
	const rmMissing = "client_golang publishes it only with runtime/metrics collection enabled (collectors.WithGoCollectorRuntimeMetrics)"
	r := RuntimeFigures{
		GCCycles: pick(e, "gc_cycles", "count", "", read{
			series: "go_gc_cycles_total_gc_cycles_total",
			def:    "completed GC cycles since the process started (runtime/metrics /gc/cycles/total:gc-cycles)",
		}, read{
			series: "go_gc_duration_seconds_count",
			def:    "completed GC cycles since the process started (debug.ReadGCStats NumGC: the count of client_golang's GC pause summary)",
		}),
		GCSeconds: pick(e, "gc_seconds", "seconds", "", read{
			series: "go_cpu_classes_gc_total_cpu_seconds_total",
			def:    "estimated CPU seconds spent on GC since the process started (runtime/metrics /cpu/classes/gc/total:cpu-seconds; the runtime updates it only when a GC cycle ends)",
		}, read{
			series: "go_gc_duration_seconds_sum",
			def:    "wall seconds the world was stopped for GC since the process started (debug.ReadGCStats PauseTotal): stop-the-world pauses only, not the concurrent mark work",
		}),
		RuntimeCPUSeconds: pick(e, "runtime_cpu_seconds", "seconds",
			"the target exposes no go_cpu_classes_total_cpu_seconds_total: "+rmMissing+"; the GC time share is taken over wall time",
			read{
				series: "go_cpu_classes_total_cpu_seconds_total",
				def:    "CPU seconds available to the Go runtime since it started: GOMAXPROCS integrated over wall time (runtime/metrics /cpu/classes/total:cpu-seconds; updated only when a GC cycle ends)",
			}),
		AllocBytes: pick(e, "alloc_bytes", "bytes", "", read{
			series: "go_gc_heap_allocs_bytes_total",
			def:    "bytes allocated on the heap since the process started (runtime/metrics /gc/heap/allocs:bytes)",
		}, read{
			series: "go_memstats_alloc_bytes_total",
			def:    "bytes allocated on the heap since the process started (MemStats.TotalAlloc, which client_golang fills from /gc/heap/allocs:bytes)",
		}),
		AllocObjects: pick(e, "alloc_objects", "count", "", read{
			series: "go_gc_heap_allocs_objects_total",
			def:    "heap allocations (objects) since the process started (runtime/metrics /gc/heap/allocs:objects)",
		}, read{
			series: "go_memstats_mallocs_total",
			def:    "heap allocations (objects) since the process started (MemStats.Mallocs)",
		}),
		GCPauses: readPauses(e, goPauseSeries...),
		HeapLiveBytes: pick(e, "heap_live_bytes", "bytes",
			"the target exposes no go_gc_heap_live_bytes: "+rmMissing+" (go_memstats_heap_alloc_bytes also counts dead objects not yet swept)",
			read{
				series: "go_gc_heap_live_bytes",
				def:    "bytes of heap objects marked live by the last completed GC cycle (runtime/metrics /gc/heap/live:bytes)",
			}),
		HeapUsedBytes: pick(e, "heap_used_bytes", "bytes", "", read{
			series: "go_memstats_heap_alloc_bytes",
			def:    "bytes of allocated heap objects now, dead ones not yet swept included (MemStats.HeapAlloc: /memory/classes/heap/objects:bytes)",
		}, read{
			series: "go_memory_classes_heap_objects_bytes",
			def:    "bytes of allocated heap objects now, dead ones not yet swept included (runtime/metrics /memory/classes/heap/objects:bytes)",
		}),
	}
	for _, k := range []struct{ kind, series, def string }{
		{"automatic", "go_gc_cycles_automatic_gc_cycles_total", "GC cycles the runtime started on its own since the process started (runtime/metrics /gc/cycles/automatic:gc-cycles)"},
		{"forced", "go_gc_cycles_forced_gc_cycles_total", "GC cycles the application forced with runtime.GC since the process started (runtime/metrics /gc/cycles/forced:gc-cycles)"},
	} {
		if !e.has(k.series) {
			continue
		}
		r.GCKinds = append(r.GCKinds, KindFigures{
			Kind:   k.kind,
			Cycles: pick(e, "gc_cycles", "count", "", read{series: k.series, def: k.def}),
			Seconds: notMeasured("gc_seconds", "seconds", endpointSource, defGCSeconds,
				"the Go runtime does not split GC time by trigger"),
		})
	}
	r.Extra = append(r.Extra,
		pick(e, "goroutines", "count", "", read{
			series: "go_sched_goroutines_goroutines",
			def:    "live goroutines (runtime/metrics /sched/goroutines:goroutines)",
		}, read{
			series: "go_goroutines",
			def:    "live goroutines (runtime.NumGoroutine)",
		}),
		pick(e, "heap_goal_bytes", "bytes", "", read{
			series: "go_gc_heap_goal_bytes",
			def:    "heap size at which the next GC cycle starts (runtime/metrics /gc/heap/goal:bytes)",
		}, read{
			series: "go_memstats_next_gc_bytes",
			def:    "heap size at which the next GC cycle starts (MemStats.NextGC: /gc/heap/goal:bytes)",
		}),
		pick(e, "heap_objects", "count", "", read{
			series: "go_gc_heap_objects_objects",
			def:    "objects in the heap, live and not yet swept (runtime/metrics /gc/heap/objects:objects)",
		}, read{
			series: "go_memstats_heap_objects",
			def:    "objects in the heap, live and not yet swept (MemStats.HeapObjects)",
		}),
	)
	return r
}

// Node: prom-client's collectDefaultMetrics (lib/metrics/gc.js, heapSizeAndUsed.js, eventLoopLag.js). The GC
// histogram is fed by a perf_hooks PerformanceObserver on 'gc' entries that observes only the first entry of
// each callback (list.getEntries()[0]), and a label value appears only once a GC of that kind was seen.
func mapNode(e Exposition) RuntimeFigures {
	const (
		gcMissing  = "the target exposes no nodejs_gc_duration_seconds: prom-client writes it only once it has observed a GC (or its gc metric is disabled)"
		lowerBound = "; prom-client records only the first GC entry of each PerformanceObserver callback, so this is a lower bound"
	)
	r := RuntimeFigures{
		GCCycles: pick(e, "gc_cycles", "count", gcMissing, read{
			series: "nodejs_gc_duration_seconds_count",
			sel:    `{kind=~"major|minor"}`,
			filter: func(p point) bool { k := p.label("kind"); return k == "major" || k == "minor" },
			// A kind appears once prom-client has observed a GC of that kind.
			absentIsZero: true,
			def:          "V8 collections since prom-client started: scavenges (minor) and mark-compacts (major), from perf_hooks 'gc' entries" + lowerBound,
		}),
		GCSeconds: pick(e, "gc_seconds", "seconds", gcMissing, read{
			series: "nodejs_gc_duration_seconds_sum",
			sel:    " summed over kind",
			def:    "wall seconds of GC events of every kind since prom-client started (perf_hooks 'gc' entry durations, main-thread time)" + lowerBound,
		}),
		RuntimeCPUSeconds: notMeasured("runtime_cpu_seconds", "seconds", endpointSource, defRuntimeCPU, reasonWallTime),
		AllocBytes: notMeasured("alloc_bytes", "bytes", endpointSource, defAlloc,
			"the Node target exposes no allocation counter (prom-client's default metrics have none)"),
		HeapLiveBytes: notMeasured("heap_live_bytes", "bytes", endpointSource, defHeapLive,
			"the Node target exposes no heap-after-GC figure (prom-client's default metrics have none; nodejs_heap_size_used_bytes includes garbage not yet collected)"),
		HeapUsedBytes: pick(e, "heap_used_bytes", "bytes", "", read{
			series: "nodejs_heap_size_used_bytes",
			def:    "bytes of the V8 heap in use now, garbage not yet collected included (process.memoryUsage().heapUsed)",
		}),
	}
	// The GC histogram (a gcMissing GC count is not measured either way) has a count, a sum or both per kind.
	for _, kind := range e.labelValues("nodejs_gc_duration_seconds_count", "kind", "major", "minor", "incremental", "weakcb") {
		sel := fmt.Sprintf("{kind=%q}", kind)
		r.GCKinds = append(r.GCKinds, KindFigures{
			Kind: kind,
			Cycles: pick(e, "gc_cycles", "count", "", read{
				series: "nodejs_gc_duration_seconds_count", sel: sel, filter: labelIs("kind", kind),
				def: "GC events of this kind since prom-client started (perf_hooks 'gc' entries)" + lowerBound,
			}),
			Seconds: pick(e, "gc_seconds", "seconds", "", read{
				series: "nodejs_gc_duration_seconds_sum", sel: sel, filter: labelIs("kind", kind),
				def: "wall seconds of GC events of this kind since prom-client started (perf_hooks 'gc' entry durations)" + lowerBound,
			}),
		})
	}
	// Node has no goroutines; what a finished phase must release are its
	// libuv handles (sockets, timers, servers, child processes): the same
	// check, a count that is back at its baseline once the load's
	// connections are closed.
	r.Extra = append(r.Extra, pick(e, "goroutines", "count", "", read{
		series: "nodejs_active_handles_total",
		def:    "Node's analogue of goroutines: active libuv handles (sockets, servers, timers, child processes) keeping the event loop alive (process._getActiveHandles().length, prom-client's nodejs_active_handles_total)",
	}))
	r.Extra = append(r.Extra, pick(e, "eventloop_lag_p99_seconds", "seconds", "", read{
		series: "nodejs_eventloop_lag_p99_seconds",
		def:    "99th percentile of the event-loop delay since the endpoint's previous scrape by anyone (perf_hooks.monitorEventLoopDelay, which prom-client resets at each collect)",
	}))
	return r
}

// GoroutineAnalogue names what a runtime's "goroutines" figure counts when
// it is not goroutines: "active handles" for Node (libuv handles, see
// mapNode), "" for Go and runtimes that give no such figure.
func GoroutineAnalogue(rt Runtime) string {
	if rt == RuntimeNode {
		return "active handles"
	}
	return ""
}

// .NET: prometheus-net's DotNetStats (dotnet_collection_count_total by generation, dotnet_total_memory_bytes)
// and, on .NET Core 3.0 and later, the System.Runtime event counters its EventCounterAdapter publishes by
// default: the name is "<source>_<counter>" lowercased with non-alphanumerics as "_"; an incrementing counter
// becomes a counter with "_rate" dropped and "_total" added (alloc-rate: system_runtime_alloc_total), summing
// the increments it receives every UpdateInterval (10 s by default) from when the adapter started.
func mapDotNet(e Exposition) RuntimeFigures {
	const adapter = "; prometheus-net's EventCounterAdapter adds it up from when it started, every update interval (10 s by default)"
	r := RuntimeFigures{
		GCCycles: pick(e, "gc_cycles", "count", "", read{
			series: "dotnet_collection_count_total", sel: `{generation="0"}`, filter: labelIs("generation", "0"),
			def: "garbage collections since the process started (GC.CollectionCount(0): every collection includes generation 0)",
		}),
		GCSeconds: pick(e, "gc_seconds", "seconds",
			"prometheus-net's DotNetStats exposes no GC time, and system_runtime_total_pause_time_by_gc_total (the System.Runtime event counter total-pause-time-by-gc, .NET 7 and later, through prometheus-net's EventCounterAdapter) is absent",
			read{
				series: "system_runtime_total_pause_time_by_gc_total", scale: 0.001,
				def: "seconds the runtime was paused for GC (System.Runtime event counter total-pause-time-by-gc: GC.GetTotalPauseDuration, in ms, here in seconds)" + adapter,
			}),
		RuntimeCPUSeconds: notMeasured("runtime_cpu_seconds", "seconds", endpointSource, defRuntimeCPU, reasonWallTime),
		AllocBytes: pick(e, "alloc_bytes", "bytes",
			"the .NET target exposes no allocation counter: prometheus-net's DotNetStats has none, and system_runtime_alloc_total (the System.Runtime event counter alloc-rate, through prometheus-net's EventCounterAdapter) is absent",
			read{
				series: "system_runtime_alloc_total",
				def:    "bytes allocated on the managed heap (System.Runtime event counter alloc-rate: increments of GC.GetTotalAllocatedBytes)" + adapter,
			}),
		HeapLiveBytes: notMeasured("heap_live_bytes", "bytes", endpointSource, defHeapLive,
			"the .NET target exposes no heap-after-GC figure (dotnet_total_memory_bytes includes garbage not yet collected)"),
		HeapUsedBytes: pick(e, "heap_used_bytes", "bytes", "", read{
			series: "dotnet_total_memory_bytes",
			def:    "bytes the GC counts as allocated now, garbage not yet collected included (GC.GetTotalMemory(false))",
		}),
	}
	for _, gen := range e.labelValues("dotnet_collection_count_total", "generation", "0", "1", "2") {
		r.GCKinds = append(r.GCKinds, KindFigures{
			Kind: "gen" + gen,
			Cycles: pick(e, "gc_cycles", "count", "", read{
				series: "dotnet_collection_count_total", sel: fmt.Sprintf("{generation=%q}", gen), filter: labelIs("generation", gen),
				def: "collections of generation " + gen + " since the process started (GC.CollectionCount(" + gen + ")): a collection of an older generation counts for every younger one too",
			}),
			Seconds: notMeasured("gc_seconds", "seconds", endpointSource, defGCSeconds,
				"prometheus-net gives no GC time per generation"),
		})
	}
	for _, x := range []struct{ name, unit, series, def string }{
		{"threadpool_threads", "count", "system_runtime_threadpool_thread_count", "thread-pool threads (System.Runtime event counter threadpool-thread-count, as of prometheus-net's EventCounterAdapter's last update)"},
		{"time_in_gc_percent", "percent", "system_runtime_time_in_gc", "percent of the time between the last two GCs' ends spent in the last GC (System.Runtime event counter time-in-gc: GC.GetLastGCPercentTimeInGC)"},
	} {
		if e.has(x.series) {
			r.Extra = append(r.Extra, pick(e, x.name, x.unit, "", read{series: x.series, def: x.def}))
		}
	}
	return r
}

// JVM: client_java. 0.x simpleclient_hotspot (GarbageCollectorExports, MemoryPoolsExports,
// MemoryAllocationExports, ThreadExports) and 1.x prometheus-metrics-instrumentation-jvm
// (JvmGarbageCollectorMetrics, JvmMemoryMetrics, JvmMemoryPoolAllocationMetrics, JvmThreadsMetrics) share
// jvm_gc_collection_seconds (a summary by gc without quantiles), jvm_memory_pool_allocated_bytes_total,
// jvm_memory_pool_collection_used_bytes and jvm_threads_current; the heap in use is jvm_memory_bytes_used in
// 0.x and jvm_memory_used_bytes in 1.x.
func mapJVM(e Exposition) RuntimeFigures {
	isEden := func(p point) bool { return strings.Contains(p.label("pool"), "Eden") }
	allocMissing := "the target exposes no jvm_memory_pool_allocated_bytes_total (client_java's JvmMemoryPoolAllocationMetrics, MemoryAllocationExports in 0.x)"
	if e.has("jvm_memory_pool_allocated_bytes_total") {
		allocMissing = "jvm_memory_pool_allocated_bytes_total has no Eden pool (a collector without a young generation): its per-pool increases cannot tell allocation from promotion"
	}
	r := RuntimeFigures{
		GCCycles: pick(e, "gc_cycles", "count", "", read{
			series: "jvm_gc_collection_seconds_count", sel: " summed over gc",
			def: "collections since the JVM started, summed over its collectors (GarbageCollectorMXBean.getCollectionCount)",
		}),
		GCSeconds: pick(e, "gc_seconds", "seconds", "", read{
			series: "jvm_gc_collection_seconds_sum", sel: " summed over gc",
			def: "accumulated collection time since the JVM started, summed over its collectors (GarbageCollectorMXBean.getCollectionTime, ms resolution): pause time for stop-the-world collectors, concurrent wall time for beans such as 'G1 Concurrent GC'",
		}),
		RuntimeCPUSeconds: notMeasured("runtime_cpu_seconds", "seconds", endpointSource, defRuntimeCPU, reasonWallTime),
		AllocBytes: pick(e, "alloc_bytes", "bytes", allocMissing, read{
			series: "jvm_memory_pool_allocated_bytes_total", sel: ` summed over pools named "*Eden*"`, filter: isEden,
			def: "bytes allocated in the young generation's Eden pools since client_java registered its GC listener (each GC's pool usage before it minus after the previous one): updated only at collections",
		}),
		HeapLiveBytes: pick(e, "heap_live_bytes", "bytes", "", read{
			series: "jvm_memory_pool_collection_used_bytes", sel: " summed over pool",
			def: "bytes in use after the last collection of each memory pool, summed over the pools that report it (MemoryPoolMXBean.getCollectionUsage): each pool's figure is as old as its own last collection",
		}),
		HeapUsedBytes: pick(e, "heap_used_bytes", "bytes", "", read{
			series: "jvm_memory_used_bytes", sel: `{area="heap"}`, filter: labelIs("area", "heap"),
			def: "bytes of heap in use now, garbage not yet collected included (MemoryMXBean.getHeapMemoryUsage().getUsed(); client_java 1.x)",
		}, read{
			series: "jvm_memory_bytes_used", sel: `{area="heap"}`, filter: labelIs("area", "heap"),
			def: "bytes of heap in use now, garbage not yet collected included (MemoryMXBean.getHeapMemoryUsage().getUsed(); client_java 0.x)",
		}),
	}
	for _, gc := range e.labelValues("jvm_gc_collection_seconds_count", "gc") {
		sel := fmt.Sprintf("{gc=%q}", gc)
		r.GCKinds = append(r.GCKinds, KindFigures{
			Kind: gc,
			Cycles: pick(e, "gc_cycles", "count", "", read{
				series: "jvm_gc_collection_seconds_count", sel: sel, filter: labelIs("gc", gc),
				def: "collections by this collector since the JVM started (GarbageCollectorMXBean.getCollectionCount)",
			}),
			Seconds: pick(e, "gc_seconds", "seconds", "", read{
				series: "jvm_gc_collection_seconds_sum", sel: sel, filter: labelIs("gc", gc),
				def: "accumulated collection time of this collector since the JVM started (GarbageCollectorMXBean.getCollectionTime, ms resolution)",
			}),
		})
	}
	r.Extra = append(r.Extra, pick(e, "jvm_threads", "count", "", read{
		series: "jvm_threads_current",
		def:    "live JVM threads, daemon and not (ThreadMXBean.getThreadCount)",
	}))
	return r
}
