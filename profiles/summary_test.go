package profiles

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// origin is an arbitrary start time for synthetic series.
func origin() time.Time { return time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC) }

// series returns n samples one second apart with every cumulative counter advancing by one unit per
// second, so tests only set what they examine.
func series(n int) []Sample {
	ss := make([]Sample, n)
	for i := range ss {
		ss[i] = Sample{
			Time:              origin().Add(time.Duration(i) * time.Second),
			GCCPUSeconds:      float64(i) * 0.05,
			RuntimeCPUSeconds: float64(i) * 2,
			GCCycles:          uint64(i),
			AllocBytes:        uint64(i) * 1000,
			AllocObjects:      uint64(i) * 10,
			UserCPUSeconds:    float64(i) * 0.1,
			SystemCPUSeconds:  float64(i) * 0.05,
			RSSBytes:          1 << 20,
			FDs:               10,
			Threads:           5,
			CostNanoseconds:   100_000,
		}
	}
	return ss
}

func TestSummarizeGCPercent(t *testing.T) {
	f := func(name string, gc0, gc1, total0, total1, want float64, wantKnown bool) {
		t.Helper()
		ss := series(3)
		ss[0].GCCPUSeconds, ss[2].GCCPUSeconds = gc0, gc1
		ss[0].RuntimeCPUSeconds, ss[1].RuntimeCPUSeconds, ss[2].RuntimeCPUSeconds = total0, total0, total1
		ss[1].GCCPUSeconds = gc0
		got, err := Summarize(ss, nil, 2)
		if err != nil {
			t.Fatalf("%s: Summarize: %v", name, err)
		}
		if math.Abs(got.GCPercent-want) > 1e-9 || got.GCPercentKnown != wantKnown {
			t.Errorf("%s: got gc %% %v known %v, want %v known %v", name, got.GCPercent, got.GCPercentKnown,
				want, wantKnown)
		}
		if hasNote := len(got.Notes) > 0 && strings.Contains(strings.Join(got.Notes, " "), "gc_percent"); hasNote == wantKnown {
			t.Errorf("%s: got notes %q, want a gc_percent note only when not known", name, got.Notes)
		}
	}
	f("0.2 of 4 cpu-s", 1.0, 1.2, 10, 14, 5, true)
	f("counters far from zero", 100, 100.5, 1000, 1010, 5, true)
	f("no gc cpu", 3, 3, 10, 14, 0, true)
	f("no cycle ended", 1, 1, 10, 10, 0, false)
}

func TestSummarizeCPU(t *testing.T) {
	ss := series(11) // 10 s window, 0.15 cpu-s per second
	got, err := Summarize(ss, nil, 2)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	f := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("got %s %v, want %v", name, got, want)
		}
	}
	f("window_seconds", got.WindowSeconds, 10)
	f("cpu_seconds", got.CPUSeconds, 1.5)
	f("cpu_core_percent", got.CPUCorePercent, 15)
	f("cpu_machine_percent", got.CPUMachinePercent, 7.5)
	if !got.CPUKnown || len(got.Notes) != 0 {
		t.Errorf("got cpu known %v notes %q, want known and no notes", got.CPUKnown, got.Notes)
	}

	// OS reads failed at both edges: CPU covers samples 1..9 only, and a note says so.
	ss[0].ProcMissing, ss[0].UserCPUSeconds, ss[0].SystemCPUSeconds = true, 0, 0
	ss[10].ProcMissing, ss[10].UserCPUSeconds, ss[10].SystemCPUSeconds = true, 0, 0
	got, err = Summarize(ss, nil, 4)
	if err != nil {
		t.Fatalf("Summarize with missing edges: %v", err)
	}
	f("edge cpu_seconds", got.CPUSeconds, 1.2)
	f("edge cpu_core_percent", got.CPUCorePercent, 15)
	f("edge cpu_machine_percent", got.CPUMachinePercent, 3.75)
	if len(got.Notes) != 1 || !strings.Contains(got.Notes[0], "8.000 s of the 10.000 s") {
		t.Errorf("got notes %q, want one note on the 8 s cpu span", got.Notes)
	}

	// Only one sample with OS figures: CPU is unknown.
	for i := 1; i < 10; i++ {
		ss[i].ProcMissing = i != 5
	}
	got, err = Summarize(ss, nil, 4)
	if err != nil {
		t.Fatalf("Summarize with one os sample: %v", err)
	}
	if got.CPUKnown || got.CPUSeconds != 0 || got.CPUMachinePercent != 0 {
		t.Errorf("got cpu known %v seconds %v machine %v, want unknown and zero", got.CPUKnown, got.CPUSeconds,
			got.CPUMachinePercent)
	}
}

