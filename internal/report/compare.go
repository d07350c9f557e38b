package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/soakd/soakd/internal/fsutil"

	"github.com/soakd/soakd/internal/kpi"
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
	// P99LatencyFloorMs is the p99 limit's absolute floor, in ms: the limit
	// applied is max(P99LatencyPercent × OLD, floor).
	P99LatencyFloorMs float64
	// HeapLiveFloorBytes is the live-heap limit's absolute floor, in bytes.
	HeapLiveFloorBytes float64
	// Confidence is the two-sided level of the intervals (0: 0.95).
	Confidence float64
}

// CompareRow is one metric of one phase in both runs.
type CompareRow struct {
	// Phase is the phase's name, the same in both runs; a phase run in
	// rounds ("graphql-load#1", "#2", …) is one row named without the
	// suffix, each round one sample.
	Phase string `json:"phase"`
	// Metric is throughput_rps, cpu_us_per_request, alloc_bytes_per_request,
	// gc_percent, latency_p99_ms, heap_live_bytes_max,
	// cpu_per_request_vs_control (the GraphQL phase's CPU per request ÷ its
	// round's REST phase's, unit ×), or in a duet
	// cpu_us_per_request_seconds (CPU per request from the two builds'
	// simultaneous seconds, by batch means: kpi.DuetChangeInterval).
	Metric string `json:"metric"`
	// Unit of Old and New: req/s, µs, B, %, ms or × (a ratio).
	Unit string `json:"unit"`
	// Old and New are the metric's mean over the phase's rounds in the old
	// and the new run that measured it (rounds lacking it are named in
	// Missing); nil when no round did.
	Old *float64 `json:"old"`
	New *float64 `json:"new"`
	// OldRounds and NewRounds are the samples behind Old and New.
	OldRounds int `json:"old_rounds"`
	NewRounds int `json:"new_rounds"`
	// Change is New's change from Old in ChangeUnit ("percent" of Old, or
	// "points" for gc_percent); nil when either value is missing or when Old
	// is 0 and New is not (no finite percentage).
	Change     *float64 `json:"change"`
	ChangeUnit string   `json:"change_unit"`
	// Interval is the confidence interval of Change (Welch's, on the
	// logarithms for percent changes; with Paired, Student's t on the
	// per-pair changes); nil when the row was not judged (not gated, or a
	// value missing).
	Interval *kpi.Interval `json:"interval"`
	// Paired is true when Interval comes from pairs of rounds of one A/B
	// session (Comparison.Paired, every round present on both sides), or
	// for cpu_us_per_request_seconds from a duet's simultaneous seconds.
	Paired bool `json:"paired,omitempty"`
	// Basis says what a duet's per-second row (cpu_us_per_request_seconds)
	// was built from: the batches, their length and the correlation of
	// the seconds; "" for other rows.
	Basis string `json:"basis,omitempty"`
	// Limit is the bound on Change: an upper bound for costs, and for
	// throughput a lower bound (the negative of the allowed decrease); nil
	// when the metric has no limit.
	Limit *float64 `json:"limit"`
	// Floor is the limit's absolute floor in Unit (p99 latency in ms, live
	// heap in bytes): the limit applied is max(Limit, Floor ÷ Old × 100);
	// nil when the metric has none.
	Floor *float64 `json:"floor"`
	// EffectiveLimit is the bound applied when Floor raised Limit; nil
	// otherwise.
	EffectiveLimit *float64 `json:"effective_limit"`
	// Gated is true when the row counts towards the comparison's verdict:
	// its metric has a limit and the phase has at least two samples in each
	// run (one sample cannot measure its own noise).
	Gated bool `json:"gated"`
	// Outcome is pass, fail, inconclusive or not_measured for a gated row;
	// "" for an informational one.
	Outcome kpi.Outcome `json:"outcome,omitempty"`
	// Pass is true when Outcome is pass, and always true when not gated.
	Pass bool `json:"pass"`
	// Missing says which run lacks the metric and why ("" when both have
	// it); Change is then nil.
	Missing string `json:"missing,omitempty"`
	// Reason explains an informational row, an inconclusive one, or a
	// not-measured one.
	Reason string `json:"reason,omitempty"`
}

// CompareSchemaVersion is the version of the comparison's JSON layout
// (`soakd compare --format json`, schemas/compare.schema.json); it changes
// only when a field changes meaning or disappears.
const CompareSchemaVersion = 1

