package workloads

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// sentRequest is one request as a target saw it: what was sent, and when.
type sentRequest struct {
	method, path, body string
	at                 time.Time
}

// requestLog records the requests a target receives.
type requestLog struct {
	mu   sync.Mutex
	reqs []sentRequest
}

func (l *requestLog) add(r sentRequest) {
	l.mu.Lock()
	l.reqs = append(l.reqs, r)
	l.mu.Unlock()
}

func (l *requestLog) all() []sentRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// logRequests wraps h so that every request is logged in l before h answers it.
func logRequests(l *requestLog, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		l.add(sentRequest{method: r.Method, path: r.URL.Path, body: string(body), at: time.Now()})
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}

// handlerTransport is an http.RoundTripper for synctest bubbles: it serves
// each request with h after service of virtual time, so nothing touches a
// socket.
type handlerTransport struct {
	h       http.Handler
	service time.Duration
}

func (ht handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	in := httptest.NewRequestWithContext(req.Context(), req.Method, req.URL.String(), bytes.NewReader(body))
	in.Header = req.Header.Clone()
	rec := httptest.NewRecorder()
	ht.h.ServeHTTP(rec, in) // logged at arrival, before the service time
	select {
	case <-time.After(ht.service):
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	resp := rec.Result()
	resp.Request = req
	return resp, nil
}

// eventTime is the send time an event name carries ("…#<seq>@<time>").
var eventTime = regexp.MustCompile(`(#[0-9]{10})@[0-9]{19}`)

// multiset counts requests by method, path and body, and, when withTime,
// by the instant they arrived; without it, event names lose their send time.
func multiset(reqs []sentRequest, withTime bool) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		k := r.method + " " + r.path + " " + r.body
		if withTime {
			k += " @" + r.at.UTC().Format(time.RFC3339Nano)
		} else {
			k = eventTime.ReplaceAllString(k, "$1")
		}
		out[k]++
	}
	return out
}

// sameMultiset fails t unless got and want hold the same requests, as often.
func sameMultiset(t *testing.T, what string, got, want map[string]int) {
	t.Helper()
	if maps.Equal(got, want) {
		return
	}
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			diff = append(diff, fmt.Sprintf("%s: sharded %d, one driver %d", k, got[k], want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: sharded %d, one driver 0", k, got[k]))
		}
	}
	t.Errorf("%s: the shards did not send what one driver sends; %d differences, first: %s", what, len(diff), strings.Join(diff[:min(len(diff), 5)], "; "))
}

// withinOne fails t unless part is within one of total/n.
func withinOne(t *testing.T, what string, part, total, n int) {
	t.Helper()
	if d := part*n - total; d <= -n || d >= n {
		t.Errorf("%s: %d, not within 1 of %d/%d", what, part, total, n)
	}
}

const testShards = 3

