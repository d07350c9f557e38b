package target

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/childlog"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/guard"
	"github.com/soakd/soakd/internal/proctree"
)

// Files a command target's output goes to, in the run directory.
const (
	TargetStdoutFile = "target.stdout.log"
	TargetStderrFile = "target.stderr.log"
)

// maxTargetLog bounds each of a command target's log files: the first this
// many bytes are kept, and the number of bytes dropped after them is noted
// at the end.
const maxTargetLog = 16 << 20

// readyPoll is how often ready_url is tried while a command target starts.
const readyPoll = 100 * time.Millisecond

// commandProc is a target process soakd started (target.kind command, or
// the built-in target run as `soakd target`): it runs in its own process
// group, dies with soakd (Pdeathsig), and its output is kept in bounded log
// files.
type commandProc struct {
	cmd *exec.Cmd
	// what names the process in messages: "the target command /usr/bin/x".
	what   string
	log    *zap.Logger
	stderr *childlog.Tail // the end of its standard error, quoted when it dies
	files  []*boundedFile
	// exited is closed once Wait has returned (and ProcessState is set).
	exited chan struct{}
	// stopping is set when soakd stops it: its exit is then no failure.
	stopping atomic.Bool
	// graceKey names the setting of the stop grace in messages.
	graceKey string
	// guarded is set when the process is `soakd guard`, which ends its
	// tree itself within the same grace: it gets a little longer.
	guarded bool
	// record is the guard's record file (guard.Write), removed once the
	// process is stopped; "" when none was written.
	record string
}

// startError is a process that could not be started at all.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// procSpec is a process for startProcess to start.
type procSpec struct {
	argv []string
	env  []string // its whole environment
	dir  string
	// what names it in messages ("the target command /usr/bin/x").
	what string
	// logDir receives TargetStdoutFile and TargetStderrFile.
	logDir string
	// stdout and stderr, when set, also see its output (after the files).
	stdout, stderr io.Writer
	// stdin, when set, is its standard input.
	stdin io.Reader
	// logsOptional starts it even when its log files cannot be created
	// (a read-only data_dir): its output is then not kept.
	logsOptional bool
	// deathSignal is what the kernel sends it when soakd dies: SIGKILL
	// when unset; the guard gets SIGTERM, to end its tree.
	deathSignal syscall.Signal
}

// startProcess starts spec.argv in its own process group, its output kept
// in spec.logDir, and returns at once; a goroutine waits for it (exited).
func startProcess(spec procSpec, log *zap.Logger) (*commandProc, error) {
	p := &commandProc{what: spec.what, log: log, stderr: &childlog.Tail{Max: 4096}, exited: make(chan struct{})}
	out, err := newBoundedFile(filepath.Join(spec.logDir, TargetStdoutFile), maxTargetLog)
	var errf *boundedFile
	if err == nil {
		if errf, err = newBoundedFile(filepath.Join(spec.logDir, TargetStderrFile), maxTargetLog); err != nil {
			out.Close()
		}
	}
	switch {
	case err == nil:
		p.files = []*boundedFile{out, errf}
	case spec.logsOptional:
		log.Warn("the target's output is not kept", zap.Error(err))
	default:
		return nil, err
	}
	stdout, stderr := []io.Writer{}, []io.Writer{p.stderr}
	if p.files != nil {
		stdout, stderr = append(stdout, out), append(stderr, errf)
	}
	if spec.stdout != nil {
		stdout = append(stdout, spec.stdout)
	}
	if spec.stderr != nil {
		stderr = append(stderr, spec.stderr)
	}
	cmd := exec.Command(spec.argv[0], spec.argv[1:]...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	cmd.Stdin = spec.stdin
	cmd.Stdout, cmd.Stderr = io.MultiWriter(stdout...), io.MultiWriter(stderr...)
	// Output still held open by a grandchild must not hold Wait forever.
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group: a terminal's Ctrl-C reaches only soakd,
		// which then stops the target in order (and the whole group).
		Setpgid: true,
		// If soakd dies, the target must not run on unattended.
		Pdeathsig: cmp.Or(spec.deathSignal, syscall.SIGKILL),
	}
	if err := cmd.Start(); err != nil {
		p.closeFiles()
		return nil, &startError{err: fmt.Errorf("cannot start %s: %w", spec.argv[0], err)}
	}
	p.cmd = cmd
	go func() {
		_ = cmd.Wait() // ProcessState says how it ended
		p.closeFiles()
		close(p.exited)
	}()
	return p, nil
}

