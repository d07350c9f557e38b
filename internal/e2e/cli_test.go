package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/api"
)

// TestCLIHelpVersionAndFlags runs the real binary as a new user would:
// help on standard output, a stamped version, flags after positional
// arguments, honest defaults, and drive's missing-input messages.
func TestCLIHelpVersionAndFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)

	// --help, for soakd and every command, goes to standard output
	// (soakd --help | less) and exits 0.
	for _, args := range [][]string{{"--help"}, {"help"}, {"run", "--help"}, {"soak", "--help"}, {"start", "--help"}, {"drive", "-h"}, {"help", "compare"}} {
		stdout, stderr, code := runSoakd(t, bin, args...)
		if code != 0 || !strings.Contains(stdout, "Usage:") || stderr != "" {
			t.Errorf("soakd %v: exit %d, stdout has Usage: %v, stderr %q", args, code, strings.Contains(stdout, "Usage:"), stderr)
		}
		if strings.Contains(stdout, "(default -1") {
			t.Errorf("soakd %v prints a sentinel default:\n%s", args, stdout)
		}
	}
	// soakd alone is bad usage: the help on standard error, exit 2.
	if stdout, stderr, code := runSoakd(t, bin); code != 2 || stdout != "" || !strings.Contains(stderr, "Usage:") {
		t.Errorf("soakd alone: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// --version names the build; in a git checkout, the commit.
	stdout, _, code := runSoakd(t, bin, "--version")
	if code != 0 || !strings.HasPrefix(stdout, "soakd ") {
		t.Fatalf("--version: exit %d, %q", code, stdout)
	}
	if st, err := os.Stat(".git"); err == nil && st.IsDir() && strings.TrimSpace(stdout) == "soakd devel" { // a clone; the go command does not stamp builds in a git worktree (.git is a file)
		t.Errorf("--version in a git checkout does not name the commit: %q", stdout)
	}

	// A flag after the run id is a flag, not a second id: the command gets
	// as far as dialling the (closed) API, exit 5.
	_, stderr, code := runSoakd(t, bin, "status", "some-id", "--api", "http://127.0.0.1:1")
	if code != 5 || !strings.Contains(stderr, "is soakd serve running there") {
		t.Errorf("status ID --api URL: exit %d (want 5, unreachable)\n%s", code, stderr)
	}

	// drive says what it needs, exit 2, instead of waiting on a terminal
	// or quoting Go's URL parser.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"drive", "--target", "http://127.0.0.1:1"}, "drive needs --phase NAME"},
		{[]string{"drive", "--target", "127.0.0.1:8080", "--phase", "rest-control"}, "--target must be a URL with a scheme and host, such as http://127.0.0.1:8080"},
		{[]string{"drive", "--target", "http://127.0.0.1:1", "--phase", "x", "--spec", "-"}, "--phase or --spec, not both"},
		{[]string{"start", "--set", "kpis", "--api", "http://127.0.0.1:1"}, "want KEY=VALUE"},
		{[]string{"status", "a", "b"}, "at most one run id"},
		{[]string{"soak", "--cycles", "-1"}, "must not be negative"},
		{[]string{"run", "--config", "a.yaml", "--config", "b.yaml"}, "given twice"}, // the second used to replace the first silently
	} {
		_, stderr, code := runSoakd(t, bin, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("soakd %v: exit %d, want 2 and %q\n%s", tc.args, code, tc.want, stderr)
		}
	}
}

