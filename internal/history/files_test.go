package history

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/soakd/soakd/internal/report"
)

// storeWithRun opens a store in a temporary directory, closed when the
// test ends, with one new run r1 of profile quick; it returns the run's
// directory.
func storeWithRun(t *testing.T) (*Store, string) {
	t.Helper()
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	dir, err := s.NewRun("r1", "quick")
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

// TestRunFiles: a run's listing holds its regular files only, and
// OpenFile opens those alone: not a symbolic link (to a file outside or
// inside the run), a directory, a FIFO (without blocking), a path, a
// name the caller's rule refuses, or a file of an unknown run.
func TestRunFiles(t *testing.T) {
	s, dir := storeWithRun(t)
	secret := filepath.Join(t.TempDir(), "secret")
	for path, body := range map[string]string{filepath.Join(dir, "report.json"): `{}`, filepath.Join(dir, "report.html"): "<p>", secret: "key"} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(secret, filepath.Join(dir, "outside.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("report.json", filepath.Join(dir, "inside.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	valid := func(name string) bool { return !strings.HasPrefix(name, ".") && !strings.Contains(name, "/") }

	fs, err := s.Files("r1", valid)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fs {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, " "); got != "report.html report.json" {
		t.Errorf("listed %q, want the two regular files", got)
	}
	f, err := s.OpenFile("r1", "report.json", valid)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "{}" {
		t.Errorf("report.json read %q", b)
	}
	for _, name := range []string{"outside.txt", "inside.json", "sub", "pipe", "../r1/report.json", "missing.json", ".hidden", filepath.Join("sub", "x")} {
		f, err := s.OpenFile("r1", name, valid)
		if err == nil {
			f.Close()
			t.Errorf("OpenFile(%q) opened it", name)
		} else if !errors.Is(err, ErrNoFile) {
			t.Errorf("OpenFile(%q): %v, want ErrNoFile", name, err)
		}
	}
	if _, err := s.OpenFile("nope", "report.json", valid); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown run: %v, want ErrNotFound", err)
	}
	if _, err := s.Files("nope", valid); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown run's files: %v, want ErrNotFound", err)
	}
}

// TestRunDirLink: a run directory that is a symbolic link (planted in
// runs/, to /etc or to another run) is no run: Update does not admit it,
// Open does not list it, and a run indexed before its directory was
// swapped for a link serves no file through it.
func TestRunDirLink(t *testing.T) {
	data := t.TempDir()
	s, err := Open(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, "passwd"), []byte("root:x:0:0"), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(data, RunsDir)
	if err := os.Symlink(elsewhere, filepath.Join(runs, "evil")); err != nil {
		t.Fatal(err)
	}
	valid := func(string) bool { return true }
	if err := s.Update("evil"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Update of a linked run directory: %v, want ErrNotFound", err)
	}
	if fs, err := s.Files("evil", valid); !errors.Is(err, ErrNotFound) {
		t.Errorf("the linked directory's files: %v %v, want ErrNotFound", fs, err)
	}
	// Indexed as a real run, then swapped for a link.
	dir, err := s.NewRun("r1", "quick")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	if fs, err := s.Files("r1", valid); !errors.Is(err, ErrNotFound) {
		t.Errorf("a run swapped for a link lists %v (%v), want ErrNotFound", fs, err)
	}
	if f, err := s.OpenFile("r1", "passwd", valid); err == nil || !errors.Is(err, ErrNotFound) {
		if f != nil {
			f.Close()
		}
		t.Errorf("a run swapped for a link opens passwd (%v), want ErrNotFound", err)
	}
	s.Close() // the lock: one store at a time
	again, err := Open(data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for _, sum := range again.List() {
		if sum.ID == "evil" || sum.ID == "r1" {
			t.Errorf("Open lists the linked directory %s", sum.ID)
		}
	}
}

// TestReportLink: a report.json that is a symbolic link (to a JSON file
// elsewhere that reads as a report) is not read: Get gives no report (the
// run, just created, stays running as a run without its first report
// does) and GetJSON none of the linked file's bytes.
func TestReportLink(t *testing.T) {
	s, dir := storeWithRun(t)
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"schema_version":1,"run":"r1","status":"complete","token":"s3cret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "report.json")
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, path); err != nil {
		t.Fatal(err)
	}
	if err := s.Update("r1"); err == nil {
		t.Error("Update read a linked report.json")
	}
	sum, rep, err := s.Get("r1")
	if rep != nil || !errors.Is(err, ErrNoReport) || sum.Status == report.StatusComplete {
		t.Errorf("Get of a linked report.json: %+v, %v, %v; want no report", sum, rep, err)
	}
	if _, _, b, err := s.GetJSON("r1"); err == nil || strings.Contains(string(b), "s3cret") {
		t.Errorf("GetJSON gave the linked file's bytes: %q, %v", b, err)
	}
}
