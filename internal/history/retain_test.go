package history

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/report"
)

func TestRetain(t *testing.T) {
	now := time.Date(2025, 6, 10, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	// run makes a complete run that started d days before now and
	// finished an hour later.
	run := func(id string, d int) Summary {
		start := now.Add(-time.Duration(d) * day)
		return Summary{ID: id, Status: report.StatusComplete, StartedAt: start, FinishedAt: start.Add(time.Hour)}
	}
	withBaseline := func(s Summary) Summary { s.Baseline = true; return s }
	withStatus := func(s Summary, st string) Summary { s.Status = st; return s }
	five := []Summary{run("r1", 9), run("r2", 7), run("r3", 5), run("r4", 3), run("r5", 1)}

	for _, tc := range []struct {
		name     string
		runs     []Summary
		keepLast int
		maxAge   time.Duration
		want     []string
	}{
		{"no limits keeps all", five, 0, 0, nil},
		{"empty", nil, 3, day, nil},
		{"count", five, 2, 0, []string{"r3", "r2", "r1"}},
		{"count equal to runs", five, 5, 0, nil},
		{"count above runs", five, 10, 0, nil},
		{"age", five, 0, 6 * day, []string{"r2", "r1"}},
		{"age counts from the finish", []Summary{{ID: "long", Status: report.StatusComplete, StartedAt: now.Add(-10 * day), FinishedAt: now.Add(-time.Hour)}}, 0, day, nil},
		{"age without a finish counts from the start", []Summary{{ID: "x", Status: report.StatusAborted, StartedAt: now.Add(-2 * day)}}, 0, day, []string{"x"}},
		{"age exactly at the limit is kept", []Summary{{ID: "edge", Status: report.StatusComplete, StartedAt: now.Add(-day)}}, 0, day, nil},
		{"both: count removes more", five, 1, 8 * day, []string{"r4", "r3", "r2", "r1"}},
		{"both: age removes more", five, 4, 4 * day, []string{"r3", "r2", "r1"}},
		{"baseline protected from count", []Summary{withBaseline(run("r1", 9)), run("r2", 7), run("r3", 5)}, 1, 0, []string{"r2"}},
		{"baseline protected from age", []Summary{withBaseline(run("r1", 9)), run("r2", 7), run("r3", 5)}, 0, 6 * day, []string{"r2"}},
		{"running protected", []Summary{withStatus(run("r1", 9), report.StatusRunning), run("r2", 7), run("r3", 1)}, 1, 2 * day, []string{"r2"}},
		{"running counts towards keep last", []Summary{run("r1", 9), run("r2", 7), withStatus(run("r3", 1), report.StatusRunning)}, 2, 0, []string{"r1"}},
		{"unreadable and aborted are removable", []Summary{withStatus(run("u", 9), StatusUnreadable), withStatus(run("a", 8), report.StatusAborted), run("c", 1)}, 1, 0, []string{"a", "u"}},
		{"input order does not matter", []Summary{run("r3", 5), run("r1", 9), run("r5", 1), run("r2", 7), run("r4", 3)}, 2, 0, []string{"r3", "r2", "r1"}},
		{"equal start times rank by id", []Summary{run("b", 1), run("a", 1), run("c", 1)}, 1, 0, []string{"b", "a"}},
		{"negative limits mean none", five, -1, -day, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.runs)
			got := Retain(in, tc.keepLast, tc.maxAge, now)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Retain(keepLast %d, maxAge %s) = %v, want %v", tc.keepLast, tc.maxAge, got, tc.want)
			}
			if !reflect.DeepEqual(in, tc.runs) {
				t.Errorf("Retain modified its input: got %v, want %v", in, tc.runs)
			}
		})
	}
}
