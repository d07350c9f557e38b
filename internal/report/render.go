package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/termtext"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

// value formats a metric value with its unit.
func value(v float64, unit string) string {
	switch unit {
	case "%":
		return fmt.Sprintf("%.2f %%", v)
	case "req/s":
		return fmt.Sprintf("%.0f req/s", v)
	case "µs":
		return fmt.Sprintf("%.1f µs", v)
	case "B":
		return fmt.Sprintf("%.0f B", v)
	case "ms":
		return fmt.Sprintf("%.3f ms", v)
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}

// restValue is the first arm's value of a row: "—" when there is no
// control group to give one, "not measured" when it was not measured.
func restValue(r kpi.Result) string {
	switch {
	case r.NoControl:
		return "—"
	case r.RESTNotMeasured:
		return notMeasuredValue
	}
	return value(r.REST, r.Unit)
}

// gqlValue is the second arm's value of a row, "not measured" when it was
// not measured (never a 0).
func gqlValue(r kpi.Result) string {
	if r.GraphQLNotMeasured {
		return notMeasuredValue
	}
	return value(r.GraphQL, r.Unit)
}

// notMeasuredValue stands for a figure that was not measured.
const notMeasuredValue = "not measured"

func variance(r kpi.Result) string {
	switch {
	case r.NoControl:
		return "no control group"
	case r.Delta == nil && r.Reason != "":
		return "not measured"
	case r.Delta == nil:
		return "n/a (REST is 0)"
	}
	if r.DeltaUnit == "points" {
		return fmt.Sprintf("%+.2f points", *r.Delta)
	}
	return fmt.Sprintf("%+.1f %%", *r.Delta)
}

func limit(r kpi.Result) string {
	if !r.Gated || r.Threshold == nil { // nil: a report edited by hand, read back
		return "—"
	}
	t := *r.Threshold
	switch {
	case r.Name == "throughput_rps":
		return fmt.Sprintf("≥ %.0f %%", t)
	case r.DeltaUnit == "points":
		return fmt.Sprintf("≤ +%g points", t)
	default:
		return fmt.Sprintf("≤ +%g %%", t)
	}
}

func outcome(r kpi.Result) string {
	switch {
	case r.NoControl:
		return "not measured"
	case !r.Gated:
		return "info"
	case r.Outcome == kpi.OutcomeInconclusive:
		return "INCONCLUSIVE"
	case r.Outcome == kpi.OutcomeNotMeasured:
		return "NOT MEASURED"
	case r.Pass:
		return "pass"
	default:
		return "FAIL"
	}
}

// intervalText writes a row's confidence interval of the delta, e.g.
// "[+9.1, +15.0] points (95 %, 4 rounds)".
func intervalText(r kpi.Result) string {
	iv := r.Interval
	if iv == nil {
		return "—"
	}
	if !iv.Finite() {
		return fmt.Sprintf("unbounded (%d round)", iv.N)
	}
	f := "%+.2f"
	if r.DeltaUnit != "points" {
		f = "%+.1f"
	}
	return fmt.Sprintf("["+f+", "+f+"] %s (%.0f %%, %d rounds)", iv.Lo, iv.Hi, r.DeltaUnit, iv.Confidence*100, iv.N)
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// comparisonHeading titles the KPI section: GraphQL against REST, or the
// self-check's API against itself.
func (r *Report) comparisonHeading() string {
	if r.SelfCheck() {
		first, _ := r.ArmTitles()
		return fmt.Sprintf("Self-check: %s compared with itself (--arms %s)", first, r.Arms)
	}
	if r.NoControlGroup() {
		return "GraphQL without a control group"
	}
	return "GraphQL compared with the REST control group"
}

// phaseList names an arm's phases as they ran, in Markdown: "REST phase
// `x`", or with several rounds "REST phases `x#1`, `x#2`"; title is
// already Markdown, each name becomes a code span.
func phaseList(title string, names []string) string {
	if len(names) == 0 {
		return title + " phase (not recorded)"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = mdCode(n)
	}
	if len(q) == 1 {
		return title + " phase " + q[0]
	}
	return title + " phases " + strings.Join(q, ", ")
}

// armSeparator separates the two arms' phase lists: a comma, or a
// semicolon when a list already holds commas (several rounds).
func armSeparator(a, b []string) string {
	if len(a) > 1 || len(b) > 1 {
		return "; "
	}
	return ", "
}

// Markdown renders report.md: seed 002's table with each definition, the
// phases, errors and notes.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# soakd report %s\n\n", mdText(r.Run))
	fmt.Fprintf(&b, "Profile **%s**: %s.  \n", mdText(r.Profile), mdText(r.Description))
	fmt.Fprintf(&b, "Status: %s. **Verdict: %s**", mdText(string(r.Status)), r.Verdict.Word())
	if r.Error != "" {
		fmt.Fprintf(&b, " (%s)", mdText(r.Error))
	}
	b.WriteString("\n\n")

	first, second := r.ArmTitles()
	first, second = mdText(first), mdText(second)
	fmt.Fprintf(&b, "## %s\n\n", mdText(r.comparisonHeading()))
	if len(r.KPIs) == 0 {
		b.WriteString("No KPIs were evaluated: the run did not reach the end of both arms.\n\n")
	} else {
		ranA, ranB := r.Compare.Ran()
		if r.NoControlGroup() {
			fmt.Fprintf(&b, "%s, each over its steady window, with no REST control group to compare with: each row gives GraphQL's figure (the mean over its rounds) and is not measured as a KPI.\n\n",
				phaseList(second, ranB))
		} else {
			sep := armSeparator(ranA, ranB)
			fmt.Fprintf(&b, "%s%s%s%seach over its steady window. Variance is %s − %s, in points for percentages and in percent of %s otherwise.\n\n",
				phaseList(first, ranA), sep, phaseList(second, ranB), sep, second, first, first)
		}
		fmt.Fprintf(&b, "| Metric | %s | %s | Variance | KPI | Result |\n|---|---:|---:|---:|---:|---|\n", first, second)
		for _, k := range r.KPIs {
			b.WriteString(mdRow(mdTexts([]string{k.Title, restValue(k), gqlValue(k), variance(k), limit(k), outcome(k)})...))
		}
		for _, w := range r.ScrapeWarnings() {
			fmt.Fprintf(&b, "\n**Observer cost:** %s\n", mdText(w))
		}
		if reasons := r.Reasons(); len(reasons) > 0 {
			b.WriteString("\nWhy the verdict is not pass:\n\n")
			for _, x := range reasons {
				fmt.Fprintf(&b, "- %s\n", mdText(x))
			}
		}
		if len(r.Rounds) > 0 {
			fmt.Fprintf(&b, "\n%d interleaved rounds (%s, %s, then %s, %s, …); values are means across rounds, the variance above is the change between those means, and the gate rule is **%s** (%s), on the confidence interval of the per-round changes (its centre, the mean variance below, can differ from the change of the means when one round is noisy).\n\n",
				len(r.Rounds), first, second, second, first, mdText(r.Gate), gateWords(r.Gate))
			b.WriteString("| Metric | Mean variance | Confidence interval | Spread across rounds | Smallest effect detectable (80 % power) | Recorded noise floor: smallest effect detectable | Outcome |\n|---|---:|---:|---:|---:|---:|---|\n")
			for _, k := range r.KPIs {
				b.WriteString(mdRow(mdTexts(append([]string{k.Title}, roundCells(k)...))...))
			}
			fmt.Fprintf(&b, "\n%s\n\n| Round | %s phase | %s phase | Point verdict |\n|---:|---|---|---|\n", roundVerdictNote, first, second)
			for _, rd := range r.Rounds {
				b.WriteString(mdRow(strconv.Itoa(rd.Round), mdText(rd.REST), mdText(rd.GraphQL), mdText(string(rd.Verdict))))
			}
		}
		b.WriteString("\nDefinitions:\n\n")
		for _, k := range r.KPIs {
			fmt.Fprintf(&b, "- **%s** (%s): %s.\n", mdText(k.Title), mdCode(k.Name), mdText(k.Definition))
		}
		b.WriteString("\n")
	}

	b.WriteString("## Phases\n\n")
	b.WriteString("| Phase | Arm | Driver PID | Requests | Errors | Throughput | p50 | p90 | p99 | max | CPU (machine) | GC % | GC cycles | GC pause p99 | Heap live max | RSS max |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range r.Phases {
		l := p.LatencyMs
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %.0f req/s | %.2f ms | %.2f ms | %.2f ms | %.2f ms |",
			mdText(p.Name), mdText(p.Arm), p.DriverPIDs(), p.Requests, p.Errors, p.ThroughputRPS, l.P50, l.P90, l.P99, l.Max)
		fmt.Fprintf(&b, " %s |\n", strings.Join(resourceCells(p.Resources), " | "))
	}
	b.WriteString("\nPer request (steady window; target rate ÷ throughput):\n\n")
	b.WriteString("| Phase | CPU | Heap allocated | Objects allocated | GC cycles per 10k requests |\n|---|---:|---:|---:|---:|\n")
	for _, p := range r.Phases {
		b.WriteString(mdRow(append([]string{mdText(p.Name)}, perRequestCells(p)...)...))
	}
	b.WriteString("\n")
	if r.hasNotMeasured() {
		b.WriteString("n/m: " + notMeasuredLegend + "\n\n")
	}
	for _, p := range r.Phases {
		probs := problems(p)
		if len(probs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "### %s\n\n", mdText(problemsHeading(p)))
		for _, x := range probs {
			fmt.Fprintf(&b, "- %s\n", mdText(x))
		}
		b.WriteString("\n")
	}
	r.seed000Section(&b)
	r.checkSections(&b)
	r.workloadSections(&b)
	r.harnessCost(&b)
	r.figureSources(&b)
	if len(r.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", mdText(n))
		}
		b.WriteString("\n")
	}
	b.WriteString(strings.Join(mdTexts(r.footerLines()), "  \n") + "\n")
	return b.String()
}