func TestSummarizeCountersAndPeaks(t *testing.T) {
	ss := series(5) // 4 s window
	ss[0].GCForcedCycles, ss[4].GCForcedCycles = 7, 9
	ss[1].GCForcedCycles, ss[2].GCForcedCycles, ss[3].GCForcedCycles = 7, 8, 8
	lives := []uint64{100, 300, 200, 250, 150}
	for i := range ss {
		ss[i].HeapLiveBytes = lives[i]
		ss[i].HeapGoalBytes = 2 * lives[i]
		ss[i].HeapObjects = uint64(i) + 40
		ss[i].Goroutines = uint64(10 + i%3)
		ss[i].RSSBytes = uint64(1000 + i)
		ss[i].FDs = int32(20 - i)
		ss[i].Threads = int32(3 + i)
		ss[i].CostNanoseconds = int64(50_000 + 50_000*(i%2)) // mean 70 µs
	}
	ss[4].ProcMissing, ss[4].RSSBytes = true, 0 // a missing read must not lower or zero the peak
	ss[4].FDs, ss[4].Threads = -1, -1

	got, err := Summarize(ss, nil, 2)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	want := Summary{
		WindowSeconds:         4,
		Samples:               5,
		Cores:                 2,
		CPUKnown:              true,
		CPUSeconds:            got.CPUSeconds, // checked in TestSummarizeCPU
		CPUMachinePercent:     got.CPUMachinePercent,
		CPUCorePercent:        got.CPUCorePercent,
		GCPercentKnown:        true,
		GCPercent:             2.5,
		GCCycles:              4,
		GCForcedCycles:        2,
		GCAutomaticCycles:     2,
		GCIntervalMeanSeconds: 1,
		GCIntervalMaxSeconds:  1,
		AllocBytes:            4000,
		AllocObjects:          40,
		AllocBytesPerSecond:   1000,
		AllocObjectsPerSecond: 10,
		HeapLiveBytesMax:      300,
		HeapLiveBytesLast:     150,
		HeapGoalBytesMax:      600,
		HeapObjectsLast:       44,
		RSSBytesMax:           1003,
		GoroutinesMax:         12,
		FDsMax:                20,
		ThreadsMax:            6,
		SamplerCostMeanUs:     70,
		SamplerCorePercent:    0.007, // 70 µs per 1 s spacing
		Notes:                 got.Notes,
	}
	if math.Abs(got.SamplerCorePercent-want.SamplerCorePercent) < 1e-12 {
		want.SamplerCorePercent = got.SamplerCorePercent
	}
	if math.Abs(got.GCPercent-want.GCPercent) < 1e-9 {
		want.GCPercent = got.GCPercent
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}

	// No cycles: the mean interval is 0, not +Inf.
	for i := range ss {
		ss[i].GCCycles = 3
	}
	got, err = Summarize(ss, nil, 2)
	if err != nil {
		t.Fatalf("Summarize without cycles: %v", err)
	}
	if got.GCCycles != 0 || got.GCIntervalMeanSeconds != 0 || got.GCIntervalMaxSeconds != 0 || got.GCAutomaticCycles != 0 {
		t.Errorf("got cycles %d mean interval %v max interval %v automatic %d, want all 0", got.GCCycles,
			got.GCIntervalMeanSeconds, got.GCIntervalMaxSeconds, got.GCAutomaticCycles)
	}
	if strings.Contains(strings.Join(got.Notes, " "), "gc_interval") {
		t.Errorf("got notes %q without cycles, want no gc_interval note (no cycle is not a missing figure)", got.Notes)
	}

	// FDs and threads never read: -1.
	for i := range ss {
		ss[i].FDs, ss[i].Threads = -1, -1
	}
	got, err = Summarize(ss, nil, 2)
	if err != nil {
		t.Fatalf("Summarize without fds: %v", err)
	}
	if got.FDsMax != -1 || got.ThreadsMax != -1 {
		t.Errorf("got fds max %d threads max %d, want -1 and -1", got.FDsMax, got.ThreadsMax)
	}
}

