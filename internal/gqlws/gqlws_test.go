package gqlws

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// peer is the scripted server side of a test connection.
type peer struct {
	t  *testing.T
	ws *websocket.Conn
}

// expect reads one message and fails unless it equals want as JSON.
func (p peer) expect(ctx context.Context, want string) {
	p.t.Helper()
	_, b, err := p.ws.Read(ctx)
	if err != nil {
		p.t.Errorf("server: reading, want %s: %v", want, err)
		return
	}
	if !jsonEqual(b, []byte(want)) {
		p.t.Errorf("server: got %s, want %s", b, want)
	}
}

func (p peer) send(ctx context.Context, msg string) {
	p.t.Helper()
	if err := p.ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		p.t.Errorf("server: cannot send %s: %v", msg, err)
	}
}

// expectClose waits for the client's close frame.
func (p peer) expectClose(ctx context.Context) {
	p.t.Helper()
	_, b, err := p.ws.Read(ctx)
	if got := websocket.CloseStatus(err); got != websocket.StatusNormalClosure {
		p.t.Errorf("server: got message %s / error %v, want a normal close", b, err)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// fakeServer serves one websocket connection with script, speaking only the
// given subprotocols. The test waits for the script before it ends.
func fakeServer(t *testing.T, subprotocols []string, script func(ctx context.Context, p peer)) string {
	t.Helper()
	done := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: subprotocols})
		if err != nil {
			t.Errorf("server: accept: %v", err)
			return
		}
		defer ws.CloseNow()
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		script(ctx, peer{t, ws})
	}))
	t.Cleanup(func() {
		<-done
		ts.Close()
	})
	return "ws" + strings.TrimPrefix(ts.URL, "http")
}

// next fails unless the client's next message is want.
func next(ctx context.Context, t *testing.T, c *Conn, want Message) {
	t.Helper()
	got, err := c.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	if got.ID != want.ID || got.Type != want.Type || !(len(got.Payload) == 0 && len(want.Payload) == 0 || jsonEqual(got.Payload, want.Payload)) {
		t.Errorf("Next = {%s %s %s}, want {%s %s %s}", got.ID, got.Type, got.Payload, want.ID, want.Type, want.Payload)
	}
}

func TestTransportWS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := fakeServer(t, []string{string(TransportWS)}, func(ctx context.Context, p peer) {
		p.expect(ctx, `{"type":"connection_init","payload":{}}`)
		p.send(ctx, `{"type":"ping","payload":{"n":1}}`) // before the ack: answered by Dial
		p.expect(ctx, `{"type":"pong","payload":{"n":1}}`)
		p.send(ctx, `{"type":"connection_ack"}`)
		p.expect(ctx, `{"type":"subscribe","id":"a","payload":{"query":"subscription { x }","variables":{"id":"7"}}}`)
		p.send(ctx, `{"type":"pong"}`) // unsolicited pong: skipped
		p.send(ctx, `{"type":"next","id":"a","payload":{"data":{"x":1}}}`)
		p.send(ctx, `{"type":"ping"}`) // mid-stream: answered by Next
		p.expect(ctx, `{"type":"pong"}`)
		p.send(ctx, `{"type":"error","id":"a","payload":[{"message":"boom"}]}`)
		p.expect(ctx, `{"type":"subscribe","id":"b","payload":{"query":"subscription { y }"}}`)
		p.send(ctx, `{"type":"next","id":"b","payload":{"data":{"y":2}}}`)
		p.send(ctx, `{"type":"complete","id":"b"}`)
		p.expect(ctx, `{"type":"subscribe","id":"c","payload":{"query":"subscription { z }"}}`)
		// Close stops only the subscription still running.
		p.expect(ctx, `{"type":"complete","id":"c"}`)
		p.expectClose(ctx)
	})

	c, err := Dial(ctx, url, TransportWS)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if got := c.Protocol(); got != TransportWS {
		t.Errorf("Protocol() = %q, want %q", got, TransportWS)
	}
	if err := c.Subscribe(ctx, "a", "subscription { x }", map[string]any{"id": "7"}); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	next(ctx, t, c, Message{ID: "a", Type: TypeNext, Payload: json.RawMessage(`{"data":{"x":1}}`)})
	next(ctx, t, c, Message{ID: "a", Type: TypeError, Payload: json.RawMessage(`[{"message":"boom"}]`)})
	if err := c.Subscribe(ctx, "b", "subscription { y }", nil); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	next(ctx, t, c, Message{ID: "b", Type: TypeNext, Payload: json.RawMessage(`{"data":{"y":2}}`)})
	next(ctx, t, c, Message{ID: "b", Type: TypeComplete})
	if err := c.Subscribe(ctx, "c", "subscription { z }", nil); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v, want the first result (nil)", err)
	}
}

