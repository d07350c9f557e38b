// Package history keeps soakd's run history on disk so that it survives
// restarts of the daemon, and applies the retention rules to it.
//
// Layout under a data directory D:
//
//	D/runs/<run id>/   one directory per run, written by the daemon:
//	                   report.json, report.md, report.html, junit.xml,
//	                   samples.json, *.pb.gz (pprof captures) ...
//	D/baseline         a text file holding the id of the run marked as the
//	                   baseline for `soakd compare` (written atomically)
//	D/.lock            locked (flock) by the Store that owns D; holds the
//	                   owner's process id
//
// A Store indexes the runs in memory by their summary only (a few hundred
// bytes each); full reports are read from disk when asked for, so the
// daemon's memory does not grow with the size of its results. Every file the
// store writes, but the lock file, goes through fsutil.WriteFile
// (temporary file, fsync, rename; Options.WriteFile replaces it in tests), so
// a crash never leaves a half-written file.
//
// A data directory that takes no writes (a full disk, a read-only file
// system) does not stop Open: the Store is then read-only (ReadOnly says
// why), lists and serves the runs it can read, and refuses NewRun and
// SetBaseline with ErrReadOnly.
//
// One daemon owns a data directory at a time: Open takes D/.lock's
// exclusive lock before it reads anything, fails when another process holds
// it, and then treats every run whose report says "running" as interrupted
// by a previous daemon's death.
package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/soakd/soakd/internal/fsutil"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
)

// Names inside the data directory.
const (
	// RunsDir is the directory, under the data directory, holding one
	// directory per run.
	RunsDir = "runs"
	// BaselineFile is the file, under the data directory, holding the id of
	// the baseline run followed by a newline.
	BaselineFile = "baseline"
	// LockFile is the file, under the data directory, that the Store owning
	// the directory keeps locked; it holds the owner's process id.
	LockFile = ".lock"
)

// StatusUnreadable is the status of a run directory whose report.json is
// missing, truncated or cannot be decoded; the summary's Reason says why.
// Such runs are listed, never deleted by Open, and never make Open or List
// fail: a human decides what they are.
const StatusUnreadable = "unreadable"

// StoppedMessage is the error Open records in the report of a run that was
// still running when the previous daemon stopped.
const StoppedMessage = "the daemon stopped while this run was in progress"

// MaxIDLength is the longest accepted run id, in bytes.
const MaxIDLength = 128

// Error is the type of this package's sentinel errors; they are constants
// so that the package holds no globals. Test for them with errors.Is.
type Error string

// Error returns the message.
func (e Error) Error() string { return string(e) }

// Sentinel errors, wrapped by the Store's methods.
const (
	// ErrNotFound means no run has that id.
	ErrNotFound = Error("no such run")
	// ErrExists means NewRun was given the id of an existing run.
	ErrExists = Error("the run already exists")
	// ErrInvalidID means a run id is empty, too long, starts with a dot or
	// holds a character other than ASCII letters, digits, '.', '_' and '-'
	// (so it can never name a path outside D/runs, nor a hidden file).
	ErrInvalidID = Error("invalid run id")
	// ErrNoReport means the run exists but its report.json is missing or
	// cannot be decoded (the run's status is then StatusUnreadable, or running
	// before the daemon's first write).
	ErrNoReport = Error("the run has no readable report")
	// ErrReadOnly means the store cannot write its data directory (see
	// Store.ReadOnly says why), so no run can be created nor baseline set.
	ErrReadOnly = Error("the history is read-only")
)

// NoOutcomeMessage is the reason Finish records for a run that ended
// without an error yet left a report that still says running.
const NoOutcomeMessage = "the run ended without recording its outcome"

// Options configure Open.
type Options struct {
	// WriteFile writes a file atomically, with fsutil.WriteFile's
	// contract; nil means fsutil.WriteFile. Every file the Store
	// writes goes through it, and so does Open's check that the data
	// directory takes writes: tests make it fail with syscall.ENOSPC to
	// simulate a full disk.
	WriteFile func(path string, data []byte, perm fs.FileMode) error
}

