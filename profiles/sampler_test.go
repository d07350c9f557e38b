package profiles

import (
	"context"
	"io"
	"math"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// allocGarbage allocates about n bytes in blocks too large for the stack and drops them.
func allocGarbage(n int) {
	const block = 128 << 10
	var keep [][]byte
	for range n / block {
		keep = append(keep, make([]byte, block))
	}
	runtime.KeepAlive(keep)
}

func TestSamplerRealRuntime(t *testing.T) {
	s, err := New(Options{MaxSamples: 100})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	first := s.SampleNow()
	s.SetPhase("load")
	allocGarbage(8 << 20)
	runtime.GC()
	runtime.GC()
	s.SetPhase("")
	last := s.SampleNow()

	all := s.Samples(first.Time, last.Time)
	if len(all) != 4 {
		t.Fatalf("got %d samples, want 4 (first, two phase edges, last)", len(all))
	}
	if got := []string{all[0].Phase, all[1].Phase, all[2].Phase, all[3].Phase}; strings.Join(got, ",") != ",load,," {
		t.Errorf("got phases %q, want [\"\" load \"\" \"\"]", got)
	}
	if d := last.GCCycles - first.GCCycles; d < 2 {
		t.Errorf("got %d gc cycles, want >= 2", d)
	}
	if d := last.GCForcedCycles - first.GCForcedCycles; d < 2 {
		t.Errorf("got %d forced gc cycles, want >= 2", d)
	}
	if d := last.AllocBytes - first.AllocBytes; d < 8<<20 {
		t.Errorf("got %d bytes allocated, want >= %d", d, 8<<20)
	}
	if last.AllocObjects <= first.AllocObjects {
		t.Errorf("got alloc objects %d -> %d, want growth", first.AllocObjects, last.AllocObjects)
	}
	if last.RuntimeCPUSeconds <= first.RuntimeCPUSeconds {
		t.Errorf("got runtime cpu %v -> %v, want growth (a gc cycle ended)", first.RuntimeCPUSeconds,
			last.RuntimeCPUSeconds)
	}
	var pauses uint64
	for _, smp := range all[1:] {
		for _, bc := range smp.GCPauses {
			if bc.Count == 0 {
				t.Errorf("got an empty bucket %+v in a sparse delta", bc)
			}
			pauses += bc.Count
		}
	}
	if pauses < 2 {
		t.Errorf("got %d gc pauses in the deltas, want >= 2", pauses)
	}
	if last.ProcMissing || last.OSError != "" {
		t.Errorf("got proc missing %v os error %q, want OS figures", last.ProcMissing, last.OSError)
	}
	if last.RSSBytes == 0 || last.FDs <= 0 || last.Threads <= 0 || last.Goroutines == 0 || last.HeapGoalBytes == 0 {
		t.Errorf("got rss %d fds %d threads %d goroutines %d heap goal %d, want all > 0",
			last.RSSBytes, last.FDs, last.Threads, last.Goroutines, last.HeapGoalBytes)
	}
	if last.CostNanoseconds <= 0 {
		t.Errorf("got sampling cost %d ns, want > 0", last.CostNanoseconds)
	}

	sum, err := Summarize(all, s.PauseBuckets(), runtime.NumCPU())
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	if sum.GCCycles < 2 || sum.GCPauses != pauses || sum.GCPauseMaxMs <= 0 || !sum.GCPercentKnown {
		t.Errorf("got summary cycles %d pauses %d max %v ms gc known %v, want >= 2, %d, > 0, true",
			sum.GCCycles, sum.GCPauses, sum.GCPauseMaxMs, sum.GCPercentKnown, pauses)
	}
	if sum.GCPauseP50Ms > sum.GCPauseP99Ms || sum.GCPauseP99Ms > sum.GCPauseMaxMs {
		t.Errorf("got p50 %v p99 %v max %v ms, want them ordered", sum.GCPauseP50Ms, sum.GCPauseP99Ms, sum.GCPauseMaxMs)
	}
}

// TestSamplerSeesOwnCPU burns CPU until the OS's CPU time for the process advances (it counts in clock
// ticks, typically 10 ms, so a short test may not have used one yet).
func TestSamplerSeesOwnCPU(t *testing.T) {
	s, err := New(Options{MaxSamples: 10})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	cpu := func(smp Sample) float64 { return smp.UserCPUSeconds + smp.SystemCPUSeconds }
	first := s.SampleNow()
	deadline := time.Now().Add(10 * time.Second)
	x := 1.0
	for {
		for range 1_000_000 {
			x = math.Sqrt(x + 1)
		}
		last := s.SampleNow()
		if cpu(last) > cpu(first) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("got os cpu %v s then %v s after 10 s of spinning, want growth", cpu(first), cpu(last))
		}
	}
	runtime.KeepAlive(x)
}

