package run

import (
	"time"

	"github.com/soakd/soakd/internal/progress"
)

// planKey names a planned phase for its expected length: a compared
// phase's base name (every round of it runs alike), else its own.
func planKey(pl planned) string {
	if pl.base != "" {
		return pl.base
	}
	return pl.spec.Name
}

// position is the run's position as plans[i] starts, for the live view:
// phase i+1 of the phases that will run (none past stopAfter, the last
// round of settled adaptive rounds, when above 0), its round of the
// planned rounds, and the expected time of the phases after it. A
// phase's expected time is how long the same phase took earlier in the
// run (took, by planKey), else its duration plus settle; a phase that runs
// its iterations to the end and has not run yet makes it unknown.
func position(plans []planned, i, stopAfter int, took map[string]time.Duration, settle time.Duration, started time.Time) progress.Position {
	pos := progress.Position{Round: plans[i].round, Started: started, AfterKnown: true}
	for j, pl := range plans {
		if stopAfter > 0 && pl.round > stopAfter {
			continue
		}
		pos.Phases++
		pos.Rounds = max(pos.Rounds, pl.round)
		if j <= i {
			pos.Phase = pos.Phases
			continue
		}
		switch d, ok := took[planKey(pl)]; {
		case ok:
			pos.After += d
		case pl.spec.Duration > 0:
			pos.After += pl.spec.Duration + settle
		default:
			pos.AfterKnown = false
		}
	}
	return pos
}
