// Package kpi turns the figures of a REST control arm and a GraphQL arm into
// seed 002's release gate: one row per metric with both values, the variance,
// the limit and whether it passed. Everything here is a pure function.
package kpi

import (
	"encoding/json"
	"fmt"
	"math"
)

// Figures are one arm's measurements over its phase's steady window.
type Figures struct {
	// CPUMachinePercent is target CPU time ÷ (wall time × cores) × 100.
	CPUMachinePercent float64
	// CPUCorePercent is target CPU time ÷ wall time × 100 (share of one core).
	CPUCorePercent float64
	// GCPercent is Δ GC CPU ÷ Δ total CPU × 100, from runtime/metrics.
	GCPercent float64
	// ThroughputRPS is completed requests per second.
	ThroughputRPS float64
	// GCPauseP99Ms is the 99th percentile stop-the-world GC pause, ms.
	GCPauseP99Ms float64
	// CPUMicrosPerRequest is target CPU µs per completed request.
	CPUMicrosPerRequest float64
	// AllocBytesPerRequest is heap bytes allocated per completed request.
	AllocBytesPerRequest float64
	// NotMeasured names, by KPI row name (cpu_machine_percent, gc_percent,
	// …), the figures this arm could not measure, with the reason. A row
	// with either arm's figure listed here is "not measured", never 0 and
	// never pass.
	NotMeasured map[string]string
}

// Limits are the gate. The three seed 002 KPIs are always gated; the
// optional per-request limits gate only when set.
type Limits struct {
	CPUIncreasePoints              float64
	GCIncreasePoints               float64
	ThroughputDecreasePercent      float64
	CPUPerRequestIncreasePercent   *float64
	AllocPerRequestIncreasePercent *float64
	GCPauseP99IncreasePercent      *float64
	// GCPauseP99FloorMs is the absolute floor of the GC pause p99 limit, in
	// ms: the gate is max(percent × REST, floor), since +100 % of a 0.3 ms
	// pause is noise on a shared machine.
	GCPauseP99FloorMs float64
}

// Result is one row of the KPI table.
type Result struct {
	// Name identifies the metric (stable, snake_case).
	Name string `json:"name"`
	// Title is the human label used in tables.
	Title string `json:"title"`
	// Unit of REST and GraphQL values.
	Unit string `json:"unit"`
	// REST and GraphQL are the arms' values in Unit; written as null when
	// that arm was not measured (RESTNotMeasured, GraphQLNotMeasured,
	// NoControl): see MarshalJSON.
	REST    float64 `json:"-"`
	GraphQL float64 `json:"-"`
	// Delta is GraphQL's variance from REST in DeltaUnit: "points" (a
	// difference of two percentages) or "percent" (relative to REST). It is
	// nil when undefined: a percent change from a REST value of zero.
	Delta     *float64 `json:"delta"`
	DeltaUnit string   `json:"delta_unit"`
	// Threshold is the limit on Delta; nil when the row is informational.
	Threshold *float64 `json:"threshold"`
	// Rule states the pass condition in words, e.g. "delta <= +5 points".
	Rule string `json:"rule"`
	// Gated is true when the row counts towards the verdict.
	Gated bool `json:"gated"`
	// Pass is true when the row passed (Outcome pass), and true for an
	// informational row that was measured. Kept for readers of schema 1;
	// Outcome is the verdict. A row that was not measured (NotMeasured) never
	// passes: its "pass" is absent from the JSON.
	Pass bool `json:"-"`
	// Outcome is pass, fail, inconclusive or not_measured for a gated row
	// judged over rounds; "" for an informational row and for one round's
	// point values.
	Outcome Outcome `json:"outcome,omitempty"`
	// Interval is the confidence interval of Delta across rounds; nil for
	// one round's point values.
	Interval *Interval `json:"interval,omitempty"`
	// Floor is the absolute floor of a relative limit, in Unit; the limit
	// applied is then max(Threshold, Floor ÷ REST × 100) percent.
	Floor *float64 `json:"floor,omitempty"`
	// EffectiveThreshold is the limit on Delta actually applied when the
	// floor raised it above Threshold.
	EffectiveThreshold *float64 `json:"effective_threshold,omitempty"`
	// MinDetectable is the smallest true Delta (in DeltaUnit) these rounds
	// would detect with 80 % power: what a pass can promise.
	MinDetectable *float64 `json:"min_detectable,omitempty"`
	// SettleRounds, on an inconclusive row, is how many rounds in all the
	// interval rule estimates would settle it (RoundsToSettle: the same
	// spread, a narrower interval); absent when more rounds would not help
	// or more than 100 would be needed.
	SettleRounds int `json:"settle_rounds,omitempty"`
	// NoiseSD is this machine's recorded round-to-round standard deviation
	// of the per-round delta (in DeltaUnit), from the last self-check of the
	// profile in data_dir; nil when none was recorded or the row is not
	// gated.
	NoiseSD *float64 `json:"noise_sd,omitempty"`
	// NoiseMinDetectable is the smallest true Delta (in DeltaUnit) this
	// run's rounds would detect with 80 % power if the round-to-round spread
	// were NoiseSD: what the machine allows for these rounds, beside what
	// the run's own rounds measured (MinDetectable).
	NoiseMinDetectable *float64 `json:"noise_min_detectable,omitempty"`
	// Reason explains an outcome other than pass or fail: what was not
	// measured, or how many rounds would probably settle it.
	Reason string `json:"reason,omitempty"`
	// NoControl is true when the run had no REST arm to compare with
	// (GraphQLOnly): REST, Delta and Threshold are then absent, not 0, the
	// row is not gated and its Outcome is not measured.
	NoControl bool `json:"no_control_group,omitempty"`
	// RESTNotMeasured and GraphQLNotMeasured are true when that arm's
	// figure was not measured (in no round, over rounds): its value is
	// then absent and printed "not measured", never as 0.
	RESTNotMeasured    bool `json:"rest_not_measured,omitempty"`
	GraphQLNotMeasured bool `json:"graphql_not_measured,omitempty"`
	// Definition says how the metric is measured.
	Definition string `json:"definition"`
	// Rounds is how many interleaved rounds the row aggregates (0: one
	// round's point values). REST, GraphQL and Delta are then means across
	// rounds, DeltaMin and DeltaMax the spread, and Gate the rule applied.
	Rounds   int      `json:"rounds,omitempty"`
	DeltaMin *float64 `json:"delta_min,omitempty"`
	DeltaMax *float64 `json:"delta_max,omitempty"`
	Gate     string   `json:"gate,omitempty"`
}