// footerLines say where and how the run happened: CPU pinning, a
// self-check's arms, the target, the host.
func (r *Report) footerLines() []string {
	var out []string
	if p := r.Pinning; p != nil {
		out = append(out, p.Describe())
	}
	if r.Arms != "" && r.Arms != "rest,graphql" {
		out = append(out, fmt.Sprintf("Arms: %s (self-check).", r.Arms))
	}
	if ab := r.AB; ab != nil {
		out = append(out, fmt.Sprintf("A/B session %s: the %s side; the other side is run %s (its directory ../%s); the session's verdict is the paired comparison in ../compare.md.", ab.Session, ab.Side, ab.Other, OtherSide(ab.Side)))
	}
	if t := r.Target; t != nil {
		out = append(out, t.Describe())
	}
	return append(out, fmt.Sprintf("Target PID %d on %d cores (GOMAXPROCS %d), %s %s/%s, soakd %s. Sampler interval %gs.",
		r.TargetPID, r.Host.Cores, r.Host.GOMAXPROCS, r.Host.GoVersion, r.Host.OS, r.Host.Arch, r.Host.Soakd, r.SamplerIntervalSeconds))
}

// Table writes the KPI table, every rule that did not pass with its
// numbers, and the verdict, for a terminal: the reason for the verdict is on
// screen, not only in the report files.
func (r *Report) Table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	first, second := r.ArmTitles()
	fmt.Fprintf(tw, "Metric\t%s\t%s\tVariance\tInterval\tKPI\tResult\n", first, second)
	for _, k := range r.KPIs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.Title, restValue(k), gqlValue(k), variance(k), intervalText(k), limit(k), outcome(k))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("cannot write the table: %w", err)
	}
	for _, x := range r.ScrapeWarnings() {
		fmt.Fprintf(w, "observer cost: %s\n", x)
	}
	if n := len(r.Rounds); n > 0 {
		fmt.Fprintf(w, "%d interleaved rounds; values are means across rounds and the variance is the change between those means; gate: %s (%s), on the interval of the per-round changes\n", n, r.Gate, gateWords(r.Gate))
	}
	for _, p := range r.Phases {
		if ml := p.MaxLoad; ml != nil {
			fmt.Fprintf(w, "%s: peak %s; stopped by %s (%s)\n", p.Name, peakText(ml), ml.Reason, ml.Detail)
			if k := ml.Knee; k != nil {
				fmt.Fprintf(w, "  knee: %s: %s\n", k.Attribution, k.Reason)
			}
		}
		if sr := p.Subscriptions; sr != nil {
			fmt.Fprintf(w, "%s: %d subscriptions, %d/%d events received, %d lost, %d duplicated, p99 %.2f ms\n", p.Name, sr.Subscriptions, sr.Received, sr.Expected, sr.Lost, sr.Duplicated, sr.LatencyMs.P99)
		}
	}
	for _, reason := range r.Reasons() {
		fmt.Fprintf(w, "  - %s\n", reason)
	}
	verdict := fmt.Sprintf("verdict: %s", r.Verdict.Word())
	if r.Error != "" {
		verdict += " (" + r.Error + ")"
	}
	_, err := fmt.Fprintln(w, verdict)
	return err
}