func TestPauseBucketsMatchRuntime(t *testing.T) {
	s, err := New(Options{MaxSamples: 1})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	b := s.PauseBuckets()
	ms := []metrics.Sample{{Name: metricPauses}}
	metrics.Read(ms)
	want := ms[0].Value.Float64Histogram().Buckets
	if len(b) != len(want) || !math.IsInf(b[0], -1) || !math.IsInf(b[len(b)-1], 1) {
		t.Fatalf("got %d boundaries from %v to %v, want %d from -Inf to +Inf", len(b), b[0], b[len(b)-1], len(want))
	}
	b[1] = 42
	if s.PauseBuckets()[1] == 42 {
		t.Errorf("got the sampler's own boundaries, want a copy")
	}
}

func TestSamplerRingDropsOldest(t *testing.T) {
	s, err := New(Options{MaxSamples: 3})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, p := range []string{"a", "b", "c", "d", "e"} {
		s.SetPhase(p)
	}
	got := s.Samples(time.Time{}, time.Now().Add(time.Hour))
	var phases []string
	for _, smp := range got {
		phases = append(phases, smp.Phase)
	}
	if strings.Join(phases, ",") != "c,d,e" {
		t.Errorf("got phases %q, want the newest three [c d e]", phases)
	}
	if d := s.Dropped(); d != 2 {
		t.Errorf("got %d dropped, want 2", d)
	}
}

func TestRingPauseArena(t *testing.T) {
	// Room for 3 records but only 4 pause entries: a record with 3 entries evicts as many old records as
	// its entries need, and entries wrap around the arena intact.
	r := newRing(3, 4)
	e := func(bs ...uint16) []pauseEntry {
		var out []pauseEntry
		for _, b := range bs {
			out = append(out, pauseEntry{bucket: b, count: uint32(b) * 10})
		}
		return out
	}
	r.push(record{offset: 1}, e(1, 2))
	r.push(record{offset: 2}, e(3))
	// The ring has room, the arena has one free entry: record 1 is dropped for its two entries, and the
	// new record's entries wrap around the arena's end.
	r.push(record{offset: 3}, e(4, 5))
	if r.n != 2 || r.dropped != 1 || r.pUsed != 3 {
		t.Fatalf("got %d records %d dropped %d entries used, want 2, 1, 3", r.n, r.dropped, r.pUsed)
	}
	f := func(i int, wantOffset int64, wantBuckets ...int) {
		t.Helper()
		rec := r.at(i)
		got := r.pausesOf(rec)
		if rec.offset != wantOffset || len(got) != len(wantBuckets) {
			t.Fatalf("record %d: got offset %d pauses %+v, want offset %d buckets %v", i, rec.offset, got,
				wantOffset, wantBuckets)
		}
		for j, bc := range got {
			if bc.Bucket != wantBuckets[j] || bc.Count != uint64(wantBuckets[j])*10 {
				t.Errorf("record %d entry %d: got %+v, want bucket %d count %d", i, j, bc, wantBuckets[j],
					wantBuckets[j]*10)
			}
		}
	}
	f(0, 2, 3)
	f(1, 3, 4, 5)
	// The arena has room, the ring is full: the oldest record goes with its entry.
	r.push(record{offset: 4}, nil)
	r.push(record{offset: 5}, e(6))
	if r.n != 3 || r.dropped != 2 || r.pUsed != 3 {
		t.Fatalf("got %d records %d dropped %d entries used, want 3, 2, 3", r.n, r.dropped, r.pUsed)
	}
	f(0, 3, 4, 5)
	f(1, 4)
	f(2, 5, 6)
}

func TestInternerIsBounded(t *testing.T) {
	in := newInterner(4, "overflow")
	ids := []uint16{in.id("a"), in.id("b"), in.id("c"), in.id("d"), in.id("a")}
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = in.name(id)
	}
	if got := strings.Join(names, ","); got != "a,b,overflow,overflow,a" {
		t.Errorf("got names %s, want a,b,overflow,overflow,a", got)
	}
	if len(in.names) != 4 || in.name(in.id("")) != "" {
		t.Errorf("got %d names, want 4 with \"\" at index 0", len(in.names))
	}
}

func TestSamplerRunSynctest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		s, err := New(Options{Interval: time.Second, MaxSamples: 100})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()

		synctest.Wait()
		if err := s.Run(ctx); err == nil || !strings.Contains(err.Error(), "already running") {
			t.Errorf("got second Run error %v, want already running", err)
		}
		time.Sleep(3500 * time.Millisecond)
		s.SetPhase("steady")
		time.Sleep(time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Errorf("got Run error %v, want nil", err)
		}

		// Immediate sample, ticks at 1, 2, 3 s, the phase edge at 3.5 s, a tick at 4 s and the final sample
		// at 4.5 s.
		got := s.Samples(start, start.Add(time.Hour))
		want := []struct {
			at    time.Duration
			phase string
		}{{0, ""}, {time.Second, ""}, {2 * time.Second, ""}, {3 * time.Second, ""},
			{3500 * time.Millisecond, "steady"}, {4 * time.Second, "steady"}, {4500 * time.Millisecond, "steady"}}
		if len(got) != len(want) {
			t.Fatalf("got %d samples, want %d", len(got), len(want))
		}
		for i, w := range want {
			if at := got[i].Time.Sub(start); at != w.at || got[i].Phase != w.phase {
				t.Errorf("sample %d: got at %v phase %q, want at %v phase %q", i, at, got[i].Phase, w.at, w.phase)
			}
		}

		// Samples selects by time, boundaries included.
		sel := s.Samples(start.Add(time.Second), start.Add(3*time.Second))
		if len(sel) != 3 || !sel[0].Time.Equal(start.Add(time.Second)) || !sel[2].Time.Equal(start.Add(3*time.Second)) {
			t.Errorf("got %d samples in [1 s, 3 s], want the 3 at 1, 2 and 3 s", len(sel))
		}

		// The clock does not move under synctest, yet stored times still strictly increase.
		a, b := s.SampleNow(), s.SampleNow()
		if !b.Time.After(a.Time) {
			t.Errorf("got times %v then %v, want strictly increasing", a.Time, b.Time)
		}
		// Run may be started again once it has returned.
		ctx2, cancel2 := context.WithCancel(t.Context())
		cancel2()
		if err := s.Run(ctx2); err != nil {
			t.Errorf("got Run error %v after a restart, want nil", err)
		}
	})
}

