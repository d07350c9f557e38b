package workloads

import (
	"testing"
	"time"
)

// TestRunWithSubscriptions drives a closed GraphQL phase with subscriptions
// through Run against the real gqlgen target: the writers' own mutations
// raise the events, and every one is delivered to every subscription of its
// id exactly once.
func TestRunWithSubscriptions(t *testing.T) {
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
		// 9 clients x 2 = 18 subscriptions over the 6 writer ids: 3 each.
		Subscriptions: Subscriptions{Clients: 9, PerClient: 2, Protocol: ProtocolMixed, Drain: 5 * time.Second},
	}
	r, err := Run(t.Context(), ts.URL, p, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors != 0 || r.Requests != 4*20+6*25 {
		t.Fatalf("requests %d errors %d (%v), want 230 and 0", r.Requests, r.Errors, r.ErrorExamples)
	}
	s := r.Subscriptions
	if s == nil {
		t.Fatal("no subscription result")
	}
	if s.Subscriptions != 18 || s.Expected != 18*25 || s.Received != s.Expected || s.Lost != 0 || s.Duplicated != 0 || s.Foreign != 0 || s.Unexpected != 0 || s.ClientErrors != 0 {
		t.Errorf("delivery: %+v, want 18 subscriptions, 450 expected and received, nothing lost, duplicated or foreign", *s)
	}
	if s.LatencyMs.P50 <= 0 || s.LatencyMs.Max < s.LatencyMs.P50 {
		t.Errorf("event latency not measured: %+v", s.LatencyMs)
	}
	waitUntil(t, "the server to drop every subscription", 10*time.Second, func() bool { return ts.svc.Broker.Stats().Subscribers == 0 })
	// Writers named their donuts with EventName: the last write of w0 is
	// readable back from the store.
	d, ok := ts.svc.Store.Get(writerID(1))
	if !ok {
		t.Fatal("writer w1 wrote nothing")
	}
	if w, seq, _, err := ParseEventName(d.Name); err != nil || w != writerID(1) || seq != 25 {
		t.Errorf("stored name %q: writer %q seq %d err %v, want %s, 25", d.Name, w, seq, err, writerID(1))
	}
}
