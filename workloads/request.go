package workloads

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// Error classes counted in results. HTTP statuses other than the one the
// operation expects (200 unless expect.status says otherwise) are counted
// as "http_<code>" (for example "http_500").
const (
	// ClassTimeout: no complete response within Phase.RequestTimeout.
	ClassTimeout = "timeout"
	// ClassConnectionRefused: nothing listens at the target (the server is down).
	ClassConnectionRefused = "connection_refused"
	// ClassConnectionReset: the server closed or reset the connection mid-request.
	ClassConnectionReset = "connection_reset"
	// ClassGraphQLError: a response carrying top-level GraphQL errors when
	// the operation expects none (expect.no_graphql_errors).
	ClassGraphQLError = "graphql_error"
	// ClassPayloadMismatch: a response without an expected JSON path or
	// value (expect.json, expect.present).
	ClassPayloadMismatch = "payload_mismatch"
	// ClassDecodeError: a response whose body is not JSON when the
	// operation checks JSON paths, or is over maxResponseBytes.
	ClassDecodeError = "decode_error"
	// ClassFollowLimit: a chatty request whose follow calls would exceed
	// rest.max_follow_calls.
	ClassFollowLimit = "follow_limit"
	// ClassOther: any other failure to send or read a request.
	ClassOther = "other"
	// ClassDropped is, in a ramping-rate phase's failure window only, an
	// arrival the driver did not send because MaxInFlight requests were
	// in flight; it is counted as dropped, not as a request, everywhere else.
	ClassDropped = "dropped"
)

const (
	// maxResponseBytes bounds how much of one response body the driver reads;
	// a larger body fails with decode_error. 16 MiB: seed 000's nested REST
	// answer at X = 250 (full resources, subtasks embedded) is over 1 MiB.
	maxResponseBytes = 16 << 20
	// maxExampleBytes bounds one error example message.
	maxExampleBytes = 300
	// maxValueBytes is the room reserved per variable written into a user's
	// value buffer (an int64 in decimal, or an event name's fixed tail).
	maxValueBytes = 20
)

// persistedNotFound is what an APQ server answers a hash it does not hold
// (Apollo's protocol: the error message PersistedQueryNotFound).
var persistedNotFound = []byte("PersistedQueryNotFound")

// user is one virtual user's prebuilt state. Only one goroutine at a time
// touches it -- the user's own (closed and ramping models) or the one holding
// its open-model slot -- so it sends one request at a time.
type user struct {
	index int         // global index in the phase (start order)
	op    *compiledOp // the operation every request sends
	group int         // index in Phase.Groups
	iters int         // requests to send; 0 sends until stopped
	rng   *rand.Rand

	writerID string // writers: "w<index>", their own object
	okWrites int64  // writers: successful writes, what subscribers must receive

	picks   []picker    // one per picker of the operation
	drawn   []int64     // this request's draws, by picker
	rows    []csvRow    // this request's CSV rows, by picker (a CSV file's)
	vals    [][]byte    // this request's variable values, by index
	offs    []int       // scratch: value offsets in valBuf
	headers []header    // Baggage and the operation's; templated values refilled per request
	hdrIdx  []int       // indexes in headers of the templated values
	hdrOffs []int       // scratch: their offsets in hdrBuf
	wants   [][]byte    // this request's expected values, by expectation path
	found   []valueSpan // scratch of the JSON scan

	// Buffers reused by every request, grown on the first: the values, the
	// URL, the body sent, header values, expected values and the body
	// received. An idle user has none.
	valBuf, urlBuf, bodyBuf, hdrBuf, wantBuf, resp []byte
	timer                                          *time.Timer

	// sending is the call do and follow hand to the sender: the sender
	// is an interface, so the address of a local call would escape and
	// cost a heap allocation (96 B) per request.
	sending call
}

// maxKeptBuffer is the largest response buffer a user keeps for its next request.
const maxKeptBuffer = 64 << 10

// call is one planned request. Its slices point into its user's buffers,
// valid until the user's next request.
type call struct {
	method    string
	url       []byte
	headers   []header
	body      []byte
	persisted bool // resend with the document on PersistedQueryNotFound
}

