package history

import (
	"cmp"
	"slices"
	"time"

	"github.com/soakd/soakd/internal/report"
)

// Retain decides which runs retention removes, as a pure function of the
// runs, the limits and the clock. Runs are ranked newest first (see
// sortNewestFirst); a run is removed when its rank is beyond keepLast
// (0 = no count limit) OR it is older than maxAge at now (0 = no age limit;
// a run's age counts from when it finished, or from its start if it has no
// finish time). The baseline run and runs with status "running" are never
// removed, though they count towards keepLast. Negative limits mean no
// limit. The ids are returned newest first; the input is not modified.
func Retain(runs []Summary, keepLast int, maxAge time.Duration, now time.Time) (remove []string) {
	sorted := slices.Clone(runs)
	sortNewestFirst(sorted)
	for rank, r := range sorted {
		if r.Baseline || r.Status == report.StatusRunning {
			continue
		}
		beyond := keepLast > 0 && rank >= keepLast
		old := maxAge > 0 && now.Sub(lastTime(r)) > maxAge
		if beyond || old {
			remove = append(remove, r.ID)
		}
	}
	return remove
}

// lastTime is the latest time known for a run: its finish, else its start.
func lastTime(r Summary) time.Time {
	if r.FinishedAt.After(r.StartedAt) {
		return r.FinishedAt
	}
	return r.StartedAt
}

// sortNewestFirst orders runs by start time, newest first, then by id
// descending, so that timestamp ids break ties in time order and the order
// never depends on map iteration.
func sortNewestFirst(runs []Summary) {
	slices.SortFunc(runs, func(a, b Summary) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
}
