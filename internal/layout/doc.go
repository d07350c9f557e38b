// Package layout holds no code: its test checks that soakd's packages keep
// the layout the README draws, so it cannot silently decay.
//
// The direction of imports is cli → serve → run → target → builtin → the
// scenario packages (control, internal/graph, internal/donut,
// internal/relational), with daemon/config and the pure packages (kpi,
// report, workloads, profiles, …) below them and the leaves (pin,
// procstat, exitcode, failsig) at the bottom. daemon/builtin is what runs
// inside the measured process: it never reaches the orchestrator (target,
// run, serve, cli, the history, child-process handling), so what the
// measured heap holds can be audited from its imports.
package layout
