package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
)

// Close codes the guard sends, from the graphql-transport-ws protocol. Legacy
// graphql-ws defines none, so its connections get the same codes, after a
// connection_error message as that protocol expects.
const (
	// closeBadRequest (4400) answers a message that is not a JSON object with
	// a known client message type, or that arrives in a binary frame.
	closeBadRequest = 4400
	// closeUnauthorized (4401) answers a subscription started before
	// connection_init.
	closeUnauthorized = 4401
	// closeInitTimeout (4408) closes a connection that sent no
	// connection_init within the init timeout.
	closeInitTimeout = 4408
	// closeTooManyInits (4429) answers a second connection_init.
	closeTooManyInits = 4429
	// closeSubscriberExists (4409) answers a subscribe whose id is that of
	// an operation still active on the connection.
	closeSubscriberExists = 4409
	// closeTooManySubscriptions (4429, as for too many inits: the protocol
	// has no code of its own for this) answers a subscribe beyond the
	// connection's limit of active operations.
	closeTooManySubscriptions = 4429
)

// Reasons sent with the guard's close frames (at most 123 bytes each).
const (
	reasonBinary    = "binary frames are not supported"
	reasonInvalid   = "invalid message"
	reasonNoInit    = "Unauthorized"
	reasonTimeout   = "Connection initialisation timeout"
	reasonManyInits = "Too many initialisation requests"
)

// wsVerdict is the guard's decision on one client frame: a zero code lets
// gqlgen handle the frame; any other code closes the connection with it.
type wsVerdict struct {
	code   int
	reason string
	init   bool   // the frame is a valid connection_init
	start  string // the id of a valid subscribe (legacy: start) frame
	stop   string // the id of a complete (legacy: stop) frame
}

// clientType reports whether a client may send messages of type t on a
// connection of the given protocol.
func clientType(legacy bool, t string) bool {
	if legacy {
		switch t {
		case "connection_init", "start", "stop", "connection_terminate":
			return true
		}
		return false
	}
	switch t {
	case "connection_init", "subscribe", "complete", "ping", "pong":
		return true
	}
	return false
}