// runShards runs p once per shard of testShards in parallel, shard i against
// target(i) through client(i), and returns their results in shard order.
func runShards(t *testing.T, p Phase, target func(i int) string, client func(i int) *Client) []Result {
	t.Helper()
	results := make([]Result, testShards)
	errs := make([]error, testShards)
	var wg sync.WaitGroup
	for i := range testShards {
		ps := p
		ps.Shard = Shard{Index: i, Count: testShards}
		wg.Go(func() { results[i], errs[i] = Run(t.Context(), target(i), ps, client(i), nil) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		if results[i].Shard != (Shard{Index: i, Count: testShards}) {
			t.Errorf("shard %d: result says shard %+v", i, results[i].Shard)
		}
	}
	return results
}

// checkUsers fails t unless every group's users are shared out within one
// of a third each and add up to the group's.
func checkUsers(t *testing.T, results []Result, users []int) {
	t.Helper()
	for g, want := range users {
		sum := 0
		for i, r := range results {
			n := r.Operations[g].Users
			withinOne(t, fmt.Sprintf("shard %d's users of group %d", i, g), n, want, testShards)
			sum += n
		}
		if sum != want {
			t.Errorf("group %d: the shards ran %d users, want %d", g, sum, want)
		}
	}
}

// TestShardedClosedLoopback: three shards of a closed phase, run in
// parallel against a real loopback server, send together exactly the
// requests one driver sends (the send times inside the event names aside),
// each shard running a third of every group's users (within one) and
// reporting exactly the requests its server saw.
func TestShardedClosedLoopback(t *testing.T) {
	fake := newFakeTarget(50)
	p := testPhase(
		UserGroup{Operation: RESTGet, Users: 7, Iterations: 4},
		UserGroup{Operation: RESTPut, Users: 5, Iterations: 3},
		UserGroup{Operation: GraphQLQuery, Users: 4, Iterations: 5},
		UserGroup{Operation: GraphQLMutation, Users: 2, Iterations: 6},
	)
	var one requestLog
	srv := httptest.NewServer(logRequests(&one, fake.handler()))
	defer srv.Close()
	whole, err := Run(t.Context(), srv.URL, p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Errors != 0 || whole.Requests != p.Requests() || whole.Shard != (Shard{}) {
		t.Fatalf("one driver: %d requests, %d errors (%v), shard %+v; want %d, none, none", whole.Requests, whole.Errors, whole.ErrorExamples, whole.Shard, p.Requests())
	}

	logs := make([]requestLog, testShards)
	urls := make([]string, testShards)
	for i := range logs {
		s := httptest.NewServer(logRequests(&logs[i], fake.handler()))
		defer s.Close()
		urls[i] = s.URL
	}
	results := runShards(t, p, func(i int) string { return urls[i] }, func(int) *Client { return nil })
	var all []sentRequest
	for i, r := range results {
		reqs := logs[i].all()
		if r.Errors != 0 || r.Requests != int64(len(reqs)) {
			t.Errorf("shard %d: %d requests, %d errors (%v); its server saw %d", i, r.Requests, r.Errors, r.ErrorExamples, len(reqs))
		}
		all = append(all, reqs...)
	}
	sameMultiset(t, "closed, loopback", multiset(all, false), multiset(one.all(), false))
	checkUsers(t, results, []int{7, 5, 4, 2})
}

// virtualRun runs p in a synctest bubble, unsharded when shards is 0 and
// as that many shards in parallel otherwise, each shard through a
// handlerTransport of its own onto one fake target (service of virtual
// time per request), and returns the results and each driver's requests.
// Every bubble's clock starts at the same instant, so two runs' request
// times, and the send times inside their event names, compare exactly.
func virtualRun(t *testing.T, p Phase, shards int, service time.Duration) ([]Result, [][]sentRequest) {
	t.Helper()
	var results []Result
	var reqs [][]sentRequest
	synctest.Test(t, func(t *testing.T) {
		fake := newFakeTarget(50)
		logs := make([]requestLog, max(shards, 1))
		client := func(i int) *Client {
			return HTTPClient(&http.Client{Transport: handlerTransport{h: logRequests(&logs[i], fake.handler()), service: service}})
		}
		target := func(int) string { return "http://127.0.0.1:1" }
		if shards == 0 {
			r, err := Run(t.Context(), target(0), p, client(0), nil)
			if err != nil {
				t.Fatal(err)
			}
			results = []Result{r}
		} else {
			results = runShards(t, p, target, client)
		}
		for i := range logs {
			reqs = append(reqs, logs[i].all())
		}
	})
	return results, reqs
}

// TestShardedModelsVirtual runs every load model once as one driver and
// once as three shards in parallel, in virtual time: the shards send
// together exactly the requests one driver sends, at the same instants
// (so with the same send times in their event names), none failing; for
// the user models each shard runs within one of a third of every group's
// users; for the arrival-rate models each shard sends exactly its share of
// the schedule's arrivals and the union of the shards' send times is the
// schedule, each arrival at its intended time.
func TestShardedModelsVirtual(t *testing.T) {
	base := func() Phase {
		p := testPhase(
			UserGroup{Operation: RESTGet, Users: 8, Iterations: 6, Weight: 3},
			UserGroup{Operation: RESTPut, Users: 4, Iterations: 9, Weight: 1},
			UserGroup{Operation: GraphQLMutation, Users: 3, Iterations: 4, Weight: 2},
		)
		p.Think = Think{Min: 5 * time.Millisecond, Max: 25 * time.Millisecond}
		p.RampUp = 2 * time.Second
		return p
	}
	open := func(model Model) Phase {
		p := base()
		p.Model, p.Duration, p.Rate, p.MaxInFlight = model, 3*time.Second, 40, 6
		if model == RampingRate {
			p.RateEnd, p.Failure = 160, Failure{Window: time.Second, MaxErrorRatio: 0.5}
		}
		return p
	}
	ramping := base()
	ramping.Model, ramping.Duration = Ramping, 20*time.Second
	ramping.Ramp = Ramp{Start: 2, Step: 4, Every: 500 * time.Millisecond, Max: 17}
	ramping.Failure = Failure{Window: time.Second, MaxErrorRatio: 0.5}
	for _, p := range []Phase{base(), open(Open), ramping, open(RampingRate)} {
		model := p.Model.normalized()
		t.Run(string(model), func(t *testing.T) {
			// 2 ms of service: every open-model request returns before the
			// next arrival (at most 160/s), so each takes the slot after the
			// previous one's, alike in one driver and in three (6 slots, 2 each).
			one, oneReqs := virtualRun(t, p, 0, 2*time.Millisecond)
			shards, shardReqs := virtualRun(t, p, testShards, 2*time.Millisecond)
			var all []sentRequest
			for i, r := range shards {
				if r.Errors != 0 || r.Requests != int64(len(shardReqs[i])) || r.Aborted {
					t.Errorf("shard %d: %d requests, %d errors (%v), aborted %v; its target saw %d", i, r.Requests, r.Errors, r.ErrorExamples, r.Aborted, len(shardReqs[i]))
				}
				all = append(all, shardReqs[i]...)
			}
			if one[0].Errors != 0 || len(oneReqs[0]) == 0 {
				t.Fatalf("one driver: %d requests, %d errors (%v)", len(oneReqs[0]), one[0].Errors, one[0].ErrorExamples)
			}
			sameMultiset(t, string(model), multiset(all, true), multiset(oneReqs[0], true))

			switch model {
			case Closed:
				checkUsers(t, shards, []int{8, 4, 3})
			case Ramping:
				checkUsers(t, shards, []int{6, 6, 5}) // 17 users, round robin over 3 groups
				if one[0].MaxLoad.Reason != ReasonMaxUsers {
					t.Errorf("one driver stopped for %s (%s), want %s", one[0].MaxLoad.Reason, one[0].MaxLoad.Detail, ReasonMaxUsers)
				}
				for i, r := range shards {
					if r.MaxLoad.Reason != ReasonMaxUsers || !r.End.Equal(one[0].End) {
						t.Errorf("shard %d stopped at %s for %s (%s), want at %s for %s", i, r.End, r.MaxLoad.Reason, r.MaxLoad.Detail, one[0].End, ReasonMaxUsers)
					}
				}
			case Open, RampingRate:
				pacer := NewPacer(p)
				var want []time.Duration
				for k := range pacer.Total() {
					at, _ := pacer.Intended(k)
					want = append(want, at)
				}
				var got []time.Duration
				for i, r := range shards {
					if share := int64(Shard{Index: i, Count: testShards}.Share(int(pacer.Total()))); r.Open.Arrivals != share || r.Open.Sent != share || r.Open.Dropped != 0 {
						t.Errorf("shard %d: %d arrivals, %d sent, %d dropped; want its share %d of %d, all sent", i, r.Open.Arrivals, r.Open.Sent, r.Open.Dropped, share, pacer.Total())
					}
					if r.Open.MaxLatenessMs != 0 {
						t.Errorf("shard %d: sent up to %g ms late, want every arrival at its intended time", i, r.Open.MaxLatenessMs)
					}
					for _, q := range shardReqs[i] {
						got = append(got, q.at.Sub(r.Start))
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("the shards' send times are not the schedule: %d sent, %d scheduled", len(got), len(want))
				}
			}
		})
	}
}

// TestShardedSubscriptions runs a closed phase with subscriptions as three
// shards in parallel against the real gqlgen target: each reports a ledger
// instead of a delivery it cannot judge alone, some subscriptions of each
// shard are to writers another shard runs, and the merged ledgers give
// exactly one driver's delivery (TestRunWithSubscriptions): every event
// received once, none lost. Ledgers that do not make up the phase are refused.
func TestShardedSubscriptions(t *testing.T) {
	ts := newSubscriptionServer(t, 1024)
	p := Phase{
		Name: "graphql-load", Arm: "graphql",
		Groups: []UserGroup{
			{Operation: GraphQLQuery, Users: 4, Iterations: 20},
			{Operation: GraphQLMutation, Users: 6, Iterations: 25},
		},
		Think:          Think{Max: 2 * time.Millisecond},
		RequestTimeout: 5 * time.Second,
		Operations:     donutOps(10),
		Seed:           1,
		Subscriptions:  Subscriptions{Clients: 9, PerClient: 2, Protocol: ProtocolMixed, Drain: 5 * time.Second},
		// The shards start together, once all their subscriptions are live.
		StartAt: time.Now().Add(3 * time.Second),
	}
	results := runShards(t, p, func(int) string { return ts.URL }, func(int) *Client { return nil })
	var ledgers []SubscriptionShard
	writerShard := map[string]int{}
	for i, r := range results {
		if r.Errors != 0 || r.Subscriptions != nil || r.SubscriptionShard == nil {
			t.Fatalf("shard %d: %d errors (%v), subscriptions %+v, ledger %v; want no error and a ledger only", i, r.Errors, r.ErrorExamples, r.Subscriptions, r.SubscriptionShard)
		}
		l := *r.SubscriptionShard
		if l.Clients != 3 || len(l.Subscriptions) != 6 || l.Total != 18 || l.Writers != 6 || len(l.Writes) != 2 {
			t.Errorf("shard %d: ledger of %d clients, %d subscriptions (of %d), %d writers (of %d); want 3, 6 (18), 2 (6)",
				i, l.Clients, len(l.Subscriptions), l.Total, len(l.Writes), l.Writers)
		}
		for _, w := range l.Writes {
			writerShard[w.ID] = i
		}
		ledgers = append(ledgers, l)
	}
	across := 0
	for i, l := range ledgers {
		for _, s := range l.Subscriptions {
			if writerShard[s.ID] != i {
				across++
			}
		}
	}
	if across == 0 {
		t.Error("no subscription is to another shard's writer: the test does not prove delivery across shards")
	}
	s, err := MergeSubscriptionShards(ledgers)
	if err != nil {
		t.Fatal(err)
	}
	if s.Clients != 9 || s.Subscriptions != 18 || s.Expected != 18*25 || s.Received != s.Expected || s.Lost != 0 ||
		s.Duplicated != 0 || s.Foreign != 0 || s.Unexpected != 0 || s.ClientErrors != 0 {
		t.Errorf("merged delivery (%d subscriptions across shards): %+v, want 9 clients, 18 subscriptions, 450 expected and received, nothing lost, duplicated or foreign", across, s)
	}
	if s.LatencyMs.P50 <= 0 || s.LatencyMs.Max < s.LatencyMs.P50 {
		t.Errorf("merged event latency not measured: %+v", s.LatencyMs)
	}

	for name, tc := range map[string]struct {
		ledgers []SubscriptionShard
		want    string
	}{
		"a shard missing":    {ledgers[:2], "a shard is missing"},
		"a shard twice":      {[]SubscriptionShard{ledgers[0], ledgers[1], ledgers[2], ledgers[1]}, "reported by two shards"},
		"another phase's":    {[]SubscriptionShard{ledgers[0], ledgers[1], {Total: 4, Writers: 6}}, "not shards of one phase"},
		"nothing to merge":   {nil, "no shard"},
		"an unknown writer":  {[]SubscriptionShard{ledgers[0], ledgers[1], withSubscription(ledgers[2], "w99")}, "no shard ran"},
		"a subscription out": {[]SubscriptionShard{ledgers[0], ledgers[1], withIndex(ledgers[2], 18)}, "outside the phase's 18"},
	} {
		if _, err := MergeSubscriptionShards(tc.ledgers); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
	}
}

// TestShardedSubscriptionsFewClients: with fewer clients than shards, a
// shard holds no connection, yet its writers' events still count, through
// its ledger, for the other shards' subscriptions; and it waits for the
// common StartAt rather than writing before the others' subscriptions listen.
func TestShardedSubscriptionsFewClients(t *testing.T) {
	ts := newSubscriptionServer(t, 1024)
	p := Phase{
		Name: "graphql-load", Arm: "graphql",
		Groups:         []UserGroup{{Operation: GraphQLMutation, Users: 3, Iterations: 10}},
		RequestTimeout: 5 * time.Second,
		Operations:     donutOps(10),
		Seed:           3,
		// 2 clients x 3: subscription k to writer w(k mod 3), so each shard's writer is subscribed to twice.
		Subscriptions: Subscriptions{Clients: 2, PerClient: 3, Protocol: ProtocolMixed, Drain: 5 * time.Second},
		StartAt:       time.Now().Add(3 * time.Second),
	}
	results := runShards(t, p, func(int) string { return ts.URL }, func(int) *Client { return nil })
	var ledgers []SubscriptionShard
	for i, r := range results {
		l := r.SubscriptionShard
		if l == nil || r.Errors != 0 {
			t.Fatalf("shard %d: %d errors (%v), ledger %v", i, r.Errors, r.ErrorExamples, l)
		}
		if wantClients := []int{1, 1, 0}[i]; l.Clients != wantClients || len(l.Subscriptions) != 3*wantClients || len(l.Writes) != 1 {
			t.Errorf("shard %d: %d clients, %d subscriptions, %d writers; want %d, %d, 1", i, l.Clients, len(l.Subscriptions), len(l.Writes), wantClients, 3*wantClients)
		}
		ledgers = append(ledgers, *l)
	}
	s, err := MergeSubscriptionShards(ledgers)
	if err != nil {
		t.Fatal(err)
	}
	if s.Clients != 2 || s.Subscriptions != 6 || s.Expected != 6*10 || s.Received != s.Expected || s.Lost != 0 || s.Duplicated != 0 || s.ClientErrors != 0 {
		t.Errorf("merged delivery: %+v, want 2 clients, 6 subscriptions, 60 expected and received, nothing lost", s)
	}
}

// withSubscription returns l with its first subscription's writer id replaced by id.
func withSubscription(l SubscriptionShard, id string) SubscriptionShard {
	l.Subscriptions = slices.Clone(l.Subscriptions)
	l.Subscriptions[0].ID = id
	return l
}

// withIndex returns l with its first subscription's global index replaced by k.
func withIndex(l SubscriptionShard, k int) SubscriptionShard {
	l.Subscriptions = slices.Clone(l.Subscriptions)
	l.Subscriptions[0].Index = k
	return l
}

// TestStartAt: with a start_at, every model's load starts exactly then (in
// virtual time); a driver not ready by then, or cancelled while waiting,
// fails without sending a request.
func TestStartAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log requestLog
		client := HTTPClient(&http.Client{Transport: handlerTransport{h: logRequests(&log, newFakeTarget(50).handler()), service: time.Millisecond}})
		closed := testPhase(UserGroup{Operation: RESTGet, Users: 2, Iterations: 3})
		open := closed
		open.Model, open.Duration, open.Rate, open.MaxInFlight = Open, time.Second, 10, 2
		ramping := closed
		ramping.Model, ramping.Duration, ramping.Ramp, ramping.Failure = Ramping, 3*time.Second, Ramp{Start: 1}, Failure{Window: time.Second}
		for _, p := range []Phase{closed, open, ramping} {
			p.StartAt = time.Now().Add(5 * time.Second)
			r, err := Run(t.Context(), "http://127.0.0.1:1", p, client, nil)
			if err != nil || !r.Start.Equal(p.StartAt) || r.Requests == 0 {
				t.Errorf("%s: started at %s with %d requests (%v), want at start_at %s", p.Model.normalized(), r.Start, r.Requests, err, p.StartAt)
			}
		}
		sent := len(log.all())
		late := closed
		late.StartAt = time.Now().Add(-time.Millisecond)
		if _, err := Run(t.Context(), "http://127.0.0.1:1", late, client, nil); err == nil || !strings.Contains(err.Error(), "not ready by start_at") {
			t.Errorf("start_at passed: got %v, want not ready", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		waiting := open
		waiting.StartAt = time.Now().Add(time.Minute)
		if _, err := Run(ctx, "http://127.0.0.1:1", waiting, client, nil); err == nil || !strings.Contains(err.Error(), "cancelled while waiting for start_at") {
			t.Errorf("cancelled before start_at: got %v, want an error", err)
		}
		if n := len(log.all()); n != sent {
			t.Errorf("drivers that did not start sent %d requests", n-sent)
		}
	})
}
