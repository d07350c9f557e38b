// Package workloads is soakd's load engine: it offers load to a soakd target in
// one of three models -- closed-model virtual users (JMeter thread groups with
// a Uniform Random Timer, optionally capped by a duration), an open-model
// arrival schedule at a constant or linearly ramping rate (latency measured
// from each request's intended send time, arrivals beyond max_in_flight
// dropped and counted), or seed 002's maximum-load test (users added every
// interval until a sliding-window failure rule trips) -- validates every
// response the way seed 002's JMeter plans asserted them, and records latency
// in HDR histograms so its memory stays bounded whatever the run length.
//
// The engine runs in the driver process (`soakd drive`), never in the server
// being measured: a driver inside the server would charge its own allocations,
// GC cycles and CPU to the server's figures. Drive and ReadMessages are the two
// ends of the pipe between the daemon and that driver process; they exchange a
// Phase as JSON and then JSON lines of Progress and a final Result.
//
// Decisions that depend on time (the ramp schedules, the arrival pacer,
// think-time draws, the steady window, the failure judge) are pure, clock-free functions, so they are tested without
// sleeping; the engine's timing is tested in virtual time with testing/synctest.
package workloads
