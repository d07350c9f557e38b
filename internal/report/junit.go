package report

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"

	"github.com/soakd/soakd/internal/kpi"
)

// The junit.xml elements follow the JUnit XML that CI servers read (the
// Ant/Jenkins junit-10.xsd; GitLab reads the same): a testcase is passed
// unless it holds a failure (a judged rule that failed), an error (the run
// could not judge it: aborted or still running) or a skipped element (not
// judged: informational, inconclusive or not measured), so that nothing
// unjudged is counted as a passing test. Every count on testsuite and
// testsuites is the number of cases holding that child.

// JUnitSkipped is the Report.JUnitInconclusive value that shows an
// inconclusive verdict as a skipped "run" case instead of a failure.
const JUnitSkipped = "skipped"

// junitSuites is the root element of junit.xml.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr,omitempty"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Time       string          `xml:"time,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	ClassName string `xml:"classname,attr"`
	Name      string `xml:"name,attr"`
	// Time is the run's duration on the "run" case (see JUnit);
	// omitted on the rule cases.
	Time string `xml:"time,attr,omitempty"`
	// Skipped marks a rule that was neither passed nor failed:
	// informational, inconclusive or not measured. CI shows it, and it is
	// not a pass.
	Skipped *junitSkipped `xml:"skipped"`
	// Error marks a case the run could not judge: it was aborted, or is
	// still running.
	Error     *junitFailure `xml:"error"`
	Failure   *junitFailure `xml:"failure"`
	SystemOut *junitText    `xml:"system-out"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// junitText is element text written as CDATA, so that line breaks stay
// readable (encoding/xml writes them as &#xA; in ordinary character data).
type junitText struct {
	Text string `xml:",cdata"`
}

// xmlText replaces the characters XML 1.0 cannot carry (control characters
// such as an ANSI escape in an error message) with U+FFFD: encoding/xml
// does so for attributes but writes CDATA as given.
func xmlText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r',
			r >= 0x20 && r <= 0xD7FF,
			r >= 0xE000 && r <= 0xFFFD,
			r >= 0x10000 && r <= 0x10FFFF:
			return r
		}
		return '\uFFFD'
	}, s)
}

// junitFailure is a failure or an error element: message, type and the
// details as CDATA.
type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

// seconds formats a duration in seconds as JUnit's time attribute
// (xs:decimal, three decimals).
func seconds(v float64) string {
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// encodeJUnit counts s's cases into its attributes and the root's, and
// renders the document.
func encodeJUnit(s junitSuite) ([]byte, error) {
	s.Tests, s.Failures, s.Errors, s.Skipped = len(s.Cases), 0, 0, 0
	for _, c := range s.Cases {
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
	doc := junitSuites{Name: "soakd", Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Time: s.Time, Suites: []junitSuite{s}}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cannot encode junit xml: %w", err)
	}
	return append(append([]byte(xml.Header), out...), '\n'), nil
}

// JUnit renders junit.xml: one testsuite named "soakd <profile>" whose
// testcases are the verdict's rules, so that a CI server shows a failed gate
// as a failed test. Gated KPI rows are testcases of class "kpi" that fail
// when the row fails; informational rows are skipped, with the reason in
// the message and their values in system-out, so that they never count as
// passing tests. Each Check is a testcase of class "check.<group>" named
// "<phase>/<name>" when it belongs to a phase. With interleaved rounds, each
// round's KPI rows are skipped testcases of class "round<N>.kpi": one
// round's point values, informational, since the verdict judges the interval
// across rounds (the aggregated "kpi" row). A gated row or check that is
// inconclusive or not measured is a skipped testcase whose message gives the
// reason. A run that did not finish adds a testcase "run" holding an error
// (not a failure: nothing was judged): of type "aborted" with the run's
// error, or of type "running" for a partial report of a run still in
// progress, so that it never reads as a pass.
//
// The first testcase, "run" of class "soakd", carries the verdict (a
// failure for fail and, of type "inconclusive", for inconclusive unless
// JUnitInconclusive is JUnitSkipped, which skips it; an error for aborted
// or running) and the run's duration as its time; the rule
// cases carry no time, so that the cases' times add up to the run's.
//
// The properties name the compared phases as they ran: rest_phase and
// graphql_phase are the first and second arm's base names (see Compare; in a
// self-check both arms are one API, as the arms property says), rest_phases
// and graphql_phases the comma-separated phases of every round.
func (r *Report) JUnit() ([]byte, error) {
	s := junitSuite{Name: "soakd " + r.Profile}
	runTime := ""
	if !r.StartedAt.IsZero() {
		s.Timestamp = r.StartedAt.UTC().Format("2006-01-02T15:04:05")
		if !r.FinishedAt.IsZero() {
			runTime = seconds(r.FinishedAt.Sub(r.StartedAt).Seconds())
			s.Time = runTime
		}
	}
	s.Properties = []junitProperty{
		{Name: "run", Value: r.Run},
		{Name: "status", Value: r.Status},
		{Name: "verdict", Value: string(r.Verdict)},
		{Name: "target_pid", Value: fmt.Sprint(r.TargetPID)},
		{Name: "rest_phase", Value: r.Compare.REST},
		{Name: "graphql_phase", Value: r.Compare.GraphQL},
	}
	if r.Arms != "" {
		s.Properties = append(s.Properties, junitProperty{Name: "arms", Value: r.Arms})
	}
	ranA, ranB := r.Compare.Ran()
	if len(ranA) > 0 || len(ranB) > 0 {
		s.Properties = append(s.Properties,
			junitProperty{Name: "rest_phases", Value: strings.Join(ranA, ",")},
			junitProperty{Name: "graphql_phases", Value: strings.Join(ranB, ",")})
	}
	if r.Gate != "" {
		s.Properties = append(s.Properties, junitProperty{Name: "gate", Value: r.Gate})
	}

	// The "run" case carries the run's verdict and the run's time, so that
	// a CI widget shows what the exit code says: a failure for fail, a
	// failure of type inconclusive for inconclusive (exit 4 must not read
	// green because every undecided rule is a skipped case), an error for
	// an aborted or running run. The rule cases carry no time: they judge
	// parts of one measurement, and summing their phases counted each phase
	// many times (1,867 s of cases for a 158 s run).
	run := junitCase{ClassName: "soakd", Name: "run", Time: runTime}
	reasons := xmlText(strings.Join(append([]string{"run " + r.Run + ": " + r.Verdict.Word()}, r.Reasons()...), "\n"))
	switch {
	case r.Status == StatusRunning || r.Verdict == kpi.OutcomeRunning:
		run.Error = &junitFailure{Message: "the run is still in progress: this report is partial", Type: "running",
			Text: xmlText("run " + r.Run + " is still running: its verdict is not known yet")}
	case r.Status == StatusAborted || r.Verdict == kpi.OutcomeAborted:
		msg := r.Error
		if msg == "" {
			msg = "the run was aborted"
		}
		run.Error = &junitFailure{Message: msg, Type: "aborted", Text: xmlText("run " + r.Run + " aborted: " + msg)}
	case r.Verdict == kpi.OutcomeFail:
		run.Failure = &junitFailure{Message: fmt.Sprintf("the verdict is FAIL (exit %d): %d rules did not pass", kpi.OutcomeFail.ExitCode(), len(r.Reasons())),
			Type: "fail", Text: reasons}
	case (r.Verdict == kpi.OutcomeInconclusive || r.Verdict == kpi.OutcomeNotMeasured) && r.JUnitInconclusive == JUnitSkipped:
		run.Skipped = &junitSkipped{Message: fmt.Sprintf("the verdict is INCONCLUSIVE (exit %d): nothing failed, but %d rules could not be decided; shown as skipped (report.junit_inconclusive: skipped)",
			kpi.OutcomeInconclusive.ExitCode(), len(r.Reasons()))}
		run.SystemOut = &junitText{Text: reasons}
	case r.Verdict == kpi.OutcomeInconclusive || r.Verdict == kpi.OutcomeNotMeasured:
		run.Failure = &junitFailure{Message: fmt.Sprintf("the verdict is INCONCLUSIVE (exit %d): nothing failed, but %d rules could not be decided; see their skipped cases",
			kpi.OutcomeInconclusive.ExitCode(), len(r.Reasons())), Type: "inconclusive", Text: reasons}
	default:
		run.SystemOut = &junitText{Text: reasons}
	}
	s.Cases = append(s.Cases, run)
	for _, k := range r.KPIs {
		s.Cases = append(s.Cases, kpiCase("kpi", k, true, ""))
	}
	for _, ch := range r.Checks {
		s.Cases = append(s.Cases, checkCase(ch))
	}
	armA, armB := r.ArmTitles()
	for _, rd := range r.Rounds {
		class := fmt.Sprintf("round%d.kpi", rd.Round)
		ctx := fmt.Sprintf("round %d: %s phase %s, %s phase %s", rd.Round, armA, rd.REST, armB, rd.GraphQL)
		for _, k := range rd.KPIs {
			s.Cases = append(s.Cases, kpiCase(class, k, false, ctx))
		}
	}
	return encodeJUnit(s)
}

// kpiCase turns one KPI row into a testcase. canFail is false for rows whose
// outcome does not decide the verdict (one round's point values): they are
// skipped as informational. ctx, when set, is a first line for the output
// naming the round.
func kpiCase(class string, k kpi.Result, canFail bool, ctx string) junitCase {
	c := junitCase{ClassName: class, Name: k.Name}
	var lines []string
	if ctx != "" {
		lines = append(lines, ctx)
	}
	lines = append(lines,
		k.Title,
		"rest: "+restValue(k),
		"graphql: "+gqlValue(k),
		"delta: "+variance(k),
		"limit: "+limit(k),
		"result: "+outcome(k),
		"definition: "+k.Definition,
	)
	if k.Interval != nil {
		lines = append(lines, "interval: "+intervalText(k))
	}
	if k.Reason != "" {
		lines = append(lines, "reason: "+k.Reason)
	}
	c.SystemOut = &junitText{Text: xmlText(strings.Join(lines, "\n"))}
	switch {
	case !k.Gated:
		msg := k.Title + " is informational: it has no limit and does not count towards the verdict"
		if k.Reason != "" {
			msg += " (" + k.Reason + ")"
		}
		c.Skipped = &junitSkipped{Message: msg}
	case !canFail:
		c.Skipped = &junitSkipped{Message: fmt.Sprintf("%s: one round's point values, informational; the verdict judges the interval across rounds (class kpi)", k.Title)}
	case k.Pass:
	case k.Outcome == kpi.OutcomeInconclusive || k.Outcome == kpi.OutcomeNotMeasured:
		c.Skipped = &junitSkipped{Message: fmt.Sprintf("%s %s: %s", k.Title, k.Outcome, k.Reason)}
	default:
		c.Failure = &junitFailure{Message: kpiFailureMessage(k), Type: "kpi", Text: c.SystemOut.Text}
		c.SystemOut = nil
	}
	return c
}

// kpiFailureMessage states a failed row in one line, e.g. "GraphQL CPU
// (share of machine) +13.00 points > +5 points".
func kpiFailureMessage(k kpi.Result) string {
	if k.Delta == nil || k.Threshold == nil {
		return fmt.Sprintf("GraphQL %s has no finite change from REST (REST is 0); limit %s", k.Title, limit(k))
	}
	t := *k.Threshold
	if k.Name == "throughput_rps" {
		return fmt.Sprintf("GraphQL %s %s < %+g %%", k.Title, variance(k), t)
	}
	if k.DeltaUnit == "points" {
		return fmt.Sprintf("GraphQL %s %s > %+g points", k.Title, variance(k), t)
	}
	return fmt.Sprintf("GraphQL %s %s > %+g %%", k.Title, variance(k), t)
}

// checkCase turns one Check into a testcase.
func checkCase(ch Check) junitCase {
	name := ch.Name
	if ch.Phase != "" {
		name = ch.Phase + "/" + ch.Name
	}
	c := junitCase{ClassName: "check." + ch.Group, Name: name}
	result := "pass"
	switch {
	case ch.Outcome == kpi.OutcomeInconclusive || ch.Outcome == kpi.OutcomeNotMeasured:
		result = strings.ToUpper(string(ch.Outcome))
	case !ch.Pass:
		result = "FAIL"
	}
	lines := []string{ch.Title}
	if ch.Outcome == kpi.OutcomeNotMeasured {
		lines = append(lines, "value: not measured", "limit: "+checkValue(ch.Limit, ch.Unit))
	} else {
		lines = append(lines, "value: "+checkValue(ch.Value, ch.Unit), "limit: "+checkValue(ch.Limit, ch.Unit))
	}
	lines = append(lines, "result: "+result)
	if ch.Detail != "" {
		lines = append(lines, "detail: "+ch.Detail)
	}
	if ch.Definition != "" {
		lines = append(lines, "definition: "+ch.Definition)
	}
	text := strings.Join(lines, "\n")
	if ch.Pass {
		c.SystemOut = &junitText{Text: xmlText(text)}
		return c
	}
	if ch.Outcome == kpi.OutcomeInconclusive || ch.Outcome == kpi.OutcomeNotMeasured {
		c.Skipped = &junitSkipped{Message: fmt.Sprintf("%s %s: %s", ch.Title, ch.Outcome, ch.Detail)}
		c.SystemOut = &junitText{Text: xmlText(text)}
		return c
	}
	msg := fmt.Sprintf("%s: %s (limit %s)", ch.Title, checkValue(ch.Value, ch.Unit), checkValue(ch.Limit, ch.Unit))
	if ch.Detail != "" {
		msg += ": " + ch.Detail
	}
	c.Failure = &junitFailure{Message: msg, Type: "check", Text: xmlText(text)}
	return c
}

// checkValue formats a check's value or limit: render.go's units, and plain
// %g for counts and units it does not know.
func checkValue(v float64, unit string) string {
	switch unit {
	case "%", "req/s", "µs", "B", "ms":
		return value(v, unit)
	case "":
		return fmt.Sprintf("%.6g", v)
	}
	return fmt.Sprintf("%.6g %s", v, unit)
}

// JUnit renders the comparison as junit.xml, for CI servers: one testsuite
// "soakd compare" whose testcases are the rows, of class
// "compare.<phase>" and named by metric, plus a testcase "verdict" of class
// "compare" carrying the comparison's verdict. A gated row that passed is a
// passing test and one that failed a failure; an informational row, or an
// inconclusive or not-measured one, is skipped with the reason. The verdict
// case fails with every row that did not pass when the verdict is fail, is
// in error when the new run was aborted (nothing could be judged), and
// fails with type "inconclusive" when inconclusive (exit 4: never green)
// unless the old run's report.junit_inconclusive is skipped, which skips it. The rows' values and the notes
// are in system-out. The cases carry no time: a comparison measures
// nothing itself.
func (c Comparison) JUnit() ([]byte, error) {
	s := junitSuite{Name: "soakd compare", Properties: []junitProperty{
		{Name: "old", Value: c.Old},
		{Name: "new", Value: c.New},
		{Name: "old_status", Value: c.OldStatus},
		{Name: "new_status", Value: c.NewStatus},
		{Name: "verdict", Value: string(c.Verdict)},
	}}
	for _, r := range c.Rows {
		cells := compareCells(r)
		tc := junitCase{ClassName: "compare." + r.Phase, Name: r.Metric}
		text := fmt.Sprintf("phase: %s\nmetric: %s\nold: %s (%d rounds)\nnew: %s (%d rounds)\nchange: %s\nlimit: %s\nresult: %s",
			r.Phase, r.Metric, cells[0], r.OldRounds, cells[1], r.NewRounds, cells[2], cells[3], cells[4])
		if r.Reason != "" {
			text += "\nreason: " + r.Reason
		}
		tc.SystemOut = &junitText{Text: xmlText(text)}
		switch {
		case !r.Gated:
			why := r.Reason
			if why == "" {
				why = "no limit for this metric"
			}
			tc.Skipped = &junitSkipped{Message: fmt.Sprintf("%s %s is informational: %s", r.Phase, r.Metric, strings.TrimPrefix(why, "not gated: "))}
		case r.Pass:
		case r.Outcome == kpi.OutcomeInconclusive || r.Outcome == kpi.OutcomeNotMeasured:
			tc.Skipped = &junitSkipped{Message: fmt.Sprintf("%s %s %s: %s", r.Phase, r.Metric, r.Outcome, r.Reason)}
		default:
			tc.Failure = &junitFailure{Message: fmt.Sprintf("%s %s: change %s, limit %s", r.Phase, r.Metric, cells[2], cells[3]), Type: "compare", Text: tc.SystemOut.Text}
			tc.SystemOut = nil
		}
		s.Cases = append(s.Cases, tc)
	}
	verdict := junitCase{ClassName: "compare", Name: "verdict"}
	lines := append([]string{fmt.Sprintf("comparison %s → %s: %s", c.Old, c.New, c.Verdict.Word())}, c.Reasons()...)
	for _, n := range c.Notes {
		lines = append(lines, "note: "+n)
	}
	text := xmlText(strings.Join(lines, "\n"))
	switch {
	case c.NewStatus == StatusAborted:
		verdict.Error = &junitFailure{Message: fmt.Sprintf("the new run %s was aborted: nothing could be judged", c.New), Type: "aborted", Text: text}
	case c.Verdict == kpi.OutcomeFail:
		failed := 0
		for _, r := range c.Rows {
			if r.Gated && r.Outcome == kpi.OutcomeFail {
				failed++
			}
		}
		verdict.Failure = &junitFailure{Message: fmt.Sprintf("comparison %s → %s fails: %d gated rows failed", c.Old, c.New, failed), Type: "compare", Text: text}
	case c.Verdict == kpi.OutcomePass:
		verdict.SystemOut = &junitText{Text: text}
	case c.JUnitInconclusive == JUnitSkipped:
		verdict.Skipped = &junitSkipped{Message: fmt.Sprintf("comparison %s → %s is %s (exit %d): shown as skipped (the old run's report.junit_inconclusive: skipped); see the notes",
			c.Old, c.New, c.Verdict.Word(), kpi.OutcomeInconclusive.ExitCode())}
		verdict.SystemOut = &junitText{Text: text}
	default:
		// Inconclusive exits 4: a failure of its own type, so a CI widget
		// does not read it as green.
		verdict.Failure = &junitFailure{Message: fmt.Sprintf("comparison %s → %s is %s (exit %d): see the notes", c.Old, c.New, c.Verdict.Word(), kpi.OutcomeInconclusive.ExitCode()),
			Type: "inconclusive", Text: text}
	}
	s.Cases = append(s.Cases, verdict)
	return encodeJUnit(s)
}
