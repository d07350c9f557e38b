package workloads

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/soakd/soakd/internal/pin"
	"github.com/soakd/soakd/internal/procstat"
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

// LatencyNote is carried in every closed-model and ramping Result to say what
// its latencies mean.
const LatencyNote = "closed model: latency is service time from just before sending a request to the end of reading its body, " +
	"for successful requests only; it does not include think time or time a user waited to send"

// OpenLatencyNote is carried in every open-model Result to say what its latencies mean.
const OpenLatencyNote = "open model: latency runs from each request's intended send time (its slot in the arrival schedule) " +
	"to the end of reading its body, for successful requests only, so time spent waiting to be sent counts " +
	"(no coordinated omission); open.service_ms is the service time from the actual send; " +
	"arrivals that found max_in_flight requests in flight were dropped, not sent, and are counted in open.dropped"

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
	// Model is the workload model that ran (never empty).
	Model Model `json:"model"`
	// DriverPID is the process id of the driver, to show it is not the target.
	DriverPID int `json:"driver_pid"`
	// LoadCPUSeconds is the CPU time (user + system, getrusage) the driver
	// process used from the load's start (after any wait for start_at) to
	// its result, in seconds: over DurationSeconds, the driver's own
	// utilisation while it offered load, which it reports itself so that
	// a driver whose process soakd cannot see (a Kubernetes pod) is judged
	// like a local one. Nil when it could not read its CPU time.
	LoadCPUSeconds *float64 `json:"load_cpu_seconds,omitempty"`
	// Start is when the phase started (the first user's ramp slot, or the open schedule's t = 0).
	Start time.Time `json:"start"`
	// End is when the last user finished (open model: when the last request in flight returned).
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
	// SteadyStart is the start of the steady window: closed model, all users
	// active and the head trimmed; open model, the schedule's start plus
	// trim_head; ramping model, the start of the peak window.
	SteadyStart time.Time `json:"steady_start"`
	// SteadyEnd is the end of the steady window: closed model, the first
	// finish (or the duration cap) less trim_tail, rounded down to
	// SteadyBucket; open model, the schedule's end less trim_tail; ramping
	// model, the end of the peak window.
	SteadyEnd time.Time `json:"steady_end"`
	// SteadyRequests is the number of requests completed inside the steady window.
	SteadyRequests int64 `json:"steady_requests"`
	// ThroughputRPS is SteadyRequests divided by the steady window's length, in
	// requests per second (ramping model: MaxLoad.PeakThroughputRPS).
	ThroughputRPS float64 `json:"throughput_rps"`
	// SteadyFallback is true when there was no steady window and the whole phase was used instead.
	SteadyFallback bool `json:"steady_fallback"`
	// SteadyFallbackReason says why the whole phase was used.
	SteadyFallbackReason string `json:"steady_fallback_reason,omitempty"`
	// Aborted is true when the phase was cancelled before it ended on its own.
	Aborted bool `json:"aborted"`
	// LatencyMs summarises the latency of all successful requests, in ms
	// (open model: from the intended send time, see OpenLatencyNote).
	LatencyMs Latency `json:"latency_ms"`
	// Operations holds one entry per user group, in the phase's order.
	Operations []OperationResult `json:"operations"`
	// ClosedModel is true for the closed and ramping models, where users wait
	// for each response before thinking and sending again, and false for the open model.
	ClosedModel bool `json:"closed_model"`
	// LatencyNote says what the latencies measure (LatencyNote or OpenLatencyNote).
	LatencyNote string `json:"latency_note"`
	// Open holds the open model's schedule figures; nil for the other models.
	Open *OpenResult `json:"open,omitempty"`
	// MaxLoad holds the ramping model's outcome; nil for the other models.
	MaxLoad *MaxLoadResult `json:"max_load,omitempty"`
	// Subscriptions is the delivery of the subscription events the phase's
	// mutations raised; nil when the phase opened none, or was sharded.
	Subscriptions *SubscriptionResult `json:"subscriptions,omitempty"`
	// SubscriptionShard is, in a sharded phase with subscriptions, this
	// shard's ledger instead of Subscriptions: MergeSubscriptionShards
	// turns the ledgers of all shards into the phase's SubscriptionResult.
	SubscriptionShard *SubscriptionShard `json:"subscription_shard,omitempty"`
	// Shard is the part of the phase's load this driver offered; absent
	// when it offered all of it.
	Shard Shard `json:"shard,omitzero"`
}