// Summary is what the index holds about one run: enough to list runs and
// apply retention without reading their reports.
type Summary struct {
	// ID is the name of the run's directory under D/runs.
	ID      string `json:"id"`
	Profile string `json:"profile"`
	// Status is running, complete, aborted (see package report) or
	// unreadable (no readable report.json).
	Status string `json:"status"`
	// Verdict is pass, fail or inconclusive once complete, running while the run is in
	// progress, aborted for a run that could not finish (or was in progress
	// when a previous daemon died); empty when unreadable.
	Verdict kpi.Outcome `json:"verdict"`
	// StartedAt is the report's start time (UTC). For a run created by
	// NewRun before its first report it is the creation time; for an
	// unreadable run, the directory's modification time.
	StartedAt time.Time `json:"started_at"`
	// FinishedAt is the report's finish time; zero while running and for
	// runs interrupted by the daemon's death.
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Baseline is true for the run marked as baseline for `soakd compare`.
	Baseline bool `json:"baseline"`
	// Dir is the run's directory (absolute).
	Dir string `json:"dir"`
	// Reasons name every gated KPI and check that did not pass, with its
	// numbers (report.Report.Reasons); empty for a pass.
	Reasons []string `json:"reasons,omitempty"`
	// Reason says why an aborted run stopped (the report's error) or why
	// an unreadable run's report.json cannot be read.
	Reason string `json:"reason,omitempty"`
}

// LockedError is Open's error when another process, or another open
// Store, owns the data directory.
type LockedError struct {
	// Dir is the data directory (absolute).
	Dir string
	// Lock is its lock file.
	Lock string
	// PID is the owner's process id, 0 when the lock file does not say.
	PID int
}

// Error names the directory, the owner and the lock file.
func (e *LockedError) Error() string {
	owner := "another process"
	if e.PID > 0 {
		owner = "pid " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("data_dir %s is in use by %s (lock %s); one daemon per data_dir", e.Dir, owner, e.Lock)
}

// Store is the run history of one data directory. It is safe for
// concurrent use.
type Store struct {
	dir   string   // the data directory, absolute
	runs  string   // dir/RunsDir
	lock  *os.File // dir/LockFile, locked until Close; nil when it could not be opened
	write func(path string, data []byte, perm fs.FileMode) error
	// readOnly says why the store does not write, nil when it does; set
	// by Open, never changed afterwards.
	readOnly error

	mu       sync.RWMutex
	index    map[string]Summary // by id; Baseline is filled in on the way out
	baseline string
	// ended holds the runs recorded as aborted in memory only, because
	// their report.json could not be rewritten (see Finish): they outrank
	// a report that still says running or cannot be read.
	ended map[string]Summary
	// removed counts the runs Prune has removed since Open.
	removed int64
}

// ValidateID reports whether id may name a run: 1 to MaxIDLength ASCII
// letters, digits, '.', '_' or '-', not starting with '.'. The error wraps
// ErrInvalidID.
func ValidateID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrInvalidID)
	}
	if len(id) > MaxIDLength {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrInvalidID, len(id), MaxIDLength)
	}
	if id[0] == '.' {
		return fmt.Errorf("%w %q: starts with a dot", ErrInvalidID, id)
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("%w %q: only letters, digits, '.', '_' and '-' are allowed", ErrInvalidID, id)
		}
	}
	return nil
}

