package workloads

import (
	"fmt"
	"math"
	"time"
)

// PhaseWindows is the orchestrator's view of a sharded phase from its
// shards' window streams (SecondWindow): it merges them second by second
// (WindowMerger), keeps each merged second's completed requests (for an
// exact steady count, MergeShards) and, for a ramping or ramping-rate
// phase, judges the failure rules on the merged seconds (MaxLoadJudge):
// the whole load's, not one shard's. It is pure: no clock, no goroutine;
// the caller serialises its calls.
type PhaseWindows struct {
	merger   *WindowMerger
	requests []int64 // merged completions of second i
	judge    *MaxLoadJudge
}

// NewPhaseWindows returns the view of phase p (the whole phase, not a
// shard's spec) run by n shards.
func NewPhaseWindows(p Phase, n int) *PhaseWindows {
	w := &PhaseWindows{merger: NewWindowMerger(n)}
	if m := p.Model.normalized(); m == Ramping || m == RampingRate {
		w.judge = NewMaxLoadJudge(p)
	}
	return w
}

// Add merges window sw; stop is true when a second it completes decided
// that the phase must stop (a failure rule tripped on the merged load, or
// its cap or duration was reached), the first time only. An error names
// the shard and Seq of a window out of sequence.
func (w *PhaseWindows) Add(sw SecondWindow) (stop bool, err error) {
	done, err := w.merger.Add(sw)
	if err != nil {
		return false, err
	}
	return w.close(done), nil
}

// Done records that shard i sends no more windows; stop is as for Add.
func (w *PhaseWindows) Done(i int) (stop bool) { return w.close(w.merger.Done(i)) }

// Seconds returns how many merged seconds are complete.
func (w *PhaseWindows) Seconds() int { return len(w.requests) }

// Judge returns the max-load judge (nil for a phase without failure rules).
func (w *PhaseWindows) Judge() *MaxLoadJudge { return w.judge }

func (w *PhaseWindows) close(done []MergedWindow) (stop bool) {
	for _, mw := range done {
		w.requests = append(w.requests, mw.Requests)
		if w.judge != nil && w.judge.Close(mw) {
			stop = true
		}
	}
	return stop
}

// MaxLoadJudge plays a ramping or ramping-rate phase's controller on the
// merged seconds of its shards: each complete second is a closed bucket
// of the whole load; it judges the sliding window ending there by the
// failure rules (Judge, the rules one driver applies), tracks the peak,
// adds the timeline point and decides the stop: a failure, the user cap
// having run one full window (ramping), or the duration. It decides once.
type MaxLoadJudge struct {
	p      Phase
	window *loadWindow
	m      maxLoadState
	capAt  time.Duration // when the ramp reaches its cap (never if it does not)
	pacer  *Pacer        // ramping-rate: the global arrival rate
	users  int           // users at the last judged second
}

// NewMaxLoadJudge returns the judge of phase p (the whole phase).
func NewMaxLoadJudge(p Phase) *MaxLoadJudge {
	j := &MaxLoadJudge{p: p, window: newLoadWindow(p.Failure.Window), capAt: never}
	if p.Model.normalized() == RampingRate {
		pc := NewPacer(p)
		j.pacer = &pc
	} else {
		j.capAt = rampCapAt(p.Ramp)
	}
	return j
}

// rampCapAt is when a ramp's users reach its cap (never when they do not):
// the first step instant k·Every with RampUsers at the cap, as runRamping
// launches them.
func rampCapAt(r Ramp) time.Duration {
	limit := rampCap(r)
	start := max(r.Start, 0)
	if start >= limit {
		return 0
	}
	if r.Step <= 0 || r.Every <= 0 {
		return never
	}
	k := (limit - start + r.Step - 1) / r.Step
	if int64(k) > int64(never/r.Every) {
		return never
	}
	return time.Duration(k) * r.Every
}

// Decided reports whether the judge has decided the stop.
func (j *MaxLoadJudge) Decided() bool { return j.m.res.Reason != "" }

// Close judges merged second mw and reports whether it decided the stop.
// A partial second (some shard's last, cut short) and any second after the
// decision are not judged.
func (j *MaxLoadJudge) Close(mw MergedWindow) bool {
	if j.Decided() || mw.Partial {
		return false
	}
	t := time.Duration(mw.Second+1) * LoadBucket
	j.window.addMerged(mw)
	bs := j.window.bucket(mw.Second)
	ws, ok := j.window.stats(mw.Second)
	j.users = int(mw.Users)
	pt := TimelinePoint{TSeconds: t.Seconds(), Users: j.users, RPS: bs.RPS(), ErrorRatio: bs.ErrorRatio(), P99Ms: ms(bs.P99)}
	if j.pacer != nil {
		pt.ArrivalRPS = j.pacer.RateAt(t)
	}
	j.m.addPoint(pt)
	if ok {
		j.m.judge(ws, j.p.Failure, true, t, j.capAt, j.users, time.Time{}, rampCap(j.p.Ramp))
	}
	if !j.Decided() && t >= j.p.Duration {
		j.m.res.Reason = ReasonDuration
		if j.pacer != nil {
			j.m.res.Detail = fmt.Sprintf("no failure up to the end of the ramp at %g requests/s", j.pacer.RateAt(j.p.Duration))
		} else {
			j.m.res.Detail = fmt.Sprintf("no failure within the duration cap %s (%d users at the end)", j.p.Duration, j.users)
		}
	}
	return j.Decided()
}

