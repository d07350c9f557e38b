package workloads

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// MergeResults merges the results of the Count shards of one phase (one
// each, in any order) into the phase's Result, as one driver offering the
// whole load would have reported it:
//
//   - counts (requests, errors, errors by class, users, the open model's
//     arrivals, sent, dropped and late) are summed; error examples are
//     kept up to maxExamples per class, the lowest shard's first;
//   - the latency histograms of each operation (and the open model's
//     service time) are added bucket by bucket, which is exact since every
//     shard records with the same range and precision (checked: a shard
//     whose histogram differs is refused rather than merged into the wrong
//     buckets); the percentiles are then read from the merged histogram,
//     never averaged;
//   - the subscription ledgers are merged by MergeSubscriptionShards, which
//     refuses a missing or duplicated shard;
//   - the phase runs from the earliest shard's Start to the latest End;
//     Aborted is set when any shard was aborted;
//   - the steady window is the intersection of the shards' steady windows,
//     the span in which every shard was steady (for the closed model it is
//     exactly one driver's window: from the last start of any user to the
//     first finish of any, less the trims). ThroughputRPS is the sum of the
//     shards' steady throughputs, and SteadyRequests that rate over the
//     intersection: a shard reports the requests of its own window only,
//     not when each completed, so its count over the intersection is
//     estimated at its own window's rate (docs/methodology.md, "Sharded
//     drivers"). Shards that completed no request are left out; when a
//     shard has no steady window, or the windows do not overlap, the whole
//     phase is used, with SteadyFallback set and the reason naming the
//     shard.
//
// DriverPID is shard 0's (each shard's is in its own result). A ramping or
// ramping-rate result is refused: its knee is judged on the whole load's
// merged windows (MergeShards), not on the shards' own judgements.
func MergeResults(shards []Result) (Result, error) { return MergeShards(shards, nil) }

// MergeShards is MergeResults with the phase's merged windows w (nil
// without them), as the orchestrator collected them from the shards'
// window streams. With w, the steady count is exact: the sum of the merged
// seconds inside the shards' common steady window, narrowed to the whole
// seconds it holds (docs/methodology.md, "Sharded drivers"); and a ramping
// or ramping-rate phase's max-load figures (the stop's reason, the knee,
// the peak window, the timeline) are those w's MaxLoadJudge found on the
// merged seconds, each timeline point's driver CPU summed over the shards.
func MergeShards(shards []Result, w *PhaseWindows) (Result, error) {
	if len(shards) == 0 {
		return Result{}, errors.New("no shard result to merge")
	}
	byIndex, err := orderShards(shards)
	if err != nil {
		return Result{}, err
	}
	first := byIndex[0]
	judged := w != nil && w.judge != nil
	for _, s := range byIndex {
		if err := sameShape(first, s, judged); err != nil {
			return Result{}, err
		}
	}
	r := Result{
		Phase: first.Phase, Arm: first.Arm, Model: first.Model, DriverPID: first.DriverPID,
		Start: first.Start, End: first.End,
		ErrorsByClass: map[string]int64{}, ErrorExamples: map[string][]string{},
		ClosedModel: first.ClosedModel, LatencyNote: first.LatencyNote,
	}
	for _, s := range byIndex {
		if s.Start.Before(r.Start) {
			r.Start = s.Start
		}
		if s.End.After(r.End) {
			r.End = s.End
		}
		r.Requests += s.Requests
		r.Errors += s.Errors
		r.Aborted = r.Aborted || s.Aborted
		addCounts(r.ErrorsByClass, s.ErrorsByClass)
		for _, c := range slices.Sorted(maps.Keys(s.ErrorExamples)) {
			for _, ex := range s.ErrorExamples[c] {
				if len(r.ErrorExamples[c]) < maxExamples {
					r.ErrorExamples[c] = append(r.ErrorExamples[c], ex)
				}
			}
		}
	}
	r.DurationSeconds = r.End.Sub(r.Start).Seconds()
	r.LoadCPUSeconds = sumKnown(byIndex, func(s Result) *float64 { return s.LoadCPUSeconds })
	if r.Operations, r.LatencyMs, err = mergeOperations(byIndex); err != nil {
		return Result{}, err
	}
	if first.Open != nil {
		if r.Open, err = mergeOpen(byIndex); err != nil {
			return Result{}, err
		}
	}
	if first.SubscriptionShard != nil {
		ledgers := make([]SubscriptionShard, len(byIndex))
		for i, s := range byIndex {
			ledgers[i] = *s.SubscriptionShard
		}
		sr, err := MergeSubscriptionShards(ledgers)
		if err != nil {
			return Result{}, fmt.Errorf("subscriptions: %w", err)
		}
		r.Subscriptions = &sr
	}
	switch {
	case judged:
		if first.MaxLoad == nil {
			return Result{}, fmt.Errorf("phase %s is judged as a max-load phase, but shard 0 reports no max-load figures", first.Phase)
		}
		w.judge.finish(&r, byIndex)
	case w != nil:
		mergeSteady(&r, byIndex)
		exactSteady(&r, byIndex, w)
	default:
		mergeSteady(&r, byIndex)
	}
	return r, nil
}