// Comparison is a new run measured against an old one (a release against
// the last accepted run), phase by phase.
type Comparison struct {
	// SchemaVersion is CompareSchemaVersion.
	SchemaVersion int `json:"schema_version"`
	// Old and New are the run ids.
	Old string `json:"old"`
	New string `json:"new"`
	// OldStatus and NewStatus are the runs' statuses: complete, running
	// or aborted (a run whose verdict is aborted counts as aborted).
	OldStatus string `json:"old_status"`
	NewStatus string `json:"new_status"`
	// Rows hold every metric of every phase present in both runs, in the
	// new run's phase order.
	Rows []CompareRow `json:"rows"`
	// Verdict is pass, fail or inconclusive (kpi.Combine of the gated rows).
	Verdict kpi.Outcome `json:"verdict"`
	// Notes list phases found in only one run, missing data and anything
	// else that limits the comparison.
	Notes []string `json:"notes"`
	// Paired is true when the runs are the two sides of one A/B session
	// (soakd ab: their rounds interleaved in one session): each gated
	// figure is then judged round by round, from the change within each
	// pair of rounds, so a machine that drifted during the session moves
	// both sides of a pair and not the verdict.
	Paired bool `json:"paired"`
	// JUnitInconclusive is how junit.xml shows an inconclusive comparison:
	// the old (base) run's report.junit_inconclusive, so that a candidate
	// cannot choose how its own undecided gate is shown; empty reads as
	// failure.
	JUnitInconclusive string `json:"junit_inconclusive,omitempty"`
	// Duet lists, phase by phase, which CPUs each side of a duet session
	// (soakd ab --duet) had; empty unless the runs are a duet's sides.
	Duet []DuetPlacement `json:"duet,omitempty"`
	// Attribution is where the compared GraphQL phase's CPU per request
	// changed, by layer and function, from both runs' CPU profiles; nil
	// when they have none (ChangeAttribution).
	Attribution *ChangeAttribution `json:"attribution,omitempty"`
}

// Comparison metric names.
const (
	metricThroughput = "throughput_rps"
	metricCPU        = "cpu_us_per_request"
	metricAlloc      = "alloc_bytes_per_request"
	metricGC         = "gc_percent"
	metricP99        = "latency_p99_ms"
	metricHeapLive   = "heap_live_bytes_max"
	// metricCPUVsControl is the GraphQL arm's CPU per request divided by
	// its REST control's in the same round (controlRatioPhases).
	metricCPUVsControl = "cpu_per_request_vs_control"
	// MetricCPUSeconds is a duet's CPU per request from per-second pairs.
	MetricCPUSeconds = "cpu_us_per_request_seconds"
)

// DuetNotCompared is why a duet does not gate a max-load phase.
const DuetNotCompared = "not compared in a duet: both sides share the machine's saturation"

// cmpFigure is one metric of one phase, or why it is missing.
type cmpFigure struct {
	v       float64
	missing string
}

// baseName strips a round suffix: "graphql-load#3" → "graphql-load".
func baseName(name string) string {
	if i := strings.LastIndexByte(name, '#'); i > 0 {
		return name[:i]
	}
	return name
}

// phaseGroups groups a run's phases by base name, in order of first
// appearance: each group holds one phase per round.
func phaseGroups(r *Report) (names []string, groups map[string][]Phase) {
	groups = map[string][]Phase{}
	for _, p := range r.Phases {
		b := baseName(p.Name)
		if _, ok := groups[b]; !ok {
			names = append(names, b)
		}
		groups[b] = append(groups[b], p)
	}
	return names, groups
}

// CompareRuns compares new against old phase by phase (phases matched by
// name, rounds of a phase as samples) and gates each metric with l by the
// three-outcome rule: pass when the whole confidence interval of the change
// is inside the limit, fail when it is wholly beyond, inconclusive
// otherwise. It is pure. A phase with one sample in either run is reported
// but not gated; a gated metric whose data is missing is not measured;
// nothing unmeasured passes. Runs of different profiles or arms are
// compared with a loud note and are inconclusive: they can neither pass
// nor fail a release.
func CompareRuns(old, new *Report, l CompareLimits) Comparison {
	return compareRuns(old, new, l, nil)
}

// DuetSeconds are a duet's simultaneous seconds of one compared phase,
// round by round (seconds[r] round r+1's, in time order), for
// CompareDuet.
type DuetSeconds map[string][][]kpi.DuetSecond

// DuetSecondsFile is the file of a duet session's directory (beside old/
// and new/) that keeps its simultaneous seconds, so that soakd compare of
// the two sides judges them as the session did.
const DuetSecondsFile = "duet-seconds.json"

// maxDuetSecondsBytes bounds DuetSecondsFile when read back.
const maxDuetSecondsBytes = 64 << 20

// duetSecondsDoc is DuetSecondsFile's content.
type duetSecondsDoc struct {
	// Session is the A/B session's id (ab.session in both sides' reports).
	Session string `json:"session"`
	// Phases are the simultaneous seconds by compared phase, round by
	// round.
	Phases DuetSeconds `json:"phases"`
}

