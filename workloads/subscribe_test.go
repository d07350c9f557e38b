package workloads

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"go.uber.org/goleak"

	"github.com/soakd/soakd/internal/donut"
	"github.com/soakd/soakd/internal/gqlws"
	"github.com/soakd/soakd/internal/graph"
)

func TestSubscriptionsValidate(t *testing.T) {
	valid := Subscriptions{Clients: 500, PerClient: 2, Protocol: ProtocolMixed, Drain: 5 * time.Second}
	f := func(name string, mutate func(*Subscriptions), wantKeys ...string) {
		t.Helper()
		s := valid
		mutate(&s)
		err := s.Validate()
		if len(wantKeys) == 0 {
			if err != nil {
				t.Errorf("%s: got error %v, want none", name, err)
			}
			return
		}
		if err == nil {
			t.Fatalf("%s: got no error, want errors naming %v", name, wantKeys)
		}
		for _, k := range wantKeys {
			if !strings.Contains(err.Error(), k+":") {
				t.Errorf("%s: got error %q, want one naming %q", name, err, k)
			}
		}
	}
	f("seed 002", func(*Subscriptions) {})
	f("transport-ws", func(s *Subscriptions) { s.Protocol = "graphql-transport-ws" })
	f("legacy graphql-ws", func(s *Subscriptions) { s.Protocol = "graphql-ws" })
	f("no drain", func(s *Subscriptions) { s.Drain = 0 })
	f("no clients", func(s *Subscriptions) { s.Clients = 0 }, "clients")
	f("too many clients", func(s *Subscriptions) { s.Clients = MaxSubscriptionClients + 1 }, "clients")
	f("no subscriptions per client", func(s *Subscriptions) { s.PerClient = 0 }, "per_client")
	f("too many per client", func(s *Subscriptions) { s.PerClient = MaxSubscriptionsPerClient + 1 }, "per_client")
	f("too many in total", func(s *Subscriptions) { s.Clients, s.PerClient = MaxSubscriptionClients, 11 }, "per_client")
	f("unknown protocol", func(s *Subscriptions) { s.Protocol = "websocket" }, "protocol")
	f("empty protocol", func(s *Subscriptions) { s.Protocol = "" }, "protocol")
	f("negative drain", func(s *Subscriptions) { s.Drain = -time.Second }, "drain")
	f("endless drain", func(s *Subscriptions) { s.Drain = MaxSubscriptionDrain + 1 }, "drain")
	f("everything wrong at once", func(s *Subscriptions) { *s = Subscriptions{Drain: -1} },
		"clients", "per_client", "protocol", "drain")
}

func TestSubscriptionTarget(t *testing.T) {
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("w%d", i)
	}
	perID := map[string]int{}
	for c := range 500 {
		for j := range 2 {
			perID[subscriptionTarget(c, j, 2, ids)]++
		}
	}
	for _, id := range ids {
		if got := perID[id]; got != 10 {
			t.Errorf("id %s has %d subscriptions, want 10", id, got)
		}
	}
	if got, want := subscriptionTarget(3, 1, 2, ids), "w7"; got != want {
		t.Errorf("subscriptionTarget(3, 1, 2, ids) = %q, want %q", got, want)
	}
}

func TestClientProtocol(t *testing.T) {
	f := func(protocol string, c int, want gqlws.Protocol) {
		t.Helper()
		if got := clientProtocol(protocol, c); got != want {
			t.Errorf("clientProtocol(%q, %d) = %q, want %q", protocol, c, got, want)
		}
	}
	f(ProtocolMixed, 0, gqlws.TransportWS)
	f(ProtocolMixed, 1, gqlws.LegacyWS)
	f(ProtocolMixed, 498, gqlws.TransportWS)
	f("graphql-ws", 0, gqlws.LegacyWS)
	f("graphql-transport-ws", 1, gqlws.TransportWS)
}