// OpenResult is what an open-model phase did with its arrival schedule.
type OpenResult struct {
	// IntendedRateRPS is the schedule's arrivals (sent or dropped) per second
	// of schedule run: the mean of Rate and RateEnd unless the phase was aborted.
	IntendedRateRPS float64 `json:"intended_rate_rps"`
	// AchievedRateRPS is the requests actually sent per second of schedule run.
	AchievedRateRPS float64 `json:"achieved_rate_rps"`
	// Arrivals is the number of scheduled arrivals that came due: Sent + Dropped.
	Arrivals int64 `json:"arrivals"`
	// Sent is the number of requests sent.
	Sent int64 `json:"sent"`
	// Dropped is the number of arrivals not sent because max_in_flight
	// requests were in flight at their intended time.
	Dropped int64 `json:"dropped"`
	// Late is the number of requests sent more than LateThreshold after their intended time.
	Late int64 `json:"late"`
	// LateThresholdMs is LateThreshold, in ms.
	LateThresholdMs float64 `json:"late_threshold_ms"`
	// MaxLatenessMs is the largest delay between a request's intended and actual send time, in ms.
	MaxLatenessMs float64 `json:"max_lateness_ms"`
	// ServiceMs summarises the service time (actual send to the end of the
	// body) of the successful requests, in ms, for comparison with LatencyMs.
	ServiceMs Latency `json:"service_ms"`
	// ServiceHistogram is the service-time histogram (microseconds), for merging.
	ServiceHistogram *hdrhistogram.Snapshot `json:"service_histogram"`
}

// MaxLoadResult is the outcome of a ramping (maximum-load) phase.
type MaxLoadResult struct {
	// Reason says why the phase ended: ReasonErrorRatio, ReasonP99Latency or
	// ReasonConnectionErrors (a failure), ReasonMaxUsers, ReasonDuration or ReasonAborted.
	Reason string `json:"reason"`
	// Detail explains Reason in words, with the measured values and the limits.
	Detail string `json:"detail"`
	// Failed is true when a failure rule tripped.
	Failed bool `json:"failed"`
	// UsersAtFailure is the number of active users when the rule tripped (0 without a failure).
	UsersAtFailure int `json:"users_at_failure"`
	// FailureAt is when the rule tripped: the end of the window judged (zero without a failure).
	FailureAt time.Time `json:"failure_at,omitzero"`
	// FailureWindow holds the figures of the window that tripped the rule.
	FailureWindow *WindowStats `json:"failure_window,omitempty"`
	// FinalUsers is the number of users active when the phase was stopped.
	FinalUsers int `json:"final_users"`
	// PeakThroughputRPS is the highest throughput of a sliding window that did
	// not trip a rule, in requests per second: the most the target sustained.
	PeakThroughputRPS float64 `json:"peak_throughput_rps"`
	// PeakUsers is the number of active users at the end of the peak window.
	PeakUsers int `json:"peak_users"`
	// PeakWindowStart is the start of the peak window (zero when there was none),
	// for reading the target's CPU and memory over the same span.
	PeakWindowStart time.Time `json:"peak_window_start,omitzero"`
	// PeakWindowEnd is the end of the peak window.
	PeakWindowEnd time.Time `json:"peak_window_end,omitzero"`
	// PeakWindow holds the peak window's figures.
	PeakWindow *WindowStats `json:"peak_window,omitempty"`
	// Timeline has one point per LoadBucket, oldest first; it keeps at most
	// MaxTimelinePoints (the latest), so a long phase cannot grow it without bound.
	Timeline []TimelinePoint `json:"timeline"`
	// TimelineDropped is the number of earliest points left out of Timeline.
	TimelineDropped int64 `json:"timeline_dropped"`
	// DriverCPUs is the number of CPUs the driver process may run on (its
	// affinity mask): 1 CPU-second per second per CPU is full utilisation.
	DriverCPUs int `json:"driver_cpus"`
}

// TimelinePoint is one LoadBucket of a ramping phase.
type TimelinePoint struct {
	// TSeconds is the bucket's end, in seconds since the phase start.
	TSeconds float64 `json:"t_seconds"`
	// Users is the number of active users at the bucket's end.
	Users int `json:"users"`
	// RPS is the bucket's completed requests per second.
	RPS float64 `json:"rps"`
	// ErrorRatio is the bucket's share of failed requests (0..1).
	ErrorRatio float64 `json:"error_ratio"`
	// P99Ms is the 99th-percentile latency of the bucket's successful requests, in ms.
	P99Ms float64 `json:"p99_ms"`
	// DriverCPUSeconds is the CPU time (user + system) the driver process
	// used during the bucket, in seconds; over the bucket's length and
	// MaxLoadResult.DriverCPUs it is the driver's utilisation. Nil when
	// the driver could not read its own CPU time.
	DriverCPUSeconds *float64 `json:"driver_cpu_seconds"`
	// DriverWaitSeconds is the time the driver's threads spent during the
	// bucket ready to run but waiting for a CPU (run-queue wait), in
	// seconds: CPU time plus wait is the driver's CPU demand, which shows
	// a driver starved by other work on its CPUs. Nil when not measured.
	DriverWaitSeconds *float64 `json:"driver_wait_seconds"`
	// ArrivalRPS is, in a ramping-rate phase, the intended arrival rate at
	// the bucket's end (Users is then the requests in flight); 0 otherwise.
	ArrivalRPS float64 `json:"arrival_rps,omitempty"`
	// DriverCPUShare is, for shards on machines of their own (the pods of
	// the Kubernetes backend), the busiest shard's CPU demand over the
	// bucket (CPU time plus run-queue wait) ÷ (bucket seconds × its
	// DriverCPUs), 0..1: the first driver to saturate stops the load, and
	// CPUs on other nodes do not add up. Nil for one driver or shards
	// sharing one machine (the share is then DriverCPUSeconds over
	// DriverCPUs) and when a shard's CPU time was not read.
	DriverCPUShare *float64 `json:"driver_cpu_share,omitempty"`
}

