package profiles

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
	"time"
)

func TestLiveHeapAfterGC(t *testing.T) {
	f := func(name string, cycles, live []uint64, wantIdx []int) {
		t.Helper()
		ss := series(len(cycles))
		for i := range ss {
			ss[i].GCCycles, ss[i].HeapLiveBytes = cycles[i], live[i]
		}
		got := LiveHeapAfterGC(ss)
		if len(got) != len(wantIdx) {
			t.Fatalf("%s: got %d points %v, want %d (at samples %v)", name, len(got), got, len(wantIdx), wantIdx)
		}
		for j, i := range wantIdx {
			if !got[j].T.Equal(ss[i].Time) || got[j].V != float64(live[i]) {
				t.Errorf("%s: got point %d = (%v, %v), want (%v, %v) from sample %d", name, j, got[j].T, got[j].V,
					ss[i].Time, float64(live[i]), i)
			}
		}
	}
	f("a cycle at some samples", []uint64{4, 4, 5, 5, 7, 8}, []uint64{90, 91, 100, 120, 110, 130}, []int{2, 4, 5})
	f("first sample never counts", []uint64{9, 10}, []uint64{50, 60}, []int{1})
	f("no cycle", []uint64{3, 3, 3}, []uint64{1, 2, 3}, nil)
	f("one sample", []uint64{3}, []uint64{1}, nil)
	f("no samples", nil, nil, nil)
	f("a counter going backwards is not a cycle", []uint64{5, 4, 4}, []uint64{1, 2, 3}, nil)
}

func TestAllocRates(t *testing.T) {
	type pt struct {
		sec  float64 // seconds after origin
		rate float64 // bytes/s
	}
	f := func(name string, seconds []float64, alloc []uint64, window time.Duration, want []pt) {
		t.Helper()
		ss := series(len(seconds))
		for i := range ss {
			ss[i].Time = origin().Add(time.Duration(seconds[i] * float64(time.Second)))
			ss[i].AllocBytes = alloc[i]
		}
		got := AllocRates(ss, window)
		if len(got) != len(want) {
			t.Fatalf("%s: got %d windows %v, want %d", name, len(got), got, len(want))
		}
		for j, w := range want {
			wt := origin().Add(time.Duration(w.sec * float64(time.Second)))
			if !got[j].T.Equal(wt) || math.Abs(got[j].V-w.rate) > 1e-9 {
				t.Errorf("%s: got window %d = (%v, %v B/s), want (%v, %v B/s)", name, j, got[j].T, got[j].V, wt, w.rate)
			}
		}
	}
	secs := []float64{0, 1, 2, 3, 4, 5, 6, 7}
	// 100 B/s, then a 1000-byte spike in second 4..5, then 100 B/s again.
	alloc := []uint64{0, 100, 200, 300, 400, 1400, 1500, 1600}
	f("2 s windows, last partial dropped", secs, alloc, 2*time.Second, []pt{{2, 100}, {4, 100}, {6, 550}})
	f("1 s windows", secs, alloc, time.Second, []pt{{1, 100}, {2, 100}, {3, 100}, {4, 100}, {5, 1000}, {6, 100}, {7, 100}})
	f("exact fit, nothing dropped", secs, alloc, 7*time.Second, []pt{{7, 1600.0 / 7}})
	f("window longer than the series", secs, alloc, 8*time.Second, nil)
	// Irregular samples: a window ends at the first sample at least window after its start and the rate
	// uses its exact duration.
	f("irregular samples", []float64{0, 0.5, 2.5, 3, 5.5}, []uint64{0, 50, 250, 300, 800}, 2*time.Second,
		[]pt{{2.5, 100}, {5.5, 550.0 / 3}})
	f("counter backwards skips that window", []float64{0, 1, 2, 3}, []uint64{100, 200, 50, 150}, time.Second,
		[]pt{{1, 100}, {3, 100}})
	f("zero window", secs, alloc, 0, nil)
	f("negative window", secs, alloc, -time.Second, nil)
	f("one sample", []float64{0}, []uint64{0}, time.Second, nil)
}

