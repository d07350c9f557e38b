package profiles

import (
	"encoding/json"
	"math"
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
