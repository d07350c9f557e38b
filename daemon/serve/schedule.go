package serve

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/fsutil"
	"github.com/soakd/soakd/internal/schedule"
)

// The scheduler starts the runs of the configured schedules (config
// schedules:, docs/operations.md, "Scheduled runs"). One goroutine, owned
// and awaited by Serve, sleeps until the next slot of any schedule and
// starts its run through daemon.Start, the path POST /v1/runs takes.
//
// Overlap rule: the daemon runs one run at a time, so a slot that comes
// while another run holds the run slot (Start answers *api.BusyError) is
// queued, at most one pending slot per schedule, and started as soon as
// the run slot is free (claim's release notifies the scheduler). A
// further slot of the same schedule that comes while one is still
// pending is recorded as skipped, reason busy, with the running run's id.
// A pending slot the daemon stops before it could start is recorded as
// skipped too.
//
// Missed slots: the scheduler keeps, per schedule, the last slot it
// handled in data_dir/schedules.json (scheduleStateFile). When the daemon
// starts, the slots between that one and now are missed: each is logged at
// warn level and recorded (reason notRunning). With catch_up the newest of
// them is started once, the rest stay missed; without it none is run. A
// schedule seen for the first time has no missed slots: the file records
// when it was first seen (since) and slots are counted from then.
//
// Every slot ends as one outcome (api.SlotStarted, api.SlotMissed,
// api.SlotSkipped) that is logged and kept among the schedule's latest
// api.MaxRecentSlots: a slot that cannot start (a read-only history, a
// run the daemon refuses) is skipped with Start's error as its reason,
// never dropped.

// scheduleStateFile is the scheduler's state, in data_dir.
const scheduleStateFile = "schedules.json"

// scheduleStateVersion is the state file's format; a file of another
// version is not read (every schedule is then seen for the first time).
const scheduleStateVersion = 1

// maxStateBytes bounds the state file read at start, in bytes (1 MiB):
// each schedule keeps about 4 KiB of recent outcomes, so a larger file is
// not the scheduler's.
const maxStateBytes = 1 << 20

// maxSleep bounds each wait of the scheduler between two looks at the
// wall clock. Timers run on the monotonic clock, which stops while the
// machine sleeps and does not follow a stepped wall clock, while slots are
// wall-clock minutes: waking at least every minute bounds how late a slot
// is seen after either to a minute.
const maxSleep = time.Minute

// Reasons recorded with a slot's outcome.
const (
	reasonNotRunning = "daemon not running"
	reasonLate       = "daemon not scheduling at the slot: the machine slept, or the wall clock was stepped forward"
	reasonStopped    = "daemon stopped while the slot was pending"
	reasonCatchUp    = "catch-up of the newest slot missed while the daemon was not running"
)

// scheduleState is what the state file keeps of one schedule.
type scheduleState struct {
	// Since is when the daemon first saw the schedule: no slot before it
	// counts as missed.
	Since time.Time `json:"since"`
	// LastSlot is the latest slot handled (started, queued, missed or
	// skipped); zero before the first.
	LastSlot time.Time `json:"last_slot,omitzero"`
	// LastRun is the id of the latest run a slot started.
	LastRun string `json:"last_run,omitempty"`
	// Pending is the slot waiting for the run slot; zero when none. One
	// left by a daemon that died is recorded as skipped at the next start.
	Pending time.Time `json:"pending,omitzero"`
	// Recent are the latest slots' outcomes, newest first.
	Recent []api.SlotOutcome `json:"recent,omitempty"`
}

// stateDoc is the state file: {"version":1,"schedules":{NAME: state}}.
// A schedule no longer configured is dropped at the next write.
type stateDoc struct {
	Version   int                      `json:"version"`
	Schedules map[string]scheduleState `json:"schedules"`
}

// scheduled is one schedule and where it stands.
type scheduled struct {
	// cfg is the configured entry, its profile, zone and kind resolved.
	cfg   config.ScheduleConfig
	cron  *schedule.Schedule
	state scheduleState
	// busyWith is the run the pending slot (state.Pending) waits for.
	busyWith string
}

// watermark is the time up to which the schedule's slots are handled.
func (e *scheduled) watermark() time.Time {
	if e.state.LastSlot.After(e.state.Since) {
		return e.state.LastSlot
	}
	return e.state.Since
}

