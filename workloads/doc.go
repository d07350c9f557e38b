// Package workloads is soakd's load engine: it plays closed-model virtual users
// (JMeter thread groups with a Uniform Random Timer) against a soakd target,
// validates every response the way seed 002's JMeter plans asserted them, and
// records latency in HDR histograms so its memory stays bounded whatever the
// run length.
//
// The engine runs in the driver process (`soakd drive`), never in the server
// being measured: a driver inside the server would charge its own allocations,
// GC cycles and CPU to the server's figures. Drive and ReadMessages are the two
// ends of the pipe between the daemon and that driver process; they exchange a
// Phase as JSON and then JSON lines of Progress and a final Result.
//
// Decisions that depend on time (the ramp schedule, think-time draws, the
// steady window) are pure, clock-free functions, so they are tested without
// sleeping; the engine's timing is tested in virtual time with testing/synctest.
package workloads