// newUser prebuilds everything about user index of the phase (slot says its
// group) that does not change between its requests; bag is the Baggage value.
func newUser(op *compiledOp, p Phase, bag string, index int, slot userSlot) *user {
	g := p.Groups[slot.group]
	u := &user{
		index: index,
		op:    op,
		group: slot.group,
		iters: g.Iterations,
		rng:   userRand(p.Seed, index),
		picks: make([]picker, len(op.pickers)),
		drawn: make([]int64, len(op.pickers)),
		rows:  make([]csvRow, len(op.pickers)),
		vals:  make([][]byte, op.nvars),
		offs:  make([]int, 2*op.nvars),
		wants: make([][]byte, len(op.expect.paths)),
		found: make([]valueSpan, len(op.expect.paths)),
	}
	for i, pd := range op.pickers {
		u.picks[i] = picker{lo: pd.lo, n: pd.n, random: pd.random, user: int64(index)}
	}
	if op.writes {
		u.writerID = writerID(index)
		u.vals[op.writerVar] = []byte(u.writerID)
	}
	u.headers = append(u.headers, header{"Baggage", []byte(bag)})
	for _, h := range op.headers {
		c, ok := h.value.constant()
		if !ok {
			u.hdrIdx = append(u.hdrIdx, len(u.headers))
		}
		u.headers = append(u.headers, header{h.key, []byte(c)})
	}
	u.hdrOffs = make([]int, 2*len(u.hdrIdx))
	return u
}

// writerID returns the id written by the writer whose global user index in
// the phase is k. Writers use ids of their own so that readers never
// observe writes and no two writers write the same object.
func writerID(k int) string { return "w" + strconv.Itoa(k) }

// baggage returns the W3C baggage header value stamped on every request, so
// the target (for example a profiler) can label work by run, phase and arm.
func baggage(p Phase) string {
	return "soakd.run=" + baggageEscape(p.Run) +
		",soakd.phase=" + baggageEscape(p.Name) +
		",soakd.arm=" + baggageEscape(p.Arm)
}

// baggageEscape percent-encodes every byte of s that W3C Baggage does not
// allow in a value (anything outside baggage-octet: controls, space, '"', ',',
// ';', '\' and non-ASCII) and '%' itself, so decoders get s back exactly. Unlike
// url.QueryEscape it never turns a space into '+', which baggage decoders
// would keep literally.
func baggageEscape(s string) string {
	const hex = "0123456789ABCDEF"
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c > 0x20 && c < 0x7F && c != '"' && c != ',' && c != ';' && c != '\\' && c != '%' {
			if b != nil {
				b = append(b, c)
			}
			continue
		}
		if b == nil {
			b = append(make([]byte, 0, len(s)+8), s[:i]...)
		}
		b = append(b, '%', hex[c>>4], hex[c&0xF])
	}
	if b == nil {
		return s
	}
	return string(b)
}

// next returns the user's request for iteration i (0-based): a writer's
// event carries sequence number i+1.
func (u *user) next(i int) call { return u.build(int64(i) + 1) }

// build draws the request's variables, fills the operation's templates
// with them and returns the request; a writer's event carries sequence
// number seq (0 marks a subscription probe). The call's slices live in the
// user's buffers, so building it allocates nothing once they have grown.
func (u *user) build(seq int64) call {
	op := u.op
	for i := range u.picks {
		u.drawn[i] = u.picks[i].next(u.rng)
		if f := op.pickers[i].file; f != nil {
			f.read(&u.rows[i], u.drawn[i])
		}
	}
	vb := u.valBuf[:0]
	for i, src := range op.sources {
		k := u.drawn[src.picker]
		switch {
		case src.lookup:
			n := int64(len(src.values))
			u.vals[i] = src.values[(k%n+n)%n]
		case src.values != nil:
			u.vals[i] = src.values[k]
		case src.column >= 0:
			u.vals[i] = u.rows[src.picker].vals[src.column]
		default:
			u.offs[2*i] = len(vb)
			vb = appendRange(vb, k)
			u.offs[2*i+1] = len(vb)
		}
	}
	if op.writes {
		e := op.eventVar
		u.offs[2*e] = len(vb)
		vb = appendEventName(vb, u.writerID, seq, time.Now())
		u.offs[2*e+1] = len(vb)
	}
	// The buffer may have moved while growing: slice it only now.
	u.valBuf = vb
	for i, src := range op.sources {
		if src.values == nil && src.column < 0 {
			u.vals[i] = vb[u.offs[2*i]:u.offs[2*i+1]]
		}
	}
	if op.writes {
		u.vals[op.eventVar] = vb[u.offs[2*op.eventVar]:u.offs[2*op.eventVar+1]]
	}

	u.urlBuf = op.url.expand(u.urlBuf[:0], u.vals)
	if op.getVars != nil {
		u.urlBuf = op.getVars.expand(u.urlBuf, u.vals)
	}
	c := call{method: op.method, url: u.urlBuf, headers: u.headers, persisted: op.retryBody != nil}
	if op.body != nil {
		u.bodyBuf = op.body.expand(u.bodyBuf[:0], u.vals)
		c.body = u.bodyBuf
	}
	if len(u.hdrIdx) > 0 {
		hb := u.hdrBuf[:0]
		for j, hi := range u.hdrIdx {
			u.hdrOffs[2*j] = len(hb)
			hb = op.headers[hi-1].value.expand(hb, u.vals)
			u.hdrOffs[2*j+1] = len(hb)
		}
		u.hdrBuf = hb
		for j, hi := range u.hdrIdx {
			u.headers[hi].value = hb[u.hdrOffs[2*j]:u.hdrOffs[2*j+1]]
		}
	}
	u.fillWants()
	return c
}