// finish sets r's max-load figures from the judge, r being the merge of
// shards (in shard order) starting at r.Start: the stop's reason (the
// shards' own when the judge decided none: the run was cancelled, or the
// shards ended first), the timeline with each point's driver CPU and wait
// summed over the shards, and the peak window as the steady window.
func (j *MaxLoadJudge) finish(r *Result, shards []Result) {
	res := j.m.res
	if res.Reason == "" {
		for _, s := range shards {
			if s.MaxLoad != nil && (res.Reason == "" || s.MaxLoad.Reason == ReasonAborted) {
				res.Reason, res.Detail = s.MaxLoad.Reason, s.MaxLoad.Detail
			}
		}
	}
	if !res.FailureAt.IsZero() {
		res.FailureAt = r.Start.Add(res.FailureAt.Sub(time.Time{}))
	}
	for _, s := range shards {
		if s.MaxLoad != nil {
			res.FinalUsers += s.MaxLoad.FinalUsers
			res.DriverCPUs = max(res.DriverCPUs, s.MaxLoad.DriverCPUs)
		}
	}
	j.m.res = res
	j.m.res.Timeline = j.m.orderedTimeline()
	for i := range j.m.res.Timeline {
		pt := &j.m.res.Timeline[i]
		pt.DriverCPUSeconds = sumShardPoints(shards, pt.TSeconds, func(p TimelinePoint) *float64 { return p.DriverCPUSeconds })
		pt.DriverWaitSeconds = sumShardPoints(shards, pt.TSeconds, func(p TimelinePoint) *float64 { return p.DriverWaitSeconds })
	}
	r.Aborted = res.Reason == ReasonAborted
	if j.m.havePeak {
		span := time.Duration(math.Round(j.m.peak.Seconds/LoadBucket.Seconds())) * LoadBucket
		end := r.Start.Add(j.m.peakEnd)
		r.SteadyStart, r.SteadyEnd = end.Add(-span), end
		r.SteadyRequests = j.m.peak.Requests
		r.ThroughputRPS = j.m.res.PeakThroughputRPS
		r.SteadyFallback, r.SteadyFallbackReason = false, ""
		j.m.res.PeakWindowStart, j.m.res.PeakWindowEnd = r.SteadyStart, r.SteadyEnd
		peak := j.m.peak
		j.m.res.PeakWindow = &peak
	} else {
		r.SteadyStart, r.SteadyEnd, r.SteadyRequests = r.Start, r.End, r.Requests
		r.SteadyFallback, r.SteadyFallbackReason = true, "no merged window was judged without a failure before the phase stopped"
		if r.DurationSeconds > 0 {
			r.ThroughputRPS = float64(r.Requests) / r.DurationSeconds
		}
	}
	ml := j.m.res
	r.MaxLoad = &ml
}

// sumShardPoints sums field of every shard's timeline point at t, nil
// unless every shard has one there.
func sumShardPoints(shards []Result, t float64, field func(TimelinePoint) *float64) *float64 {
	var sum float64
	for _, s := range shards {
		if s.MaxLoad == nil {
			return nil
		}
		found := false
		for _, p := range s.MaxLoad.Timeline {
			if p.TSeconds == t {
				if v := field(p); v != nil {
					sum += *v
					found = true
				}
				break
			}
		}
		if !found {
			return nil
		}
	}
	return &sum
}

// addMerged adds merged second mw to the window, as bucket mw.Second.
func (w *loadWindow) addMerged(mw MergedWindow) {
	w.advance(mw.Second)
	n := int64(len(w.ring))
	if mw.Second <= w.head-n {
		return
	}
	s := mw.Stats()
	c := &w.ring[mw.Second%n]
	c.requests += s.Requests
	c.errors += s.Errors
	c.connErrors += s.ConnectionErrors
	c.hist.Merge(mw.Hist)
}

// exactSteady replaces r's estimated steady count with the exact sum of
// the merged seconds inside its steady window (w), the window narrowed to
// the whole seconds it holds, when every shard counted its seconds from
// r.Start; it leaves r as it is otherwise (a fallback already counts every
// request).
func exactSteady(r *Result, shards []Result, w *PhaseWindows) {
	if r.SteadyFallback {
		return
	}
	for _, s := range shards {
		if s.Requests > 0 && !s.Start.Equal(r.Start) {
			return // the shards' seconds are not the same seconds: keep the estimate
		}
	}
	from := int64(math.Ceil(r.SteadyStart.Sub(r.Start).Seconds() - 1e-9))
	to := int64(math.Floor(r.SteadyEnd.Sub(r.Start).Seconds() + 1e-9))
	if to > int64(len(w.requests)) {
		return // seconds missing: cannot happen once every shard ended
	}
	if to <= from {
		r.SteadyFallback = true
		r.SteadyFallbackReason = fmt.Sprintf("the shards' common steady window (%s to %s after the start) holds no whole second to count its requests in",
			r.SteadyStart.Sub(r.Start).Round(time.Millisecond), r.SteadyEnd.Sub(r.Start).Round(time.Millisecond))
		r.SteadyStart, r.SteadyEnd, r.SteadyRequests = r.Start, r.End, r.Requests
		if r.DurationSeconds > 0 {
			r.ThroughputRPS = float64(r.Requests) / r.DurationSeconds
		}
		return
	}
	var n int64
	for _, c := range w.requests[from:to] {
		n += c
	}
	r.SteadyStart = r.Start.Add(time.Duration(from) * time.Second)
	r.SteadyEnd = r.Start.Add(time.Duration(to) * time.Second)
	r.SteadyRequests = n
	r.ThroughputRPS = float64(n) / float64(to-from)
}
