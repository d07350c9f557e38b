package workloads

import (
	"strings"
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	ms := time.Millisecond
	all := Failure{Window: 3 * time.Second, MaxErrorRatio: 0.01, MaxP99: 500 * ms, MaxConnectionErrors: 5, MinRequests: 100}
	tests := []struct {
		name       string
		w          WindowStats
		f          Failure
		wantReason string
		wantDetail []string // substrings of the detail
	}{
		{"healthy", WindowStats{Requests: 1000, Errors: 10, ConnectionErrors: 5, P99: 500 * ms, Seconds: 3}, all, "", nil},
		{"error ratio", WindowStats{Requests: 1000, Errors: 11, P99: 10 * ms, Seconds: 3}, all, ReasonErrorRatio,
			[]string{"error ratio 0.011 (11 of 1000 requests) above the limit 0.01", "3s window"}},
		{"p99", WindowStats{Requests: 1000, P99: 501 * ms, Seconds: 3}, all, ReasonP99Latency,
			[]string{"p99 latency 501ms above the limit 500ms"}},
		{"connection errors", WindowStats{Requests: 1000, Errors: 6, ConnectionErrors: 6, Seconds: 3},
			Failure{MaxConnectionErrors: 5}, ReasonConnectionErrors, []string{"6 connection errors (refused or reset) above the limit 5"}},
		{"several rules: the first names the reason, the detail lists all",
			WindowStats{Requests: 1000, Errors: 600, ConnectionErrors: 600, P99: time.Second, Seconds: 2}, all, ReasonErrorRatio,
			[]string{"error ratio 0.6", "p99 latency 1s", "600 connection errors", "2s window"}},
		{"p99 before connection errors", WindowStats{Requests: 1000, Errors: 6, ConnectionErrors: 6, P99: time.Second, Seconds: 3},
			Failure{MaxP99: 500 * ms, MaxConnectionErrors: 5}, ReasonP99Latency, []string{"p99", "connection errors"}},
		{"below min requests", WindowStats{Requests: 99, Errors: 99, ConnectionErrors: 99, P99: time.Minute, Seconds: 3}, all, "", nil},
		{"exactly min requests", WindowStats{Requests: 100, Errors: 2, Seconds: 3}, all, ReasonErrorRatio, []string{"0.02"}},
		{"no rules enabled", WindowStats{Requests: 1000, Errors: 1000, ConnectionErrors: 1000, P99: time.Minute, Seconds: 3},
			Failure{Window: time.Second}, "", nil},
		{"error ratio disabled", WindowStats{Requests: 1000, Errors: 1000, Seconds: 3}, Failure{MaxP99: ms}, "", nil},
		{"p99 disabled", WindowStats{Requests: 1000, P99: time.Minute, Seconds: 3}, Failure{MaxErrorRatio: 0.5}, "", nil},
		{"connection errors disabled", WindowStats{Requests: 1000, Errors: 5, ConnectionErrors: 5, Seconds: 3}, Failure{MaxErrorRatio: 0.5}, "", nil},
		{"no requests at all", WindowStats{Seconds: 3}, Failure{MaxErrorRatio: 0.01, MaxP99: ms, MaxConnectionErrors: 1}, "", nil},
		{"max error ratio 1 never trips", WindowStats{Requests: 10, Errors: 10, Seconds: 1}, Failure{MaxErrorRatio: 1}, "", nil},
	}
	for _, tc := range tests {
		reason, detail, failed := Judge(tc.w, tc.f)
		if reason != tc.wantReason || failed != (tc.wantReason != "") {
			t.Errorf("%s: got reason %q failed %v, want %q %v", tc.name, reason, failed, tc.wantReason, tc.wantReason != "")
		}
		if !failed && detail != "" {
			t.Errorf("%s: got detail %q without a failure, want none", tc.name, detail)
		}
		for _, d := range tc.wantDetail {
			if !strings.Contains(detail, d) {
				t.Errorf("%s: detail %q lacks %q", tc.name, detail, d)
			}
		}
	}
}

func TestRampUsers(t *testing.T) {
	seed := Ramp{Start: 20, Step: 20, Every: time.Second, Max: 1000}
	f := func(r Ramp, at time.Duration, want int) {
		t.Helper()
		if got := RampUsers(r, at); got != want {
			t.Errorf("RampUsers(%+v, %s): got %d, want %d", r, at, got, want)
		}
	}
	f(seed, 0, 20)
	f(seed, 999*time.Millisecond, 20)
	f(seed, time.Second, 40)
	f(seed, 10500*time.Millisecond, 220)
	f(seed, 49*time.Second, 1000)
	f(seed, 48*time.Second, 980)
	f(seed, time.Hour, 1000)
	f(seed, -time.Second, 20)
	f(Ramp{Start: 5}, time.Hour, 5)                                 // no step
	f(Ramp{Start: 50, Step: 1, Every: time.Second, Max: 10}, 0, 10) // start above the cap
	f(Ramp{Step: 3, Every: time.Millisecond}, 2*time.Millisecond, 6)
	f(Ramp{Step: MaxUsers, Every: 1}, MaxDuration, MaxUsers) // no overflow, capped at MaxUsers
	f(Ramp{Step: 1, Every: 1}, time.Duration(1<<63-1), MaxUsers)
	if got := rampCap(Ramp{}); got != MaxUsers {
		t.Errorf("rampCap without max: got %d, want %d", got, MaxUsers)
	}
}

