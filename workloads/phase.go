package workloads

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Operation names one kind of request a virtual user sends. Operations are low
// cardinality on purpose: they label histograms and error counts.
type Operation string

// The four operations of seed 002: a REST control group (GET and PUT of one
// donut) and the GraphQL equivalents (a query and a mutation).
const (
	// RESTGet reads a seeded donut with GET {target}/api/donuts/{id}.
	RESTGet Operation = "rest-get"
	// RESTPut writes the user's own donut with PUT {target}/api/donuts/{id}.
	RESTPut Operation = "rest-put"
	// GraphQLQuery reads a seeded donut with the Donut query on POST {target}/graphql.
	GraphQLQuery Operation = "graphql-query"
	// GraphQLMutation writes the user's own donut with the UpdateDonut mutation on POST {target}/graphql.
	GraphQLMutation Operation = "graphql-mutation"
)

// Valid reports whether o is one of the four known operations.
func (o Operation) Valid() bool {
	switch o {
	case RESTGet, RESTPut, GraphQLQuery, GraphQLMutation:
		return true
	}
	return false
}

// writes reports whether o changes the store; writers use their own ids so
// that readers never see their writes.
func (o Operation) writes() bool { return o == RESTPut || o == GraphQLMutation }

// UserGroup is one JMeter-like thread group: Users virtual users each sending
// Operation Iterations times, one request at a time.
type UserGroup struct {
	// Operation is the request every user of the group sends.
	Operation Operation `yaml:"operation" json:"operation"`
	// Users is the number of concurrent virtual users (at least 1).
	Users int `yaml:"users" json:"users"`
	// Iterations is the number of requests each user sends (at least 1).
	Iterations int `yaml:"iterations" json:"iterations"`
}

// Think is the pause a user takes before each request, drawn uniformly from
// [Min, Max] (JMeter's Uniform Random Timer). Min == Max gives a constant pause
// and zero gives none.
type Think struct {
	// Min is the shortest pause; it must not be negative.
	Min time.Duration `yaml:"min" json:"min"`
	// Max is the longest pause; it must not be below Min.
	Max time.Duration `yaml:"max" json:"max"`
}

// Phase is one closed-model load phase, sent from the daemon to the driver as
// JSON (durations in nanoseconds) and decoded by the daemon from YAML
// (durations as strings such as "30ms").
type Phase struct {
	// Name identifies the phase in results and in the baggage header.
	Name string `yaml:"name" json:"name"`
	// Arm is the arm under test ("rest" or "graphql"); the daemon validates the value.
	Arm string `yaml:"arm" json:"arm"`
	// Groups are the thread groups that run concurrently in this phase; at most one per operation.
	Groups []UserGroup `yaml:"users" json:"users"`
	// Think is the uniform random pause before each request.
	Think Think `yaml:"think" json:"think"`
	// RampUp spreads the users' start times evenly over this span (0 starts all at once).
	RampUp time.Duration `yaml:"ramp_up" json:"ramp_up"`
	// TrimHead is cut from the start of the steady window, after the last user started.
	TrimHead time.Duration `yaml:"trim_head" json:"trim_head"`
	// TrimTail is cut from the end of the steady window, before the first user finished.
	TrimTail time.Duration `yaml:"trim_tail" json:"trim_tail"`
	// RequestTimeout bounds one request from send to full body read; at most 60 s,
	// the top of the latency histograms.
	RequestTimeout time.Duration `yaml:"request_timeout" json:"request_timeout"`
	// Donuts is the number of seeded donuts (ids "1".."Donuts") readers pick from uniformly.
	Donuts int `yaml:"donuts" json:"donuts"`
	// Seed makes the random choices reproducible: user u draws from a PCG seeded with (Seed, u).
	Seed uint64 `yaml:"seed" json:"seed"`
	// Run is the run id stamped into every request's baggage header.
	Run string `yaml:"run" json:"run"`
}

