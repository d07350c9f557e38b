package report

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/workloads"
)

// duetRounds are r rounds of secs simultaneous seconds: the old build at
// 100 µs per request, the new one at (1 + change) times that, with a
// second-to-second wobble common to both sides (the machine) and a small
// one of each side's own.
func duetRounds(r, secs int, change float64) [][]kpi.DuetSecond {
	out := make([][]kpi.DuetSecond, r)
	for i := range out {
		for s := range secs {
			m := 1 + 0.3*float64((s*7+i*3)%5-2)/2 // the machine, shared
			own := 1 + 0.01*float64((s*3+i)%3-1)  // each side's own
			out[i] = append(out[i], kpi.DuetSecond{
				OldCPUSeconds: 100e-6 * 1000 * m, OldRequests: 1000,
				NewCPUSeconds: 100e-6 * 1000 * m * (1 + change) * own, NewRequests: 1000,
			})
		}
	}
	return out
}

func duetSides(places []DuetPlacement, extra ...Phase) (old, new *Report) {
	o := cmpReport("s-old", append(roundsOf("graphql-load", baseFigures, 0.01), extra...)...)
	n := cmpReport("s-new", append(roundsOf("graphql-load", baseFigures, 0.01), extra...)...)
	o.AB = &ABSide{Session: "s", Side: ABOld, Other: "s-new", Duet: places}
	n.AB = &ABSide{Session: "s", Side: ABNew, Other: "s-old", Duet: places}
	return o, n
}

// TestCompareDuet: a duet's GraphQL CPU per request is judged from its
// simultaneous seconds (the per-round row is shown, not gated), a
// max-load phase is not compared, and the comparison says which side ran
// on which CPUs.
func TestCompareDuet(t *testing.T) {
	var places []DuetPlacement
	for i := range 4 {
		p := DuetPlacement{Phase: fmt.Sprintf("graphql-load#%d", i+1), OldCPUs: []int{0}, NewCPUs: []int{1}}
		if i%2 == 1 {
			p.OldCPUs, p.NewCPUs = p.NewCPUs, p.OldCPUs
		}
		places = append(places, p)
	}
	ml := cmpPhase("max-load", baseFigures)
	ml.MaxLoad = &MaxLoad{MaxLoadResult: workloads.MaxLoadResult{Reason: "duration"}}
	o, n := duetSides(places, ml)
	lim := allLimits
	lim.CPUPerRequestPercent = 2
	for _, tc := range []struct {
		change float64
		want   kpi.Outcome
	}{{0, kpi.OutcomePass}, {0.05, kpi.OutcomeFail}} {
		c := CompareDuet(o, n, lim, DuetSeconds{"graphql-load": duetRounds(4, 15, tc.change)})
		r := rowOf(t, c, "graphql-load", MetricCPUSeconds)
		if !r.Gated || r.Outcome != tc.want || r.Interval == nil || r.Interval.N != 12 || !strings.Contains(r.Basis, "12 batches of 5 s") {
			t.Errorf("change %+.0f %%: per-second row %+v (basis %q), want gated %s over 12 batches", tc.change*100, r, r.Basis, tc.want)
		}
		if per := rowOf(t, c, "graphql-load", metricCPU); per.Gated || !strings.Contains(per.Reason, MetricCPUSeconds) {
			t.Errorf("the per-round CPU row is still gated: %+v", per)
		}
		if m := rowOf(t, c, "max-load", metricThroughput); m.Gated || !strings.Contains(m.Reason, DuetNotCompared) {
			t.Errorf("max load in a duet: %+v", m)
		}
		if c.Verdict != tc.want || len(c.Duet) != 4 {
			t.Errorf("change %+.0f %%: verdict %s, %d placements; want %s, 4", tc.change*100, c.Verdict, len(c.Duet), tc.want)
		}
		notes := strings.Join(c.Notes, " ")
		if !strings.Contains(notes, "Duet: ") || !strings.Contains(notes, "graphql-load#2: old on CPU 1, new on CPU 0") {
			t.Errorf("the notes do not name the layout: %v", c.Notes)
		}
	}
	// Too few simultaneous seconds: not measured, never pass.
	c := CompareDuet(o, n, lim, DuetSeconds{"graphql-load": duetRounds(4, 6, 0)})
	if r := rowOf(t, c, "graphql-load", MetricCPUSeconds); r.Outcome != kpi.OutcomeNotMeasured || c.Verdict == kpi.OutcomePass {
		t.Errorf("4 batches: %+v, verdict %s; want not measured and no pass", r, c.Verdict)
	}
	// Sequential sides (no placements) are no duet: no per-second row.
	so, sn := duetSides(nil)
	c = CompareDuet(so, sn, lim, DuetSeconds{"graphql-load": duetRounds(4, 15, 0)})
	for _, r := range c.Rows {
		if r.Metric == MetricCPUSeconds {
			t.Errorf("a sequential session has a per-second row: %+v", r)
		}
	}
}

// TestDuetSecondsFile: a session's seconds read back as written; another
// session's file, or none, is not taken for them.
func TestDuetSecondsFile(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := ReadDuetSeconds(dir, "s1"); ok || err != nil {
		t.Fatalf("no file: ok %v, %v", ok, err)
	}
	want := DuetSeconds{"graphql-load": {{{OldCPUSeconds: 0.25, NewCPUSeconds: 0.3, OldRequests: 1000, NewRequests: 998.5}}}}
	if err := WriteDuetSeconds(dir, "s1", want); err != nil {
		t.Fatal(err)
	}
	got, ok, err := ReadDuetSeconds(dir, "s1")
	if err != nil || !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %v, ok %v, %v; want %v", got, ok, err, want)
	}
	if _, ok, err := ReadDuetSeconds(dir, "s2"); ok || err != nil {
		t.Errorf("another session's file: ok %v, %v", ok, err)
	}
	if err := os.WriteFile(filepath.Join(dir, DuetSecondsFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadDuetSeconds(dir, "s1"); err == nil || !strings.Contains(err.Error(), DuetSecondsFile) {
		t.Errorf("a torn file: %v, want an error naming it", err)
	}
	// A FIFO in its place is refused at once, not read for ever.
	fifo := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifo, DuetSecondsFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadDuetSeconds(fifo, "s1"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO: %v, want refused as not a regular file", err)
	}
}
