package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/soakd/soakd/kpi"
)

// CompareLimits are the regressions a new run may show against an old one,
// per metric and phase. Each is the increase of NEW over OLD allowed (in
// percent of OLD, or in points for GCPercentPoints), except
// ThroughputDecreasePercent, the decrease allowed. Zero disables that
// metric's gate: its rows are then informational.
type CompareLimits struct {
	// CPUPerRequestPercent limits the increase of target CPU µs per request, in percent.
	CPUPerRequestPercent float64
	// AllocPerRequestPercent limits the increase of heap bytes allocated per request, in percent.
	AllocPerRequestPercent float64
	// GCPercentPoints limits the increase of GC % time, in percentage points.
	GCPercentPoints float64
	// P99LatencyPercent limits the increase of the 99th percentile latency, in percent.
	P99LatencyPercent float64
	// ThroughputDecreasePercent limits the decrease of steady throughput, in percent.
	ThroughputDecreasePercent float64
	// HeapLivePercent limits the increase of the largest live heap in the steady window, in percent.
	HeapLivePercent float64
}

// CompareRow is one metric of one phase in both runs.
type CompareRow struct {
	// Phase is the phase's name, the same in both runs.
	Phase string `json:"phase"`
	// Metric is throughput_rps, cpu_us_per_request, alloc_bytes_per_request,
	// gc_percent, latency_p99_ms or heap_live_bytes_max.
	Metric string `json:"metric"`
	// Unit of Old and New: req/s, µs, B, % or ms.
	Unit string `json:"unit"`
	// Old and New are the metric in the old and the new run; 0 when missing.
	Old float64 `json:"old"`
	New float64 `json:"new"`
	// Delta is New's change from Old in DeltaUnit ("percent" of Old, or
	// "points" for gc_percent); nil when either value is missing or when Old
	// is 0 and New is not (no finite percentage).
	Delta     *float64 `json:"delta"`
	DeltaUnit string   `json:"delta_unit"`
	// Limit is the bound on Delta: an upper bound for costs, and for
	// throughput a lower bound (the negative of the allowed decrease); nil
	// when the metric is not gated.
	Limit *float64 `json:"limit"`
	// Gated is true when the row counts towards the comparison's verdict.
	Gated bool `json:"gated"`
	// Pass is true when the row is within its limit; a gated row whose data
	// is missing fails. Always true when not gated.
	Pass bool `json:"pass"`
	// Missing says which run lacks the metric and why ("" when both have
	// it); Delta is then nil.
	Missing string `json:"missing,omitempty"`
}

// Comparison is a new run measured against an old one (a release against
// the last accepted run), phase by phase.
type Comparison struct {
	// Old and New are the run ids.
	Old string `json:"old"`
	New string `json:"new"`
	// Rows hold every metric of every phase present in both runs, in the
	// new run's phase order.
	Rows []CompareRow `json:"rows"`
	// Verdict is pass or fail.
	Verdict string `json:"verdict"`
	// Notes list phases found in only one run, missing data and anything
	// else that limits the comparison.
	Notes []string `json:"notes"`
}

// Comparison metric names.
const (
	metricThroughput = "throughput_rps"
	metricCPU        = "cpu_us_per_request"
	metricAlloc      = "alloc_bytes_per_request"
	metricGC         = "gc_percent"
	metricP99        = "latency_p99_ms"
	metricHeapLive   = "heap_live_bytes_max"
)

// cmpFigure is one metric of one phase, or why it is missing.
type cmpFigure struct {
	v       float64
	missing string
}