// Open loads the history of data directory dir, creating dir and dir/runs
// if needed. First it takes the exclusive lock on dir/.lock (see lockDir),
// which the Store holds until Close or the process's death: when another
// process holds it, Open fails with a *LockedError and reads nothing.
//
// It then checks that dir takes writes and reads every
// dir/runs/*/report.json. A run whose status is "running" was interrupted
// by the daemon's death, so Open marks it aborted (status and verdict
// "aborted", error StoppedMessage) and rewrites its report.json atomically,
// keeping every other field, including fields this version does not know. A
// run directory without a readable report.json is listed with
// StatusUnreadable. Hidden entries and plain files in dir/runs are ignored.
//
// A directory that takes no writes (its creation, the lock file, the write
// check or an interrupted run's rewrite fails) makes the Store read-only
// rather than failing Open: interrupted runs are then aborted in memory
// only. Open fails when the runs cannot be listed, or when the baseline
// file cannot be read or does not hold a valid run id.
func Open(dir string, opts Options) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot resolve the data directory %s: %w", dir, err)
	}
	s := &Store{dir: abs, runs: filepath.Join(abs, RunsDir), write: opts.WriteFile, index: map[string]Summary{}, ended: map[string]Summary{}}
	if s.write == nil {
		s.write = fsutil.WriteFile
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		s.readOnly = fmt.Errorf("cannot create the data directory: %w", err)
	}
	s.lock, err = lockDir(abs)
	if _, locked := errors.AsType[*LockedError](err); locked {
		return nil, err
	}
	if err != nil && s.readOnly == nil {
		// Without the lock the store must not write.
		s.readOnly = err
	}
	if s.readOnly == nil {
		s.readOnly = s.checkWritable()
	}
	if err := s.load(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// checkWritable writes and removes a small file in the data directory
// through the store's writer, so that a full or read-only disk shows at
// Open rather than in the middle of a run.
func (s *Store) checkWritable() error {
	path := filepath.Join(s.dir, ".write-check")
	if err := s.write(path, []byte("soakd\n"), 0o644); err != nil {
		return fmt.Errorf("cannot write in %s: %w", s.dir, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("cannot write in %s: %w", s.dir, err)
	}
	return nil
}

// ReadOnly returns why the store does not write its data directory (the
// error of the write that failed), or nil when it does. It is decided
// once, by Open: a store stays read-only until the daemon restarts.
func (s *Store) ReadOnly() error { return s.readOnly }

// lockDir takes the exclusive lock (flock) on dir's LockFile, creating it,
// and writes this process's id into it for a second daemon's error message.
// The lock belongs to the returned open file: closing it, or the process's
// death (kill -9 included), releases it. The file is never removed nor
// replaced, so every daemon locks the same one; on a read-only file system
// an existing one is locked all the same. When another process (or another
// open Store) holds the lock the error is a *LockedError.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		var rerr error
		if f, rerr = os.Open(path); rerr != nil {
			return nil, fmt.Errorf("cannot open the lock file %s: %w", path, err)
		}
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			le := &LockedError{Dir: dir, Lock: path}
			if b, rerr := os.ReadFile(path); rerr == nil {
				le.PID, _ = strconv.Atoi(strings.TrimSpace(string(b))) // 0 when not written yet
			}
			return nil, le
		}
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	// The pid only serves a second daemon's message: a full disk or a file
	// opened read-only may refuse it, never the lock.
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// load reads the baseline and the runs into the index, marking interrupted
// runs aborted; Open calls it with the lock held. A failed rewrite of an
// interrupted run makes the store read-only.
func (s *Store) load() error {
	if s.readOnly == nil {
		if err := os.MkdirAll(s.runs, 0o755); err != nil {
			s.readOnly = fmt.Errorf("cannot create the runs directory: %w", err)
		}
	}
	var err error
	if s.baseline, err = readBaseline(filepath.Join(s.dir, BaselineFile)); err != nil {
		return err
	}
	entries, err := os.ReadDir(s.runs)
	if err != nil && !(errors.Is(err, fs.ErrNotExist) && s.readOnly != nil) {
		return fmt.Errorf("cannot list the runs: %w", err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !e.IsDir() {
			continue
		}
		sum, rep, err := s.scan(e.Name())
		if err == nil && rep.Status == report.StatusRunning {
			if sum, err = s.abort(sum, StoppedMessage, time.Time{}); err != nil {
				s.readOnly = err
			}
		}
		s.index[sum.ID] = sum
	}
	return nil
}

// abort records run sum as aborted for reason, finished at finished (zero:
// unknown): in its report.json when the store writes, else, or when the
// rewrite fails (the error says why), in memory only, in s.ended. It
// returns the run's summary; the caller holds mu or has not shared the
// store yet.
func (s *Store) abort(sum Summary, reason string, finished time.Time) (Summary, error) {
	var err error
	if s.readOnly == nil {
		var rep *report.Report
		if rep, err = s.markAborted(filepath.Join(sum.Dir, report.JSONFile), reason, finished); err == nil {
			return summarize(sum.ID, sum.Dir, rep), nil
		}
		err = fmt.Errorf("cannot mark run %s aborted: %w", sum.ID, err)
	}
	sum.Status, sum.Verdict, sum.Reasons, sum.Reason, sum.FinishedAt = report.StatusAborted, kpi.OutcomeAborted, nil, reason, finished
	s.ended[sum.ID] = sum
	return sum, err
}

// Finish records that run id has ended, whatever its outcome; the daemon
// calls it once the run's suite has returned, with the suite's error. It
// reads the run's report like Update. When the report still says running,
// or cannot be read, the run's last writes failed (a full disk, say), so
// Finish records it as aborted now, with cause as its reason
// (NoOutcomeMessage when cause is nil): in report.json when the disk takes
// it, else in memory, where it outranks the report on disk for the store's
// lifetime. It returns the run's summary; the error wraps ErrNotFound for
// a run the store does not know.
func (s *Store) Finish(id string, cause error) (Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.index[id]
	if !ok {
		return Summary{}, fmt.Errorf("cannot finish run %q: %w", id, ErrNotFound)
	}
	sum, rep, err := s.scan(id)
	if err == nil && rep.Status != report.StatusRunning {
		s.index[id] = sum
		return sum, nil
	}
	if err != nil {
		// No readable report: keep what NewRun knew.
		sum.Profile, sum.StartedAt = old.Profile, old.StartedAt
	}
	reason := NoOutcomeMessage
	if cause != nil {
		reason = cause.Error()
	}
	sum, _ = s.abort(sum, reason, time.Now().UTC()) // not on disk: s.ended keeps it
	s.index[id] = sum
	return sum, nil
}

// endedOver returns the in-memory end of run id (see Finish) when it
// outranks sum, read from disk: while the disk still says running or
// cannot be read. The caller holds mu.
func (s *Store) endedOver(id string, sum Summary) (Summary, bool) {
	e, ok := s.ended[id]
	if !ok || sum.Status != report.StatusRunning && sum.Status != StatusUnreadable {
		return Summary{}, false
	}
	return e, true
}

// Close releases the data directory's lock; the Store must not be used
// afterwards.
func (s *Store) Close() error {
	if s.lock == nil {
		return nil
	}
	if err := s.lock.Close(); err != nil {
		return fmt.Errorf("cannot release the lock on %s: %w", s.dir, err)
	}
	return nil
}

// readBaseline reads the baseline file; a missing file means no baseline.
func readBaseline(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("cannot read the baseline: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", nil
	}
	if err := ValidateID(id); err != nil {
		return "", fmt.Errorf("cannot use the baseline in %s: %w", path, err)
	}
	return id, nil
}

// readReport reads run directory dir's report.json, a regular file and
// never through a symbolic link (fsutil.ReadNoFollow): a link planted in
// its place would have GET /v1/runs/{id} serve whatever JSON it points at.
func readReport(dir string) (*report.Report, error) {
	rep, _, err := readReportJSON(dir)
	return rep, err
}

// readReportJSON is readReport with the bytes read.
func readReportJSON(dir string) (*report.Report, []byte, error) {
	path := filepath.Join(dir, report.JSONFile)
	b, err := fsutil.ReadNoFollow(path)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read report: %w", err)
	}
	rep, err := report.Unmarshal(b, path)
	if err != nil {
		return nil, nil, err
	}
	return rep, b, nil
}

// scan reads one run directory. With an unreadable report it returns an
// unreadable summary (dated by the directory's modification time, the
// error as its reason) and the error.
func (s *Store) scan(id string) (Summary, *report.Report, error) {
	dir := filepath.Join(s.runs, id)
	rep, err := readReport(dir)
	if err != nil {
		sum := Summary{ID: id, Status: StatusUnreadable, Dir: dir, Reason: err.Error()}
		if fi, serr := os.Stat(dir); serr == nil {
			sum.StartedAt = fi.ModTime().UTC()
		}
		return sum, nil, fmt.Errorf("%w: %w", ErrNoReport, err)
	}
	return summarize(id, dir, rep), rep, nil
}

// summarize builds a run's index entry from its report. A run whose report
// says running has the verdict running, whatever the report says (reports
// of earlier versions said aborted while running).
func summarize(id, dir string, rep *report.Report) Summary {
	sum := Summary{
		ID: id, Profile: rep.Profile, Status: rep.Status, Verdict: rep.Verdict,
		StartedAt: rep.StartedAt.UTC(), FinishedAt: rep.FinishedAt.UTC(), Dir: dir, Reasons: rep.Reasons(), Reason: rep.Error,
	}
	if sum.Status == report.StatusRunning {
		sum.Verdict = kpi.OutcomeRunning
	}
	return sum
}

// markAborted rewrites the report.json at path, through the store's
// writer, with status and verdict aborted, error reason and, unless zero,
// finished_at finished. It edits the
// JSON object's members rather than re-encoding a report.Report, so fields
// unknown to this version survive; it returns the report as rewritten.
func (s *Store) markAborted(path, reason string, finished time.Time) (*report.Report, error) {
	b, err := fsutil.ReadNoFollow(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, fmt.Errorf("cannot decode %s: %w", path, err)
	}
	members := map[string]any{"status": report.StatusAborted, "verdict": kpi.OutcomeAborted, "error": reason}
	if !finished.IsZero() {
		members["finished_at"] = finished
	}
	for k, v := range members {
		if obj[k], err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("cannot encode %s: %w", k, err)
		}
	}
	out, err := json.MarshalIndent(obj, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cannot encode %s: %w", path, err)
	}
	var rep report.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		return nil, fmt.Errorf("cannot decode the rewritten %s: %w", path, err)
	}
	perm := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	if err := s.write(path, append(out, '\n'), perm); err != nil {
		return nil, err
	}
	return &rep, nil
}

