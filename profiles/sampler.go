package profiles

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	"github.com/soakd/soakd/internal/procstat"
)

const (
	// DefaultInterval is the sampling interval used when Options.Interval is zero: one second resolves
	// ramp edges well while costing the target a negligible share of a core (see BenchmarkSample).
	DefaultInterval = time.Second
	// DefaultMaxSamples is the ring capacity used when Options.MaxSamples is zero: 24 hours at the default
	// interval. The ring is allocated up front at 176 bytes per sample (a 144-byte record plus arena room
	// for pauseEntriesPerSample 8-byte pause entries), about 15 MB here. It holds no pointers, so the GC
	// never scans it, but it does count in the live heap and so raises the heap goal: size MaxSamples to
	// the run (run length / Interval) rather than relying on this default for short runs.
	DefaultMaxSamples = 86400
	// MaxMaxSamples is the largest accepted Options.MaxSamples (a bound that keeps ring indices in 32 bits
	// and the up-front allocation below about 3 GB).
	MaxMaxSamples = 1 << 24

	// pauseEntriesPerSample sizes the pause-delta arena: room for this many non-empty buckets per sample
	// on average. A 1 s interval usually sees a few buckets; busier intervals borrow from quieter ones, and
	// only a sustained excess drops old samples early (counted in Dropped).
	pauseEntriesPerSample = 4
	// maxPhases bounds the phase-name intern table; a soak has a few names per round.
	maxPhases = 4096
	// maxOSErrors bounds the OS-error-text intern table; the same failure repeats with the same text.
	maxOSErrors = 64

	metricGCCPU      = "/cpu/classes/gc/total:cpu-seconds"
	metricTotalCPU   = "/cpu/classes/total:cpu-seconds"
	metricCycles     = "/gc/cycles/total:gc-cycles"
	metricForced     = "/gc/cycles/forced:gc-cycles"
	metricAllocBytes = "/gc/heap/allocs:bytes"
	metricAllocObjs  = "/gc/heap/allocs:objects"
	metricLive       = "/gc/heap/live:bytes"
	metricGoal       = "/gc/heap/goal:bytes"
	metricObjects    = "/gc/heap/objects:objects"
	metricGoroutines = "/sched/goroutines:goroutines"
	metricPauses     = "/sched/pauses/total/gc:seconds"
)

// Indices of the metrics in Sampler.metrics, in the order newMetricSamples lists them.
const (
	iGCCPU = iota
	iTotalCPU
	iCycles
	iForced
	iAllocBytes
	iAllocObjs
	iLive
	iGoal
	iObjects
	iGoroutines
	iPauses
	numMetrics
)

// Options configures a Sampler. The zero value samples the calling process every second and keeps 24 hours.
type Options struct {
	// Interval is the time between periodic samples taken by Run; 0 means DefaultInterval.
	Interval time.Duration
	// PID is the process whose OS figures (CPU times, RSS, FDs, threads) are read; 0 means this process.
	// The runtime/metrics figures are always this process's own, so anything else is useful only in tests.
	PID int32
	// MaxSamples is the ring capacity in samples; 0 means DefaultMaxSamples. When the ring is full the
	// oldest sample is dropped and counted (see Dropped). The whole ring is allocated in New, so the
	// sampler's heap footprint is the same in every phase.
	MaxSamples int
}

// Sampler records a bounded time series of the process's resource use. Run takes periodic samples;
// SetPhase and SampleNow may be called from other goroutines at the same time, and Samples may be read
// at any time.
type Sampler struct {
	interval time.Duration
	epoch    time.Time // time origin of record offsets; carries a monotonic reading
	buckets  []float64 // pause histogram boundaries in seconds; immutable after New
	running  atomic.Bool

	// sampleMu serialises readings: metrics.Read reuses the values in metrics, prevPauses and scratch are
	// per-reading state, and gopsutil's Process caches fields without locking.
	sampleMu   sync.Mutex
	proc       *process.Process
	metrics    []metrics.Sample
	prevPauses []uint64
	scratch    []pauseEntry

	// mu guards the stored series and the current phase. It is never held during a reading, so Samples
	// does not wait for /proc reads.
	mu         sync.Mutex
	phase      uint16
	phases     *interner
	osErrs     *interner
	ring       *ring
	lastOffset int64
}

