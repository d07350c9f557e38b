package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/soakd/soakd/internal/donut"
	"github.com/soakd/soakd/internal/gqlws"
)

func TestJudgeFrame(t *testing.T) {
	tests := []struct {
		name                string
		legacy, initialised bool
		binary              bool
		frame               string
		want                wsVerdict
	}{
		{"init", false, false, false, `{"type":"connection_init"}`, wsVerdict{init: true}},
		{"init with payload", false, false, false, `{"type":"connection_init","payload":{"a":1}}`, wsVerdict{init: true}},
		{"init with null payload", true, false, false, `{"type":"connection_init","payload":null}`, wsVerdict{init: true}},
		{"init payload not an object", false, false, false, `{"type":"connection_init","payload":5}`, wsVerdict{code: 4400, reason: reasonInvalid}},
		{"second init", false, true, false, `{"type":"connection_init"}`, wsVerdict{code: 4429, reason: reasonManyInits}},
		{"second init legacy", true, true, false, `{"type":"connection_init"}`, wsVerdict{code: 4429, reason: reasonManyInits}},
		{"subscribe", false, true, false, `{"type":"subscribe","id":"1","payload":{}}`, wsVerdict{start: "1"}},
		{"start", true, true, false, `{"type":"start","id":"1","payload":{}}`, wsVerdict{start: "1"}},
		{"subscribe before init", false, false, false, `{"type":"subscribe","id":"1","payload":{}}`, wsVerdict{code: 4401, reason: reasonNoInit}},
		{"start before init", true, false, false, `{"type":"start","id":"1","payload":{}}`, wsVerdict{code: 4401, reason: reasonNoInit}},
		{"subscribe without id", false, true, false, `{"type":"subscribe","payload":{}}`, wsVerdict{code: 4400, reason: reasonInvalid}},
		{"numeric id", false, true, false, `{"type":"subscribe","id":1,"payload":{}}`, wsVerdict{code: 4400, reason: reasonInvalid}},
		{"complete", false, true, false, `{"type":"complete","id":"1"}`, wsVerdict{stop: "1"}},
		{"ping", false, true, false, `{"type":"ping"}`, wsVerdict{}},
		{"pong", false, true, false, `{"type":"pong"}`, wsVerdict{}},
		{"stop", true, true, false, `{"type":"stop","id":"1"}`, wsVerdict{stop: "1"}},
		{"terminate", true, false, false, `{"type":"connection_terminate"}`, wsVerdict{}},
		{"ping before init goes to gqlgen", false, false, false, `{"type":"ping"}`, wsVerdict{}},
		{"legacy type on transport-ws", false, true, false, `{"type":"start","id":"1"}`, wsVerdict{code: 4400, reason: reasonInvalid}},
		{"transport-ws type on legacy", true, true, false, `{"type":"subscribe","id":"1"}`, wsVerdict{code: 4400, reason: reasonInvalid}},
		{"server type", false, true, false, `{"type":"next","id":"1"}`, wsVerdict{code: 4400, reason: reasonInvalid}},
		{"server type legacy", true, true, false, `{"type":"connection_ack"}`, wsVerdict{code: 4400, reason: reasonInvalid}},
		{"unknown type", false, true, false, `{"type":"bogus"}`, wsVerdict{code: 4400, reason: reasonInvalid}},
		{"no type", true, true, false, `{"id":"1"}`, wsVerdict{code: 4400, reason: reasonInvalid}},
		{"not JSON", false, false, false, `hello`, wsVerdict{code: 4400, reason: reasonInvalid}},
		{"trailing garbage", false, false, false, `{"type":"connection_init"} x`, wsVerdict{code: 4400, reason: reasonInvalid}},
		{"array", true, true, false, `[]`, wsVerdict{code: 4400, reason: reasonInvalid}},
		{"empty", false, true, false, ``, wsVerdict{code: 4400, reason: reasonInvalid}},
		{"binary", false, false, true, `{"type":"connection_init"}`, wsVerdict{code: 4400, reason: reasonBinary}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := judgeFrame(tt.legacy, tt.initialised, tt.binary, []byte(tt.frame)); got != tt.want {
				t.Errorf("judgeFrame(legacy %v, initialised %v, binary %v, %q) = %+v, want %+v",
					tt.legacy, tt.initialised, tt.binary, tt.frame, got, tt.want)
			}
		})
	}
}

// rawClient is a websocket client speaking the GraphQL protocols by hand, so
// tests can send what gqlws never would.
type rawClient struct {
	*websocket.Conn
	p gqlws.Protocol
}

