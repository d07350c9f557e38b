package workloads

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// rampPhase returns a valid ramping phase of rest-put users with no think time.
func rampPhase(r Ramp, f Failure, d time.Duration) Phase {
	return Phase{
		Name: "max", Arm: "rest", Model: Ramping,
		Groups:         []UserGroup{{Operation: RESTPut}},
		Ramp:           r,
		Failure:        f,
		Duration:       d,
		RequestTimeout: 5 * time.Second,
		Operations:     donutOps(50),
		Seed:           1,
	}
}

func TestRampingScheduleVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every 333 ms never falls on a whole second before 333 s, so the
		// users at each bucket's end are RampUsers at that instant. The cap
		// of 20 is reached at 9 x 333 ms = 2.997 s; with a 2 s window the
		// phase ends at 5 s, the first bucket end a full window after it.
		ramp := Ramp{Start: 3, Step: 2, Every: 333 * time.Millisecond, Max: 20}
		vt := newVirtualTarget(10 * time.Millisecond)
		p := rampPhase(ramp, Failure{Window: 2 * time.Second, MaxErrorRatio: 0.5}, time.Minute)
		var progress []Progress
		r, err := Run(t.Context(), "http://127.0.0.1:1", p, HTTPClient(&http.Client{Transport: vt}), func(pr Progress) { progress = append(progress, pr) })
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		m := r.MaxLoad
		if m == nil {
			t.Fatal("no max_load result")
		}
		if m.Reason != ReasonMaxUsers || m.Failed || r.Aborted || m.FinalUsers != 20 || m.UsersAtFailure != 0 || !m.FailureAt.IsZero() {
			t.Errorf("got reason %q (%s) failed %v aborted %v final users %d, want max_users, not failed, 20 users",
				m.Reason, m.Detail, m.Failed, r.Aborted, m.FinalUsers)
		}
		if got := r.End.Sub(r.Start); got < 5*time.Second || got > 5010*time.Millisecond {
			t.Errorf("ended after %s, want 5s plus at most one 10 ms request in flight", got)
		}
		if len(m.Timeline) != 5 {
			t.Fatalf("timeline: got %d points, want 5: %+v", len(m.Timeline), m.Timeline)
		}
		for i, pt := range m.Timeline {
			at := time.Duration(i+1) * time.Second
			want := min(ramp.Start+ramp.Step*int(at/ramp.Every), ramp.Max)
			if pt.TSeconds != at.Seconds() || pt.Users != want || pt.ErrorRatio != 0 {
				t.Errorf("timeline %d: got %+v, want t %s with %d users and no errors", i, pt, at, want)
			}
		}
		for i, pr := range progress[:min(len(progress), 4)] { // at 5 s users may be stopping
			at := time.Duration(i+1) * time.Second
			if want := int64(RampUsers(ramp, at)); pr.ActiveUsers != want {
				t.Errorf("progress at %s: got %d active users, want %d", at, pr.ActiveUsers, want)
			}
		}
		if len(progress) < 4 {
			t.Errorf("progress reports: got %d, want at least 4", len(progress))
		}
		// Each user completes a request every 10 ms; in [3 s, 5 s) all 20 ran
		// throughout: 20 x 200 completions, the best window.
		if m.PeakThroughputRPS != 2000 || m.PeakUsers != 20 || r.ThroughputRPS != 2000 || r.SteadyRequests != 4000 {
			t.Errorf("peak: got %g rps with %d users (result %g rps, %d requests), want 2000 rps, 20 users, 4000 requests",
				m.PeakThroughputRPS, m.PeakUsers, r.ThroughputRPS, r.SteadyRequests)
		}
		if m.PeakWindowStart.Sub(r.Start) != 3*time.Second || m.PeakWindowEnd.Sub(r.Start) != 5*time.Second ||
			!r.SteadyStart.Equal(m.PeakWindowStart) || !r.SteadyEnd.Equal(m.PeakWindowEnd) || r.SteadyFallback {
			t.Errorf("peak window: got [%s, %s), steady [%s, %s), want [3s, 5s) for both",
				m.PeakWindowStart.Sub(r.Start), m.PeakWindowEnd.Sub(r.Start), r.SteadyStart.Sub(r.Start), r.SteadyEnd.Sub(r.Start))
		}
		if r.Operations[0].Users != 20 || r.Model != Ramping || !r.ClosedModel {
			t.Errorf("got %d users in the group, model %q closed %v; want 20, ramping, true", r.Operations[0].Users, r.Model, r.ClosedModel)
		}
	})
}