// SetBusiestShardShares sets res's timeline points' DriverCPUShare from
// the shards' own points at the same instant (shards on machines of their
// own); a point some shard lacks, or lacks its CPU time at, is left nil.
func SetBusiestShardShares(res *Result, shards []Result) {
	if res.MaxLoad == nil {
		return
	}
	bucket := LoadBucket.Seconds()
	for i := range res.MaxLoad.Timeline {
		pt := &res.MaxLoad.Timeline[i]
		var busiest float64
		ok := len(shards) > 0
		for _, s := range shards {
			share, found := shardShare(s.MaxLoad, pt.TSeconds, bucket)
			if !found {
				ok = false
				break
			}
			busiest = max(busiest, share)
		}
		if ok {
			pt.DriverCPUShare = &busiest
		}
	}
}

// shardShare is one shard's CPU demand share at its timeline point t.
func shardShare(ml *MaxLoadResult, t, bucket float64) (float64, bool) {
	if ml == nil || ml.DriverCPUs < 1 {
		return 0, false
	}
	for _, p := range ml.Timeline {
		if p.TSeconds != t {
			continue
		}
		if p.DriverCPUSeconds == nil {
			return 0, false
		}
		demand := *p.DriverCPUSeconds
		if p.DriverWaitSeconds != nil {
			demand += *p.DriverWaitSeconds
		}
		return demand / (bucket * float64(ml.DriverCPUs)), true
	}
	return 0, false
}

// MaxTimelinePoints caps MaxLoadResult.Timeline: one hour of 1 s points,
// about 150 KiB in memory; older points are dropped first.
const MaxTimelinePoints = 3600

// Progress is a snapshot of a running phase, reported about once per second.
type Progress struct {
	// ElapsedSeconds is the time since the phase started, in seconds.
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// Requests is the number of requests completed so far.
	Requests int64 `json:"requests"`
	// Errors is the number of failed requests so far.
	Errors int64 `json:"errors"`
	// ActiveUsers is the number of users started and not yet finished (open
	// model: the number of requests in flight).
	ActiveUsers int64 `json:"active_users"`
	// RPS is the completion rate over the last interval, in requests per second.
	RPS float64 `json:"rps"`
	// Dropped is the open model's number of dropped arrivals so far.
	Dropped int64 `json:"dropped,omitempty"`
	// IntervalLatency summarises the latency of the successful requests
	// completed since the previous report (the first report: since the
	// phase started), measured as Result.LatencyMs is; nil when none
	// completed, so an interval without a successful request is not
	// mistaken for one of zero latency.
	IntervalLatency *IntervalLatency `json:"interval_latency,omitempty"`
}

// IntervalLatency is the latency of the successful requests completed in
// one progress interval, from an HDR histogram of microseconds (each
// percentile is the highest value of its histogram bucket, within 0.1 %).
type IntervalLatency struct {
	// Count is the number of successful requests the figures describe.
	Count int64 `json:"count"`
	// P50Ms is the median, in ms.
	P50Ms float64 `json:"p50_ms"`
	// P90Ms is the 90th percentile, in ms.
	P90Ms float64 `json:"p90_ms"`
	// P99Ms is the 99th percentile, in ms.
	P99Ms float64 `json:"p99_ms"`
	// MaxMs is the largest latency, in ms.
	MaxMs float64 `json:"max_ms"`
}

