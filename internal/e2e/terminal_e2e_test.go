package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/soakd/soakd/internal/termtext"
)

// longFloat is a number printed with ten or more decimals, as zap prints a
// float64 (done_percent 18.866666666666667): what a person should never
// have to read on the terminal.
var longFloat = regexp.MustCompile(`\d\.\d{10,}`)

// TestRunWithoutTerminal: soakd run of the tiny profile with its standard
// streams not a terminal (a CI log) prints one plain line per finished
// phase with its figures humanised, no escape sequence (no cursor move,
// no colour) and no long float anywhere, and ends with the summary, every
// line within 100 columns.
func TestRunWithoutTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(cfg, []byte(tinyConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runSoakd(t, bin, "run", "--config", cfg, "--out", filepath.Join(dir, "run"))
	if code != 0 && code != 1 && code != 4 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	for _, phase := range []string{"rest-control", "graphql-load", "max-load-graphql"} {
		line := regexp.MustCompile(`(?m)^✓ ` + regexp.QuoteMeta(phase) + `  [0-9,]+ req  [0-9,]+ err  [0-9,.]+ req/s  p99 [0-9.]+ (µs|ms|s)  in \d+s$`)
		if !line.MatchString(stderr) {
			t.Errorf("no finished-phase line for %s on stderr:\n%s", phase, stderr)
		}
	}
	if !strings.Contains(stderr, "✓ rest-control  3,000 req  0 err  ") {
		t.Errorf("counts are not written with thousands separators:\n%s", stderr)
	}
	for name, out := range map[string]string{"stdout": stdout, "stderr": stderr} {
		if strings.Contains(out, "\x1b") {
			t.Errorf("%s has escape sequences without a terminal: %q", name, out)
		}
		if m := longFloat.FindString(out); m != "" {
			t.Errorf("%s has a long float %s:\n%s", name, m, out)
		}
	}
	for _, want := range []string{"REST arm", "GraphQL arm", "  rest-control ", "Why the verdict is not pass:", "verdict: ", "reports: "} {
		if code == 0 && want == "Why the verdict is not pass:" {
			continue
		}
		if !strings.Contains(stdout, want) {
			t.Errorf("the summary lacks %q:\n%s", want, stdout)
		}
	}
	for l := range strings.Lines(stdout) {
		if l = strings.TrimSuffix(l, "\n"); termtext.Width(l) > 100 {
			t.Errorf("a summary line of %d columns: %q", termtext.Width(l), l)
		}
	}
}

// finishedLine is a finished phase's permanent line.
var finishedLine = regexp.MustCompile(`^✓ \S+  [0-9,]+ req  `)

// openPTY opens a pseudo-terminal of cols×rows: its master (what a
// terminal emulator reads) and its slave (the program's terminal).
func openPTY(t *testing.T, cols, rows uint16) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open the slave: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows}); err != nil {
		t.Fatalf("set the window size: %v", err)
	}
	return m, s
}

// runOnTerminal runs soakd with standard output and error on a
// pseudo-terminal of 80 columns and returns what it wrote there, escape
// sequences included.
func runOnTerminal(t *testing.T, bin string, env []string, args ...string) (string, int) {
	t.Helper()
	master, slave := openPTY(t, 80, 40)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr, cmd.Env = slave, slave, append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		_, _ = io.Copy(&out, master) // ends with EIO once the program's side is closed
	}()
	err := cmd.Wait()
	<-read
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("soakd on a terminal: %v", err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

// TestRunOnTerminal: on a terminal of 80 columns soakd run redraws its
// live area in place (cursor up, erase), every bar and the run's line fit
// the 80 columns, a line per finished phase stays, and the verdict is
// coloured, unless NO_COLOR is set, which leaves the redrawing alone; the
// end summary fits the 80 columns too.
func TestRunOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(cfg, []byte(tinyConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	colour := regexp.MustCompile(`verdict: \x1b\[1;3[123]m(PASS|FAIL|INCONCLUSIVE)\x1b\[0m`)
	for _, tc := range []struct {
		name, noColor string
		coloured      bool
	}{{"colour", "", true}, {"NO_COLOR", "1", false}} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runOnTerminal(t, bin, []string{"NO_COLOR=" + tc.noColor}, "run", "--config", cfg, "--out", filepath.Join(dir, tc.name))
			if code != 0 && code != 1 && code != 4 {
				t.Fatalf("exit %d:\n%q", code, out)
			}
			if !strings.Contains(out, "\r\x1b[J") || !regexp.MustCompile(`\x1b\[\d+A`).MatchString(out) {
				t.Errorf("no redraw in place (cursor up, erase):\n%q", out)
			}
			if colour.MatchString(out) != tc.coloured {
				t.Errorf("verdict coloured: %v, want %v (NO_COLOR=%q):\n%q", colour.MatchString(out), tc.coloured, tc.noColor, out)
			}
			if !tc.coloured && strings.Contains(out, "\x1b[1;3") {
				t.Errorf("a colour despite NO_COLOR:\n%q", out)
			}
			bars, finished := 0, 0
			for l := range strings.SplitSeq(out, "\n") {
				if i := strings.LastIndex(l, "\x1b[J"); i >= 0 {
					l = l[i+len("\x1b[J"):]
				}
				l = strings.TrimRight(l, "\r")
				live := strings.Contains(l, "█") || strings.Contains(l, "░") || strings.HasPrefix(l, "run: phase ")
				if live {
					bars++
				}
				done := finishedLine.MatchString(l)
				if done {
					finished++
				}
				if (live || done) && termtext.Width(l) > 80 {
					t.Errorf("a progress line of %d columns on an 80-column terminal: %q", termtext.Width(l), l)
				}
			}
			// The end summary takes the terminal's 80 columns.
			_, summary, _ := strings.Cut(out, "\x1b[JPhase ")
			summary, _, _ = strings.Cut(summary, "\nto settle it:")
			if summary == "" {
				t.Errorf("no end summary:\n%q", out)
			}
			for l := range strings.SplitSeq("Phase "+summary, "\n") {
				if l = strings.TrimRight(l, "\r"); termtext.Width(l) > 80 && !strings.Contains(l, "\tINFO\t") {
					t.Errorf("a summary line of %d columns on an 80-column terminal: %q", termtext.Width(l), l)
				}
			}
			if bars == 0 || finished != 3 {
				t.Errorf("%d live lines drawn and %d finished-phase lines, want some and 3:\n%q", bars, finished, out)
			}
		})
	}
}