// NewRun creates the directory of a new run of profile, D/runs/<id>, and
// returns its path for the daemon to write into. The run is indexed as
// running (status and verdict), started now, until Update reads its first
// report; retention never removes it while it says running. The error
// wraps ErrInvalidID for a bad id, ErrReadOnly when the store does not
// write, and ErrExists when the run (or a directory of that name) already
// exists.
func (s *Store) NewRun(id, profile string) (dir string, err error) {
	if err := ValidateID(id); err != nil {
		return "", err
	}
	if s.readOnly != nil {
		return "", fmt.Errorf("cannot create run %s: %w: %w", id, ErrReadOnly, s.readOnly)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.index[id]; ok {
		return "", fmt.Errorf("cannot create run %s: %w", id, ErrExists)
	}
	dir = filepath.Join(s.runs, id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("cannot create run %s: %w", id, ErrExists)
		}
		return "", fmt.Errorf("cannot create run %s: %w", id, err)
	}
	s.index[id] = Summary{ID: id, Profile: profile, Status: report.StatusRunning, Verdict: kpi.OutcomeRunning, StartedAt: time.Now().UTC(), Dir: dir}
	return dir, nil
}

// Update re-reads run id's report.json into the index; the daemon calls it
// after each write of the report. A run directory that appeared on disk
// since Open is added. When the report cannot be read the error wraps
// ErrNoReport and the run is indexed as unreadable, unless the index says
// it is running (a run not yet written stays running); a run whose
// directory has gone is dropped from the index and the error wraps
// ErrNotFound. A run Finish aborted in memory stays so while its report
// says running or cannot be read.
func (s *Store) Update(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, known := s.index[id]
	if !known {
		if ValidateID(id) != nil {
			return fmt.Errorf("cannot update run %q: %w", id, ErrNotFound)
		}
	}
	// Lstat: a symbolic link in runs/ is no run (Open's listing skips
	// them too), so no run's files come from elsewhere.
	dir := filepath.Join(s.runs, id)
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		delete(s.index, id)
		delete(s.ended, id)
		return fmt.Errorf("cannot update run %s: %w", id, ErrNotFound)
	}
	sum, _, err := s.scan(id)
	if e, ok := s.endedOver(id, sum); ok {
		s.index[id] = e
		return nil
	}
	if err != nil {
		if !known || old.Status != report.StatusRunning {
			s.index[id] = sum
		}
		return fmt.Errorf("cannot update run %s: %w", id, err)
	}
	if known && old.Status == report.StatusRunning && sum.StartedAt.IsZero() {
		sum.StartedAt = old.StartedAt
	}
	s.index[id] = sum
	return nil
}