// fillWants expands the expected values of this request into u.wants.
func (u *user) fillWants() {
	x := &u.op.expect
	wb := u.wantBuf[:0]
	var offs [2 * maxExpectPaths]int
	for k, t := range x.want {
		if t == nil {
			continue
		}
		if v, ok := t.single(); ok {
			u.wants[k] = u.vals[v]
			continue
		}
		offs[2*k] = len(wb)
		wb = t.expand(wb, u.vals)
		offs[2*k+1] = len(wb)
		u.wants[k] = nil
	}
	u.wantBuf = wb
	for k, t := range x.want {
		if t != nil && u.wants[k] == nil {
			u.wants[k] = wb[offs[2*k]:offs[2*k+1]]
		}
	}
}

// outcome is what one request produced: its latency and, on failure, its
// error class and a message.
type outcome struct {
	sent    time.Time     // just before the request was handed to the client
	latency time.Duration // service time: from sent to the end of the body (or the failure)
	class   string        // "" on success
	message string
	// stopped: a chatty request whose phase stopped between its follow
	// calls, cut short there. It is neither a success nor an error and is
	// not recorded (its latency would not be the whole request's).
	stopped bool
}

// do sends c with s, reads the whole response and checks it against the
// operation's expectations (see compiledExpect.check). A persisted query
// the server does not hold is sent again with its document, within the same
// request. Nothing cancels a request in flight, so an aborted phase lets it
// finish; timeout bounds each send, from dialling or waiting for a connection
// to the end of the body. The latency runs from just before sending to the
// end of the (last) body read. stop is the phase's stop: a chatty request
// checks it before each follow call and, once it has ended, sends no more
// (outcome.stopped), so a phase stopping mid-chain waits for one call, not
// for thousands.
func (u *user) do(stop context.Context, s sender, timeout time.Duration, c call) outcome {
	start := time.Now()
	u.sending = c
	status, body, err := s.send(&u.sending, timeout, u.resp)
	if err == nil && c.persisted && bytes.Contains(body, persistedNotFound) {
		u.resp = body[:0]
		u.bodyBuf = u.op.retryBody.expand(u.bodyBuf[:0], u.vals)
		c.body = u.bodyBuf
		u.sending = c
		status, body, err = s.send(&u.sending, timeout, u.resp)
	}
	o := outcome{sent: start, latency: time.Since(start)}
	if cap(body) <= maxKeptBuffer {
		u.resp = body[:0]
	} else {
		u.resp = nil
	}
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		o.class, o.message = ClassDecodeError, fmt.Sprintf("%s %s: response body over %d bytes", c.method, c.url, maxResponseBytes)
	case err != nil:
		o.class, o.message = classifyTransport(err), fmt.Sprintf("%s %s: %v", c.method, c.url, err)
	case status != u.op.expect.status:
		o.class = "http_" + strconv.Itoa(status)
		o.message = fmt.Sprintf("%s %s: HTTP %d (want %d): %s", c.method, c.url, status, u.op.expect.status, body)
	default:
		if o.class, o.message = u.op.expect.check(body, u.wants, u.drawn, u.found); o.class != "" {
			o.message = c.method + " " + string(c.url) + ": " + o.message
		} else if len(u.op.follow) > 0 {
			o.class, o.message, o.stopped = u.follow(stop, s, timeout, c, body)
			o.latency = time.Since(start)
		}
	}
	return o
}