func dialRaw(ctx context.Context, t *testing.T, url string, p gqlws.Protocol) rawClient {
	t.Helper()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{string(p)}})
	if err != nil {
		t.Fatalf("cannot dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	c.SetReadLimit(-1) // the slow-client test's events are large
	return rawClient{c, p}
}

func (c rawClient) send(ctx context.Context, t *testing.T, frame string) {
	t.Helper()
	if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatalf("cannot send %.60q: %v", frame, err)
	}
}

// subscribe returns the protocol's message starting subscription id.
func (c rawClient) subscribe(id string) string {
	typ := "subscribe"
	if c.p == gqlws.LegacyWS {
		typ = "start"
	}
	payload, _ := json.Marshal(map[string]any{"query": subscriptionQuery, "variables": map[string]any{"id": "1"}})
	if id == "" {
		return fmt.Sprintf(`{"type":%q,"payload":%s}`, typ, payload)
	}
	return fmt.Sprintf(`{"type":%q,"id":%q,"payload":%s}`, typ, id, payload)
}

// init sends connection_init and waits for connection_ack.
func (c rawClient) init(ctx context.Context, t *testing.T) {
	t.Helper()
	c.send(ctx, t, `{"type":"connection_init","payload":{}}`)
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("no connection_ack: %v", err)
		}
		if strings.Contains(string(b), `"connection_ack"`) {
			return
		}
	}
}

// closed reads until the server closes the connection and returns the
// close status and the types of the messages read on the way.
func (c rawClient) closed(ctx context.Context) (websocket.StatusCode, []string) {
	var types []string
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return websocket.CloseStatus(err), types
		}
		var m struct{ Type string }
		_ = json.Unmarshal(b, &m)
		types = append(types, m.Type)
	}
}

func TestWebsocketMalformedInput(t *testing.T) {
	for _, p := range []gqlws.Protocol{gqlws.TransportWS, gqlws.LegacyWS} {
		t.Run(string(p), func(t *testing.T) { testWebsocketMalformedInput(t, p) })
	}
}

// testWebsocketMalformedInput sends each kind of bad input on its own
// connection and checks the close status, then that the server still serves
// queries and subscriptions, and that no goroutine is left.
func testWebsocketMalformedInput(t *testing.T, p gqlws.Protocol) {
	ignore := goleak.IgnoreCurrent()
	const limit = 4096
	ts := newTestServer(t, Options{MaxBodyBytes: limit})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(ts.URL, "http") + "/graphql"

	tests := []struct {
		name   string
		init   bool
		binary bool
		frame  func(c rawClient) string
		want   websocket.StatusCode
	}{
		{"not JSON before init", false, false, func(rawClient) string { return "hello" }, 4400},
		{"not JSON after init", true, false, func(rawClient) string { return `{"type":` }, 4400},
		{"unknown type", true, false, func(rawClient) string { return `{"type":"bogus","id":"1"}` }, 4400},
		{"server message type", true, false, func(rawClient) string { return `{"type":"connection_ack"}` }, 4400},
		{"no type", true, false, func(rawClient) string { return `{"id":"1","payload":{}}` }, 4400},
		{"array", true, false, func(rawClient) string { return `[{"type":"connection_init"}]` }, 4400},
		{"subscribe before init", false, false, func(c rawClient) string { return c.subscribe("1") }, 4401},
		{"subscribe without id", true, false, func(c rawClient) string { return c.subscribe("") }, 4400},
		{"second init", true, false, func(rawClient) string { return `{"type":"connection_init"}` }, 4429},
		{"init payload not an object", false, false, func(rawClient) string { return `{"type":"connection_init","payload":"x"}` }, 4400},
		{"binary init", false, true, func(rawClient) string { return `{"type":"connection_init"}` }, 4400},
		{"binary subscribe", true, true, func(c rawClient) string { return c.subscribe("1") }, 4400},
		{"huge frame", true, false, func(rawClient) string {
			return `{"type":"ping","payload":{"pad":"` + strings.Repeat("x", limit) + `"}}`
		}, websocket.StatusMessageTooBig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialRaw(ctx, t, wsURL, p)
			if tt.init {
				c.init(ctx, t)
			}
			typ := websocket.MessageText
			if tt.binary {
				typ = websocket.MessageBinary
			}
			if err := c.Write(ctx, typ, []byte(tt.frame(c))); err != nil {
				t.Fatalf("cannot send: %v", err)
			}
			code, types := c.closed(ctx)
			if code != tt.want {
				t.Errorf("close status = %d, want %d (messages %v)", code, tt.want, types)
			}
			if p == gqlws.LegacyWS && tt.want >= 4400 && !slices.Contains(types, "connection_error") {
				t.Errorf("messages before the close = %v, want a connection_error", types)
			}
		})
	}
	if n := ts.svc.Broker.Stats().Subscribers; n != 0 {
		t.Errorf("Subscribers = %d after refused connections, want 0", n)
	}

	// The server keeps serving queries and subscriptions.
	status, _, gr := ts.post(t, `{ add(x: 1, y: 2) }`, nil)
	mustData(t, status, gr, `{"add":3}`)
	expectEvent(ctx, t, ts, wsURL, p)

	ts.Close()
	verifyNoLeaks(t, ignore)
}

