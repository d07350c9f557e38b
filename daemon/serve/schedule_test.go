package serve

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/run"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/history"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/testkit"
)

// fakeRuns is a stand-in suite that records when each run started and how
// many ran at once; run n (from 0) lasts length(n), 0 meaning until it is
// stopped.
type fakeRuns struct {
	length func(n int) time.Duration

	mu           sync.Mutex
	started      []time.Time
	active, most int
}

func (f *fakeRuns) suite(ctx context.Context, _ *config.Config, _ run.RunOptions) (*report.Report, error) {
	f.mu.Lock()
	n := len(f.started)
	f.started = append(f.started, time.Now())
	f.active++
	f.most = max(f.most, f.active)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.active--
		f.mu.Unlock()
	}()
	d := f.length(n)
	if d == 0 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(d):
		return nil, nil
	}
}

// starts returns the start times recorded so far.
func (f *fakeRuns) starts() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.started)
}

// minutes is a run that lasts m minutes.
func minutes(m int) func(int) time.Duration {
	return func(int) time.Duration { return time.Duration(m) * time.Minute }
}

// scheduledDaemon builds a daemon the way the other serve tests do (its
// runs the fake suite, its history in dir) with the scheduler of the
// schedules in user (YAML), logging to the returned observer.
func scheduledDaemon(t *testing.T, ctx context.Context, dir, user string, runs *fakeRuns, hopts history.Options) (*daemon, *scheduler, *observer.ObservedLogs) {
	t.Helper()
	cfg := testkit.Config(t, "data_dir: x\n"+user)
	cfg.DataDir = dir
	store, err := history.Open(cfg.DataDir, hopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	core, logs := observer.New(zap.InfoLevel)
	log := zap.New(core)
	d := &daemon{cfg: cfg, log: log, store: store, base: ctx, suite: runs.suite}
	s, err := newScheduler(cfg, hopts.WriteFile, store.ReadOnly(), log)
	if err != nil {
		t.Fatal(err)
	}
	d.schedules, s.start = s, d.Start
	return d, s, logs
}

// running starts the scheduler's goroutine and returns the function that
// stops it and awaits it and every run, as Serve does.
func running(ctx context.Context, d *daemon, s *scheduler) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { s.run(ctx) })
	return func() {
		cancel()
		wg.Wait()
		d.runs.Wait()
	}
}

// clock is the time t minutes after midnight on synctest's first day.
func clock(h, m int) time.Time { return time.Date(2000, 1, 1, h, m, 0, 0, time.UTC) }

// sleepUntil sleeps until at, then waits for every goroutine of the
// bubble to settle.
func sleepUntil(at time.Time) {
	time.Sleep(time.Until(at))
	synctest.Wait()
}

// outcomes renders a schedule's recent outcomes as "15:04 outcome run
// reason" lines, newest first.
func outcomes(s api.Schedule) []string {
	var out []string
	for _, r := range s.Recent {
		parts := slices.DeleteFunc([]string{r.Slot.Format("15:04"), r.Outcome, r.Run, r.Reason}, func(p string) bool { return p == "" })
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// readState decodes the scheduler's state file in dir.
func readState(t *testing.T, dir string) stateDoc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, scheduleStateFile))
	if err != nil {
		t.Fatal(err)
	}
	var doc stateDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v\n%s", scheduleStateFile, err, b)
	}
	return doc
}

// onlySchedule returns the daemon's one schedule through the API method.
func onlySchedule(t *testing.T, d *daemon) api.Schedule {
	t.Helper()
	list, err := d.Schedules(t.Context())
	if err != nil || len(list) != 1 {
		t.Fatalf("Schedules: %+v, %v; want one", list, err)
	}
	return list[0]
}

const every5 = "schedules: [{name: every-5, cron: \"*/5 * * * *\"}]\n"

