// Package extsample samples a target process that soakd does not host, written in any language, from
// outside: the operating system's view of it by PID (through gopsutil) and its runtime's own figures scraped
// from its Prometheus endpoint (parsed with expfmt).
//
// Every value is a [Figure]: it names where it came from (the OS by PID, or the exact series) and says in one
// line what it is and in which unit. A figure the target does not expose is not measured, with the reason
// ("the Node target exposes no allocation counter"), never 0.
//
// The runtime figures come from the standard library of each runtime, mapped from that library's source:
//
//   - Go with client_golang: the default Go collector (go_gc_duration_seconds, go_memstats_*, go_goroutines)
//     and, when the server enables them, the runtime/metrics series (go_gc_cycles_total_gc_cycles_total,
//     go_cpu_classes_gc_total_cpu_seconds_total, go_gc_heap_allocs_bytes_total, go_gc_heap_live_bytes, …),
//     which are preferred.
//   - Node with prom-client's collectDefaultMetrics (nodejs_gc_duration_seconds by kind,
//     nodejs_heap_size_used_bytes, nodejs_eventloop_lag_p99_seconds).
//   - .NET with prometheus-net (dotnet_collection_count_total by generation, dotnet_total_memory_bytes, and
//     the System.Runtime event counters its EventCounterAdapter publishes).
//   - The JVM with client_java, both the 0.x simpleclient_hotspot names (jvm_memory_bytes_used) and the 1.x
//     names (jvm_memory_used_bytes); jvm_gc_collection_seconds by collector in both.
//
// A [Sample] holds one reading: cumulative counters and gauges at one time. [Between] turns two samples into
// the figures of the window between them (CPU share of the machine and of a core, GC time share, GC cycles,
// allocation rate, heaps), and marks not measured a counter that is missing or went backwards (a restart).
// A [Sampler] takes samples at an interval into a bounded ring.
package extsample
