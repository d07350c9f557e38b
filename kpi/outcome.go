package kpi

// Outcome is what a rule concluded from its data. Only OutcomePass counts as passing: nothing unmeasured
// or undecided passes, and a rule that could not be judged says so instead of failing silently.
type Outcome string

const (
	// OutcomePass: the data show the rule holds.
	OutcomePass Outcome = "pass"
	// OutcomeFail: the data show the rule is broken (or its limit is invalid, which the Detail names).
	OutcomeFail Outcome = "fail"
	// OutcomeInconclusive: the rule was measured, but the data cannot tell pass from fail (for example a
	// confidence interval that straddles the limit); more data would decide.
	OutcomeInconclusive Outcome = "inconclusive"
	// OutcomeNotMeasured: there was not enough data to judge the rule at all; the Detail says what was
	// short and what to change.
	OutcomeNotMeasured Outcome = "not_measured"
)