// CompareRuns compares new against old phase by phase (phases matched by
// name) and gates each metric with l. It is pure. A gated metric whose data
// is missing in either run fails (with a note): missing data never passes.
// The verdict also fails when no phase could be compared or when the new
// run was aborted.
func CompareRuns(old, new *Report, l CompareLimits) Comparison {
	c := Comparison{Old: old.Run, New: new.Run, Verdict: kpi.Pass, Notes: []string{}}
	for _, r := range []struct {
		which string
		rep   *Report
	}{{"old", old}, {"new", new}} {
		if r.rep.Status != StatusComplete {
			n := fmt.Sprintf("the %s run %s is %s", r.which, r.rep.Run, r.rep.Status)
			if r.rep.Error != "" {
				n += " (" + r.rep.Error + ")"
			}
			c.Notes = append(c.Notes, n+".")
		}
	}
	for _, p := range old.Phases {
		if _, ok := new.PhaseNamed(p.Name); !ok {
			c.Notes = append(c.Notes, fmt.Sprintf("phase %s is only in the old run %s: not compared.", p.Name, old.Run))
		}
	}
	for _, np := range new.Phases {
		op, ok := old.PhaseNamed(np.Name)
		if !ok {
			c.Notes = append(c.Notes, fmt.Sprintf("phase %s is only in the new run %s: not compared.", np.Name, new.Run))
			continue
		}
		if op.Arm != np.Arm {
			c.Notes = append(c.Notes, fmt.Sprintf("phase %s is arm %s in the old run and arm %s in the new one.", np.Name, op.Arm, np.Arm))
		}
		c.Rows = append(c.Rows, comparePhase(op, np, l, &c.Notes)...)
	}
	for _, r := range c.Rows {
		if !r.Pass {
			c.Verdict = kpi.Fail
		}
	}
	if len(c.Rows) == 0 {
		c.Verdict = kpi.Fail
		c.Notes = append(c.Notes, "no phase is in both runs: nothing was compared, so the comparison cannot pass.")
	}
	if new.Status == StatusAborted || new.Verdict == VerdictAborted {
		c.Verdict = kpi.Fail
		c.Notes = append(c.Notes, "the new run was aborted: the comparison cannot pass.")
	}
	return c
}

