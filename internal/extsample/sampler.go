package extsample

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/soakd/soakd/internal/nofollow"
)

const (
	// DefaultInterval is the time between samples when Options.Interval is zero.
	DefaultInterval = time.Second
	// DefaultMaxSamples is the ring capacity when Options.MaxSamples is zero: 3 hours at the default
	// interval. A stored sample takes about 2 KB (1.2 KB of struct plus its GC kinds and extra figures; its
	// strings are shared between samples), so a full ring holds about 22 MB; size MaxSamples to the run
	// (run length ÷ Interval).
	DefaultMaxSamples = 10800
	// DefaultMaxScrapeShare is Options.MaxScrapeShare when zero: a scrape may take 0.5 % of wall time.
	DefaultMaxScrapeShare = 0.005
	// DefaultMaxIntervalFactor is Options.MaxInterval when zero, as a multiple of Interval: 2, so that a
	// steady window of a short phase keeps at least half the samples sampler.interval was chosen for.
	DefaultMaxIntervalFactor = 2
	// MaxMaxSamples is the largest accepted Options.MaxSamples.
	MaxMaxSamples = 1 << 20
	// maxInterned bounds the table that shares the samples' strings (sources, definitions, reasons).
	maxInterned = 4096
)

// Options configures a Sampler. At least one of PID and Endpoint must be set.
type Options struct {
	// PID is the target process whose OS figures are read; 0 means none (the OS figures are not measured).
	PID int32
	// Tree reads the OS figures of PID and of every process under it, summed (TreeProc), instead of PID's
	// alone: a server that forks workers is measured as the sum of them.
	Tree bool
	// Endpoint is the URL of the target's Prometheus endpoint ("http://127.0.0.1:9100/metrics"); "" means
	// none (the runtime figures are not measured).
	Endpoint string
	// Runtime is the target's runtime; RuntimeUnknown detects it from the first scrape that tells it, and
	// keeps it for the samples after, so that a window never mixes two readings of the series.
	Runtime Runtime
	// Interval is the time between samples taken by Run; 0 means DefaultInterval.
	Interval time.Duration
	// Timeout bounds one scrape; 0 means DefaultTimeout or Interval, whichever is shorter.
	Timeout time.Duration
	// MaxBytes caps a scrape's body; 0 means DefaultMaxBytes.
	MaxBytes int64
	// MaxScrapeShare is the largest share of wall time the scrape of Endpoint may take (0.005: 0.5 %); 0
	// means DefaultMaxScrapeShare, a negative value keeps Interval fixed. Run measures every scrape and
	// lengthens the time to the next sample when the scrape's cost (smoothed) over the interval exceeds
	// it, up to MaxInterval; a scrape that is cheap again brings it back to Interval. A runtime whose
	// endpoint is slow to render (prom-client answers between requests on Node's event loop) is so
	// sampled less often than one that answers in a millisecond.
	MaxScrapeShare float64
	// MaxInterval is the longest time between samples the scrape's cost may lengthen Interval to; 0 means
	// DefaultMaxIntervalFactor × Interval. It bounds how few samples a steady window gets: a scrape that
	// costs more than MaxScrapeShare even then is reported (Summary's notes), not hidden.
	MaxInterval time.Duration
	// MaxSamples is the ring capacity; 0 means DefaultMaxSamples. When the ring is full the oldest sample is
	// dropped and counted (see Dropped). The ring grows to its capacity as samples arrive.
	MaxSamples int
	// Client is the HTTP client for scrapes; nil means a client of its own.
	Client *http.Client
}

// osReader reads a process's OS figures: *Proc (one process) or *TreeProc (a process and the processes
// under it).
type osReader interface {
	Read(ctx context.Context) (OSFigures, error)
}

// Sampler takes samples of one external target into a bounded ring. Run samples at the interval; SampleNow
// may be called at the same time from other goroutines, and Samples read at any time.
type Sampler struct {
	pid      int32
	endpoint string
	interval time.Duration
	// maxInterval and share bound the adaptive interval (see Options.MaxScrapeShare).
	maxInterval time.Duration
	share       float64
	timeout     time.Duration
	maxBytes    int64
	client      *http.Client
	running     atomic.Bool

	// sampleMu serialises readings: the Proc and the detected runtime are per-reading state.
	sampleMu     sync.Mutex
	proc         osReader
	runtime      Runtime
	runtimeBasis string

	// mu guards the ring; it is never held during a reading.
	mu      sync.Mutex
	ring    []Sample
	head    int // index of the oldest sample once the ring is full
	cap     int
	dropped uint64
	strs    map[string]string
}

