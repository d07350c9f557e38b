package workloads

import (
	"math/bits"
	"math/rand/v2"
	"time"
)

// RampOffset returns when user j of total starts, as an offset from the phase
// start: j*rampUp/total, so users start evenly spread over rampUp and user 0
// starts at once (JMeter's ramp-up period). It is exact (no floating point)
// and returns 0 for out-of-range arguments.
func RampOffset(j, total int, rampUp time.Duration) time.Duration {
	if j <= 0 || total <= 0 || rampUp <= 0 {
		return 0
	}
	if j >= total {
		j = total - 1
	}
	hi, lo := bits.Mul64(uint64(rampUp), uint64(j))
	q, _ := bits.Div64(hi, lo, uint64(total)) // hi < total since j < total, so no panic
	return time.Duration(q)
}

// DrawThink draws one think time uniformly from [t.Min, t.Max], both ends
// included (JMeter's Uniform Random Timer at nanosecond resolution). A range
// with Max <= Min always gives Min.
func DrawThink(r *rand.Rand, t Think) time.Duration {
	if t.Max <= t.Min {
		return max(t.Min, 0)
	}
	return t.Min + time.Duration(r.Uint64N(uint64(t.Max-t.Min)+1))
}

// userRand returns user u's random source: a PCG seeded with (seed, u), so a
// phase with the same seed makes the same choices in every run.
func userRand(seed uint64, u int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(u)))
}

// userSlot places one virtual user: group is its index in Phase.Groups and
// member its index within that group.
type userSlot struct {
	group, member int
}

// startOrder lists every user of groups in start order, taking one user from
// each group in turn (round robin) so that the groups ramp up together, as
// JMeter's parallel thread groups do. A user's position in this list is its
// global index in the phase: its ramp slot, its random seed and, for writers,
// its donut id.
func startOrder(groups []UserGroup) []userSlot {
	total, most := 0, 0
	for _, g := range groups {
		total += max(g.Users, 0)
		most = max(most, g.Users)
	}
	order := make([]userSlot, 0, total)
	for m := range most {
		for gi, g := range groups {
			if m < g.Users {
				order = append(order, userSlot{group: gi, member: m})
			}
		}
	}
	return order
}

// SteadyBucket is the resolution of the steady window's end: completions are
// counted in buckets of this width so the window's tail can be subtracted with
// bounded memory, and the window's end is rounded down to a bucket boundary.
const SteadyBucket = 100 * time.Millisecond

// Window is a span of a phase as offsets from the phase start; it holds the
// instants t with Start <= t < End.
type Window struct {
	// Start is the first instant inside the window.
	Start time.Duration
	// End is the first instant after the window.
	End time.Duration
}

// SteadyWindow returns the closed-model steady window: the span when every
// user is active, from lastStart (when the last user started) plus trimHead
// to firstFinish (when the first user finished) minus trimTail, with the end
// rounded down to a SteadyBucket boundary. ok is false when that span is empty
// or negative; callers then fall back to the whole phase.
func SteadyWindow(lastStart, firstFinish, trimHead, trimTail time.Duration) (w Window, ok bool) {
	w.Start = lastStart + trimHead
	end := firstFinish - trimTail
	if end < 0 {
		return w, false
	}
	w.End = end - end%SteadyBucket
	return w, w.End > w.Start
}

// steadyCounter counts the completions inside the steady window while the
// phase runs, in memory bounded by the tail trim rather than by the run
// length: a snapshot of the running total when the window opens, and a ring of
// SteadyBucket-wide completion counts covering trimTail, from which the
// completions after the window's end are subtracted when the first user
// finishes. It is clock-free: callers pass offsets from the phase start, in
// non-decreasing order (read the clock under the same lock that guards the
// counter).
type steadyCounter struct {
	users              int
	trimHead, trimTail time.Duration

	started   int
	lastStart time.Duration
	openKnown bool  // every user has started, so the window's start is known
	openTaken bool  // openCount holds the completions before the window's start
	openCount int64 // completions before the window's start

	finished    bool
	firstFinish time.Duration
	window      Window
	windowOK    bool
	closeCount  int64 // completions before the window's end

	total int64
	ring  []int64 // ring[b%len(ring)] counts completions in bucket b, for b in (head-len(ring), head]
	head  int64
}

