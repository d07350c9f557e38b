package kpi

import (
	"strings"

	"github.com/soakd/soakd/internal/exitcode"
)

// Outcome is soakd's one verdict vocabulary: the outcome of a judged row
// (a KPI, a check, a memory rule, a drift rule, a compare row) and of a whole
// run. A rule that was not judged (informational) has no outcome ("").
type Outcome string

// The outcomes. Only OutcomePass passes; everything else keeps a gate shut.
const (
	// OutcomePass: the whole confidence interval lies inside the limit.
	OutcomePass Outcome = "pass"
	// OutcomeFail: the whole confidence interval lies beyond the limit.
	OutcomeFail Outcome = "fail"
	// OutcomeInconclusive: the interval straddles the limit; more rounds
	// would settle it.
	OutcomeInconclusive Outcome = "inconclusive"
	// OutcomeNotMeasured: the figure lacks the data to be judged (too few
	// samples, GC cycles or rounds); its reason says what was short.
	OutcomeNotMeasured Outcome = "not_measured"
	// OutcomeAborted: the run stopped before it could be judged.
	OutcomeAborted Outcome = "aborted"
	// OutcomeRunning: the run is still going; nothing is judged yet.
	OutcomeRunning Outcome = "running"
)

// Combine rolls outcomes up into one: fail if any failed; otherwise
// aborted, then not measured or inconclusive (both read as inconclusive for
// a gate), then pass. Empty outcomes (informational rows) are skipped. No
// judged outcome at all is inconclusive: no evidence is not a pass.
func Combine(os ...Outcome) Outcome {
	var fail, aborted, open, pass bool
	for _, o := range os {
		switch o {
		case OutcomeFail:
			fail = true
		case OutcomeAborted, OutcomeRunning:
			aborted = true
		case OutcomeInconclusive, OutcomeNotMeasured:
			open = true
		case OutcomePass:
			pass = true
		}
	}
	switch {
	case fail:
		return OutcomeFail
	case aborted:
		return OutcomeAborted
	case open || !pass:
		return OutcomeInconclusive
	}
	return OutcomePass
}

// Word is the outcome as the terminal and the reports write a verdict:
// upper case, words apart ("FAIL", "NOT MEASURED").
func (o Outcome) Word() string {
	return strings.ToUpper(strings.ReplaceAll(string(o), "_", " "))
}

// ExitCode is the exit code a run, soak, comparison or A/B session with
// this verdict gives CI: 0 pass, 1 fail, 4 inconclusive (not measured
// too), 3 for anything else (aborted, still running).
func (o Outcome) ExitCode() exitcode.Code {
	switch o {
	case OutcomePass:
		return exitcode.Pass
	case OutcomeFail:
		return exitcode.Fail
	case OutcomeInconclusive, OutcomeNotMeasured:
		return exitcode.Inconclusive
	}
	return exitcode.Aborted
}
