package workloads

import (
	"math"
	"testing"
	"time"
)

func TestPacerConstant(t *testing.T) {
	p := Pacer{Rate: 200, Duration: 5 * time.Second}
	if got := p.Total(); got != 1000 {
		t.Fatalf("Total: got %d, want 1000", got)
	}
	for i := range int64(1000) {
		at, ok := p.Intended(i)
		if want := time.Duration(i) * 5 * time.Millisecond; !ok || at != want {
			t.Fatalf("Intended(%d): got %s %v, want %s true", i, at, ok, want)
		}
	}
	if at, ok := p.Intended(1000); ok {
		t.Errorf("Intended(1000): got %s true, want no arrival at the schedule's end", at)
	}
	// RateEnd equal to Rate is the same constant schedule.
	q := Pacer{Rate: 200, RateEnd: 200, Duration: 5 * time.Second}
	for _, i := range []int64{0, 1, 499, 999} {
		a, _ := p.Intended(i)
		b, _ := q.Intended(i)
		if a != b {
			t.Errorf("RateEnd == Rate, arrival %d: got %s, want %s", i, b, a)
		}
	}
	// A rate whose product with the duration is not a whole number.
	r := Pacer{Rate: 3, Duration: 1500 * time.Millisecond} // arrivals at 0, 1/3, 2/3, 1, 4/3 s
	if got := r.Total(); got != 5 {
		t.Errorf("Total of 3/s over 1.5s: got %d, want 5", got)
	}
	if at, _ := r.Intended(4); at != 1333333333 {
		t.Errorf("Intended(4) at 3/s: got %d ns, want 1333333333", at)
	}
}

func TestPacerRamp(t *testing.T) {
	// f checks every arrival of a linear ramp against the closed form: t_i is
	// the root of a t + k t^2 / 2 = i, t_i = (-a + sqrt(a^2 + 2 k i)) / k.
	f := func(rate, rateEnd float64, d time.Duration, wantTotal int64) {
		t.Helper()
		p := Pacer{Rate: rate, RateEnd: rateEnd, Duration: d}
		if got := p.Total(); got != wantTotal {
			t.Fatalf("%g->%g over %s: Total got %d, want %d", rate, rateEnd, d, got, wantTotal)
		}
		k := (rateEnd - rate) / d.Seconds()
		prev := time.Duration(-1)
		for i := range wantTotal {
			at, ok := p.Intended(i)
			want := (-rate + math.Sqrt(rate*rate+2*k*float64(i))) / k
			if !ok || math.Abs(at.Seconds()-want) > 2e-9 {
				t.Fatalf("%g->%g arrival %d: got %s %v, want %.9fs", rate, rateEnd, i, at, ok, want)
			}
			if at <= prev || at >= d {
				t.Fatalf("%g->%g arrival %d at %s: want increasing and below %s (previous %s)", rate, rateEnd, i, at, d, prev)
			}
			// The cumulative count at t_i is i.
			if n := rate*at.Seconds() + k*at.Seconds()*at.Seconds()/2; math.Abs(n-float64(i)) > 1e-6 {
				t.Fatalf("%g->%g arrival %d: N(t_i) = %f, want %d", rate, rateEnd, i, n, i)
			}
			prev = at
		}
		if _, ok := p.Intended(wantTotal); ok {
			t.Errorf("%g->%g: arrival %d exists, want the schedule to stop", rate, rateEnd, wantTotal)
		}
	}
	f(100, 300, 4*time.Second, 800) // the mean rate 200/s over 4 s
	f(300, 100, 4*time.Second, 800) // ramping down
	f(1, 1000, 10*time.Second, 5005)
	// Exact roots: at 100->300 over 4 s, N(t) = 100 t + 25 t^2, so arrivals
	// 125, 300 and 525 fall on whole seconds.
	p := Pacer{Rate: 100, RateEnd: 300, Duration: 4 * time.Second}
	for _, c := range []struct {
		i    int64
		want time.Duration
	}{{0, 0}, {125, time.Second}, {300, 2 * time.Second}, {525, 3 * time.Second}} {
		if at, _ := p.Intended(c.i); at != c.want {
			t.Errorf("100->300 arrival %d: got %s, want %s", c.i, at, c.want)
		}
	}
}

func TestPacerPace(t *testing.T) {
	p := Pacer{Rate: 10, Duration: time.Second} // arrivals every 100 ms, 10 of them
	f := func(elapsed time.Duration, hits uint64, wantWait time.Duration, wantStop bool) {
		t.Helper()
		wait, stop := p.Pace(elapsed, hits)
		if wait != wantWait || stop != wantStop {
			t.Errorf("Pace(%s, %d): got %s %v, want %s %v", elapsed, hits, wait, stop, wantWait, wantStop)
		}
	}
	f(0, 0, 0, false)
	f(0, 1, 100*time.Millisecond, false)
	f(150*time.Millisecond, 2, 50*time.Millisecond, false)
	f(500*time.Millisecond, 2, 0, false) // overdue: send now
	f(900*time.Millisecond, 9, 0, false)
	f(950*time.Millisecond, 10, 0, true) // the schedule is over
	f(5*time.Second, 10, 0, true)
	f(0, math.MaxUint64, 0, true)
	if got := (Pacer{Rate: 10}).Total(); got != 0 {
		t.Errorf("zero duration: Total got %d, want 0", got)
	}
}

func TestOpenStatsLateness(t *testing.T) {
	s := newOpenStats(10*time.Second, time.Second, time.Second)
	for _, l := range []time.Duration{0, 500 * time.Microsecond, LateThreshold, LateThreshold + 1, 40 * time.Millisecond} {
		s.sentAt(l)
	}
	if s.sent != 5 || s.late != 2 || s.maxLate != 40*time.Millisecond {
		t.Errorf("got sent %d late %d max %s, want 5, 2 (only above %s), 40ms", s.sent, s.late, s.maxLate, LateThreshold)
	}
	for _, at := range []time.Duration{0, time.Second - 1, time.Second, 5 * time.Second, 9*time.Second - 1, 9 * time.Second, 11 * time.Second} {
		s.completed(at, outcome{class: ClassTimeout})
	}
	if s.steady != 3 || s.service.TotalCount() != 0 {
		t.Errorf("got %d completions in [1s, 9s) and %d service times, want 3 and 0 (failures are not timed)", s.steady, s.service.TotalCount())
	}
}
