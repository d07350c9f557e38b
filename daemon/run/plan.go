package run

import (
	"fmt"
	"strings"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/workloads"
)

// Arms selects what the two compared arms are. The usual "rest,graphql"
// measures GraphQL against the REST control; "rest,rest" (or
// "graphql,graphql") is the self-check: an arm against itself, whose deltas
// are the machine's noise floor and whose verdict should pass.
type Arms struct{ First, Second string }

// DefaultArms compares GraphQL with REST.
func DefaultArms() Arms { return Arms{First: "rest", Second: "graphql"} }

// ParseArms reads "rest,graphql", "rest,rest" or "graphql,graphql".
func ParseArms(s string) (Arms, error) {
	a, b, ok := strings.Cut(s, ",")
	switch {
	case !ok:
	case a == "rest" && b == "graphql", a == "rest" && b == "rest", a == "graphql" && b == "graphql":
		return Arms{First: a, Second: b}, nil
	}
	return Arms{}, exitcode.Usagef("--arms must be rest,graphql, rest,rest or graphql,graphql (got %q)", s)
}

// SelfCheck reports whether both arms are the same API.
func (a Arms) SelfCheck() bool { return a.First == a.Second }

// String is the form ParseArms reads.
func (a Arms) String() string { return a.First + "," + a.Second }

// Role of a planned phase in the KPI comparison.
const (
	roleNone    = ""
	roleRESTArm = "rest"    // the first compared arm (REST, or the self-check's original)
	roleGQLArm  = "graphql" // the second compared arm (GraphQL, or the self-check's "-b" copy)
)

// planned is one phase as it will run.
type planned struct {
	spec  workloads.Phase
	round int    // 1-based round of a compared phase; 0 otherwise
	role  string // roleRESTArm, roleGQLArm or roleNone
	// base is a compared phase's name without the "#<round>" suffix:
	// the profile's phase, or the self-check's "<name>-b" copy.
	base string
}

// plan lays out the phases of a run: the profile's phases in order, with
// the compared pair replaced, where the first of them stands, by rounds of
// REST, GraphQL, REST, GraphQL, ... (interleaved so that drift in the
// machine affects both arms alike). With several rounds the compared
// phases are named "<name>#<round>". A self-check ("rest,rest" or
// "graphql,graphql") runs the compared phase of that API as the first arm,
// under its own name, and a copy of it as the second arm, named
// "<name>-b": rest,rest runs rest-control and rest-control-b,
// graphql,graphql runs graphql-load and graphql-load-b.
func plan(specs []workloads.Phase, compare config.Compare, rounds int, arms Arms) ([]planned, error) {
	var rest, gql *workloads.Phase
	for i := range specs {
		switch specs[i].Name {
		case compare.REST:
			rest = &specs[i]
		case compare.GraphQL:
			gql = &specs[i]
		}
	}
	switch {
	case compare.REST == "" && gql != nil:
		// No control group: the GraphQL arm runs its rounds alone, unless
		// a self-check copies it.
		if arms.SelfCheck() && arms.First == "rest" {
			return nil, fmt.Errorf("--arms rest,rest needs a REST phase to compare, and the profile compares none (compare.rest is empty)")
		}
		if !arms.SelfCheck() {
			return planAlone(specs, *gql, rounds), nil
		}
		rest = gql
	case rest == nil || gql == nil:
		return nil, fmt.Errorf("the profile lacks the compared phases %q and %q", compare.REST, compare.GraphQL)
	}
	first, second := *rest, *gql
	if arms.SelfCheck() {
		if arms.First == "graphql" {
			first = *gql
		}
		second = first
		second.Name = first.Name + "-b"
		for _, s := range specs {
			if s.Name == second.Name {
				return nil, fmt.Errorf("the self-check's copy of %q would be named %q, which the profile already has", first.Name, second.Name)
			}
		}
	}
	var out []planned
	placed := false
	for _, s := range specs {
		if s.Name != compare.REST && s.Name != compare.GraphQL {
			out = append(out, planned{spec: s})
			continue
		}
		if placed {
			continue
		}
		placed = true
		for r := 1; r <= rounds; r++ {
			a, b := first, second
			if rounds > 1 {
				a.Name = fmt.Sprintf("%s#%d", first.Name, r)
				b.Name = fmt.Sprintf("%s#%d", second.Name, r)
			}
			pa, pb := planned{spec: a, round: r, role: roleRESTArm, base: first.Name}, planned{spec: b, round: r, role: roleGQLArm, base: second.Name}
			// A B, B A, A B, …: a drift of the machine over a pair of
			// rounds lands on both arms alike.
			if r%2 == 0 {
				pa, pb = pb, pa
			}
			out = append(out, pa, pb)
		}
	}
	return out, nil
}

// planAlone lays out a profile without a control group: its phases in
// order, with the GraphQL phase gql run rounds times in a row where it
// stands ("<name>#<round>" with several rounds).
func planAlone(specs []workloads.Phase, gql workloads.Phase, rounds int) []planned {
	var out []planned
	for _, s := range specs {
		if s.Name != gql.Name {
			out = append(out, planned{spec: s})
			continue
		}
		for r := 1; r <= rounds; r++ {
			g := gql
			if rounds > 1 {
				g.Name = fmt.Sprintf("%s#%d", gql.Name, r)
			}
			out = append(out, planned{spec: g, round: r, role: roleGQLArm, base: gql.Name})
		}
	}
	return out
}

// restPhases names the planned phases that drive the REST arm.
func restPhases(plans []planned) []string {
	var out []string
	for _, p := range plans {
		if p.spec.Arm == "rest" {
			out = append(out, p.spec.Name)
		}
	}
	return out
}

// needsRESTTwin refuses, before anything runs, a plan with REST phases
// against a target that has no REST twin (a target soakd does not host,
// with target.rest_url empty), naming the phases.
func needsRESTTwin(tc config.TargetConfig, profile string, plans []planned) error {
	if !tc.External() || tc.RESTURL != "" {
		return nil
	}
	rest := restPhases(plans)
	if len(rest) == 0 {
		return nil
	}
	return exitcode.Usagef("profile %s drives the REST twin in phase(s) %s, but the target has none (target.rest_url is empty): "+
		"set target.rest_url, or run a profile whose phases are all GraphQL, with compare.rest empty (no control group; see docs/own-server.md, \"No REST twin: no control group\")",
		profile, strings.Join(rest, ", "))
}

// comparedPhases names the compared arms as plans run them: each arm's base
// name (the profile's phase, or the self-check's copy) and, in round
// order, the names its phases run under.
func comparedPhases(plans []planned) report.Compare {
	var c report.Compare
	for _, p := range plans {
		switch p.role {
		case roleRESTArm:
			c.REST = p.base
			c.RESTPhases = append(c.RESTPhases, p.spec.Name)
		case roleGQLArm:
			c.GraphQL = p.base
			c.GraphQLPhases = append(c.GraphQLPhases, p.spec.Name)
		}
	}
	return c
}