// SettleRounds is how many rounds in all would probably settle every
// inconclusive gated KPI row (the largest of their SettleRounds), or 0 when
// none is inconclusive or one of them would not be settled by more rounds
// (not measured, too many rounds needed).
func (r *Report) SettleRounds() int {
	n := 0
	for _, k := range r.KPIs {
		if !k.Gated || k.Outcome != kpi.OutcomeInconclusive && k.Outcome != kpi.OutcomeNotMeasured {
			continue
		}
		if k.SettleRounds == 0 {
			return 0
		}
		n = max(n, k.SettleRounds)
	}
	return n
}

// Reasons lists every gated KPI row and check that did not pass, one line
// each with its numbers and outcome: what the terminal, `soakd status`, the
// control API and junit.xml name as the reason for the verdict.
func (r *Report) Reasons() []string {
	var out []string
	armA, armB := r.ArmTitles() // a self-check compares an arm with its copy
	for _, k := range r.KPIs {
		if !k.Gated || k.Pass {
			continue
		}
		o := k.Outcome
		if o == "" {
			o = kpi.OutcomeFail
		}
		line := fmt.Sprintf("%s: KPI %s, %s − %s %s", strings.ToUpper(string(o)), k.Title, armB, armA, variance(k))
		if k.Interval != nil {
			line += ", interval " + intervalText(k)
		}
		line += ", limit " + limit(k)
		if k.EffectiveThreshold != nil {
			line += fmt.Sprintf(" (floor raises it to %+.1f %%)", *k.EffectiveThreshold)
		}
		if k.Reason != "" {
			line += ": " + k.Reason
		}
		out = append(out, line)
	}
	for _, c := range r.Checks {
		if c.Pass {
			continue
		}
		o := c.Outcome
		if o == "" {
			o = kpi.OutcomeFail
		}
		line := fmt.Sprintf("%s: check %s", strings.ToUpper(string(o)), c.Title)
		if c.Phase != "" {
			line += " (" + c.Phase + ")"
		}
		if c.Outcome != kpi.OutcomeNotMeasured { // a check not measured has no figure, only its reason
			line += fmt.Sprintf(", %s against %s", checkValue(c.Value, c.Unit), checkValue(c.Limit, c.Unit))
		}
		if c.Detail != "" {
			line += ": " + c.Detail
		}
		out = append(out, line)
	}
	return out
}

// workloadSections renders what only some phases have: subscription
// delivery, max-load outcomes, open-model schedules, and the return to rest.
func (r *Report) workloadSections(b *strings.Builder) {
	for _, p := range r.Phases {
		if sr := p.Subscriptions; sr != nil {
			fmt.Fprintf(b, "## %s\n\n", mdText(subscriptionsHeading(p)))
			b.WriteString("| " + strings.Join(subscriptionColumns, " | ") + " |\n")
			b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
			fmt.Fprintf(b, "| %s |\n\n", strings.Join(subscriptionCells(sr), " | "))
			b.WriteString(mdText(subscriptionNote(sr)) + "\n\n")
		}
	}
	md := markdownMarkup()
	for _, p := range r.Phases {
		if p.MaxLoad == nil {
			continue
		}
		fmt.Fprintf(b, "## %s\n\n", mdText(maxLoadHeading(p)))
		for _, line := range maxLoadLines(p.MaxLoad, md) {
			fmt.Fprintf(b, "- %s\n", line)
		}
		b.WriteString("\n")
	}
	for _, p := range r.Phases {
		if p.Open == nil {
			continue
		}
		fmt.Fprintf(b, "## %s\n\n%s\n\n", mdText(openHeading(p)), openText(p, md.Emph))
	}
	var settled []Phase
	for _, p := range r.Phases {
		if p.After != nil {
			settled = append(settled, p)
		}
	}
	if len(settled) > 0 {
		b.WriteString("## Back to rest after each phase\n\n")
		fmt.Fprintf(b, "%s\n\n", afterIntro(settled[0].After))
		b.WriteString("| Phase | Goroutines before → after | Subscriptions open | Live heap before → after | Returned |\n|---|---:|---:|---:|---|\n")
		for _, p := range settled {
			c := afterCells(p.After)
			c[0] = mdText(c[0]) // names the target's runtime analogue, from its metrics
			if !p.After.Returned && p.After.ReturnedNotMeasured == "" {
				c[3] = "**" + c[3] + "**"
			}
			b.WriteString(mdRow(append([]string{mdText(p.Name)}, c...)...))
		}
		b.WriteString("\n")
	}
}

func gateWords(string) string {
	return "pass when the whole confidence interval of the mean variance is inside the limit, fail when it is wholly beyond, inconclusive otherwise"
}