// startCommand starts tc.Argv with tc.Env added to soakd's environment (less
// secrets) in tc.Dir, its output in logDir, and waits until tc.ReadyURL
// answers HTTP 200 within tc.ReadyTimeout. A process that exits first, or
// does not get ready in time, is stopped and the error says why, quoting
// its standard error.
func startCommand(ctx context.Context, tc config.TargetConfig, exe, logDir, recordDir string, secrets []string, log *zap.Logger) (*commandProc, error) {
	if len(tc.Argv) == 0 {
		return nil, exitcode.Usagef("target.argv: no command to start")
	}
	env := commandEnv(os.Environ(), tc.Env, secrets)
	if err := checkExecutable(tc.Argv[0], tc.Dir, env); err != nil {
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("target.argv: %w", err))
	}
	spec := procSpec{argv: tc.Argv, env: env, dir: tc.Dir, what: "the target command " + tc.Argv[0], logDir: logDir}
	if exe != "" {
		// Under `soakd guard`, so that no process of its tree outlives soakd.
		spec.argv, spec.deathSignal = guard.Args(exe, os.Getpid(), tc.StopGrace, tc.Argv), syscall.SIGTERM
	}
	p, err := startProcess(spec, log)
	if _, ok := errors.AsType[*startError](err); ok {
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("target.argv: %w", err))
	} else if err != nil {
		return nil, err
	}
	p.graceKey, p.guarded = "target.stop_grace ", exe != ""
	if p.guarded && recordDir != "" {
		if p.record, err = guard.Write(recordDir, p.pid(), tc.Argv); err != nil {
			log.Warn("the target is not recorded: a soakd that dies cannot be cleaned up after by the next one", zap.Error(err))
		}
	}
	log.Info("target command started", zap.Strings("argv", tc.Argv), zap.Int("pid", p.pid()), zap.Bool("guarded", p.guarded),
		zap.String("stdout", p.logPath(0)), zap.String("stderr", p.logPath(1)))
	if err := p.awaitReady(ctx, tc.ReadyURL, tc.ReadyTimeout); err != nil {
		if serr := p.stop(context.WithoutCancel(ctx), tc.StopGrace); serr != nil {
			log.Warn("target stop", zap.Error(serr))
		}
		return nil, err
	}
	log.Info("target command ready", zap.String("ready_url", tc.ReadyURL))
	return p, nil
}

// checkExecutable fails when argv0 names no executable file: a path (with a
// slash) is taken from dir, a bare name is looked for in env's PATH. The
// guard would otherwise start and fail to exec it.
func checkExecutable(argv0, dir string, env []string) error {
	path := argv0
	if !strings.Contains(argv0, "/") {
		search := ""
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				search = v
			}
		}
		for _, d := range filepath.SplitList(search) {
			if d == "" {
				d = "."
			}
			if c := filepath.Join(d, argv0); isExecutable(c, dir) {
				return nil
			}
		}
		return fmt.Errorf("cannot start %s: %w", argv0, exec.ErrNotFound)
	}
	if !isExecutable(path, dir) {
		return fmt.Errorf("cannot start %s: not an executable file", argv0)
	}
	return nil
}