// comparePhase builds the rows of one phase present in both runs.
func comparePhase(op, np Phase, l CompareLimits, notes *[]string) []CompareRow {
	specs := []struct {
		metric, unit string
		points       bool
		decrease     bool
		limit        float64
		get          func(Phase) cmpFigure
	}{
		{metricThroughput, "req/s", false, true, l.ThroughputDecreasePercent, func(p Phase) cmpFigure {
			if p.ThroughputRPS <= 0 {
				return cmpFigure{missing: "no throughput"}
			}
			return cmpFigure{v: p.ThroughputRPS}
		}},
		{metricCPU, "µs", false, false, l.CPUPerRequestPercent, func(p Phase) cmpFigure {
			if m := resourcesMissing(p); m != "" {
				return cmpFigure{missing: m}
			}
			if !p.Resources.CPUKnown || p.ThroughputRPS <= 0 {
				return cmpFigure{missing: "cpu per request not measured"}
			}
			return cmpFigure{v: p.PerRequest.CPUMicros}
		}},
		{metricAlloc, "B", false, false, l.AllocPerRequestPercent, func(p Phase) cmpFigure {
			if m := resourcesMissing(p); m != "" {
				return cmpFigure{missing: m}
			}
			if p.ThroughputRPS <= 0 {
				return cmpFigure{missing: "no throughput to divide by"}
			}
			return cmpFigure{v: p.PerRequest.AllocBytes}
		}},
		{metricGC, "%", true, false, l.GCPercentPoints, func(p Phase) cmpFigure {
			if m := resourcesMissing(p); m != "" {
				return cmpFigure{missing: m}
			}
			if !p.Resources.GCPercentKnown {
				return cmpFigure{missing: "gc % not measured (no gc cycle ended in the window)"}
			}
			return cmpFigure{v: p.Resources.GCPercent}
		}},
		{metricP99, "ms", false, false, l.P99LatencyPercent, func(p Phase) cmpFigure {
			if p.Requests == 0 {
				return cmpFigure{missing: "no request completed"}
			}
			return cmpFigure{v: p.LatencyMs.P99}
		}},
		{metricHeapLive, "B", false, false, l.HeapLivePercent, func(p Phase) cmpFigure {
			if m := resourcesMissing(p); m != "" {
				return cmpFigure{missing: m}
			}
			return cmpFigure{v: float64(p.Resources.HeapLiveBytesMax)}
		}},
	}
	rows := make([]CompareRow, 0, len(specs))
	for _, s := range specs {
		o, n := s.get(op), s.get(np)
		row := CompareRow{Phase: np.Name, Metric: s.metric, Unit: s.unit, Old: o.v, New: n.v, DeltaUnit: "percent", Gated: s.limit != 0, Pass: true}
		if s.points {
			row.DeltaUnit = "points"
		}
		if row.Gated {
			lim := s.limit
			if s.decrease {
				lim = -lim
			}
			row.Limit = &lim
		}
		for _, m := range []struct {
			which string
			f     cmpFigure
		}{{"old", o}, {"new", n}} {
			if m.f.missing != "" {
				consequence := "not gated"
				if row.Gated {
					consequence = "the gated metric fails"
				}
				*notes = append(*notes, fmt.Sprintf("phase %s: %s is missing in the %s run (%s); %s.", np.Name, s.metric, m.which, m.f.missing, consequence))
				if row.Missing != "" {
					row.Missing += "; "
				}
				row.Missing += m.which + " run: " + m.f.missing
			}
		}
		if o.missing == "" && n.missing == "" {
			if s.points {
				d := n.v - o.v
				row.Delta = &d
			} else {
				row.Delta = percentChange(o.v, n.v)
			}
		}
		if row.Gated {
			switch {
			case row.Delta == nil:
				row.Pass = false
			case s.decrease:
				row.Pass = *row.Delta >= *row.Limit
			default:
				row.Pass = *row.Delta <= *row.Limit
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// resourcesMissing says why a phase has no resource summary, or "".
func resourcesMissing(p Phase) string {
	if p.Resources != nil {
		return ""
	}
	if p.ResourcesError != "" {
		return "resources not summarised: " + p.ResourcesError
	}
	return "resources not summarised"
}

// percentChange is (b − a) ÷ |a| × 100, or nil when a is 0 and b is not.
// Multiplying before dividing keeps round figures exact at a limit's
// boundary (110 against 100 is exactly +10 %).
func percentChange(a, b float64) *float64 {
	switch {
	case a == b:
		d := 0.0
		return &d
	case a == 0:
		return nil
	}
	d := (b - a) * 100 / math.Abs(a)
	return &d
}

// compareValue formats a row's value; heap sizes read better in MiB.
func compareValue(r CompareRow, v float64) string {
	if r.Metric == metricHeapLive {
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	}
	return value(v, r.Unit)
}

// compareCells returns a row's old, new, change, limit and result cells.
func compareCells(r CompareRow) [5]string {
	oldS, newS := compareValue(r, r.Old), compareValue(r, r.New)
	if strings.Contains(r.Missing, "old run: ") {
		oldS = "—"
	}
	if strings.Contains(r.Missing, "new run: ") {
		newS = "—"
	}
	change := ""
	switch {
	case r.Missing != "":
		change = "n/a (missing)"
	case r.Delta == nil:
		change = "n/a (old is 0)"
	case r.DeltaUnit == "points":
		change = fmt.Sprintf("%+.2f points", *r.Delta)
	default:
		change = fmt.Sprintf("%+.1f %%", *r.Delta)
	}
	lim := "—"
	if r.Limit != nil {
		switch {
		case r.Metric == metricThroughput:
			lim = fmt.Sprintf("≥ %g %%", *r.Limit)
		case r.DeltaUnit == "points":
			lim = fmt.Sprintf("≤ %+g points", *r.Limit)
		default:
			lim = fmt.Sprintf("≤ %+g %%", *r.Limit)
		}
	}
	result := "info"
	switch {
	case r.Gated && r.Pass:
		result = "pass"
	case r.Gated:
		result = "FAIL"
	}
	return [5]string{oldS, newS, change, lim, result}
}

// Markdown renders the comparison as a Markdown section: the verdict, one
// table row per phase and metric, and the notes.
func (c Comparison) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# soakd comparison %s → %s\n\n", c.Old, c.New)
	fmt.Fprintf(&b, "**Verdict: %s**. Change is NEW − OLD, in points for GC %% and in percent of OLD otherwise.\n\n", strings.ToUpper(c.Verdict))
	if len(c.Rows) > 0 {
		b.WriteString("| Phase | Metric | Old | New | Change | Limit | Result |\n|---|---|---:|---:|---:|---:|---|\n")
		for _, r := range c.Rows {
			cells := compareCells(r)
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Phase, r.Metric, cells[0], cells[1], cells[2], cells[3], cells[4])
		}
		b.WriteString("\n")
	}
	if len(c.Notes) > 0 {
		b.WriteString("Notes:\n\n")
		for _, n := range c.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Table writes the comparison for a terminal: the rows, the notes and the
// verdict.
func (c Comparison) Table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Phase\tMetric\tOld\tNew\tChange\tLimit\tResult")
	for _, r := range c.Rows {
		cells := compareCells(r)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Phase, r.Metric, cells[0], cells[1], cells[2], cells[3], cells[4])
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("cannot write the comparison: %w", err)
	}
	for _, n := range c.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	_, err := fmt.Fprintf(w, "comparison %s → %s: %s\n", c.Old, c.New, strings.ToUpper(c.Verdict))
	return err
}
