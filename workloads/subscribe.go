package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/soakd/soakd/internal/gqlws"
)

// ProtocolMixed is the Subscriptions.Protocol value that alternates the two
// GraphQL websocket protocols per client: even clients speak
// graphql-transport-ws, odd ones the legacy graphql-ws, as seed 002's server
// accepted both at once.
const ProtocolMixed = "mixed"

// Limits enforced by Subscriptions.Validate. Each connection costs the driver
// a reader goroutine and a socket, and each subscription a few dozen bytes of
// counters; the limits keep both far from exhausting a driver machine while
// leaving room well above seed 002's 500 clients x 2 subscriptions.
const (
	// MaxSubscriptionClients caps Subscriptions.Clients (websocket connections).
	MaxSubscriptionClients = 10_000
	// MaxSubscriptionsPerClient caps Subscriptions.PerClient.
	MaxSubscriptionsPerClient = 100
	// MaxSubscriptions caps Clients x PerClient, the number of subscriptions.
	MaxSubscriptions = 100_000
	// MaxSubscriptionDrain caps Subscriptions.Drain: events still missing
	// minutes after the load ended are lost, not late.
	MaxSubscriptionDrain = 10 * time.Minute
)

// SubscriptionLatencyNote is carried in every SubscriptionResult to say what
// its latencies mean.
const SubscriptionLatencyNote = "publish-to-receive latency: measured from the write's send time in the driver " +
	"(encoded in the {{event}} value the writer sends, just before sending, and read back from the event's match path) to the subscriber's receipt of the event; " +
	"writer and subscriber run in the same driver process and read the same wall clock. " +
	"Only counted events (seq >= 1, first arrival) are recorded; probes and duplicates are not"

const (
	// dialConcurrency is how many connections OpenSubscribers dials at once:
	// enough to open 500 connections in well under a second on loopback
	// without flooding the target's accept queue.
	dialConcurrency = 16
	// closeConcurrency is how many connections Close closes at once; each
	// close is bounded by gqlws (5 s for the stops, 5 s for the handshake).
	closeConcurrency = 32
	// subscriptionPoll is how often OpenSubscribers and Close check the
	// counters; scanning even MaxSubscriptions atomics costs well under 1 ms.
	subscriptionPoll = 10 * time.Millisecond
	// probeRetry is how long OpenSubscribers waits for a probe event before
	// probing the ids whose subscriptions have not seen one again: neither
	// protocol acknowledges a subscribe, so a probe may overtake the server's
	// registration of the subscription and reach nobody.
	probeRetry = 250 * time.Millisecond
)

// Subscriptions is the subscription-client part of a phase: Clients websocket
// connections each holding PerClient subscriptions of a subscription
// operation, which listen while the phase's writers raise events (seed 002:
// 500 clients x 2 subscriptions = 1,000).
type Subscriptions struct {
	// Operation is the subscription operation to open; "" means the one
	// subscription operation raised by one of the phase's groups.
	Operation Operation `yaml:"operation" json:"operation,omitempty"`
	// Clients is the number of websocket connections (seed: 500).
	Clients int `yaml:"clients" json:"clients"`
	// PerClient is the number of subscriptions per connection (seed: 2).
	PerClient int `yaml:"per_client" json:"per_client"`
	// Protocol is "graphql-transport-ws", "graphql-ws", or "mixed"
	// (ProtocolMixed: alternate per client).
	Protocol string `yaml:"protocol" json:"protocol"`
	// Drain is how long, after the load, Close waits for outstanding events
	// before counting them lost.
	Drain time.Duration `yaml:"drain" json:"drain"`
}