// expectEvent subscribes with a well-behaved client and checks that it
// receives a mutation's event.
func expectEvent(ctx context.Context, t *testing.T, ts *testServer, wsURL string, p gqlws.Protocol) {
	t.Helper()
	c, err := gqlws.Dial(ctx, wsURL, p)
	if err != nil {
		t.Fatalf("cannot dial a well-behaved client: %v", err)
	}
	defer c.Close()
	before := ts.svc.Broker.Stats().Subscribers
	if err := c.Subscribe(ctx, "ok", subscriptionQuery, map[string]any{"id": "1"}); err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	waitFor(t, "the subscription to reach the broker", 10*time.Second, func() bool {
		return ts.svc.Broker.Stats().Subscribers == before+1
	})
	mutate(t, ts, donut.Donut{ID: "1", Name: "after", Flavor: donut.Vanilla})
	m, err := c.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	if m.Type != gqlws.TypeNext || !strings.Contains(string(m.Payload), `"after"`) {
		t.Errorf("got %s message %s, want the event of the mutation", m.Type, m.Payload)
	}
}

func TestWebsocketInitTimeout(t *testing.T) {
	for _, p := range []gqlws.Protocol{gqlws.TransportWS, gqlws.LegacyWS} {
		t.Run(string(p), func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			ts := newTestServer(t, Options{WebsocketInitTimeout: 50 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := dialRaw(ctx, t, "ws"+strings.TrimPrefix(ts.URL, "http")+"/graphql", p)
			code, types := c.closed(ctx) // sends nothing
			if code != 4408 {
				t.Errorf("close status = %d, want 4408 (messages %v)", code, types)
			}
			_ = c.CloseNow()
			ts.Close()
			verifyNoLeaks(t, ignore)
		})
	}
}

// mutateErr is mutate for goroutines other than the test's: it returns the
// failure instead of ending the test.
func mutateErr(ctx context.Context, client *http.Client, url string, d donut.Donut) error {
	body, err := json.Marshal(map[string]any{
		"query":     `mutation Put($d: DonutInput!) { addOrUpdateDonut(donut: $d) { id } }`,
		"variables": map[string]any{"d": map[string]any{"id": d.ID, "name": d.Name, "flavor": string(d.Flavor)}},
	})
	if err != nil {
		return fmt.Errorf("cannot encode mutation: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/graphql", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("cannot build mutation: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("mutation failed: %w", err)
	}
	defer resp.Body.Close()
	var gr gqlResponse
	if err := json.NewDecoder(resp.Body).Decode(&gr); err != nil {
		return fmt.Errorf("cannot decode mutation response: %w", err)
	}
	if resp.StatusCode != http.StatusOK || len(gr.Errors) != 0 {
		return fmt.Errorf("mutation: status %d, errors %v", resp.StatusCode, gr.messages())
	}
	return nil
}

// stalledSubscriber opens a subscription to donut "1" with a client that
// then never reads again.
func stalledSubscriber(ctx context.Context, t *testing.T, ts *testServer, p gqlws.Protocol) rawClient {
	t.Helper()
	c := dialRaw(ctx, t, "ws"+strings.TrimPrefix(ts.URL, "http")+"/graphql", p)
	c.init(ctx, t)
	c.send(ctx, t, c.subscribe("slow"))
	waitFor(t, "the subscription to reach the broker", 10*time.Second, func() bool {
		return ts.svc.Broker.Stats().Subscribers == 1
	})
	return c
}

// bigDonut returns an update of donut "1" whose event is about 64 KiB, so a
// stalled client's socket buffers (a few MiB on loopback) fill after a few
// hundred events.
func bigDonut() donut.Donut {
	return donut.Donut{ID: "1", Name: strings.Repeat("x", 64<<10), Flavor: donut.Vanilla}
}

func TestSlowSubscriber(t *testing.T) {
	for _, p := range []gqlws.Protocol{gqlws.TransportWS, gqlws.LegacyWS} {
		t.Run(string(p), func(t *testing.T) { testSlowSubscriber(t, p) })
	}
}

// testSlowSubscriber publishes to a subscriber that never reads, from
// several concurrent publishers, until the broker has dropped 100 of its
// events: every mutation must complete, and every event must be either
// delivered to the subscriber's buffer or dropped and counted.
func testSlowSubscriber(t *testing.T, p gqlws.Protocol) {
	ignore := goleak.IgnoreCurrent()
	// No write timeout: the stalled client must stay connected throughout.
	ts := newTestServer(t, Options{WebsocketWriteTimeout: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := stalledSubscriber(ctx, t, ts, p)

	const workers, perWorker, wantDropped = 4, 500, 100
	client := *ts.Client() // shares the transport, whose idle connections ts.Close closes
	client.Timeout = 30 * time.Second
	big := bigDonut()
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range perWorker {
				if ts.svc.Broker.Stats().Dropped >= wantDropped {
					return
				}
				if err := mutateErr(ctx, &client, ts.URL, big); err != nil {
					failed.Add(1)
					t.Errorf("publisher: %v", err)
					continue
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()

	st := ts.svc.Broker.Stats()
	if failed.Load() != 0 {
		t.Errorf("%d of %d mutations failed, want none: publishers must not block", failed.Load(), failed.Load()+ok.Load())
	}
	if st.Dropped < wantDropped {
		t.Errorf("broker dropped %d events after %d mutations, want at least %d", st.Dropped, ok.Load(), wantDropped)
	}
	if st.Published != uint64(ok.Load()) {
		t.Errorf("Published = %d, want %d (one per mutation)", st.Published, ok.Load())
	}
	if st.Delivered+st.Dropped != st.Published {
		t.Errorf("Delivered %d + Dropped %d = %d, want Published %d: events lost uncounted",
			st.Delivered, st.Dropped, st.Delivered+st.Dropped, st.Published)
	}
	if st.Subscribers != 1 {
		t.Errorf("Subscribers = %d while the slow client is connected, want 1", st.Subscribers)
	}

	_ = c.CloseNow()
	waitFor(t, "the slow subscription to end", 10*time.Second, func() bool {
		return ts.svc.Broker.Stats().Subscribers == 0
	})
	ts.Close()
	verifyNoLeaks(t, ignore)
}

// TestSlowSubscriberWriteTimeout checks that a subscriber that stops reading
// is disconnected once a write to it has been blocked for the write timeout,
// which ends its subscription.
func TestSlowSubscriberWriteTimeout(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ts := newTestServer(t, Options{WebsocketWriteTimeout: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := stalledSubscriber(ctx, t, ts, gqlws.TransportWS)

	// Publish until the subscriber's buffer overflows: its connection's
	// writer is then blocked, and the write timeout runs.
	big := bigDonut()
	for i := 0; ts.svc.Broker.Stats().Dropped == 0 && ts.svc.Broker.Stats().Subscribers == 1; i++ {
		if i == 4000 {
			t.Fatalf("no event dropped after %d mutations: the subscriber's buffer never filled", i)
		}
		mutate(t, ts, big)
	}
	waitFor(t, "the server to disconnect the stalled subscriber", 10*time.Second, func() bool {
		return ts.svc.Broker.Stats().Subscribers == 0
	})

	_ = c.CloseNow()
	ts.Close()
	verifyNoLeaks(t, ignore)
}

// closeError reads until the server closes the connection and returns its
// close frame (code -1 when the connection ended another way), with the
// types of the messages read on the way.
func (c rawClient) closeError(ctx context.Context) (websocket.CloseError, []string) {
	var types []string
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				ce.Code = -1
			}
			return ce, types
		}
		var m struct{ Type string }
		_ = json.Unmarshal(b, &m)
		types = append(types, m.Type)
	}
}

// complete returns the protocol's message ending subscription id.
func (c rawClient) complete(id string) string {
	typ := "complete"
	if c.p == gqlws.LegacyWS {
		typ = "stop"
	}
	return fmt.Sprintf(`{"type":%q,"id":%q}`, typ, id)
}

// until reads messages until one of type typ with id arrives.
func (c rawClient) until(ctx context.Context, t *testing.T, typ, id string) {
	t.Helper()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("no %s for %q: %v", typ, id, err)
		}
		var m struct{ Type, ID string }
		_ = json.Unmarshal(b, &m)
		if m.Type == typ && m.ID == id {
			return
		}
	}
}

func TestWebsocketSubscriberIDs(t *testing.T) {
	for _, p := range []gqlws.Protocol{gqlws.TransportWS, gqlws.LegacyWS} {
		t.Run(string(p), func(t *testing.T) { testWebsocketSubscriberIDs(t, p) })
	}
}

// testWebsocketSubscriberIDs checks the rules on operation ids: a subscribe
// reusing the id of an active operation closes the socket with 4409, an id
// is free again once the server has completed it, and more active
// operations than the limit close the socket with 4429.
func testWebsocketSubscriberIDs(t *testing.T, p gqlws.Protocol) {
	ignore := goleak.IgnoreCurrent()
	ts := newTestServer(t, Options{MaxSubscriptionsPerSocket: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(ts.URL, "http") + "/graphql"
	subscribers := func(n int) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d subscriptions in the broker", n), 10*time.Second, func() bool {
			return ts.svc.Broker.Stats().Subscribers == n
		})
	}
	// wantClose expects the server to close c with code and reason (after a
	// connection_error on legacy graphql-ws), within 5 s.
	wantClose := func(c rawClient, code websocket.StatusCode, reason string) {
		t.Helper()
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		defer rcancel()
		ce, types := c.closeError(rctx)
		if ce.Code != code || ce.Reason != reason {
			t.Errorf("close = %d %q, want %d %q (messages %v)", ce.Code, ce.Reason, code, reason, types)
		}
		if p == gqlws.LegacyWS && !slices.Contains(types, "connection_error") {
			t.Errorf("messages before the close = %v, want a connection_error", types)
		}
	}

	t.Run("duplicate id", func(t *testing.T) {
		c := dialRaw(ctx, t, wsURL, p)
		c.init(ctx, t)
		c.send(ctx, t, c.subscribe("dup"))
		subscribers(1)
		c.send(ctx, t, c.subscribe("dup"))
		wantClose(c, 4409, "Subscriber for dup already exists")
		subscribers(0)
	})

	t.Run("duplicate long id", func(t *testing.T) {
		// A close reason is at most 123 bytes: the id is cut.
		id := strings.Repeat("é", 100)
		c := dialRaw(ctx, t, wsURL, p)
		c.init(ctx, t)
		c.send(ctx, t, c.subscribe(id))
		subscribers(1)
		c.send(ctx, t, c.subscribe(id))
		wantClose(c, 4409, "Subscriber for "+strings.Repeat("é", 30)+"… (200 bytes) already exists")
		subscribers(0)
	})

	t.Run("id reused after complete", func(t *testing.T) {
		c := dialRaw(ctx, t, wsURL, p)
		c.init(ctx, t)
		for range 3 {
			c.send(ctx, t, c.subscribe("again"))
			subscribers(1)
			c.send(ctx, t, c.complete("again"))
			c.until(ctx, t, "complete", "again")
			subscribers(0)
		}
		// Queries over the socket complete on their own: their ids are free
		// again and they do not count toward the limit.
		for range 5 {
			c.send(ctx, t, fmt.Sprintf(`{"type":%q,"id":"q","payload":{"query":"{ add(x: 1, y: 2) }"}}`,
				map[gqlws.Protocol]string{gqlws.TransportWS: "subscribe", gqlws.LegacyWS: "start"}[p]))
			c.until(ctx, t, "complete", "q")
		}
		c.send(ctx, t, c.subscribe("again"))
		subscribers(1)
		_ = c.CloseNow()
		subscribers(0)
	})

	t.Run("too many subscriptions", func(t *testing.T) {
		c := dialRaw(ctx, t, wsURL, p)
		c.init(ctx, t)
		c.send(ctx, t, c.subscribe("1"))
		c.send(ctx, t, c.subscribe("2"))
		subscribers(2)
		c.send(ctx, t, c.subscribe("3"))
		wantClose(c, 4429, "Too many subscriptions: the limit is 2 per connection")
		subscribers(0)
	})

	expectEvent(ctx, t, ts, wsURL, p)
	ts.Close()
	verifyNoLeaks(t, ignore)
}

func TestClip(t *testing.T) {
	for _, tt := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 5, "short"},
		{"longer", 4, "long… (6 bytes)"},
		{"aé", 2, "a… (3 bytes)"}, // never half a character
		{"", 0, ""},
	} {
		if got := clip(tt.s, tt.n); got != tt.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}
