// Package progress is the live view of a run on standard error: pure
// functions that render a run's state (the running phases, the whole
// run's position, the finished phases) to lines that fit a terminal's
// width, and View, which draws them: redrawn in place with ANSI cursor
// moves on a terminal, as plain lines (one per finished phase and a
// heartbeat at most every 10 s) otherwise.
package progress

import (
	"fmt"
	"strings"
	"time"

	"github.com/soakd/soakd/internal/termtext"
)

// Phase is a running phase as the view shows it.
type Phase struct {
	Name string
	// Fraction is how far the phase is, 0 to 1.
	Fraction float64
	// Elapsed is the time since the phase started.
	Elapsed          time.Duration
	Requests, Errors int64
	// RPS is the completion rate over the driver's last interval, in
	// requests per second.
	RPS float64
	// P99Ms is the 99th percentile latency of the last interval's
	// successful requests, in ms; nil when none completed.
	P99Ms *float64
}

// Position is the whole run's position.
type Position struct {
	// Phase is the 1-based index of the running phase among Phases.
	Phase, Phases int
	// Round is the running phase's interleaved round (1-based) of Rounds;
	// 0 when the phase is outside the compared rounds or the run has none.
	Round, Rounds int
	// Started is when the run started.
	Started time.Time
	// After is the expected time of the phases after the running one;
	// AfterKnown is false when one of them has no expected length (a
	// phase that runs its iterations to the end and has not run before).
	After      time.Duration
	AfterKnown bool
}

// Done is a finished phase: its permanent line.
type Done struct {
	Name             string
	Requests, Errors int64
	// RPS is the phase's throughput, in requests per second.
	RPS float64
	// P99Ms is the phase's 99th percentile latency, in ms.
	P99Ms   float64
	Elapsed time.Duration
	// Interrupted is true when the phase did not run to its end.
	Interrupted bool
}

// State is what the live area shows at one moment.
type State struct {
	Position Position
	Running  []Phase
	Now      time.Time
}

// Left is the expected time until the run ends, and whether it is known:
// the running phases' remainder (from their elapsed time and fraction)
// plus the phases after them.
func (s State) Left() (time.Duration, bool) {
	d, known := s.Position.After, s.Position.AfterKnown
	for _, p := range s.Running {
		if p.Fraction <= 0 {
			known = false
			continue
		}
		rest := time.Duration(float64(p.Elapsed) * (1 - min(1, p.Fraction)) / p.Fraction)
		d += rest
	}
	return d, known
}

// minBar and maxBar bound a bar's width, in columns.
const (
	minBar = 10
	maxBar = 40
)

// tailRoom is the room a bar line leaves, when it can, for the percentage
// and the figures after the bar, in columns.
const tailRoom = 50

// NameWidth is the widest phase name column, in columns; longer names
// end with ….
const NameWidth = 24

// Screen is the live area: a bar per running phase (names, bars and
// figures aligned in columns), then the whole run's position when one was
// given; no line is wider than width.
func Screen(s State, width int) []string {
	var lines []string
	names := 0
	for _, p := range s.Running {
		names = max(names, termtext.Width(p.Name))
	}
	names = min(names, NameWidth)
	bar := max(minBar, min(maxBar, width-names-2-tailRoom))
	for _, p := range s.Running {
		lines = append(lines, BarLine(p, names, bar, width))
	}
	if s.Position.Phases == 0 {
		return lines // no run position given (an A/B session's duet draws its bars alone)
	}
	return append(lines, PositionLine(s, width))
}

