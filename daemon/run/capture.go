package run

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/target"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

// capture takes a phase's pprof files in the run directory: a heap profile
// before, a CPU profile over the steady window (for a closed phase: from
// the first progress report with every user active to the first with one
// finished; otherwise the whole phase), a heap profile and a goroutine
// dump after. Failures are logged and kept in failed (for the report's
// notes), never fatal: profiles are evidence, not the measurement.
type capture struct {
	dir   string
	phase string
	cfg   config.ProfilingConfig
	tools target.Captures
	log   *zap.Logger
	users int // users of a closed phase with a known count; 0 otherwise
	files []string
	// failed says, per capture that was tried and not written, which and
	// why ("heap-before.pb.gz: …").
	failed []string

	cpu     target.CPUProfiler
	cpuFile string
	// marks are the driver's cumulative requests as its reports arrived,
	// to count the requests within a windowed profile's chunks.
	marks    []reqMark
	phaseReq int64 // the phase's requests, as after was given them
	started  bool
	stopped  bool
	startReq int64
	stopReq  int64
}

func newCapture(dir string, spec workloads.Phase, cfg config.ProfilingConfig, tools target.Captures, log *zap.Logger) *capture {
	c := &capture{dir: dir, phase: spec.Name, cfg: cfg, tools: tools, log: log.With(zap.String("phase", spec.Name))}
	if spec.Model == "" || spec.Model == workloads.Closed {
		c.users = spec.Users()
	}
	return c
}

// path is kind's file for this phase in the run directory, named by
// profiles.CapturePath: a round's "graphql-load#2" gives
// "graphql-load_2.cpu.pb.gz", since a '#' in a file name cuts an artefact's URL.
func (c *capture) path(kind string) string { return profiles.CapturePath(c.dir, c.phase, kind) }

// before runs just before the driver starts.
func (c *capture) before() {
	if c.cfg.Heap {
		c.write("heap-before.pb.gz", c.tools.Heap)
	}
	if c.users == 0 {
		c.startCPU(0)
	}
}

// reqMark is the driver's cumulative requests at an instant.
type reqMark struct {
	t time.Time
	n int64
}

// requestsAt is the cumulative requests at t, linearly between the marks
// around it (the first or last mark outside them).
func requestsAt(marks []reqMark, t time.Time) float64 {
	i, _ := slices.BinarySearchFunc(marks, t, func(m reqMark, t time.Time) int { return m.t.Compare(t) })
	switch {
	case len(marks) == 0:
		return 0
	case i == 0:
		return float64(marks[0].n)
	case i == len(marks):
		return float64(marks[len(marks)-1].n)
	}
	a, b := marks[i-1], marks[i]
	if !b.t.After(a.t) {
		return float64(b.n)
	}
	f := float64(t.Sub(a.t)) / float64(b.t.Sub(a.t))
	return float64(a.n) + f*float64(b.n-a.n)
}

// progress follows the driver's reports to bracket the steady window.
func (c *capture) progress(p workloads.Progress) {
	c.marks = append(c.marks, reqMark{time.Now(), p.Requests})
	if c.users == 0 {
		return
	}
	if !c.started && p.ActiveUsers >= int64(c.users) {
		c.startCPU(p.Requests)
	} else if c.started && !c.stopped && p.ActiveUsers < int64(c.users) {
		c.stopCPU(p.Requests)
	}
}

// heapPair returns the phase's heap profiles before and after it and the
// phase's requests, or "" when either was not written.
func (c *capture) heapPair() (before, after string, requests int64) {
	b, a := c.path("heap-before.pb.gz"), c.path("heap-after.pb.gz")
	if !slices.Contains(c.files, filepath.Base(b)) || !slices.Contains(c.files, filepath.Base(a)) {
		return "", "", 0
	}
	return b, a, c.phaseReq
}

// after runs once the phase has settled; requests is the phase's total.
func (c *capture) after(requests int64) {
	c.phaseReq = requests
	if c.started && !c.stopped {
		c.stopCPU(requests)
	}
	if c.cfg.Heap {
		c.write("heap-after.pb.gz", c.tools.Heap)
	}
	if c.cfg.Goroutines {
		c.write("goroutine-after.txt", c.tools.Goroutines)
	}
}

// cpuProfile returns the CPU profile's path and the requests completed
// while it ran, or "" when none was taken.
func (c *capture) cpuProfile() (string, int64) {
	if !c.stopped || c.cpuFile == "" {
		return "", 0
	}
	return c.cpuFile, c.stopReq - c.startReq
}

func (c *capture) startCPU(requests int64) {
	c.started = true
	if !c.cfg.CPU || c.tools.StartCPU == nil {
		return
	}
	p, err := c.tools.StartCPU(c.path("cpu.pb.gz"))
	if err != nil {
		c.log.Warn("no cpu profile for this phase", zap.Error(err))
		c.failed = append(c.failed, "cpu.pb.gz: "+err.Error())
		return
	}
	c.cpu, c.startReq = p, requests
}

func (c *capture) stopCPU(requests int64) {
	c.stopped = true
	if c.cpu == nil {
		return
	}
	if err := c.cpu.Stop(); err != nil {
		c.log.Warn("cpu profile lost", zap.Error(err))
		c.failed = append(c.failed, "cpu.pb.gz: "+err.Error())
		return
	}
	c.stopReq = requests
	if w, ok := c.cpu.(target.Windowed); ok {
		// Chunks of a remote profile: the requests within them.
		c.marks = append(c.marks, reqMark{time.Now(), requests})
		var n float64
		for _, ch := range w.Chunks() {
			n += requestsAt(c.marks, ch.To) - requestsAt(c.marks, ch.From)
		}
		c.startReq, c.stopReq = 0, int64(math.Round(n))
	}
	c.cpuFile = c.path("cpu.pb.gz")
	c.files = append(c.files, filepath.Base(c.cpuFile))
}

// failureNote words the captures that failed as a report note; "" when none did.
func (c *capture) failureNote() string {
	if len(c.failed) == 0 {
		return ""
	}
	return fmt.Sprintf("Phase %s: %d profile capture(s) not written (the figures do not depend on them): %s.", c.phase, len(c.failed), strings.Join(c.failed, "; "))
}

func (c *capture) write(kind string, f func(string) error) {
	if f == nil {
		return // the target offers no such capture (captureTools.missing says why)
	}
	if err := f(c.path(kind)); err != nil {
		c.log.Warn("profile not written", zap.String("kind", kind), zap.Error(err))
		c.failed = append(c.failed, kind+": "+err.Error())
		return
	}
	c.files = append(c.files, filepath.Base(c.path(kind)))
}
