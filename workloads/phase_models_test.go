package workloads

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestPhaseValidateModels(t *testing.T) {
	open := func() Phase {
		return Phase{
			Name: "o", Arm: "rest", Model: Open,
			Groups:         []UserGroup{{Operation: RESTGet, Weight: 3}, {Operation: RESTPut}},
			Duration:       time.Minute,
			Rate:           500,
			MaxInFlight:    100,
			RequestTimeout: time.Second,
			Operations:     donutOps(10),
		}
	}
	ramping := func() Phase {
		return Phase{
			Name: "r", Arm: "graphql", Model: Ramping,
			Groups:         []UserGroup{{Operation: GraphQLQuery}},
			Think:          Think{Max: 15 * time.Millisecond},
			Duration:       10 * time.Minute,
			Ramp:           Ramp{Start: 20, Step: 20, Every: time.Second, Max: 5000},
			Failure:        Failure{Window: 3 * time.Second, MaxErrorRatio: 0.01, MaxP99: 500 * time.Millisecond, MinRequests: 100},
			RequestTimeout: time.Second,
			Operations:     donutOps(10),
		}
	}
	closed := func() Phase {
		return Phase{
			Name: "c", Arm: "rest",
			Groups:         []UserGroup{{Operation: RESTPut, Users: 5}},
			Duration:       time.Minute,
			RequestTimeout: time.Second,
			Operations:     donutOps(10),
		}
	}
	for name, p := range map[string]Phase{"open": open(), "ramping": ramping(), "closed with duration and unlimited iterations": closed()} {
		if err := p.Validate(); err != nil {
			t.Errorf("valid %s phase: got %v, want nil", name, err)
		}
	}
	f := func(name string, p Phase, change func(p *Phase), want ...string) {
		t.Helper()
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
	f("unknown model", open(), func(p *Phase) { p.Model = "poisson" }, "model: unknown model")
	f("open without its fields", open(), func(p *Phase) { p.Duration, p.Rate, p.MaxInFlight = 0, 0, 0 },
		"duration: required", "rate:", "max_in_flight:")
	f("open with bad rates", open(), func(p *Phase) { p.Rate, p.RateEnd = math.NaN(), -1 }, "rate:", "rate_end:")
	f("open rate too high", open(), func(p *Phase) { p.Rate, p.RateEnd = 2e6, 2e6 }, "rate:", "rate_end:")
	f("open bad weight", open(), func(p *Phase) { p.Groups[0].Weight = -1 }, "users[0].weight")
	f("open still checks groups", open(), func(p *Phase) { p.Groups[1].Operation = RESTGet }, "users[1].operation")
	f("ramping without its fields", ramping(), func(p *Phase) { p.Duration, p.Ramp, p.Failure = 0, Ramp{}, Failure{} },
		"duration: required", "ramp: start or step", "failure.window")
	f("ramping bad ramp", ramping(), func(p *Phase) { p.Ramp = Ramp{Start: -1, Step: MaxUsers + 1, Every: 0, Max: -1} },
		"ramp.start", "ramp.step", "ramp.every", "ramp.max")
	f("ramping max below start", ramping(), func(p *Phase) { p.Ramp.Max = 10 }, "ramp.max: must not be below ramp.start")
	f("ramping window not whole seconds", ramping(), func(p *Phase) { p.Failure.Window = 1500 * time.Millisecond }, "failure.window")
	f("ramping window too long", ramping(), func(p *Phase) { p.Failure.Window = 2 * MaxFailureWindow }, "failure.window")
	f("ramping bad rules", ramping(), func(p *Phase) {
		p.Failure.MaxErrorRatio, p.Failure.MaxP99, p.Failure.MaxConnectionErrors, p.Failure.MinRequests = 1.5, -1, -1, -1
	}, "failure.max_error_ratio", "failure.max_p99", "failure.max_connection_errors", "failure.min_requests")
	f("ramping negative iterations", ramping(), func(p *Phase) { p.Groups[0].Iterations = -1 }, "users[0].iterations")
	f("closed unlimited without duration", closed(), func(p *Phase) { p.Duration = 0 }, "users[0].iterations: must be at least 1 (or 0 for unlimited with a duration)")
	f("closed still needs users", closed(), func(p *Phase) { p.Groups[0].Users = 0 }, "users[0].users")
	f("negative duration", closed(), func(p *Phase) { p.Duration = -time.Second }, "duration:")

	// Fields of other models are not checked, and users are not needed outside the closed model.
	p := ramping()
	p.Rate, p.MaxInFlight = -5, -5
	if err := p.Validate(); err != nil {
		t.Errorf("ramping with stray open fields: got %v, want nil", err)
	}
	p = ramping()
	p.Ramp = Ramp{Start: 10} // constant users: no step, no every
	if err := p.Validate(); err != nil {
		t.Errorf("ramping with constant users: got %v, want nil", err)
	}

	// Requests and Connections per model.
	if got := open().Requests(); got != 0 {
		t.Errorf("open Requests: got %d, want 0", got)
	}
	if got := closed().Requests(); got != 0 {
		t.Errorf("closed unlimited Requests: got %d, want 0", got)
	}
	for _, c := range []struct {
		name string
		p    Phase
		want int
	}{{"open", open(), 100}, {"ramping", ramping(), 5000}, {"closed", closed(), 5}} {
		if got := c.p.Connections(); got != c.want {
			t.Errorf("%s Connections: got %d, want %d", c.name, got, c.want)
		}
	}
	p = ramping()
	p.Ramp.Max = 0 // 20 + 20 x 600 at the ten-minute cap
	if got := p.Connections(); got != 12020 {
		t.Errorf("ramping Connections without max: got %d, want 12020", got)
	}
}

func TestPhaseDecodingModels(t *testing.T) {
	const doc = `
name: max
arm: rest
model: ramping
users:
  - {operation: rest-get}
  - {operation: rest-put, iterations: 0, weight: 2}
think: {max: 15ms}
duration: 10m
rate: 100
rate_end: 300
max_in_flight: 64
ramp: {start: 20, step: 20, every: 1s, max: 5000}
failure: {window: 3s, max_error_ratio: 0.01, max_p99: 500ms, max_connection_errors: 10, min_requests: 100}
request_timeout: 10s
`
	want := Phase{
		Name: "max", Arm: "rest", Model: Ramping,
		Groups:         []UserGroup{{Operation: RESTGet}, {Operation: RESTPut, Weight: 2}},
		Think:          Think{Max: 15 * time.Millisecond},
		Duration:       10 * time.Minute,
		Rate:           100,
		RateEnd:        300,
		MaxInFlight:    64,
		Ramp:           Ramp{Start: 20, Step: 20, Every: time.Second, Max: 5000},
		Failure:        Failure{Window: 3 * time.Second, MaxErrorRatio: 0.01, MaxP99: 500 * time.Millisecond, MaxConnectionErrors: 10, MinRequests: 100},
		RequestTimeout: 10 * time.Second,
		Operations:     donutOps(1000),
	}
	var got Phase
	if err := yaml.Unmarshal([]byte(doc), &got); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	got.Operations = want.Operations // the daemon adds the definitions
	if !equalPhase(got, want) {
		t.Errorf("from YAML: got %+v, want %+v", got, want)
	}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"model":"ramping"`, `"rate_end":300`, `"max_in_flight":64`, `"ramp":{"start":20,"step":20,"every":1000000000,"max":5000}`,
		`"max_error_ratio":0.01`, `"max_connection_errors":10`, `"min_requests":100`, `"weight":2`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON %s lacks %s", b, key)
		}
	}
	if err := got.Validate(); err != nil {
		t.Errorf("decoded phase: got %v, want valid", err)
	}
}
