package profiles

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"

	pyropprof "github.com/grafana/pyroscope-go/http/pprof"

	"github.com/soakd/soakd/internal/fsutil"
)

// Kinds of local capture a phase leaves in the run directory; CapturePath joins one to a phase name:
//
//	<phase>.heap-before.pb.gz, <phase>.cpu.pb.gz, <phase>.heap-after.pb.gz, <phase>.goroutine-after.txt
//
// The .pb.gz files are gzip'd pprof protos (go tool pprof reads them); the goroutine dump is text.
const (
	// CaptureHeapBefore is the heap profile written before the phase starts (after the settle and GC).
	CaptureHeapBefore = "heap-before.pb.gz"
	// CaptureCPU is the CPU profile of the phase's steady window.
	CaptureCPU = "cpu.pb.gz"
	// CaptureHeapAfter is the heap profile written after the phase ends (after the settle and GC).
	CaptureHeapAfter = "heap-after.pb.gz"
	// CaptureGoroutineAfter is the goroutine dump (debug=1 text) written after the phase ends.
	CaptureGoroutineAfter = "goroutine-after.txt"
)

// ErrCPUProfilerBusy is wrapped by CPUProfile.Stop's error when the capture could not run because another
// foreground CPU profile was running (another capture, or a request to /debug/pprof/profile). Go has one
// CPU profiler per process, so the caller logs this and carries on without the capture. The Pyroscope
// push does not make the profiler busy: captures share its profiler (see StartCPUProfile).
const ErrCPUProfilerBusy = cpuBusyError("the cpu profiler is already running (another capture or /debug/pprof/profile)")

// cpuBusyError is a constant error type, so ErrCPUProfilerBusy needs no package variable.
type cpuBusyError string

func (e cpuBusyError) Error() string { return string(e) }

// CapturePath is the file for one capture kind (CaptureCPU, ...) of a phase in dir. Bytes of the phase name
// other than ASCII letters, digits, '.', '_' and '-' become '_', so any phase name gives one file name in
// dir and never a path elsewhere.
func CapturePath(dir, phase, kind string) string {
	b := []byte(phase)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		b = []byte("phase")
	}
	return filepath.Join(dir, string(b)+"."+kind)
}

// HeapProfile writes this process's "heap" profile (gzip'd pprof proto, allocation and in-use samples as
// of the most recently completed GC cycle) to path, creating its directory if needed. It writes a
// temporary file in the same directory and renames it into place, so path is either absent or complete.
// It does not force a GC: the caller decides when one runs, because forced cycles count in the GC KPIs.
func HeapProfile(path string) error {
	return writeAtomically(path, func(w io.Writer) error {
		return pprof.Lookup("heap").WriteTo(w, 0)
	})
}

// GoroutineDump writes this process's goroutine profile in its debug=1 text form (stacks grouped with
// counts, and their pprof labels) to path, atomically like HeapProfile. A leak shows as a group whose
// count grew across a phase.
func GoroutineDump(path string) error {
	return writeAtomically(path, func(w io.Writer) error {
		return pprof.Lookup("goroutine").WriteTo(w, 1)
	})
}

// writeAtomically creates path's directory and writes path atomically
// with write (fsutil.WriteWith): a failed capture leaves no partial file.
func writeAtomically(path string, write func(io.Writer) error) error {
	if err := mkdirFor(path); err != nil {
		return err
	}
	return fsutil.WriteWith(path, 0o600, write)
}

// createTemp makes path's directory and a temporary file to be committed
// to path.
func createTemp(path string) (*fsutil.Temp, error) {
	if err := mkdirFor(path); err != nil {
		return nil, err
	}
	return fsutil.Create(path, 0o600)
}

// mkdirFor makes path's directory.
func mkdirFor(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("cannot create profile directory: %w", err)
	}
	return nil
}

// CPUProfile is a CPU profile being written to a file; StartCPUProfile begins it and Stop finishes it.
// The profile covers the wall time between the two calls, sampled at the runtime's 100 Hz.
type CPUProfile struct {
	path   string
	f      *fsutil.Temp
	resp   *profileResponse
	cancel context.CancelFunc
	done   chan struct{} // closed when the profiling goroutine has returned

	mu      sync.Mutex
	stopped bool
}

// maxCPUProfileSeconds bounds one capture (a week): pyroscope-go's handler needs a duration, and a
// capture nobody stops must still end.
const maxCPUProfileSeconds = 7 * 24 * 3600

// StartCPUProfile starts a CPU profile of this process writing into a temporary file next to path (its
// directory is created if needed). Stop moves the finished profile to path, so path never holds a partial
// profile.
//
// Go has one CPU profiler per process. The capture goes through pyroscope-go's collector-aware entry
// point (its http/pprof handler, which /debug/pprof/profile also serves): while the Pyroscope push runs,
// the capture shares the push's profiler (the push's current profile is cut and uploaded, the profiler
// restarts writing to both, and at Stop the capture's window is uploaded too), so local profiles and the
// push work together; without the push it is runtime/pprof's profiler. Whether the profiler could start
// is known only at Stop: a capture refused because another foreground profile ran returns an error
// wrapping ErrCPUProfilerBusy there and leaves nothing on disk; callers log it and go on, since a missing
// profile must not fail a run. The profiling goroutine this starts is awaited by Stop.
func StartCPUProfile(path string) (*CPUProfile, error) {
	f, err := createTemp(path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "/debug/pprof/profile?seconds="+strconv.Itoa(maxCPUProfileSeconds), nil)
	if err != nil {
		cancel()
		return nil, errors.Join(fmt.Errorf("cannot start cpu profile: %w", err), f.Abort())
	}
	c := &CPUProfile{path: path, f: f, resp: &profileResponse{w: &errWriter{w: f}, header: http.Header{}}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		pyropprof.Profile(c.resp, req)
	}()
	return c, nil
}

// Stop stops the CPU profile, which writes the whole profile, then syncs the file and renames it into
// place. Calling it again returns an error.
func (c *CPUProfile) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return fmt.Errorf("cannot stop cpu profile %s: already stopped", c.path)
	}
	c.stopped = true
	// The handler stops the profiler when its context ends and returns once the profile has been written.
	c.cancel()
	<-c.done
	if c.resp.status >= http.StatusBadRequest {
		msg := strings.TrimSpace(c.resp.refusal.String())
		return errors.Join(fmt.Errorf("cannot take cpu profile %s: %w: %s", c.path, ErrCPUProfilerBusy, msg), c.f.Abort())
	}
	if c.resp.w.err != nil {
		return errors.Join(fmt.Errorf("cannot write cpu profile %s: %w", c.path, c.resp.w.err), c.f.Abort())
	}
	return c.f.Commit()
}

// profileResponse is the http.ResponseWriter pyroscope-go's profile handler writes to: the profile goes to
// w, and an error response (the profiler could not start) is kept in refusal. Only the profiling
// goroutine touches it until Stop has awaited that goroutine.
type profileResponse struct {
	w       *errWriter
	header  http.Header
	status  int
	refusal bytes.Buffer
}

func (r *profileResponse) Header() http.Header { return r.header }

func (r *profileResponse) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *profileResponse) Write(p []byte) (int, error) {
	if r.status >= http.StatusBadRequest {
		return r.refusal.Write(p)
	}
	return r.w.Write(p)
}

// errWriter passes writes to w and remembers the first error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
