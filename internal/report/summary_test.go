package report

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/termtext"
)

// summaryFixture is the fixture with an interval on its first KPI row and
// an inconclusive third, so every mark shows.
func summaryFixture() *Report {
	r := fixture()
	r.KPIs[0].Interval = &kpi.Interval{Center: 13, Lo: 9.1, Hi: 15, N: 4, Confidence: 0.95}
	r.KPIs[2].Outcome, r.KPIs[2].Pass = kpi.OutcomeInconclusive, false
	return r
}

func summary(t *testing.T, r *Report, opts SummaryOptions) string {
	t.Helper()
	var b strings.Builder
	if err := r.Summary(&b, opts); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestSummaryGolden(t *testing.T) {
	golden(t, "summary.txt", summary(t, summaryFixture(), SummaryOptions{Dir: "runs/20261130T100000Z"}))
	// An 80-column terminal: p90 and max and the KPI interval are left out
	// rather than lines wrapped.
	golden(t, "summary-80.txt", summary(t, summaryFixture(), SummaryOptions{Width: 80, Dir: "runs/20261130T100000Z"}))
}

var exponent = regexp.MustCompile(`\d[eE][+-]\d`)

// Every line fits the width, from 80 to 200 columns (100 by default), with
// µ, ✓ and … one column each and the colour codes none; no number is
// written with an exponent.
func TestSummaryFitsTheWidth(t *testing.T) {
	r := summaryFixture()
	for _, w := range []int{0, 80, 100, 120, 200} {
		out := summary(t, r, SummaryOptions{Width: w, Colour: true, Dir: "runs/a-rather-long-directory-name/that-goes-on"})
		limit := w
		if w == 0 {
			limit = SummaryWidth
		}
		for l := range strings.Lines(out) {
			if l = strings.TrimSuffix(l, "\n"); termtext.Width(l) > limit {
				t.Errorf("width %d: %q is %d columns", w, l, termtext.Width(l))
			}
		}
		if exponent.MatchString(out) {
			t.Errorf("a number with an exponent:\n%s", out)
		}
	}
}

// The summary keeps what the table said: every reason, the verdict, the
// phases' figures, the KPI rows with their marks.
func TestSummaryKeepsTheReasonsAndFigures(t *testing.T) {
	r := summaryFixture()
	out := summary(t, r, SummaryOptions{})
	flat := strings.Join(strings.Fields(out), " ")
	for _, x := range r.Reasons() {
		if !strings.Contains(flat, strings.Join(strings.Fields(x), " ")) {
			t.Errorf("reason %q is missing:\n%s", x, out)
		}
	}
	for _, want := range []string{"verdict: FAIL", "80,000", "6,000", "11.7 KiB", "2.9 KiB", "✗ CPU (share of machine)", "? Throughput", "· CPU per request", "[+9.10, +15.00]", "1m00s"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// The verdict word is coloured only when asked (a terminal without
// NO_COLOR): PASS green, FAIL red, INCONCLUSIVE yellow.
func TestSummaryColoursTheVerdict(t *testing.T) {
	for _, tc := range []struct {
		verdict kpi.Outcome
		want    string
	}{{kpi.OutcomePass, "\x1b[1;32mPASS\x1b[0m"}, {kpi.OutcomeFail, "\x1b[1;31mFAIL\x1b[0m"}, {kpi.OutcomeInconclusive, "\x1b[1;33mINCONCLUSIVE\x1b[0m"}} {
		r := fixture()
		r.Verdict = tc.verdict
		if out := summary(t, r, SummaryOptions{Colour: true}); !strings.Contains(out, "verdict: "+tc.want) {
			t.Errorf("%s in colour: %q", tc.verdict, out)
		}
		if out := summary(t, r, SummaryOptions{Colour: false}); strings.Contains(out, "\x1b") {
			t.Errorf("%s without colour has escape codes: %q", tc.verdict, out)
		}
	}
}

// TestSummaryKeepsRoundsApart: at 80 columns a long phase name is cut
// before its round suffix, so the rounds of one phase stay told apart
// ("max-load-gra…" and four "rest-control…" rows were seen).
func TestSummaryKeepsRoundsApart(t *testing.T) {
	r := fixture()
	base := r.Phases
	r.Phases = nil
	for round := 1; round <= 4; round++ {
		for _, p := range base {
			p.Name = fmt.Sprintf("%s-with-a-long-name#%d", p.Name, round)
			r.Phases = append(r.Phases, p)
		}
	}
	var b strings.Builder
	if err := r.Summary(&b, SummaryOptions{Width: 80}); err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 4; round++ {
		if n := strings.Count(b.String(), fmt.Sprintf("…#%d ", round)); n != 2 {
			t.Errorf("round %d's two phases appear %d times cut before their suffix:\n%s", round, n, b.String())
		}
	}
}