// WriteDuetSeconds writes a duet session's seconds into its directory,
// atomically.
func WriteDuetSeconds(dir, session string, s DuetSeconds) error {
	b, err := json.MarshalIndent(duetSecondsDoc{Session: session, Phases: s}, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteFile(filepath.Join(dir, DuetSecondsFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("cannot write %s: %w", DuetSecondsFile, err)
	}
	return nil
}

// ReadDuetSeconds reads the simultaneous seconds of session from dir's
// DuetSecondsFile; ok is false when dir has none or it is another
// session's.
func ReadDuetSeconds(dir, session string) (s DuetSeconds, ok bool, err error) {
	path := filepath.Join(dir, DuetSecondsFile)
	f, err := fsutil.OpenRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cannot read the duet's seconds: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDuetSecondsBytes+1))
	if err != nil {
		return nil, false, fmt.Errorf("cannot read the duet's seconds: %w", err)
	}
	if len(b) > maxDuetSecondsBytes {
		return nil, false, fmt.Errorf("%s is over %d MiB: not a duet session's seconds (a day of 1 s seconds is under 10 MiB)", path, maxDuetSecondsBytes>>20)
	}
	var d duetSecondsDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, false, fmt.Errorf("cannot decode %s: %w", filepath.Join(dir, DuetSecondsFile), err)
	}
	if d.Session != session {
		return nil, false, nil
	}
	return d.Phases, true, nil
}

// CompareDuet is CompareRuns for the two sides of a duet session (soakd
// ab --duet), with each named phase's simultaneous seconds: its CPU per
// request is then judged from them (a cpu_us_per_request_seconds row, by
// batch means, kpi.DuetChangeInterval), and its per-round
// cpu_us_per_request row is shown but not gated, so one figure is not
// judged twice. A max-load phase is not gated (DuetNotCompared).
func CompareDuet(old, new *Report, l CompareLimits, seconds DuetSeconds) Comparison {
	return compareRuns(old, new, l, seconds)
}

// DuetRuns reports whether old and new are the sides of one duet session.
func DuetRuns(old, new *Report) bool {
	return PairedRuns(old, new) && len(old.AB.Duet) > 0 && len(new.AB.Duet) > 0
}

func compareRuns(old, new *Report, l CompareLimits, seconds DuetSeconds) Comparison {
	if l.Confidence == 0 {
		l.Confidence = kpi.DefaultConfidence
	}
	c := Comparison{SchemaVersion: CompareSchemaVersion, Old: old.Run, New: new.Run,
		OldStatus: runStatus(old), NewStatus: runStatus(new), Rows: []CompareRow{}, Notes: []string{},
		JUnitInconclusive: old.JUnitInconclusive}
	var forced []kpi.Outcome
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
	different := old.Profile != new.Profile || old.Arms != new.Arms
	if different {
		c.Notes = append(c.Notes, fmt.Sprintf("DIFFERENT RUNS: the old run used profile %q with arms %q, the new one profile %q with arms %q; their figures measure different workloads, so the comparison is inconclusive whatever the rows say: neither pass nor a release fail.",
			old.Profile, old.Arms, new.Profile, new.Arms))
		forced = append(forced, kpi.OutcomeInconclusive)
	}
	c.Paired = PairedRuns(old, new)
	duet := DuetRuns(old, new)
	if duet {
		c.Duet = new.AB.Duet
		layout := "each target with its own driver on its half of the CPUs, the halves swapped between rounds"
		if sharedLayout(new.AB.Duet) {
			layout = "both targets and both drivers on the same CPUs (compare.duet_layout: shared)"
		}
		c.Notes = append(c.Notes, fmt.Sprintf("Duet: both builds ran every phase at the same time, %s (%s); max-load phases are %s.",
			layout, placementText(new.AB.Duet), DuetNotCompared))
	}
	if c.Paired && !duet {
		c.Notes = append(c.Notes, fmt.Sprintf("Paired: %s and %s are the old and new sides of A/B session %s, their phases interleaved in one session; each gated figure is judged from the change within each pair of rounds (round k of the old build against round k of the new), so drift of the machine during the session lands on both sides of a pair.",
			old.Run, new.Run, new.AB.Session))
	}
	arms := map[string]string{} // compared phase → its arm in the new run
	oldNames, oldGroups := phaseGroups(old)
	newNames, newGroups := phaseGroups(new)
	for _, n := range oldNames {
		if _, ok := newGroups[n]; !ok {
			c.Notes = append(c.Notes, fmt.Sprintf("phase %s is only in the old run %s: not compared.", n, old.Run))
		}
	}
	for _, n := range newNames {
		ops, ok := oldGroups[n]
		if !ok {
			c.Notes = append(c.Notes, fmt.Sprintf("phase %s is only in the new run %s: not compared.", n, new.Run))
			continue
		}
		nps := newGroups[n]
		if ops[0].Arm != nps[0].Arm {
			c.Notes = append(c.Notes, fmt.Sprintf("phase %s is arm %s in the old run and arm %s in the new one.", n, ops[0].Arm, nps[0].Arm))
		}
		rows := comparePhase(n, ops, nps, l, c.Paired, duet, &c.Notes)
		if secs, ok := seconds[n]; ok && duet {
			rows = append(rows, duetSecondsRow(n, secs, l, rows))
		}
		c.Rows = append(c.Rows, rows...)
		arms[n] = nps[0].Arm
	}
	if row, ok := compareVsControl(old, new, l, c.Paired, &c.Notes); ok {
		c.Rows = append(c.Rows, row)
	}
	// Runs made at different times are read against their control group;
	// the sides of one session shared the machine pair by pair, so a
	// figure that rose in both arms rose with the build.
	for _, metric := range []string{metricP99, metricCPU} {
		if c.Paired {
			break
		}
		if note := controlled(c.Rows, arms, metric); note != "" {
			c.Notes = append(c.Notes, note)
		}
	}
	var gated []kpi.Outcome
	for _, r := range c.Rows {
		if r.Gated {
			gated = append(gated, r.Outcome)
		}
	}
	if len(gated) == 0 {
		c.Notes = append(c.Notes, "no gated figure could be judged (no phase ran in rounds in both runs, or every limit is 0): the comparison is inconclusive.")
	}
	if len(c.Rows) == 0 {
		c.Notes = append(c.Notes, "no phase is in both runs: nothing was compared, so the comparison cannot pass.")
	}
	if (new.Status != StatusComplete && new.Status != StatusAborted) || (old.Status != StatusComplete && old.Status != StatusAborted) {
		forced = append(forced, kpi.OutcomeInconclusive)
		c.Notes = append(c.Notes, "a run is still in progress: the comparison cannot pass until both are complete.")
	}
	if c.NewStatus == StatusAborted {
		forced = append(forced, kpi.OutcomeFail)
		c.Notes = append(c.Notes, "the new run was aborted: the comparison cannot pass.")
	}
	c.Verdict = (kpi.Combine(append(gated, forced...)...))
	if different && c.Verdict == kpi.OutcomeFail && c.NewStatus != StatusAborted {
		// A change between two workloads is no regression of the build.
		c.Verdict = kpi.OutcomeInconclusive
	}
	return c
}

// controlled reads one metric's rows (p99 latency, CPU per request)
// against the run's control group. Two runs are made at different times,
// and a busier or slower machine moves tail latency and CPU per request in
// both arms: when the metric rose significantly (the whole interval of its
// change above 0) in a phase of each arm, REST and GraphQL, the machine
// may have changed between the runs as much as the build, so no fail of
// that metric can be laid at the build's door. Each such fail becomes
// inconclusive, saying why, and the returned note tells the user; "" when
// the control did not move. A build that slows only the GraphQL arm still
// fails (and cpu_per_request_vs_control, which divides by the control in
// each round, judges GraphQL's own cost whatever the machine did); one that
// slows both arms alike reads inconclusive, never pass. arms maps a row's
// phase to its arm.
func controlled(rows []CompareRow, arms map[string]string, metric string) string {
	rose := map[string]string{} // arm → the first phase whose figure rose significantly
	for _, r := range rows {
		if r.Metric == metric && r.Interval != nil && r.Interval.Finite() && r.Interval.Lo > 0 && rose[arms[r.Phase]] == "" {
			rose[arms[r.Phase]] = r.Phase
		}
	}
	if rose["rest"] == "" || rose["graphql"] == "" {
		return ""
	}
	why := fmt.Sprintf("%s rose significantly in both arms (%s and %s): the machine changed between the runs, not only the build, so a %s fail cannot be attributed to the build (compare runs made under the same load", metric, rose["rest"], rose["graphql"], metric)
	if metric == metricCPU {
		why += "; " + metricCPUVsControl + " judges GraphQL's cost relative to its control"
	}
	why += ")"
	downgraded := 0
	for i := range rows {
		if r := &rows[i]; r.Metric == metric && r.Outcome == kpi.OutcomeFail {
			r.Outcome, r.Pass, r.Reason = kpi.OutcomeInconclusive, false, why
			downgraded++
		}
	}
	if downgraded == 0 {
		return ""
	}
	return "CONTROL GROUP MOVED: " + why + "."
}

// controlRatioPhases returns, for each round of r, a copy of the round's
// GraphQL-arm phase whose PerRequest.CPUMicros is its CPU per request
// divided by the same round's REST-arm phase's: GraphQL's cost relative to
// its control group measured minutes apart, which a slower or faster
// machine moves much less than either figure. Rounds missing either figure
// are left out; nil for a run without both arms (a self-check, no control
// group).
func controlRatioPhases(r *Report) []Phase {
	if r.Arms != "" && r.Arms != "rest,graphql" {
		return nil
	}
	byName := map[string]Phase{}
	for _, p := range r.Phases {
		byName[p.Name] = p
	}
	var out []Phase
	for _, rd := range r.Rounds {
		rp, okR := byName[rd.REST]
		gp, okG := byName[rd.GraphQL]
		if !okR || !okG || rp.Arm != "rest" || gp.Arm != "graphql" || resourcesMissing(rp) != "" || resourcesMissing(gp) != "" ||
			!rp.Resources.CPUKnown || !gp.Resources.CPUKnown || rp.PerRequest.CPUMicros <= 0 || gp.PerRequest.CPUMicros <= 0 {
			continue
		}
		q := gp
		q.PerRequest.CPUMicros = gp.PerRequest.CPUMicros / rp.PerRequest.CPUMicros
		out = append(out, q)
	}
	return out
}

// compareVsControl compares GraphQL's CPU per request relative to its REST
// control (controlRatioPhases) between the runs, gated by the CPU limit;
// ok is false when either run has no round with both figures.
func compareVsControl(old, new *Report, l CompareLimits, paired bool, notes *[]string) (CompareRow, bool) {
	ops, nps := controlRatioPhases(old), controlRatioPhases(new)
	if len(ops) == 0 || len(nps) == 0 {
		return CompareRow{}, false
	}
	notGateable := ""
	if len(ops) < 2 || len(nps) < 2 {
		notGateable = fmt.Sprintf("one round per run (%d old, %d new): run the compared phases in rounds to gate it", len(ops), len(nps))
	}
	spec := compareSpec{metricCPUVsControl, "×", false, false, l.CPUPerRequestPercent, 0, func(p Phase) cmpFigure {
		return cmpFigure{v: p.PerRequest.CPUMicros}
	}}
	return compareMetric(baseName(nps[0].Name), spec, ops, nps, notGateable, l.Confidence, paired, notes), true
}

// runStatus is r's status, aborted when its verdict says so.
func runStatus(r *Report) string {
	if r.Verdict == kpi.OutcomeAborted {
		return StatusAborted
	}
	return r.Status
}

// compareSpec is one compared metric.
type compareSpec struct {
	metric, unit string
	points       bool
	decrease     bool
	limit        float64
	floor        float64 // absolute floor of a percent limit, in unit (0: none)
	get          func(Phase) cmpFigure
}

// comparePhase builds the rows of one phase (all its rounds) present in
// both runs.
func comparePhase(name string, ops, nps []Phase, l CompareLimits, paired, duet bool, notes *[]string) []CompareRow {
	specs := []compareSpec{
		{metricThroughput, "req/s", false, true, l.ThroughputDecreasePercent, 0, func(p Phase) cmpFigure {
			if p.ThroughputRPS <= 0 {
				return cmpFigure{missing: "no throughput"}
			}
			if p.SteadyFallback != "" {
				return cmpFigure{missing: "no steady window (" + p.SteadyFallback + ")"}
			}
			return cmpFigure{v: p.ThroughputRPS}
		}},
		{metricCPU, "µs", false, false, l.CPUPerRequestPercent, 0, func(p Phase) cmpFigure {
			if m := resourcesMissing(p); m != "" {
				return cmpFigure{missing: m}
			}
			if !p.Resources.CPUKnown || p.ThroughputRPS <= 0 {
				return cmpFigure{missing: "cpu per request not measured"}
			}
			return cmpFigure{v: p.PerRequest.CPUMicros}
		}},
		{metricAlloc, "B", false, false, l.AllocPerRequestPercent, 0, func(p Phase) cmpFigure {
			if m := resourcesMissing(p); m != "" {
				return cmpFigure{missing: m}
			}
			if p.ThroughputRPS <= 0 {
				return cmpFigure{missing: "no throughput to divide by"}
			}
			return cmpFigure{v: p.PerRequest.AllocBytes}
		}},
		{metricGC, "%", true, false, l.GCPercentPoints, 0, func(p Phase) cmpFigure {
			if m := resourcesMissing(p); m != "" {
				return cmpFigure{missing: m}
			}
			if !p.Resources.GCPercentKnown {
				return cmpFigure{missing: "gc % not measured (no gc cycle ended in the window)"}
			}
			return cmpFigure{v: p.Resources.GCPercent}
		}},
		{metricP99, "ms", false, false, l.P99LatencyPercent, l.P99LatencyFloorMs, func(p Phase) cmpFigure {
			if p.Requests == 0 {
				return cmpFigure{missing: "no request completed"}
			}
			return cmpFigure{v: p.LatencyMs.P99}
		}},
		{metricHeapLive, "B", false, false, l.HeapLivePercent, l.HeapLiveFloorBytes, func(p Phase) cmpFigure {
			if m := resourcesMissing(p); m != "" {
				return cmpFigure{missing: m}
			}
			return cmpFigure{v: float64(p.Resources.HeapLiveBytesMax)}
		}},
	}
	notGateable := ""
	switch {
	case (ops[0].MaxLoad != nil || nps[0].MaxLoad != nil) && duet:
		notGateable = DuetNotCompared
	case ops[0].MaxLoad != nil || nps[0].MaxLoad != nil:
		notGateable = maxLoadReason(ops, nps)
	case len(ops) < 2 || len(nps) < 2:
		notGateable = fmt.Sprintf("one sample per run (%d old, %d new): run the phase in rounds to gate it", len(ops), len(nps))
	}
	if notGateable != "" {
		*notes = append(*notes, fmt.Sprintf("phase %s is reported, not gated: %s.", name, notGateable))
	}
	rows := make([]CompareRow, 0, len(specs))
	for _, s := range specs {
		rows = append(rows, compareMetric(name, s, ops, nps, notGateable, l.Confidence, paired, notes))
	}
	return rows
}

// placementText words a duet's layout: "graphql-load#1 old 0 new 1, …".
func placementText(ps []DuetPlacement) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%s: old on CPU %s, new on CPU %s", p.Phase, cpuList(p.OldCPUs), cpuList(p.NewCPUs))
	}
	return strings.Join(parts, "; ")
}