// Evaluate compares the arms metric by metric.
func Evaluate(rest, gql Figures, l Limits) []Result {
	rs := []Result{
		maxIncrease("cpu_machine_percent", "CPU (share of machine)", "%", rest.CPUMachinePercent, gql.CPUMachinePercent, points, ptr(l.CPUIncreasePoints),
			"target process user+system CPU seconds ÷ (wall seconds × cores) × 100 over the steady window (OS figures)"),
		maxIncrease("gc_percent", "GC % time", "%", rest.GCPercent, gql.GCPercent, points, ptr(l.GCIncreasePoints),
			"Δ/cpu/classes/gc/total ÷ Δ/cpu/classes/total × 100 over the steady window (runtime/metrics)"),
		maxDecrease("throughput_rps", "Throughput", "req/s", rest.ThroughputRPS, gql.ThroughputRPS, l.ThroughputDecreasePercent,
			"requests completed and validated per second while all users were active (steady window)"),
		maxIncrease("cpu_core_percent", "CPU (share of one core)", "%", rest.CPUCorePercent, gql.CPUCorePercent, points, nil,
			"target process user+system CPU seconds ÷ wall seconds × 100"),
		maxIncrease("cpu_us_per_request", "CPU per request", "µs", rest.CPUMicrosPerRequest, gql.CPUMicrosPerRequest, percent, l.CPUPerRequestIncreasePercent,
			"target CPU seconds per second ÷ requests per second, in µs: the fair comparison when throughputs differ"),
		maxIncrease("alloc_bytes_per_request", "Heap allocated per request", "B", rest.AllocBytesPerRequest, gql.AllocBytesPerRequest, percent, l.AllocPerRequestIncreasePercent,
			"Δ/gc/heap/allocs:bytes per second ÷ requests per second"),
		maxIncrease("gc_pause_p99_ms", "GC pause p99", "ms", rest.GCPauseP99Ms, gql.GCPauseP99Ms, percent, l.GCPauseP99IncreasePercent,
			"99th percentile of the stop-the-world GC pause histogram (/sched/pauses/total/gc:seconds) differenced over the steady window; bucket upper bound"),
	}
	for i := range rs {
		r := &rs[i]
		if r.Name == "gc_pause_p99_ms" && r.Gated && l.GCPauseP99FloorMs > 0 {
			r.Floor = ptr(l.GCPauseP99FloorMs)
		}
		_, r.RESTNotMeasured = rest.NotMeasured[r.Name]
		_, r.GraphQLNotMeasured = gql.NotMeasured[r.Name]
		why := rest.NotMeasured[r.Name]
		if why == "" {
			why = gql.NotMeasured[r.Name]
		} else {
			why = "REST: " + why
		}
		if why == "" {
			continue
		}
		if _, fromREST := rest.NotMeasured[r.Name]; !fromREST {
			why = "GraphQL: " + why
		}
		r.Delta, r.Reason, r.Pass = nil, why, false
		if r.Gated {
			r.Outcome = OutcomeNotMeasured
		}
	}
	return rs
}

