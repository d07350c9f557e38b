package report

import (
	"encoding/xml"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/kpi"
)

// richFixture is fixture() plus checks, two interleaved rounds under gate
// and a name that needs escaping.
func richFixture(gate string) *Report {
	r := fixture()
	r.Checks = []Check{
		{Group: "errors", Name: "error_free", Title: "Compared arm is error-free", Phase: "rest-control", Unit: "errors", Value: 0, Limit: 0, Pass: true, Definition: "failed requests in the phase"},
		{Group: "errors", Name: "error_free", Title: "Compared arm is error-free", Phase: "graphql-load", Unit: "errors", Value: 3, Limit: 0, Pass: false, Detail: "3 of 80000 requests failed (http_500: 3)", Definition: "failed requests in the phase"},
		{Group: "memory", Name: "heap_slope", Title: "Live heap <trend> & drift", Unit: "B/s", Value: 12.5, Limit: 100, Pass: true, Definition: "least-squares slope of the live heap after GC"},
		{Group: "memory", Name: "heap_returned", Title: "Heap returned", Unit: "B", Pass: false, Outcome: kpi.OutcomeNotMeasured, Detail: "no baseline sample", Definition: "live heap after settle vs before"},
	}
	lim := kpi.Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10}
	rest, gql := r.Phases[0].Figures(), r.Phases[1].Figures()
	good := gql
	good.CPUMachinePercent, good.GCPercent = rest.CPUMachinePercent+1, rest.GCPercent+0.5
	r.Rounds = []Round{
		{Round: 1, REST: "rest-control", GraphQL: "graphql-load", KPIs: kpi.Evaluate(rest, gql, lim)},
		{Round: 2, REST: "rest-control", GraphQL: "graphql-load", KPIs: kpi.Evaluate(rest, good, lim)},
	}
	for i := range r.Rounds {
		r.Rounds[i].Verdict = kpi.Verdict(r.Rounds[i].KPIs)
	}
	r.Gate = gate
	return r
}

// parsedProblem is a failure or an error element.
type parsedProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type parsedCase struct {
	ClassName string         `xml:"classname,attr"`
	Name      string         `xml:"name,attr"`
	Time      *string        `xml:"time,attr"`
	Failure   *parsedProblem `xml:"failure"`
	Error     *parsedProblem `xml:"error"`
	Skipped   *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
	SystemOut string `xml:"system-out"`
}

type parsedSuite struct {
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Cases    []parsedCase `xml:"testcase"`
}

type parsedSuites struct {
	XMLName  xml.Name      `xml:"testsuites"`
	Tests    int           `xml:"tests,attr"`
	Failures int           `xml:"failures,attr"`
	Errors   int           `xml:"errors,attr"`
	Suites   []parsedSuite `xml:"testsuite"`
}

func parseJUnit(t *testing.T, r *Report) parsedSuites {
	t.Helper()
	b, err := r.JUnit()
	if err != nil {
		t.Fatal(err)
	}
	return parseJUnitBytes(t, b)
}

// parseJUnitBytes parses a junit.xml and checks it against the semantics
// CI servers read (Ant/Jenkins junit-10.xsd, GitLab): every testcase has a
// name, a decimal time when it has one, at most one of failure, error and
// skipped, and the counts on testsuite and testsuites are those of its
// cases.
func parseJUnitBytes(t *testing.T, b []byte) parsedSuites {
	t.Helper()
	if !strings.HasPrefix(string(b), xml.Header) {
		t.Errorf("junit.xml must start with the xml header, got %.40q", b)
	}
	var p parsedSuites
	if err := xml.Unmarshal(b, &p); err != nil {
		t.Fatalf("junit.xml is not valid xml: %v\n%s", err, b)
	}
	if len(p.Suites) != 1 {
		t.Fatalf("got %d testsuites, want 1", len(p.Suites))
	}
	s := p.Suites[0]
	var failures, errs, skipped int
	for _, c := range s.Cases {
		if c.Name == "" || c.ClassName == "" {
			t.Errorf("testcase without a name or classname: %+v", c)
		}
		if c.Time != nil && !decimal.MatchString(*c.Time) {
			t.Errorf("testcase %s/%s: time %q is not an xs:decimal", c.ClassName, c.Name, *c.Time)
		}
		n := 0
		if c.Failure != nil {
			failures, n = failures+1, n+1
		}
		if c.Error != nil {
			errs, n = errs+1, n+1
		}
		if c.Skipped != nil {
			skipped, n = skipped+1, n+1
		}
		if n > 1 {
			t.Errorf("testcase %s/%s holds %d of failure, error and skipped; want at most one", c.ClassName, c.Name, n)
		}
	}
	if s.Tests != len(s.Cases) || s.Failures != failures || s.Errors != errs || s.Skipped != skipped {
		t.Errorf("testsuite counts tests %d failures %d errors %d skipped %d; its cases hold %d, %d, %d, %d",
			s.Tests, s.Failures, s.Errors, s.Skipped, len(s.Cases), failures, errs, skipped)
	}
	if p.Tests != s.Tests || p.Failures != s.Failures || p.Errors != s.Errors {
		t.Errorf("testsuites counts %d/%d/%d differ from its one testsuite's %d/%d/%d", p.Tests, p.Failures, p.Errors, s.Tests, s.Failures, s.Errors)
	}
	if s.Time != "" && !decimal.MatchString(s.Time) {
		t.Errorf("testsuite time %q is not an xs:decimal", s.Time)
	}
	return p
}