// Limits enforced by Validate. They keep the engine's arithmetic far from
// overflow and its goroutine count (one per user, a few KiB each) sane.
const (
	// MaxUsers caps the total number of virtual users in one phase.
	MaxUsers = 100_000
	// MaxDuration caps every duration of a phase except RequestTimeout.
	MaxDuration = 24 * time.Hour
	// MaxRequestTimeout is the top of the latency histograms (60 s).
	MaxRequestTimeout = time.Duration(histMaxMicros) * time.Microsecond
)

// Users returns the total number of virtual users over all groups.
func (p Phase) Users() int {
	n := 0
	for _, g := range p.Groups {
		n += g.Users
	}
	return n
}

// Requests returns the number of requests the phase sends when it is not
// aborted: the sum over groups of users times iterations.
func (p Phase) Requests() int64 {
	var n int64
	for _, g := range p.Groups {
		n += int64(g.Users) * int64(g.Iterations)
	}
	return n
}

// Validate reports every problem of p at once (joined with errors.Join); each
// message names the offending field by its YAML/JSON key.
func (p Phase) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if p.Name == "" {
		bad("name: must not be empty")
	}
	if p.Arm == "" {
		bad("arm: must not be empty")
	}
	if len(p.Groups) == 0 {
		bad("users: at least one user group is required")
	}
	seen := make(map[Operation]int, len(p.Groups))
	total, readers := 0, false
	var requests int64
	for i, g := range p.Groups {
		if !g.Operation.Valid() {
			bad("users[%d].operation: unknown operation %q (want rest-get, rest-put, graphql-query or graphql-mutation)", i, g.Operation)
		} else if j, dup := seen[g.Operation]; dup {
			bad("users[%d].operation: %s already used by users[%d] (one group per operation)", i, g.Operation, j)
		} else {
			seen[g.Operation] = i
		}
		if g.Users < 1 || g.Users > MaxUsers {
			bad("users[%d].users: must be between 1 and %d, got %d", i, MaxUsers, g.Users)
		} else {
			total += g.Users
		}
		if g.Iterations < 1 {
			bad("users[%d].iterations: must be at least 1, got %d", i, g.Iterations)
		} else if g.Users >= 1 && g.Users <= MaxUsers {
			if int64(g.Iterations) > (math.MaxInt64-requests)/int64(g.Users) {
				bad("users[%d].iterations: total requests overflow", i)
			} else {
				requests += int64(g.Users) * int64(g.Iterations)
			}
		}
		if g.Operation.Valid() && !g.Operation.writes() {
			readers = true
		}
	}
	if total > MaxUsers {
		bad("users: %d users in total, at most %d allowed", total, MaxUsers)
	}
	if p.Think.Min < 0 || p.Think.Min > MaxDuration {
		bad("think.min: must be between 0 and %s, got %s", MaxDuration, p.Think.Min)
	}
	if p.Think.Max < p.Think.Min || p.Think.Max > MaxDuration {
		bad("think.max: must be between think.min (%s) and %s, got %s", p.Think.Min, MaxDuration, p.Think.Max)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"ramp_up", p.RampUp}, {"trim_head", p.TrimHead}, {"trim_tail", p.TrimTail}} {
		if d.v < 0 || d.v > MaxDuration {
			bad("%s: must be between 0 and %s, got %s", d.key, MaxDuration, d.v)
		}
	}
	if p.RequestTimeout <= 0 || p.RequestTimeout > MaxRequestTimeout {
		bad("request_timeout: must be above 0 and at most %s, got %s", MaxRequestTimeout, p.RequestTimeout)
	}
	if readers && p.Donuts < 1 {
		bad("donuts: must be at least 1 when a group reads, got %d", p.Donuts)
	} else if p.Donuts < 0 {
		bad("donuts: must not be negative, got %d", p.Donuts)
	}
	return errors.Join(errs...)
}