type deltaKind int

const (
	points deltaKind = iota
	percent
)

func ptr(v float64) *float64 { return &v }

// relative returns (b - a) / |a| × 100, the change of b from a in percent,
// or nil when a is zero and b is not (no finite percentage exists).
func relative(a, b float64) *float64 {
	switch {
	case a == b:
		return ptr(0)
	case a == 0:
		return nil
	}
	return ptr((b - a) / math.Abs(a) * 100)
}

func maxIncrease(name, title, unit string, rest, gql float64, kind deltaKind, limit *float64, def string) Result {
	r := Result{Name: name, Title: title, Unit: unit, REST: rest, GraphQL: gql, Definition: def, Pass: true, Rule: "informational"}
	switch kind {
	case points:
		r.Delta, r.DeltaUnit = ptr(gql-rest), "points"
	case percent:
		r.Delta, r.DeltaUnit = relative(rest, gql), "percent"
	}
	if limit != nil {
		r.Threshold, r.Gated = limit, true
		// A cost that appears from nothing (REST 0, GraphQL > 0) has no
		// finite percentage and fails an increase limit.
		r.Pass = r.Delta != nil && *r.Delta <= *limit
		r.Rule = fmt.Sprintf("delta <= +%g %s", *limit, r.DeltaUnit)
	}
	return r
}

func maxDecrease(name, title, unit string, rest, gql, limit float64, def string) Result {
	d := relative(rest, gql)
	return Result{
		Name: name, Title: title, Unit: unit, REST: rest, GraphQL: gql, Definition: def,
		Delta: d, DeltaUnit: "percent", Threshold: ptr(-limit), Gated: true,
		// GraphQL throughput from a REST throughput of zero: nothing to
		// compare against, so the gate cannot pass.
		Pass: d != nil && *d >= -limit,
		Rule: fmt.Sprintf("delta >= -%g percent", limit),
	}
}

// Verdict rolls the gated rows up (see Combine): fail when any failed,
// inconclusive when any was inconclusive or not measured, pass when every
// gated row passed. Rows without an Outcome (one round's point values) count
// by Pass.
func Verdict(rs []Result) Outcome {
	var os []Outcome
	for _, r := range rs {
		if !r.Gated {
			continue
		}
		switch {
		case r.Outcome != "":
			os = append(os, r.Outcome)
		case r.Pass:
			os = append(os, OutcomePass)
		default:
			os = append(os, OutcomeFail)
		}
	}
	return Combine(os...)
}

// NotMeasured reports whether the row lacks a figure to judge: its Outcome
// is not measured, an arm was not measured, or the run had no control group.
// Such a row neither passes nor carries a value for what it lacks.
func (r Result) NotMeasured() bool {
	return r.Outcome == OutcomeNotMeasured || r.RESTNotMeasured || r.GraphQLNotMeasured || r.NoControl
}

// resultFields is Result without its methods, so that ResultWire can embed
// its fields without inheriting MarshalJSON.
type resultFields Result

// ResultWire is the JSON form of a Result (Result.MarshalJSON): rest and
// graphql are null for an arm that was not measured (never 0), and pass is
// absent for a row that was not measured (never true).
type ResultWire struct {
	resultFields
	REST    *float64 `json:"rest"`
	GraphQL *float64 `json:"graphql"`
	Pass    *bool    `json:"pass,omitempty"`
}

// MarshalJSON writes r as its ResultWire.
func (r Result) MarshalJSON() ([]byte, error) {
	w := ResultWire{resultFields: resultFields(r)}
	if !r.RESTNotMeasured && !r.NoControl {
		w.REST = ptr(r.REST)
	}
	if !r.GraphQLNotMeasured {
		w.GraphQL = ptr(r.GraphQL)
	}
	if !r.NotMeasured() {
		p := r.Pass
		w.Pass = &p
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes: a null value is 0 with its
// not-measured flag as written, an absent pass is false.
func (r *Result) UnmarshalJSON(b []byte) error {
	var w ResultWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*r = Result(w.resultFields)
	if w.REST != nil {
		r.REST = *w.REST
	}
	if w.GraphQL != nil {
		r.GraphQL = *w.GraphQL
	}
	r.Pass = w.Pass != nil && *w.Pass
	return nil
}