// testBuckets are boundaries in seconds: [-Inf,0) [0,1ms) [1ms,2ms) [2ms,4ms) [4ms,+Inf).
func testBuckets() []float64 {
	return []float64{math.Inf(-1), 0, 0.001, 0.002, 0.004, math.Inf(1)}
}

func TestPauseQuantile(t *testing.T) {
	f := func(name string, buckets []float64, counts []uint64, q, want float64) {
		t.Helper()
		got, err := PauseQuantile(buckets, counts, q)
		if err != nil {
			t.Fatalf("%s: PauseQuantile(%v): %v", name, q, err)
		}
		if got != want {
			t.Errorf("%s: got q%v = %v, want %v", name, q, got, want)
		}
	}
	b := testBuckets()
	// 100 observations: 50 in [0,1ms), 49 in [1ms,2ms), 1 in [2ms,4ms).
	c := []uint64{0, 50, 49, 1, 0}
	f("p0 is the first observation", b, c, 0, 0.001)
	f("p50 is observation 50", b, c, 0.5, 0.001)
	f("p50.5 is observation 51", b, c, 0.505, 0.002)
	f("p99 is observation 99", b, c, 0.99, 0.002)
	f("p99.1 is observation 100", b, c, 0.991, 0.004)
	f("max", b, c, 1, 0.004)

	// An observation in the +Inf bucket reports the bucket's lower boundary.
	cInf := []uint64{0, 98, 0, 0, 2}
	f("p50 below the +Inf bucket", b, cInf, 0.5, 0.001)
	f("p99 in the +Inf bucket", b, cInf, 0.99, 0.004)
	f("max in the +Inf bucket", b, cInf, 1, 0.004)

	// The underflow bucket [-Inf, 0) has a finite upper boundary.
	f("underflow", b, []uint64{3, 0, 0, 0, 0}, 1, 0)

	f("empty histogram", b, []uint64{0, 0, 0, 0, 0}, 0.99, 0)
	f("no buckets at all", []float64{math.Inf(-1)}, nil, 0.5, 0)
	f("single observation", b, []uint64{0, 0, 0, 1, 0}, 0.5, 0.004)
	f("large counts", b, []uint64{0, 1 << 40, 1 << 40, 0, 0}, 0.5, 0.001)
}

func TestPauseQuantileErrors(t *testing.T) {
	f := func(name string, buckets []float64, counts []uint64, q float64, wantErr string) {
		t.Helper()
		_, err := PauseQuantile(buckets, counts, q)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: got error %v, want one containing %q", name, err, wantErr)
		}
	}
	b := testBuckets()
	c := []uint64{0, 1, 0, 0, 0}
	f("too few boundaries", b[:5], c, 0.5, "5 boundaries for 5 buckets")
	f("q below 0", b, c, -0.1, "want 0 <= q <= 1")
	f("q above 1", b, c, 1.1, "want 0 <= q <= 1")
	f("q NaN", b, c, math.NaN(), "want 0 <= q <= 1")
	f("no finite boundary", []float64{math.Inf(-1), math.Inf(1)}, []uint64{1}, 0.5, "no finite boundary")
}

func TestSummarizePauses(t *testing.T) {
	ss := series(4)
	// The first sample's delta is before the window and must be ignored.
	ss[0].GCPauses = []BucketCount{{Bucket: 4, Count: 1000}}
	ss[1].GCPauses = []BucketCount{{Bucket: 1, Count: 40}, {Bucket: 2, Count: 10}}
	ss[2].GCPauses = nil
	ss[3].GCPauses = []BucketCount{{Bucket: 1, Count: 10}, {Bucket: 2, Count: 39}, {Bucket: 3, Count: 1}}
	got, err := Summarize(ss, testBuckets(), 2)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	if got.GCPauses != 100 || got.GCPauseP50Ms != 1 || got.GCPauseP99Ms != 2 || got.GCPauseMaxMs != 4 {
		t.Errorf("got pauses %d p50 %v p99 %v max %v ms, want 100, 1, 2, 4",
			got.GCPauses, got.GCPauseP50Ms, got.GCPauseP99Ms, got.GCPauseMaxMs)
	}

	// Only the first sample has pauses: the window has none and all pause figures are 0.
	ss[1].GCPauses, ss[3].GCPauses = nil, nil
	got, err = Summarize(ss, testBuckets(), 2)
	if err != nil {
		t.Fatalf("Summarize without pauses: %v", err)
	}
	if got.GCPauses != 0 || got.GCPauseP50Ms != 0 || got.GCPauseP99Ms != 0 || got.GCPauseMaxMs != 0 {
		t.Errorf("got pauses %d p50 %v p99 %v max %v, want all 0",
			got.GCPauses, got.GCPauseP50Ms, got.GCPauseP99Ms, got.GCPauseMaxMs)
	}

	f := func(name string, bc BucketCount, buckets []float64) {
		t.Helper()
		ss[2].GCPauses = []BucketCount{bc}
		_, err := Summarize(ss, buckets, 2)
		if err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("%s: got error %v, want a bucket out of range error", name, err)
		}
	}
	f("index past the end", BucketCount{Bucket: 5, Count: 1}, testBuckets())
	f("negative index", BucketCount{Bucket: -1, Count: 1}, testBuckets())
	f("no boundaries", BucketCount{Bucket: 0, Count: 1}, nil)
}

