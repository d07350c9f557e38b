package report

import (
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/soakd/soakd/kpi"
)

// junitSuites is the root element of junit.xml.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
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
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *junitFailure `xml:"failure"`
	// Skipped marks a gated rule that was neither passed nor failed:
	// inconclusive or not measured. CI shows it, and it is not a pass.
	Skipped   *junitSkipped `xml:"skipped"`
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

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",cdata"`
}

// JUnit renders junit.xml: one testsuite named "soakd <profile>" whose
// testcases are the verdict's rules, so that a CI server shows a failed gate
// as a failed test. Gated KPI rows are testcases of class "kpi" that fail
// when the row fails; informational rows never fail and carry their values in
// system-out. Each Check is a testcase of class "check.<group>" named
// "<phase>/<name>" when it belongs to a phase. With interleaved rounds, each
// round's KPI rows are testcases of class "round<N>.kpi" that never fail: the
// verdict judges the interval across rounds (the aggregated "kpi" row). A
// gated row or check that is inconclusive or not measured is a skipped
// testcase whose message gives the reason. An aborted run adds a failing
// testcase "run" carrying the error; a partial report of a run still in
// progress adds a failing testcase "run" of type "running", so that it never
// reads as a pass. The properties name the compared phases as they ran:
// rest_phase and graphql_phase are the first and second arm's base names (see
// Compare; in a self-check both arms are one API, as the arms property says),
// rest_phases and graphql_phases the comma-separated phases of every round.
func (r *Report) JUnit() ([]byte, error) {
	s := junitSuite{Name: "soakd " + r.Profile}
	if !r.StartedAt.IsZero() {
		s.Timestamp = r.StartedAt.UTC().Format("2006-01-02T15:04:05")
		if !r.FinishedAt.IsZero() {
			s.Time = fmt.Sprintf("%.3f", r.FinishedAt.Sub(r.StartedAt).Seconds())
		}
	}
	s.Properties = []junitProperty{
		{Name: "run", Value: r.Run},
		{Name: "status", Value: r.Status},
		{Name: "verdict", Value: r.Verdict},
		{Name: "target_pid", Value: fmt.Sprint(r.TargetPID)},
		{Name: "rest_phase", Value: r.Compare.REST},
		{Name: "graphql_phase", Value: r.Compare.GraphQL},
	}
	if r.Arms != "" {
		s.Properties = append(s.Properties, junitProperty{Name: "arms", Value: r.Arms})
	}
	if ranA, ranB := r.Compare.Ran(); len(ranA) > 0 || len(ranB) > 0 {
		s.Properties = append(s.Properties,
			junitProperty{Name: "rest_phases", Value: strings.Join(ranA, ",")},
			junitProperty{Name: "graphql_phases", Value: strings.Join(ranB, ",")})
	}
	if r.Gate != "" {
		s.Properties = append(s.Properties, junitProperty{Name: "gate", Value: r.Gate})
	}

	if r.Status == StatusRunning || r.Verdict == VerdictRunning {
		s.Cases = append(s.Cases, junitCase{ClassName: "soakd", Name: "run",
			Failure: &junitFailure{Message: "the run is still in progress: this report is partial", Type: "running",
				Text: xmlText("run " + r.Run + " is still running: its verdict is not known yet")}})
	} else if r.Status == StatusAborted || r.Verdict == VerdictAborted {
		msg := r.Error
		if msg == "" {
			msg = "the run was aborted"
		}
		s.Cases = append(s.Cases, junitCase{ClassName: "soakd", Name: "run",
			Failure: &junitFailure{Message: msg, Type: "aborted", Text: xmlText("run " + r.Run + " aborted: " + msg)}})
	}
	for _, k := range r.KPIs {
		s.Cases = append(s.Cases, kpiCase("kpi", k, true, ""))
	}
	for _, c := range r.Checks {
		s.Cases = append(s.Cases, checkCase(c))
	}
	armA, armB := r.ArmTitles()
	for _, rd := range r.Rounds {
		class := fmt.Sprintf("round%d.kpi", rd.Round)
		ctx := fmt.Sprintf("round %d: %s phase %s, %s phase %s", rd.Round, armA, rd.REST, armB, rd.GraphQL)
		for _, k := range rd.KPIs {
			s.Cases = append(s.Cases, kpiCase(class, k, false, ctx))
		}
	}

	s.Tests = len(s.Cases)
	for _, c := range s.Cases {
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
	doc := junitSuites{Name: "soakd", Tests: s.Tests, Failures: s.Failures, Suites: []junitSuite{s}}
	out, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cannot encode junit xml: %w", err)
	}
	return append(append([]byte(xml.Header), out...), '\n'), nil
}

// kpiCase turns one KPI row into a testcase. canFail is false for rows whose
// failure does not decide the verdict (a round under the median gate); ctx,
// when set, is a first line for the output naming the round.
func kpiCase(class string, k kpi.Result, canFail bool, ctx string) junitCase {
	c := junitCase{ClassName: class, Name: k.Name}
	var lines []string
	if ctx != "" {
		lines = append(lines, ctx)
	}
	lines = append(lines,
		k.Title,
		"rest: "+value(k.REST, k.Unit),
		"graphql: "+value(k.GraphQL, k.Unit),
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
	text := strings.Join(lines, "\n")
	if !k.Gated || k.Pass {
		c.SystemOut = &junitText{Text: xmlText(text)}
		return c
	}
	if !canFail {
		c.SystemOut = &junitText{Text: xmlText(text + "\none round's point values: the verdict judges the interval across rounds (class kpi)")}
		return c
	}
	if k.Outcome == kpi.OutcomeInconclusive || k.Outcome == kpi.OutcomeNotMeasured {
		c.Skipped = &junitSkipped{Message: fmt.Sprintf("%s %s: %s", k.Title, k.Outcome, k.Reason)}
		c.SystemOut = &junitText{Text: xmlText(text)}
		return c
	}
	c.Failure = &junitFailure{Message: kpiFailureMessage(k), Type: "kpi", Text: xmlText(text)}
	return c
}

// kpiFailureMessage states a failed row in one line, e.g. "GraphQL CPU
// (share of machine) +13.00 points > +5 points".
func kpiFailureMessage(k kpi.Result) string {
	if k.Delta == nil {
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
	lines := []string{
		ch.Title,
		"value: " + checkValue(ch.Value, ch.Unit),
		"limit: " + checkValue(ch.Limit, ch.Unit),
		"result: " + result,
	}
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
