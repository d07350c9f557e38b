package daemon

import (
	"fmt"
	"strings"

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
	return Arms{}, Usagef("--arms must be rest,graphql, rest,rest or graphql,graphql (got %q)", s)
}

// SelfCheck reports whether both arms are the same API.
func (a Arms) SelfCheck() bool { return a.First == a.Second }

// String is the form ParseArms reads.
func (a Arms) String() string { return a.First + "," + a.Second }

// Role of a planned phase in the KPI comparison.
const (
	roleNone    = ""
	roleRESTArm = "rest"    // the first compared arm (REST, or the self-check's A)
	roleGQLArm  = "graphql" // the second compared arm (GraphQL, or the self-check's B)
)

// planned is one phase as it will run.
type planned struct {
	spec  workloads.Phase
	round int    // 1-based round of a compared phase; 0 otherwise
	role  string // roleRESTArm, roleGQLArm or roleNone
}

// plan lays out the phases of a run: the profile's phases in order, with
// the compared pair replaced, where the first of them stands, by rounds of
// REST, GraphQL, REST, GraphQL, ... (interleaved so that drift in the
// machine affects both arms alike). With several rounds the compared
// phases are named "<name>#<round>". A self-check replaces the second arm
// by a copy of the first (named "<name>-b"), or the first by a copy of the
// second (named "<name>-a").
func plan(specs []workloads.Phase, compare Compare, rounds int, arms Arms) ([]planned, error) {
	var rest, gql *workloads.Phase
	for i := range specs {
		switch specs[i].Name {
		case compare.REST:
			rest = &specs[i]
		case compare.GraphQL:
			gql = &specs[i]
		}
	}
	if rest == nil || gql == nil {
		return nil, fmt.Errorf("the profile lacks the compared phases %q and %q", compare.REST, compare.GraphQL)
	}
	first, second := *rest, *gql
	switch {
	case arms.First == "rest" && arms.Second == "rest":
		second = first
		second.Name = first.Name + "-b"
	case arms.First == "graphql" && arms.Second == "graphql":
		first = second
		first.Name = second.Name + "-a"
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
			pa, pb := planned{spec: a, round: r, role: roleRESTArm}, planned{spec: b, round: r, role: roleGQLArm}
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