func TestRampingDurationAndAbortVirtualTime(t *testing.T) {
	ramp := Ramp{Start: 3, Step: 2, Every: 333 * time.Millisecond}
	synctest.Test(t, func(t *testing.T) {
		p := rampPhase(ramp, Failure{Window: time.Second, MaxP99: time.Second}, 3500*time.Millisecond)
		r, err := Run(t.Context(), "http://127.0.0.1:1", p, HTTPClient(&http.Client{Transport: newVirtualTarget(10 * time.Millisecond)}), nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if m := r.MaxLoad; m.Reason != ReasonDuration || m.Failed || r.Aborted || m.FinalUsers != 23 || len(m.Timeline) != 3 {
			t.Errorf("got reason %q (%s) aborted %v, %d final users, %d points; want duration, 23 users, 3 points",
				m.Reason, m.Detail, r.Aborted, m.FinalUsers, len(m.Timeline))
		}
	})
	synctest.Test(t, func(t *testing.T) {
		p := rampPhase(ramp, Failure{Window: time.Second, MaxP99: time.Second}, time.Hour)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		time.AfterFunc(2500*time.Millisecond, cancel)
		r, err := Run(ctx, "http://127.0.0.1:1", p, HTTPClient(&http.Client{Transport: newVirtualTarget(10 * time.Millisecond)}), nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if m := r.MaxLoad; m.Reason != ReasonAborted || !r.Aborted || m.FinalUsers != 17 {
			t.Errorf("got reason %q aborted %v, %d users; want aborted with 17 users", m.Reason, r.Aborted, m.FinalUsers)
		}
	})
}

// overloadTarget is a virtual target for synctest bubbles that answers 503
// at once when more than limit requests are in flight, and otherwise after service.
type overloadTarget struct {
	*virtualTarget
	limit    int64
	inFlight atomic.Int64
}

func (o *overloadTarget) RoundTrip(req *http.Request) (*http.Response, error) {
	defer o.inFlight.Add(-1)
	if o.inFlight.Add(1) > o.limit {
		return &http.Response{StatusCode: http.StatusServiceUnavailable, Body: http.NoBody, Request: req}, nil
	}
	return o.virtualTarget.RoundTrip(req)
}

func TestRampingFailureVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Users with 5 ms of think time and 50 ms of service: 12 users are
		// first possible at 1.25 s and overload the limit of 10 at once.
		o := &overloadTarget{virtualTarget: newVirtualTarget(50 * time.Millisecond), limit: 10}
		p := rampPhase(Ramp{Start: 2, Step: 2, Every: 250 * time.Millisecond, Max: 100},
			Failure{Window: time.Second, MaxErrorRatio: 0.01, MinRequests: 10}, time.Minute)
		p.Think = Think{Min: 5 * time.Millisecond, Max: 5 * time.Millisecond}
		r, err := Run(t.Context(), "http://127.0.0.1:1", p, HTTPClient(&http.Client{Transport: o}), nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		m := r.MaxLoad
		if m.Reason != ReasonErrorRatio || !m.Failed || m.UsersAtFailure != 16 || m.FailureAt.Sub(r.Start) != 2*time.Second {
			t.Errorf("got reason %q (%s) failed %v with %d users at %s; want error_ratio with 16 users at 2s",
				m.Reason, m.Detail, m.Failed, m.UsersAtFailure, m.FailureAt.Sub(r.Start))
		}
		if w := m.FailureWindow; w == nil || w.Errors == 0 || w.Seconds != 1 || r.ErrorsByClass["http_503"] < w.Errors {
			t.Errorf("failure window: got %+v, errors %v; want the 503s of [1s, 2s)", w, r.ErrorsByClass)
		}
		if !strings.Contains(m.Detail, "error ratio") || !strings.Contains(m.Detail, "16 users") {
			t.Errorf("detail %q, want the error ratio and the users", m.Detail)
		}
		// The best window is the first: [0, 1 s) with 8 users at its end.
		if m.PeakUsers != 8 || m.PeakWindowStart.Sub(r.Start) != 0 || m.PeakWindowEnd.Sub(r.Start) != time.Second || m.PeakThroughputRPS <= 0 {
			t.Errorf("peak: got %g rps, %d users, [%s, %s); want 8 users in [0, 1s)",
				m.PeakThroughputRPS, m.PeakUsers, m.PeakWindowStart.Sub(r.Start), m.PeakWindowEnd.Sub(r.Start))
		}
	})
}