// New validates opts and opens the target process. It fails when the PID is not running (an ExitedError) or
// the endpoint is not an http(s) URL; it does not scrape.
func New(ctx context.Context, opts Options) (*Sampler, error) {
	if opts.PID < 0 {
		return nil, fmt.Errorf("invalid pid %d: must not be negative", opts.PID)
	}
	if opts.PID == 0 && opts.Endpoint == "" {
		return nil, errors.New("nothing to sample: set a pid, an endpoint, or both")
	}
	if opts.Endpoint != "" {
		u, err := url.Parse(opts.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("invalid endpoint %q: want an http or https URL", opts.Endpoint)
		}
	}
	if _, err := ParseRuntime(string(opts.Runtime)); err != nil {
		return nil, err
	}
	if opts.Interval < 0 || opts.Timeout < 0 || opts.MaxBytes < 0 {
		return nil, errors.New("invalid options: interval, timeout and max bytes must not be negative")
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Timeout == 0 {
		opts.Timeout = min(DefaultTimeout, opts.Interval)
	}
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxScrapeShare == 0 {
		opts.MaxScrapeShare = DefaultMaxScrapeShare
	}
	if opts.MaxInterval == 0 {
		opts.MaxInterval = DefaultMaxIntervalFactor * opts.Interval
	}
	if opts.MaxInterval < opts.Interval {
		return nil, fmt.Errorf("invalid max interval %s: shorter than the interval %s", opts.MaxInterval, opts.Interval)
	}
	if opts.MaxSamples < 0 || opts.MaxSamples > MaxMaxSamples {
		return nil, fmt.Errorf("invalid max samples %d: must be in [0, %d]", opts.MaxSamples, MaxMaxSamples)
	}
	if opts.MaxSamples == 0 {
		opts.MaxSamples = DefaultMaxSamples
	}
	if opts.Client == nil {
		opts.Client = nofollow.Client(0) // a scrape follows no redirect
	}
	s := &Sampler{
		pid: opts.PID, endpoint: opts.Endpoint, interval: opts.Interval, timeout: opts.Timeout,
		maxInterval: opts.MaxInterval, share: opts.MaxScrapeShare,
		maxBytes: opts.MaxBytes, client: opts.Client, cap: opts.MaxSamples,
		runtime: opts.Runtime, strs: map[string]string{},
	}
	if opts.Runtime != RuntimeUnknown {
		s.runtimeBasis = "set by the caller"
	}
	switch {
	case opts.PID > 0 && opts.Tree:
		p, err := OpenTree(opts.PID)
		if err != nil {
			return nil, err
		}
		s.proc = p
	case opts.PID > 0:
		p, err := OpenProc(ctx, opts.PID)
		if err != nil {
			return nil, err
		}
		s.proc = p
	}
	return s, nil
}

// Run samples at once, then every Interval until ctx is done, then takes a final sample and returns nil. When
// the target process exits it stores that sample and returns its ExitedError. Run it in a goroutine you own:
// it returns only then. Only one Run may be active at a time.
func (s *Sampler) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("cannot run sampler: it is already running")
	}
	defer s.running.Store(false)

	var cost time.Duration // the scrapes' smoothed cost
	next := func(smp Sample) time.Duration {
		cost = smoothCost(cost, time.Duration(smp.ScrapeNanoseconds))
		return AdaptInterval(s.interval, s.maxInterval, cost, s.share)
	}
	smp, err := s.step(ctx)
	if err != nil {
		return err
	}
	// Each sample is due an interval after the previous one started, as a ticker would
	// make it, but the interval is chosen after each scrape.
	due := smp.Time.Add(next(smp))
	t := time.NewTimer(time.Until(due))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// The final sample closes the series; ctx has ended, so it gets a context of its own.
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout+time.Second)
			defer cancel()
			_, err := s.step(fctx)
			return err
		case <-t.C:
			smp, err := s.step(ctx)
			if err != nil {
				return err
			}
			// A scrape that overran the interval starts the next one an interval after it began, or at once.
			due = smp.Time.Add(next(smp))
			t.Reset(max(time.Until(due), 0))
		}
	}
}

// AdaptInterval is the time to the next sample: base, lengthened so that a scrape costing cost takes at
// most share of the time between samples (cost ÷ share), and at most longest. A share ≤ 0 or a cost of
// 0 (nothing scraped) keeps base.
func AdaptInterval(base, longest, cost time.Duration, share float64) time.Duration {
	if share <= 0 || cost <= 0 {
		return base
	}
	want := time.Duration(float64(cost) / share)
	return min(max(base, want), max(base, longest))
}

// smoothCost folds one scrape's cost into the smoothed cost (an exponentially weighted mean, a quarter
// weight on the newest): one slow scrape moves the interval, but not all the way. A sample without a
// scrape (0) leaves it unchanged; the first scrape sets it.
func smoothCost(prev, cur time.Duration) time.Duration {
	switch {
	case cur <= 0:
		return prev
	case prev <= 0:
		return cur
	}
	return (3*prev + cur) / 4
}

