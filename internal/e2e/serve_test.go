package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/schemas"
)

// daemonProc is a `soakd serve` started by a test.
type daemonProc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	api    string
	done   chan error
}

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startServe starts soakd serve with cfg and waits until /readyz answers.
func startServe(t *testing.T, bin, cfg string, env ...string) *daemonProc {
	t.Helper()
	raw, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(raw), "listen: 127.0.0.1:")
	port := strings.Fields(string(raw)[i+len("listen: 127.0.0.1:"):])[0]
	d := &daemonProc{cmd: exec.Command(bin, "serve", "--config", cfg, "--log-format", "json"), stderr: &bytes.Buffer{}, api: "http://127.0.0.1:" + port, done: make(chan error, 1)}
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() {
		_ = d.cmd.Process.Kill()
		<-d.done
		d.done <- nil
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(d.api + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d
			}
		}
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("soakd serve exited: %v\n%s", err, d.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("soakd serve not ready\n%s", d.stderr.String())
		}
	}
}

// stop sends SIGTERM and returns the exit code.
func (d *daemonProc) stop(t *testing.T) int {
	t.Helper()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		d.done <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		return 0
	case <-time.After(60 * time.Second):
		t.Fatalf("soakd serve did not stop on SIGTERM\n%s", d.stderr.String())
		return -1
	}
}

