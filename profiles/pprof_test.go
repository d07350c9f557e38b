package profiles

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

// burnCPU spins for d of wall time so that the CPU profiler samples it.
//
//go:noinline
func burnCPU(d time.Duration) uint64 {
	var x uint64 = 1
	for end := time.Now().Add(d); time.Now().Before(end); {
		for range 10000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

// onlyFile fails the test unless dir holds exactly the file name (no temporary leftovers).
func onlyFile(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, want) {
		t.Errorf("files in %s: got %v, want only %v", dir, names, want)
	}
}

func TestCapturePath(t *testing.T) {
	f := func(phase, kind, want string) {
		t.Helper()
		if got := CapturePath("run", phase, kind); got != filepath.Join("run", want) {
			t.Errorf("CapturePath(run, %q, %q): got %q, want %q", phase, kind, got, filepath.Join("run", want))
		}
	}
	f("graphql-steady-1", CaptureCPU, "graphql-steady-1.cpu.pb.gz")
	f("steady 1", CaptureHeapBefore, "steady_1.heap-before.pb.gz")
	f("../../etc/x", CaptureHeapAfter, ".._.._etc_x.heap-after.pb.gz")
	f("café", CaptureGoroutineAfter, "caf__.goroutine-after.txt")
	f("", CaptureCPU, "phase.cpu.pb.gz")
}

func TestStartCPUProfile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run", "dir") // created on demand
	path := CapturePath(dir, "p1", CaptureCPU)
	c, err := StartCPUProfile(path)
	if err != nil {
		t.Fatalf("StartCPUProfile: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("profile at %s before Stop: got stat error %v, want none there yet", path, err)
	}
	burnCPU(400 * time.Millisecond)
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := c.Stop(); err == nil {
		t.Error("second Stop: got nil error, want an error")
	}
	onlyFile(t, dir, "p1.cpu.pb.gz")

	p, err := ReadProfile(path)
	if err != nil {
		t.Fatalf("ReadProfile: %v", err)
	}
	if len(p.Sample) == 0 {
		t.Fatal("cpu profile has no samples")
	}
	var burn int64
	for _, s := range p.Sample {
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if strings.HasSuffix(line.Function.Name, "profiles.burnCPU") {
					burn += s.Value[1]
				}
			}
		}
	}
	if burn == 0 {
		t.Errorf("cpu profile: got no time in profiles.burnCPU, want some")
	}
	if got := p.SampleType[1]; got.Type != "cpu" || got.Unit != "nanoseconds" {
		t.Errorf("cpu profile sample type 1: got %s/%s, want cpu/nanoseconds", got.Type, got.Unit)
	}
}

// TestStartCPUProfileBusy: a capture while another foreground profile
// holds the profiler (here runtime/pprof directly, as net/http/pprof's
// handler does) is refused at Stop with ErrCPUProfilerBusy and leaves no
// file; the profiler's holder is undisturbed.
func TestStartCPUProfileBusy(t *testing.T) {
	dir := t.TempDir()
	var held bytes.Buffer
	if err := pprof.StartCPUProfile(&held); err != nil {
		t.Fatalf("runtime/pprof.StartCPUProfile: %v", err)
	}
	c, err := StartCPUProfile(filepath.Join(dir, "refused.cpu.pb.gz"))
	if err != nil {
		pprof.StopCPUProfile()
		t.Fatalf("StartCPUProfile: %v", err)
	}
	err = c.Stop()
	pprof.StopCPUProfile()
	if !errors.Is(err, ErrCPUProfilerBusy) {
		t.Fatalf("Stop of a capture refused by a busy profiler: got %v, want one wrapping ErrCPUProfilerBusy", err)
	}
	if _, err := profile.Parse(&held); err != nil {
		t.Errorf("the holder's profile was damaged: %v", err)
	}
	onlyFile(t, dir) // nothing left of the refused capture
	// The profiler is free again: a capture works.
	c, err = StartCPUProfile(filepath.Join(dir, "ok.cpu.pb.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	onlyFile(t, dir, "ok.cpu.pb.gz")
}

func TestHeapProfile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	path := CapturePath(dir, "p1", CaptureHeapBefore)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// An existing file is replaced whole.
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := HeapProfile(path); err != nil {
		t.Fatalf("HeapProfile: %v", err)
	}
	onlyFile(t, dir, "p1.heap-before.pb.gz")
	p, err := ReadProfile(path)
	if err != nil {
		t.Fatalf("ReadProfile: %v", err)
	}
	var types []string
	for _, st := range p.SampleType {
		types = append(types, st.Type+"/"+st.Unit)
	}
	if got, want := strings.Join(types, ","), "alloc_objects/count,alloc_space/bytes,inuse_objects/count,inuse_space/bytes"; got != want {
		t.Errorf("heap profile sample types: got %s, want %s", got, want)
	}
}

func TestGoroutineDump(t *testing.T) {
	dir := t.TempDir()
	path := CapturePath(dir, "p1", CaptureGoroutineAfter)
	if err := GoroutineDump(path); err != nil {
		t.Fatalf("GoroutineDump: %v", err)
	}
	onlyFile(t, dir, "p1.goroutine-after.txt")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"goroutine profile: total ", "profiles.TestGoroutineDump"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("goroutine dump: got no %q in\n%s", want, b)
		}
	}
}

func TestCaptureErrors(t *testing.T) {
	// A regular file where the directory should be.
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(blocker, "p.heap-before.pb.gz")
	if err := HeapProfile(path); err == nil {
		t.Error("HeapProfile under a file: got nil error, want one")
	}
	if err := GoroutineDump(path); err == nil {
		t.Error("GoroutineDump under a file: got nil error, want one")
	}
	if c, err := StartCPUProfile(path); err == nil {
		_ = c.Stop()
		t.Error("StartCPUProfile under a file: got nil error, want one")
	}
}