func TestSummarizeErrors(t *testing.T) {
	f := func(name string, mutate func(ss []Sample) []Sample, cores int, wantErr string) {
		t.Helper()
		ss := mutate(series(4))
		_, err := Summarize(ss, nil, cores)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: got error %v, want one containing %q", name, err, wantErr)
		}
	}
	keep := func(ss []Sample) []Sample { return ss }
	f("no samples", func([]Sample) []Sample { return nil }, 2, "need at least 2")
	f("one sample", func(ss []Sample) []Sample { return ss[:1] }, 2, "cannot summarise 1 samples")
	f("no cores", keep, 0, "need at least 1")
	f("equal times", func(ss []Sample) []Sample { ss[2].Time = ss[1].Time; return ss }, 2, "sample 2: time")
	f("time backwards", func(ss []Sample) []Sample { ss[3].Time = ss[0].Time; return ss }, 2, "sample 3: time")
	back := func(set func(s *Sample)) func([]Sample) []Sample {
		return func(ss []Sample) []Sample { set(&ss[2]); return ss }
	}
	f("gc cpu backwards", back(func(s *Sample) { s.GCCPUSeconds = 0 }), 2, "sample 2: gc_cpu_seconds went backwards")
	f("runtime cpu backwards", back(func(s *Sample) { s.RuntimeCPUSeconds = 0 }), 2, "runtime_cpu_seconds went backwards")
	f("cycles backwards", back(func(s *Sample) { s.GCCycles = 0 }), 2, "gc_cycles went backwards (1 -> 0)")
	f("forced backwards", func(ss []Sample) []Sample { ss[0].GCForcedCycles = 3; return ss }, 2,
		"sample 1: gc_forced_cycles went backwards")
	f("alloc bytes backwards", back(func(s *Sample) { s.AllocBytes = 0 }), 2, "alloc_bytes went backwards")
	f("alloc objects backwards", back(func(s *Sample) { s.AllocObjects = 0 }), 2, "alloc_objects went backwards")
	f("user cpu backwards", back(func(s *Sample) { s.UserCPUSeconds = 0 }), 2, "user_cpu_seconds went backwards")
	f("system cpu backwards", back(func(s *Sample) { s.SystemCPUSeconds = 0 }), 2, "system_cpu_seconds went backwards")
	// A backwards step across a sample without OS figures is still caught.
	f("user cpu backwards across a missing read", func(ss []Sample) []Sample {
		ss[2].ProcMissing = true
		ss[3].UserCPUSeconds = 0
		return ss
	}, 2, "sample 3: user_cpu_seconds went backwards")
}

func TestSummarizeIgnoresZeroOSFiguresOfMissingReads(t *testing.T) {
	ss := series(4)
	ss[2].ProcMissing, ss[2].UserCPUSeconds, ss[2].SystemCPUSeconds = true, 0, 0
	if _, err := Summarize(ss, nil, 2); err != nil {
		t.Errorf("got error %v, want none: a sample without OS figures is not a counter going backwards", err)
	}
}

