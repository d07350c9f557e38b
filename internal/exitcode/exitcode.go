// Package exitcode holds soakd's process exit statuses, carried on the
// error chain and turned into os.Exit in main alone.
package exitcode

import (
	"errors"
	"fmt"
	"strings"
)

// Code is soakd's process exit status, carried on the error chain and
// turned into os.Exit in main alone.
type Code int

// The exit codes, documented in docs/operations.md ("Exit codes").
const (
	// Pass: the run completed and every gated KPI passed.
	Pass Code = 0
	// Fail: the run completed and at least one gated KPI failed.
	Fail Code = 1
	// Usage: bad command line or configuration; nothing ran.
	Usage Code = 2
	// Aborted: the run could not complete (target or driver failed,
	// or it was interrupted); results so far are written.
	Aborted Code = 3
	// Inconclusive: the run completed, nothing failed, but at least one
	// gated figure was inconclusive (its interval straddles the limit) or
	// not measured; the report says how many more rounds would settle it.
	Inconclusive Code = 4
	// Unreachable: a client command (runs, status, stop, baseline,
	// start) could not reach the control API: nothing listens there, or the
	// connection failed or timed out.
	Unreachable Code = 5
	// Unauthorized: the control API refused the client's token (401
	// or 403).
	Unauthorized Code = 6
	// NotFound: the control API has no run of the id given (404).
	NotFound Code = 7
	// Busy: the control API refused to start a run because another is
	// in progress (409); retry once it ends.
	Busy Code = 8
	// Unavailable: the control API cannot do what was asked right now
	// (503): its history is read-only (a full or unwritable data
	// directory), or its target is not accepting runs; the message says which.
	Unavailable Code = 9
)

// Help returns the exit codes as `soakd --help` lists them: one
// "  N  meaning" line per code, in code order.
func Help() string {
	// One line per code, in code order: TestHelpCoversEveryCode checks that
	// every Code constant has one, so a new code cannot be left out of the
	// help the way 9 once was.
	help := [...]struct {
		Code Code
		Text string
	}{
		{Pass, "pass: every gated KPI and check passed"},
		{Fail, "fail: a KPI or check failed"},
		{Usage, "bad usage or configuration; nothing ran"},
		{Aborted, "aborted: the run could not complete (partial results are written)"},
		{Inconclusive, "inconclusive: nothing failed, but a gated figure's interval\n     straddles its limit or was not measured"},
		{Unreachable, "client commands: the control API could not be reached"},
		{Unauthorized, "client commands: the control API refused the token (401/403)"},
		{NotFound, "client commands: no run of that id (404)"},
		{Busy, "start: another run is in progress (409)"},
		{Unavailable, "client commands: the daemon cannot do it now (503): its\n     history is read-only or its target is not accepting runs"},
	}
	var b strings.Builder
	for i, h := range help {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "  %d  %s", h.Code, h.Text)
	}
	return b.String()
}

// Coder is an error that knows its exit code, so that this package need
// not know the error's type (daemon/config's *ConfigError is one).
type Coder interface {
	error
	ExitCode() Code
}

// Error attaches an exit code to an error.
type Error struct {
	Code Code
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// WithCode wraps err so that CodeOf returns code.
func With(code Code, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Usagef is a bad-usage error (exit 2).
func Usagef(format string, args ...any) error {
	return With(Usage, fmt.Errorf(format, args...))
}

// CodeOf maps an error to its exit code: nil is Pass, a *ConfigError is
// Usage, an *Error its own code, anything else Aborted.
func Of(err error) Code {
	if err == nil {
		return Pass
	}
	var ee *Error
	if errors.As(err, &ee) {
		return ee.Code
	}
	var c Coder
	if errors.As(err, &c) {
		return c.ExitCode()
	}
	return Aborted
}
