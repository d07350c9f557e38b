package workloads

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// completion is one recorded request of a window test.
type completion struct {
	at      time.Duration
	class   string
	latency time.Duration
}

// windowsOf records cs in a recorder of shard and returns its windows up to end.
func windowsOf(t *testing.T, shard int, cs []completion, end time.Duration) []SecondWindow {
	t.Helper()
	r := newSecondRecorder(shard)
	for _, c := range cs {
		if c.class == ClassDropped {
			r.drop(c.at)
		} else {
			r.add(c.at, c.class, c.latency)
		}
	}
	var out []SecondWindow
	ps := r.take(int64(end / time.Second))
	for i, p := range ps {
		w, err := p.encode()
		if err != nil {
			t.Fatal(err)
		}
		w.Final = i == len(ps)-1
		out = append(out, w)
	}
	return out
}

// TestWindowMergeEqualsOneDriver is the property of the merge: the
// completions of one driver, dealt at random to n shards, give merged
// seconds equal to that driver's own seconds: the same counts by class and
// the same histogram (every bucket), for many random draws; and the seconds
// complete in order whatever order the shards' windows interleave in.
func TestWindowMergeEqualsOneDriver(t *testing.T) {
	classes := []string{"", "", "", "", ClassTimeout, ClassConnectionRefused, ClassDropped}
	for draw := range 50 {
		rng := rand.New(rand.NewPCG(uint64(draw), 9))
		n := 1 + rng.IntN(5)
		end := time.Duration(1+rng.IntN(6))*time.Second + time.Duration(rng.IntN(1000))*time.Millisecond
		var all []completion
		shards := make([][]completion, n)
		for range rng.IntN(3000) {
			c := completion{at: time.Duration(rng.Int64N(int64(end))), class: classes[rng.IntN(len(classes))], latency: time.Duration(1 + rng.Int64N(int64(2*time.Second)))}
			all = append(all, c)
			i := rng.IntN(n)
			shards[i] = append(shards[i], c)
		}
		one := windowsOf(t, 0, all, end)
		streams := make([][]SecondWindow, n)
		for i := range n {
			streams[i] = windowsOf(t, i, shards[i], end)
		}
		// Interleave the shards' streams at random, each in its own order.
		m := NewWindowMerger(n)
		var merged []MergedWindow
		for left := true; left; {
			left = false
			i := rng.IntN(n)
			for k := range n {
				s := &streams[(i+k)%n]
				if len(*s) == 0 {
					continue
				}
				done, err := m.Add((*s)[0])
				if err != nil {
					t.Fatalf("draw %d: %v", draw, err)
				}
				*s = (*s)[1:]
				merged = append(merged, done...)
				left = true
				break
			}
		}
		if len(merged) != len(one) {
			t.Fatalf("draw %d: %d merged seconds, one driver %d", draw, len(merged), len(one))
		}
		for k, w := range one {
			mw := merged[k]
			h, err := decodeWindowHist(w.Histogram)
			if err != nil {
				t.Fatal(err)
			}
			if mw.Second != w.Second || mw.Requests != w.Requests || mw.Errors != w.Errors || mw.Dropped != w.Dropped ||
				mw.ErrorsByClass[ClassTimeout] != w.ErrorsByClass[ClassTimeout] || mw.ErrorsByClass[ClassConnectionRefused] != w.ErrorsByClass[ClassConnectionRefused] {
				t.Fatalf("draw %d second %d: merged %+v, one driver %+v", draw, k, mw, w)
			}
			if !mw.Hist.Equals(h) {
				t.Fatalf("draw %d second %d: merged histogram (%d values, p99 %d) differs from one driver's (%d, p99 %d)",
					draw, k, mw.Hist.TotalCount(), mw.Hist.ValueAtQuantile(99), h.TotalCount(), h.ValueAtQuantile(99))
			}
			if mw.Partial != (k == len(one)-1) {
				t.Errorf("draw %d second %d: partial %v, want only the last", draw, k, mw.Partial)
			}
		}
	}
}

