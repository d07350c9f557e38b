package profiles

import (
	"math"
	"time"
)

// record is the stored form of a Sample. It holds no pointers (times are offsets from the sampler's epoch;
// phase and OS error texts are indices into small intern tables; pause deltas live in a separate
// pointer-free FIFO), so the ring is a single no-scan allocation the garbage collector never traverses:
// a day of samples must not add mark work to the process whose GC is being measured.
type record struct {
	offset  int64 // nanoseconds since the sampler's epoch (monotonic clock)
	cost    int64 // wall nanoseconds spent sampling
	gcCPU   float64
	rtCPU   float64
	user    float64
	sys     float64
	cycles  uint64
	forced  uint64
	allocB  uint64
	allocO  uint64
	live    uint64
	goal    uint64
	objects uint64
	gor     uint64
	rss     uint64
	fds     int32
	threads int32
	wait    float64 // run-queue wait, seconds (procstat); meaningful when waitOK

	pauseStart  uint32 // index of the first pause entry in ring.pauses
	pauseLen    uint16 // number of pause entries (at most the histogram's bucket count)
	phase       uint16 // index into Sampler.phases
	osErr       uint16 // index into Sampler.osErrs; 0 means no error
	procMissing bool
	waitOK      bool
}

// pauseEntry is one non-empty bucket of a pause histogram delta. A count is saturated at math.MaxUint32:
// four billion GC pauses within one sampling interval cannot happen.
type pauseEntry struct {
	count  uint32
	bucket uint16
}

// ring is a fixed-capacity FIFO of records plus a FIFO arena for their pause entries. Both are allocated
// once; when either is full the oldest record (and its entries) is dropped and counted.
type ring struct {
	recs    []record
	head    int // index of the oldest record
	n       int // number of records held
	pauses  []pauseEntry
	pHead   int // index of the oldest pause entry
	pUsed   int // number of pause entries held
	dropped uint64
}

// newRing allocates a ring for capacity records and pauseCapacity pause entries. pauseCapacity must be at
// least the largest number of entries a single record can carry.
func newRing(capacity, pauseCapacity int) *ring {
	return &ring{recs: make([]record, capacity), pauses: make([]pauseEntry, pauseCapacity)}
}

// push appends rec with its pause entries, dropping the oldest records as needed to make room.
func (r *ring) push(rec record, entries []pauseEntry) {
	for r.n == len(r.recs) || len(r.pauses)-r.pUsed < len(entries) {
		r.dropOldest()
	}
	rec.pauseStart = uint32((r.pHead + r.pUsed) % len(r.pauses))
	rec.pauseLen = uint16(len(entries))
	for i, e := range entries {
		r.pauses[(int(rec.pauseStart)+i)%len(r.pauses)] = e
	}
	r.pUsed += len(entries)
	r.recs[(r.head+r.n)%len(r.recs)] = rec
	r.n++
}

func (r *ring) dropOldest() {
	old := &r.recs[r.head]
	r.pHead = (r.pHead + int(old.pauseLen)) % len(r.pauses)
	r.pUsed -= int(old.pauseLen)
	r.head = (r.head + 1) % len(r.recs)
	r.n--
	r.dropped++
}

// at returns the i-th oldest record held (0 <= i < r.n).
func (r *ring) at(i int) *record {
	return &r.recs[(r.head+i)%len(r.recs)]
}

// pausesOf returns rec's pause entries as a new slice (nil when there are none).
func (r *ring) pausesOf(rec *record) []BucketCount {
	if rec.pauseLen == 0 {
		return nil
	}
	out := make([]BucketCount, rec.pauseLen)
	for i := range out {
		e := r.pauses[(int(rec.pauseStart)+i)%len(r.pauses)]
		out[i] = BucketCount{Bucket: int(e.bucket), Count: uint64(e.count)}
	}
	return out
}

// saturate32 converts a pause count to the stored width.
func saturate32(v uint64) uint32 {
	if v > math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(v)
}

// interner maps a bounded set of strings to small indices so records can refer to them without pointers.
// Index 0 is always "". Once max entries exist, further new strings map to the overflow entry, so memory
// stays bounded whatever the callers pass.
type interner struct {
	names    []string
	index    map[string]uint16
	max      int
	overflow string
}

func newInterner(max int, overflow string) *interner {
	return &interner{names: []string{""}, index: map[string]uint16{"": 0}, max: max, overflow: overflow}
}

// id returns the index of s, adding s when there is room.
func (in *interner) id(s string) uint16 {
	if i, ok := in.index[s]; ok {
		return i
	}
	if len(in.names) >= in.max-1 {
		s = in.overflow
		if i, ok := in.index[s]; ok {
			return i
		}
	}
	i := uint16(len(in.names))
	in.names = append(in.names, s)
	in.index[s] = i
	return i
}

// name returns the string with index i.
func (in *interner) name(i uint16) string {
	return in.names[i]
}

// toSample expands a record into the exported form; epoch is the sampler's time origin.
func (r *ring) toSample(rec *record, epoch time.Time, phases, osErrs *interner) Sample {
	return Sample{
		Time:                epoch.Add(time.Duration(rec.offset)),
		Phase:               phases.name(rec.phase),
		GCCPUSeconds:        rec.gcCPU,
		RuntimeCPUSeconds:   rec.rtCPU,
		GCCycles:            rec.cycles,
		GCForcedCycles:      rec.forced,
		AllocBytes:          rec.allocB,
		AllocObjects:        rec.allocO,
		HeapLiveBytes:       rec.live,
		HeapGoalBytes:       rec.goal,
		HeapObjects:         rec.objects,
		Goroutines:          rec.gor,
		GCPauses:            r.pausesOf(rec),
		UserCPUSeconds:      rec.user,
		SystemCPUSeconds:    rec.sys,
		RSSBytes:            rec.rss,
		ProcMissing:         rec.procMissing,
		FDs:                 rec.fds,
		Threads:             rec.threads,
		RunqueueWaitSeconds: rec.wait,
		RunqueueWaitMissing: !rec.waitOK,
		OSError:             osErrs.name(rec.osErr),
		CostNanoseconds:     rec.cost,
	}
}