func TestSampleJSONRoundTrip(t *testing.T) {
	in := series(2)[1]
	in.Phase = "graphql-1"
	in.GCPauses = []BucketCount{{Bucket: 3, Count: 2}}
	in.OSError = "threads: permission denied"
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	for _, key := range []string{`"gc_cpu_seconds"`, `"runtime_cpu_seconds"`, `"gc_pauses":[{"bucket":3,"count":2}]`,
		`"user_cpu_seconds"`, `"rss_bytes"`, `"cost_ns"`, `"os_error"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("got json %s, want it to contain %s", b, key)
		}
	}
	var out Sample
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	if !out.Time.Equal(in.Time) {
		t.Errorf("got time %v, want %v", out.Time, in.Time)
	}
	out.Time = in.Time
	if !reflect.DeepEqual(out, in) {
		t.Errorf("got %+v after a round trip, want %+v", out, in)
	}
}

func TestSummarizeGCIntervalMax(t *testing.T) {
	f := func(name string, seconds []float64, cycles []uint64, want float64, wantNote bool) {
		t.Helper()
		ss := series(len(cycles))
		for i := range ss {
			ss[i].Time = origin().Add(time.Duration(seconds[i] * float64(time.Second)))
			ss[i].GCCycles = cycles[i]
		}
		got, err := Summarize(ss, nil, 2)
		if err != nil {
			t.Fatalf("%s: Summarize: %v", name, err)
		}
		if math.Abs(got.GCIntervalMaxSeconds-want) > 1e-9 {
			t.Errorf("%s: got gc_interval_max_seconds %v, want %v", name, got.GCIntervalMaxSeconds, want)
		}
		hasNote := strings.Contains(strings.Join(got.Notes, " "), "gc_interval_max_seconds")
		if hasNote != wantNote {
			t.Errorf("%s: got notes %q, want a gc_interval_max_seconds note: %v", name, got.Notes, wantNote)
		}
	}
	every := func(n int) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = float64(i)
		}
		return s
	}
	// Seed 002: a cycle about every 20 s, then every 33 s. Cycles seen at 3 s, 23 s and 56 s.
	seed := make([]uint64, 60)
	for i := range seed {
		switch {
		case i >= 56:
			seed[i] = 13
		case i >= 23:
			seed[i] = 12
		case i >= 3:
			seed[i] = 11
		default:
			seed[i] = 10
		}
	}
	f("20 s then 33 s", every(60), seed, 33, false)
	f("a cycle every sample", every(5), []uint64{0, 1, 2, 3, 4}, 1, false)
	f("a cycle before the window is not seen", every(6), []uint64{5, 5, 6, 6, 6, 7}, 3, false)
	f("several cycles between two samples count once", every(5), []uint64{0, 3, 3, 3, 5}, 3, false)
	f("irregular sample times", []float64{0, 0.5, 2.5, 3}, []uint64{0, 1, 1, 2}, 2.5, false)
	f("only one cycle seen", every(5), []uint64{0, 0, 1, 1, 1}, 0, true)
	f("one sample saw two cycles", every(3), []uint64{0, 0, 2}, 0, true)
	f("no cycle", every(4), []uint64{2, 2, 2, 2}, 0, false)
}

func TestSummarizeAutomaticCyclesAndObjectRate(t *testing.T) {
	ss := series(5) // 4 s window, 4 cycles, 40 allocations
	ss[0].GCForcedCycles = 1
	for i := 1; i < 5; i++ {
		ss[i].GCForcedCycles = 2
	}
	got, err := Summarize(ss, nil, 2)
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	if got.GCAutomaticCycles != 3 || got.AllocObjectsPerSecond != 10 {
		t.Errorf("got automatic cycles %d alloc objects/s %v, want 3 and 10", got.GCAutomaticCycles,
			got.AllocObjectsPerSecond)
	}

	// A torn reading with more forced cycles than cycles must not wrap around.
	ss[4].GCForcedCycles = 100
	got, err = Summarize(ss, nil, 2)
	if err != nil {
		t.Fatalf("Summarize with a torn reading: %v", err)
	}
	if got.GCAutomaticCycles != 0 {
		t.Errorf("got automatic cycles %d with 99 forced of 4, want 0", got.GCAutomaticCycles)
	}
}

func TestSummaryJSONNames(t *testing.T) {
	b, err := json.Marshal(Summary{})
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	for _, key := range []string{`"gc_interval_max_seconds"`, `"gc_automatic_cycles"`, `"alloc_objects_per_second"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("got json %s, want it to contain %s", b, key)
		}
	}
}
