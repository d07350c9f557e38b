package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// openPhase returns a valid open-model phase of rest-put requests.
func openPhase(rate, rateEnd float64, d time.Duration, maxInFlight int) Phase {
	return Phase{
		Name: "open", Arm: "rest", Model: Open,
		Groups:         []UserGroup{{Operation: RESTPut}},
		Duration:       d,
		Rate:           rate,
		RateEnd:        rateEnd,
		MaxInFlight:    maxInFlight,
		RequestTimeout: 10 * time.Second,
		Operations:     donutOps(50),
		Seed:           3,
	}
}

// allArrivals returns every arrival the virtual target saw, sorted, as offsets from start.
func allArrivals(vt *virtualTarget, start time.Time) []time.Duration {
	vt.mu.Lock()
	defer vt.mu.Unlock()
	var out []time.Duration
	for _, as := range vt.arrivals {
		for _, a := range as {
			out = append(out, a.Sub(start))
		}
	}
	slices.Sort(out)
	return out
}

func TestOpenConstantRateVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vt := newVirtualTarget(10 * time.Millisecond)
		p := openPhase(200, 0, 5*time.Second, 50)
		p.TrimHead, p.TrimTail = time.Second, time.Second
		var progress []Progress
		r, err := Run(t.Context(), "http://127.0.0.1:1", p, HTTPClient(&http.Client{Transport: vt}), func(pr Progress) { progress = append(progress, pr) })
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		arr := allArrivals(vt, r.Start)
		if len(arr) != 1000 || r.Requests != 1000 || r.Errors != 0 {
			t.Fatalf("got %d arrivals, %d requests, %d errors %v; want 1000, 1000, 0", len(arr), r.Requests, r.Errors, r.ErrorExamples)
		}
		for i, a := range arr {
			if want := time.Duration(i) * 5 * time.Millisecond; a != want {
				t.Fatalf("arrival %d at %s, want %s (intended spacing 5ms)", i, a, want)
			}
		}
		o := r.Open
		if o == nil {
			t.Fatal("no open result")
		}
		if o.Arrivals != 1000 || o.Sent != 1000 || o.Dropped != 0 || o.Late != 0 || o.MaxLatenessMs != 0 {
			t.Errorf("open figures: got %+v, want 1000 arrivals, all sent, none dropped or late", *o)
		}
		if o.IntendedRateRPS != 200 || o.AchievedRateRPS != 200 {
			t.Errorf("rates: got intended %g achieved %g, want 200 and 200", o.IntendedRateRPS, o.AchievedRateRPS)
		}
		if r.Model != Open || r.ClosedModel || r.LatencyNote != OpenLatencyNote || r.Aborted {
			t.Errorf("header: got model %q closed %v aborted %v note %q", r.Model, r.ClosedModel, r.Aborted, r.LatencyNote)
		}
		// Every request takes exactly 10 ms of virtual time, from the intended time and from the send.
		if r.LatencyMs.P50 < 9.99 || r.LatencyMs.Max > 10.01 || o.ServiceMs.P50 < 9.99 || o.ServiceMs.Max > 10.01 {
			t.Errorf("latency %+v service %+v, want 10 ms", r.LatencyMs, o.ServiceMs)
		}
		// Steady window [1 s, 4 s): completions at 5i+10 ms in it are i = 198..797.
		if r.SteadyFallback || r.SteadyStart.Sub(r.Start) != time.Second || r.SteadyEnd.Sub(r.Start) != 4*time.Second {
			t.Errorf("steady window: got [%s, %s) fallback %v %q, want [1s, 4s)", r.SteadyStart.Sub(r.Start), r.SteadyEnd.Sub(r.Start), r.SteadyFallback, r.SteadyFallbackReason)
		}
		if r.SteadyRequests != 600 || r.ThroughputRPS != 200 {
			t.Errorf("steady: got %d requests at %g rps, want 600 at 200", r.SteadyRequests, r.ThroughputRPS)
		}
		if got := r.End.Sub(r.Start); got != 4995*time.Millisecond+10*time.Millisecond {
			t.Errorf("end: got %s, want 5.005s (the last arrival at 4.995s plus 10ms)", got)
		}
		if len(progress) != 5 {
			t.Errorf("progress reports: got %d, want 5", len(progress))
		}
		for i, pr := range progress {
			// Two requests overlap; a third may be sent in the instant one ends.
			if pr.ActiveUsers < 1 || pr.ActiveUsers > 3 || pr.Requests < int64(i+1)*200-3 {
				t.Errorf("progress %d: got %+v, want 1 to 3 in flight and about 200 more requests a second", i, pr)
			}
		}
	})
}

func TestOpenRampingRateVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vt := newVirtualTarget(20 * time.Millisecond)
		p := openPhase(100, 300, 4*time.Second, 50)
		r, err := Run(t.Context(), "http://127.0.0.1:1", p, HTTPClient(&http.Client{Transport: vt}), nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		arr := allArrivals(vt, r.Start)
		if len(arr) != 800 || r.Requests != 800 || r.Open.Sent != 800 || r.Open.Dropped != 0 {
			t.Fatalf("got %d arrivals, %d requests, open %+v; want 800 sent", len(arr), r.Requests, *r.Open)
		}
		pacer := NewPacer(p)
		for i, a := range arr {
			if want, _ := pacer.Intended(int64(i)); a != want {
				t.Fatalf("arrival %d at %s, want %s", i, a, want)
			}
		}
		// The rate ramps: 125 arrivals in the first second, 275 in the last.
		first, last := 0, 0
		for _, a := range arr {
			if a < time.Second {
				first++
			}
			if a >= 3*time.Second {
				last++
			}
		}
		if first != 125 || last != 275 {
			t.Errorf("arrivals in the first and last second: got %d and %d, want 125 and 275", first, last)
		}
		if r.Open.IntendedRateRPS != 200 || r.Open.AchievedRateRPS != 200 {
			t.Errorf("rates: got %+v, want 200 and 200", *r.Open)
		}
	})
}

// stallTarget is a RoundTripper for synctest bubbles that answers rest-put
// requests after 1 ms, except that requests arriving in [from, until) are held
// until until: the server stalls.
type stallTarget struct {
	from, until time.Time
}

func (s *stallTarget) RoundTrip(req *http.Request) (*http.Response, error) {
	now := time.Now()
	var in struct{ Name, Flavor string }
	if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
		return nil, err
	}
	req.Body.Close()
	wait := time.Millisecond
	if !now.Before(s.from) && now.Before(s.until) {
		wait = s.until.Sub(now)
	}
	select {
	case <-time.After(wait):
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	body := fmt.Sprintf(`{"data":{"addOrUpdateDonut":{"id":%q,"name":%q,"flavor":%q}}}`, path.Base(req.URL.Path), in.Name, in.Flavor)
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    req,
	}, nil
}

func TestOpenStallDropsVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 100 requests/s for 5 s (one every 10 ms), at most 10 in flight. The
		// server stalls from 2 s to 4.105 s: the arrivals at 2.00..2.09 s take
		// the 10 slots and wait; the 201 arrivals at 2.10..4.10 s find no
		// slot and are dropped; sending resumes at 4.11 s.
		start := time.Now()
		st := &stallTarget{from: start.Add(2 * time.Second), until: start.Add(4105 * time.Millisecond)}
		p := openPhase(100, 0, 5*time.Second, 10)
		r, err := Run(t.Context(), "http://127.0.0.1:1", p, HTTPClient(&http.Client{Transport: st}), nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if !r.Start.Equal(start) {
			t.Fatalf("phase started at %s, want %s (no virtual time passes before it)", r.Start, start)
		}
		o := r.Open
		if o.Arrivals != 500 || o.Dropped != 201 || o.Sent != 299 || r.Requests != 299 || r.Errors != 0 {
			t.Errorf("got %d arrivals, %d dropped, %d sent, %d requests, %d errors; want 500, 201, 299, 299, 0",
				o.Arrivals, o.Dropped, o.Sent, r.Requests, r.Errors)
		}
		if o.Late != 0 || o.MaxLatenessMs != 0 {
			t.Errorf("late: got %d, max %g ms; want none in virtual time", o.Late, o.MaxLatenessMs)
		}
		if o.IntendedRateRPS != 100 || o.AchievedRateRPS != 299.0/5 {
			t.Errorf("rates: got intended %g achieved %g, want 100 and %g", o.IntendedRateRPS, o.AchievedRateRPS, 299.0/5)
		}
		// The 10 stalled requests took 2.015 s (sent at 2.09 s) to 2.105 s
		// (sent at 2.00 s) from their intended time, which was also their send
		// time; the other 289 took 1 ms. They are the top 3.3 %, so p99 is one of them.
		h := hdrhistogram.Import(r.Operations[0].Histogram)
		if got := h.TotalCount(); got != 299 {
			t.Errorf("latency histogram holds %d values, want 299", got)
		}
		for name, l := range map[string]Latency{"latency": r.LatencyMs, "service": o.ServiceMs} {
			if l.P99 < 2000 || l.Max < 2104 || l.Max > 2107 || l.P50 > 1.01 {
				t.Errorf("%s: got %+v, want p50 1 ms, p99 >= 2 s, max 2.105 s", name, l)
			}
		}
		if got := hdrhistogram.Import(o.ServiceHistogram).TotalCount(); got != 299 {
			t.Errorf("service histogram holds %d values, want 299", got)
		}
	})
}

func TestOpenAbortVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vt := newVirtualTarget(50 * time.Millisecond)
		p := openPhase(100, 0, 10*time.Second, 20)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		time.AfterFunc(2005*time.Millisecond, cancel)
		r, err := Run(ctx, "http://127.0.0.1:1", p, HTTPClient(&http.Client{Transport: vt}), nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		// Arrivals at 0, 10, ..., 2000 ms: 201, each finishing 50 ms later.
		if !r.Aborted || r.Open.Arrivals != 201 || r.Requests != 201 || !r.SteadyFallback {
			t.Errorf("got aborted %v, %d arrivals, %d requests, fallback %v; want an aborted run of 201 with a fallback window",
				r.Aborted, r.Open.Arrivals, r.Requests, r.SteadyFallback)
		}
		if got := r.End.Sub(r.Start); got != 2050*time.Millisecond {
			t.Errorf("ended after %s, want 2.05s (requests in flight finish)", got)
		}
		if want := 201 / 2.005; math.Abs(r.Open.AchievedRateRPS-want) > 1e-9 {
			t.Errorf("achieved rate: got %g, want %g over the 2.005 s run", r.Open.AchievedRateRPS, want)
		}
	})
}

func TestWeightedPicker(t *testing.T) {
	groups := []UserGroup{{Weight: 3}, {Weight: 0}, {Weight: 1}}
	a := newWeightedPicker(groups, rand.New(rand.NewPCG(5, openStream)))
	b := newWeightedPicker(groups, rand.New(rand.NewPCG(5, openStream)))
	counts := make([]int, 3)
	const n = 50_000
	for range n {
		x, y := a.pick(), b.pick()
		if x != y {
			t.Fatalf("same seed: got %d and %d, want the same choices", x, y)
		}
		counts[x]++
	}
	// Weights 3:1:1 (0 counts as 1).
	for i, want := range []float64{0.6, 0.2, 0.2} {
		if got := float64(counts[i]) / n; got < want-0.01 || got > want+0.01 {
			t.Errorf("group %d: got share %.3f, want %.1f", i, got, want)
		}
	}
}

