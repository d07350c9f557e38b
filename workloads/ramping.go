package workloads

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// never is an offset no event reaches.
const never = time.Duration(math.MaxInt64)

// maxLoadState is the ramping controller's record of the run: the peak
// window, the failure and the bounded timeline. Only the controller touches it.
type maxLoadState struct {
	res      MaxLoadResult
	peak     WindowStats
	peakEnd  time.Duration
	havePeak bool

	timeline []TimelinePoint // ring of at most MaxTimelinePoints
	next     int             // where the next point goes once the ring is full

	lastCPU  time.Duration // the driver's CPU time at the last bucket's close
	haveCPU  bool          // lastCPU was read
	lastWait time.Duration // the driver's run-queue wait at the last bucket's close
	haveWait bool          // lastWait was read
}

// addPoint appends pt to the timeline, dropping the oldest point when full.
func (m *maxLoadState) addPoint(pt TimelinePoint) {
	if len(m.timeline) < MaxTimelinePoints {
		m.timeline = append(m.timeline, pt)
		return
	}
	m.timeline[m.next] = pt
	m.next = (m.next + 1) % MaxTimelinePoints
	m.res.TimelineDropped++
}

// orderedTimeline returns the timeline oldest first.
func (m *maxLoadState) orderedTimeline() []TimelinePoint {
	out := make([]TimelinePoint, 0, len(m.timeline))
	out = append(out, m.timeline[m.next:]...)
	return append(out, m.timeline[:m.next]...)
}

// runRamping plays a ramping (maximum-load) phase. This goroutine is the
// controller: it adds users on the schedule of RampUsers, closes a LoadBucket
// every second, judges the sliding window that ends there, and stops the
// users on a failure, on the user cap having run one full window, at
// Phase.Duration, or when ctx ends. Users are closed-model users assigned to
// the groups round robin, in group order.
//
// A shard starts, of the users the global ramp adds, those it owns
// (Shard.ownsRampUser), at the global ramp's instants, so the shards'
// users add up to the ramp's at every step. A shard sending its windows
// (RunWindows) judges no failure rule: the orchestrator judges them on the
// merged windows of every shard (MaxLoadJudge) and stops the shards; it
// still stops itself at the user cap and at Phase.Duration.
func (e *engine) runRamping(ctx context.Context, progress func(Progress)) Result {
	p := e.phase
	e.window = newLoadWindow(p.Failure.Window)
	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	limit := rampCap(p.Ramp)
	var m maxLoadState
	var users []*user // this shard's, bounded by limit; kept to stop their timers at the end
	launched := 0     // users of the global ramp started so far, by every shard
	var wg sync.WaitGroup
	// finished counts the users that sent all their iterations. The users
	// running are len(users) - finished: unlike e.active it does not drop
	// while the users stop after ctx is cancelled.
	var finished atomic.Int64
	running := func() int { return len(users) - int(finished.Load()) }

	e.start = e.startInstant()
	m.lastCPU, m.haveCPU = e.cpuTime()
	m.lastWait, m.haveWait = e.waitTime()
	m.res.DriverCPUs = allowedCPUs()
	stopReporter := e.startReporter(progress)
	stopWindows := e.startWindows(true)
	launch := func(n int) {
		for ; launched < n; launched++ {
			k := launched
			if !p.Shard.ownsRampUser(k, len(p.Groups)) {
				continue
			}
			u := e.newUser(k, userSlot{group: k % len(p.Groups), member: k / len(p.Groups)})
			users = append(users, u)
			e.active.Add(1)
			wg.Go(func() {
				defer e.active.Add(-1)
				if e.iterate(ctx, stopCtx, u) {
					finished.Add(1)
				}
			})
		}
	}

	launch(RampUsers(p.Ramp, 0))
	nextAdd, capAt := never, never
	if launched >= limit {
		capAt = 0
	} else if p.Ramp.Step > 0 {
		nextAdd = p.Ramp.Every
	}
	nextBucket := LoadBucket
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for m.res.Reason == "" {
		next := min(nextBucket, p.Duration, nextAdd)
		if !sleepTimer(ctx, timer, time.Until(e.start.Add(next))) {
			m.res.Reason, m.res.Detail = ReasonAborted, "the run was cancelled after "+time.Since(e.start).Round(time.Millisecond).String()
			break
		}
		// Events due at the same instant: the bucket closes first (with the
		// users that ran in it), then the duration cap, then new users.
		if next == nextBucket {
			e.closeBucket(&m, nextBucket, capAt, running())
			nextBucket += LoadBucket
			if m.res.Reason != "" {
				break
			}
		}
		if next == p.Duration {
			m.res.Reason = ReasonDuration
			m.res.Detail = fmt.Sprintf("no failure within the duration cap %s (%d users at the end)", p.Duration, running())
			break
		}
		if next == nextAdd {
			launch(RampUsers(p.Ramp, nextAdd))
			if launched >= limit {
				capAt, nextAdd = nextAdd, never
			} else {
				nextAdd += p.Ramp.Every
			}
		}
	}
	m.res.FinalUsers = running()
	stop()
	wg.Wait()
	end := time.Now()
	stopReporter()
	stopWindows(end)
	for _, u := range users {
		if u.timer != nil {
			u.timer.Stop()
		}
	}

	r := e.result(end)
	r.Aborted = m.res.Reason == ReasonAborted
	countUsers(&r, users) // per group: round robin over the global ramp
	e.finishMaxLoad(&m, &r, end)
	return r
}