func waitStatus(t *testing.T, cl *api.Client, id string, want ...string) api.RunSummary {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		r, _, err := cl.Get(t.Context(), id)
		if err == nil {
			for _, w := range want {
				if r.Status == w {
					return r
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s never reached %v (last %+v, %v)", id, want, r, err)
		}
	}
}

func serveConfig(t *testing.T, dir string, extra string) string {
	t.Helper()
	cfg := filepath.Join(dir, "serve.yaml")
	body := tinyConfig + "\ndata_dir: " + filepath.Join(dir, "data") + "\napi:\n  listen: 127.0.0.1:" + strconv.Itoa(freeLoopbackPort(t)) + "\n" + extra
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestServeControlAPI drives soakd serve through its API and CLI: start a
// run, a second start is refused with 409 and the running id, the run
// completes with a report, stop ends a run gracefully, and the history
// survives a restart, including a run the daemon was killed during.
func TestServeControlAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	cfg := serveConfig(t, dir, "")
	d := startServe(t, bin, cfg)
	cl := &api.Client{BaseURL: d.api}
	ctx := t.Context()

	run, err := cl.Start(ctx, api.StartRequest{Profile: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	if run.Profile != "tiny" || run.Status != "running" || run.Verdict != "running" {
		t.Errorf("the start reply: %+v, want profile tiny, status and verdict running", run)
	}
	_, err = cl.Start(ctx, api.StartRequest{})
	var ae *api.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.RunningID != run.ID {
		t.Errorf("a second start: got %v, want 409 naming %s", err, run.ID)
	}
	if _, err := cl.Start(ctx, api.StartRequest{Profile: "nope"}); !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Errorf("an unknown profile: got %v, want 400", err)
	}
	done := waitStatus(t, cl, run.ID, "complete")
	if done.Verdict != "pass" && done.Verdict != "fail" && done.Verdict != "inconclusive" {
		t.Errorf("a complete run's verdict: %q", done.Verdict)
	}
	if _, raw, err := cl.Get(ctx, run.ID); err != nil || !bytes.Contains(raw, []byte(`"kpis"`)) {
		t.Errorf("the run's report.json is not served: %v", err)
	}
	out, stderr, code := runSoakd(t, bin, "runs", "--api", d.api)
	if code != 0 || !strings.Contains(out, run.ID) {
		t.Errorf("soakd runs: exit %d\n%s%s", code, out, stderr)
	}
	if out, _, code := runSoakd(t, bin, "status", "--api", d.api, run.ID); code != 0 || !strings.Contains(out, "CPU (share of machine)") {
		t.Errorf("soakd status: exit %d\n%s", code, out)
	}

	if out, stderr, code := runSoakd(t, bin, "baseline", "--api", d.api, run.ID); code != 0 {
		t.Errorf("soakd baseline: exit %d\n%s%s", code, out, stderr)
	}
	if out, _, _ := runSoakd(t, bin, "runs", "--api", d.api); !strings.Contains(out, "baseline") {
		t.Errorf("soakd runs does not show the baseline:\n%s", out)
	}
	// soakd compare fetches the daemon's baseline by name; one round per
	// run cannot be gated: inconclusive, exit 4, a document of the schema.
	out, stderr, code = runSoakd(t, bin, "compare", "--api", d.api, "--format", "json", "baseline", run.ID)
	if err := schemas.Validate(schemas.Compare, []byte(out)); code != 4 || err != nil || !strings.Contains(out, `"old": "`+run.ID+`"`) {
		t.Errorf("soakd compare baseline %s: exit %d, want 4 and a valid comparison of the baseline (%v)\n%s%s", run.ID, code, err, out, stderr)
	}

	// Overrides make a long run; soakd stop ends it gracefully.
	long, err := cl.Start(ctx, api.StartRequest{Profile: "tiny", Overrides: "profiles:\n  tiny:\n    request_timeout: 5s\n    compare: {rest: rest-control, graphql: graphql-load}\n    phases:\n      - name: rest-control\n        arm: rest\n        users: [{operation: rest-get, users: 2, iterations: 100000}]\n      - name: graphql-load\n        arm: graphql\n        users: [{operation: graphql-query, users: 2, iterations: 10}]\n"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	// A run in progress reads running, never aborted, and names its profile.
	if out, _, code := runSoakd(t, bin, "status", "--api", d.api, long.ID); code != 0 || !strings.Contains(out, `(tiny): running, verdict "running"`) {
		t.Errorf("soakd status of a run in progress: exit %d\n%s", code, out)
	}
	if _, raw, err := cl.Get(ctx, long.ID); err != nil || !bytes.Contains(raw, []byte(`"verdict":"running"`)) {
		t.Errorf("report.json of a run in progress: %v\n%.300s", err, raw)
	}
	if out, stderr, code := runSoakd(t, bin, "stop", "--api", d.api); code != 0 || !strings.Contains(out, long.ID) {
		t.Errorf("soakd stop: exit %d\n%s%s", code, out, stderr)
	}
	if r := waitStatus(t, cl, long.ID, "aborted"); r.Verdict != "aborted" {
		t.Errorf("a stopped run: %+v", r)
	}
	// The stopped run against the baseline: its junit.xml is in error, not
	// failed, and the comparison fails (exit 1).
	if out, stderr, code := runSoakd(t, bin, "compare", "--api", d.api, "--format", "junit", "baseline", long.ID); code != 1 || !strings.Contains(out, `<error message="the new run `+long.ID+` was aborted`) {
		t.Errorf("soakd compare of an aborted run: exit %d, want 1 and an <error>\n%s%s", code, out, stderr)
	}
	if err := cl.Stop(ctx, run.ID); !errors.As(err, &ae) || ae.Status != http.StatusConflict {
		t.Errorf("stopping a finished run: got %v, want 409", err)
	}

	// A run in progress when the daemon is killed is marked aborted on restart.
	dying, err := cl.Start(ctx, api.StartRequest{Profile: "tiny", Overrides: "profiles:\n  tiny:\n    request_timeout: 5s\n    compare: {rest: rest-control, graphql: graphql-load}\n    phases:\n      - name: rest-control\n        arm: rest\n        users: [{operation: rest-get, users: 2, iterations: 100000}]\n      - name: graphql-load\n        arm: graphql\n        users: [{operation: graphql-query, users: 2, iterations: 10}]\n"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	d.done <- nil

	d2 := startServe(t, bin, cfg)
	cl2 := &api.Client{BaseURL: d2.api}
	runs, err := cl2.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range runs {
		got[r.ID] = r.Status
	}
	if got[run.ID] != "complete" || got[long.ID] != "aborted" || got[dying.ID] != "aborted" {
		t.Errorf("history after a restart: %v, want %s complete, %s and %s aborted", got, run.ID, long.ID, dying.ID)
	}
	if code := d2.stop(t); code != 0 {
		t.Errorf("soakd serve on SIGTERM: exit %d, want 0\n%s", code, d2.stderr.String())
	}
}

// TestServeToken: with a token, the API refuses requests without it or with
// a wrong one (401) and never logs it; a non-loopback control address
// without a token refuses to start.
func TestServeToken(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	const secret = "s3cret-token-for-the-test"
	d := startServe(t, bin, serveConfig(t, dir, ""), "SOAKD_CONTROL_TOKEN="+secret)
	var ae *api.APIError
	for _, tok := range []string{"", "wrong"} {
		if _, err := (&api.Client{BaseURL: d.api, Token: tok}).List(t.Context()); !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
			t.Errorf("token %q: got %v, want 401", tok, err)
		}
	}
	if _, err := (&api.Client{BaseURL: d.api, Token: secret}).List(t.Context()); err != nil {
		t.Errorf("the right token: %v", err)
	}
	if _, _, code := runSoakd(t, bin, "runs", "--api", d.api); code == 0 {
		t.Errorf("soakd runs without the token must fail")
	}
	d.stop(t)
	if strings.Contains(d.stderr.String(), secret) {
		t.Errorf("the token appears in the daemon's log")
	}

	open := filepath.Join(dir, "open.yaml")
	if err := os.WriteFile(open, []byte("data_dir: "+filepath.Join(dir, "d2")+"\napi:\n  listen: 0.0.0.0:"+strconv.Itoa(freeLoopbackPort(t))+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--config", open)
	cmd.Env = append(os.Environ(), "SOAKD_CONTROL_TOKEN=")
	outb, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(outb), "token") {
		t.Errorf("a non-loopback control address without a token: %v\n%s", err, outb)
	}
}

// TestServeScheduledSoak: with soak.cycles set, soakd serve runs the cycles
// by itself, lists them through the API and keeps serving afterwards.
func TestServeScheduledSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	d := startServe(t, bin, serveConfig(t, dir, "soak:\n  cycles: 2\n  pause: 200ms\n"))
	soakFile := filepath.Join(dir, "data", "soak.json")
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if raw, err := os.ReadFile(soakFile); err == nil && bytes.Contains(raw, []byte(`"status": "complete"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scheduled soak did not complete\n%s", d.stderr.String())
		}
	}
	runs, err := (&api.Client{BaseURL: d.api}).List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || !strings.HasSuffix(runs[0].ID, "-c0002") || runs[0].Status != "complete" {
		t.Errorf("runs after a 2-cycle scheduled soak: %+v", runs)
	}
	if code := d.stop(t); code != 0 {
		t.Errorf("soakd serve on SIGTERM: exit %d", code)
	}
}

// TestServeOverrides (issue 10 items 5 and 6): a running daemon answers
// 400 naming each override its long-lived target cannot honour for one run
// (the sampler, injection, server and GraphQL limits, data_dir, pinning),
// and an allowed override shows in the run's report.json, whose pinning
// and sampler interval are those of the running target.
func TestServeOverrides(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	d := startServe(t, bin, serveConfig(t, t.TempDir(), ""))
	cl := &api.Client{BaseURL: d.api}
	ctx := t.Context()
	for key, doc := range map[string]string{
		"sampler.interval":                      "sampler: {interval: 200ms}",
		"inject.graphql_leak_bytes_per_request": "inject: {graphql_leak_bytes_per_request: 64}",
		"server.max_body_bytes":                 "server: {max_body_bytes: 2048}",
		"graphql.max_depth":                     "graphql: {max_depth: 5}",
		"data_dir":                              "data_dir: " + t.TempDir(),
		"pinning.target":                        "pinning: {target: \"0\", driver: \"1\"}",
	} {
		_, err := cl.Start(ctx, api.StartRequest{Overrides: doc})
		var ae *api.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, key+": override refused") {
			t.Errorf("override %s: got %v, want 400 naming it", key, err)
		}
	}

	run, err := cl.Start(ctx, api.StartRequest{Overrides: "kpis: {cpu_increase_points: 42}\n"})
	if err != nil {
		t.Fatal(err)
	}
	waitStatus(t, cl, run.ID, "complete")
	_, raw, err := cl.Get(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		SamplerInterval float64 `json:"sampler_interval_seconds"`
		KPIs            []struct {
			Name      string   `json:"name"`
			Threshold *float64 `json:"threshold"`
		} `json:"kpis"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.SamplerInterval != 0.1 {
		t.Errorf("sampler_interval_seconds %g, want the target's 0.1", rep.SamplerInterval)
	}
	found := false
	for _, k := range rep.KPIs {
		if k.Name == "cpu_machine_percent" {
			found = true
			if k.Threshold == nil || *k.Threshold != 42 {
				t.Errorf("cpu_machine_percent threshold %v, want the override's 42", k.Threshold)
			}
		}
	}
	if !found {
		t.Errorf("report.json has no cpu_machine_percent KPI:\n%.500s", raw)
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.HasPrefix(n, "Not pinned:") }) {
		t.Errorf("an unpinned daemon's run does not say it is not pinned: %q", rep.Notes)
	}
	if code := d.stop(t); code != 0 {
		t.Errorf("soakd serve on SIGTERM: exit %d", code)
	}
}

// TestServeDataDirLock reproduces issue 10 item 4: a second daemon on the
// same data_dir marked the first one's running run aborted before it gave
// up on the taken control port. A second serve, and a soak, now exit 2
// naming the holder's pid and the lock file, and leave the running run
// alone; once the holder is killed (-9) the lock is free again.
func TestServeDataDirLock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	cfg := serveConfig(t, dir, "")
	d := startServe(t, bin, cfg)
	cl := &api.Client{BaseURL: d.api}
	run, err := cl.Start(t.Context(), api.StartRequest{Profile: "tiny", Overrides: "profiles:\n  tiny:\n    request_timeout: 5s\n    compare: {rest: rest-control, graphql: graphql-load}\n    phases:\n      - name: rest-control\n        arm: rest\n        users: [{operation: rest-get, users: 2, iterations: 100000}]\n      - name: graphql-load\n        arm: graphql\n        users: [{operation: graphql-query, users: 2, iterations: 10}]\n"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the run has written its first report
	lock := filepath.Join(dir, "data", ".lock")
	want := "is in use by pid " + strconv.Itoa(d.cmd.Process.Pid) + " (lock " + lock + "); one daemon per data_dir"
	for _, args := range [][]string{{"serve", "--config", cfg}, {"soak", "--config", cfg, "--cycles", "1"}} {
		_, stderr, code := runSoakd(t, bin, args...)
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("soakd %s on a data_dir in use: exit %d, want 2 and %q\n%s", args[0], code, want, stderr)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "data", "runs", run.ID, "report.json"))
	if err != nil || !bytes.Contains(raw, []byte(`"status": "running"`)) {
		t.Errorf("the first daemon's run on disk after the second daemon gave up: %v\n%.300s", err, raw)
	}
	if r, _, err := cl.Get(t.Context(), run.ID); err != nil || r.Status != "running" {
		t.Errorf("the first daemon's run after the second daemon gave up: %+v, %v, want running", r, err)
	}

	_ = d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
	d.done <- nil
	d2 := startServe(t, bin, cfg) // the kernel released the lock with the process
	if code := d2.stop(t); code != 0 {
		t.Errorf("soakd serve after the holder was killed: exit %d\n%s", code, d2.stderr.String())
	}
}