// summarizeInterval returns the interval latency of h (microseconds), nil
// when h is empty.
func summarizeInterval(h *hdrhistogram.Histogram) *IntervalLatency {
	n := h.TotalCount()
	if n == 0 {
		return nil
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return &IntervalLatency{
		Count: n,
		P50Ms: ms(h.ValueAtQuantile(50)),
		P90Ms: ms(h.ValueAtQuantile(90)),
		P99Ms: ms(h.ValueAtQuantile(99)),
		MaxMs: ms(h.Max()),
	}
}

// opStats accumulates one group's outcomes; users of the group share it.
//
// A request records its latency once, into interval, under mu: the phase
// histogram hist is not touched per request but built from the intervals,
// each folded into it by whoever takes it out (the reporter at every
// progress report, result for the rest at the end). Recording into both
// per request cost a second RecordValue inside the lock every user of the
// group takes: a few ns (BenchmarkRecord, serial, 65 ns before interval
// latency existed, 69 ns with both), small beside the µs of a request but
// paid by every one.
type opStats struct {
	mu sync.Mutex
	// interval holds the latencies recorded since they were last taken
	// (see takeInterval): the reporter swaps it under mu for an empty one
	// of its own, so a request never waits for a histogram to be read,
	// merged or cleared.
	interval *hdrhistogram.Histogram
	requests int64
	errors   int64
	byClass  map[string]int64

	// histMu guards hist, the latencies of every interval taken so far;
	// only the reporter (once per interval) and result take it, never a
	// request.
	histMu sync.Mutex
	hist   *hdrhistogram.Histogram
}

// takeInterval returns the group's interval histogram, leaving spare, an
// empty histogram of the same range, in its place.
func (s *opStats) takeInterval(spare *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	s.mu.Lock()
	h := s.interval
	s.interval = spare
	s.mu.Unlock()
	return h
}

// fold adds h, an interval histogram taken out with takeInterval, to the
// group's phase histogram. The merge is exact: both histograms have the same
// range and precision, so every count lands in the bucket it was recorded in.
func (s *opStats) fold(h *hdrhistogram.Histogram) {
	if h.TotalCount() == 0 {
		return
	}
	s.histMu.Lock()
	s.hist.Merge(h)
	s.histMu.Unlock()
}

// settle folds the latencies no reporter took (all of them when progress
// is not reported) into the phase histogram and returns it; the phase's
// users have finished, so nothing records any more.
func (s *opStats) settle() *hdrhistogram.Histogram {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fold(s.interval)
	s.interval.Reset()
	return s.hist
}

// engine is the state of one running phase.
type engine struct {
	phase  Phase
	client *Client
	ep     endpoints
	rest   sender // the client's sender for ep.rest
	gql    sender // the client's sender for ep.graphql
	start  time.Time
	// startCPU is this process's CPU time at start (startCPUOK: read).
	startCPU   time.Duration
	startCPUOK bool
	ops        []*opStats
	// compiled holds each group's operation, ready to fill; sub the
	// subscription the phase's subscribers open (nil without any).
	compiled []*compiledOp
	sub      *compiledSubscription
	// data is the CSV files the operations read, open for the phase.
	data    *csvData
	baggage string

	requests atomic.Int64 // completed requests, for progress
	errors   atomic.Int64 // failed requests, for progress
	active   atomic.Int64 // active users (open model: requests in flight)
	dropped  atomic.Int64 // open model: dropped arrivals
	aborted  atomic.Bool  // a user stopped early because the run's context ended

	// cpuTime returns the driver process's CPU time so far (user +
	// system), and waitTime the time its threads spent ready to run but
	// waiting for a CPU, for the driver's CPU demand in each max-load
	// bucket; ok is false when one cannot be read.
	cpuTime  func() (time.Duration, bool)
	waitTime func() (time.Duration, bool)

	mu     sync.Mutex     // guards the fields below and reads of the clock for them
	steady *steadyCounter // closed model
	window *loadWindow    // ramping model
	open   *openStats     // open model
	// seconds is the per-second record of a sharded driver's windows
	// (SecondWindow), nil when none is sent.
	seconds *secondRecorder
	windows func(SecondWindow) // where the windows go (set with seconds)

	exMu     sync.Mutex
	examples map[string][]string
}

// Run plays phase p against target (a base URL such as
// "http://127.0.0.1:8080") with client, calling progress (if not nil) about
// once per second from a goroutine that Run owns, and returns the result.
//
// The closed model (the default): each user waits for its ramp slot, then for
// each iteration thinks, sends one request and waits for the whole response
// before validating it. Exactly p.Requests() requests are sent unless ctx is
// cancelled or p.Duration elapses first; then no new request starts and
// requests in flight finish (each is bounded by p.RequestTimeout).
//
// The open model sends requests on the schedule of NewPacer(p), choosing each
// one's operation by the groups' weights, with at most p.MaxInFlight in
// flight; see OpenLatencyNote. The ramping model adds closed-model users on the
// schedule of RampUsers until a failure rule trips (see Judge), the user cap
// has run for one window, p.Duration elapses or ctx is cancelled.
//
// With a Phase.StartAt, the load starts at that instant, once the phase's
// subscriptions are live; a driver not ready by then fails before sending
// a request.
//
// When ctx is cancelled Run returns the partial result with Aborted set and a
// nil error (while waiting for StartAt, an error). A nil client gets
// NewClient(p.Connections(), p.RequestTimeout), whose connections are closed
// when Run returns. The error is non-nil only when p or target is invalid
// (a CSV data file that is no longer the one the daemon validated among
// them), or the driver was not ready by StartAt, before any request is
// sent, or, with the result, when a CSV data file changed during the phase
// (wrapping ErrCSVChanged).
func Run(ctx context.Context, target string, p Phase, client *Client, progress func(Progress)) (Result, error) {
	ep, err := BaseEndpoints(target)
	if err != nil {
		return Result{}, err
	}
	return RunAt(ctx, ep, p, client, progress)
}

// RunAt is Run against endpoints that need not share one base URL: a
// GraphQL server and its REST twin apart (see Endpoints).
func RunAt(ctx context.Context, target Endpoints, p Phase, client *Client, progress func(Progress)) (Result, error) {
	return RunWindows(ctx, target, p, client, progress, nil)
}

// RunWindows is RunAt that also sends, when p is a shard (Shard.Sharded)
// and windows is not nil, the shard's figures of every second of the
// phase to windows (SecondWindow), from a goroutine it owns, each as soon
// as the second has closed, and the last one before it returns. A sharded
// ramping or ramping-rate phase then judges no failure rule itself: the
// orchestrator judges them on the merged windows of every shard
// (MaxLoadJudge) and stops the shards (cancels ctx) when one trips.
func RunWindows(ctx context.Context, target Endpoints, p Phase, client *Client, progress func(Progress), windows func(SecondWindow)) (Result, error) {
	if err := p.Validate(); err != nil {
		return Result{}, fmt.Errorf("invalid phase: %w", err)
	}
	ep, err := target.parse()
	if err != nil {
		return Result{}, err
	}
	for _, g := range p.Groups {
		if ep.rest == "" && p.Operations[g.Operation].Endpoint() == "rest" {
			return Result{}, fmt.Errorf("phase %s runs %s, but no REST URL was given: the target's REST twin (--rest-url)", p.Name, g.Operation)
		}
	}
	if client == nil {
		client = NewClient(p.Connections(), p.RequestTimeout)
		defer client.CloseIdleConnections()
	}
	e, err := newEngineAt(p, client, ep, os.LookupEnv)
	if err != nil {
		return Result{}, err
	}
	defer e.data.close()
	if p.Shard.Sharded() && windows != nil {
		e.seconds = newSecondRecorder(p.Shard.Index)
		e.windows = windows
	}
	var res Result
	switch p.Model.normalized() {
	case Open, RampingRate:
		if err := e.awaitStart(ctx); err != nil {
			return Result{}, err
		}
		res = e.runOpen(ctx, progress)
	case Ramping:
		if err := e.awaitStart(ctx); err != nil {
			return Result{}, err
		}
		res = e.runRamping(ctx, progress)
	default:
		if res, err = e.runClosed(ctx, progress); err != nil {
			return res, err
		}
	}
	// A data file edited during the phase gave requests other values than
	// the ones validated: the phase measured another workload.
	if err := e.data.check(); err != nil {
		return res, fmt.Errorf("phase %s: %w", p.Name, err)
	}
	return res, nil
}

// awaitStart waits until the phase's StartAt, once this driver is ready to
// start its load (its subscriptions live), so that the shards of a phase
// start together and none raises an event before every shard's
// subscriptions listen. It fails, before any request is sent, when StartAt
// has already passed (the driver was not ready in time) or ctx ends first.
// Without a StartAt it returns at once.
func (e *engine) awaitStart(ctx context.Context) error {
	at := e.phase.StartAt
	if at.IsZero() {
		return nil
	}
	if late := time.Since(at); late > 0 {
		return fmt.Errorf("not ready by start_at %s: ready %s after it (start_at must leave every shard time to open its subscriptions)",
			at.Format(time.RFC3339Nano), late.Round(time.Millisecond))
	}
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cancelled while waiting for start_at %s: %w", at.Format(time.RFC3339Nano), context.Cause(ctx))
	}
}

