// Package gqlws is a small GraphQL-over-websocket client speaking both the
// graphql-transport-ws protocol and the legacy graphql-ws protocol of Apollo's
// subscriptions-transport-ws. soakd's tests and its load driver use it to hold
// subscriptions open against the GraphQL arm.
//
// The client starts no goroutines: the caller drives it by calling Next, which
// also answers pings and skips keep-alives. Next must not be called
// concurrently with itself; Subscribe and Close may be called from other
// goroutines.
package gqlws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/soakd/soakd/internal/nofollow"
)

// Protocol is a GraphQL websocket subprotocol, as negotiated in the
// Sec-WebSocket-Protocol header.
type Protocol string

// The two protocols gqlgen serves.
const (
	// TransportWS is the graphql-transport-ws protocol (the graphql-ws
	// library's protocol): subscribe/next/error/complete with ping/pong.
	TransportWS Protocol = "graphql-transport-ws"
	// LegacyWS is the legacy graphql-ws protocol of subscriptions-transport-ws:
	// start/data/error/complete/stop with "ka" keep-alives.
	LegacyWS Protocol = "graphql-ws"
)

// Normalised message types returned by Next, the same for both protocols.
const (
	// TypeNext carries one result of a subscription (legacy "data").
	TypeNext = "next"
	// TypeError carries a list of GraphQL errors for a subscription.
	TypeError = "error"
	// TypeComplete says the server finished a subscription.
	TypeComplete = "complete"
)

// closeTimeout bounds how long Close spends sending stop messages before it
// closes the socket; the close handshake itself is bounded by coder/websocket
// (5 s).
const closeTimeout = 5 * time.Second

// readLimit is the largest message, in bytes, Next accepts. Donut events are
// about 100 bytes; 1 MiB leaves room for large error payloads.
const readLimit = 1 << 20

// Message is a server message for one subscription. Type is normalised to
// TypeNext, TypeError or TypeComplete whatever the protocol.
type Message struct {
	// ID is the subscription id given to Subscribe.
	ID string
	// Type is TypeNext, TypeError or TypeComplete.
	Type string
	// Payload is the raw JSON payload: a GraphQL response ({"data":...}) for
	// TypeNext, a list of errors for TypeError (legacy servers may send an
	// object), and empty for TypeComplete.
	Payload json.RawMessage
}

// wireMessage is a protocol message on the wire; both protocols share this
// envelope and differ only in the type names.
type wireMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// subscribePayload is the payload of subscribe/start messages.
type subscribePayload struct {
	Query     string         `json:"query"`
	Variables map[string]any `json:"variables,omitempty"`
}

// Conn is an initialised GraphQL websocket connection.
type Conn struct {
	ws       *websocket.Conn
	protocol Protocol

	mu     sync.Mutex
	active map[string]struct{} // subscriptions not yet completed, guarded by mu

	closeOnce sync.Once
	closeErr  error
}

// Dial opens a websocket to url (ws://, or http:// which is treated the same)
// negotiating protocol p, and performs the connection_init/connection_ack
// handshake. ctx bounds the whole dial and handshake.
func Dial(ctx context.Context, url string, p Protocol) (*Conn, error) {
	return DialWith(ctx, url, p, DialOptions{})
}

// DialOptions are what a server may need to accept a connection.
type DialOptions struct {
	// Header is sent with the websocket upgrade request (e.g.
	// Authorization, for servers that authenticate the HTTP upgrade).
	Header http.Header
	// InitPayload is connection_init's payload, a JSON object (the
	// "connection params" servers such as Apollo's read credentials from);
	// empty sends {}.
	InitPayload json.RawMessage
}

// DialWith is Dial with the upgrade headers and connection_init payload of o.
func DialWith(ctx context.Context, url string, p Protocol, o DialOptions) (*Conn, error) {
	if p != TransportWS && p != LegacyWS {
		return nil, fmt.Errorf("cannot dial %s: unknown protocol %q", url, p)
	}
	// A client of its own that follows no redirect: the upgrade request
	// carries the operation's headers (headers_env secrets among them).
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{string(p)}, HTTPHeader: o.Header, HTTPClient: nofollow.Client(0)})
	if err != nil {
		return nil, fmt.Errorf("cannot dial %s: %w", url, err)
	}
	if got := ws.Subprotocol(); got != string(p) {
		_ = ws.Close(websocket.StatusProtocolError, "subprotocol not negotiated")
		return nil, fmt.Errorf("cannot dial %s: server chose subprotocol %q, want %q", url, got, p)
	}
	ws.SetReadLimit(readLimit)
	c := &Conn{ws: ws, protocol: p, active: make(map[string]struct{})}
	if err := c.handshake(ctx, o.InitPayload); err != nil {
		_ = ws.CloseNow()
		return nil, fmt.Errorf("cannot initialise %s connection to %s: %w", p, url, err)
	}
	return c, nil
}

