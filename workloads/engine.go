package workloads

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency histograms record microseconds from 1 µs to 60 s with 3 significant
// figures: about 16 k counters (128 KiB) per operation whatever the run length.
const (
	histMinMicros = 1
	histMaxMicros = 60_000_000
	histSigFigs   = 3
	// maxExamples is how many example messages are kept per error class.
	maxExamples = 3
	// progressInterval is how often Run reports progress.
	progressInterval = time.Second
)

// LatencyNote is carried in every Result to say what its latencies mean.
const LatencyNote = "closed model: latency is service time from just before sending a request to the end of reading its body, " +
	"for successful requests only; it does not include think time or time a user waited to send"

// Latency summarises a latency distribution in milliseconds.
type Latency struct {
	// P50 is the median, in ms.
	P50 float64 `json:"p50"`
	// P90 is the 90th percentile, in ms.
	P90 float64 `json:"p90"`
	// P99 is the 99th percentile, in ms.
	P99 float64 `json:"p99"`
	// P999 is the 99.9th percentile, in ms.
	P999 float64 `json:"p999"`
	// Max is the largest recorded latency, in ms.
	Max float64 `json:"max"`
	// Mean is the arithmetic mean, in ms.
	Mean float64 `json:"mean"`
	// Stdev is the standard deviation, in ms.
	Stdev float64 `json:"stdev"`
}

