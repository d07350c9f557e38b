package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/soakd/soakd/internal/donut"
	"github.com/soakd/soakd/internal/gqlws"
)

const subscriptionQuery = `subscription On($id: ID!) { onDonutUpdated(id: $id) { id name flavor } }`

// waitFor polls cond every 10 ms until it holds or the deadline passes.
func waitFor(t *testing.T, what string, deadline time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", deadline, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// verifyNoLeaks retries goleak for a bounded time: server goroutines finish
// their close handshakes asynchronously after the sockets close.
func verifyNoLeaks(t *testing.T, opts ...goleak.Option) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for {
		err := goleak.Find(opts...)
		if err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("goroutines leaked: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSubscriptions(t *testing.T) {
	for _, p := range []gqlws.Protocol{gqlws.TransportWS, gqlws.LegacyWS} {
		t.Run(string(p), func(t *testing.T) { testSubscriptions(t, p) })
	}
}

// testSubscriptions subscribes several clients to different ids, sends a known
// mix of matching and non-matching mutations, and checks that every
// subscription receives exactly its events, in order.
func testSubscriptions(t *testing.T, p gqlws.Protocol) {
	ignore := goleak.IgnoreCurrent() // goroutines of earlier tests are not ours

	// A short keep-alive makes legacy connections interleave "ka" messages,
	// which the client must skip.
	ts := newTestServer(t, Options{KeepAlive: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wsURL := "ws" + strings.TrimPrefix(ts.URL, "http") + "/graphql"

	// client i holds one subscription per id in subs[i]; id "1" is watched
	// twice, id "4" by nobody.
	subs := [][]string{{"1", "2"}, {"2"}, {"3"}, {"1"}}
	clients := make([]*gqlws.Conn, len(subs))
	total := 0
	for i, ids := range subs {
		c, err := gqlws.Dial(ctx, wsURL, p)
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		clients[i] = c
		for _, id := range ids {
			if err := c.Subscribe(ctx, "sub-"+id, subscriptionQuery, map[string]any{"id": id}); err != nil {
				t.Fatalf("Subscribe: %v", err)
			}
			total++
		}
	}
	waitFor(t, "all subscriptions to reach the broker", 10*time.Second, func() bool {
		return ts.svc.Broker.Stats().Subscribers == total
	})

	// Mutations in a known order; want[id] is what a subscriber of id must see.
	ids := []string{"1", "2", "4", "1", "3", "4", "2", "2", "1", "5"}
	want := map[string][]donut.Donut{}
	for k, id := range ids {
		d := donut.Donut{ID: id, Name: fmt.Sprintf("m%d", k), Flavor: donut.SeedDonut(k).Flavor}
		mutate(t, ts, d)
		want[id] = append(want[id], d)
	}
	// A final sentinel per subscribed id: receiving it right after the
	// expected events proves nothing else was queued in between.
	for _, id := range []string{"1", "2", "3"} {
		d := donut.Donut{ID: id, Name: "sentinel", Flavor: donut.Vanilla}
		mutate(t, ts, d)
		want[id] = append(want[id], d)
	}

	for i, c := range clients {
		got := map[string][]donut.Donut{}
		n := 0
		for _, id := range subs[i] {
			n += len(want[id])
		}
		for range n {
			m, err := c.Next(ctx)
			if err != nil {
				t.Fatalf("client %d: Next: %v", i, err)
			}
			if m.Type != gqlws.TypeNext {
				t.Fatalf("client %d: got %q message %s, want %q", i, m.Type, m.Payload, gqlws.TypeNext)
			}
			var payload struct {
				Data struct {
					OnDonutUpdated donut.Donut `json:"onDonutUpdated"`
				} `json:"data"`
			}
			if err := json.Unmarshal(m.Payload, &payload); err != nil {
				t.Fatalf("client %d: bad payload %s: %v", i, m.Payload, err)
			}
			got[m.ID] = append(got[m.ID], payload.Data.OnDonutUpdated)
		}
		for _, id := range subs[i] {
			if g, w := fmt.Sprint(got["sub-"+id]), fmt.Sprint(want[id]); g != w {
				t.Errorf("client %d, subscription to %q:\n got  %s\n want %s", i, id, g, w)
			}
		}
		if len(got) != len(subs[i]) {
			t.Errorf("client %d got events for subscriptions %v, want only %v", i, keys(got), subs[i])
		}
	}

	st := ts.svc.Broker.Stats()
	if st.Dropped != 0 {
		t.Errorf("broker dropped %d events, want 0", st.Dropped)
	}
	for i, c := range clients {
		if err := c.Close(); err != nil {
			t.Errorf("client %d: Close: %v", i, err)
		}
	}
	waitFor(t, "subscribers to return to 0", 10*time.Second, func() bool {
		return ts.svc.Broker.Stats().Subscribers == 0
	})
	ts.Close()
	verifyNoLeaks(t, ignore)
}

func mutate(t *testing.T, ts *testServer, d donut.Donut) {
	t.Helper()
	_, raw, gr := ts.post(t, `mutation Put($d: DonutInput!) { addOrUpdateDonut(donut: $d) { id } }`,
		map[string]any{"d": map[string]any{"id": d.ID, "name": d.Name, "flavor": string(d.Flavor)}})
	if len(gr.Errors) != 0 {
		t.Fatalf("mutation failed: %s", raw)
	}
}

func keys(m map[string][]donut.Donut) []string {
	var k []string
	for id := range m {
		k = append(k, id)
	}
	return k
}