func TestOpenLoopback(t *testing.T) {
	fake := newFakeTarget(50)
	srv := httptest.NewServer(fake.handler())
	defer srv.Close()
	p := Phase{
		Name: "open loopback", Arm: "graphql", Model: Open,
		Groups:         []UserGroup{{Operation: GraphQLQuery, Weight: 3}, {Operation: GraphQLMutation, Weight: 1}},
		Duration:       time.Second,
		Rate:           200,
		MaxInFlight:    50,
		RequestTimeout: 5 * time.Second,
		Operations:     donutOps(50),
		Seed:           11,
	}
	var mu sync.Mutex
	var progress []Progress
	r, err := Run(context.Background(), srv.URL, p, nil, func(pr Progress) {
		mu.Lock()
		progress = append(progress, pr)
		mu.Unlock()
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if r.Errors != 0 || r.Requests+r.Open.Dropped != 200 || r.Open.Arrivals != 200 {
		t.Fatalf("got %d requests, %d dropped, %d errors %v; want 200 arrivals without errors", r.Requests, r.Open.Dropped, r.Errors, r.ErrorExamples)
	}
	// The operations follow the weights, chosen from the seed.
	picker := newWeightedPicker(p.Groups, rand.New(rand.NewPCG(p.Seed, openStream)))
	want := make([]int64, 2)
	for range 200 {
		want[picker.pick()]++
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	for i, g := range p.Groups {
		got := r.Operations[i].Requests
		if int64(fake.counts[g.Operation]) != got || (r.Open.Dropped == 0 && got != want[i]) {
			t.Errorf("%s: got %d requests (server saw %d), want %d", g.Operation, got, fake.counts[g.Operation], want[i])
		}
	}
	if r.Open.LateThresholdMs != 1 || r.Open.ServiceMs.Max <= 0 || r.LatencyMs.Max < r.Open.ServiceMs.Max {
		t.Errorf("open figures: got %+v, latency %+v; want latency from the intended time >= service time", *r.Open, r.LatencyMs)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"model":"open"`, `"intended_rate_rps"`, `"achieved_rate_rps"`, `"dropped"`, `"late"`, `"max_lateness_ms"`, `"service_ms"`, `"closed_model":false`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("result JSON lacks %s", key)
		}
	}
	if strings.Contains(string(b), `"max_load"`) {
		t.Errorf("open result JSON has max_load: %s", b)
	}
}

func TestOpenLatenessVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A request sent 5 ms after its intended time, served in 10 ms: its
		// latency counts from the intended time (15 ms), its service time
		// from the send (10 ms), and it is late.
		p := openPhase(1, 0, time.Second, 1)
		base, err := parseTarget("http://127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		e, err := newEngine(p, HTTPClient(&http.Client{Transport: newVirtualTarget(10 * time.Millisecond)}), base)
		if err != nil {
			t.Fatal(err)
		}
		e.open = newOpenStats(p.Duration, 0, 0)
		e.start = time.Now()
		slot := &openSlot{users: make([]*user, 1), iters: make([]int, 1)}
		time.Sleep(5 * time.Millisecond)
		e.sendOpen(t.Context(), slot, 0, e.start)
		time.Sleep(time.Millisecond)
		e.sendOpen(t.Context(), slot, 0, e.start.Add(16*time.Millisecond)) // on time
		if got := e.ops[0].settle().Max(); got < 15000 || got > 15010 {
			t.Errorf("latency from the intended time: got max %d µs, want 15000", got)
		}
		if got := e.open.service.Max(); got < 10000 || got > 10010 {
			t.Errorf("service time: got max %d µs, want 10000", got)
		}
		if e.open.sent != 2 || e.open.late != 1 || e.open.maxLate != 5*time.Millisecond {
			t.Errorf("got %d sent, %d late, max lateness %s; want 2, 1, 5ms", e.open.sent, e.open.late, e.open.maxLate)
		}
	})
}