// Summarize returns the latency summary of a histogram recorded in
// microseconds, converted to milliseconds.
func Summarize(h *hdrhistogram.Histogram) Latency {
	if h == nil || h.TotalCount() == 0 {
		return Latency{}
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Latency{
		P50:   ms(h.ValueAtQuantile(50)),
		P90:   ms(h.ValueAtQuantile(90)),
		P99:   ms(h.ValueAtQuantile(99)),
		P999:  ms(h.ValueAtQuantile(99.9)),
		Max:   ms(h.Max()),
		Mean:  h.Mean() / 1000,
		Stdev: h.StdDev() / 1000,
	}
}

// OperationResult is the outcome of one user group.
type OperationResult struct {
	// Operation is the group's operation.
	Operation Operation `json:"operation"`
	// Users is the group's number of virtual users.
	Users int `json:"users"`
	// Iterations is the number of requests each user was to send.
	Iterations int `json:"iterations"`
	// Requests is the number of requests completed (successfully or not).
	Requests int64 `json:"requests"`
	// Errors is the number of failed requests.
	Errors int64 `json:"errors"`
	// ErrorsByClass counts failed requests by error class.
	ErrorsByClass map[string]int64 `json:"errors_by_class"`
	// LatencyMs summarises the latency of the successful requests, in ms.
	LatencyMs Latency `json:"latency_ms"`
	// Histogram is the latency histogram (microseconds) of the successful
	// requests, for merging results later with hdrhistogram.Import.
	Histogram *hdrhistogram.Snapshot `json:"histogram"`
}

// Result is the outcome of one phase, as the driver reports it.
type Result struct {
	// Phase is the phase's name.
	Phase string `json:"phase"`
	// Arm is the arm under test.
	Arm string `json:"arm"`
	// DriverPID is the process id of the driver, to show it is not the target.
	DriverPID int `json:"driver_pid"`
	// Start is when the phase started (the first user's ramp slot).
	Start time.Time `json:"start"`
	// End is when the last user finished.
	End time.Time `json:"end"`
	// DurationSeconds is End - Start, in seconds.
	DurationSeconds float64 `json:"duration_seconds"`
	// Requests is the number of requests completed (successfully or not).
	Requests int64 `json:"requests"`
	// Errors is the number of failed requests.
	Errors int64 `json:"errors"`
	// ErrorsByClass counts failed requests by error class over all operations.
	ErrorsByClass map[string]int64 `json:"errors_by_class"`
	// ErrorExamples holds up to three example messages per error class.
	ErrorExamples map[string][]string `json:"error_examples"`
	// SteadyStart is the start of the steady window (all users active, head trimmed).
	SteadyStart time.Time `json:"steady_start"`
	// SteadyEnd is the end of the steady window (tail trimmed, rounded down to SteadyBucket).
	SteadyEnd time.Time `json:"steady_end"`
	// SteadyRequests is the number of requests completed inside the steady window.
	SteadyRequests int64 `json:"steady_requests"`
	// ThroughputRPS is SteadyRequests divided by the steady window's length, in requests per second.
	ThroughputRPS float64 `json:"throughput_rps"`
	// SteadyFallback is true when there was no steady window and the whole phase was used instead.
	SteadyFallback bool `json:"steady_fallback"`
	// SteadyFallbackReason says why the whole phase was used.
	SteadyFallbackReason string `json:"steady_fallback_reason,omitempty"`
	// Aborted is true when the phase was cancelled before every request was sent.
	Aborted bool `json:"aborted"`
	// LatencyMs summarises the latency of all successful requests, in ms.
	LatencyMs Latency `json:"latency_ms"`
	// Operations holds one entry per user group, in the phase's order.
	Operations []OperationResult `json:"operations"`
	// ClosedModel is always true: users wait for each response before thinking and sending again.
	ClosedModel bool `json:"closed_model"`
	// LatencyNote says what the latencies measure (LatencyNote).
	LatencyNote string `json:"latency_note"`
}

// Progress is a snapshot of a running phase, reported about once per second.
type Progress struct {
	// ElapsedSeconds is the time since the phase started, in seconds.
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// Requests is the number of requests completed so far.
	Requests int64 `json:"requests"`
	// Errors is the number of failed requests so far.
	Errors int64 `json:"errors"`
	// ActiveUsers is the number of users started and not yet finished.
	ActiveUsers int64 `json:"active_users"`
	// RPS is the completion rate over the last interval, in requests per second.
	RPS float64 `json:"rps"`
}

// NewClient returns an HTTP client for a phase of users virtual users: a
// keep-alive pool holding one idle connection per user (as JMeter threads
// keep their connections), no proxy, no transparent compression (it would
// add driver CPU and is not what is being measured), redirects returned
// rather than followed, and timeout as the limit for dialling a connection.
//
// The client sets no http.Client.Timeout: Run bounds every request, from send
// to the end of the body, with a context deadline of Phase.RequestTimeout, and
// a client-level timeout would make net/http clone every request (about a
// dozen allocations) for nothing.
func NewClient(users int, timeout time.Duration) *http.Client {
	users = max(users, 1)
	tr := &http.Transport{
		Proxy: nil, // the target is on loopback; never route through a proxy
		DialContext: (&net.Dialer{
			Timeout:   timeout,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:        users,
		MaxIdleConnsPerHost: users, // one idle connection per user, or closed-model users would redial
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// opStats accumulates one group's outcomes; users of the group share it.
type opStats struct {
	mu       sync.Mutex
	hist     *hdrhistogram.Histogram
	requests int64
	errors   int64
	byClass  map[string]int64
}

// engine is the state of one running phase.
type engine struct {
	phase  Phase
	client *http.Client
	start  time.Time
	ops    []*opStats

	requests atomic.Int64 // completed requests, for progress
	errors   atomic.Int64 // failed requests, for progress
	active   atomic.Int64 // started and unfinished users

	mu     sync.Mutex // guards steady and reads of the clock for it
	steady *steadyCounter

	exMu     sync.Mutex
	examples map[string][]string
}

// Run plays phase p against target (a base URL such as
// "http://127.0.0.1:8080") with client, calling progress (if not nil) about
// once per second from a goroutine that Run owns, and returns the result.
//
// It is a closed model: each user waits for its ramp slot, then for each
// iteration thinks, sends one request and waits for the whole response before
// validating it. Exactly p.Requests() requests are sent unless ctx is
// cancelled; then no new request starts, requests in flight finish (each is
// bounded by p.RequestTimeout), and Run returns the partial result with
// Aborted set and a nil error. A nil client gets NewClient(p.Users(),
// p.RequestTimeout), closed when Run returns. The error is non-nil only when p
// or target is invalid, before any request is sent.
func Run(ctx context.Context, target string, p Phase, client *http.Client, progress func(Progress)) (Result, error) {
	if err := p.Validate(); err != nil {
		return Result{}, fmt.Errorf("invalid phase: %w", err)
	}
	base, err := parseTarget(target)
	if err != nil {
		return Result{}, err
	}
	if client == nil {
		client = NewClient(p.Users(), p.RequestTimeout)
		defer client.CloseIdleConnections()
	}
	order := startOrder(p.Groups)
	users := make([]*user, len(order))
	for i, slot := range order {
		if users[i], err = newUser(p, base, i, slot); err != nil {
			return Result{}, err
		}
	}
	e := &engine{
		phase:    p,
		client:   client,
		ops:      make([]*opStats, len(p.Groups)),
		steady:   newSteadyCounter(len(users), p.TrimHead, p.TrimTail),
		examples: make(map[string][]string),
	}
	for i := range e.ops {
		e.ops[i] = &opStats{
			hist:    hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs),
			byClass: make(map[string]int64),
		}
	}

	e.start = time.Now()
	var wg sync.WaitGroup
	for i, u := range users {
		offset := RampOffset(i, len(users), p.RampUp)
		wg.Go(func() { e.runUser(ctx, u, offset) })
	}
	done := make(chan struct{})
	var reporter sync.WaitGroup
	if progress != nil {
		reporter.Go(func() { e.report(done, progress) })
	}
	wg.Wait()
	end := time.Now()
	close(done)
	reporter.Wait()
	for _, u := range users {
		if u.timer != nil {
			u.timer.Stop()
		}
	}
	return e.result(ctx, end), nil
}

// parseTarget checks that target is an absolute http(s) URL and returns it
// without a trailing slash.
func parseTarget(target string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(target, "/"))
	if err != nil {
		return nil, fmt.Errorf("invalid target: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid target %q: want an absolute http or https URL", target)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("invalid target %q: must not have a query or fragment", target)
	}
	return u, nil
}

// runUser is one virtual user's life: wait for its ramp slot, then think, send
// and validate for each iteration, stopping early when ctx is cancelled.
func (e *engine) runUser(ctx context.Context, u *user, offset time.Duration) {
	if !u.sleep(ctx, time.Until(e.start.Add(offset))) {
		return
	}
	e.active.Add(1)
	e.mark(e.steady.userStarted)
	defer func() {
		e.mark(e.steady.userFinished)
		e.active.Add(-1)
	}()
	reqCtx := context.WithoutCancel(ctx) // requests in flight finish even when the phase is aborted
	for i := range u.iters {
		if ctx.Err() != nil {
			return
		}
		if !u.sleep(ctx, DrawThink(u.rng, e.phase.Think)) || ctx.Err() != nil {
			return
		}
		o := u.do(reqCtx, e.client, e.phase.RequestTimeout, u.next(i))
		e.record(u.group, o)
	}
}

// sleep waits for d unless ctx is cancelled first, reusing the user's timer;
// it reports whether the full wait elapsed.
func (u *user) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	if u.timer == nil {
		u.timer = time.NewTimer(d)
	} else {
		u.timer.Reset(d) // safe without draining since Go 1.23
	}
	select {
	case <-u.timer.C:
		return true
	case <-ctx.Done():
		u.timer.Stop()
		return false
	}
}

// mark calls f with the time since the phase start, read under the steady
// counter's lock so that the counter sees offsets in order.
func (e *engine) mark(f func(time.Duration)) {
	e.mu.Lock()
	f(time.Since(e.start))
	e.mu.Unlock()
}

// record adds one request's outcome to its group and to the phase totals.
func (e *engine) record(group int, o outcome) {
	s := e.ops[group]
	s.mu.Lock()
	s.requests++
	if o.class == "" {
		us := max(o.latency.Microseconds(), histMinMicros)
		_ = s.hist.RecordValue(min(us, histMaxMicros)) // clamped into range, cannot fail
	} else {
		s.errors++
		s.byClass[o.class]++
	}
	s.mu.Unlock()

	if o.class != "" {
		e.errors.Add(1)
		e.exMu.Lock()
		if ex := e.examples[o.class]; len(ex) < maxExamples {
			e.examples[o.class] = append(ex, truncate(o.message))
		}
		e.exMu.Unlock()
	}
	e.mu.Lock()
	e.steady.completed(time.Since(e.start))
	e.mu.Unlock()
	e.requests.Add(1)
}

// report calls progress every progressInterval until done is closed.
func (e *engine) report(done <-chan struct{}, progress func(Progress)) {
	t := time.NewTicker(progressInterval)
	defer t.Stop()
	var lastRequests int64
	var lastAt time.Duration
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		at := time.Since(e.start)
		n := e.requests.Load()
		p := Progress{
			ElapsedSeconds: at.Seconds(),
			Requests:       n,
			Errors:         e.errors.Load(),
			ActiveUsers:    e.active.Load(),
		}
		if dt := (at - lastAt).Seconds(); dt > 0 {
			p.RPS = float64(n-lastRequests) / dt
		}
		lastRequests, lastAt = n, at
		progress(p)
	}
}

// result assembles the phase's Result once every user has finished.
func (e *engine) result(ctx context.Context, end time.Time) Result {
	p := e.phase
	r := Result{
		Phase:         p.Name,
		Arm:           p.Arm,
		DriverPID:     os.Getpid(),
		Start:         e.start,
		End:           end,
		ErrorsByClass: make(map[string]int64),
		ClosedModel:   true,
		LatencyNote:   LatencyNote,
	}
	r.DurationSeconds = end.Sub(e.start).Seconds()
	all := hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)
	for i, s := range e.ops {
		g := p.Groups[i]
		r.Operations = append(r.Operations, OperationResult{
			Operation:     g.Operation,
			Users:         g.Users,
			Iterations:    g.Iterations,
			Requests:      s.requests,
			Errors:        s.errors,
			ErrorsByClass: maps.Clone(s.byClass),
			LatencyMs:     Summarize(s.hist),
			Histogram:     s.hist.Export(),
		})
		r.Requests += s.requests
		r.Errors += s.errors
		for c, n := range s.byClass {
			r.ErrorsByClass[c] += n
		}
		all.Merge(s.hist)
	}
	r.LatencyMs = Summarize(all)
	r.ErrorExamples = e.examples
	r.Aborted = ctx.Err() != nil && r.Requests < p.Requests()

	st := e.steady.outcome(end.Sub(e.start))
	r.SteadyStart = e.start.Add(st.window.Start)
	r.SteadyEnd = e.start.Add(st.window.End)
	r.SteadyRequests = st.requests
	r.SteadyFallback = st.fallback
	r.SteadyFallbackReason = st.reason
	if secs := (st.window.End - st.window.Start).Seconds(); secs > 0 {
		r.ThroughputRPS = float64(st.requests) / secs
	}
	return r
}