func TestPointJSON(t *testing.T) {
	b, err := json.Marshal(Point{T: origin(), V: 1.5})
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if want := `{"t":"2025-01-02T03:04:05Z","v":1.5}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func TestRateWindow(t *testing.T) {
	f := func(interval, want time.Duration) {
		t.Helper()
		if got := RateWindow(interval); got != want {
			t.Errorf("RateWindow(%v): got %v, want %v", interval, got, want)
		}
		if got := RateWindow(interval); got%CPUTick != 0 || got < MinRateWindow {
			t.Errorf("RateWindow(%v) = %v: not a whole number of ticks of at least %v", interval, got, MinRateWindow)
		}
	}
	f(0, MinRateWindow)
	f(-time.Second, MinRateWindow)
	f(50*time.Millisecond, MinRateWindow)
	f(time.Second, 750*time.Millisecond)
	f(333*time.Millisecond, 250*time.Millisecond)  // 249.75 ms, rounded up to whole ticks
	f(1010*time.Millisecond, 760*time.Millisecond) // 757.5 ms, rounded up
	f(5*time.Second, 3750*time.Millisecond)
}

func TestRates(t *testing.T) {
	type pt struct {
		start, end float64 // seconds after origin
		cpu        float64 // % of the machine; NaN when unknown
		alloc      float64 // bytes/s
	}
	unknown := math.NaN()
	// mk builds samples at seconds with the given cumulative CPU seconds (user + system, split 3:1) and
	// allocated bytes; a negative cpu marks a sample without OS times.
	mk := func(seconds, cpu []float64, alloc []uint64) []Sample {
		ss := make([]Sample, len(seconds))
		for i := range ss {
			ss[i] = Sample{Time: origin().Add(time.Duration(seconds[i] * float64(time.Second))), AllocBytes: alloc[i]}
			if cpu[i] < 0 {
				ss[i].ProcMissing = true
			} else {
				ss[i].UserCPUSeconds, ss[i].SystemCPUSeconds = cpu[i]*0.75, cpu[i]*0.25
			}
		}
		return ss
	}
	f := func(name string, ss []Sample, cores int, window time.Duration, want []pt) {
		t.Helper()
		got := Rates(ss, cores, window)
		if len(got) != len(want) {
			t.Fatalf("%s: got %d windows %+v, want %d", name, len(got), got, len(want))
		}
		at := func(sec float64) time.Time { return origin().Add(time.Duration(sec * float64(time.Second))) }
		for j, w := range want {
			g := got[j]
			cpuOK := math.IsNaN(w.cpu) && !g.CPUKnown && g.CPUMachinePercent == 0 ||
				g.CPUKnown && math.Abs(g.CPUMachinePercent-w.cpu) < 1e-9
			if !g.Start.Equal(at(w.start)) || !g.End.Equal(at(w.end)) || !cpuOK || math.Abs(g.AllocBytesPerSecond-w.alloc) > 1e-9 {
				t.Errorf("%s: window %d: got %+v, want [%v s, %v s] cpu %v %% alloc %v B/s", name, j, g, w.start, w.end, w.cpu, w.alloc)
			}
		}
	}
	secs := []float64{0, 1, 2, 3, 4}
	// 0.5, 1, 0.25 and 2 cpu-seconds per second on 2 cores; 100, 300, 0 and 50 B/s.
	steady := mk(secs, []float64{10, 10.5, 11.5, 11.75, 13.75}, []uint64{1000, 1100, 1400, 1400, 1450})
	f("1 s windows", steady, 2, time.Second, []pt{{0, 1, 25, 100}, {1, 2, 50, 300}, {2, 3, 12.5, 0}, {3, 4, 100, 50}})
	f("2 s windows from cumulative counters", steady, 2, 2*time.Second, []pt{{0, 2, 37.5, 200}, {2, 4, 56.25, 25}})
	f("the last partial window is dropped", steady, 2, 3*time.Second, []pt{{0, 3, 29.166666666666668, 400.0 / 3}})
	f("4 cores", steady, 4, 2*time.Second, []pt{{0, 2, 18.75, 200}, {2, 4, 28.125, 25}})
	f("unknown core count: no CPU share, allocation still", steady, 0, 2*time.Second,
		[]pt{{0, 2, unknown, 200}, {2, 4, unknown, 25}})
	f("a window ends at the first sample at least the window after its start",
		mk([]float64{0, 0.5, 1.2, 1.3, 2.5}, []float64{0, 0.1, 0.6, 0.6, 1.2}, []uint64{0, 10, 120, 130, 250}), 1, time.Second,
		[]pt{{0, 1.2, 50, 100}, {1.2, 2.5, 600.0 / 13 * 1, 1300.0 / 13}})

	f("no samples", nil, 2, time.Second, nil)
	f("one sample", mk([]float64{0}, []float64{1}, []uint64{1}), 2, time.Second, nil)
	f("two samples closer than the window", mk([]float64{0, 0.5}, []float64{1, 2}, []uint64{1, 2}), 2, time.Second, nil)
	f("two samples closer than MinRateWindow, whatever the window asked",
		mk([]float64{0, 0.0029}, []float64{1, 1.01}, []uint64{1, 2}), 1, time.Nanosecond, nil)
	f("a window shorter than MinRateWindow is raised to it",
		mk([]float64{0, 0.05, 0.1, 0.15, 0.2}, []float64{0, 0.01, 0.05, 0.06, 0.08}, []uint64{0, 5, 10, 15, 20}), 1, time.Millisecond,
		[]pt{{0, 0.1, 50, 100}, {0.1, 0.2, 30, 100}})

	f("allocation counter backwards drops that window",
		mk(secs, []float64{0, 1, 2, 3, 4}, []uint64{100, 200, 50, 150, 250}), 2, time.Second,
		[]pt{{0, 1, 50, 100}, {2, 3, 50, 100}, {3, 4, 50, 100}})
	f("CPU counter backwards drops that window",
		mk(secs, []float64{5, 6, 0.5, 1.5, 2.5}, []uint64{0, 100, 200, 300, 400}), 2, time.Second,
		[]pt{{0, 1, 50, 100}, {2, 3, 50, 100}, {3, 4, 50, 100}})
	f("a reset inside a window drops it even when the ends look forward",
		mk([]float64{0, 0.5, 1, 2}, []float64{5, 0.1, 6, 7}, []uint64{100, 5, 200, 300}), 2, time.Second,
		[]pt{{1, 2, 50, 100}})
	f("OS times missing at a window end: CPU unknown on both sides, allocation kept",
		mk(secs, []float64{0, 1, -1, 3, 4}, []uint64{0, 100, 200, 300, 400}), 2, time.Second,
		[]pt{{0, 1, 50, 100}, {1, 2, unknown, 100}, {2, 3, unknown, 100}, {3, 4, 50, 100}})

	// 1 core, 1 s windows: the allowance above 100 % is 2 ticks (20 ms) plus the closing sample's cost.
	f("within two ticks above 100 %: 100 %", mk([]float64{0, 1}, []float64{0, 1.019}, []uint64{0, 0}), 1, time.Second,
		[]pt{{0, 1, 100, 0}})
	f("beyond two ticks above 100 %: a data error, CPU unknown",
		mk([]float64{0, 1}, []float64{0, 1.021}, []uint64{0, 0}), 1, time.Second, []pt{{0, 1, unknown, 0}})
	slow := mk([]float64{0, 1}, []float64{0, 1.021}, []uint64{0, 0})
	slow[1].CostNanoseconds = int64(5 * time.Millisecond)
	f("the closing sample's cost widens the allowance", slow, 1, time.Second, []pt{{0, 1, 100, 0}})
	f("a wrong core count is a data error", mk([]float64{0, 1}, []float64{0, 4}, []uint64{0, 0}), 2, time.Second,
		[]pt{{0, 1, unknown, 0}})
}

// tickedSamples returns samples at the given offsets of a process that keeps load of every one of cores
// busy, with its OS CPU times as Linux reports them: user (¾ of the time) and system (¼) each truncated
// to a whole CPU tick. It allocates 1 MB per second.
func tickedSamples(offsets []time.Duration, load float64, cores int) []Sample {
	ss := make([]Sample, len(offsets))
	tick := CPUTick.Seconds()
	for i, off := range offsets {
		cpu := off.Seconds() * load * float64(cores)
		ss[i] = Sample{Time: origin().Add(off), AllocBytes: uint64(off.Seconds() * 1e6),
			UserCPUSeconds: math.Floor(cpu*0.75/tick+1e-9) * tick, SystemCPUSeconds: math.Floor(cpu*0.25/tick+1e-9) * tick}
	}
	return ss
}

func TestRatesTickQuantisation(t *testing.T) {
	// every returns n offsets step apart from start.
	every := func(start, step time.Duration, n int) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = start + time.Duration(i)*step
		}
		return out
	}
	// withEdges adds, after each periodic offset, a pair of phase-edge samples 2.9 ms apart in the middle of
	// the interval, as SetPhase and SampleNow take them.
	withEdges := func(periodic []time.Duration, step time.Duration) []time.Duration {
		var out []time.Duration
		for _, p := range periodic {
			out = append(out, p, p+step/3, p+step/3+2900*time.Microsecond)
		}
		return out
	}
	// jittered delays every other periodic sample by 7 ms, as a busy scheduler does.
	jittered := func(periodic []time.Duration) []time.Duration {
		out := slices.Clone(periodic)
		for i := range out {
			if i%2 == 1 {
				out[i] += 7 * time.Millisecond
			}
		}
		return out
	}
	f := func(name string, offsets []time.Duration, load float64, cores int, window time.Duration, minPoints int) {
		t.Helper()
		got := Rates(tickedSamples(offsets, load, cores), cores, window)
		if len(got) < minPoints {
			t.Fatalf("%s: got %d windows, want at least %d", name, len(got), minPoints)
		}
		for _, p := range got {
			w := p.End.Sub(p.Start)
			// Each of the two counters is off by less than a tick at each end.
			tol := 2 * CPUTick.Seconds() / (w.Seconds() * float64(cores)) * 100
			switch {
			case !p.CPUKnown:
				t.Errorf("%s: window %v–%v: CPU share unknown", name, p.Start, p.End)
			case p.CPUMachinePercent > 100:
				t.Errorf("%s: window %v–%v: %.2f %% of the machine, above 100 %%", name, p.Start, p.End, p.CPUMachinePercent)
			case math.Abs(p.CPUMachinePercent-load*100) > tol:
				t.Errorf("%s: window %v (%v): %.2f %%, want %.0f %% ± %.2f", name, p.Start, w, p.CPUMachinePercent, load*100, tol)
			}
			if w < max(window, MinRateWindow) {
				t.Errorf("%s: window %v–%v is %v, shorter than %v", name, p.Start, p.End, w, max(window, MinRateWindow))
			}
			if math.Abs(p.AllocBytesPerSecond-1e6) > 1e6*1e-6/w.Seconds()+1 {
				t.Errorf("%s: window %v: %.0f B/s, want 1e6", name, w, p.AllocBytesPerSecond)
			}
		}
	}
	const ms29 = 2900 * time.Microsecond
	f("2.9 ms apart, one core fully busy", every(0, ms29, 2000), 1, 1, 0, 50)
	f("2.9 ms apart, two cores fully busy", every(0, ms29, 2000), 1, 2, MinRateWindow, 50)
	f("2.9 ms apart, 50 % of one core", every(0, ms29, 2000), 0.5, 1, 0, 50)
	f("2.9 ms apart, 50 % of two cores", every(0, ms29, 2000), 0.5, 2, MinRateWindow, 50)
	f("1 s sampler with phase-edge pairs, fully busy", withEdges(every(0, time.Second, 60), time.Second), 1, 2,
		RateWindow(time.Second), 58)
	f("1 s sampler with phase-edge pairs, 50 %", withEdges(every(0, time.Second, 60), time.Second), 0.5, 2,
		RateWindow(time.Second), 58)
	f("jittered 1 s sampler, 50 %", jittered(every(0, time.Second, 60)), 0.5, 2, RateWindow(time.Second), 59)
	f("jittered 200 ms sampler, fully busy", jittered(every(0, 200*time.Millisecond, 300)), 1, 1,
		RateWindow(200*time.Millisecond), 299)
}