// judgeFrame decides what to do with one client frame on a connection of the
// given protocol (legacy graphql-ws or graphql-transport-ws), given whether a
// connection_init was already received. It is pure, for tests.
//
// Refused: binary frames, anything but a JSON object whose type is a client
// message type of the protocol (4400), a subscription before connection_init
// (4401) or without an id (4400), a second connection_init (4429) and a
// connection_init whose payload is not an object (4400). Everything else,
// ping before connection_init included (gqlgen closes with 1002), is left to
// gqlgen. Alone, gqlgen answers a bad frame before connection_init with
// close 1002 and, after it, just stops reading (so the client sees a normal
// closure 1000); it accepts JSON in a binary frame; and it leaves the socket
// open, unread, after a connection_init with a non-object payload.
func judgeFrame(legacy, initialised, binary bool, data []byte) wsVerdict {
	if binary {
		return wsVerdict{code: closeBadRequest, reason: reasonBinary}
	}
	var m struct {
		Type    string          `json:"type"`
		ID      string          `json:"id"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(data, &m); err != nil || !clientType(legacy, m.Type) {
		return wsVerdict{code: closeBadRequest, reason: reasonInvalid}
	}
	switch m.Type {
	case "connection_init":
		if initialised {
			return wsVerdict{code: closeTooManyInits, reason: reasonManyInits}
		}
		// gqlgen returns without closing the socket when the init payload
		// is not an object, leaving the connection open and unread.
		if p := bytes.TrimSpace(m.Payload); len(p) > 0 && p[0] != '{' && !bytes.Equal(p, []byte("null")) {
			return wsVerdict{code: closeBadRequest, reason: reasonInvalid}
		}
		return wsVerdict{init: true}
	case "subscribe", "start":
		if !initialised {
			return wsVerdict{code: closeUnauthorized, reason: reasonNoInit}
		}
		if m.ID == "" {
			return wsVerdict{code: closeBadRequest, reason: reasonInvalid}
		}
		return wsVerdict{start: m.ID}
	case "complete", "stop":
		return wsVerdict{stop: m.ID}
	}
	return wsVerdict{}
}

// guardedWebsocket is a transport.WebsocketImplementation adding to another
// one (gqlgen's coder/websocket adapter) the checks of judgeFrame, an init
// timeout and a write timeout.
type guardedWebsocket struct {
	inner transport.WebsocketImplementation
	// initTimeout is how long a connection may go without connection_init;
	// zero or less means no limit.
	initTimeout time.Duration
	// writeTimeout bounds one message write to a client; zero or less means
	// no limit.
	writeTimeout time.Duration
	// maxActive is the most operations a connection may have active at
	// once; zero or less means no limit.
	maxActive int
}

var _ transport.WebsocketImplementation = guardedWebsocket{}

// Accept implements transport.WebsocketImplementation.
func (g guardedWebsocket) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	inner, err := g.inner.Accept(w, r, opts)
	if err != nil {
		return nil, err
	}
	c := &guardedConn{
		WebsocketConn: inner,
		legacy:        inner.Subprotocol() != "graphql-transport-ws", // gqlgen serves "" as legacy too
		writeTimeout:  g.writeTimeout,
		maxActive:     g.maxActive,
	}
	if g.writeTimeout > 0 {
		// One timer per connection, re-armed around each write: no
		// allocation per message. Writes are serialised by writeMu.
		c.writeTimer = time.AfterFunc(g.writeTimeout, c.writeExpired)
		c.writeTimer.Stop()
	}
	if g.initTimeout > 0 {
		c.initTimer = time.AfterFunc(g.initTimeout, func() {
			c.reject(closeInitTimeout, reasonTimeout)
		})
	}
	return c, nil
}

// guardedConn wraps one accepted connection. gqlgen calls NextReader from a
// single goroutine and WriteJSON under its own lock; the init and write
// timers call reject and writeExpired from their own goroutines.
type guardedConn struct {
	transport.WebsocketConn
	legacy       bool
	writeTimeout time.Duration
	maxActive    int
	initTimer    *time.Timer // nil without an init timeout
	writeTimer   *time.Timer // nil without a write timeout

	writeMu sync.Mutex // serialises writes, so that writeTimer times one at a time
	// msg locates the Type and ID fields of the message struct gqlgen
	// writes, guarded by writeMu.
	msg msgFields

	mu          sync.Mutex
	initialised bool // a connection_init was received, guarded by mu
	rejected    bool // the guard closed the connection, guarded by mu
	// active maps the client's id of each operation started and not yet
	// ended by the server to the id gqlgen knows it by (see admit and
	// WriteJSON), guarded by mu; seq numbers those ids.
	active map[string]string
	seq    uint64
}

var (
	_ transport.WebsocketConn          = (*guardedConn)(nil)
	_ transport.WebsocketReadLimiter   = (*guardedConn)(nil)
	_ transport.WebsocketReadDeadliner = (*guardedConn)(nil)
)

// NextReader returns the next client message for gqlgen, after judgeFrame
// let it through. A frame it refuses closes the connection with the
// verdict's code and returns an error, which ends gqlgen's read loop.
func (c *guardedConn) NextReader() (int, io.Reader, error) {
	typ, r, err := c.WebsocketConn.NextReader()
	if err != nil {
		return typ, r, err
	}
	data, err := io.ReadAll(r) // an in-memory reader: the frame is already read
	if err != nil {
		return typ, nil, fmt.Errorf("cannot read websocket message: %w", err)
	}
	c.mu.Lock()
	v := judgeFrame(c.legacy, c.initialised, typ == int(websocket.MessageBinary), data)
	var alias string // the id gqlgen gets in place of the client's
	switch {
	case v.code != 0:
	case v.start != "":
		v, alias = c.admit(v.start)
	case v.stop != "":
		alias = c.active[v.stop] // "" for an id not active: gqlgen ignores it
	}
	rejected := c.rejected
	if v.init {
		c.initialised = true
	}
	c.mu.Unlock()
	switch {
	case rejected:
		return typ, nil, errors.New("connection closed by the websocket guard")
	case v.code != 0:
		c.reject(v.code, v.reason)
		return typ, nil, fmt.Errorf("websocket client message refused: closed with %d %s", v.code, v.reason)
	case v.init && c.initTimer != nil:
		c.initTimer.Stop()
	case alias != "":
		if data, err = withID(data, alias); err != nil {
			return typ, nil, err
		}
	}
	return typ, bytes.NewReader(data), nil
}

// withID returns the client message data (valid, as judgeFrame found it)
// with its id replaced by id.
func withID(data []byte, id string) ([]byte, error) {
	var m struct {
		Type    string          `json:"type"`
		ID      string          `json:"id"`
		Payload json.RawMessage `json:"payload,omitempty"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("cannot decode websocket message: %w", err)
	}
	m.ID = id
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("cannot encode websocket message: %w", err)
	}
	return b, nil
}

