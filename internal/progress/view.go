package progress

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// DefaultHeartbeat is the least time between two heartbeat lines without a
// terminal: often enough to show a run is alive, rare enough for a CI log.
const DefaultHeartbeat = 10 * time.Second

// DefaultWidth is the width assumed when the terminal's cannot be read.
const DefaultWidth = 80

// Options configure a View.
type Options struct {
	// Terminal redraws the live area in place (ANSI cursor moves); without
	// it the view prints plain lines only.
	Terminal bool
	// Width returns the terminal's width in columns, asked at every redraw
	// so a resized window is followed; nil means DefaultWidth.
	Width func() int
	// Heartbeat is the least time between two heartbeat lines without a
	// terminal; 0 means DefaultHeartbeat.
	Heartbeat time.Duration
}

// View draws a run's progress on out. On a terminal it keeps a live area
// (a bar per running phase and the run's position) at the bottom, redrawn
// in place, with every finished phase's line and every log line written
// above it; otherwise it prints a finished phase's line and, at most every
// Heartbeat, one line per running phase. Its methods are safe for
// concurrent use and do nothing on a nil View.
type View struct {
	mu   sync.Mutex
	out  io.Writer
	opts Options
	pos  Position
	// running are the running phases, in the order they started.
	running []Phase
	// finished are the phases finished since the run started (cleared
	// by Close), for Snapshot.
	finished []Done
	// drawn is the number of live-area lines on screen.
	drawn int
	// lastBeat is when the last heartbeat was printed (or the view made).
	lastBeat time.Time
}

// New returns a view writing to out.
func New(out io.Writer, opts Options) *View {
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	return &View{out: out, opts: opts, lastBeat: time.Now()}
}

// TerminalWidth returns a Width function reading f's terminal width
// (DefaultWidth when it cannot be read).
func TerminalWidth(f *os.File) func() int {
	return func() int {
		w, _, err := term.GetSize(int(f.Fd()))
		if err != nil || w <= 0 {
			return DefaultWidth
		}
		return w
	}
}

// Write writes p, whole log lines, above the live area: the logger of a
// run writes through the view so its lines do not break the bars.
func (v *View) Write(p []byte) (int, error) {
	if v == nil {
		return len(p), nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clear()
	n, err := v.out.Write(p)
	v.draw()
	return n, err
}

// SetPosition records the whole run's position (when a phase starts).
func (v *View) SetPosition(pos Position) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.pos = pos
	v.redraw()
}

// Update records a running phase's progress (a phase of a new name starts
// a bar) and redraws, or, without a terminal, prints the heartbeat when
// the last was at least Heartbeat ago.
func (v *View) Update(p Phase) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if i := slices.IndexFunc(v.running, func(r Phase) bool { return r.Name == p.Name }); i >= 0 {
		v.running[i] = p
	} else {
		v.running = append(v.running, p)
	}
	if v.opts.Terminal {
		v.redraw()
		return
	}
	now := time.Now()
	if now.Sub(v.lastBeat) < v.opts.Heartbeat {
		return
	}
	v.lastBeat = now
	s, w := v.state(now), v.width()
	if s.Position.Phases > 0 {
		fmt.Fprintln(v.out, PositionLine(s, w))
	}
	for _, r := range v.running {
		fmt.Fprintln(v.out, Heartbeat(r, w))
	}
}

// Finish removes a phase's bar and prints its permanent line.
func (v *View) Finish(d Done) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clear()
	v.running = slices.DeleteFunc(v.running, func(r Phase) bool { return r.Name == d.Name })
	v.finished = append(v.finished, d)
	fmt.Fprintln(v.out, DoneLine(d, v.width()))
	v.draw()
}

// Close erases the live area (before the end summary) and stops drawing
// it: later log lines are written as they come.
func (v *View) Close() {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.clear()
	v.running, v.finished, v.pos = nil, nil, Position{}
}

// Snapshot returns what the view holds now: the run's position, its
// running phases and the phases finished since the run started, copies
// the caller may keep. A daemon's live view (the API's event stream) reads
// it; between runs it is empty.
func (v *View) Snapshot() (State, []Done) {
	if v == nil {
		return State{Now: time.Now()}, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	s := v.state(time.Now())
	s.Running = slices.Clone(v.running)
	return s, slices.Clone(v.finished)
}

func (v *View) width() int {
	if v.opts.Width == nil {
		return DefaultWidth
	}
	return max(20, v.opts.Width())
}

func (v *View) state(now time.Time) State {
	return State{Position: v.pos, Running: v.running, Now: now}
}

// redraw replaces the live area on a terminal.
func (v *View) redraw() {
	v.clear()
	v.draw()
}

// clear erases the live area: the cursor goes up over its lines, to the
// first column, and the screen is erased from there down.
func (v *View) clear() {
	if !v.opts.Terminal || v.drawn == 0 {
		return
	}
	fmt.Fprintf(v.out, "\x1b[%dA\r\x1b[J", v.drawn)
	v.drawn = 0
}

// draw writes the live area below the cursor, on a terminal, when there
// is something to show: a run's position or a running phase.
func (v *View) draw() {
	if !v.opts.Terminal || v.pos.Phases == 0 && len(v.running) == 0 {
		return
	}
	lines := Screen(v.state(time.Now()), v.width())
	fmt.Fprint(v.out, strings.Join(lines, "\n")+"\n")
	v.drawn = len(lines)
}
