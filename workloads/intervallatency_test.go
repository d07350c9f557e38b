package workloads

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// shiftingTarget is an in-memory target for synctest bubbles whose
// behaviour changes with the virtual time since start: each step, from its
// from offset on, answers after service, with status.
type shiftingTarget struct {
	start time.Time
	steps []targetStep

	mu sync.Mutex
	ok []time.Duration // completion times of the successful requests, since start
}

type targetStep struct {
	from    time.Duration
	service time.Duration
	status  int
}

// RoundTrip answers rest-put and graphql-mutation requests, echoing the
// donut written.
func (s *shiftingTarget) RoundTrip(req *http.Request) (*http.Response, error) {
	var in struct {
		Name, Flavor string
		Variables    struct {
			Donut struct{ ID, Name, Flavor string }
		}
	}
	if err := json.NewDecoder(req.Body).Decode(&in); err != nil {
		return nil, err
	}
	req.Body.Close()
	id, flavor := path.Base(req.URL.Path), in.Flavor
	if d := in.Variables.Donut; d.ID != "" {
		id, flavor = d.ID, d.Flavor
	}
	at := time.Since(s.start)
	step := s.steps[0]
	for _, st := range s.steps {
		if at >= st.from {
			step = st
		}
	}
	select {
	case <-time.After(step.service):
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	body := `{"error":"down"}`
	if step.status == http.StatusOK {
		body = fmt.Sprintf(`{"data":{"addOrUpdateDonut":{"id":%q,"name":"n","flavor":%q}}}`, id, flavor)
		s.mu.Lock()
		s.ok = append(s.ok, time.Since(s.start))
		s.mu.Unlock()
	}
	return &http.Response{
		StatusCode:    step.status,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// TestProgressIntervalLatency: each progress report carries the latency of
// the successful requests completed since the previous one, so a change in
// the target's service time shows in the report after it, and an interval
// in which every request failed carries no latency at all.
func TestProgressIntervalLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &shiftingTarget{start: time.Now(), steps: []targetStep{
			{0, 10 * time.Millisecond, http.StatusOK},
			{2 * time.Second, 40 * time.Millisecond, http.StatusOK},
			{4 * time.Second, 5 * time.Millisecond, http.StatusInternalServerError},
			{6 * time.Second, 10 * time.Millisecond, http.StatusOK},
		}}
		p := Phase{
			Name:           "shifting",
			Arm:            "rest",
			Groups:         []UserGroup{{Operation: RESTPut, Users: 3}, {Operation: GraphQLMutation, Users: 2}},
			Think:          Think{Min: 3 * time.Millisecond, Max: 3 * time.Millisecond},
			RequestTimeout: time.Second,
			Duration:       8500 * time.Millisecond,
			Operations:     donutOps(50),
		}
		var progress []Progress
		r, err := Run(t.Context(), "http://127.0.0.1:1", p, HTTPClient(&http.Client{Transport: st}), func(pr Progress) {
			progress = append(progress, pr) // called from one goroutine only
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if len(progress) != 8 {
			t.Fatalf("got %d progress reports, want 8", len(progress))
		}
		f := func(i int, lo, hi float64) {
			t.Helper()
			l := progress[i].IntervalLatency
			if l == nil {
				t.Errorf("report %d (%v s): no interval latency, want %g to %g ms", i, progress[i].ElapsedSeconds, lo, hi)
				return
			}
			for _, v := range []float64{l.P50Ms, l.P90Ms, l.P99Ms, l.MaxMs} {
				if v < lo || v > hi {
					t.Errorf("report %d (%v s): got %+v, want every figure in [%g, %g] ms", i, progress[i].ElapsedSeconds, *l, lo, hi)
					break
				}
			}
			if l.Count <= 0 || l.P50Ms > l.P90Ms || l.P90Ms > l.P99Ms || l.P99Ms > l.MaxMs {
				t.Errorf("report %d: got %+v, want a count and ordered percentiles", i, *l)
			}
		}
		// HDR buckets hold 3 significant figures: 10 ms reads as up to 10.01.
		f(0, 9.99, 10.01)                               // (0, 1 s]: 10 ms
		f(1, 9.99, 10.01)                               // (1, 2 s]: 10 ms
		f(3, 39.9, 40.1)                                // (3, 4 s]: every request sent after 2.96 s takes 40 ms
		f(7, 9.99, 10.01)                               // (7, 8 s]: 10 ms again
		f(2, 9.99, 40.1)                                // (2, 3 s]: both
		if l := progress[5].IntervalLatency; l != nil { // (5, 6 s]: every request failed
			t.Errorf("report 5: got %+v, want no interval latency when no request succeeded", *l)
		}

		// Every successful request is in exactly one interval: the counts
		// add up to the successes completed by the last report.
		last := time.Duration(progress[len(progress)-1].ElapsedSeconds * float64(time.Second))
		var sum int64
		for _, pr := range progress {
			if pr.IntervalLatency != nil {
				sum += pr.IntervalLatency.Count
			}
		}
		st.mu.Lock()
		var before, upTo int64
		for _, c := range st.ok {
			if c < last {
				before++
			}
			if c <= last {
				upTo++
			}
		}
		st.mu.Unlock()
		if sum < before || sum > upTo || sum == 0 {
			t.Errorf("interval counts add up to %d, want the %d to %d successes completed by the last report at %s", sum, before, upTo, last)
		}
		if r.Requests-r.Errors < sum {
			t.Errorf("interval counts add up to %d, more than the phase's %d successes", sum, r.Requests-r.Errors)
		}
		// The phase histograms are built from the intervals the reporter
		// took and the rest result took: each success is in them once.
		for _, op := range r.Operations {
			if got, want := hdrhistogram.Import(op.Histogram).TotalCount(), op.Requests-op.Errors; got != want {
				t.Errorf("%s: phase histogram holds %d latencies, want its %d successes", op.Operation, got, want)
			}
		}
	})
}

// TestPhaseHistogramFromIntervals: a group's phase histogram, folded from
// its interval histograms as the reporter reads them, is the histogram of
// every successful request's latency recorded directly, whether intervals
// were read many times, once or never (no progress reported); failures are
// counted, not recorded.
func TestPhaseHistogramFromIntervals(t *testing.T) {
	f := func(readEvery int) {
		t.Helper()
		base, err := url.Parse("http://127.0.0.1:1")
		if err != nil {
			t.Fatal(err)
		}
		e, err := newEngine(testPhase(UserGroup{Operation: RESTGet, Users: 1, Iterations: 1}), HTTPClient(http.DefaultClient), base)
		if err != nil {
			t.Fatal(err)
		}
		e.start = time.Now()
		want := hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)
		il := newIntervalReader(len(e.ops))
		var intervals int64
		const n = 5000
		for i := range n {
			latency := time.Duration(50+i*i%90_000) * time.Microsecond
			o := outcome{}
			if i%7 == 0 {
				o.class = ClassTimeout
			} else if err := want.RecordValue(clampMicros(latency)); err != nil {
				t.Fatal(err)
			}
			e.record(0, o, latency)
			if readEvery > 0 && (i+1)%readEvery == 0 {
				if l := il.read(e.ops); l != nil {
					intervals += l.Count
				}
			}
		}
		r := e.result(time.Now())
		got := hdrhistogram.Import(r.Operations[0].Histogram)
		if r.Requests != n || r.Errors != (n+6)/7 {
			t.Errorf("read every %d: got %d requests %d errors, want %d and %d", readEvery, r.Requests, r.Errors, n, (n+6)/7)
		}
		if !got.Equals(want) || !slices.Equal(got.Export().Counts, want.Export().Counts) {
			t.Errorf("read every %d: phase histogram of %d latencies differs from the %d recorded directly", readEvery, got.TotalCount(), want.TotalCount())
		}
		if r.LatencyMs != Summarize(want) {
			t.Errorf("read every %d: got latency %+v, want %+v", readEvery, r.LatencyMs, Summarize(want))
		}
		if readEvery > 0 && (intervals == 0 || intervals > want.TotalCount()) {
			t.Errorf("read every %d: intervals hold %d latencies, want some and at most %d", readEvery, intervals, want.TotalCount())
		}
	}
	f(0)    // never read: result settles every latency
	f(2500) // read once, half-way: result settles the rest
	f(100)  // read often
}
