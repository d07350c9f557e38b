package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
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
	init   bool // the frame is a valid connection_init
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
	initTimer    *time.Timer // nil without an init timeout
	writeTimer   *time.Timer // nil without a write timeout

	writeMu sync.Mutex // serialises writes, so that writeTimer times one at a time

	mu          sync.Mutex
	initialised bool // a connection_init was received, guarded by mu
	rejected    bool // the guard closed the connection, guarded by mu
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
	}
	return typ, bytes.NewReader(data), nil
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
func (c *guardedConn) WriteJSON(v any) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
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
