package run

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/report"
)

func TestDuetHalves(t *testing.T) {
	h, err := duetHalves([]int{1, 0})
	if err != nil || !slices.Equal(h[0], []int{0}) || !slices.Equal(h[1], []int{1}) {
		t.Errorf("2 CPUs: halves %v, %v; want [0] and [1]", h, err)
	}
	// An odd CPU out is left unused: neither side gets more.
	h, err = duetHalves([]int{0, 1, 2, 3, 4})
	if err != nil || !slices.Equal(h[0], []int{0, 1}) || !slices.Equal(h[1], []int{2, 3}) {
		t.Errorf("5 CPUs: halves %v, %v; want [0 1] and [2 3]", h, err)
	}
	if _, err := duetHalves([]int{3}); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "at least 2 CPUs") {
		t.Errorf("1 CPU: %v, want a usage error asking for 2 CPUs", err)
	}
}

func TestDuetRefusal(t *testing.T) {
	plain := &config.Config{}
	pinned := &config.Config{Pinning: config.PinningConfig{Target: "0"}}
	inproc := &config.Config{Target: config.TargetConfig{InProcess: true}}
	if err := duetRefusal(plain, plain, plain); err != nil {
		t.Errorf("no pinning: %v", err)
	}
	if err := duetRefusal(plain, plain, pinned); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "the new side (--new) sets pinning.target") {
		t.Errorf("a pinned new side: %v", err)
	}
	if err := duetRefusal(inproc, plain, plain); exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "target.in_process") {
		t.Errorf("in process: %v", err)
	}
}

// TestDuetLayoutSwaps: the halves swap from round to round, whatever the
// phase's place in the plan, and both sides always have disjoint halves.
func TestDuetLayoutSwaps(t *testing.T) {
	halves := [2][]int{{0}, {1}}
	plans := []planned{{round: 1}, {round: 1}, {round: 2}, {round: 2}, {round: 3}, {round: 3}}
	for _, oldFirst := range []bool{true, false} {
		var got []int
		for i, pl := range plans {
			o, n := duetLayout(duetCPUs{halves: halves}, pl, i, oldFirst)
			if o[0] == n[0] {
				t.Fatalf("phase %d: both sides on CPU %d", i, o[0])
			}
			got = append(got, o[0])
		}
		want := []int{0, 0, 1, 1, 0, 0}
		if !oldFirst {
			want = []int{1, 1, 0, 0, 1, 1}
		}
		if !slices.Equal(got, want) {
			t.Errorf("oldFirst %v: old side's CPU per phase %v, want %v", oldFirst, got, want)
		}
	}
	// Shared: both sides on every CPU in every phase.
	for i, pl := range plans {
		o, n := duetLayout(duetCPUs{halves: halves, shared: []int{0, 1}}, pl, i, true)
		if !slices.Equal(o, []int{0, 1}) || !slices.Equal(n, []int{0, 1}) {
			t.Errorf("shared, phase %d: old on %v, new on %v, want both on 0,1", i, o, n)
		}
	}
}

// TestDuetSeconds: counters read at their own instants are interpolated
// to whole seconds of the common window; the series stops where a counter
// ends.
func TestDuetSeconds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// The old side burns 0.5 CPU s/s and serves 100 req/s; the new side
	// 0.6 and 100, read at other instants. The new side's requests end
	// at 3.2 s: the third second is the last.
	lin := func(rate float64, ts ...float64) []cumPoint {
		var ps []cumPoint
		for _, s := range ts {
			ps = append(ps, cumPoint{at(s), rate * s})
		}
		return ps
	}
	old := duetSeries{cpu: lin(0.5, 0, 0.7, 1.4, 2.1, 2.8, 3.5, 4.2, 5), requests: lin(100, 0, 1, 2, 3, 4, 5)}
	new := duetSeries{cpu: lin(0.6, 0.05, 0.9, 1.8, 2.7, 3.6, 4.5, 5), requests: lin(100, 0.3, 1.3, 2.3, 3.2)}
	secs := duetSeconds(old, new, at(0.5), at(4.9))
	if len(secs) != 2 {
		t.Fatalf("%d seconds, want 2 (0.5–1.5, 1.5–2.5; 2.5–3.5 passes the new side's last reading): %+v", len(secs), secs)
	}
	for _, s := range secs {
		if math.Abs(s.OldCPUSeconds-0.5) > 1e-9 || math.Abs(s.NewCPUSeconds-0.6) > 1e-9 || math.Abs(s.OldRequests-100) > 1e-9 || math.Abs(s.NewRequests-100) > 1e-9 {
			t.Errorf("second %+v, want 0.5/0.6 CPU s and 100 requests a side", s)
		}
	}
	if _, ok := interpolate(old.cpu, at(-1)); ok {
		t.Error("a time before the first reading must not be interpolated")
	}
}

// TestDuetRenewals: with compare.duet_processes: round every round after
// the first starts both targets afresh, the side started first
// alternating and round 1's being the session's own first; session
// renews none; phases outside the rounds never renew.
func TestDuetRenewals(t *testing.T) {
	plans := []planned{{round: 0}, {round: 1}, {round: 1}, {round: 2}, {round: 2}, {round: 3}, {round: 3}, {round: 4}, {round: 4}}
	for _, first := range []string{report.ABOld, report.ABNew} {
		got := duetRenewals(plans, config.DuetProcessesRound, first)
		other := report.OtherSide(first)
		want := map[int][2]string{2: {other, first}, 3: {first, other}, 4: {other, first}}
		if len(got) != len(want) {
			t.Fatalf("first %s: renewals %v, want %v", first, got, want)
		}
		for r, o := range want {
			if got[r] != o {
				t.Errorf("first %s, round %d: order %v, want %v", first, r, got[r], o)
			}
		}
		// Over rounds 1–4 each side is started first twice.
		count := map[string]int{first: 1}
		for _, o := range got {
			count[o[0]]++
		}
		if count[first] != 2 || count[other] != 2 {
			t.Errorf("first %s: started first by side %v, want 2 each", first, count)
		}
	}
	if got := duetRenewals(plans, config.DuetProcessesSession, report.ABOld); len(got) != 0 {
		t.Errorf("session: renewals %v, want none", got)
	}
}