// orderShards returns the shards by index, refusing a result that is not a
// shard of len(shards), a missing index and a duplicated one.
func orderShards(shards []Result) ([]Result, error) {
	n := len(shards)
	out := make([]Result, n)
	seen := make([]bool, n)
	for _, s := range shards {
		c := max(s.Shard.Count, 1)
		if c != n {
			return nil, fmt.Errorf("a result of shard %s came among %d shard results: not the shards of one phase", s.Shard, n)
		}
		if s.Shard.Index < 0 || s.Shard.Index >= n {
			return nil, fmt.Errorf("shard index %d is outside 0..%d", s.Shard.Index, n-1)
		}
		if seen[s.Shard.Index] {
			return nil, fmt.Errorf("shard %s reported twice", s.Shard)
		}
		seen[s.Shard.Index] = true
		out[s.Shard.Index] = s
	}
	return out, nil
}

// sameShape reports whether s is a shard of the same phase as first: the
// same phase, arm and model, the same operations in the same order, and
// the parts (open figures, subscription ledger) every shard of the phase
// carries.
func sameShape(first, s Result, judged bool) error {
	name := "shard " + s.Shard.String()
	switch {
	case s.Phase != first.Phase || s.Arm != first.Arm || s.Model != first.Model:
		return fmt.Errorf("%s ran phase %s (%s, %s), shard 0 phase %s (%s, %s): not the shards of one phase",
			name, s.Phase, s.Arm, s.Model, first.Phase, first.Arm, first.Model)
	case s.MaxLoad != nil && !judged:
		return fmt.Errorf("%s: a %s phase's knee is judged on the merged windows of every shard, and none were given: its shards' own figures are of 1/%d of the load each (run it with one driver, or give the windows)", name, s.Model, max(s.Shard.Count, 1))
	case s.MaxLoad == nil && judged:
		return fmt.Errorf("%s reports no max-load figures in a %s phase", name, first.Model)
	case s.Subscriptions != nil:
		return fmt.Errorf("%s reports the whole phase's subscriptions, not its ledger: it did not run as a shard", name)
	case (s.SubscriptionShard == nil) != (first.SubscriptionShard == nil):
		return fmt.Errorf("%s and shard 0 disagree on whether the phase has subscriptions: a shard's subscription ledger is missing", name)
	case (s.Open == nil) != (first.Open == nil):
		return fmt.Errorf("%s and shard 0 disagree on whether the phase is open-model", name)
	case len(s.Operations) != len(first.Operations):
		return fmt.Errorf("%s has %d operations, shard 0 %d", name, len(s.Operations), len(first.Operations))
	}
	for i, op := range s.Operations {
		if op.Operation != first.Operations[i].Operation || op.Iterations != first.Operations[i].Iterations {
			return fmt.Errorf("%s's operation %d is %s × %d iterations, shard 0's %s × %d",
				name, i, op.Operation, op.Iterations, first.Operations[i].Operation, first.Operations[i].Iterations)
		}
	}
	return nil
}