// TestCLIClientExitCodes: each way a control API call can fail has its own
// documented exit code, whichever client command meets it.
func TestCLIClientExitCodes(t *testing.T) {
	readBody := func(r *http.Request) string {
		b, _ := io.ReadAll(r.Body)
		return string(b)
	}
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Header.Get("Authorization") != "Bearer right":
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"missing or wrong bearer token"}}`))
		case r.Method == http.MethodPost && r.URL.Path == "/v1/runs":
			if strings.Contains(readBody(r), `"profile":"seed"`) {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"error":{"message":"the daemon cannot record runs: history is read-only: no space left on device"}}`))
				return
			}
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":{"message":"a run is in progress","running_id":"r1"}}`))
		case r.Method == http.MethodGet && r.URL.Path == "/v1/runs":
			_, _ = w.Write([]byte(`{"runs":[]}`)) // a daemon with no run yet
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"message":"no such run"}}`))
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		token string
		args  []string
		code  int
	}{
		{"wrong", []string{"runs"}, 6},
		{"wrong", []string{"status", "x"}, 6},
		{"right", []string{"status", "nope"}, 7},
		{"right", []string{"status"}, 7}, // no run yet: nothing to show, not bad usage
		{"right", []string{"stop"}, 2},   // no run in progress to stop
		{"right", []string{"stop", "nope"}, 7},
		{"right", []string{"baseline", "nope"}, 7},
		{"right", []string{"start", "--profile", "quick"}, 8},
		{"right", []string{"start", "--profile", "seed"}, 9}, // 503: read-only history
	} {
		t.Setenv("SOAKD_CONTROL_TOKEN", tc.token)
		_, stderr, code := runSoakd(t, bin, append(tc.args, "--api", srv.URL)...)
		if code != tc.code {
			t.Errorf("soakd %v (token %s): exit %d, want %d\n%s", tc.args, tc.token, code, tc.code, stderr)
		}
	}
}

// TestCLIJSONLogsOnlyJSON: under --log-format json every line soakd writes
// on standard error is a JSON object, errors included.
func TestCLIJSONLogsOnlyJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	for _, args := range [][]string{
		{"status", "--api", "http://127.0.0.1:1", "--log-format", "json"},
		{"--log-format", "json", "run", "--profile", "nope"},
	} {
		_, stderr, code := runSoakd(t, bin, args...)
		if code == 0 || stderr == "" {
			t.Fatalf("soakd %v: exit %d, stderr %q", args, code, stderr)
		}
		sc := bufio.NewScanner(strings.NewReader(stderr))
		for sc.Scan() {
			var v map[string]any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				t.Errorf("soakd %v: a stderr line is not JSON: %q", args, sc.Text())
			}
		}
	}
}

// TestCLIConfigPrintsEffectiveYAML: soakd config prints what the file
// set, --all the merged configuration; soakd accepts either back as
// --config as the same configuration; a
// deprecated control: key is read as api: with a warning; the token is
// redacted.
func TestCLIConfigPrintsEffectiveYAML(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	user := filepath.Join(dir, "user.yaml")
	if err := os.WriteFile(user, []byte("control:\n  listen: 127.0.0.1:7171\n  token: s3cret\nkpis:\n  cpu_increase_points: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	changed, stderr, code := runSoakd(t, bin, "config", "--config", user)
	if code != 0 {
		t.Fatalf("config: exit %d\n%s", code, stderr)
	}
	// By default only what the file set (4 lines of YAML, not 4,000).
	for _, want := range []string{"listen: 127.0.0.1:7171", "cpu_increase_points: 7", "token: <redacted>"} {
		if !strings.Contains(changed, want) {
			t.Errorf("soakd config lacks %q:\n%s", want, changed)
		}
	}
	if strings.Contains(changed, "quick:") || strings.Count(changed, "\n") > 10 {
		t.Errorf("soakd config printed more than the file set:\n%s", changed)
	}
	stdout, stderr, code := runSoakd(t, bin, "config", "--all", "--config", user)
	if code != 0 {
		t.Fatalf("config --all: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"listen: 127.0.0.1:7171", "cpu_increase_points: 7", "token: <redacted>", "profiles:", "quick:", "interval: 1s"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("soakd config lacks %q", want)
		}
	}
	if strings.Contains(stdout, "s3cret") {
		t.Error("soakd config printed the token")
	}
	if !strings.Contains(stderr, "control: is deprecated and read as api:") {
		t.Errorf("no deprecation warning for control:\n%s", stderr)
	}
	// The output is a config soakd accepts, and it prints the same again
	// (the redacted token aside, which stays redacted).
	eff := filepath.Join(dir, "effective.yaml")
	if err := os.WriteFile(eff, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	again, stderr, code := runSoakd(t, bin, "config", "--all", "--config", eff)
	if code != 0 {
		t.Fatalf("config of its own output: exit %d\n%s", code, stderr)
	}
	body := func(s string) string { _, b, _ := strings.Cut(s, "\n"); return b }
	if body(again) != body(stdout) {
		t.Error("soakd config --all's output, fed back, prints a different configuration")
	}
	// The short form, fed back, is the same configuration too.
	short := filepath.Join(dir, "changed.yaml")
	if err := os.WriteFile(short, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if again, _, code := runSoakd(t, bin, "config", "--all", "--config", short); code != 0 || body(again) != body(stdout) {
		t.Errorf("soakd config's short output, fed back (exit %d), is another configuration", code)
	}
}

// TestCLIStartWait: soakd start runs a profile on a real soakd serve with
// --set overrides, --wait follows it to its end and exits with its verdict,
// and the override is in force in that run's report.
func TestCLIStartWait(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	d := startServe(t, bin, serveConfig(t, t.TempDir(), ""))
	stdout, stderr, code := runSoakd(t, bin, "start", "--profile", "tiny", "--set", "kpis.throughput_decrease_percent=90", "--wait", "--poll", "200ms", "--api", d.api)
	id := ""
	if _, rest, ok := strings.Cut(stdout, "started run "); ok {
		id = strings.Fields(rest)[0]
	}
	if id == "" || !strings.Contains(stdout, "verdict: ") {
		t.Fatalf("start --wait: exit %d, no run id or KPI table\nstdout:\n%s\nstderr:\n%s\ndaemon:\n%s", code, stdout, stderr, d.stderr.String())
	}
	cl := &api.Client{BaseURL: d.api}
	sum, raw, err := cl.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"pass": 0, "fail": 1, "inconclusive": 4}[string(sum.Verdict)]
	if sum.Status == "running" || code != want {
		t.Errorf("start --wait exited %d for a run %s with verdict %s (want %d)", code, sum.Status, sum.Verdict, want)
	}
	var rep struct {
		KPIs []struct {
			Name      string   `json:"name"`
			Threshold *float64 `json:"threshold"`
		} `json:"kpis"`
		Phases []struct {
			Name string `json:"name"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	// --wait streamed a line per finished phase, in order, each once.
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "✓ ") || strings.HasPrefix(l, "✗ ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != len(rep.Phases) || len(lines) == 0 {
		t.Errorf("start --wait printed %d phase lines for %d phases:\n%s", len(lines), len(rep.Phases), stderr)
	}
	for i := range min(len(lines), len(rep.Phases)) {
		if f := strings.Fields(lines[i]); len(f) < 3 || f[1] != rep.Phases[i].Name || !strings.Contains(lines[i], " req/s  p99 ") {
			t.Errorf("phase line %d %q: want phase %s with its requests, rate and p99", i, lines[i], rep.Phases[i].Name)
		}
	}
	found := false
	for _, k := range rep.KPIs {
		if strings.Contains(strings.ToLower(k.Name), "throughput") && k.Threshold != nil && math.Abs(*k.Threshold) == 90 {
			found = true
		}
	}
	if !found {
		t.Errorf("the --set override is not in the run's KPIs: %+v", rep.KPIs)
	}
}

// TestDriveSpecFIFO: soakd drive --spec refuses a FIFO at once, exit 2,
// naming it (it blocked in open(2) for ever, deaf to SIGTERM), and a
// device such as /dev/zero.
func TestDriveSpecFIFO(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	fifo := filepath.Join(t.TempDir(), "spec.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: fifo + " is not a regular file (a FIFO)", "/dev/zero": "/dev/zero is not a regular file (a device)"} {
		_, stderr, code := runSoakdWithin(t, 30*time.Second, bin, "drive", "--target", "http://127.0.0.1:1", "--spec", path)
		if code != 2 || !strings.Contains(stderr, "cannot open --spec: "+want) {
			t.Errorf("drive --spec %s: exit %d, want 2 and %q\n%s", path, code, want, stderr)
		}
	}
}