// Validate reports every problem of s at once (joined with errors.Join); each
// message names the offending field by its YAML/JSON key. A phase without
// subscription clients should not carry a Subscriptions at all: Clients must
// be at least 1.
func (s Subscriptions) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if s.Clients < 1 || s.Clients > MaxSubscriptionClients {
		bad("clients: must be between 1 and %d, got %d", MaxSubscriptionClients, s.Clients)
	}
	if s.PerClient < 1 || s.PerClient > MaxSubscriptionsPerClient {
		bad("per_client: must be between 1 and %d, got %d", MaxSubscriptionsPerClient, s.PerClient)
	} else if s.Clients >= 1 && s.Clients <= MaxSubscriptionClients && s.Clients*s.PerClient > MaxSubscriptions {
		bad("per_client: clients x per_client = %d subscriptions, at most %d allowed", s.Clients*s.PerClient, MaxSubscriptions)
	}
	switch s.Protocol {
	case string(gqlws.TransportWS), string(gqlws.LegacyWS), ProtocolMixed:
	default:
		bad("protocol: unknown protocol %q (want %s, %s or %s)", s.Protocol, gqlws.TransportWS, gqlws.LegacyWS, ProtocolMixed)
	}
	if s.Drain < 0 || s.Drain > MaxSubscriptionDrain {
		bad("drain: must be between 0 and %s, got %s", MaxSubscriptionDrain, s.Drain)
	}
	return errors.Join(errs...)
}

// SubscriptionResult is what the subscription clients saw during a phase. An
// event counts for a subscription when its match value is an event of the
// subscribed writer with a sequence number of at least 1 (0 marks
// OpenSubscribers' probes).
type SubscriptionResult struct {
	// Clients is the number of websocket connections.
	Clients int `json:"clients"`
	// Subscriptions is the number of subscriptions over all connections.
	Subscriptions int `json:"subscriptions"`
	// Expected is the number of events the subscriptions should have
	// received: the sum over subscriptions of expected(id).
	Expected int64 `json:"expected"`
	// Received is the number of events received for the subscribed ids,
	// duplicates included; Received - Duplicated are the unique ones.
	Received int64 `json:"received"`
	// Lost is the sum over subscriptions of expected(id) minus the unique
	// events received, never negative: events that did not arrive before the
	// drain ended. It must be 0.
	Lost int64 `json:"lost"`
	// Duplicated is the number of events whose sequence number was not above
	// the last one the subscription had seen. Go's broker delivers in order
	// per subscriber, so such an event is a repeat (or, see OutOfOrder, a
	// late one).
	Duplicated int64 `json:"duplicated"`
	// OutOfOrder is the part of Duplicated whose sequence number was below
	// the last one seen (rather than equal to it): an event that arrived after
	// a later one. Keeping only the last sequence number per subscription
	// (bounded memory) cannot tell a late event from a repeated old one.
	OutOfOrder int64 `json:"out_of_order"`
	// Unexpected is the sum over subscriptions of the unique events received
	// beyond expected(id). It is 0 unless the expectation was wrong (for
	// example another writer wrote a subscribed id).
	Unexpected int64 `json:"unexpected"`
	// Foreign is the number of events of a writer the subscription did not
	// ask for (or for no subscription of the connection): misrouted; it must be 0.
	Foreign int64 `json:"foreign"`
	// ClientErrors counts failures seen by the clients: a connection lost
	// before Close, a subscription ended or failed by the server, an event
	// that cannot be decoded or whose name is not an EventName, and failed
	// closes.
	ClientErrors int64 `json:"client_errors"`
	// ErrorExamples holds up to three client error messages.
	ErrorExamples []string `json:"error_examples"`
	// LatencyMs summarises the publish-to-receive latency of the counted
	// (unique) events, in ms.
	LatencyMs Latency `json:"latency_ms"`
	// LatencyNote says what LatencyMs measures (SubscriptionLatencyNote).
	LatencyNote string `json:"latency_note"`
}

// Subscribers holds the subscription clients opened by OpenSubscribers, with
// one reader goroutine per connection. Call Close exactly once to stop them
// and obtain the figures; later calls return the same result. (A sharded
// phase's engine calls closeShard instead.)
type Subscribers struct {
	spec    Subscriptions
	sub     *compiledSubscription
	conns   []*subscriberConn
	total   int            // number of subscriptions
	readers sync.WaitGroup // one reader per dialled connection
	closing atomic.Bool    // set before closing the connections: read errors after it are expected

	latMu   sync.Mutex
	latency *hdrhistogram.Histogram // microseconds, guarded by latMu

	errMu    sync.Mutex
	errCount int64    // guarded by errMu
	firstErr error    // guarded by errMu
	examples []string // guarded by errMu, at most maxExamples

	closeOnce sync.Once
	result    SubscriptionResult
}

