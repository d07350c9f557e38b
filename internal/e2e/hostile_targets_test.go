package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/api"
)

// Issue 23's hostile inputs on the surfaces added for operations, CSV data
// and external targets, end to end: the control API of a real `soakd
// serve` (whose process must not grow from them), and `soakd run` against
// a real external server (`soakd target`) whose side URLs redirect, hang
// or serve lists that multiply.

// procResources is what the tests watch of a process, from /proc: its
// resident set (bytes), its open file descriptors and its OS threads. The
// daemon exposes no goroutine count of its own (its control API has no
// /metrics nor /debug/pprof/; the target's /metrics is its child's), so
// threads stand in for them.
type procResources struct {
	rss          uint64
	fds, threads int
}

func readProcResources(t *testing.T, pid int) procResources {
	t.Helper()
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		t.Fatal(err)
	}
	var r procResources
	for _, line := range strings.Split(string(status), "\n") {
		key, val, _ := strings.Cut(line, ":")
		f := strings.Fields(val)
		if len(f) == 0 {
			continue
		}
		switch key {
		case "VmRSS":
			kb, _ := strconv.ParseUint(f[0], 10, 64)
			r.rss = kb << 10
		case "Threads":
			r.threads, _ = strconv.Atoi(f[0])
		}
	}
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		t.Fatal(err)
	}
	r.fds = len(fds)
	if r.rss == 0 || r.threads == 0 || r.fds == 0 {
		t.Fatalf("cannot read pid %d's resources: %+v", pid, r)
	}
	return r
}

// recorder is a loopback HTTP server that answers 200 to every request and
// keeps each one's path and headers: where a redirect points, which must
// receive nothing.
type recorder struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []*http.Request
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.got = append(r.got, req.Clone(context.Background()))
		r.mu.Unlock()
		_, _ = io.WriteString(w, "ok\n")
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// requests are the requests received so far.
func (r *recorder) requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*http.Request(nil), r.got...)
}

// redirector is a loopback HTTP server that answers every request with a
// 302 to the same path on to, keeping each request it got.
func newRedirector(t *testing.T, to string) *recorder {
	t.Helper()
	r := &recorder{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.got = append(r.got, req.Clone(context.Background()))
		r.mu.Unlock()
		http.Redirect(w, req, to+req.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// hangingServer accepts TCP connections on loopback and never answers:
// a pprof_url whose server is stuck. It counts the connections accepted
// and holds each until the test ends.
type hangingServer struct {
	ln       net.Listener
	accepted atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
	wg       sync.WaitGroup
}

func newHangingServer(t *testing.T) *hangingServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &hangingServer{ln: ln}
	h.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // closed at cleanup
			}
			h.accepted.Add(1)
			h.mu.Lock()
			h.conns = append(h.conns, c)
			h.mu.Unlock()
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		h.wg.Wait()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.conns {
			_ = c.Close()
		}
	})
	return h
}

func (h *hangingServer) url(path string) string { return "http://" + h.ln.Addr().String() + path }

// hostileRunProfile is one short GraphQL phase against an external
// target: the redirect and hang rows need a run, not a measurement.
const hostileRunProfile = `
sampler:
  interval: 100ms
default_profile: hostile
profiles:
  hostile:
    description: one short GraphQL phase against an external target
    settle: 100ms
    trim_head: 100ms
    trim_tail: 100ms
    request_timeout: 5s
    seed: 7
    compare: {graphql: gql}
    phases:
      - name: gql
        arm: graphql
        think: {min: 0ms, max: 5ms}
        users:
          - {operation: graphql-query, users: 2, iterations: 400}
`

// attachSection attaches to the external server s (pid), its GraphQL and
// REST there, with the side URLs given (empty: none) and extra keys.
func attachSection(s externalServer, pid int, metrics, pprof, extra string) string {
	return fmt.Sprintf(`
target:
  kind: attach
  pid: %d
  graphql_url: %s
  rest_url: %s
  metrics_url: %q
  pprof_url: %q
  runtime: go
%s`, pid, s.url("/graphql"), s.url(""), metrics, pprof, extra)
}