// admit records the start of operation id and returns a zero verdict and
// the alias gqlgen is to know it by, or refuses it: with 4409 when id is
// that of an operation still active on the connection (the
// graphql-transport-ws rule, applied to legacy graphql-ws too), with 4429
// when maxActive operations are active. c.mu must be held.
//
// An id is active from its subscribe (start) until the server writes its
// complete or error, not from the client's own complete (stop): gqlgen
// holds the operation until then. Alone, gqlgen accepts a duplicate id and
// keeps one cancel function per id, so the first operation could no longer
// be stopped and kept delivering. subscriptions-transport-ws, the legacy
// protocol's reference server, stopped the old operation instead; the
// guard closes the socket on both protocols, with a connection_error first
// on legacy.
//
// The alias (id, a NUL byte, a sequence number) makes every id gqlgen sees
// unique on the connection, and WriteJSON turns it back into the client's
// id: gqlgen deletes an ended operation from its table only after writing
// its complete, so a client reusing the id at once would otherwise have its
// new operation's cancel function deleted (it could never be stopped).
func (c *guardedConn) admit(id string) (wsVerdict, string) {
	if _, dup := c.active[id]; dup {
		return wsVerdict{code: closeSubscriberExists, reason: "Subscriber for " + clip(id, 60) + " already exists"}, ""
	}
	if c.maxActive > 0 && len(c.active) >= c.maxActive {
		return wsVerdict{code: closeTooManySubscriptions,
			reason: fmt.Sprintf("Too many subscriptions: the limit is %d per connection", c.maxActive)}, ""
	}
	if c.active == nil {
		c.active = make(map[string]string)
	}
	c.seq++
	alias := id + "\x00" + strconv.FormatUint(c.seq, 10)
	c.active[id] = alias
	return wsVerdict{}, alias
}

// msgFields locates the string fields Type and ID in the struct type of the
// messages gqlgen writes (one unexported type per protocol); ok is false
// when the type has no such fields.
type msgFields struct {
	typ      reflect.Type
	ok       bool
	kind, id int
}