// List returns every run's summary, newest first (by start time, then by id
// descending, so timestamp ids break ties in time order).
func (s *Store) List() []Summary {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.listLocked()
}

// listLocked returns the sorted summaries with Baseline set; the caller
// holds mu.
func (s *Store) listLocked() []Summary {
	out := make([]Summary, 0, len(s.index))
	for _, sum := range s.index {
		sum.Baseline = sum.ID == s.baseline
		out = append(out, sum)
	}
	sortNewestFirst(out)
	return out
}

// Get returns run id's summary and its report, read from disk each time so
// that it shows what the daemon last wrote even before Update. The error
// wraps ErrNotFound for an unknown id; it wraps ErrNoReport, with the
// summary filled and a nil report, when the run has no readable
// report.json: the summary is then unreadable with the reason, unless the
// index says the run is running (it has not written its first report). A
// run Finish aborted in memory reads aborted while its report says running
// or cannot be read.
func (s *Store) Get(id string) (Summary, *report.Report, error) {
	sum, rep, _, err := s.GetJSON(id)
	return sum, rep, err
}

// GetJSON is Get with the report.json's bytes the report was decoded from
// (fields this version does not know included; nil without a report): one
// read, so the bytes and the report are the same file.
func (s *Store) GetJSON(id string) (Summary, *report.Report, []byte, error) {
	s.mu.RLock()
	sum, ok := s.index[id]
	sum.Baseline = ok && id == s.baseline
	ended, isEnded := s.ended[id]
	s.mu.RUnlock()
	if !ok {
		return Summary{}, nil, nil, fmt.Errorf("cannot get run %q: %w", id, ErrNotFound)
	}
	ended.Baseline = sum.Baseline
	rep, raw, err := readReportJSON(sum.Dir)
	if err != nil {
		switch {
		case isEnded:
			sum = ended
		case sum.Status != report.StatusRunning:
			sum.Status, sum.Verdict, sum.Reasons, sum.Reason = StatusUnreadable, "", nil, err.Error()
		}
		return sum, nil, nil, fmt.Errorf("cannot get run %s: %w: %w", id, ErrNoReport, err)
	}
	fresh := summarize(id, sum.Dir, rep)
	fresh.Baseline = sum.Baseline
	if isEnded && fresh.Status == report.StatusRunning {
		return ended, rep, raw, nil // the partial report, as written
	}
	return fresh, rep, raw, nil
}