// checkGroup is one section of verdict rules other than the KPI rows.
type checkGroup struct {
	Title, Intro string
	Rows         []Check
}

// checkGroups returns the checks by section, in report order, leaving out
// sections with no rows.
func (r *Report) checkGroups() []checkGroup {
	restIntro := "After each phase, a settle period and forced GCs, the target must have released what the phase took."
	if r.Target.External() {
		restIntro = "After each phase and a settle period, the target must have released what the phase took (no GC can be forced in a target soakd does not host)."
	}
	var out []checkGroup
	for _, g := range []struct{ title, group, intro string }{
		{"Memory profile verdict", "memory", "Seed 002's memory expectations, measured: steady allocation with no extreme spikes, little to nothing surviving each GC cycle, and a return to the pre-test state."},
		{"Subscription delivery", "delivery", "Every subscription must receive each event of its id exactly once."},
		{"Compared phases", "errors", "The compared phases must be error-free and measured."},
		{"Absolute limits", "absolute", "The compared GraphQL phase's own figures against kpis.absolute, over its rounds: the interval of the mean wholly within the limit passes, wholly beyond fails."},
		{"Return to rest", "rest", restIntro},
	} {
		cg := checkGroup{Title: g.title, Intro: g.intro}
		for _, c := range r.Checks {
			if c.Group == g.group {
				cg.Rows = append(cg.Rows, c)
			}
		}
		if len(cg.Rows) > 0 {
			out = append(out, cg)
		}
	}
	return out
}

// checkResult is a check row's result as the check tables show it.
func checkResult(c Check) string {
	switch {
	case c.Outcome == kpi.OutcomeNotMeasured:
		return "not measured"
	case c.Outcome == kpi.OutcomeInconclusive:
		return "inconclusive"
	case !c.Pass:
		return "FAIL"
	}
	return "pass"
}

// cells are a check's measured value and limit as the check tables print
// them: "not measured" and "—" for a check that was not measured, whose
// Value (0) and Limit (often a baseline that was not measured either) are
// not figures.
func (c Check) cells() (value, limit string) {
	if c.Outcome == kpi.OutcomeNotMeasured {
		return notMeasuredValue, "—"
	}
	return checkValue(c.Value, c.Unit), checkValue(c.Limit, c.Unit)
}

// checkDefinitions returns the rows with a name not seen before: one
// definition per rule.
func checkDefinitions(rows []Check) []Check {
	var out []Check
	seen := map[string]bool{}
	for _, c := range rows {
		if !seen[c.Name] {
			seen[c.Name] = true
			out = append(out, c)
		}
	}
	return out
}

// checkSections renders the memory-profile verdict, the other checks and
// the overhead breakdown.
func (r *Report) checkSections(b *strings.Builder) {
	for _, g := range r.checkGroups() {
		fmt.Fprintf(b, "## %s\n\n%s\n\n| Phase | Rule | Measured | Limit | Result | Detail |\n|---|---|---:|---:|---|---|\n", g.Title, g.Intro)
		for _, c := range g.Rows {
			res := checkResult(c)
			if res == "FAIL" {
				res = "**FAIL**"
			}
			v, l := c.cells()
			b.WriteString(mdRow(mdText(c.Phase), mdText(c.Title), mdText(v), mdText(l), res, mdText(c.Detail)))
		}
		b.WriteString("\nDefinitions:\n\n")
		for _, c := range checkDefinitions(g.Rows) {
			fmt.Fprintf(b, "- **%s** (%s): %s.\n", mdText(c.Title), mdCode(c.Name), mdText(c.Definition))
		}
		b.WriteString("\n")
	}
	if r.OverheadLayers == nil && r.OverheadNotMeasured != "" {
		fmt.Fprintf(b, "## Where the overhead goes, by layer\n\nNot measured: %s.\n\n", mdText(r.OverheadNotMeasured))
	}
	if ol := r.OverheadLayers; ol != nil {
		fmt.Fprintf(b, "## Where the overhead goes, by layer\n\n%s %s\n\n", mdText(overheadLayersIntro), mdText(ol.explained()))
		b.WriteString("| Layer | REST | GraphQL | Extra | Share of extra | Of which allocation (REST / GraphQL) | Samples (REST / GraphQL) |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, l := range ol.Layers {
			c := l.cells()
			b.WriteString(mdRow(mdText(l.Layer), c.rest, c.gql, c.extra, c.share, c.alloc, c.samples))
		}
		b.WriteString("\n")
	}
	if al := r.AllocLayers; al != nil {
		fmt.Fprintf(b, "## Allocation by layer\n\n%s %s\n\n", mdText(allocLayersIntro), mdText(al.explained()))
		b.WriteString("| Layer | REST | GraphQL | Extra | Share of extra |\n|---|---:|---:|---:|---:|\n")
		for _, l := range al.Layers {
			c := l.cells()
			b.WriteString(mdRow(mdText(l.Layer), c[0], c[1], c[2], c[3]))
		}
		b.WriteString("\n")
	}
	if len(r.Overhead) > 0 {
		b.WriteString("## Where the overhead goes\n\n")
		fmt.Fprintf(b, "Self (flat) CPU per request by function, from CPU profiles of the target over each compared phase's steady window, %s; each arm's CPU divided by the requests completed while its profiles ran. %s\n\n",
			mdText(r.overheadBasis()), mdText(overheadNoiseRule))
		b.WriteString("| Function | REST | GraphQL | Extra | Share of extra | Samples (REST / GraphQL) |\n|---|---:|---:|---:|---:|---:|\n")
		mdOverheadRows(b, r.Overhead)
	}
	if r.Flame != nil {
		fmt.Fprintf(b, "## Flame graph\n\n%s (Drawn in report.html; %d frames here. The same tree from the profiles: go tool pprof -http : graphql.cpu.pb.gz.)\n\n", mdText(flameIntro), r.Flame.Count())
	}
	if len(r.OverheadCumulative) > 0 {
		fmt.Fprintf(b, "## Where the overhead goes, cumulative\n\n%s %s\n\n", mdText(cumulativeIntro), mdText(overheadNoiseRule))
		b.WriteString("| Function | REST | GraphQL | Extra | Share of GraphQL's extra | Samples (REST / GraphQL) |\n|---|---:|---:|---:|---:|---:|\n")
		mdOverheadRows(b, r.OverheadCumulative)
	}
}

