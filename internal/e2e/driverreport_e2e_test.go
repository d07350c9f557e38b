package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportRendersDriverOutput: `soakd drive`'s JSON lines against a
// real built-in target, given to `soakd report FILE` (and on standard
// input as -), print the phase for people with its requests, per operation
// and latency; a cut output without a result exits 3, a file that is not a
// driver's output 2.
func TestReportRendersDriverOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	target := exec.CommandContext(t.Context(), bin, "target", "--log-format", "json")
	stdout, err := target.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = target.Process.Kill(); _ = target.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	var ready struct {
		URL string `json:"url"`
	}
	if err != nil || json.Unmarshal([]byte(line), &ready) != nil || ready.URL == "" {
		t.Fatalf("ready line %q: %v", line, err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "drive.jsonl")
	drive, _, code := runSoakd(t, bin, "drive", "--target", ready.URL, "--phase", "rest-control", "--log-format", "json")
	if code != 0 {
		t.Fatalf("drive: exit %d", code)
	}
	if err := os.WriteFile(out, []byte(drive), 0o644); err != nil {
		t.Fatal(err)
	}
	text, stderr, code := runSoakd(t, bin, "report", out)
	t.Logf("soakd report %s:\n%s", out, text)
	for _, want := range []string{"phase rest-control (rest arm, closed model)", "requests 32,000, errors 0", "latency (successful requests) p50 ", "rest-get", "rest-put"} {
		if code != 0 || !strings.Contains(text, want) {
			t.Errorf("exit %d, output lacks %q\n%s", code, want, stderr)
		}
	}
	cmd := exec.Command(bin, "report", "-")
	cmd.Stdin = strings.NewReader(drive)
	if viaStdin, err := cmd.Output(); err != nil || string(viaStdin) != text {
		t.Errorf("report - on standard input: %v, output differs from the file's", err)
	}
	cut := drive[:strings.LastIndex(strings.TrimRight(drive, "\n"), "\n")+1] // the result line dropped
	if err := os.WriteFile(out, []byte(cut), 0o644); err != nil {
		t.Fatal(err)
	}
	if text, _, code := runSoakd(t, bin, "report", out); code != 3 || !strings.Contains(text, "no result") {
		t.Errorf("a cut output: exit %d, %q; want 3 and no result", code, text)
	}
	if err := os.WriteFile(out, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runSoakd(t, bin, "report", out); code != 2 || !strings.Contains(stderr, "is not a driver's output") {
		t.Errorf("not a driver's output: exit %d, %s", code, stderr)
	}
}