// TestScheduleRunsAtItsSlots: */5 * * * * starts a run at 00:05, 00:10 and
// 00:15, through daemon.Start (so each is in the history), and nothing at
// 00:00, when the schedule is seen for the first time: no slot is missed.
// The state file holds when it was first seen, the last slot and run.
func TestScheduleRunsAtItsSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runs := &fakeRuns{length: minutes(1)}
		dir := t.TempDir()
		d, s, logs := scheduledDaemon(t, t.Context(), dir, every5, runs, history.Options{})
		stop := running(t.Context(), d, s)
		sleepUntil(clock(0, 16))

		want := []time.Time{clock(0, 5), clock(0, 10), clock(0, 15)}
		if got := runs.starts(); !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("runs started at %v, want %v", got, want)
		}
		sch := onlySchedule(t, d)
		list := d.store.List()
		if len(list) != 3 || sch.LastRun != list[0].ID || !sch.LastSlot.Equal(clock(0, 15)) || sch.Pending || !sch.Next.Equal(clock(0, 20)) {
			t.Errorf("schedule %+v, history %+v: want last run %s, last slot 00:15, next 00:20, nothing pending", sch, list, list[0].ID)
		}
		wantOut := []string{"00:15 started " + list[0].ID, "00:10 started " + list[1].ID, "00:05 started " + list[2].ID}
		if got := outcomes(sch); !slices.Equal(got, wantOut) {
			t.Errorf("recent %q, want %q", got, wantOut)
		}
		if sch.Name != "every-5" || sch.Cron != "*/5 * * * *" || sch.Timezone != "UTC" || sch.Profile != d.cfg.DefaultProfile || sch.Kind != "run" || sch.CatchUp {
			t.Errorf("schedule's configuration %+v, want every-5, */5 * * * *, UTC, the default profile, kind run, no catch-up", sch)
		}
		if n := logs.FilterMessageSnippet("missed").Len(); n != 0 {
			t.Errorf("%d missed slots logged for a schedule seen for the first time", n)
		}
		doc := readState(t, dir)
		if doc.Version != scheduleStateVersion || len(doc.Schedules) != 1 {
			t.Errorf("state file: version %d, %d schedules; want %d and 1", doc.Version, len(doc.Schedules), scheduleStateVersion)
		}
		st := doc.Schedules["every-5"]
		if !st.Since.Equal(clock(0, 0)) || !st.LastSlot.Equal(clock(0, 15)) || st.LastRun != list[0].ID || len(st.Recent) != 3 {
			t.Errorf("state file: %+v, want since 00:00, last slot 00:15, last run %s and 3 outcomes", st, list[0].ID)
		}
		stop()
	})
}

// TestScheduleOverlap: the overlap rule. The run of 00:05 lasts 12
// minutes: the slot of 00:10 is queued (pending) and starts the moment the
// run slot frees, at 00:17; the slot of 00:15, while 00:10 is still
// pending, is skipped as busy naming the run in progress; 00:20 starts on
// time. Then a run started through the API holds the slot over 00:25,
// pending when the daemon stops: it is recorded as skipped, in the state
// file too. Never do two runs overlap.
func TestScheduleOverlap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		runs := &fakeRuns{length: func(n int) time.Duration {
			return [...]time.Duration{12 * time.Minute, time.Minute, time.Minute, 0}[n]
		}}
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(t.Context())
		d, s, logs := scheduledDaemon(t, ctx, dir, every5, runs, history.Options{})
		stop := running(ctx, d, s)

		sleepUntil(clock(0, 11))
		if sch := onlySchedule(t, d); !sch.Pending || !sch.LastSlot.Equal(clock(0, 10)) || len(sch.Recent) != 1 {
			t.Errorf("at 00:11, during the run of 00:05: %+v, want the slot of 00:10 pending", sch)
		}
		sleepUntil(clock(0, 21))
		want := []time.Time{clock(0, 5), clock(0, 17), clock(0, 20)}
		if got := runs.starts(); !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("runs started at %v, want %v", got, want)
		}
		ids := d.store.List() // newest first
		if len(ids) != 3 {
			t.Fatalf("history %+v, want 3 runs", ids)
		}
		first, second, third := ids[2].ID, ids[1].ID, ids[0].ID
		wantOut := []string{
			"00:20 started " + third,
			"00:15 skipped " + first + " busy: run " + first + " is in progress and the slot of 2000-01-01T00:10:00Z is already pending",
			"00:10 started " + second + " waited for run " + first,
			"00:05 started " + first,
		}
		if got := outcomes(onlySchedule(t, d)); !slices.Equal(got, wantOut) {
			t.Errorf("recent\n%q\nwant\n%q", got, wantOut)
		}
		if n := logs.FilterMessage("schedule: slot skipped").FilterField(zap.String("run", first)).Len(); n != 1 {
			t.Errorf("%d warnings of the skipped slot naming the running run, want 1", n)
		}

		sleepUntil(clock(0, 22))
		manual, err := d.Start(ctx, api.StartRequest{})
		if err != nil {
			t.Fatal(err)
		}
		sleepUntil(clock(0, 26))
		if sch := onlySchedule(t, d); !sch.Pending {
			t.Errorf("at 00:26, during run %s: %+v, want the slot of 00:25 pending", manual.ID, sch)
		}
		cancel()
		stop()
		st := readState(t, dir).Schedules["every-5"]
		if len(st.Recent) != 5 || st.Recent[0].Outcome != "skipped" || !st.Recent[0].Slot.Equal(clock(0, 25)) || st.Recent[0].Reason != reasonStopped || st.Recent[0].Run != manual.ID {
			t.Errorf("state after the stop: %+v, want the slot of 00:25 skipped as %q, naming run %s", st.Recent, reasonStopped, manual.ID)
		}
		if len(runs.starts()) != 4 || runs.most != 1 {
			t.Errorf("%d runs, at most %d at once; want 4, one at a time", len(runs.starts()), runs.most)
		}
	})
}