// SetBaseline marks run id as the baseline for `soakd compare`, writing
// D/baseline atomically; retention never removes the baseline. An empty id
// clears the mark. The error wraps ErrNotFound for an unknown id and
// ErrReadOnly when the store does not write.
func (s *Store) SetBaseline(id string) error {
	if s.readOnly != nil {
		return fmt.Errorf("cannot set the baseline: %w: %w", ErrReadOnly, s.readOnly)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := filepath.Join(s.dir, BaselineFile)
	if id == "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cannot clear the baseline: %w", err)
		}
		s.baseline = ""
		return nil
	}
	if _, ok := s.index[id]; !ok {
		return fmt.Errorf("cannot set the baseline to %q: %w", id, ErrNotFound)
	}
	if err := s.write(path, []byte(id+"\n"), 0o644); err != nil {
		return fmt.Errorf("cannot set the baseline: %w", err)
	}
	s.baseline = id
	return nil
}

// Baseline returns the id of the baseline run, or "" when none is marked.
func (s *Store) Baseline() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.baseline
}

// Prune applies Retain (keep the newest keepLast runs, drop runs older than
// maxAge at now; zero means no limit) and removes the chosen runs'
// directories and index entries. It never removes the baseline nor a
// running run. It returns the ids it removed; a directory that cannot be
// removed stays indexed and its error is joined into err, without stopping
// the others. Negative limits are an error. A read-only store removes
// nothing.
func (s *Store) Prune(keepLast int, maxAge time.Duration, now time.Time) (removed []string, err error) {
	if keepLast < 0 || maxAge < 0 {
		return nil, fmt.Errorf("cannot prune: negative limits (keep last %d, max age %s)", keepLast, maxAge)
	}
	if s.readOnly != nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, id := range Retain(s.listLocked(), keepLast, maxAge, now) {
		if err := os.RemoveAll(s.index[id].Dir); err != nil {
			errs = append(errs, fmt.Errorf("cannot remove run %s: %w", id, err))
			continue
		}
		delete(s.index, id)
		delete(s.ended, id)
		removed = append(removed, id)
		s.removed++
	}
	return removed, errors.Join(errs...)
}

// Removed returns how many runs Prune has removed since Open, whoever
// called it (a run's end, a soak's cycle): the daemon's
// soakd_retention_deletions_total.
func (s *Store) Removed() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.removed
}

// Len returns how many runs the history holds, whatever their status.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.index)
}