// mdOverheadRows writes the function rows of the flat or cumulative table
// and the blank line after it.
func mdOverheadRows(b *strings.Builder, rows []OverheadRow) {
	for _, o := range rows {
		extra, share := overheadExtra(o)
		fmt.Fprintf(b, "| %s | %.2f µs | %.2f µs | %s | %s | %s / %s |\n", mdCodeCell(o.Function), o.RESTMicrosPerReq, o.GraphQLMicrosPerReq,
			extra, share, termtext.Count(o.RESTSamples), termtext.Count(o.GraphQLSamples))
	}
	b.WriteString("\n")
}

// flameIntro explains the icicle.
const flameIntro = "The compared phases' call tree from both arms' merged CPU profiles, drawn from the top (an icicle): each frame's width is its CPU per request, the frames under it what it called. GraphQL and REST draw each arm at the same scale (the wider arm fills the page); Difference draws GraphQL's tree coloured by GraphQL − REST per frame: red where GraphQL spends more, blue where less, grey where the same. Frames under 0.2 % of the wider arm are left out. Hover a frame for its figures."

// cumulativeIntro explains the cumulative table.
const cumulativeIntro = "Cumulative (inclusive) CPU per request by function, from the same profiles: each function with everything it called, so a layer's extra can be followed down to the function that carries it (go tool pprof -cum -diff_base rest.cpu.pb.gz graphql.cpu.pb.gz). Shares are of GraphQL's whole extra CPU per request; rows overlap (a caller holds its callees), so they add up to more than 100 %."

// allocLayersIntro explains the allocation-by-layer table.
const allocLayersIntro = "What each arm's compared phases allocated (each phase's heap profile after it minus before it, alloc_space: the runtime's sampled estimate, one sample every 512 KiB on average), attributed to the layer of the allocating stack by the same rules as the CPU table (the first frame from the allocation up that a rule claims), over the arm's requests. GraphQL's allocation is what its garbage collection costs: this table says which layer makes the garbage."

// explained words the allocation table's total and its named share.
func (al *AllocLayers) explained() string {
	s := fmt.Sprintf("GraphQL allocates %s more per request than REST in these profiles (%d rounds)", termtext.Bytes(al.TotalExtraBytesPerReq), al.Rounds)
	if al.ExplainedPercent != nil {
		s += fmt.Sprintf("; the named layers explain %.0f %% of it", *al.ExplainedPercent)
	}
	return s + "."
}

// cells are one allocation row's REST, GraphQL, extra and share.
func (l AllocLayer) cells() [4]string {
	share := "—"
	if l.SharePercent != nil {
		share = fmt.Sprintf("%.1f %%", *l.SharePercent)
	}
	extra := termtext.Bytes(l.ExtraBytesPerReq)
	if l.ExtraBytesPerReq > 0 {
		extra = "+" + extra
	}
	return [4]string{termtext.Bytes(l.RESTBytesPerReq), termtext.Bytes(l.GraphQLBytesPerReq), extra, share}
}

// overheadLayersIntro explains the by-layer table (profiles.Layers).
const overheadLayersIntro = "Every CPU sample of each arm's merged profile (the same rounds and requests as the function table below) goes to one layer: walking its stack from the leaf, the first frame a layer rule claims (your profiling.layers first, then the built-in rules read from the libraries' package paths, then the server's own code). Runtime frames at the leaf are never claimed: an allocation (mallocgc and below) goes to the layer that allocated and counts in its allocation column, a syscall to the layer that made it; GC background workers and assists are GC and allocation; runtime work nothing claims is GC and allocation or scheduling and syscalls; everything else is other. Figures are CPU µs per request with their Poisson intervals at 2σ (≈95 %): exact (Garwood) for each arm, extra ± 2·√(REST and GraphQL sample variances) for the difference."

// explained states how much of the total extra the named layers explain.
func (ol *OverheadLayers) explained() string {
	if ol.ExplainedPercent == nil {
		return fmt.Sprintf("GraphQL's CPU per request is not above REST's (total extra %+.2f µs): there is no extra to explain.", ol.TotalExtraMicrosPerReq)
	}
	return fmt.Sprintf("GraphQL costs %+.2f µs per request more than REST; the named layers explain %.1f %% of it, other the rest.", ol.TotalExtraMicrosPerReq, *ol.ExplainedPercent)
}

// layerCells are one layer row's formatted cells.
type layerCells struct{ rest, gql, extra, share, alloc, samples string }

func (l OverheadLayer) cells() layerCells {
	share := "—"
	if l.SharePercent != nil {
		share = fmt.Sprintf("%.1f %%", *l.SharePercent)
	}
	return layerCells{
		rest:    fmt.Sprintf("%.2f µs [%.2f, %.2f]", l.RESTMicrosPerReq, l.RESTInterval.Low, l.RESTInterval.High),
		gql:     fmt.Sprintf("%.2f µs [%.2f, %.2f]", l.GraphQLMicrosPerReq, l.GraphQLInterval.Low, l.GraphQLInterval.High),
		extra:   fmt.Sprintf("%+.2f µs [%+.2f, %+.2f]", l.ExtraMicrosPerReq, l.ExtraInterval.Low, l.ExtraInterval.High),
		share:   share,
		alloc:   fmt.Sprintf("%.2f / %.2f µs", l.RESTAllocMicrosPerReq, l.GraphQLAllocMicrosPerReq),
		samples: termtext.Count(l.RESTSamples) + " / " + termtext.Count(l.GraphQLSamples),
	}
}

