package workloads

import (
	"fmt"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// SecondWindow is one sharded driver's figures of one second of its phase
// (a window message of the driver protocol): the requests that completed in
// second Second, [Second, Second+1) s after the phase start (start_at, which
// every shard of a phase shares), as counts and a delta HDR histogram. The
// orchestrator adds the shards' windows of a second into the second's
// figures (WindowMerger), exactly, since counts and histogram buckets add;
// this is what its global failure rules judge (MaxLoadJudge) and what it
// counts a steady window's requests from.
//
// A driver sends its windows in order, one per second from the phase start
// to the second of its end, with no second skipped (an empty one too), Seq
// 0, 1, 2, ...: a reader that sees a Seq other than the next has lost or
// doubled a line (a resumed log stream), which WindowMerger refuses.
type SecondWindow struct {
	// Shard is the sending driver's shard index.
	Shard int `json:"shard"`
	// Seq is this shard's message sequence number, from 0, one more on each window.
	Seq int64 `json:"seq"`
	// Second is the second's index from the phase start.
	Second int64 `json:"second"`
	// Requests is the number of requests that completed in the second (dropped arrivals excluded).
	Requests int64 `json:"requests"`
	// Errors is the number of those that failed.
	Errors int64 `json:"errors"`
	// ErrorsByClass counts the failures by class (ClassTimeout, ...).
	ErrorsByClass map[string]int64 `json:"errors_by_class,omitempty"`
	// Dropped is the number of open-model arrivals dropped in the second (no request slot free).
	Dropped int64 `json:"dropped"`
	// Users is the number of users active (open model: requests in flight) when the second closed.
	Users int64 `json:"users"`
	// Histogram is the latency, in microseconds, of the second's successful
	// requests: an HDR histogram of 1 µs to 60 s with 2 significant figures
	// in its V2 compressed encoding, base64; empty when none succeeded.
	Histogram string `json:"histogram,omitempty"`
	// Final is set on the shard's last window, which ends at the shard's end
	// and may be shorter than a second.
	Final bool `json:"final,omitempty"`
}

// newWindowHist returns an empty histogram of a window's settings.
func newWindowHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histMinMicros, histMaxMicros, windowSigFigs)
}

// decodeWindowHist decodes a window's histogram, checking its settings.
func decodeWindowHist(s string) (*hdrhistogram.Histogram, error) {
	if s == "" {
		return newWindowHist(), nil
	}
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("cannot decode its histogram: %w", err)
	}
	if h.LowestTrackableValue() != histMinMicros || h.HighestTrackableValue() != histMaxMicros || h.SignificantFigures() != windowSigFigs {
		return nil, fmt.Errorf("its histogram records %d to %d µs with %d significant figures, this soakd %d to %d with %d (run drivers of the same soakd build)",
			h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(), histMinMicros, histMaxMicros, windowSigFigs)
	}
	return h, nil
}

// check reports whether w is well formed.
func (w SecondWindow) check() error {
	switch {
	case w.Shard < 0 || w.Shard >= MaxShards:
		return fmt.Errorf("window of shard %d: the shard index is outside 0..%d", w.Shard, MaxShards-1)
	case w.Seq < 0 || w.Second < 0:
		return fmt.Errorf("window of shard %d: seq %d and second %d must not be negative", w.Shard, w.Seq, w.Second)
	case w.Requests < 0 || w.Errors < 0 || w.Errors > w.Requests || w.Dropped < 0 || w.Users < 0:
		return fmt.Errorf("window of shard %d seq %d: counts out of range (requests %d, errors %d, dropped %d, users %d)", w.Shard, w.Seq, w.Requests, w.Errors, w.Dropped, w.Users)
	}
	return nil
}

// secondBucket counts one second's completions in a driver.
type secondBucket struct {
	requests, errors, dropped int64
	byClass                   map[string]int64
	hist                      *hdrhistogram.Histogram
}

// secondRecorder keeps a driver's per-second buckets until they are sent:
// at most the seconds between the last one sent and the newest completion,
// so a handful. It is clock-free (callers pass offsets from the phase
// start) and not safe for concurrent use (the engine's mu guards it).
type secondRecorder struct {
	shard   int
	buckets map[int64]*secondBucket
	next    int64 // the next second to send
	seq     int64 // the next window's Seq
}

func newSecondRecorder(shard int) *secondRecorder {
	return &secondRecorder{shard: shard, buckets: map[int64]*secondBucket{}}
}

