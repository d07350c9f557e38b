package testkit

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// ChromiumPath is the browser the CDP tests drive: Debian's chromium
// package, which CI installs.
const ChromiumPath = "/usr/bin/chromium"

// Chromium is a headless Chromium a test drives through the Chrome
// DevTools Protocol (CDP): one page, over one WebSocket. Its methods may
// be called from several goroutines; every wait is bounded by the
// context passed in, and by the browser's end.
type Chromium struct {
	conn   *websocket.Conn
	nextID atomic.Int64
	done   chan struct{} // closed when the reader has stopped

	mu      sync.Mutex
	pending map[int64]chan cdpReply // calls waiting for their reply, by id
	subs    map[*Events]struct{}
	console []string
	readErr error // why the reader stopped
}

// cdpMessage is anything the browser sends: a reply (ID set) or an
// event (Method set).
type cdpMessage struct {
	ID        int64           `json:"id"`
	SessionID string          `json:"sessionId"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *cdpError       `json:"error"`
}

type cdpError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    string `json:"data"`
}

type cdpReply struct {
	result json.RawMessage
	err    *cdpError
}

// Event is one CDP event: its method (such as "Page.loadEventFired"),
// its parameters, undecoded, and the session of the frame it comes from
// ("" for the page; see AttachFrame).
type Event struct {
	Method  string
	Params  json.RawMessage
	Session string
}

// StartChromium starts headless Chromium on about:blank with a remote
// debugging port the kernel picks (no port race with parallel tests),
// in a user data directory of its own, and connects to its page. extra
// are further flags, such as --window-size=1300,1000. The Page, Runtime
// and Log domains are enabled, so Console collects what the page logs
// from the start. The browser is stopped (SIGTERM, then its whole
// process group killed: the renderers too) and waited for when the test
// ends; its stderr is printed when the test failed.
//
// Without /usr/bin/chromium the test skips, except under CI=true, where
// a missing browser fails (as LookTool does for Prometheus).
func StartChromium(t testing.TB, extra ...string) *Chromium {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err != nil {
		msg := ChromiumPath + " not found: install Debian's chromium package (apt-get install -y chromium) to run this test"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir() // removed after the cleanup below, which runs first
	// --log-level=3: only its fatal errors on stderr, not the D-Bus
	// ones of a machine without a session bus; what the page logs comes
	// through the protocol (Console).
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0", "--user-data-dir=" + dir,
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--log-level=3"}, extra...)
	cmd := exec.Command(ChromiumPath, append(args, "about:blank")...)
	// Its own process group, so the cleanup kills the renderers and the
	// zygote it forks along with it, not only the browser process.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var log SyncBuilder
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.WaitDelay = 10 * time.Second // a process that left the group holds the pipe: Wait returns anyway
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start %s: %v", ChromiumPath, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	c := &Chromium{done: make(chan struct{}), pending: map[int64]chan cdpReply{}, subs: map[*Events]struct{}{}}
	t.Cleanup(func() {
		if c.conn != nil {
			_ = c.conn.CloseNow()
			<-c.done
		}
		// SIGTERM: the browser shuts down and its renderers and zygote
		// follow; then SIGKILL for the group, for what is left of it.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if t.Failed() {
			t.Logf("chromium's output:\n%s", log.String())
		}
	})

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("chromium: "+format+"\n%s", append(a, log.String())...)
	}
	// The browser writes the port it listens on to DevToolsActivePort
	// once it does: "PORT\n/devtools/browser/ID".
	var port int
	for port == 0 {
		if b, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort")); err == nil {
			if first, _, ok := strings.Cut(string(b), "\n"); ok {
				port, _ = strconv.Atoi(first)
			}
		}
		if port == 0 && !pause(ctx, exited, 50*time.Millisecond) {
			fail("no DevToolsActivePort: %v", orWhy(ctx.Err(), "the browser exited"))
		}
	}
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	var ws string
	for ws == "" {
		var err error
		if ws, err = pageTarget(ctx, base); err != nil {
			fail("%v", err)
		}
		if ws == "" && !pause(ctx, exited, 50*time.Millisecond) {
			fail("no page target at %s: %v", base, orWhy(ctx.Err(), "the browser exited"))
		}
	}
	conn, _, err := websocket.Dial(ctx, ws, nil)
	if err != nil {
		fail("%v", err)
	}
	conn.SetReadLimit(-1) // a screenshot is one message of megabytes
	c.conn = conn
	go c.read()
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		if err := c.Call(ctx, m, nil, nil); err != nil {
			fail("%v", err)
		}
	}
	return c
}

// orWhy is err's text, or why if err is nil.
func orWhy(err error, why string) string {
	if err != nil {
		return err.Error()
	}
	return why
}

// pause waits d, and says false if ctx ended or the process exited
// meanwhile (putting its error back for the cleanup).
func pause(ctx context.Context, exited chan error, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case err := <-exited:
		exited <- err
		return false
	case <-time.After(d):
		return true
	}
}

// pageTarget is the WebSocket URL of the browser's first page, "" while
// it has none (it lists about:blank a moment after it listens).
func pageTarget(ctx context.Context, base string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/json/list", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", nil // not serving yet: the caller polls
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return "", nil
	}
	var targets []struct {
		Type                 string `json:"type"`
		WebSocketDebuggerURL string `json:"webSocketDebuggerUrl"`
	}
	if err := json.Unmarshal(b, &targets); err != nil {
		return "", fmt.Errorf("%s/json/list: %w: %.200s", base, err, b)
	}
	for _, tg := range targets {
		if tg.Type == "page" && tg.WebSocketDebuggerURL != "" {
			return tg.WebSocketDebuggerURL, nil
		}
	}
	return "", nil
}

// read is the one reader of the connection: it hands replies to their
// calls and events to the subscriptions (and the console's to Console),
// until the connection closes.
func (c *Chromium) read() {
	defer close(c.done)
	for {
		// No deadline: the cleanup's CloseNow ends this read.
		_, b, err := c.conn.Read(context.Background())
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			c.mu.Unlock()
			return
		}
		var m cdpMessage
		if err := json.Unmarshal(b, &m); err != nil {
			continue // not CDP: nothing waits for it
		}
		c.mu.Lock()
		if m.Method == "" {
			if ch, ok := c.pending[m.ID]; ok {
				delete(c.pending, m.ID)
				ch <- cdpReply{result: m.Result, err: m.Error} // buffered
			}
		} else {
			if line := consoleLine(m.Method, m.Params); line != "" {
				if m.SessionID != "" {
					line = "frame " + line
				}
				c.console = append(c.console, line)
			}
			for e := range c.subs {
				e.put(Event{Method: m.Method, Params: m.Params, Session: m.SessionID})
			}
		}
		c.mu.Unlock()
	}
}

// consoleLine words a console call, an uncaught exception or a log entry
// as one line; "" for any other event.
func consoleLine(method string, params json.RawMessage) string {
	switch method {
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string         `json:"type"`
			Args []remoteObject `json:"args"`
		}
		_ = json.Unmarshal(params, &p)
		var words []string
		for _, a := range p.Args {
			words = append(words, a.text())
		}
		return "console." + p.Type + ": " + strings.Join(words, " ")
	case "Runtime.exceptionThrown":
		var p struct {
			ExceptionDetails exceptionDetails `json:"exceptionDetails"`
		}
		_ = json.Unmarshal(params, &p)
		return "exception: " + p.ExceptionDetails.text()
	case "Log.entryAdded":
		var p struct {
			Entry struct {
				Source, Level, Text, URL string
			} `json:"entry"`
		}
		_ = json.Unmarshal(params, &p)
		return fmt.Sprintf("log %s %s: %s %s", p.Entry.Level, p.Entry.Source, p.Entry.Text, p.Entry.URL)
	}
	return ""
}

// remoteObject is the part of a CDP Runtime.RemoteObject a test reads.
type remoteObject struct {
	Type        string          `json:"type"`
	Subtype     string          `json:"subtype"`
	Value       json.RawMessage `json:"value"`
	Description string          `json:"description"`
}

func (o remoteObject) text() string {
	var s string
	if json.Unmarshal(o.Value, &s) == nil {
		return s
	}
	if len(o.Value) > 0 {
		return string(o.Value)
	}
	return o.Description
}

// exceptionDetails is the part of a CDP Runtime.ExceptionDetails a test
// reads.
type exceptionDetails struct {
	Text       string        `json:"text"`
	URL        string        `json:"url"`
	LineNumber int           `json:"lineNumber"`
	Exception  *remoteObject `json:"exception"`
}

func (d exceptionDetails) text() string {
	s := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		s += " " + d.Exception.Description
	}
	if d.URL != "" {
		s += fmt.Sprintf(" (%s:%d)", d.URL, d.LineNumber+1)
	}
	return s
}

// Call sends method with params (nil for none) to the page and decodes
// the reply's result into result (nil to drop it). An error reply is an
// error naming the method.
func (c *Chromium) Call(ctx context.Context, method string, params, result any) error {
	return c.call(ctx, "", method, params, result)
}

// call is Call in session ("" for the page's own).
func (c *Chromium) call(ctx context.Context, session, method string, params, result any) error {
	id := c.nextID.Add(1)
	ch := make(chan cdpReply, 1)
	c.mu.Lock()
	if c.readErr != nil {
		err := c.readErr
		c.mu.Unlock()
		return fmt.Errorf("cdp %s: the connection is closed: %w", method, err)
	}
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	b, err := json.Marshal(struct {
		ID        int64  `json:"id"`
		SessionID string `json:"sessionId,omitempty"`
		Method    string `json:"method"`
		Params    any    `json:"params,omitempty"`
	}{id, session, method, params})
	if err != nil {
		return fmt.Errorf("cdp %s: %w", method, err)
	}
	if err := c.conn.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("cdp %s: %w", method, err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return fmt.Errorf("cdp %s: %s (%d) %s", method, r.err.Message, r.err.Code, r.err.Data)
		}
		if result != nil {
			if err := json.Unmarshal(r.result, result); err != nil {
				return fmt.Errorf("cdp %s: the reply: %w", method, err)
			}
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cdp %s: %w", method, ctx.Err())
	case <-c.done:
		return fmt.Errorf("cdp %s: the connection closed before the reply", method)
	}
}

// Events is a subscription to some of the browser's events, queued as
// they arrive (never dropped, never blocking the reader) until Next
// takes them. Close it when done.
type Events struct {
	c       *Chromium
	methods []string
	mu      sync.Mutex
	queue   []Event
	ready   chan struct{} // holds a token while queue may be non-empty
}

// Subscribe queues every later event of the methods given (all events
// if none). A domain's events only come once it is enabled: Page,
// Runtime and Log are.
func (c *Chromium) Subscribe(methods ...string) *Events {
	e := &Events{c: c, methods: methods, ready: make(chan struct{}, 1)}
	c.mu.Lock()
	c.subs[e] = struct{}{}
	c.mu.Unlock()
	return e
}

// put queues ev if the subscription wants it; called by the reader.
func (e *Events) put(ev Event) {
	if len(e.methods) > 0 && !slices.Contains(e.methods, ev.Method) {
		return
	}
	e.mu.Lock()
	e.queue = append(e.queue, ev)
	e.mu.Unlock()
	select {
	case e.ready <- struct{}{}:
	default:
	}
}

// Next takes the oldest event queued, waiting for one until ctx ends or
// the connection closes.
func (e *Events) Next(ctx context.Context) (Event, error) {
	for {
		e.mu.Lock()
		if len(e.queue) > 0 {
			ev := e.queue[0]
			e.queue = e.queue[1:]
			e.mu.Unlock()
			return ev, nil
		}
		e.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			return Event{}, fmt.Errorf("waiting for %v: %w", e.methods, ctx.Err())
		case <-e.c.done:
			return Event{}, fmt.Errorf("waiting for %v: the connection closed", e.methods)
		}
	}
}

// Close ends the subscription.
func (e *Events) Close() {
	e.c.mu.Lock()
	delete(e.c.subs, e)
	e.c.mu.Unlock()
}

// Console is every line the page logged so far: console calls
// (console.TYPE: ...), uncaught exceptions (exception: ...) and the
// browser's log entries (log LEVEL SOURCE: ..., such as a resource that
// failed to load or a CSP violation); an attached frame's are prefixed
// "frame ".
func (c *Chromium) Console() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.console)
}

// Navigate loads url and waits for its load event. A URL that differs
// from the page's only in its fragment is a navigation within the
// document: there is no load to wait for.
func (c *Chromium) Navigate(ctx context.Context, url string) error {
	loads := c.Subscribe("Page.loadEventFired")
	defer loads.Close()
	var r struct {
		LoaderID  string `json:"loaderId"`
		ErrorText string `json:"errorText"`
	}
	if err := c.Call(ctx, "Page.navigate", map[string]any{"url": url}, &r); err != nil {
		return err
	}
	if r.ErrorText != "" {
		return fmt.Errorf("navigating to %s: %s", url, r.ErrorText)
	}
	if r.LoaderID == "" {
		return nil
	}
	if _, err := loads.Next(ctx); err != nil {
		return fmt.Errorf("navigating to %s: %w", url, err)
	}
	return nil
}

// Eval evaluates js in the page (awaiting it if it is a promise) and
// returns its value as JSON ("null" for undefined or a value JSON cannot
// hold). An exception is an error.
func (c *Chromium) Eval(ctx context.Context, js string) (json.RawMessage, error) {
	return c.eval(ctx, "", js)
}

// eval is Eval in session ("" for the page).
func (c *Chromium) eval(ctx context.Context, session, js string) (json.RawMessage, error) {
	var r struct {
		Result           remoteObject      `json:"result"`
		ExceptionDetails *exceptionDetails `json:"exceptionDetails"`
	}
	if err := c.call(ctx, session, "Runtime.evaluate", map[string]any{"expression": js, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return nil, err
	}
	if r.ExceptionDetails != nil {
		return nil, fmt.Errorf("evaluating %.80q: %s", js, r.ExceptionDetails.text())
	}
	if len(r.Result.Value) == 0 {
		return json.RawMessage("null"), nil
	}
	return r.Result.Value, nil
}

// EvalInto evaluates js as Eval does and decodes its value into v.
func (c *Chromium) EvalInto(ctx context.Context, js string, v any) error {
	return evalInto(ctx, c.Eval, js, v)
}

func evalInto(ctx context.Context, eval func(context.Context, string) (json.RawMessage, error), js string, v any) error {
	b, err := eval(ctx, js)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("evaluating %.80q: %w: %.200s", js, err, b)
	}
	return nil
}

// WaitTrue evaluates js every 50 ms until it is true, for the page's
// asynchronous work (a fetch, a render) to finish without a fixed
// sleep. An exception ends the wait as an error, as does ctx's end.
func (c *Chromium) WaitTrue(ctx context.Context, js string) error {
	return waitTrue(ctx, c.Eval, js)
}

func waitTrue(ctx context.Context, eval func(context.Context, string) (json.RawMessage, error), js string) error {
	for {
		var ok bool
		if err := evalInto(ctx, eval, "!!("+js+")", &ok); err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", js, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// keys are the keys PressKey knows, as Input.dispatchKeyEvent wants
// them: the DOM key and code, the Windows virtual key code Chromium's
// default handlers (focus moves, link activation) read, and the text a
// key types.
var keys = map[string]struct {
	key, code, text string
	vk              int
}{
	"Tab":        {"Tab", "Tab", "", 9},
	"Enter":      {"Enter", "Enter", "\r", 13},
	"Escape":     {"Escape", "Escape", "", 27},
	"Space":      {" ", "Space", " ", 32},
	" ":          {" ", "Space", " ", 32},
	"ArrowUp":    {"ArrowUp", "ArrowUp", "", 38},
	"ArrowDown":  {"ArrowDown", "ArrowDown", "", 40},
	"ArrowLeft":  {"ArrowLeft", "ArrowLeft", "", 37},
	"ArrowRight": {"ArrowRight", "ArrowRight", "", 39},
	"Home":       {"Home", "Home", "", 36},
	"End":        {"End", "End", "", 35},
}

// PressKey presses and releases key (Tab, Enter, Escape, Space,
// ArrowDown, ArrowUp, ArrowLeft, ArrowRight, Home, End), with Shift held
// if shift, as a keyboard would: the page's handlers and the browser's
// default actions both see it.
func (c *Chromium) PressKey(ctx context.Context, key string, shift bool) error {
	k, ok := keys[key]
	if !ok {
		return fmt.Errorf("PressKey: unknown key %q", key)
	}
	ev := map[string]any{"key": k.key, "code": k.code, "windowsVirtualKeyCode": k.vk, "nativeVirtualKeyCode": k.vk}
	if shift {
		ev["modifiers"] = 8
	}
	// A key that types text is a keyDown (which also sends the char
	// event); one that does not is a rawKeyDown, as puppeteer sends them.
	down := map[string]any{"type": "rawKeyDown"}
	if k.text != "" {
		down = map[string]any{"type": "keyDown", "text": k.text, "unmodifiedText": k.text}
	}
	for k, v := range ev {
		down[k] = v
	}
	if err := c.Call(ctx, "Input.dispatchKeyEvent", down, nil); err != nil {
		return err
	}
	up := map[string]any{"type": "keyUp"}
	for k, v := range ev {
		up[k] = v
	}
	return c.Call(ctx, "Input.dispatchKeyEvent", up, nil)
}

// Screenshot saves the page as drawn (its viewport, out-of-process
// frames included) as a PNG file at path.
func (c *Chromium) Screenshot(ctx context.Context, path string) error {
	b, err := c.ScreenshotPNG(ctx)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// ScreenshotPNG is the page as drawn (its viewport), a PNG image.
func (c *Chromium) ScreenshotPNG(ctx context.Context) ([]byte, error) {
	var r struct {
		Data string `json:"data"`
	}
	if err := c.Call(ctx, "Page.captureScreenshot", map[string]any{"format": "png"}, &r); err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		return nil, fmt.Errorf("the screenshot: %w", err)
	}
	if len(b) == 0 {
		return nil, errors.New("the screenshot is empty")
	}
	return b, nil
}

// Frame is a frame of the page the browser runs in a process of its own
// (an out-of-process iframe, such as a sandboxed one): the page's
// Runtime cannot reach into it, so it has a CDP session of its own.
type Frame struct {
	c       *Chromium
	session string
	// URL is the frame's URL when it was attached.
	URL string
}

// AttachFrame waits until the page has an out-of-process frame whose URL
// contains urlPart, and attaches to it. Polling Target.getTargets (not
// auto-attaching) leaves every other frame as it is.
func (c *Chromium) AttachFrame(ctx context.Context, urlPart string) (*Frame, error) {
	for {
		var r struct {
			TargetInfos []struct {
				TargetID string `json:"targetId"`
				Type     string `json:"type"`
				URL      string `json:"url"`
			} `json:"targetInfos"`
		}
		if err := c.Call(ctx, "Target.getTargets", nil, &r); err != nil {
			return nil, err
		}
		for _, ti := range r.TargetInfos {
			if ti.Type == "iframe" && strings.Contains(ti.URL, urlPart) {
				var a struct {
					SessionID string `json:"sessionId"`
				}
				// flatten: the session's messages share this connection,
				// told apart by their sessionId.
				if err := c.Call(ctx, "Target.attachToTarget", map[string]any{"targetId": ti.TargetID, "flatten": true}, &a); err != nil {
					return nil, err
				}
				f := &Frame{c: c, session: a.SessionID, URL: ti.URL}
				// Enabled, the frame's console reaches Console too
				// (what it logged before is replayed).
				for _, m := range []string{"Runtime.enable", "Log.enable"} {
					if err := f.Call(ctx, m, nil, nil); err != nil {
						return nil, err
					}
				}
				return f, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no frame of %q: %w", urlPart, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Call is Chromium.Call in the frame.
func (f *Frame) Call(ctx context.Context, method string, params, result any) error {
	return f.c.call(ctx, f.session, method, params, result)
}

// Eval is Chromium.Eval in the frame.
func (f *Frame) Eval(ctx context.Context, js string) (json.RawMessage, error) {
	return f.c.eval(ctx, f.session, js)
}

// EvalInto is Chromium.EvalInto in the frame.
func (f *Frame) EvalInto(ctx context.Context, js string, v any) error {
	return evalInto(ctx, f.Eval, js, v)
}

// WaitTrue is Chromium.WaitTrue in the frame.
func (f *Frame) WaitTrue(ctx context.Context, js string) error {
	return waitTrue(ctx, f.Eval, js)
}
