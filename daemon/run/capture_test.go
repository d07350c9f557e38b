package run

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
