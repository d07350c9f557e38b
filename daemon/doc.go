// Package daemon holds no code: its packages are soakd's roles, one
// concept each, importing one way (serve → run → target → builtin, with
// config below them all; internal/layout's test checks it):
//
//   - config: the configuration (types, strict YAML, overrides, validation).
//   - builtin: only what runs inside the measured process (the built-in
//     target's server, its settle and forced GCs, `soakd target`'s control
//     surface); it never imports the orchestrator.
//   - target: the target as the orchestrator sees it, one file per kind
//     (the `soakd target` child, in process, attach and command).
//   - run: one suite, and the sessions over it (soak, A/B).
//   - serve: the daemon (the control API's runner, scheduled soaks).
package daemon
