package run

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/target"
	"github.com/soakd/soakd/workloads"
)

// TestCaptureFailuresReachTheNotes: a capture that fails (a redirecting or
// hanging pprof_url) is named with its error in a note, so the report says
// why a profile is missing; before, only the log said so.
func TestCaptureFailuresReachTheNotes(t *testing.T) {
	dir := t.TempDir()
	tools := target.Captures{
		Heap: func(string) error {
			return errors.New("http://127.0.0.1:1/debug/pprof/heap redirected to http://127.0.0.1:2/: soakd follows no redirect")
		},
		Goroutines: func(path string) error { return os.WriteFile(path, []byte("goroutine 1"), 0o644) },
	}
	c := newCapture(dir, workloads.Phase{Name: "graphql-load", Model: workloads.Open}, config.ProfilingConfig{Heap: true, Goroutines: true}, tools, zap.NewNop())
	c.before()
	c.after(100)
	note := c.failureNote()
	for _, want := range []string{"Phase graphql-load: 2 profile capture(s) not written", "heap-before.pb.gz: http://127.0.0.1:1/debug/pprof/heap redirected", "heap-after.pb.gz:"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	if len(c.files) != 1 || c.files[0] != "graphql-load.goroutine-after.txt" {
		t.Errorf("files %v, want the goroutine dump alone", c.files)
	}
	if _, err := os.Stat(filepath.Join(dir, "graphql-load.goroutine-after.txt")); err != nil {
		t.Error(err)
	}
	ok := newCapture(dir, workloads.Phase{Name: "rest"}, config.ProfilingConfig{}, tools, zap.NewNop())
	if ok.before(); ok.failureNote() != "" {
		t.Errorf("no capture asked, note %q", ok.failureNote())
	}
}

// TestCaptureFileNamesAreURLSafe: a round's phase ("graphql-load#2") names
// its captures without the '#', which starts a URL's fragment and broke
// links to CI artefacts ("graphql-load#2.cpu.pb.gz" fetched
// "graphql-load"); the file written, the name listed and the path kept for
// the overhead table are one and the same.
func TestCaptureFileNamesAreURLSafe(t *testing.T) {
	dir := t.TempDir()
	tools := target.Captures{Goroutines: func(path string) error { return os.WriteFile(path, []byte("goroutine 1"), 0o644) }}
	c := newCapture(dir, workloads.Phase{Name: "graphql-load#2", Model: workloads.Open}, config.ProfilingConfig{Goroutines: true}, tools, zap.NewNop())
	c.before()
	c.after(100)
	if len(c.files) != 1 || c.files[0] != "graphql-load_2.goroutine-after.txt" {
		t.Fatalf("files %v, want [graphql-load_2.goroutine-after.txt]", c.files)
	}
	if _, err := os.Stat(filepath.Join(dir, c.files[0])); err != nil {
		t.Error(err)
	}
	if got := c.path("cpu.pb.gz"); filepath.Base(got) != "graphql-load_2.cpu.pb.gz" {
		t.Errorf("cpu profile path %s", got)
	}
}

// TestRequestsAt: the cumulative requests at an instant, linearly between
// the driver's reports, clamped to the first and last outside them.
func TestRequestsAt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	marks := []reqMark{{t0, 0}, {t0.Add(time.Second), 100}, {t0.Add(3 * time.Second), 500}}
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{-time.Second, 0}, {0, 0}, {500 * time.Millisecond, 50}, {2 * time.Second, 300}, {3 * time.Second, 500}, {9 * time.Second, 500}} {
		if got := requestsAt(marks, t0.Add(c.at)); got != c.want {
			t.Errorf("at %v: %v, want %v", c.at, got, c.want)
		}
	}
	if got := requestsAt(nil, t0); got != 0 {
		t.Errorf("no marks: %v", got)
	}
}