func TestMaxLoadLoopback(t *testing.T) {
	// A real server that answers 503 once more than limit requests are in
	// flight. Each request holds the server for 50 ms and users think 5 ms,
	// so the concurrency tracks the users: up to 10 users can never exceed
	// the limit, and from 12 users (at 1.25 s) on it does.
	const limit = 10
	fake := newFakeTarget(50)
	h := fake.handler()
	var inFlight atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer inFlight.Add(-1)
		if inFlight.Add(1) > limit {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		time.Sleep(50 * time.Millisecond)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ramp := Ramp{Start: 2, Step: 2, Every: 250 * time.Millisecond, Max: 60} // the cap guards the run's length
	f := Failure{Window: time.Second, MaxErrorRatio: 0.01, MinRequests: 10}
	p := rampPhase(ramp, f, 20*time.Second)
	p.Groups = []UserGroup{{Operation: RESTGet}, {Operation: GraphQLQuery}}
	p.Operations = donutOps(50)
	p.Think = Think{Min: 5 * time.Millisecond, Max: 5 * time.Millisecond}
	r, err := Run(context.Background(), srv.URL, p, nil, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	m := r.MaxLoad
	t.Logf("reason %s: %s; peak %.0f rps with %d users; timeline %+v", m.Reason, m.Detail, m.PeakThroughputRPS, m.PeakUsers, m.Timeline)
	if m.Reason != ReasonErrorRatio || !m.Failed {
		t.Fatalf("got reason %q (%s), want error_ratio", m.Reason, m.Detail)
	}
	// Within one window's worth of users above the threshold.
	if slack := ramp.Step * int(f.Window/ramp.Every); m.UsersAtFailure <= limit || m.UsersAtFailure > limit+slack {
		t.Errorf("users at failure: got %d, want in (%d, %d]", m.UsersAtFailure, limit, limit+slack)
	}
	if m.PeakThroughputRPS <= 0 || m.PeakUsers > limit || m.PeakWindowEnd.After(m.FailureAt) || m.PeakWindowStart.Before(r.Start) {
		t.Errorf("peak: got %g rps with %d users in [%v, %v), failure at %v; want a window before the failure with at most %d users",
			m.PeakThroughputRPS, m.PeakUsers, m.PeakWindowStart, m.PeakWindowEnd, m.FailureAt, limit)
	}
	if r.Errors == 0 || r.ErrorsByClass["http_503"] != r.Errors {
		t.Errorf("errors: got %d %v, want only http_503", r.Errors, r.ErrorsByClass)
	}
	if r.Operations[0].Requests == 0 || r.Operations[1].Requests == 0 {
		t.Errorf("both groups should have run: got %d and %d requests", r.Operations[0].Requests, r.Operations[1].Requests)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"max_load"`, `"reason":"error_ratio"`, `"users_at_failure"`, `"failure_at"`, `"peak_throughput_rps"`,
		`"peak_users"`, `"peak_window_start"`, `"peak_window_end"`, `"timeline"`, `"t_seconds"`, `"p99_ms"`, `"error_ratio"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("result JSON lacks %s", key)
		}
	}
}

func TestClosedDurationCapVirtualTime(t *testing.T) {
	// 4 users, each thinking 100 ms then sending a 100 ms request: requests
	// complete at 0.2, 0.4, ... s. trim_tail is 50 ms.
	f := func(name string, iterations int, cap time.Duration, wantEach int, wantEnd, wantSteadyEnd time.Duration, wantSteadyEach int) {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				vt := newVirtualTarget(100 * time.Millisecond)
				p := Phase{
					Name: "capped", Arm: "rest",
					Groups:         []UserGroup{{Operation: RESTPut, Users: 4, Iterations: iterations}},
					Think:          Think{Min: 100 * time.Millisecond, Max: 100 * time.Millisecond},
					TrimTail:       50 * time.Millisecond,
					RequestTimeout: time.Second,
					Operations:     donutOps(50),
					Duration:       cap,
				}
				r, err := Run(t.Context(), "http://127.0.0.1:1", p, HTTPClient(&http.Client{Transport: vt}), nil)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				if r.Requests != int64(4*wantEach) || r.Aborted || r.Model != Closed || r.Open != nil || r.MaxLoad != nil {
					t.Errorf("got %d requests aborted %v model %q, want %d, not aborted, closed", r.Requests, r.Aborted, r.Model, 4*wantEach)
				}
				if got := r.End.Sub(r.Start); got != wantEnd {
					t.Errorf("end: got %s, want %s", got, wantEnd)
				}
				if r.SteadyFallback || r.SteadyStart != r.Start || r.SteadyEnd.Sub(r.Start) != wantSteadyEnd || r.SteadyRequests != int64(4*wantSteadyEach) {
					t.Errorf("steady: got [%s, %s) with %d requests (fallback %v %q), want [0, %s) with %d",
						r.SteadyStart.Sub(r.Start), r.SteadyEnd.Sub(r.Start), r.SteadyRequests, r.SteadyFallback, r.SteadyFallbackReason, wantSteadyEnd, 4*wantSteadyEach)
				}
			})
		})
	}
	// The cap falls in a think: users stop at once; the window ends at 1.05 - 0.05 s.
	f("cap while thinking", 0, 1050*time.Millisecond, 5, 1050*time.Millisecond, time.Second, 4)
	// The cap falls mid-request: the requests finish (1.2 s), the window still ends at the cap less trim_tail.
	f("cap mid-request", 0, 1150*time.Millisecond, 6, 1200*time.Millisecond, 1100*time.Millisecond, 5)
	// Finite iterations cut short by the cap are not an abort.
	f("cap before the iterations end", 100, 1050*time.Millisecond, 5, 1050*time.Millisecond, time.Second, 4)
	// Iterations that end before the cap: the cap changes nothing.
	f("iterations end first", 3, 10*time.Second, 3, 600*time.Millisecond, 500*time.Millisecond, 2)
}

