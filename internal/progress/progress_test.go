package progress

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/soakd/soakd/internal/termtext"
)

var update = flag.Bool("update", false, "rewrite the golden screens")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func ms(v float64) *float64 { return &v }

// fixture is a run in its third phase of eleven, second round of four,
// with a second phase running beside it (as an A/B session's duet does)
// whose name is too long for the name column.
func fixture() State {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return State{
		Position: Position{Phase: 3, Phases: 11, Round: 2, Rounds: 4, Started: start, After: 7*time.Minute + 30*time.Second, AfterKnown: true},
		Running: []Phase{
			{Name: "graphql-load#2", Fraction: 0.42, Elapsed: 21 * time.Second, Requests: 12345, Errors: 0, RPS: 1649.6, P99Ms: ms(3.1)},
			{Name: "graphql-subscriptions-fan-out-load#2", Fraction: 0.1, Elapsed: 3 * time.Second, Requests: 87, Errors: 2, RPS: 29, P99Ms: nil},
		},
		Now: start.Add(62 * time.Second),
	}
}

func finished() []Done {
	return []Done{
		{Name: "rest-control#1", Requests: 30000, Errors: 0, RPS: 1712.4, P99Ms: 2.84, Elapsed: 17*time.Second + 600*time.Millisecond},
		{Name: "graphql-load#1", Requests: 30000, Errors: 3, RPS: 1490, P99Ms: 4.07, Elapsed: 20 * time.Second},
		{Name: "max-load-graphql", Requests: 4100, Errors: 0, RPS: 820, P99Ms: 41.5, Elapsed: 5 * time.Second, Interrupted: true},
	}
}

// screen is what a terminal of width columns shows: the finished phases'
// lines, then the live area.
func screen(width int) string {
	var b strings.Builder
	for _, d := range finished() {
		b.WriteString(DoneLine(d, width) + "\n")
	}
	for _, l := range Screen(fixture(), width) {
		b.WriteString(l + "\n")
	}
	return b.String()
}

func TestScreenGolden(t *testing.T) {
	for _, w := range []int{80, 160} {
		golden(t, fmt.Sprintf("screen-%d.golden", w), screen(w))
	}
}

// No line is ever wider than the terminal, at any width from 20 to 200
// columns, with µ, the bar's blocks, ✓ and … one column each.
func TestNoLineExceedsTheWidth(t *testing.T) {
	for w := 20; w <= 200; w++ {
		for l := range strings.Lines(screen(w)) {
			l = strings.TrimSuffix(l, "\n")
			if termtext.Width(l) > w {
				t.Fatalf("width %d: %q is %d columns", w, l, termtext.Width(l))
			}
		}
	}
}

// At 80 columns the bar keeps at least minBar columns and the figures
// that do not fit are dropped, the least important first.
func TestNarrowBarDropsFiguresNotTheBar(t *testing.T) {
	p := fixture().Running[0]
	l := BarLine(p, 14, minBar, 80)
	if !strings.Contains(l, strings.Repeat("░", minBar/2)) || !strings.Contains(l, "12,345 req") {
		t.Errorf("80 columns: %q", l)
	}
	wide := BarLine(p, 14, maxBar, 160)
	if !strings.Contains(wide, "p99 3.10 ms") {
		t.Errorf("160 columns lacks p99: %q", wide)
	}
}

var longFloat = regexp.MustCompile(`\d\.\d{4,}`)

// Without a terminal: no escape sequence, a line per finished phase and a
// heartbeat at most every 10 s, humanised, with no long floats. The
// driver reports every second; the clock is synctest's.
func TestPlainViewHeartbeatEveryTenSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		v := New(&out, Options{Terminal: false})
		start := time.Now()
		v.SetPosition(Position{Phase: 1, Phases: 2, Started: start, After: 30 * time.Second, AfterKnown: true})
		for s := 1; s <= 25; s++ {
			time.Sleep(time.Second)
			v.Update(Phase{Name: "graphql-load", Fraction: float64(s) / 25, Elapsed: time.Duration(s) * time.Second, Requests: int64(s) * 1650, RPS: 1650.4, P99Ms: ms(3.14159265358979)})
		}
		v.Finish(Done{Name: "graphql-load", Requests: 41250, RPS: 1650.02, P99Ms: 3.14159265358979, Elapsed: 25 * time.Second})
		if _, err := v.Write([]byte("a log line\n")); err != nil {
			t.Fatal(err)
		}
		v.Close()
		got := out.String()
		if strings.Contains(got, "\x1b") {
			t.Errorf("escape sequences without a terminal: %q", got)
		}
		if longFloat.MatchString(got) {
			t.Errorf("a long float: %q", got)
		}
		if n := strings.Count(got, "graphql-load "); n != 3 { // heartbeats at 10 s and 20 s, then the finished line
			t.Errorf("%d heartbeat and finished lines, want 3:\n%s", n, got)
		}
		golden(t, "plain.golden", got)
	})
}