func TestWebsocketURL(t *testing.T) {
	f := func(target, want string) {
		t.Helper()
		got, err := websocketURL(target)
		if err != nil {
			t.Fatalf("websocketURL(%q): %v", target, err)
		}
		if got != want {
			t.Errorf("websocketURL(%q) = %q, want %q", target, got, want)
		}
	}
	f("http://127.0.0.1:8080", "ws://127.0.0.1:8080/graphql")
	f("http://127.0.0.1:8080/", "ws://127.0.0.1:8080/graphql")
	f("https://127.0.0.1:8443/soak", "wss://127.0.0.1:8443/soak/graphql")
	for _, bad := range []string{"", "127.0.0.1:8080", "ws://127.0.0.1:8080", "http://127.0.0.1:1/?x=1"} {
		if got, err := websocketURL(bad); err == nil {
			t.Errorf("websocketURL(%q) = %q, want an error", bad, got)
		}
	}
}

func TestEventBalance(t *testing.T) {
	f := func(expected, unique, wantLost, wantUnexpected int64) {
		t.Helper()
		lost, unexpected := eventBalance(expected, unique)
		if lost != wantLost || unexpected != wantUnexpected {
			t.Errorf("eventBalance(%d, %d) = %d, %d, want %d, %d", expected, unique, lost, unexpected, wantLost, wantUnexpected)
		}
	}
	f(5, 5, 0, 0)
	f(5, 3, 2, 0)
	f(5, 7, 0, 2)
	f(0, 0, 0, 0)
	f(0, 1, 0, 1)
}

// TestSubscriberCounting feeds one connection's reader logic a scripted
// sequence of messages, covering what a healthy server never produces
// (duplicates, reordering, foreign ids, garbage), and checks every counter.
func TestSubscriberCounting(t *testing.T) {
	ops := donutOps(1)
	cs, err := compileSubscription(ops[DonutUpdates], ops, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	s := &Subscribers{
		sub:   cs,
		conns: []*subscriberConn{{subs: []subscriberState{{id: "w1"}, {id: "w2"}}}},
		total: 2,
		// One latency per counted event.
		latency: hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs),
	}
	c := s.conns[0]
	now := time.Unix(1_800_000_000, 0)
	event := func(sub, id string, seq int64) gqlws.Message {
		name := EventName(id, seq, now.Add(-3*time.Millisecond))
		return gqlws.Message{ID: sub, Type: gqlws.TypeNext,
			Payload: json.RawMessage(`{"data":{"onDonutUpdated":{"id":"` + id + `","name":"` + name + `","flavor":"VANILLA"}}}`)}
	}
	for _, m := range []gqlws.Message{
		event("0", "w1", 0), // probe: not counted
		event("0", "w1", 1),
		event("0", "w1", 2),
		event("0", "w1", 2), // duplicate
		event("0", "w1", 4), // 3 is missing
		event("0", "w1", 3), // late: duplicate and out of order
		event("0", "w1", 0), // a late probe is never counted, not even as a duplicate
		event("1", "w2", 1),
		event("1", "w1", 5), // foreign: subscription 1 listens to w2
		event("7", "w1", 6), // foreign: no such subscription
		{ID: "1", Type: gqlws.TypeNext, Payload: json.RawMessage(`{"data":{"onDonutUpdated":{"id":"w2","name":"donut-w2","flavor":"VANILLA"}}}`)},
		{ID: "1", Type: gqlws.TypeNext, Payload: json.RawMessage(`{"errors":[{"message":"boom"}],"data":null}`)},
		{ID: "1", Type: gqlws.TypeNext, Payload: json.RawMessage(`not json`)},
		{ID: "1", Type: gqlws.TypeError, Payload: json.RawMessage(`[{"message":"bad"}]`)},
		{ID: "0", Type: gqlws.TypeComplete}, // the server ended a subscription early
	} {
		s.handle(c, m, now)
	}
	// Once Close has begun, complete answers the client's own complete/stop.
	s.closing.Store(true)
	s.handle(c, gqlws.Message{ID: "1", Type: gqlws.TypeComplete}, now)
	if !c.subs[0].live.Load() || c.subs[1].live.Load() {
		t.Errorf("live = %v, %v, want true, false", c.subs[0].live.Load(), c.subs[1].live.Load())
	}
	r := s.tally([][]int64{{5, 2}})
	want := SubscriptionResult{
		Clients: 1, Subscriptions: 2,
		Expected: 7, Received: 6, Lost: 2 + 1, Duplicated: 2, OutOfOrder: 1, Foreign: 2, ClientErrors: 5,
	}
	if r.Clients != want.Clients || r.Subscriptions != want.Subscriptions || r.Expected != want.Expected ||
		r.Received != want.Received || r.Lost != want.Lost || r.Duplicated != want.Duplicated ||
		r.OutOfOrder != want.OutOfOrder || r.Foreign != want.Foreign || r.ClientErrors != want.ClientErrors {
		t.Errorf("got %+v,\nwant %+v", r, want)
	}
	if len(r.ErrorExamples) != maxExamples {
		t.Errorf("got %d error examples, want %d: %q", len(r.ErrorExamples), maxExamples, r.ErrorExamples)
	}
	// HDR keeps 3 significant figures: 3 ms may read back as 3.001 ms.
	if math.Abs(r.LatencyMs.P50-3) > 0.01 || math.Abs(r.LatencyMs.Max-3) > 0.01 {
		t.Errorf("latency p50 %v ms, max %v ms, want 3 ms for both", r.LatencyMs.P50, r.LatencyMs.Max)
	}
	if n := s.latency.TotalCount(); n != 4 {
		t.Errorf("recorded %d latencies, want 4 (one per unique event)", n)
	}
	if r.LatencyNote != SubscriptionLatencyNote {
		t.Errorf("latency note %q, want SubscriptionLatencyNote", r.LatencyNote)
	}

	// More unique events than expected are reported, not hidden.
	if r := s.tally([][]int64{{1, 0}}); r.Unexpected != 3 || r.Lost != 0 {
		t.Errorf("with expectations 1 and 0: got unexpected %d, lost %d, want 3, 0", r.Unexpected, r.Lost)
	}
}