// decimal matches an xs:decimal as JUnit's time attribute holds it.
var decimal = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

func findCase(cs []parsedCase, class, name string) (parsedCase, bool) {
	for _, c := range cs {
		if c.ClassName == class && c.Name == name {
			return c, true
		}
	}
	return parsedCase{}, false
}

func TestJUnitGolden(t *testing.T) {
	b, err := richFixture(kpi.GateInterval).JUnit()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "junit.xml", string(b))
}

func TestJUnitCases(t *testing.T) {
	for _, tc := range []struct {
		gate string
		// wantFailures: the run's verdict, 2 failing KPI rows + 1 failing
		// check; one round's point values never fail (the interval across
		// rounds decides).
		wantFailures int
	}{
		{kpi.GateInterval, 4},
	} {
		t.Run(tc.gate, func(t *testing.T) {
			r := richFixture(tc.gate)
			p := parseJUnit(t, r)
			s := p.Suites[0]
			if s.Name != "soakd quick" {
				t.Errorf("suite name: got %q, want %q", s.Name, "soakd quick")
			}
			wantTests := 1 + len(r.KPIs) + len(r.Checks) + len(r.Rounds[0].KPIs) + len(r.Rounds[1].KPIs) // the run's verdict case first
			if s.Tests != wantTests || len(s.Cases) != wantTests || p.Tests != wantTests {
				t.Errorf("tests: got suite %d, cases %d, root %d; want %d", s.Tests, len(s.Cases), p.Tests, wantTests)
			}
			failed := 0
			for _, c := range s.Cases {
				if c.Failure != nil {
					failed++
				}
			}
			if s.Failures != tc.wantFailures || failed != tc.wantFailures || p.Failures != tc.wantFailures {
				t.Errorf("failures: got suite %d, cases %d, root %d; want %d", s.Failures, failed, p.Failures, tc.wantFailures)
			}

			cpu, ok := findCase(s.Cases, "kpi", "cpu_machine_percent")
			switch {
			case !ok:
				t.Errorf("no testcase kpi/cpu_machine_percent")
			case cpu.Failure == nil:
				t.Errorf("kpi/cpu_machine_percent: got no failure, want one")
			default:
				if want := "GraphQL CPU (share of machine) +13.00 points > +5 points"; cpu.Failure.Message != want {
					t.Errorf("failure message: got %q, want %q", cpu.Failure.Message, want)
				}
				for _, w := range []string{"rest: 17.00 %", "graphql: 30.00 %", "delta: +13.00 points", "limit: ≤ +5 points"} {
					if !strings.Contains(cpu.Failure.Text, w) {
						t.Errorf("failure text lacks %q:\n%s", w, cpu.Failure.Text)
					}
				}
			}
			if tp, _ := findCase(s.Cases, "kpi", "throughput_rps"); tp.Failure != nil {
				t.Errorf("kpi/throughput_rps passed in the report, got failure %q", tp.Failure.Message)
			}
			info, ok := findCase(s.Cases, "kpi", "cpu_us_per_request")
			if !ok || info.Failure != nil || info.Skipped == nil || !strings.Contains(info.Skipped.Message, "informational") || !strings.Contains(info.SystemOut, "graphql: 101.7 µs") {
				t.Errorf("informational row: got %+v, want a skipped case saying it is informational, its values in system-out", info)
			}
			// Times: the run's case carries the run's 60 s, the rule
			// cases none, so the cases add up to the run.
			for _, c := range s.Cases {
				want := c.ClassName == "soakd" && c.Name == "run"
				if (c.Time != nil) != want || (want && *c.Time != "60.000") {
					t.Errorf("%s/%s: time %v; want 60.000 on soakd/run alone", c.ClassName, c.Name, c.Time)
				}
			}
			if run, _ := findCase(s.Cases, "soakd", "run"); run.Failure == nil || run.Failure.Type != "fail" || !strings.Contains(run.Failure.Text, "FAIL: KPI CPU (share of machine)") {
				t.Errorf("the run's case: %+v; want a failure of type fail listing the reasons", run)
			}
			// Only gated rules that passed are passing tests.
			passing := 0
			for _, c := range s.Cases {
				if c.Failure == nil && c.Error == nil && c.Skipped == nil {
					passing++
				}
			}
			if want := 1 + 2; passing != want { // throughput_rps; two passing checks
				t.Errorf("passing testcases: got %d, want %d (gated rows and checks that passed)", passing, want)
			}
			ch, ok := findCase(s.Cases, "check.errors", "graphql-load/error_free")
			if !ok || ch.Failure == nil || !strings.Contains(ch.Failure.Message, "3 of 80000") {
				t.Errorf("failing check: got %+v, want a failure naming the detail", ch)
			}
			if _, ok := findCase(s.Cases, "check.memory", "heap_slope"); !ok {
				t.Errorf("a check without a phase must be named by its name alone")
			}
			r1, ok := findCase(s.Cases, "round1.kpi", "cpu_machine_percent")
			if !ok {
				t.Fatalf("no testcase round1.kpi/cpu_machine_percent")
			}
			if r1.Failure != nil || r1.Skipped == nil {
				t.Errorf("round 1 cpu: one round's point values must be skipped as informational, got %+v", r1)
			}
			raw, _ := r.JUnit()
			if hr, _ := findCase(s.Cases, "check.memory", "heap_returned"); hr.Skipped == nil || hr.Skipped.Message != "Heap returned not_measured: no baseline sample" {
				t.Errorf("a not-measured check must be a skipped testcase with its reason:\n%s", raw)
			}
			if r2, _ := findCase(s.Cases, "round2.kpi", "cpu_machine_percent"); r2.Failure != nil {
				t.Errorf("round 2 passed, got failure %q", r2.Failure.Message)
			}
		})
	}
}