// New validates opts, reads the pause histogram's bucket boundaries and allocates the ring. It fails when
// a runtime metric is unsupported by this Go version or the process PID does not exist.
func New(opts Options) (*Sampler, error) {
	if opts.Interval < 0 {
		return nil, fmt.Errorf("invalid sampler interval %v: must not be negative", opts.Interval)
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.MaxSamples < 0 || opts.MaxSamples > MaxMaxSamples {
		return nil, fmt.Errorf("invalid max samples %d: must be in [0, %d]", opts.MaxSamples, MaxMaxSamples)
	}
	if opts.MaxSamples == 0 {
		opts.MaxSamples = DefaultMaxSamples
	}
	if opts.PID < 0 {
		return nil, fmt.Errorf("invalid pid %d: must not be negative", opts.PID)
	}
	if opts.PID == 0 {
		opts.PID = int32(os.Getpid())
	}
	proc, err := process.NewProcess(opts.PID)
	if err != nil {
		return nil, fmt.Errorf("cannot open process %d: %w", opts.PID, err)
	}

	ms := newMetricSamples()
	metrics.Read(ms)
	for _, m := range ms {
		if m.Value.Kind() == metrics.KindBad {
			return nil, fmt.Errorf("cannot sample runtime metric %s: not supported by this Go runtime", m.Name)
		}
	}
	h := ms[iPauses].Value.Float64Histogram()
	if len(h.Buckets) != len(h.Counts)+1 || len(h.Counts) > 1<<16 {
		return nil, fmt.Errorf("cannot use pause histogram %s: %d boundaries for %d buckets",
			metricPauses, len(h.Buckets), len(h.Counts))
	}

	s := &Sampler{
		interval:   opts.Interval,
		epoch:      time.Now(),
		buckets:    append([]float64(nil), h.Buckets...),
		proc:       proc,
		metrics:    ms,
		prevPauses: append([]uint64(nil), h.Counts...),
		scratch:    make([]pauseEntry, 0, len(h.Counts)),
		phases:     newInterner(maxPhases, "(phase names beyond the table limit)"),
		osErrs:     newInterner(maxOSErrors, "(os read error texts beyond the table limit)"),
		ring:       newRing(opts.MaxSamples, max(pauseEntriesPerSample*opts.MaxSamples, 2*len(h.Counts))),
		lastOffset: -1,
	}
	return s, nil
}

func newMetricSamples() []metrics.Sample {
	ms := make([]metrics.Sample, numMetrics)
	ms[iGCCPU].Name = metricGCCPU
	ms[iTotalCPU].Name = metricTotalCPU
	ms[iCycles].Name = metricCycles
	ms[iForced].Name = metricForced
	ms[iAllocBytes].Name = metricAllocBytes
	ms[iAllocObjs].Name = metricAllocObjs
	ms[iLive].Name = metricLive
	ms[iGoal].Name = metricGoal
	ms[iObjects].Name = metricObjects
	ms[iGoroutines].Name = metricGoroutines
	ms[iPauses].Name = metricPauses
	return ms
}

// Run samples immediately, then every Interval until ctx is done, then takes a final sample and returns
// nil. Only one Run may be active at a time; a second concurrent call returns an error at once.
func (s *Sampler) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("cannot run sampler: it is already running")
	}
	defer s.running.Store(false)

	s.sample(ctx, false)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// The final sample closes the series; it must not be skipped because ctx has ended.
			s.sample(context.WithoutCancel(ctx), false)
			return nil
		case <-t.C:
			s.sample(ctx, false)
		}
	}
}

// SetPhase tags subsequent samples with name ("" between phases) and takes a sample right away, so a
// phase's first sample is at its start rather than up to one Interval later.
func (s *Sampler) SetPhase(name string) {
	s.mu.Lock()
	s.phase = s.phases.id(name)
	s.mu.Unlock()
	s.sample(context.Background(), false)
}

// SampleNow takes and stores one sample and returns it. Use it at phase edges and in tests.
func (s *Sampler) SampleNow() Sample {
	return s.sample(context.Background(), true)
}