// sharedLayout reports whether a duet ran both sides on the same CPUs in
// every phase (compare.duet_layout: shared).
func sharedLayout(ps []DuetPlacement) bool {
	for _, p := range ps {
		if !slices.Equal(p.OldCPUs, p.NewCPUs) {
			return false
		}
	}
	return len(ps) > 0
}

// cpuList writes CPUs as "0,1".
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = fmt.Sprint(c)
	}
	return strings.Join(s, ",")
}

// duetSecondsRow judges a duet phase's CPU per request from its
// simultaneous seconds, and makes the phase's per-round
// cpu_us_per_request row (in rows) informational, pointing to it.
func duetSecondsRow(name string, rounds [][]kpi.DuetSecond, l CompareLimits, rows []CompareRow) CompareRow {
	row := CompareRow{Phase: name, Metric: MetricCPUSeconds, Unit: "µs", ChangeUnit: "percent", Pass: true, Paired: true}
	var oc, nc, or, nr float64
	for _, r := range rounds {
		for _, s := range r {
			oc, nc, or, nr = oc+s.OldCPUSeconds, nc+s.NewCPUSeconds, or+s.OldRequests, nr+s.NewRequests
		}
	}
	if or > 0 && nr > 0 && oc > 0 && nc > 0 {
		o, n := oc/or*1e6, nc/nr*1e6
		row.Old, row.New = &o, &n
		row.Change = percentChange(o, n)
	} else {
		row.Missing = "no simultaneous second with requests and CPU on both sides (the steady windows did not overlap by a second)"
	}
	est, why := kpi.DuetChangeInterval(rounds, l.Confidence)
	row.OldRounds, row.NewRounds = est.Batches, est.Batches
	if l.CPUPerRequestPercent == 0 {
		row.Reason = "not gated: compare.cpu_per_request_increase_percent is 0"
		return row
	}
	lim := l.CPUPerRequestPercent
	row.Limit, row.Gated = &lim, true
	for i := range rows {
		if r := &rows[i]; r.Metric == metricCPU && r.Gated {
			r.Gated, r.Outcome, r.Pass = false, "", true
			r.Reason = "not gated: in a duet this phase's CPU per request is judged from its simultaneous seconds (" + MetricCPUSeconds + ")"
		}
	}
	if why != "" {
		row.Pass, row.Outcome, row.Reason = false, kpi.OutcomeNotMeasured, why
		if row.Missing != "" {
			row.Reason = row.Missing
		}
		return row
	}
	row.Basis = fmt.Sprintf("%d batches of %d s of simultaneous seconds over %d rounds; lag-one correlation of the seconds %.2f (from their lag-two correlation; %.2f read directly, biased down by shared boundaries), of the batches %.2f (variance × %.2f)",
		est.Batches, est.BatchSeconds, len(rounds), est.SecondsCorrelation, est.SecondsLagOne, est.BatchCorrelation, 1+2*est.BatchCorrelation)
	switch {
	case est.RoundLevel:
		row.Basis += fmt.Sprintf("; the rounds differed beyond their batches' noise (F = %.2f > %.2f, the %.0f %% test of a round effect), so the interval is the %d rounds' means'", est.RoundF, est.RoundFLimit, kpi.DuetRoundPoolLevel*100, est.Rounds)
	case est.Rounds >= 2:
		row.Basis += fmt.Sprintf("; no round effect beyond the batches' noise (F = %.2f ≤ %.2f)", est.RoundF, est.RoundFLimit)
	}
	iv := est.Interval
	row.Interval = &iv
	row.Outcome = kpi.Decide(iv, lim, kpi.AtMost)
	row.Pass = row.Outcome == kpi.OutcomePass
	if row.Outcome == kpi.OutcomeInconclusive {
		row.Reason = "the interval straddles the limit: lengthen the compared phase or add rounds (more simultaneous seconds)"
	}
	return row
}