// follow sends a chatty operation's follow calls once its first call, c,
// answered first and passed its expectations: for each step, one GET per
// item of the call it follows, one after the other. Each must answer 200
// with JSON items carrying the fields later steps read. It returns the
// class and message of the first call that fails, or "" when all passed;
// stopped when stop ended before a call, which is then not sent.
// The ids are decoded with encoding/json: a chatty view allocates in the
// driver, which is not the process measured.
func (u *user) follow(stop context.Context, s sender, timeout time.Duration, c call, first []byte) (class, message string, stopped bool) {
	steps := u.op.follow
	ids := make([][]int64, len(steps)) // by step: the ids it calls
	collect := func(k int, body, url []byte) (string, string) {
		for j, st := range steps {
			if st.from != k {
				continue
			}
			var cl string
			var err error
			if ids[j], cl, err = appendIDs(ids[j], body, st.idField); err != nil {
				return cl, fmt.Sprintf("GET %s: %v", url, err)
			}
		}
		return "", ""
	}
	if cl, msg := collect(0, first, c.url); cl != "" {
		return cl, msg, false
	}
	fc := &u.sending
	*fc = call{method: http.MethodGet, headers: c.headers}
	// The whole chain is one request: it gets the request timeout once,
	// not once per call, and at most maxFollow calls.
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	firstURL := string(c.url) // c.url is the URL buffer the follow calls reuse
	calls := 0
	for j, st := range steps {
		for _, id := range ids[j] {
			if stop.Err() != nil {
				return "", "", true
			}
			if calls++; calls > u.op.maxFollow {
				return ClassFollowLimit, fmt.Sprintf("GET %s: the follow calls of one request would exceed rest.max_follow_calls (%d): the items followed multiply", firstURL, u.op.maxFollow), false
			}
			left := timeout
			if !deadline.IsZero() {
				if left = time.Until(deadline); left <= 0 {
					return ClassTimeout, fmt.Sprintf("GET %s: the chain of follow calls did not finish within request_timeout %s (%d calls made)", firstURL, timeout, calls-1), false
				}
			}
			u.urlBuf = append(strconv.AppendInt(append(u.urlBuf[:0], st.prefix...), id, 10), st.suffix...)
			fc.url = u.urlBuf
			status, body, err := s.send(fc, left, u.resp)
			if cap(body) <= maxKeptBuffer {
				u.resp = body[:0]
			} else {
				u.resp = nil
			}
			switch {
			case errors.Is(err, fasthttp.ErrBodyTooLarge):
				return ClassDecodeError, fmt.Sprintf("GET %s: response body over %d bytes", fc.url, maxResponseBytes), false
			case err != nil:
				return classifyTransport(err), fmt.Sprintf("GET %s: %v", fc.url, err), false
			case status != http.StatusOK:
				return "http_" + strconv.Itoa(status), fmt.Sprintf("GET %s: HTTP %d (want 200): %s", fc.url, status, body), false
			}
			if cl, msg := collect(j+1, body, fc.url); cl != "" {
				return cl, msg, false
			}
		}
		ids[j] = nil
	}
	return "", "", false
}

// appendIDs appends to ids the numeric field of every item of a REST
// answer, {"data": [items]} or {"data": {item}}. A body that is not JSON
// fails as decode_error, one without such items as payload_mismatch.
func appendIDs(ids []int64, body []byte, field string) ([]int64, string, error) {
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return ids, ClassDecodeError, fmt.Errorf("cannot decode the answer: %w", err)
	}
	var items []map[string]json.RawMessage
	d := bytes.TrimSpace(env.Data)
	var err error
	switch {
	case len(d) > 0 && d[0] == '[':
		err = json.Unmarshal(d, &items)
	case len(d) > 0 && d[0] == '{':
		items = make([]map[string]json.RawMessage, 1)
		err = json.Unmarshal(d, &items[0])
	default:
		return ids, ClassPayloadMismatch, fmt.Errorf("the answer has no data list or object to follow: %.200s", body)
	}
	if err != nil {
		return ids, ClassPayloadMismatch, fmt.Errorf("the answer's data are not objects: %w", err)
	}
	for i, it := range items {
		n, err := strconv.ParseInt(string(it[field]), 10, 64)
		if err != nil {
			return ids, ClassPayloadMismatch, fmt.Errorf("item %d of data has no integer %s to follow", i, field)
		}
		ids = append(ids, n)
	}
	return ids, "", nil
}