// subscriptionServer is a real soakd GraphQL target on loopback.
type subscriptionServer struct {
	*httptest.Server
	svc *donut.Service
}

func newSubscriptionServer(t *testing.T, buffer int) *subscriptionServer {
	t.Helper()
	svc := &donut.Service{Store: donut.NewStore(10), Broker: donut.NewBroker(buffer)}
	mux := http.NewServeMux()
	mux.Handle("/graphql", graph.NewHandler(svc, graph.Options{}))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return &subscriptionServer{Server: ts, svc: svc}
}

// mutate writes donut id with the given name through a real GraphQL mutation.
func (ts *subscriptionServer) mutate(ctx context.Context, id, name string) error {
	body, err := json.Marshal(map[string]any{
		"query":     `mutation Put($d: DonutInput!) { addOrUpdateDonut(donut: $d) { id } }`,
		"variables": map[string]any{"d": map[string]any{"id": id, "name": name, "flavor": "VANILLA"}},
	})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/graphql", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := ts.Client().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || bytes.Contains(raw, []byte(`"errors"`)) {
		return fmt.Errorf("mutation of %s failed: HTTP %d: %s", id, resp.StatusCode, raw)
	}
	return nil
}

// probe is the probe OpenSubscribers needs: a real mutation writing seq 0.
func (ts *subscriptionServer) probe(ctx context.Context, id string) error {
	return ts.mutate(ctx, id, EventName(id, 0, time.Now()))
}

