package daemon

import (
	"errors"
	"fmt"
)

// ExitCode is soakd's process exit status, carried on the error chain and
// turned into os.Exit in main alone.
type ExitCode int

// The exit codes, documented in docs/operations.md ("Exit codes").
const (
	// ExitPass: the run completed and every gated KPI passed.
	ExitPass ExitCode = 0
	// ExitFail: the run completed and at least one gated KPI failed.
	ExitFail ExitCode = 1
	// ExitUsage: bad command line or configuration; nothing ran.
	ExitUsage ExitCode = 2
	// ExitAborted: the run could not complete (target or driver failed,
	// or it was interrupted); results so far are written.
	ExitAborted ExitCode = 3
	// ExitInconclusive: the run completed, nothing failed, but at least one
	// gated figure was inconclusive (its interval straddles the limit) or
	// not measured; the report says how many more rounds would settle it.
	ExitInconclusive ExitCode = 4
	// ExitUnreachable: a client command (runs, status, stop, baseline,
	// start) could not reach the control API: nothing listens there, or the
	// connection failed or timed out.
	ExitUnreachable ExitCode = 5
	// ExitUnauthorized: the control API refused the client's token (401
	// or 403).
	ExitUnauthorized ExitCode = 6
	// ExitNotFound: the control API has no run of the id given (404).
	ExitNotFound ExitCode = 7
	// ExitBusy: the control API refused to start a run because another is
	// in progress (409); retry once it ends.
	ExitBusy ExitCode = 8
	// ExitUnavailable: the control API cannot do what was asked right now
	// (503): its history is read-only (a full or unwritable data
	// directory), or its target is not accepting runs; the message says which.
	ExitUnavailable ExitCode = 9
)

// ExitError attaches an exit code to an error.
type ExitError struct {
	Code ExitCode
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// WithCode wraps err so that CodeOf returns code.
func WithCode(code ExitCode, err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: code, Err: err}
}

// Usagef is a bad-usage error (exit 2).
func Usagef(format string, args ...any) error {
	return WithCode(ExitUsage, fmt.Errorf(format, args...))
}

// CodeOf maps an error to its exit code: nil is ExitPass, a *ConfigError is
// ExitUsage, an *ExitError its own code, anything else ExitAborted.
func CodeOf(err error) ExitCode {
	if err == nil {
		return ExitPass
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	var ce *ConfigError
	if errors.As(err, &ce) {
		return ExitUsage
	}
	return ExitAborted
}
