package workloads

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestOperationValid(t *testing.T) {
	for _, o := range []Operation{RESTGet, RESTPut, GraphQLQuery, GraphQLMutation} {
		if !o.Valid() {
			t.Errorf("%s: got invalid, want valid", o)
		}
	}
	for _, o := range []Operation{"", "rest", "GraphQL-Query", "graphql-subscription"} {
		if o.Valid() {
			t.Errorf("%q: got valid, want invalid", o)
		}
	}
}

func TestPhaseValidate(t *testing.T) {
	valid := func() Phase {
		return Phase{
			Name: "p", Arm: "rest",
			Groups:         []UserGroup{{Operation: RESTGet, Users: 2, Iterations: 3}, {Operation: RESTPut, Users: 1, Iterations: 1}},
			Think:          Think{Min: time.Millisecond, Max: 2 * time.Millisecond},
			RequestTimeout: time.Second,
			Donuts:         10,
		}
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("valid phase: got %v, want nil", err)
	}
	if got := valid().Requests(); got != 7 {
		t.Errorf("Requests: got %d, want 7", got)
	}
	// f checks that breaking p reports every wanted field key.
	f := func(name string, change func(p *Phase), want ...string) {
		t.Helper()
		p := valid()
		change(&p)
		err := p.Validate()
		if err == nil {
			t.Errorf("%s: got nil error, want one naming %v", name, want)
			return
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not name %q", name, err, w)
			}
		}
	}
	f("empty", func(p *Phase) { *p = Phase{} }, "name:", "arm:", "users:", "request_timeout:")
	f("bad group", func(p *Phase) {
		p.Groups = []UserGroup{{Operation: "rest-post", Users: 0, Iterations: 0}}
	}, "users[0].operation", "users[0].users", "users[0].iterations")
	f("duplicate operation", func(p *Phase) { p.Groups[1].Operation = RESTGet }, "users[1].operation")
	f("too many users", func(p *Phase) {
		p.Groups[0].Users, p.Groups[1].Users = MaxUsers, MaxUsers
	}, "at most 100000")
	f("request overflow", func(p *Phase) { p.Groups[0].Users, p.Groups[0].Iterations = 3, math.MaxInt64/2 }, "users[0].iterations: total requests overflow")
	f("think", func(p *Phase) { p.Think = Think{Min: -1, Max: -2} }, "think.min", "think.max")
	f("negative durations", func(p *Phase) { p.RampUp, p.TrimHead, p.TrimTail = -1, -1, 25*time.Hour }, "ramp_up", "trim_head", "trim_tail")
	f("timeout above the histogram", func(p *Phase) { p.RequestTimeout = 2 * time.Minute }, "request_timeout")
	f("readers need donuts", func(p *Phase) { p.Donuts = 0 }, "donuts:")
	p := valid()
	p.Groups = p.Groups[1:]
	p.Donuts = 0
	if err := p.Validate(); err != nil {
		t.Errorf("writers only without donuts: got %v, want nil", err)
	}
}

func TestPhaseDecoding(t *testing.T) {
	want := Phase{
		Name: "graphql-1", Arm: "graphql",
		Groups:         []UserGroup{{Operation: GraphQLQuery, Users: 300, Iterations: 10000}, {Operation: GraphQLMutation, Users: 300, Iterations: 10000}},
		Think:          Think{Max: 30 * time.Millisecond},
		RampUp:         10 * time.Second,
		TrimHead:       5 * time.Second,
		TrimTail:       2500 * time.Millisecond,
		RequestTimeout: 10 * time.Second,
		Donuts:         1000,
		Seed:           99,
		Run:            "r1",
	}
	const doc = `
name: graphql-1
arm: graphql
users:
  - {operation: graphql-query, users: 300, iterations: 10000}
  - {operation: graphql-mutation, users: 300, iterations: 10000}
think: {min: 0s, max: 30ms}
ramp_up: 10s
trim_head: 5s
trim_tail: 2.5s
request_timeout: 10s
donuts: 1000
seed: 99
run: r1
`
	var fromYAML Phase
	if err := yaml.Unmarshal([]byte(doc), &fromYAML); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	if !equalPhase(fromYAML, want) {
		t.Errorf("from YAML: got %+v, want %+v", fromYAML, want)
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON Phase
	if err := json.Unmarshal(b, &fromJSON); err != nil {
		t.Fatalf("json: %v", err)
	}
	if !equalPhase(fromJSON, want) {
		t.Errorf("from JSON: got %+v, want %+v", fromJSON, want)
	}
	if !strings.Contains(string(b), `"ramp_up":10000000000`) {
		t.Errorf("JSON %s: want durations in nanoseconds under snake_case keys", b)
	}
}

func equalPhase(a, b Phase) bool {
	ga, gb := a.Groups, b.Groups
	a.Groups, b.Groups = nil, nil
	if len(ga) != len(gb) || a.Think != b.Think {
		return false
	}
	for i := range ga {
		if ga[i] != gb[i] {
			return false
		}
	}
	aj, _ := json.Marshal(a)
	bj, _ := json.Marshal(b)
	return string(aj) == string(bj)
}

func TestRequestBodies(t *testing.T) {
	p := Phase{Name: "n", Arm: "graphql", Donuts: 5, Seed: 1, Run: "r",
		Groups: []UserGroup{{Operation: GraphQLQuery, Users: 1, Iterations: 1}, {Operation: GraphQLMutation, Users: 1, Iterations: 3}}}
	base, err := parseTarget("http://127.0.0.1:8080/")
	if err != nil {
		t.Fatal(err)
	}
	q, err := newUser(p, base, 0, userSlot{group: 0})
	if err != nil {
		t.Fatal(err)
	}
	c := q.next(0)
	var body struct {
		Query         string
		OperationName string
		Variables     map[string]any
	}
	if err := json.Unmarshal(c.body, &body); err != nil {
		t.Fatalf("query body %s: %v", c.body, err)
	}
	if body.Query != queryDocument || body.OperationName != "Donut" || body.Variables["id"] != string(c.wantID) || string(c.url) != "http://127.0.0.1:8080/graphql" {
		t.Errorf("query: got %s to %s, want the Donut query for id %s", c.body, c.url, c.wantID)
	}
	m, err := newUser(p, base, 1, userSlot{group: 1})
	if err != nil {
		t.Fatal(err)
	}
	flavors := map[string]bool{}
	for i := range 3 {
		c := m.next(i)
		body.Variables = nil
		if err := json.Unmarshal(c.body, &body); err != nil {
			t.Fatalf("mutation body %s: %v", c.body, err)
		}
		d, _ := body.Variables["donut"].(map[string]any)
		if body.Query != mutationDocument || body.OperationName != "UpdateDonut" || d["id"] != "w1" || d["flavor"] != c.wantFlavor || string(c.wantID) != "w1" {
			t.Errorf("mutation %d: got %s, want UpdateDonut of w1 with flavor %s", i, c.body, c.wantFlavor)
		}
		flavors[c.wantFlavor] = true
	}
	if len(flavors) != 3 {
		t.Errorf("writer flavors over 3 iterations: got %v, want all three", flavors)
	}
}

func TestBaggageEscape(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := baggageEscape(in); got != want {
			t.Errorf("baggageEscape(%q): got %q, want %q", in, got, want)
		}
	}
	f("", "")
	f("run-42_a.b", "run-42_a.b")
	f("a b", "a%20b")
	f(`x,y;z"w\v%`, "x%2Cy%3Bz%22w%5Cv%25")
	f("café", "caf%C3%A9")
	f("k=v/1+2", "k=v/1+2") // allowed in a baggage value as is
}