// BarLine is a running phase's line: its name (padded to nameCol columns,
// truncated with …), a bar of barCol columns, the percentage and the
// figures that fit in width, dropped from the least important (p99, then
// the rate, the errors, the requests, the elapsed time); the line is cut
// at width whatever remains.
func BarLine(p Phase, nameCol, barCol, width int) string {
	head := termtext.Pad(termtext.Truncate(p.Name, nameCol), nameCol) + " " + drawBar(p.Fraction, barCol) + " " + fmt.Sprintf("%3.0f %%", 100*clamp(p.Fraction))
	figs := []string{
		termtext.Duration(p.Elapsed),
		termtext.Count(p.Requests) + " req",
		termtext.Count(p.Errors) + " err",
		termtext.Rate(p.RPS) + " req/s",
	}
	if p.P99Ms != nil {
		figs = append(figs, "p99 "+termtext.Millis(*p.P99Ms))
	}
	for ; len(figs) > 0; figs = figs[:len(figs)-1] {
		if line := head + "  " + strings.Join(figs, "  "); termtext.Width(line) <= width {
			return line
		}
	}
	return cut(head, width)
}

// drawBar is a bar of n columns filled to fraction f.
func drawBar(f float64, n int) string {
	filled := int(clamp(f) * float64(n))
	return strings.Repeat("█", filled) + strings.Repeat("░", n-filled)
}

// PositionLine is the whole run's line: phase i of n, round r of R, the
// elapsed time and the time left, cut at width.
func PositionLine(s State, width int) string {
	pos := s.Position
	parts := []string{fmt.Sprintf("phase %d of %d", pos.Phase, pos.Phases)}
	if pos.Round > 0 && pos.Rounds > 0 {
		parts = append(parts, fmt.Sprintf("round %d of %d", pos.Round, pos.Rounds))
	}
	if !pos.Started.IsZero() {
		parts = append(parts, "elapsed "+termtext.Duration(s.Now.Sub(pos.Started)))
	}
	if d, ok := s.Left(); ok {
		parts = append(parts, "about "+termtext.Duration(d)+" left")
	} else {
		parts = append(parts, "time left unknown")
	}
	return cut("run: "+strings.Join(parts, " · "), width)
}

// DoneLine is a finished phase's permanent line: ✓ (✗ when interrupted),
// its name, requests, errors, throughput, p99 and how long it took, within
// width: fields two spaces apart, one when that is too wide, and wrapped
// onto an indented second line when even that is (nothing is cut: the line
// stays in the scrollback).
func DoneLine(d Done, width int) string {
	mark, name := "✓", termtext.Truncate(d.Name, NameWidth)
	if d.Interrupted {
		mark, name = "✗", name+" (interrupted)"
	}
	fields := []string{mark + " " + name, termtext.Count(d.Requests) + " req", termtext.Count(d.Errors) + " err",
		termtext.Rate(d.RPS) + " req/s", "p99 " + termtext.Millis(d.P99Ms), "in " + termtext.Duration(d.Elapsed)}
	line := strings.Join(fields, "  ")
	if termtext.Width(line) <= width {
		return line
	}
	line = strings.Join(fields, " ")
	if termtext.Width(line) <= width {
		return line
	}
	return strings.Join(termtext.Wrap(line, width, "  "), "\n")
}

// Heartbeat is the plain line a run without a terminal prints now and then
// for a running phase: "graphql-load 42 % 12,345 req 0 err 1,650 req/s p99
// 3.10 ms", cut at width (a phase's name is at most NameWidth, so the line
// fits 80 columns); the run's position is a line of its own before it
// (PositionLine).
func Heartbeat(p Phase, width int) string {
	line := fmt.Sprintf("%s %.0f %% %s req %s err %s req/s", termtext.Truncate(p.Name, NameWidth), 100*clamp(p.Fraction), termtext.Count(p.Requests), termtext.Count(p.Errors), termtext.Rate(p.RPS))
	if p.P99Ms != nil {
		line += " p99 " + termtext.Millis(*p.P99Ms)
	}
	return cut(line, width)
}

// cut truncates a line to width columns with ….
func cut(s string, width int) string { return termtext.Truncate(s, width) }

func clamp(f float64) float64 { return max(0, min(1, f)) }
