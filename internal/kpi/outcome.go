package kpi

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