// bucket returns second b's bucket, creating it.
func (r *secondRecorder) bucket(at time.Duration) *secondBucket {
	b := max(int64(at/time.Second), r.next) // a second already sent cannot change: count it in the next
	c := r.buckets[b]
	if c == nil {
		c = &secondBucket{byClass: map[string]int64{}, hist: newWindowHist()}
		r.buckets[b] = c
	}
	return c
}

// add counts one completion at offset at with error class (empty on success) and latency.
func (r *secondRecorder) add(at time.Duration, class string, latency time.Duration) {
	c := r.bucket(at)
	c.requests++
	if class == "" {
		_ = c.hist.RecordValue(clampMicros(latency))
		return
	}
	c.errors++
	c.byClass[class]++
}

// drop counts one dropped arrival at offset at.
func (r *secondRecorder) drop(at time.Duration) { r.bucket(at).dropped++ }

// take removes and returns the seconds up to last (included) not yet sent,
// in order, the histograms still to be encoded (takeWindows encodes them
// outside the engine's lock).
func (r *secondRecorder) take(last int64) []pendingWindow {
	var out []pendingWindow
	for ; r.next <= last; r.next++ {
		c := r.buckets[r.next]
		delete(r.buckets, r.next)
		w := SecondWindow{Shard: r.shard, Seq: r.seq, Second: r.next}
		r.seq++
		if c != nil {
			w.Requests, w.Errors, w.Dropped = c.requests, c.errors, c.dropped
			if len(c.byClass) > 0 {
				w.ErrorsByClass = c.byClass
			}
		}
		out = append(out, pendingWindow{w: w, b: c})
	}
	return out
}

// pendingWindow is a window taken from the recorder, its histogram not yet encoded.
type pendingWindow struct {
	w SecondWindow
	b *secondBucket
}

// encode finishes the window: its histogram, when some request succeeded.
func (p pendingWindow) encode() (SecondWindow, error) {
	w := p.w
	if p.b != nil && p.b.hist.TotalCount() > 0 {
		enc, err := p.b.hist.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return SecondWindow{}, fmt.Errorf("cannot encode the histogram of second %d: %w", w.Second, err)
		}
		w.Histogram = string(enc)
	}
	return w, nil
}

