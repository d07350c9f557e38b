package run

import (
	"testing"
	"time"

	"github.com/soakd/soakd/workloads"
)

func TestPositionCountsPhasesRoundsAndTimeLeft(t *testing.T) {
	warm := planned{spec: workloads.Phase{Name: "warmup", Duration: 5 * time.Second}}
	r1 := planned{spec: workloads.Phase{Name: "rest#1"}, round: 1, base: "rest"}
	g1 := planned{spec: workloads.Phase{Name: "gql#1"}, round: 1, base: "gql"}
	r2 := planned{spec: workloads.Phase{Name: "rest#2"}, round: 2, base: "rest"}
	g2 := planned{spec: workloads.Phase{Name: "gql#2"}, round: 2, base: "gql"}
	ml := planned{spec: workloads.Phase{Name: "max-load", Duration: 10 * time.Second}}
	plans := []planned{warm, r1, g1, g2, r2, ml}
	start := time.Unix(100, 0)

	// Before the first round has run, the iteration phases' length is unknown.
	pos := position(plans, 0, 0, map[string]time.Duration{}, time.Second, start)
	if pos.Phase != 1 || pos.Phases != 6 || pos.Round != 0 || pos.Rounds != 2 || pos.AfterKnown {
		t.Errorf("first phase: %+v", pos)
	}
	// In round 2 both arms have run once: their times stand for round 2's.
	took := map[string]time.Duration{"warmup": 6 * time.Second, "rest": 20 * time.Second, "gql": 30 * time.Second}
	pos = position(plans, 3, 0, took, time.Second, start)
	if pos.Phase != 4 || pos.Round != 2 || !pos.AfterKnown || pos.After != 20*time.Second+11*time.Second {
		t.Errorf("round 2: %+v", pos)
	}
	// Adaptive rounds settled after round 1: round 2 will not run.
	pos = position(plans, 2, 1, took, time.Second, start)
	if pos.Phase != 3 || pos.Phases != 4 || pos.Rounds != 1 || pos.After != 11*time.Second {
		t.Errorf("settled after round 1: %+v", pos)
	}
	if pos.Started != start {
		t.Errorf("started: %v", pos.Started)
	}
}

// TestSessionPosition: a sequential A/B session's position counts every
// phase once per side; the second side's run of a phase is timed by the
// first's.
func TestSessionPosition(t *testing.T) {
	r1 := planned{spec: workloads.Phase{Name: "rest#1"}, round: 1, base: "rest"}
	g1 := planned{spec: workloads.Phase{Name: "gql#1"}, round: 1, base: "gql"}
	r2 := planned{spec: workloads.Phase{Name: "rest#2"}, round: 2, base: "rest"}
	g2 := planned{spec: workloads.Phase{Name: "gql#2"}, round: 2, base: "gql"}
	steps := sessionSteps([]planned{r1, g1, g2, r2})
	took := map[string]time.Duration{"rest": 10 * time.Second, "gql": 20 * time.Second}
	pos := position(steps, 5, 0, took, time.Second, time.Unix(0, 0)) // g2 on its second side
	if pos.Phase != 6 || pos.Phases != 8 || pos.Round != 2 || pos.Rounds != 2 || !pos.AfterKnown || pos.After != 20*time.Second {
		t.Errorf("session position %+v: want phase 6 of 8, round 2 of 2, 20 s after (rest#2 on both sides)", pos)
	}
}
