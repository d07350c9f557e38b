package report

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/termtext"
)

// SummaryWidth is the width the end summary is laid out for, in columns:
// it fits a terminal of 100 columns (a CI log, a laptop's split pane).
const SummaryWidth = 100

// SummaryOptions configure the end summary.
type SummaryOptions struct {
	// Width is the summary's width in columns; 0 means SummaryWidth.
	// Below the tables' natural width, the name columns shrink and the
	// least needed columns are left out (p90, max, p50; the KPI interval,
	// the arms' values).
	Width int
	// Colour paints the verdict word (PASS green, FAIL red, INCONCLUSIVE
	// and the rest yellow); the caller decides (termtext.UseColour).
	Colour bool
	// Dir is the run directory, named on the summary's last line; "" leaves
	// the line out.
	Dir string
}

// Summary writes the end of a run for a terminal, every line within
// opts.Width columns (a narrower terminal's width, at most SummaryWidth): per phase (grouped by arm, in the order they ran)
// requests, errors, throughput, latency p50/p90/p99/max and, over the steady
// window, CPU per request, GC % and allocation per request, with the
// totals; the KPI rows with ✓/✗/? and their intervals; the observer cost,
// rounds, max-load and subscription lines; every reason the verdict is not
// pass; the verdict, the run's duration and where the reports are.
func (r *Report) Summary(w io.Writer, opts SummaryOptions) error {
	width := opts.Width
	if width <= 0 {
		width = SummaryWidth
	}
	var lines []string
	add := func(s string) { lines = append(lines, termtext.Wrap(s, width, "    ")...) }
	lines = append(lines, r.phaseTable(width)...)
	if len(r.KPIs) > 0 {
		lines = append(lines, "")
		add(r.kpiHeading())
		lines = append(lines, r.kpiTable(width)...)
		add("✓ pass, ✗ fail, ? inconclusive or not measured, · not gated (information), n/m: not measured")
	}
	for _, x := range r.ScrapeWarnings() {
		add("observer cost: " + x)
	}
	if n := len(r.Rounds); n > 0 {
		add(fmt.Sprintf("%d interleaved %s; values are means across rounds and the variance is the change between those means; gate: %s (%s), on the interval of the per-round changes", n, plural(n, "round", "rounds"), r.Gate, gateWords(r.Gate)))
	}
	for _, p := range r.Phases {
		if ml := p.MaxLoad; ml != nil {
			add(fmt.Sprintf("%s: peak %s; stopped by %s (%s)", p.Name, summaryPeak(ml), ml.Reason, ml.Detail))
			if k := ml.Knee; k != nil {
				add(fmt.Sprintf("  knee: %s: %s", k.Attribution, k.Reason))
			}
		}
		if sr := p.Subscriptions; sr != nil {
			add(fmt.Sprintf("%s: %s subscriptions, %s/%s events received, %s lost, %s duplicated, p99 %s", p.Name, termtext.Count(int64(sr.Subscriptions)),
				termtext.Count(sr.Received), termtext.Count(sr.Expected), termtext.Count(sr.Lost), termtext.Count(sr.Duplicated), termtext.Millis(sr.LatencyMs.P99)))
		}
	}
	if reasons := r.Reasons(); len(reasons) > 0 {
		lines = append(lines, "", "Why the verdict is not pass:")
		for _, x := range reasons {
			lines = append(lines, termtext.Wrap("  - "+x, width, "    ")...)
		}
	}
	lines = append(lines, "")
	verdict := "verdict: " + termtext.Paint(r.Verdict.Word(), verdictColour(r.Verdict), opts.Colour)
	if r.Error != "" {
		verdict += " (" + r.Error + ")"
	}
	lines = append(lines, termtext.Wrap(verdict, width, "    ")...)
	took := "not finished"
	if !r.FinishedAt.IsZero() && !r.StartedAt.IsZero() {
		took = termtext.Duration(r.FinishedAt.Sub(r.StartedAt))
	}
	add(fmt.Sprintf("run %s, profile %s, %d phases in %s", r.Run, r.Profile, len(r.Phases), took))
	if opts.Dir != "" {
		add(fmt.Sprintf("reports: %s (also report.md, report.html, junit.xml)", filepath.Join(opts.Dir, JSONFile)))
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n")+"\n")
	return err
}

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// summaryPeak is peakText with the throughput humanised.
func summaryPeak(ml *MaxLoad) string {
	if ml.PeakWindowEnd.IsZero() {
		return peakText(ml)
	}
	return fmt.Sprintf("%s req/s with %s users", termtext.Rate(ml.PeakThroughputRPS), termtext.Count(int64(ml.PeakUsers)))
}

// verdictColour is the colour of a verdict word: green for pass, red for
// fail and aborted, yellow for the rest (inconclusive, not measured).
func verdictColour(o kpi.Outcome) termtext.Colour {
	switch o {
	case kpi.OutcomePass:
		return termtext.Green
	case kpi.OutcomeFail, kpi.OutcomeAborted:
		return termtext.Red
	}
	return termtext.Yellow
}

// phaseTable is the summary's table of phases: one row per phase, grouped
// by arm in the order the arms first ran, and a total row.
func (r *Report) phaseTable(width int) []string {
	rows := [][]string{{"Phase", "requests", "errors", "req/s", "p50", "p90", "p99", "max", "CPU/req", "GC %", "alloc/req"}}
	first, second := r.ArmTitles()
	var arms []string
	for _, p := range r.Phases {
		if !slices.Contains(arms, p.Arm) {
			arms = append(arms, p.Arm)
		}
	}
	var requests, errors int64
	for _, arm := range arms {
		rows = append(rows, []string{armTitle(arm, first, second)})
		for _, p := range r.Phases {
			if p.Arm != arm {
				continue
			}
			l := p.LatencyMs
			row := []string{"  " + p.Name, termtext.Count(p.Requests), termtext.Count(p.Errors), termtext.Rate(p.ThroughputRPS),
				termtext.Millis(l.P50), termtext.Millis(l.P90), termtext.Millis(l.P99), termtext.Millis(l.Max)}
			rows = append(rows, append(row, steadyCells(p)...))
			requests, errors = requests+p.Requests, errors+p.Errors
		}
	}
	rows = append(rows, []string{"total", termtext.Count(requests), termtext.Count(errors)})
	right := []bool{false, true, true, true, true, true, true, true, true, true, true}
	// Narrower than the table: p90, then max, then p50 go first.
	lines := termtext.Table(rows, termtext.Layout{Right: right, Drop: []int{5, 7, 4}, Gap: 1}, width)
	return append(lines, termtext.Wrap("Latency: every request. CPU/req, GC %, alloc/req: the target's, over the phase's steady window.", width, "    ")...)
}

// armTitle names an arm's group of phases: "REST arm" for rest (first),
// "GraphQL arm" for graphql (second), else the arm as recorded.
func armTitle(arm, first, second string) string {
	switch arm {
	case "rest":
		return first + " arm"
	case "graphql":
		return second + " arm"
	case "":
		return "no arm"
	}
	return arm + " arm"
}

// shortVariance is a row's variance with "pt" for points (as the limit
// is written), so the KPI rows fit.
func shortVariance(k kpi.Result) string {
	return strings.Replace(variance(k), " points", " pt", 1)
}

// steadyCells are a phase's CPU per request, GC % and allocation per
// request over its steady window: "n/m" when not measured, "—" when the
// phase has no resource summary (never 0).
func steadyCells(p Phase) []string {
	s := p.Resources
	if s == nil {
		return []string{"—", "—", "—"}
	}
	pr := p.PerRequest
	cell := func(missing map[string]string, key, v string) string {
		if _, ok := missing[key]; ok {
			return "n/m"
		}
		return v
	}
	return []string{cell(pr.NotMeasured, "cpu_us", fmt.Sprintf("%.1f µs", pr.CPUMicros)), cell(s.NotMeasured, "gc_percent", fmt.Sprintf("%.2f %%", s.GCPercent)),
		cell(pr.NotMeasured, "alloc_bytes", termtext.Bytes(pr.AllocBytes))}
}

// kpiHeading titles the summary's KPI rows: the comparison, and the
// intervals' confidence and rounds when the rows have intervals.
func (r *Report) kpiHeading() string {
	h := r.comparisonHeading()
	for _, k := range r.KPIs {
		if iv := k.Interval; iv != nil {
			return fmt.Sprintf("%s (intervals: %.0f %% confidence, %d %s)", h, iv.Confidence*100, iv.N, plural(iv.N, "round", "rounds"))
		}
	}
	return h
}

// kpiTable is the summary's KPI rows: a mark, the title, both arms'
// values, the variance, its interval and the limit.
func (r *Report) kpiTable(width int) []string {
	first, second := r.ArmTitles()
	rows := [][]string{{"  KPI", first, second, "variance", "interval", "limit"}}
	for _, k := range r.KPIs {
		rows = append(rows, []string{kpiMark(k) + " " + k.Title, summaryArmValue(k, true), summaryArmValue(k, false), shortVariance(k), shortInterval(k), strings.Replace(limit(k), " points", " pt", 1)})
	}
	// Narrower than the rows: the interval goes first (the reasons give
	// it for every row that did not pass), then the arms' values.
	return termtext.Table(rows, termtext.Layout{Right: []bool{false, true, true, true, true, false}, Drop: []int{4, 1, 2}, Gap: 2, MinName: 24}, width)
}

// kpiMark is a KPI row's mark: ✓ pass, ✗ fail, ? inconclusive or not
// measured, · not gated, — no control group.
func kpiMark(k kpi.Result) string {
	switch {
	case k.NoControl:
		return "—"
	case !k.Gated:
		return "·"
	case k.Outcome == kpi.OutcomeInconclusive || k.Outcome == kpi.OutcomeNotMeasured:
		return "?"
	case k.Pass:
		return "✓"
	}
	return "✗"
}

// summaryArmValue is an arm's value of a row, humanised: first is the
// first arm (REST), else the second.
func summaryArmValue(k kpi.Result, first bool) string {
	switch {
	case first && k.NoControl:
		return "—"
	case first && k.RESTNotMeasured, !first && k.GraphQLNotMeasured:
		return "n/m"
	}
	v := k.GraphQL
	if first {
		v = k.REST
	}
	switch k.Unit {
	case "req/s":
		return termtext.Rate(v) + " req/s"
	case "B":
		return termtext.Bytes(v)
	case "ms":
		return termtext.Millis(v)
	}
	return value(v, k.Unit)
}

// shortInterval is a row's interval of the delta in its unit, without the
// confidence and rounds (the KPI heading gives them): "[+9.10, +15.00]".
func shortInterval(k kpi.Result) string {
	iv := k.Interval
	switch {
	case iv == nil:
		return "—"
	case !iv.Finite():
		return "unbounded"
	case k.DeltaUnit == "points":
		return fmt.Sprintf("[%+.2f, %+.2f]", iv.Lo, iv.Hi)
	}
	return fmt.Sprintf("[%+.1f, %+.1f] %%", iv.Lo, iv.Hi)
}
