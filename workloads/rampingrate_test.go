package workloads

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"
)

// rateRampPhase is an open-model max load from rate to rateEnd over d.
func rateRampPhase(rate, rateEnd float64, maxInFlight int, f Failure, d time.Duration) Phase {
	return Phase{
		Name: "max-open", Arm: "rest", Model: RampingRate,
		Groups: []UserGroup{{Operation: RESTPut}},
		Rate:   rate, RateEnd: rateEnd, MaxInFlight: maxInFlight,
		Failure:  f,
		Duration: d, RequestTimeout: 5 * time.Second, Seed: 1,
		Operations: donutOps(50),
	}
}

// TestRampingRateFindsTheKneeVirtualTime: the arrival rate ramps 50 → 500
// requests/s over 10 s against a target that serves 10 requests at once in
// 50 ms each (200 requests/s) and answers 503 beyond: the error-ratio rule
// trips once the offered rate passes its capacity, and the timeline carries
// the intended arrival rate and the requests in flight.
func TestRampingRateFindsTheKneeVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := &overloadTarget{virtualTarget: newVirtualTarget(50 * time.Millisecond), limit: 10}
		p := rateRampPhase(50, 500, 100, Failure{Window: time.Second, MaxErrorRatio: 0.01, MinRequests: 10}, 10*time.Second)
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		r, err := Run(t.Context(), "http://127.0.0.1:1", p, HTTPClient(&http.Client{Transport: o}), nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		m := r.MaxLoad
		if m == nil || m.Reason != ReasonErrorRatio || !m.Failed {
			t.Fatalf("max load %+v, want an error_ratio failure", m)
		}
		// 200 requests/s is offered at 10 × 150/450 = 3.33 s; the first
		// bucket wholly past it ends at 4 s or 5 s.
		at := m.FailureAt.Sub(r.Start)
		if at < 4*time.Second || at > 5*time.Second {
			t.Errorf("failure at %s, want 4 s or 5 s (capacity 200 requests/s reached at 3.3 s)", at)
		}
		if m.PeakThroughputRPS <= 0 || m.PeakThroughputRPS > 210 {
			t.Errorf("peak throughput %g, want positive and within the target's 200 requests/s", m.PeakThroughputRPS)
		}
		pacer := NewPacer(p)
		for i, pt := range m.Timeline {
			want := pacer.RateAt(time.Duration(pt.TSeconds * float64(time.Second)))
			if pt.ArrivalRPS != want {
				t.Errorf("point %d: arrival rate %g, want %g", i, pt.ArrivalRPS, want)
			}
			if pt.Users < 0 || pt.Users > p.MaxInFlight {
				t.Errorf("point %d: %d in flight, outside 0..%d", i, pt.Users, p.MaxInFlight)
			}
		}
		if len(m.Timeline) < 4 || r.Open == nil {
			t.Errorf("timeline %d points, open figures %v", len(m.Timeline), r.Open)
		}
	})
}

// TestRampingRateCountsDroppedArrivalsVirtualTime: a slow target (200 ms a
// request) with at most 5 requests in flight can take 25 requests/s; past
// that the driver drops arrivals, and the dropped arrivals trip the error
// ratio: the open model shows the queue the closed model hides.
func TestRampingRateCountsDroppedArrivalsVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vt := newVirtualTarget(200 * time.Millisecond)
		p := rateRampPhase(10, 100, 5, Failure{Window: time.Second, MaxErrorRatio: 0.05, MinRequests: 5}, 10*time.Second)
		r, err := Run(t.Context(), "http://127.0.0.1:1", p, HTTPClient(&http.Client{Transport: vt}), nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		m := r.MaxLoad
		if m == nil || !m.Failed || m.Reason != ReasonErrorRatio || r.Open.Dropped == 0 || r.Errors != 0 {
			t.Fatalf("max load %+v, dropped %d, errors %d: want an error_ratio failure from dropped arrivals, no failed request", m, r.Open.Dropped, r.Errors)
		}
	})
}

// TestRampingRateNeedsARisingRate: the model's own validation.
func TestRampingRateNeedsARisingRate(t *testing.T) {
	p := rateRampPhase(100, 100, 10, Failure{Window: time.Second}, 5*time.Second)
	if err := p.Validate(); err == nil {
		t.Error("a ramping-rate phase without a rising rate was accepted")
	}
	p = rateRampPhase(100, 200, 10, Failure{}, 5*time.Second)
	if err := p.Validate(); err == nil {
		t.Error("a ramping-rate phase without a failure window was accepted")
	}
}
