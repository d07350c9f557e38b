package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// The websocket subprotocols served.
const (
	transportWS = "graphql-transport-ws" // the graphql-ws library's protocol
	legacyWS    = "graphql-ws"           // subscriptions-transport-ws (Apollo's legacy one)
)

// wsWriteTimeout bounds one message's write: a client that stops reading
// loses its connection rather than holding a subscription's goroutine.
const wsWriteTimeout = 10 * time.Second

// wsMessage is a message of either protocol.
type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// wsConn is one websocket connection and its subscriptions.
type wsConn struct {
	srv    *server
	c      *websocket.Conn
	legacy bool
}

// serveWS serves GraphQL subscriptions over a websocket speaking
// graphql-transport-ws or the legacy graphql-ws, until the client leaves or
// the server shuts down (ctx).
func (s *server) serveWS(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{transportWS, legacyWS}})
	if err != nil {
		return // Accept has answered the client
	}
	if !s.conns.add() {
		c.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	defer s.conns.done()
	if c.Subprotocol() == "" {
		c.Close(4406, "Subprotocol not acceptable: want graphql-transport-ws or graphql-ws")
		return
	}
	conn := &wsConn{srv: s, c: c, legacy: c.Subprotocol() == legacyWS}
	code, reason := conn.run(s.wsCtx)
	c.Close(code, reason)
}

// run reads the client's messages until the connection ends, and returns
// the close status to send. Every subscription's goroutine has ended when
// it returns.
func (wc *wsConn) run(ctx context.Context) (websocket.StatusCode, string) {
	subs := map[string]context.CancelFunc{}
	var wg sync.WaitGroup
	defer func() {
		for _, cancel := range subs {
			cancel()
		}
		wg.Wait()
	}()
	initialised := false
	for {
		_, data, err := wc.c.Read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return websocket.StatusGoingAway, "server shutting down"
			}
			return websocket.StatusNormalClosure, ""
		}
		var m wsMessage
		if err := json.Unmarshal(data, &m); err != nil || m.Type == "" {
			return 4400, "invalid message: want a JSON object with a type"
		}
		switch m.Type {
		case "connection_init":
			if initialised {
				return 4429, "Too many initialisation requests"
			}
			initialised = true
			if err := wc.send(ctx, wsMessage{Type: "connection_ack"}); err != nil {
				return websocket.StatusInternalError, "cannot write"
			}
		case "ping":
			if err := wc.send(ctx, wsMessage{Type: "pong"}); err != nil {
				return websocket.StatusInternalError, "cannot write"
			}
		case "pong":
		case "subscribe", "start":
			switch {
			case !initialised:
				return 4401, "Unauthorized: connection_init first"
			case m.ID == "":
				return 4400, "a subscription needs an id"
			case subs[m.ID] != nil:
				return 4409, "Subscriber for " + m.ID + " already exists"
			}
			cancel, err := wc.subscribe(ctx, &wg, m)
			if err != nil {
				if err := wc.send(ctx, wc.errorMessage(m.ID, err)); err != nil {
					return websocket.StatusInternalError, "cannot write"
				}
				continue
			}
			subs[m.ID] = cancel
		case "complete", "stop":
			if cancel := subs[m.ID]; cancel != nil {
				cancel()
				delete(subs, m.ID)
			}
		case "connection_terminate":
			return websocket.StatusNormalClosure, ""
		default:
			return 4400, "unknown message type " + m.Type
		}
	}
}

// subscribe starts subscription m: a goroutine, counted in wg, that sends
// one next (legacy: data) message per update of the book subscribed to
// until the returned function is called or ctx ends.
func (wc *wsConn) subscribe(ctx context.Context, wg *sync.WaitGroup, m wsMessage) (context.CancelFunc, gqlerror.List) {
	var req request
	if err := json.Unmarshal(m.Payload, &req); err != nil {
		return nil, gqlerror.List{gqlerror.Errorf("invalid payload: %v", err)}
	}
	ex := wc.srv.exec
	p, errs := ex.prepare(req)
	if len(errs) > 0 {
		return nil, errs
	}
	if p.op.Operation != ast.Subscription {
		return nil, gqlerror.List{gqlerror.Errorf("only subscriptions are served over the websocket; send %s over HTTP", p.op.Operation)}
	}
	fields, err := execution{e: ex, p: p}.collect("Subscription", p.op.SelectionSet)
	if err != nil || len(fields) != 1 {
		return nil, gqlerror.List{gqlerror.Errorf("a subscription selects exactly one field (%v)", err)}
	}
	id := argString(fields[0].ArgumentMap(p.vars), "id")
	events, unsubscribe := wc.srv.broker.subscribe(id)
	sctx, cancel := context.WithCancel(ctx)
	next := "next"
	if wc.legacy {
		next = "data"
	}
	wc.srv.subscriptions.Inc()
	wg.Go(func() {
		defer wc.srv.subscriptions.Dec()
		defer unsubscribe()
		for {
			select {
			case <-sctx.Done():
				return
			case b := <-events:
				body := ex.response(p, "Subscription", b, p.op.SelectionSet)
				if err := wc.send(sctx, wsMessage{ID: m.ID, Type: next, Payload: body}); err != nil {
					return
				}
			}
		}
	})
	return cancel, nil
}

// errorMessage is the protocol's error message for subscription id.
func (wc *wsConn) errorMessage(id string, errs gqlerror.List) wsMessage {
	var payload any = errs // graphql-transport-ws: an array of errors
	if wc.legacy && len(errs) > 0 {
		payload = errs[0] // subscriptions-transport-ws: one error object
	}
	b, err := json.Marshal(payload)
	if err != nil {
		b = []byte(fmt.Sprintf(`[{"message":%q}]`, errs.Error()))
	}
	return wsMessage{ID: id, Type: "error", Payload: b}
}

// send writes m, bounded by wsWriteTimeout. Writes may come from several
// goroutines: coder/websocket serialises them.
func (wc *wsConn) send(ctx context.Context, m wsMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("cannot encode a %s message: %w", m.Type, err)
	}
	ctx, cancel := context.WithTimeout(ctx, wsWriteTimeout)
	defer cancel()
	if err := wc.c.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("cannot write a %s message: %w", m.Type, err)
	}
	return nil
}