// unalias turns the id of a server message v (a pointer to gqlgen's
// message struct) from gqlgen's alias back into the client's id, in place.
// It returns the alias and the client's id when v is a complete or error
// message (the server's last message for an operation in both protocols),
// else "", "". It works by reflection, the fields looked up once per
// message type, since gqlgen's message types are unexported. c.writeMu
// must be held.
func (c *guardedConn) unalias(v any) (alias, id string) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return "", ""
	}
	rv = rv.Elem()
	if f := &c.msg; f.typ != rv.Type() {
		f.typ = rv.Type()
		kind, okKind := f.typ.FieldByName("Type")
		id, okID := f.typ.FieldByName("ID")
		f.ok = okKind && okID && kind.Type.Kind() == reflect.String && id.Type.Kind() == reflect.String &&
			len(kind.Index) == 1 && len(id.Index) == 1 && kind.IsExported() && id.IsExported()
		if f.ok {
			f.kind, f.id = kind.Index[0], id.Index[0]
		}
	}
	if !c.msg.ok {
		return "", ""
	}
	field := rv.Field(c.msg.id)
	alias = field.String()
	i := strings.LastIndexByte(alias, 0)
	if i < 0 {
		return "", ""
	}
	id = alias[:i]
	field.SetString(id)
	switch rv.Field(c.msg.kind).String() {
	case "complete", "error":
		return alias, id
	}
	return "", ""
}

// reject closes the connection with code and reason, once. On legacy
// graphql-ws it first sends a connection_error carrying the reason, as
// gqlgen does for the errors it detects itself.
func (c *guardedConn) reject(code int, reason string) {
	c.mu.Lock()
	if c.rejected || (code == closeInitTimeout && c.initialised) {
		c.mu.Unlock()
		return
	}
	c.rejected = true
	c.mu.Unlock()
	// The init timer is left to Close: reject may run in that timer's own
	// callback, which must not read the field Accept is still assigning.
	if c.legacy {
		type payload struct {
			Message string `json:"message"`
		}
		_ = c.WriteJSON(struct {
			Type    string  `json:"type"`
			Payload payload `json:"payload"`
		}{"connection_error", payload{reason}})
	}
	// gqlgen's adapter runs the close handshake in the background (bounded
	// by coder/websocket to 5 s) and ignores later WriteClose calls, so
	// gqlgen's own close that follows the returned error sends nothing.
	_ = c.WebsocketConn.WriteClose(code, reason)
}

// WriteJSON writes one message, closing the connection if the write takes
// longer than the write timeout: a client that stops reading would otherwise
// hold the writing goroutine (and gqlgen's connection lock) for ever.
//
// Messages carry the client's id, not gqlgen's alias (see admit). A
// complete or error message frees its operation's id before it is written,
// so a client may reuse the id as soon as it reads the message.
func (c *guardedConn) WriteJSON(v any) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	if alias, id := c.unalias(v); alias != "" {
		c.mu.Lock()
		if c.active[id] == alias { // not a newer operation under the same id
			delete(c.active, id)
		}
		c.mu.Unlock()
	}
	if c.writeTimer == nil {
		return c.WebsocketConn.WriteJSON(v)
	}
	c.writeTimer.Reset(c.writeTimeout)
	err := c.WebsocketConn.WriteJSON(v)
	c.writeTimer.Stop()
	return err
}

// writeExpired closes the connection at once: a write has been blocked for
// the whole write timeout, so a close handshake would block too.
func (c *guardedConn) writeExpired() {
	_ = c.WebsocketConn.Close()
}

// Close stops the guard's timers and closes the connection.
func (c *guardedConn) Close() error {
	if c.initTimer != nil {
		c.initTimer.Stop()
	}
	if c.writeTimer != nil {
		c.writeTimer.Stop()
	}
	return c.WebsocketConn.Close()
}

// SetReadLimit implements transport.WebsocketReadLimiter by delegation, so
// gqlgen's PayloadReadLimit still reaches coder/websocket.
func (c *guardedConn) SetReadLimit(limit int64) {
	if l, ok := c.WebsocketConn.(transport.WebsocketReadLimiter); ok {
		l.SetReadLimit(limit)
	}
}

// SetReadDeadline implements transport.WebsocketReadDeadliner by delegation.
func (c *guardedConn) SetReadDeadline(t time.Time) error {
	if d, ok := c.WebsocketConn.(transport.WebsocketReadDeadliner); ok {
		return d.SetReadDeadline(t)
	}
	return nil
}
