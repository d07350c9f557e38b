package run

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/testkit"
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
	cmp := config.Compare{REST: "r", GraphQL: "g"}
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
	// A self-check runs the API's phase as the first arm under its own
	// name and a copy named "<name>-b" as the second, for either API.
	f(1, Arms{"rest", "rest"}, "mem r(rest) r-b(graphql) max")
	f(1, Arms{"graphql", "graphql"}, "mem g(rest) g-b(graphql) max")
	f(2, Arms{"rest", "rest"}, "mem r#1(rest) r-b#1(graphql) r-b#2(graphql) r#2(rest) max")
	f(2, Arms{"graphql", "graphql"}, "mem g#1(rest) g-b#1(graphql) g-b#2(graphql) g#2(rest) max")

	for _, tc := range []struct {
		arms Arms
		want string
	}{{Arms{"rest", "rest"}, "rest"}, {Arms{"graphql", "graphql"}, "graphql"}} {
		ps, _ := plan(specs, cmp, 1, tc.arms)
		if ps[1].spec.Arm != tc.want || ps[2].spec.Arm != tc.want {
			t.Errorf("arms %s: the arms run %s and %s, want %s twice", tc.arms, ps[1].spec.Arm, ps[2].spec.Arm, tc.want)
		}
	}
	if _, err := plan(specs, config.Compare{REST: "r", GraphQL: "nope"}, 1, DefaultArms()); err == nil {
		t.Errorf("a missing compared phase must be an error")
	}
	clash := append(slices.Clone(specs), workloads.Phase{Name: "r-b", Arm: "rest"})
	if _, err := plan(clash, cmp, 1, Arms{"rest", "rest"}); err == nil || !strings.Contains(err.Error(), `"r-b"`) {
		t.Errorf("a self-check copy named like a profile phase: err %v, want one naming r-b", err)
	}
}

// TestComparedPhases checks that the report's compare names the phases that
// ran, for each --arms and with one or several rounds.
func TestComparedPhases(t *testing.T) {
	specs := []workloads.Phase{{Name: "mem", Arm: "graphql"}, {Name: "rest-control", Arm: "rest"}, {Name: "graphql-load", Arm: "graphql"}}
	cmp := config.Compare{REST: "rest-control", GraphQL: "graphql-load"}
	for _, tc := range []struct {
		arms   Arms
		rounds int
		want   report.Compare
	}{
		{DefaultArms(), 1, report.Compare{REST: "rest-control", GraphQL: "graphql-load",
			RESTPhases: []string{"rest-control"}, GraphQLPhases: []string{"graphql-load"}}},
		{Arms{"rest", "rest"}, 1, report.Compare{REST: "rest-control", GraphQL: "rest-control-b",
			RESTPhases: []string{"rest-control"}, GraphQLPhases: []string{"rest-control-b"}}},
		{Arms{"graphql", "graphql"}, 1, report.Compare{REST: "graphql-load", GraphQL: "graphql-load-b",
			RESTPhases: []string{"graphql-load"}, GraphQLPhases: []string{"graphql-load-b"}}},
		{DefaultArms(), 2, report.Compare{REST: "rest-control", GraphQL: "graphql-load",
			RESTPhases: []string{"rest-control#1", "rest-control#2"}, GraphQLPhases: []string{"graphql-load#1", "graphql-load#2"}}},
		{Arms{"rest", "rest"}, 3, report.Compare{REST: "rest-control", GraphQL: "rest-control-b",
			RESTPhases: []string{"rest-control#1", "rest-control#2", "rest-control#3"}, GraphQLPhases: []string{"rest-control-b#1", "rest-control-b#2", "rest-control-b#3"}}},
		{Arms{"graphql", "graphql"}, 2, report.Compare{REST: "graphql-load", GraphQL: "graphql-load-b",
			RESTPhases: []string{"graphql-load#1", "graphql-load#2"}, GraphQLPhases: []string{"graphql-load-b#1", "graphql-load-b#2"}}},
	} {
		ps, err := plan(specs, cmp, tc.rounds, tc.arms)
		if err != nil {
			t.Fatal(err)
		}
		got := comparedPhases(ps)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("arms %s, %d rounds: compare\n got %+v\nwant %+v", tc.arms, tc.rounds, got, tc.want)
		}
		// Every name compare lists is a phase the plan runs.
		ran := map[string]bool{}
		for _, p := range ps {
			ran[p.spec.Name] = true
		}
		for _, n := range slices.Concat(got.RESTPhases, got.GraphQLPhases) {
			if !ran[n] {
				t.Errorf("arms %s, %d rounds: compare names %q, which does not run", tc.arms, tc.rounds, n)
			}
		}
	}
}

