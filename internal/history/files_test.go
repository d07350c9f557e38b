package history

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRunFiles: a run's listing holds its regular files only, and
// OpenFile opens those alone: not a symbolic link (to a file outside or
// inside the run), a directory, a FIFO (without blocking), a path, a
// name the caller's rule refuses, or a file of an unknown run.
func TestRunFiles(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dir, err := s.NewRun("r1", "quick")
	if err != nil {
		t.Fatal(err)
	}
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
