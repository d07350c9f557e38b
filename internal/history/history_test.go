package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/fsutil"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
)

var t0 = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)

// newReport returns a report as the daemon writes it, with some content
// beyond the fields the index uses.
func newReport(id, status string, verdict kpi.Outcome, start time.Time) *report.Report {
	r := &report.Report{
		SchemaVersion: report.SchemaVersion, Run: id, Profile: "smoke", Description: "a short run",
		Status: status, Verdict: verdict, StartedAt: start, TargetPID: 4242,
		Host:    report.Host{Cores: 2, GOMAXPROCS: 2, GoVersion: "go1.26.8", OS: "linux", Arch: "amd64"},
		Compare: report.Compare{REST: "rest", GraphQL: "graphql"}, Arms: "rest,graphql",
		Phases: []report.Phase{{Name: "rest", Arm: "rest", DriverPID: 4343, Requests: 1000, Errors: 2}},
		Notes:  []string{"a note"},
	}
	if status != report.StatusRunning {
		r.FinishedAt = start.Add(time.Hour)
	}
	return r
}

// writeRun writes D/runs/<id>/report.json holding r, plus an extra member
// from a future schema so tests can see that rewrites keep it.
func writeRun(t *testing.T, data, id string, r *report.Report) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	obj["future_field"] = map[string]any{"kept": true}
	b, err = json.MarshalIndent(obj, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, data, id, report.JSONFile, b)
}