func TestNewRejectsBadOptions(t *testing.T) {
	f := func(name string, opts Options, wantErr string) {
		t.Helper()
		s, err := New(opts)
		if err == nil || s != nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: got sampler %v error %v, want nil and an error containing %q", name, s != nil, err, wantErr)
		}
	}
	f("negative interval", Options{Interval: -time.Second}, "invalid sampler interval")
	f("negative capacity", Options{MaxSamples: -1}, "invalid max samples")
	f("huge capacity", Options{MaxSamples: MaxMaxSamples + 1}, "invalid max samples")
	f("negative pid", Options{PID: -5}, "invalid pid")
	f("no such process", Options{PID: 1 << 30}, "cannot open process")
}

// TestHelperProcess is not a test: it is the child process of TestSamplerRecordsOSErrors, waiting until
// its stdin closes.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("PROFILES_HELPER_PROCESS") != "1" {
		t.Skip("helper process for TestSamplerRecordsOSErrors")
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
}

func TestSamplerRecordsOSErrors(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "PROFILES_HELPER_PROCESS=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("stdin pipe: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start helper: %v", err)
	}
	s, err := New(Options{PID: int32(cmd.Process.Pid), MaxSamples: 10})
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("New: %v", err)
	}
	alive := s.SampleNow()
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper exited with %v, want success", err)
	}
	gone := s.SampleNow()

	if alive.ProcMissing || alive.OSError != "" || alive.RSSBytes == 0 || alive.Threads <= 0 {
		t.Errorf("got alive sample missing %v error %q rss %d threads %d, want full OS figures",
			alive.ProcMissing, alive.OSError, alive.RSSBytes, alive.Threads)
	}
	if !gone.ProcMissing || gone.OSError == "" || gone.FDs != -1 || gone.Threads != -1 || gone.RSSBytes != 0 {
		t.Errorf("got exited sample missing %v error %q fds %d threads %d rss %d, want missing, an error, -1, -1, 0",
			gone.ProcMissing, gone.OSError, gone.FDs, gone.Threads, gone.RSSBytes)
	}
	if gone.GCCycles < alive.GCCycles || gone.Goroutines == 0 {
		t.Errorf("got runtime figures cycles %d goroutines %d, want them still sampled", gone.GCCycles, gone.Goroutines)
	}
	if _, err := Summarize([]Sample{alive, gone}, s.PauseBuckets(), 2); err != nil {
		t.Errorf("got Summarize error %v, want a summary without CPU figures", err)
	}
}

func BenchmarkSample(b *testing.B) {
	s, err := New(Options{MaxSamples: 1024})
	if err != nil {
		b.Fatalf("New: %v", err)
	}
	ctx := b.Context()
	b.Run("all", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.sample(ctx, false)
		}
	})
	// The parts, to show where the cost is.
	b.Run("runtime_metrics", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			metrics.Read(s.metrics)
		}
	})
	parts := []struct {
		name string
		read func() error
	}{
		{"os_times", func() error { _, err := s.proc.TimesWithContext(ctx); return err }},
		{"os_memory", func() error { _, err := s.proc.MemoryInfoWithContext(ctx); return err }},
		{"os_fds", func() error { _, err := s.proc.NumFDsWithContext(ctx); return err }},
		{"os_threads", func() error { _, err := s.proc.NumThreadsWithContext(ctx); return err }},
	}
	for _, p := range parts {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := p.read(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestStoredFormIsPointerFree guards the ring's design: its records and pause entries must hold no
// pointers, so the garbage collector never scans the sampler's history.
func TestStoredFormIsPointerFree(t *testing.T) {
	for _, v := range []any{record{}, pauseEntry{}} {
		typ := reflect.TypeOf(v)
		for i := range typ.NumField() {
			f := typ.Field(i)
			switch f.Type.Kind() {
			case reflect.Bool, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint16, reflect.Uint32,
				reflect.Uint64, reflect.Float64:
			default:
				t.Errorf("got %s.%s of kind %s, want a pointer-free scalar", typ.Name(), f.Name, f.Type.Kind())
			}
		}
	}
}