// startWindows starts sending e's per-second windows to e.windows, each
// second as soon as it has closed, from a goroutine it owns, unless
// controlled: then the ramping controller sends them as it closes each
// bucket (closeBucket), with the users it judged. It returns the function
// that, once every request has been recorded, stops the goroutine and
// sends the remaining seconds up to end, the last one Final. It does
// nothing without e.seconds.
func (e *engine) startWindows(controlled bool) (stop func(end time.Time)) {
	if e.seconds == nil {
		return func(time.Time) {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	if !controlled {
		wg.Go(func() {
			t := time.NewTimer(time.Hour)
			defer t.Stop()
			for {
				e.mu.Lock()
				next := e.seconds.next
				e.mu.Unlock()
				t.Reset(time.Until(e.start.Add(time.Duration(next+1) * time.Second)))
				select {
				case <-done:
					return
				case <-t.C:
				}
				// A completion at offset at is recorded under mu with at read
				// under mu, so once the clock has passed a second's end, under
				// mu, no completion can still land in it.
				e.mu.Lock()
				ps := e.seconds.take(int64(time.Since(e.start)/time.Second) - 1)
				e.mu.Unlock()
				e.sendWindows(ps, e.active.Load(), false)
			}
		})
	}
	return func(end time.Time) {
		close(done)
		wg.Wait()
		e.mu.Lock()
		ps := e.seconds.take(max(int64(end.Sub(e.start)/time.Second), e.seconds.next))
		e.mu.Unlock()
		e.sendWindows(ps, e.active.Load(), true)
	}
}

// sendWindows encodes the taken windows ps and sends them to e.windows,
// each with users users, the last one Final when final is set.
func (e *engine) sendWindows(ps []pendingWindow, users int64, final bool) {
	for i, p := range ps {
		w, err := p.encode()
		if err != nil {
			continue // cannot happen: a histogram of valid settings encodes
		}
		w.Final = final && i == len(ps)-1
		w.Users = users
		e.windows(w)
	}
}

// MergedWindow is one second of a phase, merged over its shards.
type MergedWindow struct {
	// Second is the second's index from the phase start.
	Second int64
	// Requests, Errors, Dropped and Users are the sums of the shards'.
	Requests, Errors, Dropped, Users int64
	// ErrorsByClass sums the shards' failures by class.
	ErrorsByClass map[string]int64
	// Hist is the latency of the second's successful requests, all shards
	// together (µs, 2 significant figures).
	Hist *hdrhistogram.Histogram
	// Partial is set when some shard's window of this second was its last
	// (Final), which may cover less than the second.
	Partial bool
}

// Stats returns the second's figures as a failure window (WindowStats):
// dropped arrivals count as failed requests, as in a driver's own window.
func (m MergedWindow) Stats() WindowStats {
	return WindowStats{
		Requests:         m.Requests + m.Dropped,
		Errors:           m.Errors + m.Dropped,
		ConnectionErrors: m.ErrorsByClass[ClassConnectionRefused] + m.ErrorsByClass[ClassConnectionReset],
		P99:              time.Duration(m.Hist.ValueAtQuantile(99)) * time.Microsecond,
		Seconds:          LoadBucket.Seconds(),
	}
}

// WindowMerger merges the window streams of a phase's n shards second by
// second. A second is complete once every shard has sent its window of it
// or has ended (Done) before it; Add and Done return the seconds they
// complete, in order. It refuses a window out of sequence (a Seq other
// than the shard's next: a lost or doubled line), a second out of order, a
// window after the shard's final one, and a window of a shard it does not
// merge, naming the shard and Seq. It is pure: no clock, no goroutine.
type WindowMerger struct {
	n       int
	nextSeq []int64
	lastSec []int64 // the last second each shard sent, -1 before the first
	ended   []bool
	pending map[int64]*MergedWindow
	next    int64 // the next second to complete
}

// NewWindowMerger returns a merger of n shards' windows.
func NewWindowMerger(n int) *WindowMerger {
	m := &WindowMerger{n: n, nextSeq: make([]int64, n), lastSec: make([]int64, n), ended: make([]bool, n), pending: map[int64]*MergedWindow{}}
	for i := range m.lastSec {
		m.lastSec[i] = -1
	}
	return m
}

// Add merges window w and returns the seconds it completes.
func (m *WindowMerger) Add(w SecondWindow) ([]MergedWindow, error) {
	if err := w.check(); err != nil {
		return nil, err
	}
	i := w.Shard
	switch {
	case i >= m.n:
		return nil, fmt.Errorf("window of shard %d seq %d: this phase has %d shards", i, w.Seq, m.n)
	case m.ended[i]:
		return nil, fmt.Errorf("window of shard %d seq %d after the shard's last window", i, w.Seq)
	case w.Seq < m.nextSeq[i]:
		return nil, fmt.Errorf("window of shard %d seq %d is a duplicate: seq %d was expected next", i, w.Seq, m.nextSeq[i])
	case w.Seq > m.nextSeq[i]:
		return nil, fmt.Errorf("window of shard %d seq %d leaves a gap: seq %d was expected next (windows %d to %d are missing)", i, w.Seq, m.nextSeq[i], m.nextSeq[i], w.Seq-1)
	case w.Second != m.lastSec[i]+1:
		return nil, fmt.Errorf("window of shard %d seq %d is of second %d, after second %d: a shard sends every second in order", i, w.Seq, w.Second, m.lastSec[i])
	}
	h, err := decodeWindowHist(w.Histogram)
	if err != nil {
		return nil, fmt.Errorf("window of shard %d seq %d: %w", i, w.Seq, err)
	}
	m.nextSeq[i]++
	m.lastSec[i] = w.Second
	mw := m.pending[w.Second]
	if mw == nil {
		mw = &MergedWindow{Second: w.Second, ErrorsByClass: map[string]int64{}, Hist: newWindowHist()}
		m.pending[w.Second] = mw
	}
	mw.Requests += w.Requests
	mw.Errors += w.Errors
	mw.Dropped += w.Dropped
	mw.Users += w.Users
	addCounts(mw.ErrorsByClass, w.ErrorsByClass)
	if dropped := mw.Hist.Merge(h); dropped != 0 {
		return nil, fmt.Errorf("window of shard %d seq %d: %d latencies out of range", i, w.Seq, dropped)
	}
	mw.Partial = mw.Partial || w.Final
	if w.Final {
		m.ended[i] = true
	}
	return m.complete(), nil
}

// Done records that shard i sends no more windows (it ended, or died) and
// returns the seconds that completes.
func (m *WindowMerger) Done(i int) []MergedWindow {
	if i >= 0 && i < m.n {
		m.ended[i] = true
	}
	return m.complete()
}

// complete returns, in order, the pending seconds every shard has sent or
// ended before.
func (m *WindowMerger) complete() []MergedWindow {
	var out []MergedWindow
	for {
		mw := m.pending[m.next]
		if mw == nil {
			return out
		}
		for i := range m.n {
			if !m.ended[i] && m.lastSec[i] < m.next {
				return out
			}
		}
		delete(m.pending, m.next)
		out = append(out, *mw)
		m.next++
	}
}
