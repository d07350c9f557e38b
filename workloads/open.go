package workloads

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// openStream is the PCG stream of the open model's operation choices, apart
// from the users' streams (their global indices).
const openStream = math.MaxUint64

// openStats accumulates the open model's own figures. It is clock-free
// (callers pass offsets and latenesses) and not safe for concurrent use: the
// engine guards it with its lock.
type openStats struct {
	window   Window // the planned steady window
	steady   int64  // completions inside window
	sent     int64
	late     int64
	maxLate  time.Duration
	service  *hdrhistogram.Histogram // successful requests' service time, µs
	arrivals int64                   // arrivals that came due (sent or dropped)
}

// newOpenStats returns the figures of an open phase whose steady window is
// [trimHead, duration-trimTail).
func newOpenStats(duration, trimHead, trimTail time.Duration) *openStats {
	return &openStats{
		window:  Window{Start: trimHead, End: duration - trimTail},
		service: hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs),
	}
}

// sentAt records that a request was sent lateness after its intended time; it
// is late when lateness exceeds LateThreshold.
func (s *openStats) sentAt(lateness time.Duration) {
	s.sent++
	if lateness > LateThreshold {
		s.late++
	}
	s.maxLate = max(s.maxLate, lateness)
}

// completed records one completion at offset at.
func (s *openStats) completed(at time.Duration, o outcome) {
	if at >= s.window.Start && at < s.window.End {
		s.steady++
	}
	if o.class == "" {
		_ = s.service.RecordValue(clampMicros(o.latency))
	}
}

// openSlot is one of the open model's MaxInFlight request slots: whoever
// holds it may send one request. It holds one user per group, built on first
// use, whose response buffer and writer id no other slot shares.
type openSlot struct {
	index int
	users []*user
	iters []int // requests sent per group, to cycle writers' flavors
}

// weightedPicker chooses a group index with probability proportional to the
// groups' weights (0 counting as 1).
type weightedPicker struct {
	cum []int // cumulative weights
	rng *rand.Rand
}

// newWeightedPicker returns a picker over groups drawing from rng.
func newWeightedPicker(groups []UserGroup, rng *rand.Rand) *weightedPicker {
	w := &weightedPicker{cum: make([]int, len(groups)), rng: rng}
	total := 0
	for i, g := range groups {
		total += max(g.Weight, 1)
		w.cum[i] = total
	}
	return w
}

// pick returns the next group index.
func (w *weightedPicker) pick() int {
	x := w.rng.IntN(w.cum[len(w.cum)-1])
	for i, c := range w.cum {
		if x < c {
			return i
		}
	}
	return len(w.cum) - 1
}

