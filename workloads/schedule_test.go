package workloads

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestRampOffset(t *testing.T) {
	f := func(j, total int, ramp, want time.Duration) {
		t.Helper()
		if got := RampOffset(j, total, ramp); got != want {
			t.Errorf("RampOffset(%d, %d, %s): got %s, want %s", j, total, ramp, got, want)
		}
	}
	f(0, 4, 10*time.Second, 0)
	f(1, 4, 10*time.Second, 2500*time.Millisecond)
	f(3, 4, 10*time.Second, 7500*time.Millisecond)
	f(2, 3, time.Second, 666666666) // rounds down to the nanosecond
	f(5, 10, 0, 0)
	f(-1, 10, time.Second, 0)
	f(12, 10, time.Second, 900*time.Millisecond) // clamped to the last slot
	f(0, 0, time.Second, 0)
	// No overflow at the limits: the last of MaxUsers users over MaxDuration.
	f(MaxUsers-1, MaxUsers, MaxDuration, MaxDuration-MaxDuration/MaxUsers)
}

func TestDrawThink(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	think := Think{Min: 10 * time.Millisecond, Max: 30 * time.Millisecond}
	lo, hi := think.Max, think.Min
	var sum time.Duration
	const n = 20000
	for range n {
		d := DrawThink(r, think)
		if d < think.Min || d > think.Max {
			t.Fatalf("draw %s outside [%s, %s]", d, think.Min, think.Max)
		}
		lo, hi, sum = min(lo, d), max(hi, d), sum+d
	}
	// Uniform: the extremes are approached and the mean is near the middle.
	if lo > think.Min+100*time.Microsecond || hi < think.Max-100*time.Microsecond {
		t.Errorf("draws span [%s, %s], want close to [%s, %s]", lo, hi, think.Min, think.Max)
	}
	if mean := sum / n; mean < 19500*time.Microsecond || mean > 20500*time.Microsecond {
		t.Errorf("mean draw %s, want about 20ms", mean)
	}
	f := func(th Think, want time.Duration) {
		t.Helper()
		if got := DrawThink(r, th); got != want {
			t.Errorf("DrawThink(%+v): got %s, want %s", th, got, want)
		}
	}
	f(Think{}, 0)
	f(Think{Min: 5 * time.Millisecond, Max: 5 * time.Millisecond}, 5*time.Millisecond)
	f(Think{Min: 5 * time.Millisecond}, 5*time.Millisecond)
	// Both ends are reachable with a one-nanosecond range.
	seen := map[time.Duration]bool{}
	for range 200 {
		seen[DrawThink(r, Think{Min: 1, Max: 2})] = true
	}
	if !seen[1] || !seen[2] || len(seen) != 2 {
		t.Errorf("draws from [1ns, 2ns]: got %v, want both ends", seen)
	}
}

func TestUserRandReproducible(t *testing.T) {
	a, b, c := userRand(9, 3), userRand(9, 3), userRand(9, 4)
	same, differ := true, false
	for range 10 {
		x, y, z := a.Uint64(), b.Uint64(), c.Uint64()
		same = same && x == y
		differ = differ || x != z
	}
	if !same || !differ {
		t.Errorf("same seed and user agree: %v (want true); another user differs: %v (want true)", same, differ)
	}
}