// handshake sends connection_init and waits for connection_ack, answering
// pings and skipping keep-alives on the way.
func (c *Conn) handshake(ctx context.Context, payload json.RawMessage) error {
	if len(payload) == 0 {
		payload = json.RawMessage("{}")
	}
	if err := c.write(ctx, wireMessage{Type: "connection_init", Payload: payload}); err != nil {
		return err
	}
	for {
		m, err := c.read(ctx)
		if err != nil {
			return err
		}
		switch m.Type {
		case "connection_ack":
			return nil
		case "ka", "pong":
		case "ping":
			if err := c.pong(ctx, m.Payload); err != nil {
				return err
			}
		case "connection_error":
			return fmt.Errorf("server refused connection: %s", m.Payload)
		default:
			return fmt.Errorf("unexpected %q message before connection_ack", m.Type)
		}
	}
}

// Protocol returns the negotiated protocol.
func (c *Conn) Protocol() Protocol {
	return c.protocol
}

// Subscribe starts subscription id running query with vars (nil for none).
// Results arrive through Next. ids must be unique among the connection's
// running subscriptions.
func (c *Conn) Subscribe(ctx context.Context, id, query string, vars map[string]any) error {
	payload, err := json.Marshal(subscribePayload{Query: query, Variables: vars})
	if err != nil {
		return fmt.Errorf("cannot encode subscription %q: %w", id, err)
	}
	typ := "subscribe"
	if c.protocol == LegacyWS {
		typ = "start"
	}
	c.mu.Lock()
	c.active[id] = struct{}{}
	c.mu.Unlock()
	if err := c.write(ctx, wireMessage{ID: id, Type: typ, Payload: payload}); err != nil {
		c.mu.Lock()
		delete(c.active, id)
		c.mu.Unlock()
		return fmt.Errorf("cannot start subscription %q: %w", id, err)
	}
	return nil
}

// Next returns the next subscription message (TypeNext, TypeError or
// TypeComplete). It answers server pings with pongs and skips keep-alives and
// pongs. As with coder/websocket reads, if ctx ends before a message arrives
// the connection is closed and unusable.
func (c *Conn) Next(ctx context.Context) (Message, error) {
	for {
		m, err := c.read(ctx)
		if err != nil {
			return Message{}, err
		}
		typ := m.Type
		switch m.Type {
		case "ka", "pong":
			continue
		case "ping":
			if err := c.pong(ctx, m.Payload); err != nil {
				return Message{}, err
			}
			continue
		case "next", "data":
			if (m.Type == "next") != (c.protocol == TransportWS) {
				return Message{}, fmt.Errorf("unexpected %q message in %s", m.Type, c.protocol)
			}
			typ = TypeNext
		case TypeError, TypeComplete:
			c.mu.Lock()
			delete(c.active, m.ID)
			c.mu.Unlock()
		case "connection_error":
			return Message{}, fmt.Errorf("connection error: %s", m.Payload)
		default:
			return Message{}, fmt.Errorf("unexpected %q message", m.Type)
		}
		return Message{ID: m.ID, Type: typ, Payload: m.Payload}, nil
	}
}

// Close stops every subscription not yet completed (complete in
// graphql-transport-ws, stop then connection_terminate in legacy graphql-ws)
// and closes the websocket with a normal closure. It is idempotent; later
// calls return the first call's result.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()

		stop := "complete"
		if c.protocol == LegacyWS {
			stop = "stop"
		}
		c.mu.Lock()
		ids := make([]string, 0, len(c.active))
		for id := range c.active {
			ids = append(ids, id)
		}
		clear(c.active)
		c.mu.Unlock()

		var errs []error
		for _, id := range ids {
			if err := c.write(ctx, wireMessage{ID: id, Type: stop}); err != nil {
				errs = append(errs, fmt.Errorf("cannot stop subscription %q: %w", id, err))
			}
		}
		if c.protocol == LegacyWS && len(errs) == 0 {
			if err := c.write(ctx, wireMessage{Type: "connection_terminate"}); err != nil {
				errs = append(errs, fmt.Errorf("cannot terminate connection: %w", err))
			}
		}
		if err := c.ws.Close(websocket.StatusNormalClosure, ""); err != nil && !isNormalClose(err) {
			errs = append(errs, fmt.Errorf("cannot close websocket: %w", err))
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// isNormalClose reports whether err only says the peer closed first, which is
// how a server may answer connection_terminate.
func isNormalClose(err error) bool {
	return websocket.CloseStatus(err) == websocket.StatusNormalClosure
}

func (c *Conn) pong(ctx context.Context, payload json.RawMessage) error {
	return c.write(ctx, wireMessage{Type: "pong", Payload: payload})
}

func (c *Conn) write(ctx context.Context, m wireMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("cannot encode %q message: %w", m.Type, err)
	}
	if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("cannot send %q message: %w", m.Type, err)
	}
	return nil
}

func (c *Conn) read(ctx context.Context) (wireMessage, error) {
	_, b, err := c.ws.Read(ctx)
	if err != nil {
		return wireMessage{}, fmt.Errorf("cannot read message: %w", err)
	}
	var m wireMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return wireMessage{}, fmt.Errorf("cannot decode message %q: %w", b, err)
	}
	return m, nil
}
