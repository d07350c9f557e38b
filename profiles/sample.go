package profiles

import "time"

// Sample is one reading of the target process. Cumulative fields count from process start; Summarize
// differences them over a window. It is plain data: the report stores samples as JSON.
type Sample struct {
	// Time is when the reading started. A Sampler stamps its samples with strictly increasing times.
	Time time.Time `json:"time"`
	// Phase is the phase that was running when the sample was taken ("" between phases).
	Phase string `json:"phase"`

	// GCCPUSeconds is /cpu/classes/gc/total:cpu-seconds, the runtime's cumulative estimate of CPU seconds
	// spent on GC. The runtime updates it only when a GC cycle ends; compare it only with RuntimeCPUSeconds.
	GCCPUSeconds float64 `json:"gc_cpu_seconds"`
	// RuntimeCPUSeconds is /cpu/classes/total:cpu-seconds, GOMAXPROCS integrated over wall time (cumulative,
	// seconds). It is the denominator of GC % and is not comparable with the OS CPU times below.
	RuntimeCPUSeconds float64 `json:"runtime_cpu_seconds"`
	// GCCycles is /gc/cycles/total:gc-cycles, the cumulative count of completed GC cycles.
	GCCycles uint64 `json:"gc_cycles"`
	// GCForcedCycles is /gc/cycles/forced:gc-cycles, the cumulative count of cycles forced by the
	// application (runtime.GC), which soakd triggers between phases.
	GCForcedCycles uint64 `json:"gc_forced_cycles"`
	// AllocBytes is /gc/heap/allocs:bytes, cumulative bytes allocated on the heap.
	AllocBytes uint64 `json:"alloc_bytes"`
	// AllocObjects is /gc/heap/allocs:objects, cumulative count of heap allocations.
	AllocObjects uint64 `json:"alloc_objects"`
	// HeapLiveBytes is /gc/heap/live:bytes, bytes of heap marked live by the previous GC (a gauge).
	HeapLiveBytes uint64 `json:"heap_live_bytes"`
	// HeapGoalBytes is /gc/heap/goal:bytes, the heap size at which the next GC cycle will start (a gauge).
	HeapGoalBytes uint64 `json:"heap_goal_bytes"`
	// HeapObjects is /gc/heap/objects:objects, objects live or unswept in the heap (a gauge).
	HeapObjects uint64 `json:"heap_objects"`
	// Goroutines is /sched/goroutines:goroutines, the number of live goroutines (a gauge).
	Goroutines uint64 `json:"goroutines"`
	// GCPauses is the change of the stop-the-world GC pause histogram (/sched/pauses/total/gc:seconds) since
	// the previous sample (for a sampler's first sample: since New), listing non-empty buckets only. Bucket
	// indices refer to Sampler.PauseBuckets.
	GCPauses []BucketCount `json:"gc_pauses,omitempty"`

	// UserCPUSeconds is the process's cumulative user-mode CPU time according to the OS, in seconds.
	UserCPUSeconds float64 `json:"user_cpu_seconds"`
	// SystemCPUSeconds is the process's cumulative kernel-mode CPU time according to the OS, in seconds.
	SystemCPUSeconds float64 `json:"system_cpu_seconds"`
	// RSSBytes is the process's resident set size in bytes.
	RSSBytes uint64 `json:"rss_bytes"`
	// ProcMissing is true when the OS CPU times or the RSS could not be read; those fields are then zero and
	// Summarize leaves this sample out of the CPU and RSS figures.
	ProcMissing bool `json:"proc_missing,omitempty"`
	// FDs is the number of open file descriptors, or -1 when it could not be read.
	FDs int32 `json:"fds"`
	// Threads is the number of OS threads, or -1 when it could not be read.
	Threads int32 `json:"threads"`
	// RunqueueWaitSeconds is the cumulative time the process's threads spent
	// ready to run but waiting for a CPU (Linux schedstat), in seconds: with
	// the CPU times it gives the process's CPU demand. RunqueueWaitMissing is
	// true when it could not be read.
	RunqueueWaitSeconds float64 `json:"runqueue_wait_seconds"`
	RunqueueWaitMissing bool    `json:"runqueue_wait_missing,omitempty"`
	// OSError describes every OS read that failed for this sample ("" when all succeeded). A failed read is
	// recorded, never fatal: the runtime figures of the sample are still good.
	OSError string `json:"os_error,omitempty"`

	// CostNanoseconds is the wall time the sampler spent taking this sample, in nanoseconds: the harness's
	// own overhead, reported so it can be checked against the differences the KPIs resolve.
	CostNanoseconds int64 `json:"cost_ns"`
}

// BucketCount is one non-empty bucket of a sparse histogram delta: Count observations fell into bucket
// Bucket, which spans [buckets[Bucket], buckets[Bucket+1]) of the matching boundaries.
type BucketCount struct {
	// Bucket is the bucket's index into the histogram's counts (boundaries Bucket and Bucket+1).
	Bucket int `json:"bucket"`
	// Count is the number of observations added to the bucket.
	Count uint64 `json:"count"`
}