// startInstant is the phase's start, the instant its offsets count from:
// its StartAt once awaitStart has waited for it, so that every shard of a
// phase counts its seconds (SecondWindow) from the same instant; otherwise
// now.
func (e *engine) startInstant() time.Time {
	e.startCPU, e.startCPUOK = processCPUTime()
	now := time.Now()
	if at := e.phase.StartAt; !at.IsZero() && !at.After(now) {
		return at
	}
	return now
}

// senderFor returns the sender of op's endpoint.
func (e *engine) senderFor(op *compiledOp) sender {
	if op.endpoint == "rest" {
		return e.rest
	}
	return e.gql
}

// newEngine returns the engine of phase p, before its model-specific state is set.
func newEngine(p Phase, client *Client, base *url.URL) (*engine, error) {
	return newEngineAt(p, client, endpointsOf(base), os.LookupEnv)
}

// newEngineAt returns the engine of phase p driven at ep, its groups'
// operations compiled (getenv resolves their headers_env), so that a phase
// whose requests cannot be built fails before sending anything.
func newEngineAt(p Phase, client *Client, ep endpoints, getenv func(string) (string, bool)) (*engine, error) {
	e := &engine{
		phase:    p,
		client:   client,
		ep:       ep,
		rest:     client.senderTo(ep.rest),
		gql:      client.senderTo(ep.graphql),
		ops:      make([]*opStats, len(p.Groups)),
		compiled: make([]*compiledOp, len(p.Groups)),
		baggage:  baggage(p),
		examples: make(map[string][]string),
		cpuTime:  processCPUTime,
		waitTime: func() (time.Duration, bool) { return procstat.RunqueueWait(0) },
	}
	data, err := openCSVData(p)
	if err != nil {
		return nil, fmt.Errorf("invalid phase: %w", err)
	}
	e.data = data
	var errs []error
	for i, g := range p.Groups {
		op, err := compileOperation(g.Operation, p.Operations[g.Operation], ep, getenv, data)
		if err != nil {
			errs = append(errs, fmt.Errorf("operation %s: %w", g.Operation, err))
		}
		e.compiled[i] = op
	}
	if p.Subscriptions.Clients > 0 {
		name, err := p.SubscriptionOperation()
		if err == nil {
			e.sub, err = compileSubscription(p.Operations[name], p.Operations, getenv)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("subscriptions: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		data.close()
		return nil, fmt.Errorf("invalid phase: %w", err)
	}
	for i := range e.ops {
		e.ops[i] = &opStats{
			hist:     hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs),
			interval: hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs),
			byClass:  make(map[string]int64),
		}
	}
	return e, nil
}

