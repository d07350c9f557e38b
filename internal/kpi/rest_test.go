package kpi

import (
	"testing"

	"github.com/soakd/soakd/internal/exitcode"
)

func TestReturned(t *testing.T) {
	f := func(base, now uint64, subs int, want bool) {
		t.Helper()
		if got := Returned(base, now, subs); got != want {
			t.Errorf("Returned(%d, %d, %d) = %v, want %v", base, now, subs, got, want)
		}
	}
	f(15, 15, 0, true)
	f(15, 17, 0, true) // within the slack
	f(15, 18, 0, false)
	f(15, 10, 0, true)
	f(15, 15, 1, false) // a subscription still open
}

// TestOutcomeExitCode: the code CI gets for each verdict.
func TestOutcomeExitCode(t *testing.T) {
	for o, want := range map[Outcome]exitcode.Code{
		OutcomePass: exitcode.Pass, OutcomeFail: exitcode.Fail, OutcomeInconclusive: exitcode.Inconclusive,
		OutcomeNotMeasured: exitcode.Inconclusive, OutcomeAborted: exitcode.Aborted, OutcomeRunning: exitcode.Aborted, "": exitcode.Aborted,
	} {
		if got := o.ExitCode(); got != want {
			t.Errorf("Outcome(%q).ExitCode() = %d, want %d", o, got, want)
		}
	}
	if w := OutcomeNotMeasured.Word(); w != "NOT MEASURED" {
		t.Errorf("Word = %q, want NOT MEASURED", w)
	}
}