// writeRunConfig writes cfg, with a data directory of its own, and
// returns its path and the run directory a `soakd run --out` would use.
func writeRunConfig(t *testing.T, cfg string) (path, out string) {
	t.Helper()
	dir := t.TempDir()
	path = filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg+"\ndata_dir: "+filepath.Join(dir, "data")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, filepath.Join(dir, "run")
}

// hostileRun runs `soakd run` on cfg (killed after two minutes, a safety
// net) and returns the run directory, standard error and exit code.
func hostileRun(t *testing.T, bin, cfg string) (out, stderr string, code int) {
	t.Helper()
	path, out := writeRunConfig(t, cfg)
	_, stderr, code = runSoakd(t, bin, "run", "--config", path, "--out", out, "--log-format", "json")
	return out, stderr, code
}

// noRequests fails when the server a redirect pointed at got a request.
func noRequests(t *testing.T, what string, sink *recorder) {
	t.Helper()
	for _, r := range sink.requests() {
		t.Errorf("%s: the redirect's target got %s %s (X-Api-Key %q): soakd followed the redirect", what, r.Method, r.URL, r.Header.Get("X-Api-Key"))
	}
}

// TestHostileTargetsThroughTheDaemon sends issue 23's hostile run requests
// to a real `soakd serve`: overrides naming files (/etc/passwd,
// /proc/self/environ, a relative path, /dev/zero, a CSV file of the
// daemon's own), overrides pointing the target's side URLs at a
// redirecting server, and non-finite limits. Each must be refused with 400
// naming the key, quote no file content, start nothing and send nothing
// to the redirecting server; after them the daemon's open file
// descriptors, RSS and threads are back near where they were.
func TestHostileTargetsThroughTheDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	// The daemon's environment holds a canary: /proc/self/environ would quote it.
	canary := fmt.Sprintf("hostile-canary-%d", os.Getpid())
	own := filepath.Join(dir, "own.csv")
	if err := os.WriteFile(own, []byte("id\n"+canary+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startServe(t, bin, serveConfig(t, dir, ""), "SOAKD_HOSTILE_CANARY="+canary)
	cl := &api.Client{BaseURL: d.api}
	ctx := t.Context()

	// One short run first, so the figures before the rows include what any
	// run leaves in the daemon (runtime threads, pools, the history).
	warm, err := cl.Start(ctx, api.StartRequest{Overrides: "profiles:\n  tiny:\n    request_timeout: 5s\n    compare: {rest: rest-control, graphql: graphql-load}\n    phases:\n" +
		"      - name: rest-control\n        arm: rest\n        users: [{operation: rest-get, users: 2, iterations: 200}]\n" +
		"      - name: graphql-load\n        arm: graphql\n        users: [{operation: graphql-query, users: 2, iterations: 200}]\n"})
	if err != nil {
		t.Fatal(err)
	}
	if r := waitStatus(t, cl, warm.ID, "complete", "aborted"); r.Status != "complete" {
		t.Fatalf("the warm-up run did not complete: %+v", r)
	}
	pid := d.cmd.Process.Pid
	time.Sleep(500 * time.Millisecond) // the run's last connections close
	before := readProcResources(t, pid)

	passwd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{canary, "root:"}
	for _, line := range strings.Split(string(passwd), "\n") {
		if line = strings.TrimSpace(line); len(line) > 8 {
			secrets = append(secrets, line)
		}
	}
	// refused starts doc and checks the daemon refused it with 400 naming
	// every key of keys and quoting none of the secrets.
	refused := func(t *testing.T, doc string, keys ...string) {
		t.Helper()
		_, err := cl.Start(ctx, api.StartRequest{Overrides: doc})
		var ae *api.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
			t.Fatalf("overrides %q: got %v, want 400", doc, err)
		}
		for _, k := range keys {
			if !strings.Contains(ae.Message, k) {
				t.Errorf("the refusal does not name %s:\n%s", k, ae.Message)
			}
		}
		for _, s := range secrets {
			if strings.Contains(ae.Message, s) {
				t.Errorf("the refusal quotes file content %q:\n%s", s, ae.Message)
			}
		}
	}

	t.Run("API file read", func(t *testing.T) {
		for _, path := range []string{"/etc/passwd", "/proc/self/environ", "../../x.csv", "/dev/zero", own} {
			// An operation redefined to read the file, and a profile sending it.
			doc := fmt.Sprintf("operations:\n  rest-get:\n    rest: {method: GET, path: \"/api/donuts/{{id}}\"}\n    data:\n      id: {csv: %q, column: id}\n"+
				"  steal:\n    rest: {method: GET, path: \"/api/donuts/{{root}}\"}\n    data:\n      root: {csv: %q, column: \"root:x:0:0:root:/root:/bin/bash\"}\n", path, path)
			refused(t, doc, "operations.rest-get.data.id.csv: override refused", "operations.steal.data.root.csv: override refused", "may not name files")
		}
	})

	t.Run("API redirecting target URLs", func(t *testing.T) {
		sink := newRecorder(t)
		redir := newRedirector(t, sink.srv.URL)
		doc := fmt.Sprintf("target:\n  kind: attach\n  pid: %d\n  metrics_url: %s/metrics\n  pprof_url: %s/debug/pprof/\n  ready_url: %s/healthz\n  graphql_ws_url: ws%s/graphql\n",
			os.Getpid(), redir.srv.URL, redir.srv.URL, redir.srv.URL, strings.TrimPrefix(redir.srv.URL, "http"))
		refused(t, doc, "target.metrics_url: override refused", "target.pprof_url: override refused", "target.ready_url: override refused", "target.graphql_ws_url: override refused")
		if n := len(redir.requests()); n != 0 {
			t.Errorf("the redirecting server got %d requests from a refused run", n)
		}
		noRequests(t, "refused overrides", sink)
	})

	t.Run("API NaN", func(t *testing.T) {
		for _, set := range []string{"kpis.cpu_increase_points=.nan", "memory.alloc_spike_factor=.inf", "kpis.gc_increase_points=-.inf"} {
			_, stderr, code := runSoakd(t, bin, "start", "--api", d.api, "--set", set)
			key, _, _ := strings.Cut(set, "=")
			if code != 2 || !strings.Contains(stderr, key+": must be a finite number") {
				t.Errorf("soakd start --set %s: exit %d, want 2 naming %s\n%s", set, code, key, stderr)
			}
		}
	})

	runs, err := cl.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].ID != warm.ID {
		t.Errorf("runs after the refused requests: %+v, want the warm-up run alone", runs)
	}
	time.Sleep(500 * time.Millisecond) // the API's connections of finished requests close
	after := readProcResources(t, pid)
	t.Logf("daemon (pid %d) before the rows: %+v; after: %+v", pid, before, after)
	const fdSlack, rssSlack, threadSlack = 8, 64 << 20, 4
	if after.fds > before.fds+fdSlack {
		t.Errorf("open file descriptors grew from %d to %d (slack %d): a refused request left files open", before.fds, after.fds, fdSlack)
	}
	if after.rss > before.rss+rssSlack {
		t.Errorf("RSS grew from %d to %d bytes (slack %d)", before.rss, after.rss, rssSlack)
	}
	if after.threads > before.threads+threadSlack {
		t.Errorf("threads grew from %d to %d (slack %d)", before.threads, after.threads, threadSlack)
	}
}

