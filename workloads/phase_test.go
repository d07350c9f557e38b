package workloads

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestPhaseValidate(t *testing.T) {
	valid := func() Phase {
		return Phase{
			Name: "p", Arm: "rest",
			Groups:         []UserGroup{{Operation: RESTGet, Users: 2, Iterations: 3}, {Operation: RESTPut, Users: 1, Iterations: 1}},
			Think:          Think{Min: time.Millisecond, Max: 2 * time.Millisecond},
			RequestTimeout: time.Second,
			Operations:     donutOps(10),
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
	f("unknown operation lists the defined ones", func(p *Phase) { p.Groups[0].Operation = "rest-post" },
		`users[0].operation: unknown operation "rest-post"; defined operations: add, donut-updates, graphql-mutation, graphql-query, rest-get, rest-put`)
	f("no operations", func(p *Phase) { p.Operations = nil }, "users[0].operation: unknown operation", "defined operations: none")
	f("a subscription as a group", func(p *Phase) { p.Groups[0].Operation = DonutUpdates }, "users[0].operation: donut-updates is a subscription")
	f("bad template", func(p *Phase) {
		op := p.Operations[RESTGet]
		op.REST = &RESTDef{Path: "/api/donuts/{{idd}}"}
		p.Operations[RESTGet] = op
	}, "operations.rest-get.rest.path:", "{{idd}}", "its variables: flavor, id")
	f("subscriptions without their writer", func(p *Phase) {
		p.Subscriptions = Subscriptions{Clients: 1, PerClient: 1, Protocol: ProtocolMixed}
	}, "subscriptions: need a graphql-mutation group, whose writes raise donut-updates's events")
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
		Operations:     donutOps(1000),
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
seed: 99
run: r1
`
	var fromYAML Phase
	if err := yaml.Unmarshal([]byte(doc), &fromYAML); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	fromYAML.Operations = want.Operations // the daemon adds the definitions
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
	p := Phase{Name: "n", Arm: "graphql", Operations: donutOps(5), Seed: 1, Run: "r",
		Groups: []UserGroup{{Operation: GraphQLQuery, Users: 1, Iterations: 1}, {Operation: GraphQLMutation, Users: 1, Iterations: 3}}}
	base, err := parseTarget("http://127.0.0.1:8080/")
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEngine(p, HTTPClient(http.DefaultClient), base)
	if err != nil {
		t.Fatal(err)
	}
	q := e.newUser(0, userSlot{group: 0})
	c := q.next(0)
	var body struct {
		Query         string
		OperationName string
		Variables     map[string]any
	}
	if err := json.Unmarshal(c.body, &body); err != nil {
		t.Fatalf("query body %s: %v", c.body, err)
	}
	id, _ := body.Variables["id"].(string)
	n, _ := strconv.Atoi(id)
	if body.Query != queryDocument || body.OperationName != "Donut" || n < 1 || n > 5 || string(c.url) != "http://127.0.0.1:8080/graphql" {
		t.Errorf("query: got %s to %s, want the Donut query for an id in 1..5", c.body, c.url)
	}
	if got, want := wantOf(q, "data.donut.id"), id; got != want {
		t.Errorf("query: expects id %q, want %q", got, want)
	}
	if got, want := wantOf(q, "data.donut.flavor"), []string{"VANILLA", "STRAWBERRY", "CHOCOLATE"}[n%3]; got != want {
		t.Errorf("query of id %d: expects flavor %q, want %q (the seeded one)", n, got, want)
	}
	m := e.newUser(1, userSlot{group: 1})
	flavors := map[string]bool{}
	for i := range 3 {
		c := m.next(i)
		body.Variables = nil
		if err := json.Unmarshal(c.body, &body); err != nil {
			t.Fatalf("mutation body %s: %v", c.body, err)
		}
		d, _ := body.Variables["donut"].(map[string]any)
		name, _ := d["name"].(string)
		w, seq, _, err := ParseEventName(name)
		if body.Query != mutationDocument || body.OperationName != "UpdateDonut" || d["id"] != "w1" || d["flavor"] != wantOf(m, "data.addOrUpdateDonut.flavor") ||
			wantOf(m, "data.addOrUpdateDonut.id") != "w1" || err != nil || w != "w1" || seq != int64(i)+1 {
			t.Errorf("mutation %d: got %s, want UpdateDonut of w1 named by event w1#%d with the flavor it expects", i, c.body, i+1)
		}
		// Round-robin from the user's index: user 1 starts at STRAWBERRY.
		if want := []string{"VANILLA", "STRAWBERRY", "CHOCOLATE"}[(1+i)%3]; d["flavor"] != want {
			t.Errorf("mutation %d: flavor %v, want %s", i, d["flavor"], want)
		}
		flavors[wantOf(m, "data.addOrUpdateDonut.flavor")] = true
	}
	if len(flavors) != 3 {
		t.Errorf("writer flavors over 3 iterations: got %v, want all three", flavors)
	}
}

// wantOf returns the value u's last request expects at path.
func wantOf(u *user, path string) string {
	for k, key := range u.op.expect.keys {
		if key == path {
			return string(u.wants[k])
		}
	}
	return "<no expectation " + path + ">"
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