// newUser returns user index of the phase, of slot's group.
func (e *engine) newUser(index int, slot userSlot) *user {
	return newUser(e.compiled[slot.group], e.phase, e.baggage, index, slot)
}

// burnCPU busies the calling goroutine's thread until it has used d of CPU
// time (its thread CPU clock), whatever else runs: the DriverBurn test
// switch.
func burnCPU(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return
	}
	end := ts.Nano() + d.Nanoseconds()
	for unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) == nil && ts.Nano() < end {
	}
}

// processCPUTime returns this process's CPU time (user + system) from
// getrusage.
func processCPUTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// allowedCPUs is the number of CPUs this process may run on (its affinity
// mask; all of them when it cannot be read).
func allowedCPUs() int {
	n := runtime.NumCPU()
	if cpus, err := pin.Current(); err == nil && len(cpus) > 0 {
		n = len(cpus)
	}
	// In a container with a CPU limit, Go (1.25+) sets GOMAXPROCS to the
	// limit: the driver's Go code cannot use more CPUs than that at once.
	return max(1, min(n, runtime.GOMAXPROCS(0)))
}

// runClosed plays a closed-model phase. A shard runs the users it owns
// (Shard.closedUsers), each with its global index (its seed, ramp slot and writer id),
// so user k behaves the same whichever shard runs it; its steady window is
// its own users' (from its last start to its first finish).
func (e *engine) runClosed(ctx context.Context, progress func(Progress)) (Result, error) {
	p := e.phase
	order := startOrder(p.Groups)
	owned := p.Shard.closedUsers(p.Groups, order)
	users := make([]*user, len(owned))
	for i, k := range owned {
		users[i] = e.newUser(k, order[k])
	}
	var subs *Subscribers
	var ids []string // every writer id of the phase, in global order
	if e.sub != nil {
		for k, slot := range order {
			if e.compiled[slot.group].name == e.sub.raisedBy {
				ids = append(ids, writerID(k))
			}
		}
		clients := ownedClients(p.Subscriptions.Clients, p.Shard)
		if len(clients) > 0 {
			var err error
			if subs, err = openSubscribersAt(ctx, e.ep.ws, p.Subscriptions, clients, e.sub, ids, e.probe); err != nil {
				return Result{}, fmt.Errorf("cannot open subscriptions: %w", err)
			}
		}
	}
	if err := e.awaitStart(ctx); err != nil {
		if subs != nil {
			subs.shutdown()
		}
		return Result{}, err
	}
	e.steady = newSteadyCounter(len(users), p.TrimHead, p.TrimTail)
	stopCtx, stop := context.WithCancel(ctx) // cancelled by ctx or at the duration cap
	defer stop()

	e.start = e.startInstant()
	stopReporter := e.startReporter(progress)
	stopWindows := e.startWindows(false)
	var wg sync.WaitGroup
	for _, u := range users {
		offset := RampOffset(u.index, len(order), p.RampUp)
		wg.Go(func() { e.runUser(ctx, stopCtx, u, offset) })
	}
	done := make(chan struct{})
	var capper sync.WaitGroup
	if p.Duration > 0 {
		capper.Go(func() { e.capAt(done, stop) })
	}
	wg.Wait()
	end := time.Now()
	close(done)
	capper.Wait()
	stopReporter()
	stopWindows(end)
	for _, u := range users {
		if u.timer != nil {
			u.timer.Stop()
		}
	}
	r := e.result(end)
	r.Aborted = e.aborted.Load()
	if p.Shard.Sharded() {
		countUsers(&r, users)
	}
	st := e.steady.outcome(end.Sub(e.start))
	if len(users) == 0 {
		st.reason = fmt.Sprintf("shard %s runs none of the phase's %d users", p.Shard, len(order))
	}
	e.setSteady(&r, st)
	if e.sub != nil {
		// Every successful mutation published one event to its writer's
		// id; that is what each subscription of the id must receive.
		var writes []WriterEvents // this driver's writers, in global order
		for _, u := range users {
			if u.op.name == e.sub.raisedBy {
				writes = append(writes, WriterEvents{ID: u.writerID, Events: u.okWrites})
			}
		}
		closeCtx := context.WithoutCancel(ctx)
		if !p.Shard.Sharded() {
			written := make(map[string]int64, len(writes))
			for _, w := range writes {
				written[w.ID] = w.Events
			}
			sr := subs.Close(closeCtx, func(id string) int64 { return written[id] })
			r.Subscriptions = &sr
		} else {
			r.SubscriptionShard = e.closeShard(closeCtx, subs, writes, len(ids))
		}
	}
	return r, nil
}

