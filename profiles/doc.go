// Package profiles samples the resource use of the process under test and turns a phase's samples into
// resource figures.
//
// A [Sampler] runs inside the target process (the soakd daemon). Each [Sample] combines cumulative
// runtime/metrics values (read with metrics.Read, which does not stop the world, unlike
// runtime.ReadMemStats), the sparse change of the GC pause histogram since the previous sample, and the OS's
// view of the process (CPU times, RSS, file descriptors, threads) read through gopsutil.
//
// Samples are kept in a bounded ring of pointer-free records allocated once in [New], so the sampler's own
// memory is constant for the whole run and the garbage collector never has to scan it: a soak's GC figures
// must not drift because the harness is storing its history.
//
// [Summarize] is the pure half: it turns the samples of a steady window into a [Summary] (GC % of CPU,
// process CPU %, pause quantiles, allocation rates, peaks). The definitions follow the project's measurement
// rules: GC % is a ratio of /cpu/classes deltas over the whole window, never of OS CPU time; process CPU % is
// OS user+system time over wall time, as a share of the machine and of one core.
package profiles