// TestScheduleMissedSlots: a state file whose last slot is three slots
// before the daemon starts (00:00, started at 00:16) gives three missed
// slots, each logged at warn level and recorded, and no run; with
// catch_up the newest of them (00:15) runs at once and the two others are
// missed. Either way the schedule goes on (00:20).
func TestScheduleMissedSlots(t *testing.T) {
	for _, catchUp := range []bool{false, true} {
		t.Run(map[bool]string{false: "no catch-up", true: "catch-up"}[catchUp], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				state := `{"version":1,"schedules":{"every-5":{"since":"1999-12-31T23:00:00Z","last_slot":"2000-01-01T00:00:00Z","last_run":"old"}}}`
				if err := os.WriteFile(filepath.Join(dir, scheduleStateFile), []byte(state), 0o644); err != nil {
					t.Fatal(err)
				}
				user := "schedules: [{name: every-5, cron: \"*/5 * * * *\", catch_up: false}]\n"
				if catchUp {
					user = strings.Replace(user, "false", "true", 1)
				}
				runs := &fakeRuns{length: minutes(1)}
				d, s, logs := scheduledDaemon(t, t.Context(), dir, user, runs, history.Options{})
				sleepUntil(clock(0, 16)) // the daemon was down
				stop := running(t.Context(), d, s)
				sleepUntil(clock(0, 21))
				defer stop()

				ids := d.store.List()
				missed := []string{"00:10 missed " + reasonNotRunning, "00:05 missed " + reasonNotRunning}
				var want []string
				var starts []time.Time
				if catchUp {
					want = append([]string{"00:20 started " + ids[0].ID, "00:15 started " + ids[1].ID + " " + reasonCatchUp}, missed...)
					starts = []time.Time{clock(0, 16), clock(0, 20)}
				} else {
					want = append([]string{"00:20 started " + ids[0].ID, "00:15 missed " + reasonNotRunning}, missed...)
					starts = []time.Time{clock(0, 20)}
				}
				if got := outcomes(onlySchedule(t, d)); !slices.Equal(got, want) {
					t.Errorf("recent\n%q\nwant\n%q", got, want)
				}
				if got := runs.starts(); !slices.EqualFunc(got, starts, time.Time.Equal) {
					t.Errorf("runs started at %v, want %v", got, starts)
				}
				warned := logs.FilterMessage("schedule: slot missed").FilterLevelExact(zap.WarnLevel).FilterField(zap.String("reason", reasonNotRunning))
				if n, want := warned.Len(), map[bool]int{false: 3, true: 2}[catchUp]; n != want {
					t.Errorf("%d missed slots logged at warn level, want %d:\n%v", n, want, logs.All())
				}
			})
		})
	}
}

