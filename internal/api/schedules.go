package api

import (
	"net/http"
	"time"
)

// Outcomes of a schedule's slot (SlotOutcome.Outcome).
const (
	// SlotStarted: the slot started a run (Run), at the slot or, when
	// another run held the run slot, as soon as it was free.
	SlotStarted = "started"
	// SlotMissed: the daemon was not running at the slot.
	SlotMissed = "missed"
	// SlotSkipped: the slot started no run, for Reason: busy (another run
	// in progress and a slot of the schedule already pending), a
	// read-only history, a run the daemon refused, or a daemon that
	// stopped while the slot was pending.
	SlotSkipped = "skipped"
)

// Schedule is one configured schedule as GET /v1/schedules reports it:
// its configuration (profile and timezone resolved), when it fires next
// and what its latest slots came to.
type Schedule struct {
	Name     string `json:"name"`
	Cron     string `json:"cron"`
	Timezone string `json:"timezone"`
	Profile  string `json:"profile"`
	Kind     string `json:"kind"`
	CatchUp  bool   `json:"catch_up"`
	// Next is the next slot, in the schedule's timezone.
	Next time.Time `json:"next"`
	// LastSlot is the latest slot handled (started, queued, missed or
	// skipped); zero (omitted) before the first.
	LastSlot time.Time `json:"last_slot,omitzero"`
	// LastRun is the id of the latest run a slot started; empty (omitted)
	// before the first.
	LastRun string `json:"last_run,omitempty"`
	// Pending is true while a slot waits for the run in progress to end
	// (at most one per schedule).
	Pending bool `json:"pending"`
	// Recent are the latest slots' outcomes, newest first, at most
	// MaxRecentSlots.
	Recent []SlotOutcome `json:"recent"`
}

// MaxRecentSlots is how many slot outcomes a Schedule lists: enough to
// see a night's missed or skipped slots next to the runs, small enough to
// keep in the daemon's state file.
const MaxRecentSlots = 20

// SlotOutcome is what one slot of a schedule came to.
type SlotOutcome struct {
	// Slot is the slot's time, in the schedule's timezone.
	Slot time.Time `json:"slot"`
	// Outcome is SlotStarted, SlotMissed or SlotSkipped.
	Outcome string `json:"outcome"`
	// Run is the run the slot started or, skipped as busy, the run that
	// was in progress.
	Run string `json:"run,omitempty"`
	// Reason says why a slot was missed or skipped, or that a started
	// one waited or caught up.
	Reason string `json:"reason,omitempty"`
}

// schedulesResponse is GET /v1/schedules's body.
type schedulesResponse struct {
	Schedules []Schedule `json:"schedules"`
}

// schedules serves GET /v1/schedules -> 200 {"schedules":[Schedule, ...]},
// in the configuration's order.
func (h *handler) schedules(w http.ResponseWriter, r *http.Request) error {
	list, err := h.runner.Schedules(r.Context())
	if err != nil {
		return runnerError(err, "")
	}
	if list == nil {
		list = []Schedule{} // [] rather than null
	}
	for i := range list {
		if list[i].Recent == nil {
			list[i].Recent = []SlotOutcome{}
		}
	}
	h.write(w, http.StatusOK, schedulesResponse{Schedules: list})
	return nil
}