func TestLoadWindow(t *testing.T) {
	w := newLoadWindow(3 * time.Second)
	// Bucket b gets b+1 requests: b successes of b*10 ms and one failure,
	// a connection reset on odd buckets.
	for b := range int64(10) {
		at := time.Duration(b)*time.Second + 500*time.Millisecond
		for i := range b {
			w.add(at, "", time.Duration(b*10+i%2)*time.Millisecond)
		}
		class := "http_503"
		if b%2 == 1 {
			class = ClassConnectionReset
		}
		w.add(at, class, 0)
	}
	f := func(b int64, want WindowStats) {
		t.Helper()
		got, ok := w.stats(b)
		if !ok || got.Requests != want.Requests || got.Errors != want.Errors || got.ConnectionErrors != want.ConnectionErrors || got.Seconds != want.Seconds {
			t.Errorf("stats(%d): got %+v %v, want %+v", b, got, ok, want)
		}
		// 2 significant figures: within 1 % of the largest latency in the window.
		if lo, hi := want.P99, want.P99+want.P99/100+time.Millisecond; got.P99 < lo || got.P99 > hi {
			t.Errorf("stats(%d) p99: got %s, want in [%s, %s]", b, got.P99, lo, hi)
		}
	}
	// Window ending with bucket 9: buckets 7, 8, 9 hold 8+9+10 requests, 3 errors, 2 resets (7, 9).
	f(9, WindowStats{Requests: 27, Errors: 3, ConnectionErrors: 2, P99: 90 * time.Millisecond, Seconds: 3})
	f(8, WindowStats{Requests: 24, Errors: 3, ConnectionErrors: 1, P99: 80 * time.Millisecond, Seconds: 3})
	if b := w.bucket(9); b.Requests != 10 || b.Errors != 1 || b.ConnectionErrors != 1 || b.RPS() != 10 || b.ErrorRatio() != 0.1 {
		t.Errorf("bucket 9: got %+v, want 10 requests, 1 connection error", b)
	}
	// Buckets older than the ring are lost; a window reaching them is refused.
	if _, ok := w.stats(4); ok {
		t.Errorf("stats(4): got ok, want the window refused (ring holds buckets 3..9 only partly)")
	}
	// Quiet buckets after a gap read as empty, not as stale data.
	if got, ok := w.stats(30); !ok || got.Requests != 0 || got.P99 != 0 {
		t.Errorf("stats(30) after a gap: got %+v %v, want an empty window", got, ok)
	}
	// At the phase start a window is shorter.
	w2 := newLoadWindow(3 * time.Second)
	w2.add(0, "", time.Millisecond)
	if got, ok := w2.stats(0); !ok || got.Seconds != 1 || got.Requests != 1 {
		t.Errorf("first bucket: got %+v %v, want 1 request over 1 s", got, ok)
	}
}

func TestTimelineBounded(t *testing.T) {
	var m maxLoadState
	for i := range MaxTimelinePoints + 5 {
		m.addPoint(TimelinePoint{TSeconds: float64(i + 1)})
	}
	got := m.orderedTimeline()
	if len(got) != MaxTimelinePoints || m.res.TimelineDropped != 5 {
		t.Fatalf("got %d points, %d dropped; want %d and 5", len(got), m.res.TimelineDropped, MaxTimelinePoints)
	}
	for i, p := range got {
		if want := float64(i + 6); p.TSeconds != want {
			t.Fatalf("point %d at %gs, want %gs (oldest first, the earliest dropped)", i, p.TSeconds, want)
		}
	}
}

// TestMaxLoadJudgesFullWindowsOnly: in a max-load phase's first seconds,
// before one failure.window has passed, a window is neither judged nor a
// peak: a 3 s p99 rule does not trip on one second of start-up latency,
// and the peak (the resources' window) is never shorter than the rule's.
func TestMaxLoadJudgesFullWindowsOnly(t *testing.T) {
	f := Failure{Window: 3 * time.Second, MaxP99: 20 * time.Millisecond, MinRequests: 100}
	slow := func(secs float64) WindowStats {
		return WindowStats{Requests: 500, P99: time.Second, Seconds: secs}
	}
	var m maxLoadState
	start := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for i, secs := range []float64{1, 2} {
		m.judge(slow(secs), f, true, time.Duration(i+1)*time.Second, never, 20*(i+1), start, 400)
		if m.res.Failed || m.havePeak {
			t.Fatalf("a %gs window of a 3s rule: failed %v, peak %v: want neither", secs, m.res.Failed, m.havePeak)
		}
	}
	m.judge(WindowStats{Requests: 900, P99: time.Millisecond, Seconds: 3}, f, true, 3*time.Second, never, 60, start, 400)
	if m.res.Failed || !m.havePeak || m.peak.Seconds != 3 {
		t.Fatalf("a full healthy window: failed %v, peak %+v: want the peak, 3s long", m.res.Failed, m.peak)
	}
	m.judge(slow(3), f, true, 4*time.Second, never, 80, start, 400)
	if !m.res.Failed || m.res.UsersAtFailure != 80 || m.peak.Seconds != 3 {
		t.Errorf("a full slow window: failed %v at %d users, peak %gs: want the failure at 80 users and the 3s peak kept", m.res.Failed, m.res.UsersAtFailure, m.peak.Seconds)
	}
}