// runOpen plays an open-model phase: one scheduler (this goroutine) sends each
// arrival of NewPacer(p) at its intended time from a goroutine of its own,
// provided a slot is free, and drops it otherwise.
//
// A shard walks the same global schedule and draws the same group pick for
// every arrival, but sends (or drops) only the arrivals it owns (arrival k
// is shard k mod Count's), at their global intended times, from the slots
// it owns (slot j likewise, keeping its global index for its users' seeds
// and writer ids). Its figures (arrivals, rates, drops) are its own; in a
// ramping-rate phase it leaves the failure rules to the orchestrator when
// it sends its windows, as runRamping does.
func (e *engine) runOpen(ctx context.Context, progress func(Progress)) Result {
	p := e.phase
	pacer := NewPacer(p)
	e.open = newOpenStats(p.Duration, p.TrimHead, p.TrimTail)
	free := make(chan *openSlot, p.Shard.Share(p.MaxInFlight))
	for i := p.Shard.Index; i < p.MaxInFlight; i += p.Shard.count() {
		free <- &openSlot{index: i, users: make([]*user, len(p.Groups)), iters: make([]int, len(p.Groups))}
	}
	picker := newWeightedPicker(p.Groups, rand.New(rand.NewPCG(p.Seed, openStream)))
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	// A ramping-rate phase judges the failure rules every LoadBucket and
	// stops at the first failure (maxLoad); an open one runs its schedule.
	var m *maxLoadState
	nextBucket := time.Duration(never)
	if p.Model.normalized() == RampingRate {
		m = &maxLoadState{}
		e.window = newLoadWindow(p.Failure.Window)
		nextBucket = LoadBucket
	}

	var inflight sync.WaitGroup
	e.start = e.startInstant()
	if m != nil {
		m.lastCPU, m.haveCPU = e.cpuTime()
		m.lastWait, m.haveWait = e.waitTime()
		m.res.DriverCPUs = allowedCPUs()
	}
	stopReporter := e.startReporter(progress)
	stopWindows := e.startWindows(p.Model.normalized() == RampingRate)
	var hits uint64 // the global index of the next arrival
	var due int64   // this shard's arrivals that came due
	aborted := false
	for {
		now := time.Since(e.start)
		for m != nil && now >= nextBucket && m.res.Reason == "" {
			rate := pacer.RateAt(nextBucket) / float64(p.Shard.count()) // this shard's share
			e.closeBucket(m, nextBucket, never, int(e.active.Load()))
			m.timeline[len(m.timeline)-1].ArrivalRPS = rate
			nextBucket += LoadBucket
		}
		if m != nil && m.res.Reason != "" {
			break
		}
		// Other shards' arrivals: draw their picks, as every shard does, so
		// that arrival k's pick is the same in every shard; send nothing.
		for ; !p.Shard.Owns(int(hits)); hits++ {
			picker.pick()
		}
		wait, stop := pacer.Pace(now, hits)
		if stop {
			break
		}
		if m != nil && now+wait > nextBucket {
			// Close the bucket on time even when the next arrival is later.
			if !sleepTimer(ctx, timer, nextBucket-now) {
				aborted = true
				break
			}
			continue
		}
		if !sleepTimer(ctx, timer, wait) {
			aborted = true
			break
		}
		at, _ := pacer.Intended(int64(hits))
		hits++
		due++
		intended := e.start.Add(at)
		g := picker.pick() // drawn for dropped arrivals too, so choices do not depend on timing
		select {
		case s := <-free:
			e.active.Add(1)
			inflight.Go(func() {
				e.sendOpen(ctx, s, g, intended)
				e.active.Add(-1)
				free <- s
			})
		default:
			e.dropped.Add(1)
			if m != nil || e.seconds != nil {
				e.mu.Lock()
				at := time.Since(e.start)
				if m != nil {
					e.window.add(at, ClassDropped, 0)
				}
				if e.seconds != nil {
					e.seconds.drop(at)
				}
				e.mu.Unlock()
			}
		}
	}
	if m != nil && m.res.Reason == "" {
		if aborted {
			m.res.Reason, m.res.Detail = ReasonAborted, "the run was cancelled after "+time.Since(e.start).Round(time.Millisecond).String()
		} else {
			m.res.Reason = ReasonDuration
			m.res.Detail = fmt.Sprintf("no failure up to the end of the ramp at %g requests/s", pacer.RateAt(p.Duration))
		}
	}
	scheduled := p.Duration
	if aborted {
		scheduled = min(time.Since(e.start), p.Duration)
	}
	inflight.Wait()
	end := time.Now()
	stopReporter()
	stopWindows(end)

	r := e.result(end)
	r.Aborted = aborted
	o := e.open
	o.arrivals = due
	dropped := e.dropped.Load()
	or := &OpenResult{
		Arrivals:         o.arrivals,
		Sent:             o.sent,
		Dropped:          dropped,
		Late:             o.late,
		LateThresholdMs:  ms(LateThreshold),
		MaxLatenessMs:    ms(o.maxLate),
		ServiceMs:        Summarize(o.service),
		ServiceHistogram: o.service.Export(),
	}
	if secs := scheduled.Seconds(); secs > 0 {
		or.IntendedRateRPS = float64(o.arrivals) / secs
		or.AchievedRateRPS = float64(o.sent) / secs
	}
	r.Open = or

	st := steadyOutcome{window: o.window, requests: o.steady}
	switch {
	case aborted:
		st = steadyOutcome{window: Window{End: end.Sub(e.start)}, requests: r.Requests, fallback: true,
			reason: "the phase was aborted before its schedule ended"}
	case o.window.End <= o.window.Start:
		st = steadyOutcome{window: Window{End: end.Sub(e.start)}, requests: r.Requests, fallback: true,
			reason: "the steady window is empty: trim_head " + p.TrimHead.String() + " and trim_tail " +
				p.TrimTail.String() + " leave nothing of the " + p.Duration.String() + " schedule"}
	}
	e.setSteady(&r, st)
	if m != nil {
		m.res.FinalUsers = int(e.active.Load())
		e.finishMaxLoad(m, &r, end)
	}
	return r
}

// sendOpen sends one open-model request of group g from slot s, intended at
// intended, and records it: its latency from the intended time in the
// group's histogram, its service time and lateness in the open figures.
// ctx is the run's: the request in flight finishes when it ends, but a
// chatty one sends no more follow calls and is not recorded.
func (e *engine) sendOpen(ctx context.Context, s *openSlot, g int, intended time.Time) {
	u := s.users[g]
	if u == nil {
		u = e.newUser(s.index*len(e.phase.Groups)+g, userSlot{group: g, member: s.index})
		s.users[g] = u
	}
	i := s.iters[g]
	s.iters[g]++
	o := u.do(ctx, e.senderFor(u.op), e.phase.RequestTimeout, u.next(i))
	lateness := max(o.sent.Sub(intended), 0)
	e.mu.Lock()
	e.open.sentAt(lateness)
	e.mu.Unlock()
	if !o.stopped { // a chatty request cut short by an abort is not a request
		e.record(g, o, lateness+o.latency)
	}
}

// sleepTimer waits for d on t (stopped, or fired and drained) unless ctx ends
// first, and reports whether ctx is still live.
func sleepTimer(ctx context.Context, t *time.Timer, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t.Reset(d)
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
		t.Stop()
		return false
	}
}

// ms converts a duration to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