// maxLoadReason says why a max-load phase's figures are not gated: a
// throughput that stopped at the duration cap, or at the users cap, measured
// the harness's ramp, not the server; and one max-load run per build has no
// noise estimate.
func maxLoadReason(ops, nps []Phase) string {
	for _, ps := range [][]Phase{ops, nps} {
		for _, p := range ps {
			ml := p.MaxLoad
			switch {
			case ml == nil:
			case ml.Knee != nil && ml.Knee.Attribution != kpi.KneeTarget:
				return fmt.Sprintf("max load %s found a %s knee (%s): not attributable to the server", p.Name, ml.Knee.Attribution, ml.Knee.Reason)
			case ml.Knee == nil && !ml.Failed:
				return fmt.Sprintf("max load %s stopped by %s, not at a knee of the target: not attributable to the server", p.Name, ml.Reason)
			}
		}
	}
	return "max load runs once per build: one sample cannot be gated (compare the knees by eye)"
}

// compareMetric builds one row. With paired (the sides of one A/B
// session) and every round present on both sides, the interval is that of
// the change within each pair of same-named rounds.
func compareMetric(name string, s compareSpec, ops, nps []Phase, notGateable string, confidence float64, paired bool, notes *[]string) CompareRow {
	row := CompareRow{Phase: name, Metric: s.metric, Unit: s.unit, ChangeUnit: "percent", Gated: s.limit != 0 && notGateable == "", Pass: true,
		OldRounds: len(ops), NewRounds: len(nps)}
	if s.points {
		row.ChangeUnit = "points"
	}
	if s.floor > 0 {
		f := s.floor
		row.Floor = &f
	}
	if s.limit != 0 {
		lim := s.limit
		if s.decrease {
			lim = -lim
		}
		row.Limit = &lim
	}
	if s.limit != 0 && notGateable != "" {
		row.Reason = "not gated: " + notGateable
	}
	collect := func(which string, ps []Phase) []float64 {
		var vs []float64
		for _, p := range ps {
			f := s.get(p)
			if f.missing != "" {
				consequence := "not gated"
				if row.Gated {
					consequence = "the gated metric is not measured"
				}
				*notes = append(*notes, fmt.Sprintf("phase %s: %s is missing in the %s run (%s); %s.", p.Name, s.metric, which, f.missing, consequence))
				if row.Missing != "" {
					row.Missing += "; "
				}
				row.Missing += which + " run: " + f.missing
				continue
			}
			vs = append(vs, f.v)
		}
		return vs
	}
	ov, nv := collect("old", ops), collect("new", nps)
	if len(ov) > 0 {
		m := meanOf(ov)
		row.Old = &m
	}
	if len(nv) > 0 {
		m := meanOf(nv)
		row.New = &m
	}
	if row.Missing == "" {
		if s.points {
			d := *row.New - *row.Old
			row.Change = &d
		} else {
			row.Change = percentChange(*row.Old, *row.New)
		}
	}
	if !row.Gated {
		return row
	}
	if row.Missing != "" {
		row.Pass, row.Outcome, row.Reason = false, kpi.OutcomeNotMeasured, row.Missing
		return row
	}
	var iv kpi.Interval
	pa, pb, pairs := pairRounds(ops, nps, s.get)
	paired = paired && pairs
	row.Paired = paired
	switch {
	case s.points && paired:
		iv = kpi.PairedDiffInterval(pa, pb, confidence)
	case s.points:
		iv = kpi.DiffInterval(ov, nv, confidence)
	default:
		var ok bool
		if paired {
			iv, ok = kpi.PairedChangeInterval(pa, pb, confidence)
		} else {
			iv, ok = kpi.ChangeInterval(ov, nv, confidence)
		}
		if !ok {
			row.Pass, row.Outcome, row.Reason = false, kpi.OutcomeNotMeasured, "a value of 0: no finite percent change"
			return row
		}
	}
	row.Interval = &iv
	lim := *row.Limit
	if s.floor > 0 && *row.Old > 0 {
		if f := s.floor / *row.Old * 100; f > lim {
			lim = f
			row.EffectiveLimit = &f
		}
	}
	b := kpi.AtMost
	if s.decrease {
		b = kpi.AtLeast
	}
	row.Outcome = kpi.Decide(iv, lim, b)
	row.Pass = row.Outcome == kpi.OutcomePass
	if row.Outcome == kpi.OutcomeInconclusive {
		row.Reason = kpi.SettleAdvice(iv, lim)
	}
	return row
}