// mergeOperations sums the shards' operations group by group and merges
// their histograms; it returns them with the latency over all of them.
func mergeOperations(shards []Result) ([]OperationResult, Latency, error) {
	ops := make([]OperationResult, len(shards[0].Operations))
	all := hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)
	for i := range ops {
		first := shards[0].Operations[i]
		op := OperationResult{Operation: first.Operation, Iterations: first.Iterations, ErrorsByClass: map[string]int64{}}
		snaps := make([]*hdrhistogram.Snapshot, len(shards))
		for j, s := range shards {
			o := s.Operations[i]
			op.Users += o.Users
			op.Requests += o.Requests
			op.Errors += o.Errors
			addCounts(op.ErrorsByClass, o.ErrorsByClass)
			snaps[j] = o.Histogram
		}
		h, err := MergeHistograms(snaps)
		if err != nil {
			return nil, Latency{}, fmt.Errorf("operation %s: %w", op.Operation, err)
		}
		op.Histogram = h.Export()
		op.LatencyMs = Summarize(h)
		all.Merge(h)
		ops[i] = op
	}
	return ops, Summarize(all), nil
}

// MergeHistograms adds the histograms snaps (one per shard, in shard
// order) bucket by bucket: the result holds every value any of them
// recorded, in the bucket it was recorded in, so its percentiles are those
// of all the values together. Every histogram must have the range and
// precision the driver records with (1 µs to 60 s, 3 significant figures):
// one that differs, or is missing, is refused, since its counts would land
// in other buckets.
func MergeHistograms(snaps []*hdrhistogram.Snapshot) (*hdrhistogram.Histogram, error) {
	out := hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)
	for i, s := range snaps {
		if s == nil {
			return nil, fmt.Errorf("shard %d sent no histogram", i)
		}
		if s.LowestTrackableValue != histMinMicros || s.HighestTrackableValue != histMaxMicros || s.SignificantFigures != histSigFigs {
			return nil, fmt.Errorf("shard %d's histogram records %d to %d with %d significant figures, this soakd %d to %d with %d: histograms of different settings cannot be added bucket by bucket (run drivers of the same soakd build)",
				i, s.LowestTrackableValue, s.HighestTrackableValue, s.SignificantFigures, histMinMicros, histMaxMicros, histSigFigs)
		}
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("shard %d's histogram is invalid: %w", i, err)
		}
		if dropped := out.Merge(hdrhistogram.Import(s)); dropped != 0 {
			return nil, fmt.Errorf("shard %d's histogram: %d values out of range", i, dropped)
		}
	}
	return out, nil
}

// mergeOpen sums the shards' open-model figures: each shard ran its share
// of the same schedule over the same span, so their rates add up too.
func mergeOpen(shards []Result) (*OpenResult, error) {
	o := OpenResult{LateThresholdMs: shards[0].Open.LateThresholdMs}
	snaps := make([]*hdrhistogram.Snapshot, len(shards))
	for i, s := range shards {
		so := s.Open
		o.IntendedRateRPS += so.IntendedRateRPS
		o.AchievedRateRPS += so.AchievedRateRPS
		o.Arrivals += so.Arrivals
		o.Sent += so.Sent
		o.Dropped += so.Dropped
		o.Late += so.Late
		o.MaxLatenessMs = max(o.MaxLatenessMs, so.MaxLatenessMs)
		snaps[i] = so.ServiceHistogram
	}
	h, err := MergeHistograms(snaps)
	if err != nil {
		return nil, fmt.Errorf("open service histogram: %w", err)
	}
	o.ServiceHistogram = h.Export()
	o.ServiceMs = Summarize(h)
	return &o, nil
}