// check applies the expectations to a body whose status passed: it must be
// JSON when any path is checked (else decode_error), carry no top-level
// GraphQL errors when asked (else graphql_error), and hold every path with
// its wanted value, or a value other than null for a presence check (else
// payload_mismatch). wants are this request's expected values, drawn its
// pickers' draws (the rows of CSV values), found a scratch slice as long as
// the paths. It returns an empty class when the body passes, and allocates
// only to word a failure.
func (x *compiledExpect) check(body []byte, wants [][]byte, drawn []int64, found []valueSpan) (class, message string) {
	if !x.needJSON {
		return "", ""
	}
	if err := scanJSON(body, x.paths, found); err != nil {
		return ClassDecodeError, fmt.Sprintf("cannot decode response %q: %v", body, err)
	}
	if k := x.errors; k >= 0 {
		if sp := found[k]; sp.start >= 0 && !emptyErrors(body[sp.start:sp.end]) {
			return ClassGraphQLError, fmt.Sprintf("response has errors: %s", body[sp.start:sp.end])
		}
	}
	for k, sp := range found {
		if k == x.errors {
			continue
		}
		if sp.start < 0 {
			return ClassPayloadMismatch, fmt.Sprintf("response has no %s: %s", x.keys[k], body)
		}
		v := body[sp.start:sp.end]
		if x.want[k] == nil {
			if string(v) == "null" {
				return ClassPayloadMismatch, fmt.Sprintf("response has %s null: %s", x.keys[k], body)
			}
			continue
		}
		if !jsonEqual(v, wants[k]) {
			return ClassPayloadMismatch, fmt.Sprintf("%s: got %s, want %s", x.keys[k], v, x.wantText(k, wants[k], drawn))
		}
	}
	return "", ""
}

// wantText words path k's wanted value w for a mismatch message: quoted
// when it comes from the configuration (a literal, list: or range:), and
// when a CSV file gave it, its row and column in the file, never its text
// (a file may hold anything the daemon can read; the examples reach the
// control API and report.md). Rows count from 1, the first after the
// header line.
func (x *compiledExpect) wantText(k int, w []byte, drawn []int64) string {
	o := x.wantCSV[k]
	switch {
	case o.file == "":
		return strconv.Quote(string(w))
	case o.picker >= len(drawn):
		return "<value from " + o.file + ">"
	}
	what := "the value"
	if _, single := x.want[k].single(); !single {
		what = "a value built from the value"
	}
	return fmt.Sprintf("%s of row %d of column %s in %s", what, drawn[o.picker]+1, o.column, o.file)
}

// emptyErrors reports whether a top-level errors value is null or [].
func emptyErrors(v []byte) bool {
	if string(v) == "null" {
		return true
	}
	if len(v) < 2 || v[0] != '[' || v[len(v)-1] != ']' {
		return false
	}
	for _, c := range v[1 : len(v)-1] {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// jsonEqual reports whether the JSON value v (a valid one) equals want: a
// string's text, or any other value's literal.
func jsonEqual(v, want []byte) bool {
	if v[0] != '"' {
		return bytes.Equal(v, want)
	}
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return bytes.Equal(inner, want)
	}
	var s string
	return json.Unmarshal(v, &s) == nil && s == string(want)
}

// classifyTransport maps an error from sending a request or reading its body
// to an error class.
func classifyTransport(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, fasthttp.ErrDialTimeout),
		errors.Is(err, fasthttp.ErrNoFreeConns), // waited RequestTimeout for a connection
		errors.As(err, &ne) && ne.Timeout():
		return ClassTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ClassConnectionRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, fasthttp.ErrConnectionClosed):
		return ClassConnectionReset
	}
	return ClassOther
}

// truncate shortens an example message to at most maxExampleBytes bytes.
func truncate(s string) string {
	if len(s) <= maxExampleBytes {
		return s
	}
	return s[:maxExampleBytes] + "..."
}