// subscriberConn is one websocket connection and its subscriptions; conn is
// nil when it could not be dialled. Everything but the atomics is touched
// only by the connection's reader until Close has waited for it.
type subscriberConn struct {
	index   int
	conn    *gqlws.Conn
	subs    []subscriberState // indexed by subscription number, which is also the gqlws subscription id
	foreign int64             // events for another id or for no subscription of this connection
}

// subscriberState is one subscription's counters: constant size, whatever the
// run length.
type subscriberState struct {
	id     string       // the writer id subscribed to
	live   atomic.Bool  // a probe (seq 0) event has arrived
	unique atomic.Int64 // events with a sequence number above every earlier one

	last       int64 // highest sequence number seen
	received   int64 // counted events, duplicates included
	duplicated int64 // events with seq <= last
	outOfOrder int64 // events with seq < last
}

// OpenSubscribers dials Clients connections to the target's /graphql over
// websocket (http->ws URL), and subscribes subscription j of client c to
// writer ids[(c*PerClient+j) % len(ids)] with the subscription operation def
// (its variables filled with that {{writer_id}}; ops are the phase's
// operations, for its raised_by). It returns only when every subscription
// is live: gqlws protocols have no "subscribed" ack, so it proves it with a
// probe: it calls probe(ctx, id) once per distinct subscribed id (the caller
// sends the raised_by write for that id with sequence number 0, the event
// EventName(id, 0, time.Now())) and waits until every subscription has
// received its seq-0 event, bounded by ctx. Ids whose subscriptions have not
// all seen a probe within 250 ms are probed again, since a probe can overtake
// the server's registration of a subscription. Probe events are never counted.
//
// One reader goroutine per connection, owned by Subscribers, awaited by
// Close. On error every connection opened so far is closed and every reader
// awaited before OpenSubscribers returns.
func OpenSubscribers(ctx context.Context, target string, s Subscriptions, def OperationDef, ops map[Operation]OperationDef,
	ids []string, probe func(ctx context.Context, id string) error) (*Subscribers, error) {
	url, err := websocketURL(target)
	if err != nil {
		return nil, err
	}
	cs, err := compileSubscription(def, ops, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("invalid subscription: %w", err)
	}
	return openSubscribersAt(ctx, url, s, ownedClients(s.Clients, Shard{}), cs, ids, probe)
}

// ownedClients returns the global indices of the subscription clients
// (websocket connections) shard sh holds: client c is shard c mod Count's,
// with its PerClient subscriptions c*PerClient to c*PerClient+PerClient-1.
func ownedClients(clients int, sh Shard) []int {
	out := make([]int, 0, sh.Share(clients))
	for c := sh.Index; c < clients; c += sh.count() {
		out = append(out, c)
	}
	return out
}

// openSubscribersAt is OpenSubscribers dialling the websocket URL url, for
// the clients of global index clients only (every one of s.Clients
// unsharded): client c keeps its global index for its protocol and the ids
// its subscriptions subscribe to, so a shard's clients subscribe as they
// would in one driver.
func openSubscribersAt(ctx context.Context, url string, s Subscriptions, clients []int, cs *compiledSubscription, ids []string, probe func(ctx context.Context, id string) error) (*Subscribers, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("invalid subscriptions: %w", err)
	}
	if len(ids) == 0 {
		return nil, errors.New("cannot open subscribers: no writer ids to subscribe to")
	}
	if len(clients) == 0 {
		return nil, errors.New("cannot open subscribers: no clients")
	}
	if probe == nil {
		return nil, errors.New("cannot open subscribers: no probe function")
	}
	sub := &Subscribers{
		spec:    s,
		sub:     cs,
		conns:   make([]*subscriberConn, len(clients)),
		total:   len(clients) * s.PerClient,
		latency: hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs),
	}
	for i, c := range clients {
		sc := &subscriberConn{index: c, subs: make([]subscriberState, s.PerClient)}
		for j := range sc.subs {
			sc.subs[j].id = subscriptionTarget(c, j, s.PerClient, ids)
		}
		sub.conns[i] = sc
	}
	if err := sub.dial(ctx, url); err != nil {
		sub.shutdown()
		return nil, err
	}
	if err := sub.awaitLive(ctx, probe); err != nil {
		sub.shutdown()
		return nil, err
	}
	return sub, nil
}