// Without a terminal every line fits 80 columns whole (nothing cut with
// …), even a duet's phase names with seven-digit counts and a run of many
// phases and rounds: the run's position is a line of its own.
func TestPlainViewFitsEightyColumns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		v := New(&out, Options{Terminal: false})
		v.SetPosition(Position{Phase: 118, Phases: 120, Round: 59, Rounds: 60, Started: time.Now().Add(-11 * time.Hour), After: 23 * time.Hour, AfterKnown: true})
		time.Sleep(time.Minute)
		for _, name := range []string{"old graphql-load#59", "new graphql-load#59"} {
			v.Update(Phase{Name: name, Fraction: 0.99, Elapsed: time.Hour, Requests: 9_876_543, Errors: 1_234_567, RPS: 12_345.6, P99Ms: ms(12_345.678)})
		}
		v.Finish(Done{Name: "old graphql-load#59", Requests: 9_876_543, Errors: 1_234_567, RPS: 12_345.6, P99Ms: 12_345.678, Elapsed: time.Hour, Interrupted: true})
		v.Close()
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) < 3 {
			t.Fatalf("%d lines, want a position, the phases and a finished line:\n%s", len(lines), out.String())
		}
		for _, l := range lines {
			if w := termtext.Width(l); w > 80 || strings.Contains(l, "…") {
				t.Errorf("%d columns, want the whole line in at most 80: %q", w, l)
			}
		}
	})
}

// On a terminal every redraw first moves the cursor up over the live area
// it drew and erases it, so nothing is left behind; a log line goes above
// the live area, and Close erases it.
func TestTerminalViewRedrawsInPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		v := New(&out, Options{Terminal: true, Width: func() int { return 80 }})
		v.SetPosition(Position{Phase: 1, Phases: 2, Started: time.Now(), AfterKnown: true, After: time.Minute})
		if out.String() != "run: phase 1 of 2 · elapsed 0s · about 1m00s left\n" {
			t.Errorf("first draw: %q", out.String())
		}
		out.Reset()
		time.Sleep(time.Second)
		v.Update(Phase{Name: "rest-control", Fraction: 0.5, Elapsed: time.Second, Requests: 10})
		if !strings.HasPrefix(out.String(), "\x1b[1A\r\x1b[J") || strings.Count(out.String(), "\n") != 2 {
			t.Errorf("redraw: %q", out.String())
		}
		out.Reset()
		if _, err := v.Write([]byte("WARN something\n")); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "\x1b[2A\r\x1b[JWARN something\nrest-control ") {
			t.Errorf("log line: %q", out.String())
		}
		out.Reset()
		v.Finish(Done{Name: "rest-control", Requests: 20, Elapsed: 2 * time.Second})
		if !strings.HasPrefix(out.String(), "\x1b[2A\r\x1b[J✓ rest-control  20 req") || strings.Count(out.String(), "\n") != 2 {
			t.Errorf("finish: %q", out.String())
		}
		out.Reset()
		v.Close()
		if out.String() != "\x1b[1A\r\x1b[J" {
			t.Errorf("close: %q", out.String())
		}
	})
}

// Without a run position (an A/B session's two sides running one phase
// each) the bars are drawn alone.
func TestTerminalViewDrawsBarsWithoutAPosition(t *testing.T) {
	var out bytes.Buffer
	v := New(&out, Options{Terminal: true, Width: func() int { return 80 }})
	v.Update(Phase{Name: "old graphql-load", Fraction: 0.5, Requests: 10})
	v.Update(Phase{Name: "new graphql-load", Fraction: 0.25, Requests: 5})
	got := out.String()
	if i := strings.LastIndex(got, "\x1b[J"); i < 0 || strings.Count(got[i:], "\n") != 2 || !strings.Contains(got[i:], "new graphql-load") || strings.Contains(got, "run: phase") {
		t.Errorf("two bars and no run line: %q", got)
	}
}

func TestNilViewDoesNothing(t *testing.T) {
	var v *View
	v.SetPosition(Position{Phases: 1})
	v.Update(Phase{Name: "x"})
	v.Finish(Done{Name: "x"})
	v.Close()
	if n, err := v.Write([]byte("ab")); n != 2 || err != nil {
		t.Errorf("Write: %d %v", n, err)
	}
}

// The time left adds the running phase's remainder, from its elapsed
// time and fraction, to the phases after it; unknown when either is.
func TestTimeLeft(t *testing.T) {
	s := State{Position: Position{After: time.Minute, AfterKnown: true}, Running: []Phase{{Fraction: 0.25, Elapsed: 10 * time.Second}}}
	if d, ok := s.Left(); !ok || d != 90*time.Second {
		t.Errorf("left: %v %v, want 1m30s", d, ok)
	}
	s.Running[0].Fraction = 0
	if _, ok := s.Left(); ok {
		t.Error("a phase with no progress yet has an unknown remainder")
	}
}
