package daemon

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/workloads"
)

func names(ps []planned) string {
	var s []string
	for _, p := range ps {
		n := p.spec.Name
		if p.role != "" {
			n += "(" + p.role + ")"
		}
		s = append(s, n)
	}
	return strings.Join(s, " ")
}

func TestPlan(t *testing.T) {
	specs := []workloads.Phase{{Name: "mem", Arm: "graphql"}, {Name: "r", Arm: "rest"}, {Name: "g", Arm: "graphql"}, {Name: "max", Arm: "rest"}}
	cmp := Compare{REST: "r", GraphQL: "g"}
	f := func(rounds int, arms Arms, want string) {
		t.Helper()
		ps, err := plan(specs, cmp, rounds, arms)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(ps); got != want {
			t.Errorf("rounds %d arms %s:\n got %s\nwant %s", rounds, arms, got, want)
		}
	}
	f(1, DefaultArms(), "mem r(rest) g(graphql) max")
	f(3, DefaultArms(), "mem r#1(rest) g#1(graphql) g#2(graphql) r#2(rest) r#3(rest) g#3(graphql) max") // A B, B A, A B
	f(1, Arms{"rest", "rest"}, "mem r(rest) r-b(graphql) max")
	f(2, Arms{"graphql", "graphql"}, "mem g-a#1(rest) g#1(graphql) g#2(graphql) g-a#2(rest) max")

	ps, _ := plan(specs, cmp, 1, Arms{"rest", "rest"})
	if ps[2].spec.Arm != "rest" {
		t.Errorf("the self-check's second arm must run REST, got %s", ps[2].spec.Arm)
	}
	if _, err := plan(specs, Compare{REST: "r", GraphQL: "nope"}, 1, DefaultArms()); err == nil {
		t.Errorf("a missing compared phase must be an error")
	}
}

func TestParseArms(t *testing.T) {
	for _, ok := range []string{"rest,graphql", "rest,rest", "graphql,graphql"} {
		if a, err := ParseArms(ok); err != nil || a.String() != ok {
			t.Errorf("ParseArms(%q) = %v, %v", ok, a, err)
		}
	}
	for _, bad := range []string{"", "rest", "graphql,rest", "rest,soap", "rest,graphql,rest"} {
		if _, err := ParseArms(bad); err == nil || CodeOf(err) != ExitUsage {
			t.Errorf("ParseArms(%q) must be a usage error, got %v", bad, err)
		}
	}
}