// TestWindowMergerRefusesGapsAndDuplicates: a window whose Seq is not the
// shard's next (lost or doubled on the way), a second out of order, a
// window after the shard's last, and an unknown shard are refused, naming
// the shard and the Seq.
func TestWindowMergerRefusesGapsAndDuplicates(t *testing.T) {
	w := func(shard int, seq, second int64, final bool) SecondWindow {
		return SecondWindow{Shard: shard, Seq: seq, Second: second, Requests: 1, Final: final}
	}
	for _, tc := range []struct {
		name string
		in   []SecondWindow
		want string
	}{
		{"gap", []SecondWindow{w(1, 0, 0, false), w(1, 2, 2, false)}, "window of shard 1 seq 2 leaves a gap: seq 1 was expected next"},
		{"duplicate", []SecondWindow{w(0, 0, 0, false), w(0, 1, 1, false), w(0, 1, 1, false)}, "window of shard 0 seq 1 is a duplicate"},
		{"second skipped", []SecondWindow{w(0, 0, 0, false), w(0, 1, 3, false)}, "window of shard 0 seq 1 is of second 3, after second 0"},
		{"after final", []SecondWindow{w(1, 0, 0, true), w(1, 1, 1, false)}, "window of shard 1 seq 1 after the shard's last window"},
		{"unknown shard", []SecondWindow{w(2, 0, 0, false)}, "window of shard 2 seq 0: this phase has 2 shards"},
		{"bad histogram", []SecondWindow{{Shard: 0, Histogram: "not base64!"}}, "window of shard 0 seq 0: cannot decode its histogram"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewWindowMerger(2)
			var err error
			for _, in := range tc.in {
				if _, err = m.Add(in); err != nil {
					break
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestWindowMergerWaitsForEveryShard: a second completes only when every
// shard has sent it or ended; a shard that ended (Done) no longer holds
// the others' seconds back.
func TestWindowMergerWaitsForEveryShard(t *testing.T) {
	m := NewWindowMerger(2)
	if done, err := m.Add(SecondWindow{Shard: 0, Seq: 0, Second: 0, Requests: 3}); err != nil || len(done) != 0 {
		t.Fatalf("shard 0's second 0 alone: %v, %v; want nothing complete", done, err)
	}
	if done, _ := m.Add(SecondWindow{Shard: 0, Seq: 1, Second: 1, Requests: 4}); len(done) != 0 {
		t.Fatalf("shard 0 ahead: %v complete, want none", done)
	}
	done, _ := m.Add(SecondWindow{Shard: 1, Seq: 0, Second: 0, Requests: 5})
	if len(done) != 1 || done[0].Second != 0 || done[0].Requests != 8 {
		t.Fatalf("both shards' second 0: %+v, want second 0 with 8 requests", done)
	}
	done = m.Done(1)
	if len(done) != 1 || done[0].Second != 1 || done[0].Requests != 4 {
		t.Fatalf("shard 1 ended: %+v, want second 1 with shard 0's 4 requests", done)
	}
}

// shardSecond is a shard's window of second s with requests requests,
// errors errors of class, the successes at latency.
func shardSecond(t *testing.T, shard int, s int64, requests, errors int64, class string, latency time.Duration) SecondWindow {
	t.Helper()
	r := newSecondRecorder(shard)
	r.next, r.seq = s, s
	at := time.Duration(s)*time.Second + time.Millisecond
	for k := range requests {
		c := ""
		if k < errors {
			c = class
		}
		r.add(at, c, latency)
	}
	w, err := r.take(s)[0].encode()
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestGlobalJudgeTripsOnTheMergedLoad: the failure rules judge the whole
// load's seconds, not one shard's. Three shards each see 4 connection
// errors a second, 0.4 × the limit of 10: no shard's window trips the rule
// (Judge on each is false), but together 12 > 10 trip it at the first
// judged second, once, with the merged figures. Likewise for the error
// ratio through min_requests: each shard's 40 requests a second (half of
// them failed) are too few to judge (min_requests 100), the 120 of all
// three are judged and trip max_error_ratio 0.2. Seconds after the
// decision are not judged again.
func TestGlobalJudgeTripsOnTheMergedLoad(t *testing.T) {
	for _, tc := range []struct {
		name   string
		f      Failure
		errs   int64
		class  string
		reason string
	}{
		{"connection errors", Failure{Window: time.Second, MaxConnectionErrors: 10}, 4, ClassConnectionRefused, ReasonConnectionErrors},
		{"error ratio", Failure{Window: time.Second, MaxErrorRatio: 0.2, MinRequests: 100}, 20, ClassTimeout, ReasonErrorRatio},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := rampPhase(Ramp{Start: 3, Step: 3, Every: time.Second, Max: 30}, tc.f, time.Minute)
			pw := NewPhaseWindows(p, 3)
			// Second 0 is clean; from second 1 every shard sees tc.errs failures of 40.
			for s := range int64(4) {
				for i := range 3 {
					errs := int64(0)
					if s >= 1 {
						errs = tc.errs
					}
					w := shardSecond(t, i, s, 40, errs, tc.class, 2*time.Millisecond)
					shardOnly := NewMaxLoadJudge(p)
					done, _ := NewWindowMerger(1).Add(SecondWindow{Shard: 0, Second: 0, Requests: w.Requests, Errors: w.Errors, ErrorsByClass: w.ErrorsByClass, Histogram: w.Histogram})
					if _, _, failed := Judge(done[0].Stats(), tc.f); failed || shardOnly.Close(done[0]) {
						t.Fatalf("shard %d second %d alone (%+v) trips the rule: the case does not test the merge", i, s, done[0].Stats())
					}
					stop, err := pw.Add(w)
					if err != nil {
						t.Fatal(err)
					}
					if want := s == 1 && i == 2; stop != want {
						t.Fatalf("second %d shard %d: stop %v, want %v", s, i, stop, want)
					}
				}
			}
			var r Result
			r.Start = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			shards := []Result{{MaxLoad: &MaxLoadResult{}}, {MaxLoad: &MaxLoadResult{}}, {MaxLoad: &MaxLoadResult{}}}
			pw.Judge().finish(&r, shards)
			ml := r.MaxLoad
			if ml.Reason != tc.reason || !ml.Failed || ml.FailureWindow == nil || ml.FailureWindow.Requests != 120 || ml.FailureWindow.Errors != 3*tc.errs || ml.UsersAtFailure != 0 {
				t.Fatalf("max load %+v (window %+v): want %s on the merged 120 requests", ml, ml.FailureWindow, tc.reason)
			}
			if !ml.FailureAt.Equal(r.Start.Add(2*time.Second)) || len(ml.Timeline) != 2 || ml.Timeline[1].RPS != 120 {
				t.Errorf("failure at %s, timeline %+v: want at the end of second 1, two merged points of 120 requests/s", ml.FailureAt, ml.Timeline)
			}
			if r.SteadyRequests != 120 || !r.SteadyEnd.Equal(r.Start.Add(time.Second)) || r.ThroughputRPS != 120 {
				t.Errorf("peak window: %d requests to %s at %g/s, want second 0's 120", r.SteadyRequests, r.SteadyEnd, r.ThroughputRPS)
			}
		})
	}
}

// TestRampCapAtMatchesRampUsers: the judge's cap instant is the first step
// at which RampUsers reaches the cap.
func TestRampCapAtMatchesRampUsers(t *testing.T) {
	for _, r := range []Ramp{
		{Start: 2, Step: 4, Every: 500 * time.Millisecond, Max: 17},
		{Start: 1, Step: 1, Every: time.Second, Max: 10},
		{Start: 10, Step: 1, Every: time.Second, Max: 10},
		{Start: 3, Step: 5, Every: 2 * time.Second, Max: 3},
	} {
		at := rampCapAt(r)
		if RampUsers(r, at) != rampCap(r) || (at > 0 && RampUsers(r, at-r.Every) >= rampCap(r)) {
			t.Errorf("%+v: cap at %s (%d users, %d a step before), want the first step at %d", r, at, RampUsers(r, at), RampUsers(r, at-r.Every), rampCap(r))
		}
	}
	if at := rampCapAt(Ramp{Start: 1, Step: 0, Every: time.Second, Max: 5}); at != never {
		t.Errorf("a ramp without steps reaches its cap at %s, want never", at)
	}
}

// runWindowShards runs p as testShards shards with windows in virtual
// time, all starting at one StartAt, and returns their results and each
// shard's windows in the order sent.
func runWindowShards(t *testing.T, p Phase, service time.Duration) ([]Result, [][]SecondWindow) {
	t.Helper()
	results := make([]Result, testShards)
	windows := make([][]SecondWindow, testShards)
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeTarget(50)
		p.StartAt = time.Now().Add(time.Second)
		errs := make([]error, testShards)
		var wg sync.WaitGroup
		for i := range testShards {
			ps := p
			ps.Shard = Shard{Index: i, Count: testShards}
			client := HTTPClient(&http.Client{Transport: handlerTransport{h: fake.handler(), service: service}})
			ep, err := BaseEndpoints("http://127.0.0.1:1")
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				results[i], errs[i] = RunWindows(t.Context(), ep, ps, client, nil, func(w SecondWindow) { windows[i] = append(windows[i], w) })
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("shard %d: %v", i, err)
			}
		}
	})
	return results, windows
}

// checkStreams checks each shard's windows: Seq and Second 0, 1, 2, ...
// with no gap, the last one Final and of the second the shard ended in,
// their requests and errors adding up to the shard's result's; and feeds
// them to pw in one interleaving, returning whether pw decided a stop.
func checkStreams(t *testing.T, results []Result, windows [][]SecondWindow, pw *PhaseWindows) (stopped bool) {
	t.Helper()
	for i, ws := range windows {
		var req, errs int64
		for k, w := range ws {
			if w.Shard != i || w.Seq != int64(k) || w.Second != int64(k) || w.Final != (k == len(ws)-1) {
				t.Fatalf("shard %d window %d: %+v, want seq and second %d, final only last", i, k, w, k)
			}
			req += w.Requests
			errs += w.Errors
		}
		r := results[i]
		if last := int64(r.End.Sub(r.Start) / time.Second); len(ws) == 0 || ws[len(ws)-1].Second != last {
			t.Errorf("shard %d: %d windows, its end is in second %d", i, len(ws), last)
		}
		if req != r.Requests || errs != r.Errors || !r.Start.Equal(results[0].Start) {
			t.Errorf("shard %d: windows count %d requests %d errors, result %d, %d; start %s, shard 0's %s", i, req, errs, r.Requests, r.Errors, r.Start, results[0].Start)
		}
	}
	for k := 0; ; k++ {
		more := false
		for i, ws := range windows {
			if k < len(ws) {
				more = true
				stop, err := pw.Add(ws[k])
				if err != nil {
					t.Fatalf("shard %d: %v", i, err)
				}
				stopped = stopped || stop
			}
		}
		if !more {
			return stopped
		}
	}
}

// TestShardWindowsGiveExactSteadyCount runs a closed phase as three
// shards sending windows: each stream is whole and adds up to its shard's
// result, and the merged steady count is the exact sum of the merged
// seconds inside the steady window, which falls on whole seconds.
func TestShardWindowsGiveExactSteadyCount(t *testing.T) {
	p := testPhase(UserGroup{Operation: RESTGet, Users: 6, Iterations: 40})
	p.Think = Think{Min: 80 * time.Millisecond, Max: 120 * time.Millisecond}
	p.RampUp = 300 * time.Millisecond
	results, windows := runWindowShards(t, p, 2*time.Millisecond)
	pw := NewPhaseWindows(p, testShards)
	checkStreams(t, results, windows, pw)
	r, err := MergeShards(results, pw)
	if err != nil {
		t.Fatal(err)
	}
	from := r.SteadyStart.Sub(r.Start)
	to := r.SteadyEnd.Sub(r.Start)
	if r.SteadyFallback || from%time.Second != 0 || to%time.Second != 0 || to <= from {
		t.Fatalf("steady window %s to %s after the start (fallback %v: %s): want whole seconds", from, to, r.SteadyFallback, r.SteadyFallbackReason)
	}
	var want int64
	for _, ws := range windows {
		for _, w := range ws {
			if s := time.Duration(w.Second) * time.Second; s >= from && s < to {
				want += w.Requests
			}
		}
	}
	t.Logf("steady %s to %s: %d requests, %.1f/s; phase %d requests", from, to, r.SteadyRequests, r.ThroughputRPS, r.Requests)
	if r.SteadyRequests != want || want == 0 || r.Requests != 240 {
		t.Errorf("steady requests %d, the windows inside it count %d; phase %d, want 240", r.SteadyRequests, want, r.Requests)
	}
}

// TestShardWindowsRampingJudgedGlobally runs a ramping phase as three
// shards sending windows, with a p99 limit every request exceeds: the
// shards do not stop on it themselves (they run to the user cap), the
// merged windows trip it at the first judged second, and the merged
// result is the judge's.
func TestShardWindowsRampingJudgedGlobally(t *testing.T) {
	p := rampPhase(Ramp{Start: 3, Step: 3, Every: time.Second, Max: 6}, Failure{Window: time.Second, MaxP99: time.Millisecond}, 30*time.Second)
	p.Think = Think{Min: 50 * time.Millisecond, Max: 50 * time.Millisecond}
	results, windows := runWindowShards(t, p, 5*time.Millisecond)
	for i, r := range results {
		if r.MaxLoad == nil || r.MaxLoad.Reason != ReasonMaxUsers {
			t.Fatalf("shard %d: max load %+v, want it to run to the cap, judging no failure itself", i, r.MaxLoad)
		}
	}
	pw := NewPhaseWindows(p, testShards)
	if !checkStreams(t, results, windows, pw) {
		t.Fatal("the merged windows decided no stop")
	}
	r, err := MergeShards(results, pw)
	if err != nil {
		t.Fatal(err)
	}
	ml := r.MaxLoad
	if ml.Reason != ReasonP99Latency || !ml.FailureAt.Equal(r.Start.Add(time.Second)) || ml.UsersAtFailure != 3 || r.Aborted {
		t.Errorf("merged max load: %s at %s (%d users), aborted %v; want p99_latency at the end of second 0 with 3 users", ml.Reason, ml.FailureAt.Sub(r.Start), ml.UsersAtFailure, r.Aborted)
	}
}

// BenchmarkWindowMessage measures a window message's cost: encoding one
// second of n completions (latencies spread over 1 to 50 ms, 1 % failed)
// into its JSON line (the recording itself not timed), and the line's
// size (bytes/line).
func BenchmarkWindowMessage(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			r := newSecondRecorder(0)
			var size int
			for b.Loop() {
				b.StopTimer()
				for k := range n {
					class := ""
					if k%100 == 0 {
						class = ClassTimeout
					}
					r.add(time.Duration(r.next)*time.Second, class, time.Millisecond+time.Duration(rng.Int64N(int64(49*time.Millisecond))))
				}
				b.StartTimer()
				w, err := r.take(r.next)[0].encode()
				if err != nil {
					b.Fatal(err)
				}
				line, err := json.Marshal(Message{Version: MessageVersion, Type: MessageWindow, Window: &w})
				if err != nil {
					b.Fatal(err)
				}
				size = len(line) + 1
			}
			b.ReportMetric(float64(size), "bytes/line")
		})
	}
}