// isExecutable reports whether path (relative to dir when not absolute) is
// an executable regular file.
func isExecutable(path, dir string) bool {
	if !filepath.IsAbs(path) && dir != "" {
		path = filepath.Join(dir, path)
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// commandEnv is base less the variables named in secrets, with add set on
// top (in name order, replacing a variable of the same name).
func commandEnv(base []string, add map[string]string, secrets []string) []string {
	env := slices.DeleteFunc(slices.Clone(base), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		_, replaced := add[name]
		return replaced || slices.Contains(secrets, name)
	})
	for _, k := range slices.Sorted(maps.Keys(add)) {
		env = append(env, k+"="+add[k])
	}
	return env
}

// awaitReady polls url until it answers HTTP 200, the process exits, the
// timeout passes or ctx ends.
func (p *commandProc) awaitReady(ctx context.Context, url string, timeout time.Duration) error {
	return awaitAnswer(ctx, url, timeout, func() error {
		select {
		case <-p.exited:
			return p.exitError()
		default:
			return nil
		}
	}, fmt.Sprintf("%s (pid %d)", p.what, p.pid()), p.stderr.Context)
}

// awaitAnswer polls url until it answers HTTP 200 (a URL of scheme tcp is
// ready once a connection to its host:port is accepted), gone returns an
// error (the process exited), timeout passes or ctx ends. what names the
// process in messages; tail, when set, adds the end of its standard error.
// Redirects are not followed: a ready URL answering 3xx is not ready.
func awaitAnswer(ctx context.Context, url string, timeout time.Duration, gone func() error, what string, tail func() string) error {
	// A redirect is not followed: a ready URL answering 3xx is not ready.
	client := &http.Client{Timeout: time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if tail == nil {
		tail = func() string { return "" }
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	last := "no answer yet"
	for {
		if ok, why, err := tryAnswer(ctx, client, url); err != nil {
			return err
		} else if ok {
			return nil
		} else {
			last = why
		}
		if err := gone(); err != nil {
			return fmt.Errorf("%s exited before %s answered: %w", what, url, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting for the target to get ready: %w", ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("%s did not answer %s within target.ready_timeout %s (last: %s)%s",
				what, url, timeout, last, tail())
		case <-tick.C:
		}
	}
}

// tryAnswer makes one readiness attempt: ok, or why not; err is a URL that
// can never answer.
func tryAnswer(ctx context.Context, client *http.Client, url string) (ok bool, why string, err error) {
	if hostport, isTCP := strings.CutPrefix(url, "tcp://"); isTCP {
		var d net.Dialer
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		c, err := d.DialContext(dctx, "tcp", hostport)
		if err != nil {
			return false, err.Error(), nil
		}
		c.Close()
		return true, "", nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, "", exitcode.With(exitcode.Usage, fmt.Errorf("target.ready_url: %w", err))
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err.Error(), nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return true, "", nil
	}
	if loc := resp.Header.Get("Location"); loc != "" && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// Where it points, bounded: soakd follows no redirect, and the
		// user fixes ready_url by pointing it there.
		return false, fmt.Sprintf("HTTP %s to %.200q, which soakd does not follow", resp.Status, loc), nil
	}
	return false, "HTTP " + resp.Status, nil
}

// logPath is the path of its log file i (0 stdout, 1 stderr), or "" when
// its output is not kept.
func (p *commandProc) logPath(i int) string {
	if i >= len(p.files) {
		return ""
	}
	return p.files[i].path
}

// pid is the process id.
func (p *commandProc) pid() int { return p.cmd.Process.Pid }

// exitStatus says how the process ended ("exit status 2", "signal:
// killed"), or "" while it runs.
func (p *commandProc) exitStatus() string {
	select {
	case <-p.exited:
		return p.cmd.ProcessState.String()
	default:
		return ""
	}
}

// exitError is the error of a process that exited: its status and the tail
// of its standard error.
func (p *commandProc) exitError() error {
	return fmt.Errorf("%s (pid %d) exited: %s%s", p.what, p.pid(), p.exitStatus(), p.stderr.Context())
}

// stop ends the process group: SIGTERM, grace to exit, then SIGKILL. It
// returns an error only when the process had to be killed or would not go.
func (p *commandProc) stop(ctx context.Context, grace time.Duration) error {
	p.stopping.Store(true)
	defer p.forget()
	pgid := p.pid()
	select {
	case <-p.exited:
		// What is left of its process group (a server under a wrapper
		// that died) goes too.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return nil
	default:
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if p.guarded {
		grace += 2 * time.Second // the guard's own SIGKILL comes first
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
		p.log.Info("target stopped", zap.String("process", p.what), zap.String("exit", p.exitStatus()))
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.exited:
		return fmt.Errorf("%s (pid %d) did not exit within %s%s of SIGTERM: killed", p.what, pgid, p.graceKey, grace)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit even after SIGKILL", p.what, pgid)
	}
}

func (p *commandProc) closeFiles() {
	for _, f := range p.files {
		if err := f.Close(); err != nil {
			p.log.Warn("target log", zap.Error(err))
		}
	}
}

// boundedFile keeps the first max bytes written to it in a file and counts
// the rest, noting the count at the end when it is closed.
type boundedFile struct {
	mu      sync.Mutex
	path    string
	f       *os.File
	max     int64
	written int64
	dropped int64
	closed  bool
}

func newBoundedFile(path string, max int64) (*boundedFile, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot keep the target's output: %w", err)
	}
	return &boundedFile{path: path, f: f, max: max}, nil
}

func (b *boundedFile) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return len(p), nil
	}
	keep := min(int64(len(p)), b.max-b.written)
	if keep > 0 {
		n, err := b.f.Write(p[:keep])
		b.written += int64(n)
		if err != nil {
			// A full disk must not stop the target: count the rest.
			b.dropped += int64(len(p) - n)
			return len(p), nil
		}
	}
	b.dropped += int64(len(p)) - max(keep, 0)
	return len(p), nil
}

// Close notes the bytes dropped, if any, and closes the file.
func (b *boundedFile) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	var err error
	if b.dropped > 0 {
		_, err = fmt.Fprintf(b.f, "\n[soakd: %d more bytes not kept: this log keeps the first %d bytes]\n", b.dropped, b.max)
	}
	return errors.Join(err, b.f.Close())
}

// mainPID is the process of argv: the guard's child when guarded (the
// guard's one child found in the process table), else the process itself.
func (p *commandProc) mainPID() int {
	if !p.guarded {
		return p.pid()
	}
	if tab, err := proctree.DefaultRoot.Snapshot(); err == nil {
		if kids := tab.Children(p.pid()); len(kids) > 0 {
			return kids[0]
		}
	}
	return p.pid()
}

// forget removes the guard's record, once its tree is ended.
func (p *commandProc) forget() {
	if p.record == "" {
		return
	}
	if err := os.Remove(p.record); err != nil && !errors.Is(err, os.ErrNotExist) {
		p.log.Warn("target record", zap.Error(err))
	}
}