// waitUntil polls cond every 10 ms until it holds or the deadline passes.
func waitUntil(t *testing.T, what string, deadline time.Duration, cond func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", deadline, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// verifyNoGoroutinesLeft retries goleak for a bounded time: server goroutines
// finish their close handshakes asynchronously after the sockets close.
func verifyNoGoroutinesLeft(t *testing.T, opts ...goleak.Option) {
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

// TestSubscribersSeed002 runs seed 002's subscription clients (500
// connections x 2 subscriptions, mixed protocols) against the real GraphQL
// target while a known set of mutations runs, and checks every event is
// accounted for exactly.
func TestSubscribersSeed002(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ts := newSubscriptionServer(t, 1024)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ids := make([]string, 100)
	for i := range ids {
		ids[i] = fmt.Sprintf("w%d", i)
	}
	spec := Subscriptions{Clients: 500, PerClient: 2, Protocol: ProtocolMixed, Drain: 10 * time.Second}
	subs, err := OpenSubscribers(ctx, ts.URL, spec, donutOps(1)[DonutUpdates], donutOps(1), ids, ts.probe)
	if err != nil {
		t.Fatalf("OpenSubscribers: %v", err)
	}
	if got := ts.svc.Broker.Stats().Subscribers; got != 1000 {
		t.Errorf("broker has %d subscribers once OpenSubscribers returned, want 1000", got)
	}

	// Five mutations per id, seq 1..5; each id belongs to one writer goroutine
	// so its sequence numbers are sent in order, as one virtual user would.
	const perID, writers = 5, 4
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for k := w; k < len(ids); k += writers {
				for seq := int64(1); seq <= perID; seq++ {
					if err := ts.mutate(ctx, ids[k], EventName(ids[k], seq, time.Now())); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("mutation: %v", err)
	}

	r := subs.Close(ctx, func(string) int64 { return perID })
	f := func(what string, got, want int64) {
		t.Helper()
		if got != want {
			t.Errorf("%s: got %d, want %d", what, got, want)
		}
	}
	f("clients", int64(r.Clients), 500)
	f("subscriptions", int64(r.Subscriptions), 1000)
	f("expected", r.Expected, 5000)
	f("received", r.Received, 5000)
	f("lost", r.Lost, 0)
	f("duplicated", r.Duplicated, 0)
	f("out of order", r.OutOfOrder, 0)
	f("unexpected", r.Unexpected, 0)
	f("foreign", r.Foreign, 0)
	f("client errors", r.ClientErrors, 0)
	if len(r.ErrorExamples) != 0 {
		t.Errorf("error examples: got %q, want none", r.ErrorExamples)
	}
	if r.LatencyMs.P50 <= 0 || r.LatencyMs.Max < r.LatencyMs.P50 {
		t.Errorf("latency: got p50 %v ms, max %v ms, want 0 < p50 <= max", r.LatencyMs.P50, r.LatencyMs.Max)
	}
	if st := ts.svc.Broker.Stats(); st.Dropped != 0 {
		t.Errorf("broker dropped %d events, want 0", st.Dropped)
	}
	if again := subs.Close(ctx, func(string) int64 { return 0 }); again.Expected != r.Expected {
		t.Errorf("second Close: got expected %d, want the first result's %d", again.Expected, r.Expected)
	}

	waitUntil(t, "broker subscribers to return to 0", 10*time.Second, func() bool {
		return ts.svc.Broker.Stats().Subscribers == 0
	})
	ts.Close()
	verifyNoGoroutinesLeft(t, ignore)
}

// TestSubscribersReportDrops overflows a one-event subscriber buffer with a
// burst and checks the loss is reported, and matches what the broker dropped.
func TestSubscribersReportDrops(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ts := newSubscriptionServer(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	spec := Subscriptions{Clients: 2, PerClient: 1, Protocol: string(gqlws.LegacyWS), Drain: 2 * time.Second}
	subs, err := OpenSubscribers(ctx, ts.URL, spec, donutOps(1)[DonutUpdates], donutOps(1), []string{"w0"}, ts.probe)
	if err != nil {
		t.Fatalf("OpenSubscribers: %v", err)
	}
	const burst = 200
	for seq := int64(1); seq <= burst; seq++ {
		ts.svc.Update(donut.Donut{ID: "w0", Name: EventName("w0", seq, time.Now()), Flavor: donut.Vanilla})
	}
	r := subs.Close(ctx, func(string) int64 { return burst })
	st := ts.svc.Broker.Stats()
	if st.Dropped == 0 {
		t.Fatalf("broker dropped nothing from a burst of %d into a buffer of 1; the test proves nothing", burst)
	}
	if r.Lost <= 0 {
		t.Errorf("lost: got %d, want > 0 (the broker dropped %d)", r.Lost, st.Dropped)
	}
	// Every event the broker delivered reached its client within the drain,
	// so what is lost is exactly what the broker dropped.
	if r.Lost != int64(st.Dropped) {
		t.Errorf("lost: got %d, want the broker's dropped count %d", r.Lost, st.Dropped)
	}
	if r.Expected != 2*burst || r.Received != r.Expected-r.Lost {
		t.Errorf("got expected %d, received %d, want %d and expected - lost = %d", r.Expected, r.Received, 2*burst, r.Expected-r.Lost)
	}
	if r.Duplicated != 0 || r.Foreign != 0 || r.ClientErrors != 0 {
		t.Errorf("got duplicated %d, foreign %d, client errors %d (%q), want 0, 0, 0", r.Duplicated, r.Foreign, r.ClientErrors, r.ErrorExamples)
	}

	waitUntil(t, "broker subscribers to return to 0", 10*time.Second, func() bool {
		return ts.svc.Broker.Stats().Subscribers == 0
	})
	ts.Close()
	verifyNoGoroutinesLeft(t, ignore)
}

// TestOpenSubscribersFails checks that a failing probe, an unreachable target
// and an invalid spec are errors, and that nothing is left running.
func TestOpenSubscribersFails(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	ts := newSubscriptionServer(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spec := Subscriptions{Clients: 3, PerClient: 2, Protocol: ProtocolMixed}

	failing := func(context.Context, string) error { return fmt.Errorf("no writer") }
	if _, err := OpenSubscribers(ctx, ts.URL, spec, donutOps(1)[DonutUpdates], donutOps(1), []string{"w0"}, failing); err == nil || !strings.Contains(err.Error(), "no writer") ||
		strings.Contains(err.Error(), "donut") || !strings.Contains(err.Error(), `subscription to id "w0"`) {
		t.Errorf("failing probe: got error %v, want one wrapping the probe's, naming the id and no demo's words", err)
	}
	// A probe that writes nothing never makes the subscriptions live: ctx
	// bounds the wait. It ends once every subscription is open and probed
	// (the probe cancels it), not after a wall-clock timeout that a loaded
	// machine can spend dialling.
	short, cancelShort := context.WithCancel(ctx)
	_, err := OpenSubscribers(short, ts.URL, spec, donutOps(1)[DonutUpdates], donutOps(1), []string{"w0"}, func(context.Context, string) error { cancelShort(); return nil })
	cancelShort()
	if err == nil || !strings.Contains(err.Error(), "0 of 6 live") {
		t.Errorf("silent probe: got error %v, want one saying 0 of 6 live", err)
	}
	if _, err := OpenSubscribers(ctx, ts.URL, Subscriptions{}, donutOps(1)[DonutUpdates], donutOps(1), []string{"w0"}, ts.probe); err == nil {
		t.Error("invalid spec: got no error")
	}
	if _, err := OpenSubscribers(ctx, ts.URL, spec, donutOps(1)[DonutUpdates], donutOps(1), nil, ts.probe); err == nil {
		t.Error("no ids: got no error")
	}
	waitUntil(t, "broker subscribers to return to 0", 10*time.Second, func() bool {
		return ts.svc.Broker.Stats().Subscribers == 0
	})
	ts.Close()
	if _, err := OpenSubscribers(ctx, ts.URL, spec, donutOps(1)[DonutUpdates], donutOps(1), []string{"w0"}, ts.probe); err == nil {
		t.Error("closed target: got no error")
	}
	verifyNoGoroutinesLeft(t, ignore)
}