func TestLegacyWS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := fakeServer(t, []string{string(LegacyWS)}, func(ctx context.Context, p peer) {
		p.expect(ctx, `{"type":"connection_init","payload":{}}`)
		p.send(ctx, `{"type":"connection_ack"}`)
		p.send(ctx, `{"type":"ka"}`)
		p.expect(ctx, `{"type":"start","id":"a","payload":{"query":"subscription { x }"}}`)
		p.send(ctx, `{"type":"ka"}`)
		p.send(ctx, `{"type":"data","id":"a","payload":{"data":{"x":1}}}`)
		p.send(ctx, `{"type":"ka"}`)
		p.send(ctx, `{"type":"error","id":"a","payload":{"message":"boom"}}`)
		p.send(ctx, `{"type":"complete","id":"a"}`)
		p.expect(ctx, `{"type":"start","id":"b","payload":{"query":"subscription { y }"}}`)
		p.expect(ctx, `{"type":"stop","id":"b"}`)
		p.expect(ctx, `{"type":"connection_terminate"}`)
		p.expectClose(ctx)
	})

	c, err := Dial(ctx, url, LegacyWS)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if err := c.Subscribe(ctx, "a", "subscription { x }", nil); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	next(ctx, t, c, Message{ID: "a", Type: TypeNext, Payload: json.RawMessage(`{"data":{"x":1}}`)})
	next(ctx, t, c, Message{ID: "a", Type: TypeError, Payload: json.RawMessage(`{"message":"boom"}`)})
	next(ctx, t, c, Message{ID: "a", Type: TypeComplete})
	if err := c.Subscribe(ctx, "b", "subscription { y }", nil); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestDialErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("unknown protocol", func(t *testing.T) {
		if _, err := Dial(ctx, "ws://127.0.0.1:1/graphql", "mqtt"); err == nil {
			t.Errorf("Dial with an unknown protocol succeeded, want an error")
		}
	})
	t.Run("protocol not negotiated", func(t *testing.T) {
		url := fakeServer(t, []string{string(LegacyWS)}, func(ctx context.Context, p peer) {
			_, _, _ = p.ws.Read(ctx) // until the client gives up
		})
		_, err := Dial(ctx, url, TransportWS)
		if err == nil || !strings.Contains(err.Error(), "subprotocol") {
			t.Errorf("Dial = %v, want a subprotocol error", err)
		}
	})
	t.Run("connection refused by server", func(t *testing.T) {
		url := fakeServer(t, []string{string(LegacyWS)}, func(ctx context.Context, p peer) {
			p.expect(ctx, `{"type":"connection_init","payload":{}}`)
			p.send(ctx, `{"type":"connection_error","payload":{"message":"go away"}}`)
			_, _, _ = p.ws.Read(ctx)
		})
		_, err := Dial(ctx, url, LegacyWS)
		if err == nil || !strings.Contains(err.Error(), "go away") {
			t.Errorf("Dial = %v, want an error with the server's message", err)
		}
	})
	t.Run("unexpected message", func(t *testing.T) {
		url := fakeServer(t, []string{string(TransportWS)}, func(ctx context.Context, p peer) {
			p.expect(ctx, `{"type":"connection_init","payload":{}}`)
			p.send(ctx, `{"type":"next","id":"x"}`)
			_, _, _ = p.ws.Read(ctx)
		})
		_, err := Dial(ctx, url, TransportWS)
		if err == nil || !strings.Contains(err.Error(), `"next"`) {
			t.Errorf("Dial = %v, want an unexpected-message error", err)
		}
	})
}

func TestNextRejectsWrongProtocolMessages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := fakeServer(t, []string{string(TransportWS)}, func(ctx context.Context, p peer) {
		p.expect(ctx, `{"type":"connection_init","payload":{}}`)
		p.send(ctx, `{"type":"connection_ack"}`)
		p.send(ctx, `{"type":"data","id":"a","payload":{}}`) // legacy type on graphql-transport-ws
		p.send(ctx, `not json`)
		p.expectClose(ctx)
	})
	c, err := Dial(ctx, url, TransportWS)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	if _, err := c.Next(ctx); err == nil || !strings.Contains(err.Error(), `"data"`) {
		t.Errorf("Next = %v, want an unexpected-message error", err)
	}
	if _, err := c.Next(ctx); err == nil || !strings.Contains(err.Error(), "decode") {
		t.Errorf("Next = %v, want a decoding error", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// TestDialWithHeaderAndInitPayload: the upgrade request carries the
// headers and connection_init the payload, for servers that authenticate
// websocket clients either way.
func TestDialWithHeaderAndInitPayload(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gotAuth := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth <- r.Header.Get("Authorization")
		ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{string(TransportWS)}})
		if err != nil {
			t.Errorf("server: accept: %v", err)
			return
		}
		defer ws.CloseNow()
		p := peer{t, ws}
		p.expect(ctx, `{"type":"connection_init","payload":{"authToken":"t0k"}}`)
		p.send(ctx, `{"type":"connection_ack"}`)
		p.expectClose(ctx)
	}))
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	c, err := DialWith(ctx, url, TransportWS, DialOptions{Header: http.Header{"Authorization": {"Bearer s3cret"}}, InitPayload: json.RawMessage(`{"authToken":"t0k"}`)})
	if err != nil {
		t.Fatalf("DialWith: %v", err)
	}
	if got := <-gotAuth; got != "Bearer s3cret" {
		t.Errorf("upgrade Authorization = %q, want the header given", got)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}