// closeShard closes a sharded phase's subscribers (nil when the shard holds
// no client) and returns the shard's ledger. A subscription to a writer of
// this shard expects written[id] events; one to another shard's writer
// cannot know how many that writer raised, so the drain waits for the most
// it can raise (its group's iterations), or, unlimited, for all of Drain.
func (e *engine) closeShard(ctx context.Context, subs *Subscribers, writes []WriterEvents, writers int) *SubscriptionShard {
	written := make(map[string]int64, len(writes))
	for _, w := range writes {
		written[w.ID] = w.Events
	}
	bound := int64(-1) // unknown
	if g := slices.IndexFunc(e.phase.Groups, func(g UserGroup) bool { return g.Operation == e.sub.raisedBy }); g >= 0 && e.phase.Groups[g].Iterations > 0 {
		bound = int64(e.phase.Groups[g].Iterations)
	}
	var ss SubscriptionShard
	if subs != nil {
		ss = subs.closeShard(ctx, func(id string) (int64, bool) {
			if n, ok := written[id]; ok {
				return n, true
			}
			return bound, bound >= 0
		})
	} else {
		ss = emptySubscriptionShard()
	}
	ss.Total = e.phase.Subscriptions.Clients * e.phase.Subscriptions.PerClient
	ss.Writers = writers
	ss.Writes = writes
	return &ss
}

// countUsers sets each operation's Users to the number of users, of users,
// in its group: the users this driver ran.
func countUsers(r *Result, users []*user) {
	for i := range r.Operations {
		r.Operations[i].Users = 0
	}
	for _, u := range users {
		r.Operations[u.group].Users++
	}
}

// probe sends the subscription's raised_by operation as the writer id with
// sequence number 0: the event that proves a subscription to id is live
// before the load starts. Subscribers never count it. The write must pass
// the operation's expectations.
func (e *engine) probe(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("probe with %s (the subscription's raised_by) for id %q: %w", e.sub.raisedBy, id, err)
	}
	g := slices.IndexFunc(e.compiled, func(op *compiledOp) bool { return op.name == e.sub.raisedBy })
	u := e.newUser(0, userSlot{group: g})
	u.writerID = id
	u.vals[u.op.writerVar] = []byte(id)
	switch o := u.do(ctx, e.senderFor(u.op), e.phase.RequestTimeout, u.build(0)); {
	case o.stopped:
		return fmt.Errorf("probe with %s (the subscription's raised_by) for id %q: %w", e.sub.raisedBy, id, context.Cause(ctx))
	case o.class != "":
		return fmt.Errorf("probe with %s (the subscription's raised_by) for id %q failed as %s: %s", e.sub.raisedBy, id, o.class, o.message)
	}
	return nil
}

// capAt ends the steady window and stops the closed-model users once
// Phase.Duration has elapsed, unless done is closed first.
func (e *engine) capAt(done <-chan struct{}, stop func()) {
	t := time.NewTimer(time.Until(e.start.Add(e.phase.Duration)))
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	e.mu.Lock()
	// The cap, not the moment the first user notices it, ends the window;
	// userFinished ignores this when a user finished earlier.
	e.steady.userFinished(e.phase.Duration)
	e.mu.Unlock()
	stop()
}