// pairRounds matches each old round with the new round of the same name
// ("graphql-load#3" with "graphql-load#3") and returns their figures in
// round order; ok is false unless every round of both sides has its
// partner and its figure.
func pairRounds(ops, nps []Phase, get func(Phase) cmpFigure) (a, b []float64, ok bool) {
	if len(ops) != len(nps) {
		return nil, nil, false
	}
	byName := make(map[string]Phase, len(nps))
	for _, p := range nps {
		byName[p.Name] = p
	}
	for _, op := range ops {
		np, found := byName[op.Name]
		if !found {
			return nil, nil, false
		}
		fo, fn := get(op), get(np)
		if fo.missing != "" || fn.missing != "" {
			return nil, nil, false
		}
		a, b = append(a, fo.v), append(b, fn.v)
	}
	return a, b, true
}

// PairedRuns reports whether old and new are the old and new sides of one
// A/B session (Report.AB), whose rounds CompareRuns pairs.
func PairedRuns(old, new *Report) bool {
	return old.AB != nil && new.AB != nil && old.AB.Session != "" && old.AB.Session == new.AB.Session &&
		old.AB.Side == ABOld && new.AB.Side == ABNew
}

func meanOf(vs []float64) float64 {
	s := 0.0
	for _, v := range vs {
		s += v
	}
	return s / float64(len(vs))
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
func compareValue(r CompareRow, v *float64) string {
	switch {
	case v == nil:
		return "—"
	case r.Metric == metricHeapLive:
		return fmt.Sprintf("%.1f MiB", *v/(1<<20))
	}
	return value(*v, r.Unit)
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
	case r.Change == nil:
		change = "n/a (old is 0)"
	case r.ChangeUnit == "points":
		change = fmt.Sprintf("%+.2f points", *r.Change)
	default:
		change = fmt.Sprintf("%+.1f %%", *r.Change)
	}
	lim := "—"
	if r.Limit != nil {
		switch {
		case r.Metric == metricThroughput:
			lim = fmt.Sprintf("≥ %g %%", *r.Limit)
		case r.ChangeUnit == "points":
			lim = fmt.Sprintf("≤ %+g points", *r.Limit)
		default:
			lim = fmt.Sprintf("≤ %+g %%", *r.Limit)
		}
	}
	if r.EffectiveLimit != nil {
		lim += fmt.Sprintf(" (floor: %+.0f %%)", *r.EffectiveLimit)
	}
	result := "info"
	switch {
	case r.Gated && r.Pass:
		result = "pass"
	case r.Outcome == kpi.OutcomeInconclusive:
		result = "INCONCLUSIVE"
	case r.Outcome == kpi.OutcomeNotMeasured:
		result = "NOT MEASURED"
	case r.Gated:
		result = "FAIL"
	}
	if r.Interval != nil && r.Interval.Finite() {
		f := "[%+.1f, %+.1f] %%"
		if r.ChangeUnit == "points" {
			f = "[%+.2f, %+.2f] points"
		}
		change += " " + fmt.Sprintf(f, r.Interval.Lo, r.Interval.Hi)
	}
	return [5]string{oldS, newS, change, lim, result}
}