// finishMaxLoad ends a max-load phase's result: its steady window is the
// peak window (the best one judged without a failure), or, without one, the
// whole phase marked as a fallback; and its MaxLoad is m's record.
func (e *engine) finishMaxLoad(m *maxLoadState, r *Result, end time.Time) {
	if m.havePeak {
		span := time.Duration(math.Round(m.peak.Seconds/LoadBucket.Seconds())) * LoadBucket
		st := steadyOutcome{window: Window{Start: m.peakEnd - span, End: m.peakEnd}, requests: m.peak.Requests}
		e.setSteady(r, st)
		r.ThroughputRPS = m.res.PeakThroughputRPS
		m.res.PeakWindowStart, m.res.PeakWindowEnd = r.SteadyStart, r.SteadyEnd
		peak := m.peak
		m.res.PeakWindow = &peak
	} else {
		e.setSteady(r, steadyOutcome{window: Window{End: end.Sub(e.start)}, requests: r.Requests, fallback: true,
			reason: "no window was judged without a failure before the phase stopped"})
	}
	m.res.Timeline = m.orderedTimeline()
	r.MaxLoad = &m.res
}

// closeBucket closes the bucket ending at offset t, when users users are
// running: it adds the bucket's timeline point, judges the window ending
// there, and tracks the peak. It sets m.res.Reason when the phase must stop:
// a failure, or the user cap (reached at capAt) having run for one full window.
func (e *engine) closeBucket(m *maxLoadState, t, capAt time.Duration, users int) {
	b := int64(t/LoadBucket) - 1
	e.mu.Lock()
	bs := e.window.bucket(b)
	ws, ok := e.window.stats(b)
	var sec []pendingWindow
	if e.seconds != nil {
		sec = e.seconds.take(b)
	}
	e.mu.Unlock()
	e.sendWindows(sec, int64(users), false)

	pt := TimelinePoint{
		TSeconds:   t.Seconds(),
		Users:      users,
		RPS:        bs.RPS(),
		ErrorRatio: bs.ErrorRatio(),
		P99Ms:      ms(bs.P99),
	}
	pt.DriverCPUSeconds = sinceLast(e.cpuTime, &m.lastCPU, &m.haveCPU)
	pt.DriverWaitSeconds = sinceLast(e.waitTime, &m.lastWait, &m.haveWait)
	m.addPoint(pt)
	if !ok {
		return // the controller fell more than windowSlack buckets behind; this window is lost
	}
	// A shard sending its windows leaves the failure rules to the
	// orchestrator, which judges them on every shard's load together.
	m.judge(ws, e.phase.Failure, e.seconds == nil, t, capAt, users, e.start, rampCap(e.phase.Ramp))
}

// judge judges the window ws ending at offset t from start, when users
// users run, by the failure rules f when failures is set, and tracks the
// peak. It sets m.res.Reason when the phase must stop: a failure, or the
// user cap (cap users, reached at capAt) having run for one full window.
// It is the decision of closeBucket, and of MaxLoadJudge on merged windows.
func (m *maxLoadState) judge(ws WindowStats, f Failure, failures bool, t, capAt time.Duration, users int, start time.Time, cap int) {
	if ws.Seconds < f.Window.Seconds()-LoadBucket.Seconds()/2 {
		// The phase's first seconds, before one full window has passed:
		// a rule over failure.window judged on one second of start-up
		// would trip on its noise, and a peak that short holds too few
		// samples to summarise the target's resources (quick's max load
		// read "only 2 samples in the 2.0s steady window" on 2 busy cores).
		return
	}
	if reason, detail, failed := Judge(ws, f); failures && failed {
		m.res.Reason, m.res.Detail, m.res.Failed = reason, fmt.Sprintf("%s with %d users", detail, users), true
		m.res.UsersAtFailure = users
		m.res.FailureAt = start.Add(t)
		m.res.FailureWindow = &ws
		return
	}
	if rps := ws.RPS(); !m.havePeak || rps > m.res.PeakThroughputRPS {
		m.havePeak = true
		m.peak, m.peakEnd = ws, t
		m.res.PeakThroughputRPS, m.res.PeakUsers = rps, users
	}
	if capAt != never && t-f.Window >= capAt {
		m.res.Reason = ReasonMaxUsers
		m.res.Detail = fmt.Sprintf("no failure up to the cap of %d users, which ran for a full %s window (peak %.1f requests/s)",
			cap, f.Window, m.res.PeakThroughputRPS)
	}
}

// sinceLast reads a cumulative clock and returns, in seconds, how far it
// moved since the last reading in *last (nil when either reading failed or
// the clock went back, as a thread's counts do when it exits), then keeps
// the new reading.
func sinceLast(clock func() (time.Duration, bool), last *time.Duration, have *bool) *float64 {
	now, ok := clock()
	var out *float64
	if ok && *have && now >= *last {
		s := (now - *last).Seconds()
		out = &s
	}
	*last, *have = now, ok
	return out
}
