package preflight

import (
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/workloads"
)

// TestPlan: every operation once, in the order the phases first use it,
// with that phase's arm and timeout; then each subscription once, with one
// client, one subscription, the operation that raises it and a drain of
// at most subscriptionDrain.
func TestPlan(t *testing.T) {
	ops := map[workloads.Operation]workloads.OperationDef{
		"sub": {Subscription: &workloads.SubscriptionDef{RaisedBy: "mut"}},
	}
	rest := workloads.Phase{Name: "rest", Arm: "rest", RequestTimeout: time.Second, Operations: ops,
		Groups: []workloads.UserGroup{{Operation: "get", Users: 40, Iterations: 400}, {Operation: "put", Users: 40}}}
	gql := workloads.Phase{Name: "gql", Arm: "graphql", RequestTimeout: 2 * time.Second, Operations: ops,
		Groups:        []workloads.UserGroup{{Operation: "query", Users: 40}, {Operation: "mut", Users: 40}},
		Subscriptions: workloads.Subscriptions{Operation: "sub", Clients: 50, PerClient: 2, Protocol: workloads.ProtocolMixed, Drain: 30 * time.Second}}
	again := rest
	again.Name = "rest#2"
	plan := Plan([]workloads.Phase{rest, gql, again, gql})
	var got []string
	for _, s := range plan {
		g := s.Phase.Groups[0]
		if g.Users != 1 || g.Iterations != 1 || len(s.Phase.Groups) != 1 {
			t.Errorf("%s: groups %+v, want one user sending once", s.Phase.Name, s.Phase.Groups)
		}
		got = append(got, string(g.Operation)+"/"+s.Phase.Arm+"/"+string(s.Subscription))
	}
	want := "get/rest/ put/rest/ query/graphql/ mut/graphql/ mut/graphql/sub"
	if j := strings.Join(got, " "); j != want {
		t.Errorf("plan %s, want %s", j, want)
	}
	sub := plan[len(plan)-1].Phase.Subscriptions
	if sub.Clients != 1 || sub.PerClient != 1 || sub.Drain != subscriptionDrain || sub.Operation != "sub" {
		t.Errorf("subscription check %+v", sub)
	}
	if plan[2].Phase.RequestTimeout != 2*time.Second {
		t.Errorf("query's timeout %s, want its phase's 2s", plan[2].Phase.RequestTimeout)
	}
}