// overheadNoiseRule explains the within-noise marking of the overhead
// table (profiles.WithinNoise).
const overheadNoiseRule = "A profile takes one sample per period, so a function's samples are a count with Poisson noise: a row is within noise (~) when the larger arm has fewer than 20 samples of the function, or when its per-request difference is within 2 standard deviations (at equal requests: |GraphQL − REST samples| < 2·√(GraphQL + REST samples)). Rows within noise come after the rows with evidence and are left out when those fill the table."

// overheadBasis states the rounds, samples and requests behind the
// overhead table, e.g. "merged over 4 rounds (1,234 REST and 2,345 GraphQL
// samples at 100 Hz, over 40,000 and 38,000 requests)".
func (r *Report) overheadBasis() string {
	ob := r.OverheadBasis
	if ob == nil {
		return "from the first round (a report of an older soakd: no sample counts)"
	}
	rounds := fmt.Sprintf("merged over %d rounds", ob.Rounds)
	if ob.Rounds == 1 {
		rounds = "from 1 round"
	}
	rate := ""
	if ob.SampleRateHz > 0 {
		rate = fmt.Sprintf(" at %.4g Hz", ob.SampleRateHz)
	}
	return fmt.Sprintf("%s (%s REST and %s GraphQL samples%s, over %s and %s requests)", rounds,
		termtext.Count(ob.RESTSamples), termtext.Count(ob.GraphQLSamples), rate, termtext.Count(ob.RESTRequests), termtext.Count(ob.GraphQLRequests))
}

// overheadExtra formats a row's extra and share: the figures when the row
// has evidence, "~ (n samples, within noise)" and "~" when it is within
// noise, n being the samples of both arms.
func overheadExtra(o OverheadRow) (extra, share string) {
	if !o.WithinNoise {
		return fmt.Sprintf("%+.2f µs", o.ExtraMicrosPerReq), fmt.Sprintf("%.1f %%", o.SharePercent)
	}
	n := o.RESTSamples + o.GraphQLSamples
	unit := "samples"
	if n == 1 {
		unit = "sample"
	}
	return fmt.Sprintf("~ (%s %s, within noise)", termtext.Count(n), unit), "~"
}

// noiseText is the recorded noise floor's smallest detectable effect for the
// run's rounds, with the recorded round-to-round spread it comes from.
func noiseText(k kpi.Result) string {
	switch {
	case k.NoiseSD == nil:
		return "—"
	case k.NoiseMinDetectable == nil:
		return fmt.Sprintf("n/a (sd %.2f %s; fewer than 2 rounds)", *k.NoiseSD, k.DeltaUnit)
	}
	return fmt.Sprintf("%.2f %s (sd %.2f)", *k.NoiseMinDetectable, k.DeltaUnit, *k.NoiseSD)
}

// hasNotMeasured reports whether any phase has a resource or per-request
// figure that was not measured.
func (r *Report) hasNotMeasured() bool {
	for _, p := range r.Phases {
		if (p.Resources != nil && len(p.Resources.NotMeasured) > 0) || len(p.PerRequest.NotMeasured) > 0 {
			return true
		}
	}
	return false
}

// harnessCostTable is what sampling the target cost over each phase's
// steady window: the sampler per sample and, for a target scraped from
// outside, the scrape of its metrics endpoint (part of the sample), as an
// introduction, column headings and rows; ok is false when no phase has
// resource figures. report.md and report.html both print it.
func (r *Report) harnessCostTable() (intro string, head []string, rows [][]string, ok bool) {
	var phases []Phase
	scraped := false
	for _, p := range r.Phases {
		if p.Resources != nil {
			phases = append(phases, p)
			scraped = scraped || p.Resources.ScrapeCostMeanUs > 0
		}
	}
	if len(phases) == 0 {
		return "", nil, nil, false
	}
	intro = "Wall time per sample (an upper bound of its CPU) and as a share of one core, over each steady window"
	head = []string{"Phase", "Sampler per sample", "Sampler, share of a core"}
	if scraped {
		intro += "; the scrape of the target's metrics endpoint is part of the sample, and a request the target serves beside the load"
		head = append(head, "Scrape mean", "Scrape max", "Scrape body", "Scrape, share of wall time")
	}
	intro += "."
	for _, p := range phases {
		s := p.Resources
		row := []string{p.Name, fmt.Sprintf("%.0f µs", s.SamplerCostMeanUs), fmt.Sprintf("%.3f %%", s.SamplerCorePercent)}
		if scraped {
			if s.ScrapeCostMeanUs > 0 {
				share := fmt.Sprintf("%.3f %%", s.ScrapeCorePercent)
				if s.ScrapeOverLimit {
					share += fmt.Sprintf(" (above the %.1f %% limit)", s.ScrapeLimitPercent)
				}
				row = append(row, fmt.Sprintf("%.0f µs", s.ScrapeCostMeanUs), fmt.Sprintf("%.0f µs", s.ScrapeCostMaxUs),
					fmt.Sprintf("%.1f KB", s.ScrapeBytesMean/1000), share)
			} else {
				row = append(row, "not scraped", "—", "—", "—")
			}
		}
		rows = append(rows, row)
	}
	return intro, head, rows, true
}

// ScrapeWarnings names each phase whose metrics scrape took more of the
// target's wall time than its limit (Summary.ScrapeOverLimit), with the
// figures it may have moved: printed beside the KPI table.
func (r *Report) ScrapeWarnings() []string {
	var out []string
	for _, p := range r.Phases {
		if s := p.Resources; s != nil && s.ScrapeOverLimit {
			out = append(out, fmt.Sprintf("in phase %s the scrape of the target's metrics endpoint took %.2f %% of wall time (mean %.0f µs, max %.0f µs a scrape), above the %.1f %% limit: "+
				"its CPU, throughput and latency figures include that cost", p.Name, s.ScrapeCorePercent, s.ScrapeCostMeanUs, s.ScrapeCostMaxUs, s.ScrapeLimitPercent))
		}
	}
	return out
}

// harnessCostHeading heads the harness's cost section in both reports.
const harnessCostHeading = "The harness's own cost"