// websocketURL returns the GraphQL websocket URL of target, an http(s) base
// URL: ws(s)://host[/base]/graphql.
func websocketURL(target string) (string, error) {
	u, err := parseTarget(target)
	if err != nil {
		return "", err
	}
	if u.Scheme == "https" {
		u.Scheme = "wss"
	} else {
		u.Scheme = "ws"
	}
	u.Path += "/graphql"
	return u.String(), nil
}

// subscriptionTarget returns the donut id that subscription j of client c
// subscribes to: ids taken in turn, so each id gets an equal share (within
// one) of the subscriptions.
func subscriptionTarget(c, j, perClient int, ids []string) string {
	return ids[(c*perClient+j)%len(ids)]
}

// clientProtocol returns the protocol client c speaks under the spec's
// protocol setting: mixed alternates, starting with graphql-transport-ws.
func clientProtocol(protocol string, c int) gqlws.Protocol {
	if protocol == ProtocolMixed {
		if c%2 == 0 {
			return gqlws.TransportWS
		}
		return gqlws.LegacyWS
	}
	return gqlws.Protocol(protocol)
}

// dial opens every connection, dialConcurrency at a time, subscribes its
// subscriptions and starts its reader. It stops at the first failure.
func (s *Subscribers) dial(ctx context.Context, url string) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	readCtx := context.WithoutCancel(ctx) // readers live until Close, not until ctx ends
	var next atomic.Int64
	var workers sync.WaitGroup
	for range min(dialConcurrency, len(s.conns)) {
		workers.Go(func() {
			for {
				c := int(next.Add(1) - 1)
				if c >= len(s.conns) || ctx.Err() != nil {
					return
				}
				if err := s.open(ctx, readCtx, url, s.conns[c]); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	workers.Wait()
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("cannot open subscribers: %w", err)
	}
	return nil
}

// open dials one connection, starts its subscriptions and then its reader.
func (s *Subscribers) open(ctx, readCtx context.Context, url string, c *subscriberConn) error {
	conn, err := gqlws.DialWith(ctx, url, clientProtocol(s.spec.Protocol, c.index), gqlws.DialOptions{Header: s.sub.header, InitPayload: s.sub.initPayload})
	if err != nil {
		return fmt.Errorf("client %d: %w", c.index, err)
	}
	c.conn = conn
	for j := range c.subs {
		vars, err := s.sub.variablesFor(c.subs[j].id)
		if err != nil {
			return fmt.Errorf("client %d: %w", c.index, err)
		}
		if err := conn.Subscribe(ctx, strconv.Itoa(j), s.sub.document, vars); err != nil {
			return fmt.Errorf("client %d: %w", c.index, err)
		}
	}
	s.readers.Go(func() { s.read(readCtx, c) })
	return nil
}

// awaitLive probes the subscribed ids until every subscription has seen a
// probe event, a client fails, or ctx ends.
func (s *Subscribers) awaitLive(ctx context.Context, probe func(ctx context.Context, id string) error) error {
	tick := time.NewTicker(subscriptionPoll)
	defer tick.Stop()
	var probed time.Time
	for {
		pending, live := s.pendingIDs()
		if len(pending) == 0 {
			return nil
		}
		if err := s.failure(); err != nil {
			return fmt.Errorf("subscriptions failed before going live (%d of %d live): %w", live, s.total, err)
		}
		if time.Since(probed) >= probeRetry {
			for _, id := range pending {
				if err := probe(ctx, id); err != nil {
					return fmt.Errorf("cannot raise the probe event that tells a subscription to id %q it is live: %w", id, err)
				}
			}
			probed = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("subscriptions not live (%d of %d live): %w", live, s.total, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// pendingIDs returns the distinct ids, in subscription order, that have a
// subscription not yet live, and the number of live subscriptions.
func (s *Subscribers) pendingIDs() (pending []string, live int) {
	seen := make(map[string]bool)
	for _, c := range s.conns {
		for j := range c.subs {
			st := &c.subs[j]
			switch {
			case st.live.Load():
				live++
			case !seen[st.id]:
				seen[st.id] = true
				pending = append(pending, st.id)
			}
		}
	}
	return pending, live
}

// read is connection c's reader: it handles messages until the connection
// ends. A read error before Close began is a client error.
func (s *Subscribers) read(ctx context.Context, c *subscriberConn) {
	for {
		m, err := c.conn.Next(ctx)
		if err != nil {
			if !s.closing.Load() {
				s.clientError(fmt.Errorf("client %d: connection lost: %w", c.index, err))
			}
			return
		}
		s.handle(c, m, time.Now())
	}
}

// handle counts one message received at now on connection c.
func (s *Subscribers) handle(c *subscriberConn, m gqlws.Message, now time.Time) {
	switch m.Type {
	case gqlws.TypeError:
		s.clientError(fmt.Errorf("client %d, subscription %s: server error %s", c.index, m.ID, m.Payload))
		return
	case gqlws.TypeComplete:
		// gqlgen answers a client's complete/stop with complete; only an
		// unprompted one, before Close, means a subscription ended early.
		if !s.closing.Load() {
			s.clientError(fmt.Errorf("client %d, subscription %s: completed by the server", c.index, m.ID))
		}
		return
	}
	j, err := strconv.Atoi(m.ID)
	if err != nil || j < 0 || j >= len(c.subs) {
		c.foreign++
		return
	}
	st := &c.subs[j]
	var found [1]valueSpan
	if err := scanJSON(m.Payload, []jsonPath{s.sub.match}, found[:]); err != nil {
		s.clientError(fmt.Errorf("client %d, subscription %d: cannot decode event %s: %w", c.index, j, m.Payload, err))
		return
	}
	var name string
	if sp := found[0]; sp.start < 0 || json.Unmarshal(m.Payload[sp.start:sp.end], &name) != nil {
		s.clientError(fmt.Errorf("client %d, subscription %d: event without a string at %s: %s", c.index, j, s.sub.matchKey, m.Payload))
		return
	}
	writer, seq, sent, err := ParseEventName(name)
	if err != nil {
		s.clientError(fmt.Errorf("client %d, subscription %d: %w", c.index, j, err))
		return
	}
	if writer != st.id {
		c.foreign++
		return
	}
	if seq == 0 {
		st.live.Store(true)
		return
	}
	st.received++
	switch {
	case seq > st.last:
		st.last = seq
		st.unique.Add(1)
		s.recordLatency(now.Sub(sent))
	case seq < st.last:
		st.duplicated++
		st.outOfOrder++
	default:
		st.duplicated++
	}
}

// recordLatency adds one publish-to-receive latency to the histogram, clamped
// into its range: a negative latency (the wall clock stepped back) counts as
// the minimum.
func (s *Subscribers) recordLatency(d time.Duration) {
	us := min(max(d.Microseconds(), histMinMicros), histMaxMicros)
	s.latMu.Lock()
	_ = s.latency.RecordValue(us) // clamped into range, cannot fail
	s.latMu.Unlock()
}

// clientError counts a client failure and keeps its message as an example.
func (s *Subscribers) clientError(err error) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	s.errCount++
	if s.firstErr == nil {
		s.firstErr = err
	}
	if len(s.examples) < maxExamples {
		s.examples = append(s.examples, truncate(err.Error()))
	}
}

// failure returns the first client error, or nil.
func (s *Subscribers) failure() error {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.firstErr
}

// Close waits until every subscription has received expected(id) events with
// seq>=1 or s.Drain passes (or ctx ends), then closes all connections
// (protocol-level complete/stop + normal close), waits for their readers and
// returns the figures. expected is called once per distinct subscribed id; a
// negative value counts as 0. Close is idempotent: later calls return the
// first call's result without calling expected.
func (s *Subscribers) Close(ctx context.Context, expected func(id string) int64) SubscriptionResult {
	s.closeOnce.Do(func() {
		want := s.expectations(expected)
		s.drain(ctx, want)
		s.shutdown()
		s.result = s.tally(want)
	})
	return s.result
}

// expectations returns expected(id) for every subscription, by connection
// and subscription number, calling expected once per distinct id.
func (s *Subscribers) expectations(expected func(id string) int64) [][]int64 {
	byID := make(map[string]int64)
	want := make([][]int64, len(s.conns))
	for c, sc := range s.conns {
		want[c] = make([]int64, len(sc.subs))
		for j := range sc.subs {
			id := sc.subs[j].id
			n, ok := byID[id]
			if !ok {
				n = max(expected(id), 0)
				byID[id] = n
			}
			want[c][j] = n
		}
	}
	return want
}

// drain waits until every subscription has its expected unique events, or
// the spec's Drain passes, or ctx ends.
func (s *Subscribers) drain(ctx context.Context, want [][]int64) {
	if s.arrived(want) {
		return
	}
	deadline := time.NewTimer(s.spec.Drain)
	defer deadline.Stop()
	tick := time.NewTicker(subscriptionPoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-tick.C:
			if s.arrived(want) {
				return
			}
		}
	}
}

// arrived reports whether every subscription has received at least its
// expected number of unique events.
func (s *Subscribers) arrived(want [][]int64) bool {
	for c, sc := range s.conns {
		for j := range sc.subs {
			if sc.subs[j].unique.Load() < want[c][j] {
				return false
			}
		}
	}
	return true
}

// shutdown closes every dialled connection, closeConcurrency at a time, and
// waits for every reader. A close failure other than "already closed" (the
// peer may close first, for example in answer to a legacy
// connection_terminate) is a client error.
func (s *Subscribers) shutdown() {
	s.closing.Store(true)
	var next atomic.Int64
	var workers sync.WaitGroup
	for range min(closeConcurrency, len(s.conns)) {
		workers.Go(func() {
			for {
				c := int(next.Add(1) - 1)
				if c >= len(s.conns) {
					return
				}
				sc := s.conns[c]
				if sc.conn == nil {
					continue
				}
				if err := sc.conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
					s.clientError(fmt.Errorf("client %d: %w", sc.index, err))
				}
			}
		})
	}
	workers.Wait()
	s.readers.Wait()
}

// tally adds up the counters once every reader has finished.
func (s *Subscribers) tally(want [][]int64) SubscriptionResult {
	r := SubscriptionResult{
		Clients:       len(s.conns),
		Subscriptions: s.total,
		LatencyNote:   SubscriptionLatencyNote,
	}
	for c, sc := range s.conns {
		r.Foreign += sc.foreign
		for j := range sc.subs {
			st := &sc.subs[j]
			lost, unexpected := eventBalance(want[c][j], st.unique.Load())
			r.Expected += want[c][j]
			r.Received += st.received
			r.Duplicated += st.duplicated
			r.OutOfOrder += st.outOfOrder
			r.Lost += lost
			r.Unexpected += unexpected
		}
	}
	s.latMu.Lock()
	r.LatencyMs = Summarize(s.latency)
	s.latMu.Unlock()
	s.errMu.Lock()
	r.ClientErrors = s.errCount
	r.ErrorExamples = append([]string{}, s.examples...) // [] rather than null in JSON
	s.errMu.Unlock()
	return r
}

// eventBalance compares one subscription's expected and unique received
// events: lost is the shortfall and unexpected the excess, neither negative.
func eventBalance(expected, unique int64) (lost, unexpected int64) {
	return max(expected-unique, 0), max(unique-expected, 0)
}

// SubscriptionShard is one driver's part of a sharded phase's subscriptions
// (Phase.Shard), reported instead of a SubscriptionResult: a subscription
// held by this shard may be to a writer another shard runs, whose count of
// events it cannot know, so no single shard can say how many events were
// expected or lost. It carries what a merge needs to prove exact delivery
// across shards (MergeSubscriptionShards): per subscription, its global
// index, the writer id it subscribed to and the unique events it received;
// per writer this shard ran, the events its successful writes raised; and
// the counts and latency histogram that add up across shards. An event
// raised in one shard and received in another is counted once, by the
// subscription that received it.
type SubscriptionShard struct {
	// Total is the phase's number of subscriptions over all shards (clients x per_client).
	Total int `json:"total"`
	// Writers is the phase's number of writer ids over all shards.
	Writers int `json:"writers"`
	// Clients is the number of websocket connections this shard opened:
	// the clients of global index k with k mod count = index.
	Clients int `json:"clients"`
	// Subscriptions holds one entry per subscription of this shard, in global order.
	Subscriptions []SubscriptionEvents `json:"subscriptions"`
	// Writes holds one entry per writer this shard ran, in global order.
	Writes []WriterEvents `json:"writes"`
	// Received, Duplicated, OutOfOrder, Foreign and ClientErrors are
	// SubscriptionResult's, over this shard's subscriptions.
	Received   int64 `json:"received"`
	Duplicated int64 `json:"duplicated"`
	OutOfOrder int64 `json:"out_of_order"`
	Foreign    int64 `json:"foreign"`
	// ClientErrors counts this shard's client failures (see SubscriptionResult).
	ClientErrors int64 `json:"client_errors"`
	// ErrorExamples holds up to three of this shard's client error messages.
	ErrorExamples []string `json:"error_examples"`
	// Histogram is the publish-to-receive latency (µs) of this shard's
	// counted events, for an exact merge (bucket counts add).
	Histogram *hdrhistogram.Snapshot `json:"histogram"`
}

// SubscriptionEvents is one subscription of a SubscriptionShard.
type SubscriptionEvents struct {
	// Index is the subscription's global index: its client's global index
	// times per_client, plus its number on the client.
	Index int `json:"index"`
	// ID is the writer id it subscribed to.
	ID string `json:"id"`
	// Unique is the events it received whose sequence number was above
	// every earlier one (duplicates and probes left out).
	Unique int64 `json:"unique"`
}

// WriterEvents is one writer of a SubscriptionShard.
type WriterEvents struct {
	// ID is the writer's id.
	ID string `json:"id"`
	// Events is the number of its successful writes: the events it raised
	// (sequence numbers 1 and up), which every subscription of its id must receive.
	Events int64 `json:"events"`
}

// emptySubscriptionShard is the ledger of a shard that holds no client.
func emptySubscriptionShard() SubscriptionShard {
	return SubscriptionShard{
		Subscriptions: []SubscriptionEvents{},
		ErrorExamples: []string{},
		Histogram:     hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs).Export(),
	}
}

// closeShard is Close for a sharded phase: it waits until every
// subscription has received bound(id) events (ok false: a bound unknown, so
// only Drain or ctx ends the wait), closes every connection and returns the
// shard's ledger, without Total, Writers and Writes, which the engine adds.
// Call it once, instead of Close.
func (s *Subscribers) closeShard(ctx context.Context, bound func(id string) (int64, bool)) SubscriptionShard {
	want := s.expectations(func(id string) int64 {
		if n, ok := bound(id); ok {
			return n
		}
		return math.MaxInt64
	})
	s.drain(ctx, want)
	s.shutdown()
	r := emptySubscriptionShard()
	r.Clients = len(s.conns)
	for _, sc := range s.conns {
		r.Foreign += sc.foreign
		for j := range sc.subs {
			st := &sc.subs[j]
			r.Subscriptions = append(r.Subscriptions, SubscriptionEvents{Index: sc.index*s.spec.PerClient + j, ID: st.id, Unique: st.unique.Load()})
			r.Received += st.received
			r.Duplicated += st.duplicated
			r.OutOfOrder += st.outOfOrder
		}
	}
	s.latMu.Lock()
	r.Histogram = s.latency.Export()
	s.latMu.Unlock()
	s.errMu.Lock()
	r.ClientErrors = s.errCount
	r.ErrorExamples = append(r.ErrorExamples, s.examples...)
	s.errMu.Unlock()
	return r
}

// MergeSubscriptionShards merges the ledgers of every shard of one phase
// into the phase's SubscriptionResult, exactly as one driver would have
// tallied it: a subscription expects the events its writer raised, in
// whichever shard that writer ran, and is lost or unexpected by the
// difference with the unique events it received. It refuses ledgers that
// do not describe one phase together: shards of different phases, a
// subscription or writer reported twice, or one missing (a shard left out).
func MergeSubscriptionShards(shards []SubscriptionShard) (SubscriptionResult, error) {
	if len(shards) == 0 {
		return SubscriptionResult{}, errors.New("no shard to merge")
	}
	total, writers := shards[0].Total, shards[0].Writers
	r := SubscriptionResult{Subscriptions: total, LatencyNote: SubscriptionLatencyNote, ErrorExamples: []string{}}
	written := make(map[string]int64, writers)
	hist := hdrhistogram.New(histMinMicros, histMaxMicros, histSigFigs)
	for i, sh := range shards {
		if sh.Total != total || sh.Writers != writers {
			return SubscriptionResult{}, fmt.Errorf("shard %d has %d subscriptions and %d writers, shard 0 %d and %d: not shards of one phase",
				i, sh.Total, sh.Writers, total, writers)
		}
		for _, w := range sh.Writes {
			if _, dup := written[w.ID]; dup {
				return SubscriptionResult{}, fmt.Errorf("writer %s is reported by two shards", w.ID)
			}
			written[w.ID] = w.Events
		}
		if sh.Histogram != nil {
			hist.Merge(hdrhistogram.Import(sh.Histogram))
		}
		r.Clients += sh.Clients
		r.Received += sh.Received
		r.Duplicated += sh.Duplicated
		r.OutOfOrder += sh.OutOfOrder
		r.Foreign += sh.Foreign
		r.ClientErrors += sh.ClientErrors
		for _, ex := range sh.ErrorExamples {
			if len(r.ErrorExamples) < maxExamples {
				r.ErrorExamples = append(r.ErrorExamples, ex)
			}
		}
	}
	if len(written) != writers {
		return SubscriptionResult{}, fmt.Errorf("the shards report %d of the phase's %d writers: a shard is missing", len(written), writers)
	}
	seen := make([]bool, total)
	for _, sh := range shards {
		for _, se := range sh.Subscriptions {
			if se.Index < 0 || se.Index >= total {
				return SubscriptionResult{}, fmt.Errorf("subscription %d is outside the phase's %d", se.Index, total)
			}
			if seen[se.Index] {
				return SubscriptionResult{}, fmt.Errorf("subscription %d is reported by two shards", se.Index)
			}
			seen[se.Index] = true
			want, ok := written[se.ID]
			if !ok {
				return SubscriptionResult{}, fmt.Errorf("subscription %d is to writer %s, which no shard ran", se.Index, se.ID)
			}
			lost, unexpected := eventBalance(want, se.Unique)
			r.Expected += want
			r.Lost += lost
			r.Unexpected += unexpected
		}
	}
	if k := slices.Index(seen, false); k >= 0 {
		return SubscriptionResult{}, fmt.Errorf("subscription %d is in no shard's ledger: a shard is missing", k)
	}
	r.LatencyMs = Summarize(hist)
	return r, nil
}