// mergeSteady sets r's steady window to the intersection of the shards'
// (see MergeResults), or to the whole phase with the reason.
func mergeSteady(r *Result, shards []Result) {
	var start, end time.Time
	var rate float64
	reason := ""
	for _, s := range shards {
		if s.Requests == 0 {
			continue // it ran no request: nothing to be steady
		}
		if s.SteadyFallback {
			reason = fmt.Sprintf("shard %s has no steady window: %s", s.Shard, s.SteadyFallbackReason)
			break
		}
		if start.IsZero() || s.SteadyStart.After(start) {
			start = s.SteadyStart
		}
		if end.IsZero() || s.SteadyEnd.Before(end) {
			end = s.SteadyEnd
		}
		if secs := s.SteadyEnd.Sub(s.SteadyStart).Seconds(); secs > 0 {
			rate += float64(s.SteadyRequests) / secs
		}
	}
	if reason == "" && start.IsZero() {
		reason = "no shard completed a request"
	}
	if reason == "" && !end.After(start) {
		reason = fmt.Sprintf("the shards' steady windows do not overlap (the latest starts at %s, the earliest ends at %s)",
			start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
	}
	if reason != "" {
		r.SteadyStart, r.SteadyEnd = r.Start, r.End
		r.SteadyRequests = r.Requests
		r.SteadyFallback, r.SteadyFallbackReason = true, reason
		if secs := r.DurationSeconds; secs > 0 {
			r.ThroughputRPS = float64(r.Requests) / secs
		}
		return
	}
	r.SteadyStart, r.SteadyEnd = start, end
	r.ThroughputRPS = rate
	r.SteadyRequests = int64(math.Round(rate * end.Sub(start).Seconds()))
}

// addCounts adds the counts of from to into.
func addCounts(into, from map[string]int64) {
	for k, n := range from {
		into[k] += n
	}
}

// ProgressMerger turns the progress reports of a phase's shards into one
// report for the live view, about once per round of reports: a merged
// report is due when every shard still running has reported since the
// last one. Counts (requests, errors, active users, dropped, RPS) are the
// sums of each shard's latest report. A shard's interval percentiles
// summarise its own requests only and cannot be merged exactly, so the
// merged IntervalLatency counts all the shards' successful requests since
// the last merged report and gives, for each percentile, the highest of
// the shards' (an upper bound of the merged percentile, never an average).
// The phase's exact percentiles are in the merged Result.
type ProgressMerger struct {
	latest  []Progress
	pending []*IntervalLatency
	fresh   []bool
	done    []bool
}

// NewProgressMerger returns a merger of n shards' progress.
func NewProgressMerger(n int) *ProgressMerger {
	return &ProgressMerger{latest: make([]Progress, n), pending: make([]*IntervalLatency, n), fresh: make([]bool, n), done: make([]bool, n)}
}

// Add records shard's report p and returns the merged report when one is
// due (ok true).
func (m *ProgressMerger) Add(shard int, p Progress) (merged Progress, ok bool) {
	m.latest[shard] = p
	m.fresh[shard] = true
	if l := p.IntervalLatency; l != nil {
		m.pending[shard] = maxLatency(m.pending[shard], *l)
	}
	return m.due()
}

// Done records that shard sends no more reports; the merged report the
// others were waiting for may then be due.
func (m *ProgressMerger) Done(shard int) (merged Progress, ok bool) {
	m.done[shard] = true
	return m.due()
}

// due returns the merged report when every running shard has reported
// since the last one, and starts the next round.
func (m *ProgressMerger) due() (Progress, bool) {
	some := false
	for i := range m.latest {
		if !m.done[i] && !m.fresh[i] {
			return Progress{}, false
		}
		some = some || m.fresh[i]
	}
	if !some {
		return Progress{}, false
	}
	var out Progress
	var lat *IntervalLatency
	for i, p := range m.latest {
		out.ElapsedSeconds = max(out.ElapsedSeconds, p.ElapsedSeconds)
		out.Requests += p.Requests
		out.Errors += p.Errors
		out.Dropped += p.Dropped
		if !m.done[i] {
			out.ActiveUsers += p.ActiveUsers
			out.RPS += p.RPS
		}
		if l := m.pending[i]; l != nil {
			lat = maxLatency(lat, *l)
		}
		m.pending[i], m.fresh[i] = nil, false
	}
	out.IntervalLatency = lat
	return out, true
}

// maxLatency adds b's count to a's and keeps the higher of each percentile.
func maxLatency(a *IntervalLatency, b IntervalLatency) *IntervalLatency {
	if a == nil {
		return &b
	}
	return &IntervalLatency{Count: a.Count + b.Count, P50Ms: max(a.P50Ms, b.P50Ms), P90Ms: max(a.P90Ms, b.P90Ms), P99Ms: max(a.P99Ms, b.P99Ms), MaxMs: max(a.MaxMs, b.MaxMs)}
}

// sumKnown is the sum of every shard's figure f, nil unless every shard
// measured it: a total missing a shard would read as a smaller one.
func sumKnown(shards []Result, f func(Result) *float64) *float64 {
	var sum float64
	for _, s := range shards {
		v := f(s)
		if v == nil {
			return nil
		}
		sum += *v
	}
	return &sum
}