// writeFile writes D/runs/<id>/<name>.
func writeFile(t *testing.T, data, id, name string, b []byte) string {
	t.Helper()
	dir := filepath.Join(data, RunsDir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if name != "" {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// mustOpen opens data's history, closed when the test ends.
func mustOpen(t *testing.T, data string) *Store {
	t.Helper()
	s, err := Open(data, Options{})
	if err != nil {
		t.Fatalf("Open(%s): %v", data, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// reopen closes s, which releases data's lock, and opens data again, as a
// restarted daemon would.
func reopen(t *testing.T, s *Store, data string) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return mustOpen(t, data)
}

// statuses maps id to status in List's order.
func statuses(list []Summary) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s.ID + "=" + s.Status
	}
	return out
}

func TestOpen(t *testing.T) {
	data := t.TempDir()
	writeRun(t, data, "20250601T100000Z", newReport("20250601T100000Z", report.StatusComplete, "pass", t0))
	runningDir := writeRun(t, data, "20250602T100000Z", newReport("20250602T100000Z", report.StatusRunning, kpi.OutcomeRunning, t0.Add(24*time.Hour)))
	writeRun(t, data, "20250603T100000Z", newReport("20250603T100000Z", report.StatusAborted, kpi.OutcomeAborted, t0.Add(48*time.Hour)))
	writeFile(t, data, "no-report", "samples.json", []byte("{}"))
	writeFile(t, data, "garbage", report.JSONFile, []byte("{not json"))
	writeFile(t, data, ".hidden", "", nil)
	if err := os.WriteFile(filepath.Join(data, RunsDir, "stray.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	completePath := filepath.Join(data, RunsDir, "20250601T100000Z", report.JSONFile)
	completeBefore, err := os.ReadFile(completePath)
	if err != nil {
		t.Fatal(err)
	}

	s := mustOpen(t, data)
	list := s.List()
	got := statuses(list)
	// The unreadable runs are dated by their directories' modification time
	// (now), so they come first.
	if len(got) != 5 || !slices.Equal(got[2:], []string{"20250603T100000Z=aborted", "20250602T100000Z=aborted", "20250601T100000Z=complete"}) {
		t.Fatalf("List = %v, want the two unreadable runs then 20250603T100000Z=aborted 20250602T100000Z=aborted 20250601T100000Z=complete", got)
	}
	unreadable := []string{got[0], got[1]}
	slices.Sort(unreadable)
	if want := []string{"garbage=unreadable", "no-report=unreadable"}; !slices.Equal(unreadable, want) {
		t.Errorf("unreadable runs = %v, want %v", unreadable, want)
	}
	for _, sum := range list {
		if sum.Dir != filepath.Join(data, RunsDir, sum.ID) {
			t.Errorf("run %s: Dir = %s, want %s", sum.ID, sum.Dir, filepath.Join(data, RunsDir, sum.ID))
		}
		if sum.Status == StatusUnreadable && sum.StartedAt.IsZero() {
			t.Errorf("unreadable run %s has no time; want the directory's modification time", sum.ID)
		}
	}

	// The interrupted run: aborted on disk, everything else intact.
	rep, err := report.Read(filepath.Join(runningDir, report.JSONFile))
	if err != nil {
		t.Fatalf("the rewritten report.json is not a valid report: %v", err)
	}
	if rep.Status != report.StatusAborted || rep.Verdict != kpi.OutcomeAborted || rep.Error != StoppedMessage {
		t.Errorf("rewritten report: status %q verdict %q error %q, want %q %q %q",
			rep.Status, rep.Verdict, rep.Error, report.StatusAborted, kpi.OutcomeAborted, StoppedMessage)
	}
	want := newReport("20250602T100000Z", report.StatusAborted, kpi.OutcomeAborted, t0.Add(24*time.Hour))
	want.Error, want.FinishedAt = StoppedMessage, time.Time{}
	if gotJSON, wantJSON := mustJSON(t, rep), mustJSON(t, want); gotJSON != wantJSON {
		t.Errorf("rewritten report:\n got %s\nwant %s", gotJSON, wantJSON)
	}
	raw, err := os.ReadFile(filepath.Join(runningDir, report.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"future_field"`)) {
		t.Errorf("the rewrite dropped a member this version does not know:\n%s", raw)
	}
	sum, _, err := s.Get("20250602T100000Z")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Verdict != kpi.OutcomeAborted || sum.Profile != "smoke" || !sum.StartedAt.Equal(t0.Add(24*time.Hour)) || sum.Reason != StoppedMessage {
		t.Errorf("summary of the interrupted run = %+v, want verdict aborted, profile smoke, started %s, reason %q", sum, t0.Add(24*time.Hour), StoppedMessage)
	}

	// Other reports are left byte for byte; the unreadable ones are not deleted.
	if after, err := os.ReadFile(completePath); err != nil || !bytes.Equal(after, completeBefore) {
		t.Errorf("the complete run's report.json changed (err %v)", err)
	}
	for _, id := range []string{"no-report", "garbage"} {
		if _, err := os.Stat(filepath.Join(data, RunsDir, id)); err != nil {
			t.Errorf("run %s: %v, want the directory kept", id, err)
		}
	}

	// Reopening changes nothing.
	if got2 := statuses(reopen(t, s, data).List()); !slices.Equal(got2, got) {
		t.Errorf("after reopening List = %v, want %v", got2, got)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOpenCreatesRuns(t *testing.T) {
	data := filepath.Join(t.TempDir(), "a", "b")
	s := mustOpen(t, data)
	if fi, err := os.Stat(filepath.Join(data, RunsDir)); err != nil || !fi.IsDir() {
		t.Fatalf("runs directory: %v, want created", err)
	}
	if got := s.List(); len(got) != 0 {
		t.Errorf("List = %v, want empty", got)
	}
	if got := s.Baseline(); got != "" {
		t.Errorf("Baseline = %q, want empty", got)
	}
}

func TestOpenBadBaseline(t *testing.T) {
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, BaselineFile), []byte("../../etc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(data, Options{}); !errors.Is(err, ErrInvalidID) {
		t.Errorf("Open with baseline ../../etc: err %v, want ErrInvalidID", err)
	}
}

func TestValidateAndNewRun(t *testing.T) {
	data := t.TempDir()
	s := mustOpen(t, data)
	for _, tc := range []struct {
		id string
		ok bool
	}{
		{"20250601T100000Z", true},
		{"nightly-1.2_b", true},
		{strings.Repeat("a", MaxIDLength), true},
		{"", false},
		{".", false},
		{"..", false},
		{".hidden", false},
		{"a/b", false},
		{"../x", false},
		{"/abs", false},
		{`a\b`, false},
		{"a b", false},
		{"a\x00b", false},
		{"é", false},
		{strings.Repeat("a", MaxIDLength+1), false},
	} {
		dir, err := s.NewRun(tc.id, "smoke")
		if tc.ok {
			if err != nil {
				t.Errorf("NewRun(%q): %v, want no error", tc.id, err)
				continue
			}
			if want := filepath.Join(data, RunsDir, tc.id); dir != want {
				t.Errorf("NewRun(%q) = %s, want %s", tc.id, dir, want)
			}
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				t.Errorf("NewRun(%q): directory %v, want created", tc.id, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidID) {
			t.Errorf("NewRun(%q): err %v, want ErrInvalidID", tc.id, err)
		}
		if ValidateID(tc.id) == nil {
			t.Errorf("ValidateID(%q) = nil, want an error", tc.id)
		}
	}
	entries, err := os.ReadDir(filepath.Join(data, RunsDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Errorf("runs directory holds %d entries, want the 3 valid runs", len(entries))
	}
	if entries, _ := os.ReadDir(data); len(entries) != 2 || entries[0].Name() != LockFile || entries[1].Name() != RunsDir {
		t.Errorf("data directory holds %v, want only %s and %s/: invalid ids escaped", entries, LockFile, RunsDir)
	}

	// Existing runs, in the index or only on disk.
	if _, err := s.NewRun("20250601T100000Z", "smoke"); !errors.Is(err, ErrExists) {
		t.Errorf("NewRun of an indexed run: err %v, want ErrExists", err)
	}
	writeFile(t, data, "made-elsewhere", "", nil)
	if _, err := s.NewRun("made-elsewhere", "smoke"); !errors.Is(err, ErrExists) {
		t.Errorf("NewRun of a directory created after Open: err %v, want ErrExists", err)
	}

	// A new run is listed as running until its first report.
	sum, rep, err := s.Get("nightly-1.2_b")
	if !errors.Is(err, ErrNoReport) || rep != nil {
		t.Errorf("Get of a run without a report yet: report %v err %v, want nil and ErrNoReport", rep, err)
	}
	if sum.Status != report.StatusRunning || sum.StartedAt.IsZero() {
		t.Errorf("new run summary = %+v, want status running with a start time", sum)
	}
}

func TestGetAndUpdate(t *testing.T) {
	data := t.TempDir()
	s := mustOpen(t, data)
	for _, id := range []string{"nope", "../x", ""} {
		if _, _, err := s.Get(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q): err %v, want ErrNotFound", id, err)
		}
		if err := s.Update(id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Update(%q): err %v, want ErrNotFound", id, err)
		}
	}

	const id = "20250601T100000Z"
	dir, err := s.NewRun(id, "smoke")
	if err != nil {
		t.Fatal(err)
	}
	// A new run is running, verdict included, and names its profile.
	if got := s.List()[0]; got.Status != report.StatusRunning || got.Verdict != kpi.OutcomeRunning || got.Profile != "smoke" {
		t.Errorf("a new run: %+v, want status and verdict running, profile smoke", got)
	}
	// No report yet: Update fails and the run stays running.
	if err := s.Update(id); !errors.Is(err, ErrNoReport) {
		t.Errorf("Update before the first report: err %v, want ErrNoReport", err)
	}
	if got := s.List()[0]; got.Status != report.StatusRunning || got.Verdict != kpi.OutcomeRunning {
		t.Errorf("after a failed Update: %+v, want status and verdict running", got)
	}

	// The daemon writes a partial report, then the final one.
	if err := newReport(id, report.StatusRunning, kpi.OutcomeRunning, t0).Write(dir, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(id); err != nil {
		t.Fatal(err)
	}
	if got := s.List()[0]; got.Status != report.StatusRunning || got.Verdict != kpi.OutcomeRunning || got.Profile != "smoke" || !got.StartedAt.Equal(t0) {
		t.Errorf("after the partial report: %+v, want running (verdict too), profile smoke, started %s", got, t0)
	}
	if sum, rep, err := s.Get(id); err != nil || sum.Verdict != kpi.OutcomeRunning || rep.Verdict != kpi.OutcomeRunning {
		t.Errorf("Get of a live run: %+v, %v, want verdict running in the summary and the report", sum, err)
	}
	// A partial report written by an earlier version said aborted while
	// running: the summary still reads running.
	if err := newReport(id, report.StatusRunning, kpi.OutcomeAborted, t0).Write(dir, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Update(id); err != nil {
		t.Fatal(err)
	}
	if got := s.List()[0]; got.Verdict != kpi.OutcomeRunning {
		t.Errorf("a running run whose report says aborted: verdict %q, want running", got.Verdict)
	}
	if err := newReport(id, report.StatusComplete, "pass", t0).Write(dir, nil); err != nil {
		t.Fatal(err)
	}
	// Get reads the disk before Update is called.
	sum, rep, err := s.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != report.StatusComplete || rep.Status != report.StatusComplete || len(rep.Phases) != 1 {
		t.Errorf("Get = %+v with report status %q and %d phases, want complete, complete, 1", sum, rep.Status, len(rep.Phases))
	}
	if err := s.Update(id); err != nil {
		t.Fatal(err)
	}
	want := Summary{ID: id, Profile: "smoke", Status: report.StatusComplete, Verdict: "pass", StartedAt: t0, FinishedAt: t0.Add(time.Hour), Dir: dir}
	if got := s.List(); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("List = %+v, want [%+v]", got, want)
	}

	// A run directory that appears later is picked up by Update.
	writeRun(t, data, "late", newReport("late", report.StatusComplete, "fail", t0.Add(time.Hour)))
	if err := s.Update("late"); err != nil {
		t.Fatal(err)
	}
	if got := statuses(s.List()); !slices.Equal(got, []string{"late=complete", id + "=complete"}) {
		t.Errorf("List = %v, want late then %s", got, id)
	}
	// A run removed behind the store's back drops out.
	if err := os.RemoveAll(filepath.Join(data, RunsDir, "late")); err != nil {
		t.Fatal(err)
	}
	if err := s.Update("late"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Update of a removed run: err %v, want ErrNotFound", err)
	}
	if got := len(s.List()); got != 1 {
		t.Errorf("List has %d runs, want 1", got)
	}
}

func TestSummaryJSON(t *testing.T) {
	sum := Summary{ID: "r", Profile: "p", Status: "complete", Verdict: "pass", StartedAt: t0, Baseline: true, Dir: "/d"}
	got := mustJSON(t, sum)
	want := `{"id":"r","profile":"p","status":"complete","verdict":"pass","started_at":"2025-06-01T10:00:00Z","baseline":true,"dir":"/d"}`
	if got != want {
		t.Errorf("Summary JSON:\n got %s\nwant %s", got, want)
	}
}

func TestBaseline(t *testing.T) {
	data := t.TempDir()
	writeRun(t, data, "r1", newReport("r1", report.StatusComplete, "pass", t0))
	writeRun(t, data, "r2", newReport("r2", report.StatusComplete, "pass", t0.Add(time.Hour)))
	s := mustOpen(t, data)
	if err := s.SetBaseline("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetBaseline(nope): err %v, want ErrNotFound", err)
	}
	if err := s.SetBaseline("r1"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(data, BaselineFile))
	if err != nil || string(b) != "r1\n" {
		t.Errorf("baseline file = %q (err %v), want %q", b, err, "r1\n")
	}

	check := func(s *Store, want string) {
		t.Helper()
		if got := s.Baseline(); got != want {
			t.Errorf("Baseline = %q, want %q", got, want)
		}
		for _, sum := range s.List() {
			if sum.Baseline != (sum.ID == want) {
				t.Errorf("run %s: Baseline = %v, want %v", sum.ID, sum.Baseline, sum.ID == want)
			}
		}
		if want != "" {
			if sum, _, err := s.Get(want); err != nil || !sum.Baseline {
				t.Errorf("Get(%s): Baseline %v err %v, want true", want, sum.Baseline, err)
			}
		}
	}
	check(s, "r1")
	s = reopen(t, s, data)
	check(s, "r1")
	if err := s.SetBaseline("r2"); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, data)
	check(s, "r2")
	if err := s.SetBaseline(""); err != nil {
		t.Fatal(err)
	}
	check(s, "")
	check(reopen(t, s, data), "")
}

func TestPrune(t *testing.T) {
	data := t.TempDir()
	now := t0.Add(30 * 24 * time.Hour)
	for i := range 6 {
		id := fmt.Sprintf("r%d", i+1)
		writeRun(t, data, id, newReport(id, report.StatusComplete, "pass", t0.Add(time.Duration(i)*24*time.Hour)))
		writeFile(t, data, id, "cpu.pb.gz", []byte("profile"))
	}
	s := mustOpen(t, data)
	if err := s.SetBaseline("r1"); err != nil {
		t.Fatal(err)
	}
	running, err := s.NewRun("r7", "smoke")
	if err != nil {
		t.Fatal(err)
	}
	// r7 was created now, in wall time, so it is the newest.

	if _, err := s.Prune(-1, 0, now); err == nil {
		t.Error("Prune(-1, 0): no error, want one for a negative limit")
	}
	removed, err := s.Prune(3, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"r4", "r3", "r2"}; !slices.Equal(removed, want) {
		t.Errorf("Prune(3, 0) removed %v, want %v", removed, want)
	}
	for i := range 7 {
		id := fmt.Sprintf("r%d", i+1)
		_, err := os.Stat(filepath.Join(data, RunsDir, id))
		gone := errors.Is(err, os.ErrNotExist)
		if wantGone := slices.Contains(removed, id); gone != wantGone {
			t.Errorf("run %s: directory gone %v (stat %v), want %v", id, gone, err, wantGone)
		}
	}
	if got, want := statuses(s.List()), []string{"r7=running", "r6=complete", "r5=complete", "r1=complete"}; !slices.Equal(got, want) {
		t.Errorf("List after Prune = %v, want %v", got, want)
	}
	if _, _, err := s.Get("r3"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(r3) after Prune: err %v, want ErrNotFound", err)
	}

	// Age, judged two days from now so that every run, r7 included, is
	// older than a day: only the baseline and the running run stay.
	removed, err = s.Prune(0, 24*time.Hour, time.Now().Add(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"r6", "r5"}; !slices.Equal(removed, want) {
		t.Errorf("Prune(0, 24h) removed %v, want %v", removed, want)
	}
	if _, err := os.Stat(running); err != nil {
		t.Errorf("the running run's directory: %v, want kept", err)
	}
	if got, n := s.Removed(), s.Len(); got != 5 || n != 2 {
		t.Errorf("after two prunes Removed() = %d, Len() = %d; want 5 removed, 2 kept", got, n)
	}
	// r7 has no report.json: after reopening it is unreadable, not deleted.
	if got, want := statuses(reopen(t, s, data).List()), []string{"r7=unreadable", "r1=complete"}; !slices.Equal(got, want) {
		t.Errorf("List after reopening = %v, want %v", got, want)
	}
}

func TestConcurrent(t *testing.T) {
	data := t.TempDir()
	s := mustOpen(t, data)
	const runs = 4
	dirs := make([]string, runs)
	for i := range dirs {
		var err error
		if dirs[i], err = s.NewRun(fmt.Sprintf("r%d", i), "smoke"); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, runs*20)
	for i, dir := range dirs {
		id := fmt.Sprintf("r%d", i)
		wg.Go(func() {
			for j := range 10 {
				status := report.StatusRunning
				if j == 9 {
					status = report.StatusComplete
				}
				if err := newReport(id, status, "pass", t0.Add(time.Duration(i)*time.Hour)).Write(dir, nil); err != nil {
					errs <- err
					return
				}
				if err := s.Update(id); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Go(func() {
			for range 20 {
				for _, sum := range s.List() {
					if sum.ID == "" || sum.Dir == "" {
						errs <- fmt.Errorf("List returned an empty summary %+v", sum)
						return
					}
				}
				if _, _, err := s.Get(id); err != nil && !errors.Is(err, ErrNoReport) {
					errs <- err
					return
				}
				_ = s.Baseline()
			}
		})
	}
	wg.Go(func() {
		for range 5 {
			if err := s.SetBaseline("r0"); err != nil {
				errs <- err
				return
			}
			if _, err := s.Prune(1, 0, t0); err != nil {
				errs <- err
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, sum := range s.List() {
		if sum.Status == report.StatusRunning {
			continue
		}
		if sum.Status != report.StatusComplete {
			t.Errorf("run %s: status %q, want complete or running", sum.ID, sum.Status)
		}
	}
}

// TestUnreadableReport: a run whose report.json is truncated or garbage,
// at Open or later, is listed and got with status unreadable and the
// decode error as its reason, never dropped nor an error for List. A new
// run without its first report still reads running.
func TestUnreadableReport(t *testing.T) {
	data := t.TempDir()
	writeFile(t, data, "truncated", report.JSONFile, []byte(`{"run":"truncated","status":"comp`))
	laterDir := writeRun(t, data, "later", newReport("later", report.StatusComplete, "pass", t0))
	s := mustOpen(t, data)
	if _, err := s.NewRun("fresh", "smoke"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(laterDir, report.JSONFile), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"truncated", "later"} {
		sum, rep, err := s.Get(id)
		if !errors.Is(err, ErrNoReport) || rep != nil {
			t.Errorf("Get(%s): report %v err %v, want nil and ErrNoReport", id, rep, err)
		}
		if sum.ID != id || sum.Status != StatusUnreadable || sum.Verdict != "" || !strings.Contains(sum.Reason, report.JSONFile) {
			t.Errorf("Get(%s) = %+v, want status %q, no verdict, a reason naming %s", id, sum, StatusUnreadable, report.JSONFile)
		}
	}
	if err := s.Update("later"); !errors.Is(err, ErrNoReport) {
		t.Errorf("Update(later): err %v, want ErrNoReport", err)
	}
	got := map[string]Summary{}
	for _, sum := range s.List() {
		got[sum.ID] = sum
	}
	for _, id := range []string{"truncated", "later"} {
		if got[id].Status != StatusUnreadable || got[id].Reason == "" {
			t.Errorf("List has %s as %+v, want unreadable with a reason", id, got[id])
		}
	}
	if sum, _, _ := s.Get("fresh"); sum.Status != report.StatusRunning || sum.Reason != "" {
		t.Errorf("a new run before its first report: %+v, want running without a reason", sum)
	}
}

// TestOpenLocksDataDir: a second Open of a data directory in use fails
// before it touches the history, naming the holder's pid and the lock
// file; the run the holder has in progress stays running on disk. Closing
// the holder releases the lock.
func TestOpenLocksDataDir(t *testing.T) {
	data := t.TempDir()
	s := mustOpen(t, data)
	lock := filepath.Join(data, LockFile)
	if b, err := os.ReadFile(lock); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file holds %q (err %v), want this process's pid %d", b, err, os.Getpid())
	}
	dir, err := s.NewRun("live", "smoke")
	if err != nil {
		t.Fatal(err)
	}
	if err := newReport("live", report.StatusRunning, kpi.OutcomeRunning, t0).Write(dir, nil); err != nil {
		t.Fatal(err)
	}

	_, err = Open(data, Options{})
	le, ok := errors.AsType[*LockedError](err)
	if !ok || le.PID != os.Getpid() || le.Lock != lock {
		t.Fatalf("a second Open: err %v, want a *LockedError naming pid %d and %s", err, os.Getpid(), lock)
	}
	want := fmt.Sprintf("data_dir %s is in use by pid %d (lock %s); one daemon per data_dir", data, os.Getpid(), lock)
	if err.Error() != want {
		t.Errorf("a second Open: %q, want %q", err, want)
	}
	if rep, err := report.Read(filepath.Join(dir, report.JSONFile)); err != nil || rep.Status != report.StatusRunning {
		t.Errorf("the holder's run after a second Open: %v, want still running on disk", err)
	}

	if got := reopen(t, s, data).List(); len(got) != 1 || got[0].Status != report.StatusAborted {
		t.Errorf("Open after the holder closed: %+v, want the interrupted run aborted", got)
	}
}

// failWrites returns a WriteFile that fails with ENOSPC, as on a full disk,
// for the paths fail picks, and writes the others.
func failWrites(fail func(path string) bool) func(string, []byte, fs.FileMode) error {
	return func(path string, data []byte, perm fs.FileMode) error {
		if fail(path) {
			return &fs.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
		}
		return fsutil.WriteFile(path, data, perm)
	}
}

// TestOpenReadOnly: a data directory that takes no writes (a full disk)
// still opens, read-only and saying why: the runs are listed, a run the
// previous daemon left running reads aborted without its report being
// rewritten, and NewRun, SetBaseline and Prune change nothing. A disk that
// fills up just as an interrupted run is rewritten does the same.
func TestOpenReadOnly(t *testing.T) {
	for name, fail := range map[string]func(string) bool{
		"every write fails": func(string) bool { return true },
		"the rewrite fails": func(path string) bool { return filepath.Base(path) == report.JSONFile },
	} {
		t.Run(name, func(t *testing.T) {
			data := t.TempDir()
			writeRun(t, data, "r1", newReport("r1", report.StatusComplete, "pass", t0))
			runningDir := writeRun(t, data, "r2", newReport("r2", report.StatusRunning, kpi.OutcomeRunning, t0.Add(time.Hour)))
			before, err := os.ReadFile(filepath.Join(runningDir, report.JSONFile))
			if err != nil {
				t.Fatal(err)
			}
			s, err := Open(data, Options{WriteFile: failWrites(fail)})
			if err != nil {
				t.Fatalf("Open of a full disk: %v, want a read-only store", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			ro := s.ReadOnly()
			if !errors.Is(ro, syscall.ENOSPC) {
				t.Errorf("ReadOnly = %v, want ENOSPC", ro)
			}
			if got := statuses(s.List()); !slices.Equal(got, []string{"r2=aborted", "r1=complete"}) {
				t.Errorf("List = %v, want r2 aborted, r1 complete", got)
			}
			if err := s.Update("r2"); err != nil {
				t.Fatal(err)
			}
			if sum, _, err := s.Get("r2"); err != nil || sum.Status != report.StatusAborted || sum.Verdict != kpi.OutcomeAborted || sum.Reason != StoppedMessage {
				t.Errorf("Get(r2) = %+v, %v, want aborted in memory, reason %q", sum, err, StoppedMessage)
			}
			if after, err := os.ReadFile(filepath.Join(runningDir, report.JSONFile)); err != nil || !bytes.Equal(after, before) {
				t.Errorf("the interrupted run's report.json changed on a read-only store (err %v)", err)
			}
			if _, err := s.NewRun("r3", "smoke"); !errors.Is(err, ErrReadOnly) {
				t.Errorf("NewRun: err %v, want ErrReadOnly", err)
			}
			if _, err := os.Stat(filepath.Join(data, RunsDir, "r3")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("NewRun on a read-only store created its directory (stat %v)", err)
			}
			if err := s.SetBaseline("r1"); !errors.Is(err, ErrReadOnly) {
				t.Errorf("SetBaseline: err %v, want ErrReadOnly", err)
			}
			if removed, err := s.Prune(1, 0, t0); err != nil || len(removed) != 0 || len(s.List()) != 2 {
				t.Errorf("Prune on a read-only store removed %v (err %v), want nothing", removed, err)
			}
			if _, err := os.Stat(filepath.Join(data, ".write-check")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the write check was left behind (stat %v)", err)
			}
		})
	}
}

// TestFinish: a run whose report still says running when it ends is
// aborted with the cause as its reason, in report.json when the disk takes
// it and in memory otherwise; a run without a report keeps its profile and
// start; a run that wrote its outcome keeps it.
func TestFinish(t *testing.T) {
	data := t.TempDir()
	var full atomic.Bool
	s, err := Open(data, Options{WriteFile: failWrites(func(string) bool { return full.Load() })})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Finish("nope", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("Finish(nope): err %v, want ErrNotFound", err)
	}
	newRun := func(id, status string) string {
		t.Helper()
		dir, err := s.NewRun(id, "smoke")
		if err != nil {
			t.Fatal(err)
		}
		if status != "" {
			if err := newReport(id, status, "pass", t0).Write(dir, nil); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	boom := errors.New("the driver failed")

	// Written: the report says so.
	dir := newRun("recorded", report.StatusRunning)
	sum, err := s.Finish("recorded", boom)
	rep, rerr := report.Read(filepath.Join(dir, report.JSONFile))
	if err != nil || rerr != nil || sum.Status != report.StatusAborted || sum.Reason != boom.Error() || rep.Status != report.StatusAborted || rep.Error != boom.Error() || rep.FinishedAt.IsZero() {
		t.Errorf("Finish of a running report on a writable disk: %+v (%v), report %+v (%v), want aborted on disk with the cause and a finish time", sum, err, rep, rerr)
	}

	// Complete: left alone.
	newRun("done", report.StatusComplete)
	if sum, err := s.Finish("done", boom); err != nil || sum.Status != report.StatusComplete || sum.Verdict != "pass" {
		t.Errorf("Finish of a complete run: %+v, %v, want complete pass", sum, err)
	}

	// The disk is full: in memory only, and it stays so.
	full.Store(true)
	dir = newRun("stuck", report.StatusRunning)
	newRun("unwritten", "")
	for id, cause := range map[string]error{"stuck": boom, "unwritten": nil} {
		sum, err := s.Finish(id, cause)
		want := NoOutcomeMessage
		if cause != nil {
			want = cause.Error()
		}
		if err != nil || sum.Status != report.StatusAborted || sum.Verdict != kpi.OutcomeAborted || sum.Reason != want || sum.Profile != "smoke" || sum.StartedAt.IsZero() || sum.FinishedAt.IsZero() {
			t.Errorf("Finish(%s) on a full disk: %+v, %v, want aborted with reason %q, profile and times kept", id, sum, err, want)
		}
		if err := s.Update(id); err != nil && !errors.Is(err, ErrNoReport) {
			t.Fatal(err)
		}
		if got, _, _ := s.Get(id); got.Status != report.StatusAborted || got.Reason != want {
			t.Errorf("Get(%s) after Finish on a full disk: %+v, want aborted", id, got)
		}
	}
	if rep, err := report.Read(filepath.Join(dir, report.JSONFile)); err != nil || rep.Status != report.StatusRunning {
		t.Errorf("report.json on a full disk: %v, want the last one written (running)", err)
	}
	if got := statuses(s.List()); !slices.Contains(got, "stuck=aborted") || !slices.Contains(got, "unwritten=aborted") {
		t.Errorf("List = %v, want stuck and unwritten aborted", got)
	}
}