func TestParseArms(t *testing.T) {
	for _, ok := range []string{"rest,graphql", "rest,rest", "graphql,graphql"} {
		if a, err := ParseArms(ok); err != nil || a.String() != ok {
			t.Errorf("ParseArms(%q) = %v, %v", ok, a, err)
		}
	}
	for _, bad := range []string{"", "rest", "graphql,rest", "rest,soap", "rest,graphql,rest"} {
		if _, err := ParseArms(bad); err == nil || exitcode.Of(err) != exitcode.Usage {
			t.Errorf("ParseArms(%q) must be a usage error, got %v", bad, err)
		}
	}
}

// TestPlanNoControlGroup: a profile that compares no REST phase runs its
// GraphQL phase's rounds alone; a REST self-check of it is refused, a
// GraphQL one still copies the phase.
func TestPlanNoControlGroup(t *testing.T) {
	specs := []workloads.Phase{{Name: "mem", Arm: "graphql"}, {Name: "g", Arm: "graphql"}, {Name: "max", Arm: "graphql"}}
	cmp := config.Compare{GraphQL: "g"}
	f := func(rounds int, arms Arms, want string) {
		t.Helper()
		ps, err := plan(specs, cmp, rounds, arms)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(ps); got != want {
			t.Errorf("rounds %d arms %s:\n got %s\nwant %s", rounds, arms, got, want)
		}
		if c := comparedPhases(ps); c.REST != "" && arms == DefaultArms() {
			t.Errorf("compare %+v names a REST arm", c)
		}
	}
	f(1, DefaultArms(), "mem g(graphql) max")
	f(3, DefaultArms(), "mem g#1(graphql) g#2(graphql) g#3(graphql) max")
	f(1, Arms{"graphql", "graphql"}, "mem g(rest) g-b(graphql) max")
	if _, err := plan(specs, cmp, 1, Arms{"rest", "rest"}); err == nil || !strings.Contains(err.Error(), "compare.rest is empty") {
		t.Errorf("rest,rest without a REST phase: %v, want an error naming compare.rest", err)
	}
}

// TestNeedsRESTTwin: REST phases against a target without a REST twin are
// refused before anything runs, naming them; the built-in target and a
// target with a twin are not.
func TestNeedsRESTTwin(t *testing.T) {
	plans := []planned{{spec: workloads.Phase{Name: "mem", Arm: "graphql"}}, {spec: workloads.Phase{Name: "rest-control#1", Arm: "rest"}},
		{spec: workloads.Phase{Name: "max-load-rest", Arm: "rest"}}}
	noTwin := config.TargetConfig{Kind: report.TargetCommand, GraphQLURL: "http://127.0.0.1:1/graphql"}
	err := needsRESTTwin(noTwin, "quick", plans)
	if err == nil || exitcode.Of(err) != exitcode.Usage || !strings.Contains(err.Error(), "profile quick drives the REST twin in phase(s) rest-control#1, max-load-rest") ||
		!strings.Contains(err.Error(), "target.rest_url is empty") {
		t.Errorf("got %v (exit %d), want a usage error naming the REST phases and target.rest_url", err, exitcode.Of(err))
	}
	if err := needsRESTTwin(noTwin, "gql", plans[:1]); err != nil {
		t.Errorf("GraphQL phases only: %v", err)
	}
	twin := noTwin
	twin.RESTURL = "http://127.0.0.1:1"
	for _, tc := range []config.TargetConfig{twin, {Kind: report.TargetBuiltin}, {}} {
		if err := needsRESTTwin(tc, "quick", plans); err != nil {
			t.Errorf("%+v: %v", tc, err)
		}
	}
}

// TestPlanAdaptiveRounds: a profile with max_rounds above rounds plans its
// compared pair up to max_rounds, so adaptive rounds can add rounds (they
// were planned only to rounds, and max_rounds added none).
func TestPlanAdaptiveRounds(t *testing.T) {
	cfg, err := config.Load(testkit.Defaults(t), nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	prof := cfg.Profiles["quick"]
	prof.Rounds, prof.MaxRounds = 2, 5
	ps, err := planRun(cfg, prof, "r", DefaultArms())
	if err != nil {
		t.Fatal(err)
	}
	last := 0
	for _, p := range ps {
		last = max(last, p.round)
	}
	if last != 5 {
		t.Errorf("rounds 2, max_rounds 5: planned up to round %d, want 5 (%s)", last, names(ps))
	}
}