// harnessCost prints harnessCostTable as a Markdown section.
func (r *Report) harnessCost(b *strings.Builder) {
	intro, head, rows, ok := r.harnessCostTable()
	if !ok {
		return
	}
	fmt.Fprintf(b, "## %s\n\n%s\n\n| %s |\n|---|", harnessCostHeading, intro, strings.Join(head, " | "))
	for range head[1:] {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, row := range rows {
		b.WriteString(mdRow(mdTexts(row)...))
	}
	b.WriteString("\n")
}

// figureSources lists, for a target soakd does not host, where each
// resource figure came from and what it is.
func (r *Report) figureSources(b *strings.Builder) {
	t := r.Target
	if !t.External() || len(t.Figures) == 0 {
		return
	}
	b.WriteString("## " + figureSourcesHeading + "\n\n")
	fmt.Fprintf(b, "%s\n\n", mdText(figureSourcesIntro(t)))
	b.WriteString("| Figure | Source | Definition |\n|---|---|---|\n")
	for _, f := range t.Figures {
		src := mdCodeCell(f.Source)
		if !f.Measured {
			src = "not measured: " + mdText(f.Reason) + " (" + src + ")"
		}
		b.WriteString(mdRow(mdCodeCell(f.Name), src, mdText(f.Definition)))
	}
	b.WriteString("\n")
}

// notMeasuredLegend explains the "n/m" cells of the phase tables.
const notMeasuredLegend = "not measured: the target does not give this figure (see *Where the resource figures come from*)."

// resourceCells formats a phase's target figures over its steady window, as
// the phase tables show them: CPU share of the machine, GC %, GC cycles, GC
// pause p99, largest live heap and RSS; "n/m" for a figure the target does
// not give, "—" for all when there is no summary.
func resourceCells(s *profiles.Summary) []string {
	if s == nil {
		return []string{"—", "—", "—", "—", "—", "—"}
	}
	nm := func(key, v string) string {
		if _, ok := s.NotMeasured[key]; ok {
			return "n/m"
		}
		return v
	}
	return []string{nm("cpu_seconds", fmt.Sprintf("%.2f %%", s.CPUMachinePercent)), nm("gc_percent", fmt.Sprintf("%.2f %%", s.GCPercent)),
		nm("gc_cycles", fmt.Sprintf("%d", s.GCCycles)), nm("gc_pause_p99_ms", fmt.Sprintf("%.3f ms", s.GCPauseP99Ms)),
		nm("heap_live_bytes", mib(s.HeapLiveBytesMax)), nm("rss_bytes", mib(s.RSSBytesMax))}
}

// perRequestCells formats a phase's per-request costs: CPU, heap bytes and
// objects allocated, GC cycles per 10k requests ("n/m" when not measured,
// "—" for all when the phase has no resource summary: never 0).
func perRequestCells(p Phase) []string {
	if p.Resources == nil {
		return []string{"—", "—", "—", "—"}
	}
	pr := p.PerRequest
	nm := func(key, v string) string {
		if _, ok := pr.NotMeasured[key]; ok {
			return "n/m"
		}
		return v
	}
	return []string{nm("cpu_us", fmt.Sprintf("%.1f µs", pr.CPUMicros)), nm("alloc_bytes", fmt.Sprintf("%.0f B", pr.AllocBytes)),
		nm("alloc_objects", fmt.Sprintf("%.1f", pr.AllocObjects)), nm("gc_cycles_per_10k", fmt.Sprintf("%.2f", pr.GCCyclesPer10kReq))}
}

// problemsHeading titles a phase's problems section.
func problemsHeading(p Phase) string { return p.Name + ": problems" }

// problems lists what went wrong in a phase, one sentence each: resources
// not summarised, no steady window, failed requests by class with an
// example; nil when nothing did.
func problems(p Phase) []string {
	if p.Errors == 0 && p.ResourcesError == "" && p.SteadyFallback == "" {
		return nil
	}
	var out []string
	if p.ResourcesError != "" {
		out = append(out, "Resources could not be summarised: "+p.ResourcesError)
	}
	if p.SteadyFallback != "" {
		out = append(out, fmt.Sprintf("No steady window (%s); figures cover the whole phase.", p.SteadyFallback))
	}
	for _, class := range slices.Sorted(maps.Keys(p.ErrorsByClass)) {
		line := fmt.Sprintf("%s: %d", class, p.ErrorsByClass[class])
		if ex := p.ErrorExamples[class]; len(ex) > 0 {
			line += fmt.Sprintf(" (e.g. %q)", ex[0])
		}
		out = append(out, line)
	}
	return out
}

// afterIntro says how the back-to-rest figures were taken.
func afterIntro(a *After) string {
	if a.NoForcedGC {
		return "After the settle period, compared with the sample taken before the phase. No GC can be forced in a target soakd does not host: each live heap is as of the target's own last GC cycle; n/m: not measured."
	}
	return "After the settle period and a forced GC, compared with the sample taken before the phase (also after a forced GC)."
}

// afterCells formats a phase's return to rest: goroutines and live heap
// before → after, subscriptions still open, and whether it returned.
func afterCells(a *After) []string {
	nm := func(key, v string) string {
		if _, ok := a.NotMeasured[key]; ok {
			return "n/m"
		}
		return v
	}
	ret := "yes"
	switch {
	case a.ReturnedNotMeasured != "":
		ret = notMeasuredValue
	case !a.Returned:
		ret = "no"
	}
	count := fmt.Sprintf("%d → %d", a.BaselineGoroutines, a.Goroutines)
	if a.GoroutineAnalogue != "" {
		count += " " + a.GoroutineAnalogue
	}
	return []string{nm("goroutines", count),
		nm("subscribers", fmt.Sprintf("%d", a.Subscribers)), nm("heap_live_bytes", mib(a.BaselineHeapLiveBytes)+" → "+mib(a.HeapLiveBytes)), ret}
}

// roundCells formats a KPI row's figures across rounds: mean variance,
// confidence interval, spread, smallest detectable effect, the recorded
// noise floor's, and the outcome.
func roundCells(k kpi.Result) []string {
	spread := "n/a"
	if k.DeltaMin != nil && k.DeltaMax != nil {
		spread = fmt.Sprintf("%+.2f … %+.2f %s", *k.DeltaMin, *k.DeltaMax, k.DeltaUnit)
	}
	mde := "not measured (fewer than 2 rounds)"
	if k.MinDetectable != nil {
		mde = fmt.Sprintf("%.2f %s", *k.MinDetectable, k.DeltaUnit)
	}
	return []string{variance(k), intervalText(k), spread, mde, noiseText(k), outcome(k)}
}

func subscriptionsHeading(p Phase) string { return "Subscriptions during " + p.Name }

// subscriptionColumns head the subscription table; subscriptionCells fill it.
var subscriptionColumns = []string{"Clients", "Subscriptions", "Expected", "Received", "Lost", "Duplicated", "Out of order", "Foreign", "Unexpected", "Client errors", "Latency p50", "p90", "p99", "max"}

func subscriptionCells(sr *workloads.SubscriptionResult) []string {
	l := sr.LatencyMs
	return strings.Split(fmt.Sprintf("%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%.2f ms|%.2f ms|%.2f ms|%.2f ms",
		sr.Clients, sr.Subscriptions, sr.Expected, sr.Received, sr.Lost, sr.Duplicated, sr.OutOfOrder, sr.Foreign, sr.Unexpected, sr.ClientErrors, l.P50, l.P90, l.P99, l.Max), "|")
}

// subscriptionNote defines the subscription table's figures.
func subscriptionNote(sr *workloads.SubscriptionResult) string {
	return "Expected is, for every subscription, the successful mutations of the id it follows. Lost must be 0. " + sr.LatencyNote + "."
}

func maxLoadHeading(p Phase) string { return "Max load: " + p.Name }

// roundVerdictNote says what a round's own verdict is: its point values
// against the limits, not the run's verdict.
const roundVerdictNote = "A round's point verdict compares that round's values with the limits, without an interval: one round cannot tell a difference from noise. The run's verdict is the interval rule across rounds above."

// peakText is a max-load phase's peak, "N req/s with U users", or, when no
// window was judged before the phase ended (a failure in its first window,
// say), that it was not measured: never "0 req/s".
func peakText(ml *MaxLoad) string {
	if ml.PeakWindowEnd.IsZero() {
		return "not measured (no window was judged before the phase ended)"
	}
	return fmt.Sprintf("%.0f req/s with %d users", ml.PeakThroughputRPS, ml.PeakUsers)
}

// markup marks up report text: Text escapes plain text, Emph and Code mark
// up a key figure and an identifier. plainMarkup is the identity, for the
// HTML template (which escapes) and the terminal; markdownMarkup escapes
// for report.md.
type markup struct{ Text, Emph, Code func(string) string }

func plainMarkup() markup {
	id := func(s string) string { return s }
	return markup{Text: id, Emph: id, Code: id}
}

func markdownMarkup() markup {
	return markup{Text: mdText, Emph: func(s string) string { return "**" + mdText(s) + "**" }, Code: mdCode}
}

// maxLoadLines states a max-load phase's outcome, one sentence each:
// outcome, peak, users at failure, the knee and its attribution, the target
// at the peak, marked up by m.
func maxLoadLines(ml *MaxLoad, m markup) []string {
	emph, code, text := m.Emph, m.Code, m.Text
	outcome := "no failure up to the cap"
	if ml.Failed {
		outcome = "failed"
	}
	lines := []string{
		fmt.Sprintf("Outcome: %s (%s): %s.", emph(outcome), code(ml.Reason), text(ml.Detail)),
		"Maximum sustained throughput (best window before failure): " + emph(peakText(ml)) + ".",
	}
	if ml.Failed {
		lines = append(lines, fmt.Sprintf("Users at failure: %d.", ml.UsersAtFailure))
	}
	if k := ml.Knee; k != nil {
		line := "Knee: " + emph(k.Attribution)
		if k.Resource != "" {
			line += fmt.Sprintf(" (%s ran out)", text(k.Resource))
		}
		if k.Attribution != "none" {
			line += fmt.Sprintf(" at %.0f s, %d users, %.0f req/s", k.AtT, k.Users, k.RPS)
		}
		lines = append(lines, line+": "+text(k.Reason)+".")
	}
	if pr := ml.PeakResources; pr != nil {
		lines = append(lines, fmt.Sprintf("Target at the peak: CPU %.1f %% of the machine (%.1f %% of one core), RSS %s, GC %.2f %%.", pr.CPUMachinePercent, pr.CPUCorePercent, mib(pr.RSSBytesMax), pr.GCPercent))
	} else if ml.PeakResourcesError != "" {
		lines = append(lines, fmt.Sprintf("Target at the peak: not measured (%s).", text(ml.PeakResourcesError)))
	}
	return lines
}

func openHeading(p Phase) string { return "Open model: " + p.Name }

// openText states an open-model phase's schedule figures; emph marks up
// the dropped count.
func openText(p Phase, emph func(string) string) string {
	o := p.Open
	return fmt.Sprintf("Intended %.1f req/s, achieved %.1f req/s; %d arrivals, %d sent, %s (max_in_flight reached), %d late (> %.0f ms behind schedule, worst %.1f ms). ",
		o.IntendedRateRPS, o.AchievedRateRPS, o.Arrivals, o.Sent, emph(fmt.Sprintf("%d dropped", o.Dropped)), o.Late, o.LateThresholdMs, o.MaxLatenessMs) +
		fmt.Sprintf("Latency from the intended send time p99 %.2f ms; service time p99 %.2f ms.", p.LatencyMs.P99, o.ServiceMs.P99)
}

const figureSourcesHeading = "Where the resource figures come from"

func figureSourcesIntro(t *TargetInfo) string {
	return fmt.Sprintf("The target is a server soakd does not host (%s, pid %d), sampled from outside.", t.Kind, t.PID)
}