func TestJUnitThroughputMessage(t *testing.T) {
	r := fixture()
	rest, gql := r.Phases[0].Figures(), r.Phases[1].Figures()
	gql.ThroughputRPS = 5100 // -15 %
	r.KPIs = kpi.Evaluate(rest, gql, kpi.Limits{CPUIncreasePoints: 50, GCIncreasePoints: 10, ThroughputDecreasePercent: 10})
	c, ok := findCase(parseJUnit(t, r).Suites[0].Cases, "kpi", "throughput_rps")
	if !ok || c.Failure == nil {
		t.Fatalf("got %+v, want a failing throughput case", c)
	}
	if want := "GraphQL Throughput -15.0 % < -10 %"; c.Failure.Message != want {
		t.Errorf("got %q, want %q", c.Failure.Message, want)
	}
}

func TestJUnitAborted(t *testing.T) {
	r := &Report{Run: "r1", Profile: "soak <24h> & more", Status: StatusAborted, Verdict: kpi.OutcomeAborted,
		Error: "target exited: signal \"killed\" <oom> \x1b[31m]]>", StartedAt: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	p := parseJUnit(t, r)
	s := p.Suites[0]
	if s.Name != "soakd soak <24h> & more" {
		t.Errorf("suite name: got %q", s.Name)
	}
	if s.Tests != 1 || s.Errors != 1 || s.Failures != 0 || len(s.Cases) != 1 {
		t.Fatalf("got %d tests, %d errors, %d failures; want 1, 1, 0", s.Tests, s.Errors, s.Failures)
	}
	c := s.Cases[0]
	want := "target exited: signal \"killed\" <oom> \uFFFD[31m]]>"
	if c.Name != "run" || c.Error == nil || c.Error.Message != want || c.Error.Type != "aborted" {
		t.Fatalf("got %+v, want case \"run\" in error of type aborted with message %q", c, want)
	}
	if !strings.Contains(c.Error.Text, want) {
		t.Errorf("error text: got %q, want it to contain %q", c.Error.Text, want)
	}
}

func TestJUnitPassingRunHasNoFailure(t *testing.T) {
	r := fixture()
	r.KPIs = kpi.Evaluate(r.Phases[0].Figures(), r.Phases[1].Figures(), kpi.Limits{CPUIncreasePoints: 50, GCIncreasePoints: 10, ThroughputDecreasePercent: 10})
	r.Verdict = kpi.OutcomePass
	p := parseJUnit(t, r)
	if p.Failures != 0 || p.Tests != 1+len(r.KPIs) {
		t.Errorf("got %d tests, %d failures; want %d and 0", p.Tests, p.Failures, 1+len(r.KPIs))
	}
}