// Reasons lists every gated row that did not pass, with its numbers: the
// reason for a comparison's verdict.
func (c Comparison) Reasons() []string {
	var out []string
	for _, r := range c.Rows {
		if !r.Gated || r.Pass {
			continue
		}
		cells := compareCells(r)
		line := fmt.Sprintf("%s: %s %s %s → %s, change %s, limit %s", strings.ToUpper(string(r.Outcome)), r.Phase, r.Metric, cells[0], cells[1], cells[2], cells[3])
		if r.Reason != "" {
			line += ": " + r.Reason
		}
		out = append(out, line)
	}
	return out
}

// JSON renders the comparison as one indented JSON document (see
// schemas/compare.schema.json), ending with a newline.
func (c Comparison) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cannot encode the comparison: %w", err)
	}
	return append(b, '\n'), nil
}

// MarkdownMarker opens every Markdown comparison, hidden when rendered: a
// bot posting it as a pull request comment finds its own comment by it and
// updates it in place instead of adding one per push.
const MarkdownMarker = "<!-- soakd-comparison -->"

// metricTitles are the metrics' names for people.
var metricTitles = map[string]string{
	metricThroughput:   "Throughput",
	metricCPU:          "CPU per request",
	metricAlloc:        "Heap allocated per request",
	metricGC:           "GC % time",
	metricP99:          "p99 latency",
	metricHeapLive:     "Largest live heap",
	metricCPUVsControl: "CPU per request ÷ REST control's",
	MetricCPUSeconds:   "CPU per request, simultaneous seconds",
}