// scheduler runs the daemon's schedules; see the comment above. Its
// methods are safe for concurrent use; a nil *scheduler (a daemon built
// by hand in tests, or one without schedules) has no schedules.
type scheduler struct {
	// start begins a run: daemon.Start.
	start func(context.Context, api.StartRequest) (api.RunSummary, error)
	log   *zap.Logger
	// path is the state file; write writes it atomically, nil when the
	// history is read-only (data_dir takes no writes).
	path  string
	write func(path string, data []byte, perm fs.FileMode) error
	// freed is signalled (without blocking, buffered 1) each time the run
	// slot is released, so a pending slot starts at once.
	freed chan struct{}

	mu      sync.Mutex
	entries []*scheduled // in the configuration's order
	dirty   bool         // state changed since the last write
}

// newScheduler builds the scheduler of cfg's schedules with the state of
// its data directory; start must be set before run. write writes the
// state file (nil: fsutil.WriteFile); with a read-only history (readOnly
// not nil) the state is read but never written. A state file that cannot
// be read is logged and ignored: every schedule is then seen for the
// first time.
func newScheduler(cfg *config.Config, write func(string, []byte, fs.FileMode) error, readOnly error, log *zap.Logger) (*scheduler, error) {
	if write == nil {
		write = fsutil.WriteFile
	}
	s := &scheduler{log: log, path: filepath.Join(cfg.DataDir, scheduleStateFile), write: write, freed: make(chan struct{}, 1)}
	if readOnly != nil {
		s.write = nil
		if len(cfg.Schedules) > 0 {
			log.Warn("schedules: the history is read-only, so no slot can start a run and the schedules' state is not saved", zap.Error(readOnly))
		}
	}
	states, err := readScheduleState(s.path)
	if err != nil {
		log.Warn("schedules: the state file cannot be read; every schedule starts afresh, with no missed slots", zap.String("file", s.path), zap.Error(err))
	}
	for i, c := range cfg.Schedules {
		cron, err := c.Parse()
		if err != nil {
			return nil, fmt.Errorf("schedules[%d].cron: %w", i, err)
		}
		c.Profile = cmp.Or(c.Profile, cfg.DefaultProfile)
		c.Timezone = cron.Location().String()
		c.Kind = cmp.Or(c.Kind, config.ScheduleKindRun)
		s.entries = append(s.entries, &scheduled{cfg: c, cron: cron, state: states[c.Name]})
	}
	return s, nil
}

// readScheduleState reads the state file; a file that does not exist is
// no state.
func readScheduleState(path string) (map[string]scheduleState, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStateBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxStateBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxStateBytes)
	}
	var doc stateDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not the scheduler's JSON: %w", err)
	}
	if doc.Version != scheduleStateVersion {
		return nil, fmt.Errorf("version %d, this soakd reads version %d", doc.Version, scheduleStateVersion)
	}
	return doc.Schedules, nil
}

// slotFreed tells the scheduler that the run slot was released; claim's
// release calls it. It never blocks.
func (s *scheduler) slotFreed() {
	if s == nil {
		return
	}
	select {
	case s.freed <- struct{}{}:
	default: // a wake-up is already due
	}
}

// run is the scheduler's goroutine: it handles the slots missed while the
// daemon was not running, then each slot as it comes, until ctx is done,
// when a slot still pending is recorded as skipped. Serve awaits it
// before it awaits the runs, so no run starts after that.
func (s *scheduler) run(ctx context.Context) {
	if s == nil || len(s.entries) == 0 {
		return
	}
	s.mu.Lock()
	s.begin(ctx, time.Now())
	s.mu.Unlock()
	freed := false
	for {
		s.mu.Lock()
		if ctx.Err() != nil {
			s.stop()
			s.mu.Unlock()
			return
		}
		now := time.Now()
		s.step(ctx, now, freed)
		wait := s.wait(now)
		s.mu.Unlock()
		timer := time.NewTimer(wait)
		freed = false
		select {
		case <-ctx.Done():
		case <-timer.C:
		case <-s.freed:
			freed = true
		}
		timer.Stop()
	}
}