func TestStartOrder(t *testing.T) {
	got := startOrder([]UserGroup{{Users: 3}, {Users: 1}, {Users: 2}})
	want := []userSlot{{0, 0}, {1, 0}, {2, 0}, {0, 1}, {2, 1}, {0, 2}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestSteadyWindow(t *testing.T) {
	ms := time.Millisecond
	f := func(lastStart, firstFinish, head, tail time.Duration, want Window, wantOK bool) {
		t.Helper()
		got, ok := SteadyWindow(lastStart, firstFinish, head, tail)
		if got != want || ok != wantOK {
			t.Errorf("SteadyWindow(%s, %s, %s, %s): got %+v %v, want %+v %v", lastStart, firstFinish, head, tail, got, ok, want, wantOK)
		}
	}
	f(10*time.Second, 70*time.Second, 5*time.Second, 5*time.Second, Window{15 * time.Second, 65 * time.Second}, true)
	f(0, 1234*ms, 0, 0, Window{0, 1200 * ms}, true)                                  // end rounded down to the bucket
	f(0, 1234*ms, 0, 34*ms, Window{0, 1200 * ms}, true)                              // already on a boundary
	f(2*time.Second, 2050*ms, 0, 0, Window{2 * time.Second, 2 * time.Second}, false) // rounds to empty
	f(5*time.Second, 4*time.Second, 0, 0, Window{5 * time.Second, 4 * time.Second}, false)
	f(0, time.Second, 0, 2*time.Second, Window{}, false) // negative end
	f(time.Second, 3*time.Second, time.Second, time.Second, Window{2 * time.Second, 2 * time.Second}, false)
}

func TestSteadyCounter(t *testing.T) {
	ms := time.Millisecond
	// Two users start at 0 and 1 s; one request completes every 10 ms from
	// 0 to 20 s; user A finishes at 15 s. Window: [1.5 s, 14.7 s).
	s := newSteadyCounter(2, 500*ms, 300*ms)
	ringLen := len(s.ring)
	s.userStarted(0)
	for at := time.Duration(0); at <= 20*time.Second; at += 10 * ms {
		if at == time.Second {
			s.userStarted(at)
		}
		if at == 15*time.Second {
			s.userFinished(at)
		}
		s.completed(at)
	}
	s.userFinished(20 * time.Second)
	got := s.outcome(20 * time.Second)
	// Completions at 1500, 1510, ..., 14690 ms.
	want := steadyOutcome{window: Window{1500 * ms, 14700 * ms}, requests: (14700 - 1500) / 10}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if len(s.ring) != ringLen || ringLen != 6 {
		t.Errorf("ring length: got %d then %d, want 6 (bounded by trim_tail)", ringLen, len(s.ring))
	}

	f := func(name string, s *steadyCounter, reason string) {
		t.Helper()
		o := s.outcome(9 * time.Second)
		if !o.fallback || o.reason == "" || o.window != (Window{End: 9 * time.Second}) || o.requests != s.total {
			t.Errorf("%s: got %+v, want a fallback to [0, 9s) with all %d requests", name, o, s.total)
		}
		if len(o.reason) < len(reason) || o.reason[:len(reason)] != reason {
			t.Errorf("%s: reason %q, want it to start with %q", name, o.reason, reason)
		}
	}
	notStarted := newSteadyCounter(3, 0, 0)
	notStarted.userStarted(0)
	notStarted.completed(time.Second)
	notStarted.userFinished(2 * time.Second)
	f("aborted in ramp-up", notStarted, "not every user started")

	empty := newSteadyCounter(2, time.Second, time.Second)
	empty.userStarted(0)
	empty.completed(500 * ms)
	empty.userFinished(2 * time.Second) // finishes before the other starts + trims
	empty.userStarted(3 * time.Second)
	empty.completed(4 * time.Second)
	empty.userFinished(5 * time.Second)
	f("user finished before the window opened", empty, "the steady window is empty")

	// No completion between the window's start and the first finish: the
	// window exists but holds no requests.
	quiet := newSteadyCounter(1, 0, 0)
	quiet.userStarted(0)
	quiet.completed(100 * ms)
	quiet.userFinished(5 * time.Second)
	if o := quiet.outcome(5 * time.Second); o.fallback || o.requests != 1 || o.window != (Window{0, 5 * time.Second}) {
		t.Errorf("quiet: got %+v, want window [0, 5s) with 1 request", o)
	}
}

func TestSteadyCounterLongGap(t *testing.T) {
	// A gap longer than the ring between completions must not leave stale
	// counts behind.
	s := newSteadyCounter(1, 0, 200*time.Millisecond)
	s.userStarted(0)
	for i := range 5 {
		s.completed(time.Duration(i) * time.Millisecond)
	}
	s.completed(10 * time.Second)
	s.completed(10*time.Second + 950*time.Millisecond)
	s.userFinished(11 * time.Second)
	// Window [0, 10.8 s): the first six completions.
	if o := s.outcome(11 * time.Second); o.requests != 6 || o.window.End != 10800*time.Millisecond {
		t.Errorf("got %+v, want 6 requests in [0, 10.8s)", o)
	}
}