// metricTitle is a metric's name for people ("CPU per request"), the
// metric's own name when it has none.
func metricTitle(m string) string {
	if t, ok := metricTitles[m]; ok {
		return t
	}
	return m
}

// Markdown renders the comparison for a pull request comment: the hidden
// marker, the verdict and both runs, the reasons for the verdict (every
// gated row that did not pass, with its numbers), then every row in a
// collapsed table (metrics by their titles) and the notes.
func (c Comparison) Markdown() string {
	var b strings.Builder
	b.WriteString(MarkdownMarker + "\n")
	fmt.Fprintf(&b, "## soakd comparison: %s\n\n", c.Verdict.Word())
	kind := "run"
	switch {
	case len(c.Duet) > 0:
		kind = "duet A/B session"
	case c.Paired:
		kind = "A/B session"
	}
	fmt.Fprintf(&b, "**Verdict: %s** (%s). Old: `%s`; new: `%s`. Change is NEW − OLD, in points for GC %% and in percent of OLD otherwise.\n\n",
		c.Verdict.Word(), kind, mdText(c.Old), mdText(c.New))
	var why []string
	for _, r := range c.Rows {
		if !r.Gated || r.Pass {
			continue
		}
		cells := compareCells(r)
		line := fmt.Sprintf("**%s** %s %s: %s → %s, change %s, limit %s", strings.ToUpper(string(r.Outcome)), mdText(r.Phase), mdText(metricTitle(r.Metric)),
			mdText(cells[0]), mdText(cells[1]), mdText(cells[2]), mdText(cells[3]))
		if r.Reason != "" {
			line += ": " + mdText(r.Reason)
		}
		why = append(why, line)
	}
	if len(why) > 0 {
		b.WriteString("Why:\n\n")
		for _, w := range why {
			fmt.Fprintf(&b, "- %s\n", w)
		}
		b.WriteString("\n")
	}
	if len(c.Rows) > 0 {
		fmt.Fprintf(&b, "<details><summary>All %d rows</summary>\n\n", len(c.Rows))
		b.WriteString("| Phase | Metric | Old | New | Change | Limit | Result |\n|---|---|---:|---:|---:|---:|---|\n")
		for _, r := range c.Rows {
			cells := compareCells(r)
			b.WriteString(mdRow(mdTexts(append([]string{r.Phase, metricTitle(r.Metric)}, cells[:5]...))...))
		}
		b.WriteString("\n</details>\n\n")
	}
	if a := c.Attribution; a != nil {
		b.WriteString(a.markdown())
	}
	if len(c.Notes) > 0 {
		b.WriteString("Notes:\n\n")
		for _, n := range c.Notes {
			fmt.Fprintf(&b, "- %s\n", mdText(n))
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
	if a := c.Attribution; a != nil {
		if err := a.table(w); err != nil {
			return err
		}
	}
	for _, n := range c.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for _, r := range c.Reasons() {
		fmt.Fprintf(w, "  - %s\n", r)
	}
	_, err := fmt.Fprintf(w, "comparison %s → %s: %s\n", c.Old, c.New, c.Verdict.Word())
	return err
}