// setSteady copies a steady outcome into r.
func (e *engine) setSteady(r *Result, st steadyOutcome) {
	r.SteadyStart = e.start.Add(st.window.Start)
	r.SteadyEnd = e.start.Add(st.window.End)
	r.SteadyRequests = st.requests
	r.SteadyFallback = st.fallback
	r.SteadyFallbackReason = st.reason
	if secs := (st.window.End - st.window.Start).Seconds(); secs > 0 {
		r.ThroughputRPS = float64(st.requests) / secs
	}
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

// runUser is one closed-model user's life: wait for its ramp slot, then run
// its iterations until stopCtx ends (ctx being the run's own context, to tell
// an abort from the duration cap).
func (e *engine) runUser(ctx, stopCtx context.Context, u *user, offset time.Duration) {
	if !u.sleep(stopCtx, time.Until(e.start.Add(offset))) {
		e.noteStop(ctx)
		return
	}
	e.active.Add(1)
	e.mark(e.steady.userStarted)
	defer func() {
		e.mark(e.steady.userFinished)
		e.active.Add(-1)
	}()
	e.iterate(ctx, stopCtx, u)
}

// iterate runs u's iterations (unlimited when u.iters is 0): think, send,
// validate and record, stopping before the next one once stopCtx ends.
// Requests in flight finish even then. It reports whether u sent all its
// iterations.
func (e *engine) iterate(ctx, stopCtx context.Context, u *user) (completed bool) {
	for i := 0; u.iters == 0 || i < u.iters; i++ {
		if stopCtx.Err() != nil {
			e.noteStop(ctx)
			return false
		}
		if !u.sleep(stopCtx, DrawThink(u.rng, e.phase.Think)) || stopCtx.Err() != nil {
			e.noteStop(ctx)
			return false
		}
		// A chatty request's chain stops on an abort (ctx), not at the
		// duration cap (stopCtx): like any request in flight at the cap it
		// finishes, bounded by max_follow_calls and request_timeout, so a
		// phase shorter than one chain still measures it.
		o := u.do(ctx, e.senderFor(u.op), e.phase.RequestTimeout, u.next(i))
		if o.stopped { // a chatty request cut short: not a request
			e.noteStop(ctx)
			return false
		}
		if e.phase.DriverBurn > 0 {
			burnCPU(e.phase.DriverBurn)
		}
		if o.class == "" && u.op.writes {
			u.okWrites++
		}
		e.record(u.group, o, o.latency)
	}
	return true
}

// noteStop records that a user stopped early, as an abort when ctx has ended.
func (e *engine) noteStop(ctx context.Context) {
	if ctx.Err() != nil {
		e.aborted.Store(true)
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

// mark calls f with the time since the phase start, read under the engine's
// lock so that the steady counter sees offsets in order.
func (e *engine) mark(f func(time.Duration)) {
	e.mu.Lock()
	f(time.Since(e.start))
	e.mu.Unlock()
}

// record adds one request's outcome to its group and to the phase totals;
// latency is what goes into the group's interval histogram (see opStats) when
// the request succeeded (the service time, or in the open model the time
// from the intended send).
func (e *engine) record(group int, o outcome, latency time.Duration) {
	s := e.ops[group]
	s.mu.Lock()
	s.requests++
	if o.class == "" {
		_ = s.interval.RecordValue(clampMicros(latency)) // clamped into range, cannot fail
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
	at := time.Since(e.start)
	if e.steady != nil {
		e.steady.completed(at)
	}
	if e.window != nil { // ramping and ramping-rate
		e.window.add(at, o.class, latency)
	}
	if e.open != nil { // open and ramping-rate
		e.open.completed(at, o)
	}
	if e.seconds != nil {
		e.seconds.add(at, o.class, latency)
	}
	e.mu.Unlock()
	e.requests.Add(1)
}

// startReporter starts calling progress every progressInterval from a
// goroutine it owns, and returns the function that stops it and waits for it.
// A nil progress starts nothing.
func (e *engine) startReporter(progress func(Progress)) (stop func()) {
	if progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { e.report(done, progress) })
	return func() {
		close(done)
		wg.Wait()
	}
}

// report calls progress every progressInterval until done is closed.
func (e *engine) report(done <-chan struct{}, progress func(Progress)) {
	t := time.NewTicker(progressInterval)
	defer t.Stop()
	var lastRequests int64
	var lastAt time.Duration
	il := newIntervalReader(len(e.ops))
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
			Dropped:        e.dropped.Load(),
			// Read after the counters: a request counted in Requests
			// has its latency in this report or an earlier one.
			IntervalLatency: il.read(e.ops),
		}
		if dt := (at - lastAt).Seconds(); dt > 0 {
			p.RPS = float64(n-lastRequests) / dt
		}
		lastRequests, lastAt = n, at
		progress(p)
	}
}

// intervalReader reads the groups' interval histograms for the reporter.
// It owns one spare histogram per group and one for the phase, allocated
// once: each read swaps a group's interval histogram for its empty spare
// under the group's lock (a pointer swap, the only time the reporter holds
// it), then, outside the lock, folds the swapped-out one into the group's
// phase histogram, merges it into the interval's summary and clears it.
type intervalReader struct {
	spare []*hdrhistogram.Histogram
	all   *hdrhistogram.Histogram
}

func newIntervalReader(groups int) *intervalReader {
	r := &intervalReader{spare: make([]*hdrhistogram.Histogram, groups), all: hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)}
	for i := range r.spare {
		r.spare[i] = hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)
	}
	return r
}

// read returns the latency of the successful requests recorded since the
// previous read, over every group; nil when there was none.
func (r *intervalReader) read(ops []*opStats) *IntervalLatency {
	for i, s := range ops {
		h := s.takeInterval(r.spare[i])
		r.spare[i] = h
		if h.TotalCount() > 0 {
			s.fold(h)
			r.all.Merge(h)
			h.Reset()
		}
	}
	l := summarizeInterval(r.all)
	if l != nil {
		r.all.Reset()
	}
	return l
}

// result assembles the parts of the phase's Result every model shares, once
// every user has finished; the callers add the steady window and their own parts.
func (e *engine) result(end time.Time) Result {
	p := e.phase
	model := p.Model.normalized()
	r := Result{
		Phase:         p.Name,
		Arm:           p.Arm,
		Model:         model,
		DriverPID:     os.Getpid(),
		Start:         e.start,
		End:           end,
		ErrorsByClass: make(map[string]int64),
		ClosedModel:   model != Open,
		LatencyNote:   LatencyNote,
	}
	if p.Shard.Sharded() {
		r.Shard = p.Shard
	}
	if model == Open {
		r.LatencyNote = OpenLatencyNote
	}
	r.DurationSeconds = end.Sub(e.start).Seconds()
	if cpu, ok := processCPUTime(); ok && e.startCPUOK {
		secs := (cpu - e.startCPU).Seconds()
		r.LoadCPUSeconds = &secs
	}
	all := hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)
	for i, s := range e.ops {
		g := p.Groups[i]
		hist := s.settle()
		r.Operations = append(r.Operations, OperationResult{
			Operation:     g.Operation,
			Users:         g.Users,
			Iterations:    g.Iterations,
			Requests:      s.requests,
			Errors:        s.errors,
			ErrorsByClass: maps.Clone(s.byClass),
			LatencyMs:     Summarize(hist),
			Histogram:     hist.Export(),
		})
		r.Requests += s.requests
		r.Errors += s.errors
		for c, n := range s.byClass {
			r.ErrorsByClass[c] += n
		}
		all.Merge(hist)
	}
	r.LatencyMs = Summarize(all)
	r.ErrorExamples = e.examples
	return r
}