// Samples returns a copy of the stored samples whose Time is in [from, to], oldest first.
func (s *Sampler) Samples(from, to time.Time) []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sample
	for i := range s.ring.n {
		rec := s.ring.at(i)
		t := s.epoch.Add(time.Duration(rec.offset))
		if t.Before(from) || t.After(to) {
			continue
		}
		out = append(out, s.ring.toSample(rec, s.epoch, s.phases, s.osErrs))
	}
	return out
}

// PauseBuckets returns a copy of the GC pause histogram's bucket boundaries in seconds: bucket i of a
// Sample's GCPauses spans [b[i], b[i+1]). The first boundary is -Inf and the last +Inf.
func (s *Sampler) PauseBuckets() []float64 {
	return append([]float64(nil), s.buckets...)
}

// Dropped returns how many samples have been dropped from the full ring since New, oldest first.
func (s *Sampler) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ring.dropped
}

// sample takes one reading and stores it; when export is true it also returns the stored sample.
func (s *Sampler) sample(ctx context.Context, export bool) Sample {
	s.sampleMu.Lock()
	defer s.sampleMu.Unlock()

	start := time.Now()
	s.mu.Lock()
	phase := s.phase
	s.mu.Unlock()

	metrics.Read(s.metrics)
	rec := record{
		phase:   phase,
		gcCPU:   s.metrics[iGCCPU].Value.Float64(),
		rtCPU:   s.metrics[iTotalCPU].Value.Float64(),
		cycles:  s.metrics[iCycles].Value.Uint64(),
		forced:  s.metrics[iForced].Value.Uint64(),
		allocB:  s.metrics[iAllocBytes].Value.Uint64(),
		allocO:  s.metrics[iAllocObjs].Value.Uint64(),
		live:    s.metrics[iLive].Value.Uint64(),
		goal:    s.metrics[iGoal].Value.Uint64(),
		objects: s.metrics[iObjects].Value.Uint64(),
		gor:     s.metrics[iGoroutines].Value.Uint64(),
	}
	s.scratch = s.scratch[:0]
	counts := s.metrics[iPauses].Value.Float64Histogram().Counts
	for i := range min(len(counts), len(s.prevPauses)) {
		if c, p := counts[i], s.prevPauses[i]; c > p {
			s.scratch = append(s.scratch, pauseEntry{bucket: uint16(i), count: saturate32(c - p)})
			s.prevPauses[i] = c
		}
	}
	osErr := s.readProc(ctx, &rec)
	rec.cost = int64(time.Since(start))

	s.mu.Lock()
	defer s.mu.Unlock()
	// Strictly increasing offsets keep the series well ordered even when the clock does not move between
	// two readings (as under testing/synctest); a real clock always moves by more than 1 ns.
	rec.offset = max(int64(start.Sub(s.epoch)), s.lastOffset+1)
	s.lastOffset = rec.offset
	if osErr != "" {
		rec.osErr = s.osErrs.id(osErr)
	}
	s.ring.push(rec, s.scratch)
	if !export {
		return Sample{}
	}
	return s.ring.toSample(s.ring.at(s.ring.n-1), s.epoch, s.phases, s.osErrs)
}

// readProc fills rec's OS figures and returns the text of every failed read ("" when none failed).
func (s *Sampler) readProc(ctx context.Context, rec *record) string {
	var failed []string
	if t, err := s.proc.TimesWithContext(ctx); err != nil {
		rec.procMissing = true
		failed = append(failed, "cpu times: "+err.Error())
	} else {
		rec.user, rec.sys = t.User, t.System
	}
	if m, err := s.proc.MemoryInfoWithContext(ctx); err != nil {
		rec.procMissing = true
		failed = append(failed, "memory info: "+err.Error())
	} else {
		rec.rss = m.RSS
	}
	if n, err := s.proc.NumFDsWithContext(ctx); err != nil {
		rec.fds = -1
		failed = append(failed, "open fds: "+err.Error())
	} else {
		rec.fds = n
	}
	if n, err := s.proc.NumThreadsWithContext(ctx); err != nil {
		rec.threads = -1
		failed = append(failed, "threads: "+err.Error())
	} else {
		rec.threads = n
	}
	if w, ok := procstat.RunqueueWait(int(s.proc.Pid)); ok {
		rec.wait, rec.waitOK = w.Seconds(), true
	}
	if rec.procMissing {
		rec.user, rec.sys, rec.rss = 0, 0, 0
	}
	return strings.Join(failed, "; ")
}