// begin handles what happened while the daemon was not running: a
// schedule seen for the first time starts counting now; any other
// records its slots between its last handled one and now as missed, and
// with catch_up starts the newest of them instead. The caller holds mu.
func (s *scheduler) begin(ctx context.Context, now time.Time) {
	for _, e := range s.entries {
		if slot := e.state.Pending; !slot.IsZero() {
			e.state.Pending = time.Time{}
			s.record(e, slot, api.SlotSkipped, "", reasonStopped)
		}
		if e.state.Since.IsZero() {
			e.state.Since = now
			s.dirty = true
			s.log.Info("schedule first seen: slots count from now", zap.String("schedule", e.cfg.Name), zap.String("cron", e.cron.String()),
				zap.String("timezone", e.cfg.Timezone), zap.Time("next", e.cron.Next(now)))
			continue
		}
		missed := e.cron.Missed(e.watermark(), now, schedule.MaxMissed)
		if missed.Older > 0 {
			s.log.Warn("schedule: slots missed while the daemon was not running, older than those listed below", zap.String("schedule", e.cfg.Name),
				zap.Int("slots", missed.Older), zap.Time("before", missed.Slots[0]))
		}
		slots := missed.Slots
		var catchUp time.Time
		if e.cfg.CatchUp && len(slots) > 0 {
			slots, catchUp = slots[:len(slots)-1], slots[len(slots)-1]
		}
		for _, slot := range slots {
			s.record(e, slot, api.SlotMissed, "", reasonNotRunning)
		}
		if !catchUp.IsZero() {
			s.try(ctx, e, catchUp, reasonCatchUp)
		}
	}
	s.save()
}

// step starts what is due at now: each schedule's pending slot when the
// run slot was freed since the last step (every release notifies, so
// nothing else can free it), then its slot that has come (the latest one;
// any earlier ones since the last step the daemon slept through, and they
// are missed). The caller holds mu.
func (s *scheduler) step(ctx context.Context, now time.Time, freed bool) {
	for _, e := range s.entries {
		if freed && !e.state.Pending.IsZero() {
			s.try(ctx, e, e.state.Pending, "")
		}
		// Slots in (watermark, now]: slots are whole minutes, so a
		// nanosecond past now counts a slot at now itself.
		due := e.cron.Missed(e.watermark(), now.Add(time.Nanosecond), schedule.MaxMissed)
		if len(due.Slots) == 0 {
			continue
		}
		if due.Older > 0 {
			s.log.Warn("schedule: slots the daemon did not see come, older than those listed below", zap.String("schedule", e.cfg.Name),
				zap.Int("slots", due.Older), zap.Time("before", due.Slots[0]))
		}
		last := len(due.Slots) - 1
		for _, slot := range due.Slots[:last] {
			s.record(e, slot, api.SlotMissed, "", reasonLate)
		}
		slot := due.Slots[last]
		if !e.state.Pending.IsZero() {
			s.record(e, slot, api.SlotSkipped, e.busyWith, fmt.Sprintf("busy: run %s is in progress and the slot of %s is already pending",
				e.busyWith, e.state.Pending.In(e.cron.Location()).Format(time.RFC3339)))
			continue
		}
		s.try(ctx, e, slot, "")
	}
	s.save()
}

// try starts the run of e's slot: recorded as started; queued as pending
// when another run holds the run slot; skipped with the error otherwise.
// note is the reason recorded with a start. The caller holds mu.
func (s *scheduler) try(ctx context.Context, e *scheduled, slot time.Time, note string) {
	if ctx.Err() != nil {
		return // the daemon stops: stop records a pending slot
	}
	sum, err := s.start(ctx, api.StartRequest{Profile: e.cfg.Profile})
	busy, isBusy := errors.AsType[*api.BusyError](err)
	switch {
	case err == nil:
		if !e.state.Pending.IsZero() {
			note = fmt.Sprintf("waited for run %s", e.busyWith)
		}
		e.state.Pending, e.busyWith = time.Time{}, ""
		e.state.LastRun = sum.ID
		s.record(e, slot, api.SlotStarted, sum.ID, note)
	case isBusy:
		if e.state.Pending.IsZero() {
			s.log.Info("schedule: slot pending until the run in progress ends", zap.String("schedule", e.cfg.Name),
				zap.Time("slot", slot), zap.String("running", busy.RunningID))
			e.state.Pending = slot.UTC()
			s.handled(e, slot)
		}
		e.busyWith = busy.RunningID
	default:
		e.state.Pending, e.busyWith = time.Time{}, ""
		s.record(e, slot, api.SlotSkipped, "", err.Error())
	}
}