// step takes a sample for Run and returns it with its ExitedError, if the process has exited; other
// failures are in the stored sample.
func (s *Sampler) step(ctx context.Context) (Sample, error) {
	smp, err := s.SampleNow(ctx)
	var exit *ExitedError
	if errors.As(err, &exit) {
		return smp, exit
	}
	return smp, nil
}

// SampleNow takes one sample, stores it, and returns it with the errors of its reading joined (an
// ExitedError when the process has exited). A sample is stored and returned even when parts of it failed:
// those figures are not measured, with the error as reason.
func (s *Sampler) SampleNow(ctx context.Context) (Sample, error) {
	s.sampleMu.Lock()
	start := time.Now()
	smp := Sample{Time: start, PID: s.pid, Endpoint: s.endpoint}
	var errs []error

	if s.proc != nil {
		f, err := s.proc.Read(ctx)
		smp.OS = f
		if err != nil {
			errs = append(errs, err)
		}
	} else {
		smp.OS = osNotMeasured(0, "no pid was given")
	}

	if s.endpoint == "" {
		smp.Runtime = runtimeNotMeasured(s.runtime, s.runtimeBasis, "no endpoint was given")
	} else if exp, err := s.scrape(ctx, &smp); err != nil {
		smp.Runtime = runtimeNotMeasured(s.runtime, s.runtimeBasis, err.Error())
		errs = append(errs, err)
	} else {
		rf, err := MapRuntime(exp, s.runtime)
		if err != nil {
			errs = append(errs, err)
		} else if s.runtime == RuntimeUnknown {
			s.runtime, s.runtimeBasis = rf.Runtime, rf.RuntimeBasis
		} else {
			rf.RuntimeBasis = s.runtimeBasis
		}
		smp.Runtime = rf
	}
	smp.CostNanoseconds = int64(time.Since(start))
	err := errors.Join(errs...)
	if err != nil {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		smp.Error = strings.Join(msgs, "; ")
	}
	s.sampleMu.Unlock()

	s.mu.Lock()
	s.intern(&smp)
	if len(s.ring) < s.cap {
		s.ring = append(s.ring, smp)
	} else {
		s.ring[s.head] = smp
		s.head = (s.head + 1) % s.cap
		s.dropped++
	}
	s.mu.Unlock()
	return smp, err
}

// scrape scrapes the endpoint and records the scrape's own cost in smp: its wall time and body size.
func (s *Sampler) scrape(ctx context.Context, smp *Sample) (Exposition, error) {
	start := time.Now()
	exp, n, err := Scrape(ctx, s.client, s.endpoint, s.timeout, s.maxBytes)
	smp.ScrapeNanoseconds, smp.ScrapeBytes = int64(time.Since(start)), n
	return exp, err
}

// Samples returns a copy of the stored samples whose Time is in [from, to], oldest first.
func (s *Sampler) Samples(from, to time.Time) []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sample
	for i := range s.ring {
		smp := s.ring[(s.head+i)%len(s.ring)]
		if smp.Time.Before(from) || smp.Time.After(to) {
			continue
		}
		out = append(out, smp)
	}
	return out
}

// Last returns the newest stored sample, and false when there is none.
func (s *Sampler) Last() (Sample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ring) == 0 {
		return Sample{}, false
	}
	return s.ring[(s.head+len(s.ring)-1)%len(s.ring)], true
}

// Dropped returns how many samples the full ring has dropped, oldest first.
func (s *Sampler) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// intern makes the sample's strings share memory with earlier samples' equal strings, so that the ring's
// size is its samples' structs, not thousands of copies of the same definitions. Callers hold s.mu.
func (s *Sampler) intern(smp *Sample) {
	str := func(p *string) {
		if v, ok := s.strs[*p]; ok {
			*p = v
		} else if len(s.strs) < maxInterned {
			s.strs[*p] = *p
		}
	}
	fig := func(f *Figure) {
		str(&f.Name)
		str(&f.Unit)
		str(&f.Source)
		str(&f.Definition)
		str(&f.Reason)
	}
	for _, f := range []*Figure{&smp.OS.UserCPUSeconds, &smp.OS.SystemCPUSeconds, &smp.OS.RSSBytes, &smp.OS.Threads,
		&smp.OS.FDs, &smp.Runtime.GCCycles, &smp.Runtime.GCSeconds, &smp.Runtime.RuntimeCPUSeconds,
		&smp.Runtime.AllocBytes, &smp.Runtime.HeapLiveBytes, &smp.Runtime.HeapUsedBytes} {
		fig(f)
	}
	for i := range smp.Runtime.GCKinds {
		str(&smp.Runtime.GCKinds[i].Kind)
		fig(&smp.Runtime.GCKinds[i].Cycles)
		fig(&smp.Runtime.GCKinds[i].Seconds)
	}
	for i := range smp.Runtime.Extra {
		fig(&smp.Runtime.Extra[i])
	}
	str(&smp.Runtime.RuntimeBasis)
	str(&smp.Error)
}
