package workloads

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"path"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// virtualTarget is an in-memory http.RoundTripper for synctest bubbles (real
// sockets do not belong in them). It answers rest-put requests after a fixed
// service time of virtual time and records when each writer's requests
// arrived and completed.
type virtualTarget struct {
	service time.Duration

	mu          sync.Mutex
	arrivals    map[string][]time.Time
	completions map[string][]time.Time
}

func (v *virtualTarget) RoundTrip(req *http.Request) (*http.Response, error) {
	arrived := time.Now()
	id := path.Base(req.URL.Path)
	var in struct{ Name, Flavor string }
	if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
		return nil, err
	}
	req.Body.Close()
	select {
	case <-time.After(v.service):
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	body := fmt.Sprintf(`{"data":{"addOrUpdateDonut":{"id":%q,"name":%q,"flavor":%q}}}`, id, in.Name, in.Flavor)
	v.mu.Lock()
	v.arrivals[id] = append(v.arrivals[id], arrived)
	v.completions[id] = append(v.completions[id], time.Now())
	v.mu.Unlock()
	return &http.Response{
		StatusCode:    http.StatusOK,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

func newVirtualTarget(service time.Duration) *virtualTarget {
	return &virtualTarget{service: service, arrivals: map[string][]time.Time{}, completions: map[string][]time.Time{}}
}

func TestRunVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const users = 8
		vt := newVirtualTarget(100 * time.Millisecond)
		p := Phase{
			Name:           "virtual",
			Arm:            "rest",
			Groups:         []UserGroup{{Operation: RESTPut, Users: users, Iterations: 100}},
			Think:          Think{Min: 10 * time.Millisecond, Max: 90 * time.Millisecond},
			RampUp:         7 * time.Second,
			TrimHead:       500 * time.Millisecond,
			TrimTail:       700 * time.Millisecond,
			RequestTimeout: time.Second,
			Operations:     donutOps(50),
			Seed:           7,
		}
		var progress []Progress
		r, err := Run(t.Context(), "http://127.0.0.1:1", p, HTTPClient(&http.Client{Transport: vt}), func(pr Progress) {
			progress = append(progress, pr) // called from one goroutine only
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if r.Requests != users*100 || r.Errors != 0 {
			t.Fatalf("got %d requests %d errors (%v), want %d and 0", r.Requests, r.Errors, r.ErrorExamples, users*100)
		}

		// Ramp-up: user k's first request arrives exactly at k * 7s / 8 (plus its first think).
		vt.mu.Lock()
		defer vt.mu.Unlock()
		lastStart := time.Duration(users-1) * 875 * time.Millisecond
		firstFinish, last := time.Duration(math.MaxInt64), time.Duration(0)
		for k := range users {
			id := writerID(k)
			arr := vt.arrivals[id]
			if len(arr) != 100 {
				t.Fatalf("user %d: got %d requests, want 100", k, len(arr))
			}
			start := time.Duration(k) * 875 * time.Millisecond
			if got := arr[0].Sub(r.Start); got < start+p.Think.Min || got > start+p.Think.Max {
				t.Errorf("user %d: first request at %s, want in [%s, %s]", k, got, start+p.Think.Min, start+p.Think.Max)
			}
			for i := 1; i < len(arr); i++ {
				gap := arr[i].Sub(arr[i-1])
				if lo, hi := vt.service+p.Think.Min, vt.service+p.Think.Max; gap < lo || gap > hi {
					t.Errorf("user %d: gap %d is %s, want in [%s, %s]", k, i, gap, lo, hi)
				}
			}
			done := vt.completions[id][99].Sub(r.Start)
			firstFinish, last = min(firstFinish, done), max(last, done)
		}
		if got := r.End.Sub(r.Start); got != last {
			t.Errorf("phase duration: got %s, want %s", got, last)
		}

		// Steady window: count completions by brute force from the target's records.
		ws := lastStart + p.TrimHead
		we := (firstFinish - p.TrimTail).Truncate(SteadyBucket)
		var want int64
		for _, cs := range vt.completions {
			for _, c := range cs {
				if at := c.Sub(r.Start); at >= ws && at < we {
					want++
				}
			}
		}
		if r.SteadyFallback {
			t.Fatalf("steady fallback: %s", r.SteadyFallbackReason)
		}
		if got := r.SteadyStart.Sub(r.Start); got != ws {
			t.Errorf("steady start: got %s, want %s", got, ws)
		}
		if got := r.SteadyEnd.Sub(r.Start); got != we {
			t.Errorf("steady end: got %s, want %s", got, we)
		}
		if r.SteadyRequests != want || want == 0 {
			t.Errorf("steady requests: got %d, want %d (non-zero)", r.SteadyRequests, want)
		}
		if wantRPS := float64(want) / (we - ws).Seconds(); math.Abs(r.ThroughputRPS-wantRPS) > 1e-9 {
			t.Errorf("throughput: got %f, want %f", r.ThroughputRPS, wantRPS)
		}
		// Service time is exactly 100 ms of virtual time.
		if r.LatencyMs.P50 < 99.9 || r.LatencyMs.Max > 100.1 {
			t.Errorf("latency: got %+v, want 100 ms", r.LatencyMs)
		}

		// Progress ticks every virtual second.
		if n := int(r.End.Sub(r.Start) / time.Second); len(progress) < n-1 || len(progress) > n {
			t.Errorf("progress reports: got %d, want %d or %d", len(progress), n-1, n)
		}
		for i, pr := range progress {
			if want := float64(i + 1); pr.ElapsedSeconds != want {
				t.Errorf("progress %d at %fs, want %fs", i, pr.ElapsedSeconds, want)
			}
		}
		if len(progress) > 7 {
			// Users start at 0, 0.875 s, 1.75 s, ...: two are active at 1 s and all eight at 7 s.
			if progress[0].ActiveUsers != 2 || progress[6].ActiveUsers != users {
				t.Errorf("active users at 1 s and 7 s: got %d and %d, want 2 and %d", progress[0].ActiveUsers, progress[6].ActiveUsers, users)
			}
			if progress[6].RPS <= 0 || progress[6].Requests <= progress[5].Requests {
				t.Errorf("progress at 7 s does not advance: %+v after %+v", progress[6], progress[5])
			}
		}
	})
}

func TestRunVirtualAbortDuringRamp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		vt := newVirtualTarget(10 * time.Millisecond)
		p := Phase{
			Name:           "abort",
			Arm:            "rest",
			Groups:         []UserGroup{{Operation: RESTPut, Users: 10, Iterations: 1000}},
			RampUp:         10 * time.Second,
			RequestTimeout: time.Second,
			Operations:     donutOps(50),
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		time.AfterFunc(3055*time.Millisecond, cancel) // users 0..3 have started, each mid-request
		r, err := Run(ctx, "http://127.0.0.1:1", p, HTTPClient(&http.Client{Transport: vt}), nil)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if !r.Aborted || !r.SteadyFallback || !strings.Contains(r.SteadyFallbackReason, "not every user started") {
			t.Errorf("got aborted %v fallback %v %q, want an aborted fallback", r.Aborted, r.SteadyFallback, r.SteadyFallbackReason)
		}
		if got := r.End.Sub(r.Start); got != 3060*time.Millisecond {
			t.Errorf("ended after %s, want 3.06s (requests in flight finish, no new ones start)", got)
		}
		vt.mu.Lock()
		defer vt.mu.Unlock()
		if len(vt.arrivals) != 4 {
			t.Errorf("users that sent requests: got %d, want 4", len(vt.arrivals))
		}
		if r.SteadyRequests != r.Requests || r.Errors != 0 {
			t.Errorf("fallback counts: got %d steady of %d, %d errors; want all, 0 errors", r.SteadyRequests, r.Requests, r.Errors)
		}
	})
}