// handled moves e's last handled slot to slot, never back.
func (s *scheduler) handled(e *scheduled, slot time.Time) {
	if slot.After(e.state.LastSlot) {
		e.state.LastSlot = slot.UTC()
	}
	s.dirty = true
}

// record logs the outcome of e's slot (warn unless started) and keeps it
// among e's latest, sorted newest slot first. The caller holds mu.
func (s *scheduler) record(e *scheduled, slot time.Time, outcome, run, reason string) {
	fields := []zap.Field{zap.String("schedule", e.cfg.Name), zap.Time("slot", slot), zap.String("outcome", outcome)}
	if run != "" {
		fields = append(fields, zap.String("run", run))
	}
	if reason != "" {
		fields = append(fields, zap.String("reason", reason))
	}
	if outcome == api.SlotStarted {
		s.log.Info("schedule: slot started a run", fields...)
	} else {
		s.log.Warn("schedule: slot "+outcome, fields...)
	}
	s.handled(e, slot)
	o := api.SlotOutcome{Slot: slot.UTC(), Outcome: outcome, Run: run, Reason: reason}
	i, _ := slices.BinarySearchFunc(e.state.Recent, slot, func(r api.SlotOutcome, t time.Time) int { return t.Compare(r.Slot) })
	e.state.Recent = slices.Insert(e.state.Recent, i, o)
	if len(e.state.Recent) > api.MaxRecentSlots {
		e.state.Recent = e.state.Recent[:api.MaxRecentSlots]
	}
}

// wait is how long the scheduler may sleep after now: until the nearest
// next slot, at most maxSleep. The caller holds mu.
func (s *scheduler) wait(now time.Time) time.Duration {
	wait := maxSleep
	for _, e := range s.entries {
		if next := e.cron.Next(later(now, e.watermark())); !next.IsZero() {
			wait = min(wait, next.Sub(now))
		}
	}
	return max(wait, 0)
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// stop records every slot still pending as skipped: the daemon stops. The
// caller holds mu.
func (s *scheduler) stop() {
	for _, e := range s.entries {
		if !e.state.Pending.IsZero() {
			s.record(e, e.state.Pending, api.SlotSkipped, e.busyWith, reasonStopped)
			e.state.Pending, e.busyWith = time.Time{}, ""
		}
	}
	s.save()
}

// save writes the state file when the state changed and the history takes
// writes; a failed write is logged, and retried at the next change. The
// caller holds mu.
func (s *scheduler) save() {
	if !s.dirty || s.write == nil {
		return
	}
	doc := stateDoc{Version: scheduleStateVersion, Schedules: map[string]scheduleState{}}
	for _, e := range s.entries {
		doc.Schedules[e.cfg.Name] = e.state
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err == nil {
		err = s.write(s.path, append(b, '\n'), 0o644)
	}
	if err != nil {
		s.log.Warn("schedules: cannot save the state; slots handled since its last write will count as missed after a restart", zap.String("file", s.path), zap.Error(err))
		return
	}
	s.dirty = false
}

// list returns the schedules as the API reports them at now, times in
// each schedule's zone.
func (s *scheduler) list(now time.Time) []api.Schedule {
	if s == nil {
		return []api.Schedule{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]api.Schedule, 0, len(s.entries))
	for _, e := range s.entries {
		loc := e.cron.Location()
		a := api.Schedule{Name: e.cfg.Name, Cron: e.cfg.Cron, Timezone: e.cfg.Timezone, Profile: e.cfg.Profile, Kind: e.cfg.Kind, CatchUp: e.cfg.CatchUp,
			Next: e.cron.Next(later(now, e.watermark())), LastRun: e.state.LastRun, Pending: !e.state.Pending.IsZero(), Recent: make([]api.SlotOutcome, 0, len(e.state.Recent))}
		if !e.state.LastSlot.IsZero() {
			a.LastSlot = e.state.LastSlot.In(loc)
		}
		for _, r := range e.state.Recent {
			r.Slot = r.Slot.In(loc)
			a.Recent = append(a.Recent, r)
		}
		out = append(out, a)
	}
	return out
}

// Schedules returns the configured schedules with their next slots and
// latest outcomes (api.Runner).
func (d *daemon) Schedules(context.Context) ([]api.Schedule, error) {
	return d.schedules.list(time.Now()), nil
}