// TestRampingBucketsCarryDriverCPU: each closed bucket records the CPU time
// the driver process used since the previous one (its utilisation through
// the ramp, for telling a driver-bound knee), and nothing when the driver
// cannot read its CPU time.
func TestRampingBucketsCarryDriverCPU(t *testing.T) {
	p := rampPhase(Ramp{Start: 1, Step: 1, Every: time.Second, Max: 5}, Failure{Window: 2 * time.Second, MaxErrorRatio: 0.5}, time.Minute)
	base, _ := url.Parse("http://127.0.0.1:1")
	e, err := newEngine(p, HTTPClient(http.DefaultClient), base)
	if err != nil {
		t.Fatal(err)
	}
	e.window = newLoadWindow(p.Failure.Window)
	clock := []time.Duration{0, 300 * time.Millisecond, 1200 * time.Millisecond}
	e.cpuTime = func() (time.Duration, bool) {
		c := clock[0]
		clock = clock[1:]
		return c, true
	}
	e.waitTime = func() (time.Duration, bool) { return 0, false }
	var m maxLoadState
	m.lastCPU, m.haveCPU = e.cpuTime()
	e.closeBucket(&m, time.Second, never, 1)
	e.closeBucket(&m, 2*time.Second, never, 2)
	if len(m.timeline) != 2 || m.timeline[0].DriverCPUSeconds == nil || *m.timeline[0].DriverCPUSeconds != 0.3 || *m.timeline[1].DriverCPUSeconds != 0.9 {
		t.Fatalf("driver CPU per bucket: %+v", m.timeline)
	}
	e.cpuTime = func() (time.Duration, bool) { return 0, false }
	e.closeBucket(&m, 3*time.Second, never, 3)
	if m.timeline[2].DriverCPUSeconds != nil {
		t.Errorf("an unreadable CPU clock gave %v, want not measured", *m.timeline[2].DriverCPUSeconds)
	}
	if n := allowedCPUs(); n < 1 {
		t.Errorf("allowedCPUs = %d", n)
	}
}