// TestScheduleReadOnlyHistory: with a read-only history a slot starts no
// run: it is recorded as skipped with the reason, and the state file is
// never written.
func TestScheduleReadOnlyHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		full := func(path string, _ []byte, _ fs.FileMode) error { return enospc(path) }
		runs := &fakeRuns{length: minutes(1)}
		d, s, _ := scheduledDaemon(t, t.Context(), dir, every5, runs, history.Options{WriteFile: full})
		stop := running(t.Context(), d, s)
		sleepUntil(clock(0, 6))
		stop()
		sch := onlySchedule(t, d)
		if len(sch.Recent) != 1 || sch.Recent[0].Outcome != api.SlotSkipped || !strings.Contains(sch.Recent[0].Reason, "read-only") ||
			!strings.Contains(sch.Recent[0].Reason, "no space left on device") {
			t.Errorf("the slot of 00:05 on a read-only history: %+v, want skipped saying read-only and why", sch.Recent)
		}
		if len(runs.starts()) != 0 {
			t.Errorf("runs started on a read-only history: %v", runs.starts())
		}
		if _, err := os.Stat(filepath.Join(dir, scheduleStateFile)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the state file on a read-only history: %v, want none written", err)
		}
	})
}

// TestSchedulesEndpoint: GET /v1/schedules over a real HTTP server, the
// daemon's handler with its token: each schedule's configuration (zone and
// profile resolved), next slot, last slot, the missed nights of a state
// file three nights old, pending, and a schedule seen for the first time
// with neither last_slot nor last_run and an empty recent list.
func TestSchedulesEndpoint(t *testing.T) {
	dir := t.TempDir()
	ber, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	user := `schedules:
  - {name: nightly, cron: "0 2 * * *", timezone: Europe/Berlin, profile: seed}
  - {name: hourly, cron: "@hourly", catch_up: true}
`
	cfg := testkit.Config(t, user)
	nightly, err := cfg.Schedules[0].Parse()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	last := nightly.Next(now.AddDate(0, 0, -4))
	missed := nightly.Missed(last, now, 100).Slots
	state, err := json.Marshal(stateDoc{Version: 1, Schedules: map[string]scheduleState{"nightly": {Since: last.AddDate(0, -1, 0), LastSlot: last, LastRun: "20000101T000000Z-1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, scheduleStateFile), state, 0o644); err != nil {
		t.Fatal(err)
	}
	d, s, _ := scheduledDaemon(t, t.Context(), dir, user, &fakeRuns{length: minutes(1)}, history.Options{})
	s.mu.Lock()
	s.begin(t.Context(), now)
	s.mu.Unlock()

	srv := httptest.NewServer(api.NewHandlerWith(d, api.Options{Token: "t0ken"}))
	defer srv.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/v1/schedules", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer t0ken")
	before := time.Now()
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Schedules []map[string]json.RawMessage `json:"schedules"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK || len(body.Schedules) != 2 {
		t.Fatalf("GET /v1/schedules: %d, %v, %d schedules; want 200 and 2", resp.StatusCode, err, len(body.Schedules))
	}
	str := func(m map[string]json.RawMessage, key string) string {
		var v string
		if err := json.Unmarshal(m[key], &v); err != nil {
			t.Errorf("%s: %s is not a string: %s", m["name"], key, m[key])
		}
		return v
	}
	n, h := body.Schedules[0], body.Schedules[1]
	if str(n, "name") != "nightly" || str(n, "cron") != "0 2 * * *" || str(n, "timezone") != "Europe/Berlin" || str(n, "profile") != "seed" ||
		str(n, "kind") != "run" || string(n["catch_up"]) != "false" || string(n["pending"]) != "false" || str(n, "last_run") != "20000101T000000Z-1" {
		t.Errorf("nightly: %s", n)
	}
	next, err := time.Parse(time.RFC3339, str(n, "next"))
	if err != nil || !(next.Equal(nightly.Next(before)) || next.Equal(nightly.Next(time.Now()))) || !strings.HasSuffix(str(n, "next"), next.In(ber).Format("-07:00")) {
		t.Errorf("nightly's next %s (%v), want RFC 3339 in Berlin time, the next 02:00 there", n["next"], err)
	}
	lastSlot, err := time.Parse(time.RFC3339, str(n, "last_slot"))
	if err != nil || !lastSlot.Equal(missed[len(missed)-1]) {
		t.Errorf("nightly's last_slot %s, want the newest missed night %s", n["last_slot"], missed[len(missed)-1])
	}
	var recent []map[string]string
	if err := json.Unmarshal(n["recent"], &recent); err != nil || len(recent) != len(missed) || len(missed) < 3 {
		t.Fatalf("nightly's recent %s: %v; want the %d missed nights", n["recent"], err, len(missed))
	}
	for i, r := range recent {
		slot, err := time.Parse(time.RFC3339, r["slot"])
		if err != nil || !slot.Equal(missed[len(missed)-1-i]) || r["outcome"] != "missed" || r["reason"] != reasonNotRunning || len(r) != 3 {
			t.Errorf("nightly's recent[%d] = %v, want slot %s missed, reason %q, no run", i, r, missed[len(missed)-1-i], reasonNotRunning)
		}
	}
	var keys []string
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"catch_up", "cron", "kind", "name", "next", "pending", "profile", "recent", "timezone"}; !slices.Equal(keys, want) {
		t.Errorf("a schedule seen for the first time has keys %v, want %v (no last_slot, no last_run)", keys, want)
	}
	if str(h, "timezone") != "UTC" || str(h, "profile") != d.cfg.DefaultProfile || string(h["catch_up"]) != "true" || string(h["recent"]) != "[]" || !strings.HasSuffix(str(h, "next"), ":00:00Z") {
		t.Errorf("hourly: %s", h)
	}
}

// TestSchedulePendingLeftByACrash: a slot a daemon that died (no graceful
// stop) left pending in the state file is recorded as skipped when the
// next one starts, rather than lost.
func TestSchedulePendingLeftByACrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		state := `{"version":1,"schedules":{"every-5":{"since":"1999-12-31T23:00:00Z","last_slot":"2000-01-01T00:10:00Z","pending":"2000-01-01T00:10:00Z"}}}`
		if err := os.WriteFile(filepath.Join(dir, scheduleStateFile), []byte(state), 0o644); err != nil {
			t.Fatal(err)
		}
		runs := &fakeRuns{length: minutes(1)}
		d, s, _ := scheduledDaemon(t, t.Context(), dir, every5, runs, history.Options{})
		sleepUntil(clock(0, 12))
		stop := running(t.Context(), d, s)
		sleepUntil(clock(0, 13))
		stop()
		want := []string{"00:10 skipped " + reasonStopped}
		if got := outcomes(onlySchedule(t, d)); !slices.Equal(got, want) || len(runs.starts()) != 0 {
			t.Errorf("recent %q and runs %v, want %q and none", got, runs.starts(), want)
		}
		if st := readState(t, dir).Schedules["every-5"]; !st.Pending.IsZero() {
			t.Errorf("the state file still holds the pending slot %s", st.Pending)
		}
	})
}

// TestServeStartsTheScheduler: Serve builds the scheduler from the
// configuration, serves its schedules on GET /v1/schedules, writes the
// state file in data_dir, and awaits the scheduler when it stops.
func TestServeStartsTheScheduler(t *testing.T) {
	cfg := testkit.Config(t, "data_dir: x\nschedules: [{name: weekly, cron: \"@weekly\", timezone: America/New_York}]\n")
	cfg.DataDir = t.TempDir()
	cfg.API.Listen = freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, cfg, ServeOptions{Log: zap.NewNop()}) }()
	cl := &api.Client{BaseURL: "http://" + cfg.API.Listen}
	var list []api.Schedule
	awaitServe(t, served, "serve", func() (err error) { list, err = cl.Schedules(ctx); return err })
	if len(list) != 1 || list[0].Name != "weekly" || list[0].Timezone != "America/New_York" || list[0].Next.Weekday() != time.Sunday || !list[0].Next.After(time.Now()) {
		t.Errorf("GET /v1/schedules: %+v, want the weekly schedule, next on a Sunday in New York", list)
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve on cancel: %v", err)
	}
	if st := readState(t, cfg.DataDir).Schedules["weekly"]; st.Since.IsZero() {
		t.Errorf("state file after serve: %+v, want the schedule's first sighting", st)
	}
}