// newSteadyCounter returns a counter for a phase of users users.
func newSteadyCounter(users int, trimHead, trimTail time.Duration) *steadyCounter {
	// The window's end is at most ceil(trimTail/bucket)+1 buckets behind the
	// newest bucket when the first user finishes; one more for safety.
	n := int((trimTail+SteadyBucket-1)/SteadyBucket) + 3
	return &steadyCounter{users: users, trimHead: trimHead, trimTail: trimTail, ring: make([]int64, n)}
}

// userStarted records that a user started at offset at.
func (s *steadyCounter) userStarted(at time.Duration) {
	s.started++
	if s.started == s.users {
		s.lastStart = at
		s.openKnown = true
	}
}

// completed records one completed request at offset at.
func (s *steadyCounter) completed(at time.Duration) {
	s.takeOpen(at)
	b := int64(at / SteadyBucket)
	n := int64(len(s.ring))
	if b > s.head {
		for i := s.head + 1; i <= b && i <= s.head+n; i++ {
			s.ring[i%n] = 0
		}
		s.head = b
	}
	if b > s.head-n {
		s.ring[b%n]++
	}
	s.total++
}

// takeOpen snapshots the running total the first time the clock reaches the
// window's start, so openCount counts exactly the completions before it.
func (s *steadyCounter) takeOpen(at time.Duration) {
	if s.openKnown && !s.openTaken && at >= s.lastStart+s.trimHead {
		s.openCount = s.total
		s.openTaken = true
	}
}

// userFinished records that a user finished (or stopped) at offset at; the
// first call fixes the window's end.
func (s *steadyCounter) userFinished(at time.Duration) {
	if s.finished {
		return
	}
	s.finished = true
	s.firstFinish = at
	if !s.openKnown {
		return
	}
	s.takeOpen(at)
	s.window, s.windowOK = SteadyWindow(s.lastStart, at, s.trimHead, s.trimTail)
	if s.windowOK {
		s.closeCount = s.countBefore(s.window.End)
	}
}

// countBefore returns the completions before the bucket boundary end, which
// must not be older than the ring.
func (s *steadyCounter) countBefore(end time.Duration) int64 {
	eb := int64(end / SteadyBucket)
	n := int64(len(s.ring))
	c := s.total
	for b := max(eb, s.head-n+1); b <= s.head; b++ {
		c -= s.ring[b%n]
	}
	return c
}

// steadyOutcome is the steady window of a finished phase and the completions inside it.
type steadyOutcome struct {
	window   Window
	requests int64
	fallback bool
	reason   string
}

// outcome returns the steady window, or the whole phase [0, end) with a reason
// when there is no steady window.
func (s *steadyCounter) outcome(end time.Duration) steadyOutcome {
	whole := steadyOutcome{window: Window{End: end}, requests: s.total, fallback: true}
	switch {
	case !s.openKnown:
		whole.reason = "not every user started (the phase was aborted, or reached its duration, during ramp-up)"
	case !s.finished:
		whole.reason = "no user finished"
	case !s.windowOK:
		whole.reason = "the steady window is empty: the last user started at " + s.lastStart.String() +
			" and the first user finished at " + s.firstFinish.String() +
			", leaving nothing between trim_head " + s.trimHead.String() + " and trim_tail " + s.trimTail.String() +
			" (ends are rounded down to " + SteadyBucket.String() + ")"
	default:
		return steadyOutcome{window: s.window, requests: s.closeCount - s.openCount}
	}
	return whole
}