// TestHostileTargetsRun sends issue 23's hostile inputs to `soakd run`: CSV
// data from /dev/zero and a FIFO, non-finite limits in a config, an
// external target whose metrics, pprof, readiness or websocket URL
// redirects to another loopback server (which must receive nothing, and
// no headers_env secret), a pprof URL that hangs while the run is
// interrupted, and a chatty operation whose followed lists multiply.
func TestHostileTargetsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	srv := newExternalServer(t)
	pid := srv.start(t, bin).Process.Pid

	t.Run("dev zero CSV", func(t *testing.T) {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "items.csv")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		for file, kind := range map[string]string{"/dev/zero": "a device", fifo: "a FIFO"} {
			cfg := fmt.Sprintf("operations:\n  rest-get:\n    rest: {method: GET, path: \"/api/donuts/{{id}}\"}\n    data:\n      id: {csv: %q, column: id}\n", file)
			path, out := writeRunConfig(t, cfg)
			// The bound is a safety net: the refusal comes at once.
			_, stderr, code := runSoakdWithin(t, time.Minute, bin, "run", "--config", path, "--out", out)
			want := fmt.Sprintf("operations.rest-get.data.id.csv: cannot read the CSV file: %s is not a regular file (%s)", file, kind)
			if code != 2 || !strings.Contains(stderr, want) {
				t.Errorf("soakd run with csv %s: exit %d, want 2 and %q\n%s", file, code, want, stderr)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a refused run left a run directory (%v)", err)
			}
		}
		// The daemon reads its config the same way.
		cfg := serveConfig(t, t.TempDir(), "operations:\n  rest-get:\n    rest: {method: GET, path: \"/api/donuts/{{id}}\"}\n    data:\n      id: {csv: /dev/zero, column: id}\n")
		_, stderr, code := runSoakdWithin(t, time.Minute, bin, "serve", "--config", cfg)
		if code != 2 || !strings.Contains(stderr, "/dev/zero is not a regular file") {
			t.Errorf("soakd serve with csv /dev/zero: exit %d, want 2 naming the file\n%s", code, stderr)
		}
		// And soakd ab's sides: a FIFO no longer blocks in open(2).
		_, stderr, code = runSoakdWithin(t, time.Minute, bin, "ab", "--new", fifo, "--out", filepath.Join(dir, "ab"))
		if code != 2 || !strings.Contains(stderr, fifo+" is not a regular file (a FIFO)") {
			t.Errorf("soakd ab --new FIFO: exit %d, want 2 naming the FIFO\n%s", code, stderr)
		}
	})

	t.Run("NaN in the config", func(t *testing.T) {
		for key, doc := range map[string]string{
			"compare.gc_increase_points": "compare:\n  gc_increase_points: .inf\n",
			"kpis.cpu_increase_points":   "kpis:\n  cpu_increase_points: .nan\n",
		} {
			path, out := writeRunConfig(t, doc)
			_, stderr, code := runSoakd(t, bin, "run", "--config", path, "--out", out)
			if code != 2 || !strings.Contains(stderr, key+": must be a finite number") {
				t.Errorf("%s non-finite: exit %d, want 2 naming the key\n%s", key, code, stderr)
			}
			// Refused before anything runs: no report.json left "running".
			if _, err := os.Stat(filepath.Join(out, "report.json")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s non-finite: report.json exists (%v)", key, err)
			}
		}
	})

	t.Run("redirecting metrics", func(t *testing.T) {
		sink := newRecorder(t)
		redir := newRedirector(t, sink.srv.URL)
		out, stderr, code := hostileRun(t, bin, hostileRunProfile+attachSection(srv, pid, redir.srv.URL+"/metrics", "", ""))
		noRequests(t, "metrics_url", sink)
		if len(redir.requests()) == 0 {
			t.Errorf("metrics_url was never scraped (exit %d):\n%s", code, stderr)
		}
		// The run goes on on the OS's figures; the runtime's are not
		// measured, and say the scrape was redirected, and where.
		rep, raw := readExternalReport(t, out)
		if rep.Status != "complete" || rep.Target == nil {
			t.Fatalf("status %q (error %q), want complete\n%.3000s", rep.Status, rep.Error, raw)
		}
		why := "redirected to " + sink.srv.URL + "/metrics: soakd follows no redirect"
		for _, f := range rep.Target.Figures {
			if f.Name == "heap_live_bytes" && (f.Measured || !strings.Contains(f.Reason, why)) {
				t.Errorf("heap_live_bytes from a redirecting metrics_url: %+v, want not measured because %q", f, why)
			}
		}
	})

	t.Run("redirecting pprof", func(t *testing.T) {
		sink := newRecorder(t)
		redir := newRedirector(t, sink.srv.URL)
		out, stderr, code := hostileRun(t, bin, hostileRunProfile+attachSection(srv, pid, srv.url("/metrics"), redir.srv.URL+"/debug/pprof/", ""))
		noRequests(t, "pprof_url", sink)
		if len(redir.requests()) == 0 {
			t.Errorf("pprof_url was never fetched (exit %d):\n%s", code, stderr)
		}
		// No profile is written, and the log and the report's notes say why.
		rep, raw := readExternalReport(t, out)
		if rep.Status != "complete" {
			t.Errorf("status %q (error %q), want complete\n%.3000s", rep.Status, rep.Error, raw)
		}
		if !strings.Contains(string(raw), "profile capture(s) not written") || !strings.Contains(string(raw), "soakd follows no redirect") {
			t.Errorf("report.json's notes do not say the captures failed and why\n%.3000s", raw)
		}
		if _, err := os.Stat(filepath.Join(out, "gql.heap-before.pb.gz")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a heap profile was written from a redirecting pprof_url (%v)", err)
		}
		if why := "/debug/pprof/heap redirected to " + sink.srv.URL + "/debug/pprof/heap: soakd follows no redirect"; !strings.Contains(stderr, why) {
			t.Errorf("the log does not say the pprof fetch was redirected (%q):\n%s", why, stderr)
		}
	})

	t.Run("redirecting ready_url", func(t *testing.T) {
		sink := newRecorder(t)
		redir := newRedirector(t, sink.srv.URL)
		out, stderr, code := hostileRun(t, bin, hostileRunProfile+attachSection(srv, pid, srv.url("/metrics"), "", "  ready_url: "+redir.srv.URL+"/healthz\n  ready_timeout: 1s\n"))
		noRequests(t, "ready_url", sink)
		// Not ready: the run aborts before any phase, saying what the URL answered.
		rep, raw := readExternalReport(t, out)
		want := fmt.Sprintf("did not answer %s/healthz within target.ready_timeout 1s (last: HTTP 302 Found to %q, which soakd does not follow)", redir.srv.URL, sink.srv.URL+"/healthz")
		if code != 3 || rep.Status != "aborted" || !strings.Contains(rep.Error, want) || len(rep.Phases) != 0 {
			t.Errorf("a redirecting ready_url: exit %d, status %q, error %q, %d phases; want 3, aborted, %q and none\n%.2000s", code, rep.Status, rep.Error, len(rep.Phases), want, raw)
		}
		if len(redir.requests()) == 0 || strings.Contains(stderr, "driver started") {
			t.Errorf("ready_url asked %d times; a driver started: %v", len(redir.requests()), strings.Contains(stderr, "driver started"))
		}
	})

	t.Run("redirecting websocket", func(t *testing.T) {
		const secret = "hostile-secret-4d1f"
		t.Setenv("SOAKD_HOSTILE_KEY", secret)
		sink := newRecorder(t)
		redir := newRedirector(t, sink.srv.URL)
		cfg := strings.Replace(hostileRunProfile, "          - {operation: graphql-query, users: 2, iterations: 400}\n",
			"          - {operation: graphql-mutation, users: 2, iterations: 400}\n        subscriptions: {clients: 2, per_client: 1, protocol: graphql-transport-ws, drain: 1s}\n", 1) +
			"operations:\n  donut-updates:\n    subscription:\n      document: \"subscription OnDonutUpdated($id: ID!) { onDonutUpdated(id: $id) { id name flavor } }\"\n" +
			"      variables: {id: \"{{writer_id}}\"}\n      raised_by: graphql-mutation\n      match: data.onDonutUpdated.name\n    headers_env: {X-Api-Key: SOAKD_HOSTILE_KEY}\n" +
			attachSection(srv, pid, srv.url("/metrics"), "", "  graphql_ws_url: ws"+strings.TrimPrefix(redir.srv.URL, "http")+"/graphql\n")
		out, stderr, code := hostileRun(t, bin, cfg)
		noRequests(t, "graphql_ws_url", sink)
		// The secret went where the config said, and no further.
		got := redir.requests()
		if len(got) == 0 || got[0].Header.Get("X-Api-Key") != secret {
			t.Errorf("the websocket URL got %d upgrade requests, the first without the headers_env secret: the row proves nothing", len(got))
		}
		rep, raw := readExternalReport(t, out)
		why := "redirected to " + sink.srv.URL + "/graphql: soakd follows no redirect"
		if code != 3 || rep.Status != "aborted" || !strings.Contains(rep.Error, why) {
			t.Errorf("a redirecting websocket: exit %d, status %q, error %q; want 3, aborted and %q", code, rep.Status, rep.Error, why)
		}
		if strings.Contains(stderr, secret) || strings.Contains(string(raw), secret) {
			t.Errorf("the headers_env secret is in the log or report.json")
		}
	})

	t.Run("hanging pprof", func(t *testing.T) {
		hang := newHangingServer(t)
		long := strings.Replace(hostileRunProfile, "users: 2, iterations: 400", "users: 2, iterations: 100000", 1)
		path, out := writeRunConfig(t, long+attachSection(srv, pid, srv.url("/metrics"), hang.url("/debug/pprof/"), ""))
		cmd, stderr := startRun(t, bin, path, out)
		_, started, log := awaitTargetAndPhase(stderr, "target opened", "gql")
		if !started {
			_ = cmd.Wait()
			t.Fatalf("the phase never started:\n%s", log)
		}
		var rest strings.Builder
		copied := make(chan struct{})
		go func() { _, _ = io.Copy(&rest, stderr); close(copied) }()
		time.Sleep(500 * time.Millisecond) // mid-phase
		atSignal := hang.accepted.Load()
		if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		<-copied
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		// The heap profile before the phase was asked for, and given up
		// on (the phase started); after the signal, nothing more.
		if atSignal == 0 {
			t.Errorf("the hanging pprof_url was never asked:\n%s", log)
		}
		if n := hang.accepted.Load(); n != atSignal {
			t.Errorf("the hanging pprof_url got %d connections after SIGINT (%d before): a capture started after the run was stopped\n%s%s", n-atSignal, atSignal, log, rest.String())
		}
		rep, raw := readExternalReport(t, out)
		if code != 3 || rep.Status != "aborted" {
			t.Errorf("SIGINT with a hanging pprof_url: exit %d, status %q; want 3 and aborted\n%.2000s", code, rep.Status, raw)
		}
	})

	t.Run("endless follow", func(t *testing.T) {
		var items strings.Builder
		items.WriteString(`{"data":[`)
		for i := range 2000 {
			if i > 0 {
				items.WriteString(",")
			}
			fmt.Fprintf(&items, `{"id":%d}`, i+1)
		}
		items.WriteString("]}")
		list := []byte(items.String())
		var calls atomic.Int64
		lists := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(list)
		}))
		t.Cleanup(lists.Close)
		cfg := `
sampler:
  interval: 100ms
default_profile: chatty
operations:
  endless:
    rest:
      method: GET
      path: /list
      follow:
        - {path: "/items/{id}", from: 0, id_field: id}
        - {path: "/items/{id}", from: 1, id_field: id}
profiles:
  chatty:
    description: a chatty client whose followed lists multiply
    settle: 100ms
    trim_head: 100ms
    trim_tail: 100ms
    request_timeout: 1m
    seed: 7
    compare: {rest: follow, graphql: gql}
    phases:
      - name: follow
        arm: rest
        users: [{operation: endless, users: 1, iterations: 2}]
      - name: gql
        arm: graphql
        users: [{operation: graphql-query, users: 1, iterations: 50}]
` + fmt.Sprintf("target:\n  kind: attach\n  pid: %d\n  graphql_url: %s\n  rest_url: %s\n  metrics_url: %s\n  runtime: go\n", pid, srv.url("/graphql"), lists.URL, srv.url("/metrics"))
		out, stderr, code := hostileRun(t, bin, cfg)
		raw, err := os.ReadFile(filepath.Join(out, "report.json"))
		if err != nil {
			t.Fatalf("no report.json (exit %d): %v\n%s", code, err, stderr)
		}
		var rep struct {
			Status string
			Phases []struct {
				Name     string
				Requests int64
				Errors   int64
				Classes  map[string]int64    `json:"errors_by_class"`
				Examples map[string][]string `json:"error_examples"`
			}
		}
		if err := json.Unmarshal(raw, &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Status != "complete" || len(rep.Phases) != 2 {
			t.Fatalf("status %q, %d phases; want complete and both phases\n%.3000s", rep.Status, len(rep.Phases), raw)
		}
		// Each request made the cap's calls and failed as follow_limit.
		p := rep.Phases[0]
		if p.Name != "follow" || p.Requests != 2 || p.Errors != 2 || p.Classes["follow_limit"] != 2 ||
			len(p.Examples["follow_limit"]) == 0 || !strings.Contains(p.Examples["follow_limit"][0], "rest.max_follow_calls (10000)") {
			t.Errorf("phase %s: %d requests, %d errors %v %v; want 2 requests failed as follow_limit", p.Name, p.Requests, p.Errors, p.Classes, p.Examples)
		}
		if n := calls.Load(); n > 2*(1+10000) {
			t.Errorf("the list server got %d calls for 2 requests, over 2 × (1 + 10,000)", n)
		}
	})
}
