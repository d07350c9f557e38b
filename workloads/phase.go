package workloads

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// Model is how a phase offers load: closed-model users, an open-model arrival
// schedule, or closed-model users added over time until the target fails.
type Model string

// The three workload models. The empty Model means Closed.
const (
	// Closed is JMeter's thread group: each user sends one request, waits for
	// the whole response, thinks, and sends again. The target's slowness slows
	// the offered load down.
	Closed Model = "closed"
	// Open is a constant or linearly ramping arrival rate (wrk2, k6's
	// constant-arrival-rate): requests are sent on a schedule whether or not
	// earlier ones have returned, so the target's slowness shows in latency
	// and in dropped arrivals rather than in a lower offered load.
	Open Model = "open"
	// Ramping is seed 002's maximum-throughput test: closed-model users are
	// added every Ramp.Every until a Failure rule trips, and the best window
	// before that is reported.
	Ramping Model = "ramping"
	// RampingRate is the open-model maximum load: the arrival rate ramps
	// linearly from Rate to RateEnd over Duration (as in Open, latency from
	// each request's intended send time), the Failure rules are judged on
	// the sliding window every LoadBucket, and the phase stops at the first
	// failure. An arrival dropped because MaxInFlight requests are in
	// flight counts in the window as a failed request (the target, or the
	// driver, could not keep up). A closed model hides queueing at the
	// knee (users wait for slow responses and offer less); this one does not.
	RampingRate Model = "ramping-rate"
)

// normalized returns m, with the empty Model read as Closed.
func (m Model) normalized() Model {
	if m == "" {
		return Closed
	}
	return m
}

// UserGroup is one JMeter-like thread group: Users virtual users each sending
// Operation Iterations times, one request at a time.
type UserGroup struct {
	// Operation is the request every user of the group sends.
	Operation Operation `yaml:"operation" json:"operation"`
	// Users is the number of concurrent virtual users (at least 1) in the
	// closed model; the open and ramping models do not use it.
	Users int `yaml:"users" json:"users"`
	// Iterations is the number of requests each user sends: at least 1, or 0
	// for "until stopped", which the closed model allows only with a Duration
	// and the ramping model always allows. The open model does not use it.
	Iterations int `yaml:"iterations" json:"iterations"`
	// Weight is the group's share of arrivals in the open model, relative to
	// the other groups' weights; 0 counts as 1. The other models do not use it.
	Weight int `yaml:"weight" json:"weight"`
}

// Ramp is the ramping model's user schedule: Start users at once, then Step
// more every Every, up to Max (RampUsers computes it).
type Ramp struct {
	// Start is the number of users started at the phase start.
	Start int `yaml:"start" json:"start"`
	// Step is the number of users added every Every (seed 002: 20).
	Step int `yaml:"step" json:"step"`
	// Every is the interval between additions (seed 002: 1 s); required when Step > 0.
	Every time.Duration `yaml:"every" json:"every"`
	// Max caps the number of users; 0 means MaxUsers. Reaching it and running
	// one full Failure.Window there without a failure ends the phase
	// ("no failure up to the cap").
	Max int `yaml:"max" json:"max"`
}

// Failure holds the ramping model's failure rules, judged by Judge once per
// LoadBucket on the sliding window of the last Window. Each rule trips when the
// window's figure exceeds its limit; a zero limit disables the rule.
type Failure struct {
	// Window is the length of the sliding window judged: a whole number of
	// LoadBuckets (1 s), at most MaxFailureWindow; required in the ramping model.
	Window time.Duration `yaml:"window" json:"window"`
	// MaxErrorRatio is the largest tolerated share of failed requests in the window (0..1), e.g. 0.01.
	MaxErrorRatio float64 `yaml:"max_error_ratio" json:"max_error_ratio"`
	// MaxP99 is the largest tolerated 99th-percentile latency of the window's successful requests, e.g. 500ms.
	MaxP99 time.Duration `yaml:"max_p99" json:"max_p99"`
	// MaxConnectionErrors is the largest tolerated number of refused or reset
	// connections (classes connection_refused and connection_reset) in the window.
	MaxConnectionErrors int64 `yaml:"max_connection_errors" json:"max_connection_errors"`
	// MinRequests is the fewest requests a window must hold to be judged; windows with fewer never trip.
	MinRequests int64 `yaml:"min_requests" json:"min_requests"`
}

// enabled reports whether at least one rule of f is enabled.
func (f Failure) enabled() bool {
	return f.MaxErrorRatio > 0 || f.MaxP99 > 0 || f.MaxConnectionErrors > 0
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

// Phase is one load phase, sent from the daemon to the driver as
// JSON (durations in nanoseconds) and decoded by the daemon from YAML
// (durations as strings such as "30ms").
type Phase struct {
	// Name identifies the phase in results and in the baggage header.
	Name string `yaml:"name" json:"name"`
	// Arm is the arm under test ("rest" or "graphql"); the daemon validates the value.
	Arm string `yaml:"arm" json:"arm"`
	// Groups are the thread groups that run concurrently in this phase; at most one per operation.
	Groups []UserGroup `yaml:"users" json:"users"`
	// Think is the uniform random pause before each request (closed and ramping models).
	Think Think `yaml:"think" json:"think"`
	// RampUp spreads the closed model's users' start times evenly over this
	// span (0 starts all at once); the ramping model uses Ramp instead.
	RampUp time.Duration `yaml:"ramp_up" json:"ramp_up"`
	// TrimHead is cut from the start of the steady window: after the last
	// user started (closed model) or after the schedule's start (open model).
	// The ramping model's steady window is its peak window.
	TrimHead time.Duration `yaml:"trim_head" json:"trim_head"`
	// TrimTail is cut from the end of the steady window: before the first
	// user finished or the duration cap (closed model), or before the
	// schedule's end (open model).
	TrimTail time.Duration `yaml:"trim_tail" json:"trim_tail"`
	// RequestTimeout bounds one request from send to full body read; at most 60 s,
	// the top of the latency histograms.
	RequestTimeout time.Duration `yaml:"request_timeout" json:"request_timeout"`
	// DriverBurn is a test switch: each user burns this much of the
	// driver's CPU after every request (inject.driver_cpu_us_per_request),
	// making the load generator the bottleneck on purpose. 0 in real runs.
	DriverBurn time.Duration `yaml:"-" json:"driver_burn,omitempty"`
	// Operations defines every operation the phase's groups and
	// subscriptions name (the daemon sends only those), resolved: CSV data
	// carries its values, headers_env names variables the driver reads.
	Operations map[Operation]OperationDef `yaml:"operations" json:"operations"`
	// Seed makes the random choices reproducible: user u draws its think
	// times and random data picks from a PCG seeded with (Seed, u).
	Seed uint64 `yaml:"seed" json:"seed"`
	// Run is the run id stamped into every request's baggage header.
	Run string `yaml:"run" json:"run"`

	// Model is the workload model; "" means Closed.
	Model Model `yaml:"model" json:"model"`
	// Duration caps or sets the phase's length. Closed: an optional cap (0 =
	// none); once it has elapsed users start no new iteration. Open: the
	// required length of the arrival schedule. Ramping: the required cap on
	// the phase's length.
	Duration time.Duration `yaml:"duration" json:"duration"`
	// Rate is the open model's arrival rate at the start of the schedule, in
	// requests per second (at most MaxRate).
	Rate float64 `yaml:"rate" json:"rate"`
	// RateEnd, when above 0, is the open model's arrival rate at Duration,
	// reached linearly from Rate; 0 keeps the rate constant.
	RateEnd float64 `yaml:"rate_end" json:"rate_end"`
	// MaxInFlight is the open model's limit on requests in flight; an arrival
	// that finds it reached is dropped (counted in OpenResult.Dropped, not
	// sent). Required in the open model. A sharded phase shares the slots
	// out like users (slot k is shard k mod Count's), so the limit holds
	// for all shards together; it must be at least Shard.Count.
	MaxInFlight int `yaml:"max_in_flight" json:"max_in_flight"`
	// Ramp is the ramping model's user schedule.
	Ramp Ramp `yaml:"ramp" json:"ramp"`
	// Failure holds the ramping model's failure rules.
	Failure Failure `yaml:"failure" json:"failure"`
	// Subscriptions, when Clients > 0, opens websocket subscriptions to the
	// ids of the phase's writers whose writes raise the subscription's
	// events, for the length of a closed-model phase, and reports how their
	// events were delivered.
	Subscriptions Subscriptions `yaml:"subscriptions" json:"subscriptions"`

	// Shard makes this driver one of Shard.Count that together offer the
	// phase's load: it runs the users, arrivals and subscription clients of
	// the global sequences it owns (see Shard). Absent (the zero value) is
	// the whole load. Not a config key: the orchestrator (or soakd drive
	// --shard) sets it per driver.
	Shard Shard `yaml:"-" json:"shard,omitzero"`
	// StartAt, when set, is the instant the phase's load starts (T0): the
	// driver gets ready (its subscriptions live), waits for it, and fails
	// without sending a request when it was not ready in time. Shards of
	// one phase are given the same StartAt, so that they start together and
	// no writer raises an event before every shard's subscriptions listen.
	// Absent, the load starts as soon as the driver is ready. Not a config key.
	StartAt time.Time `yaml:"-" json:"start_at,omitzero"`
}

// SubscriptionOperation returns the subscription the phase's subscribers
// open: Subscriptions.Operation, or when it is empty the one subscription
// operation raised by one of the phase's groups (or the only one defined).
func (p Phase) SubscriptionOperation() (Operation, error) {
	if name := p.Subscriptions.Operation; name != "" {
		switch def, ok := p.Operations[name]; {
		case !ok:
			return "", fmt.Errorf("unknown operation %q; defined operations: %s", name, operationList(p.Operations))
		case !def.IsSubscription():
			return "", fmt.Errorf("%s is not a subscription", name)
		}
		return name, nil
	}
	var raised, all []Operation
	for _, name := range slices.Sorted(maps.Keys(p.Operations)) {
		if d := p.Operations[name]; d.IsSubscription() {
			all = append(all, name)
			if slices.ContainsFunc(p.Groups, func(g UserGroup) bool { return g.Operation == d.Subscription.RaisedBy }) {
				raised = append(raised, name)
			}
		}
	}
	switch {
	case len(raised) == 1:
		return raised[0], nil
	case len(raised) > 1:
		return "", fmt.Errorf("several subscription operations fit (%v); name one", raised)
	case len(all) == 1: // its writer group is missing: Validate says so
		return all[0], nil
	case len(all) == 0:
		return "", errors.New("no subscription operation is defined")
	}
	return "", fmt.Errorf("no subscription operation is raised by one of the phase's groups; name one of %v", all)
}

// unjoin returns the errors joined in err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
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
	// MaxRate caps the open model's arrival rates, in requests per second.
	MaxRate = 1_000_000.0
	// MaxWeight caps a group's weight, so weights add up without overflow.
	MaxWeight = 1_000_000
	// MaxFailureWindow caps Failure.Window: the window is kept as one small
	// HDR histogram per LoadBucket, so its length bounds the driver's memory.
	MaxFailureWindow = time.Minute
)

// Users returns the total number of virtual users over all groups.
func (p Phase) Users() int {
	n := 0
	for _, g := range p.Groups {
		n += g.Users
	}
	return n
}

// Requests returns the number of requests a closed-model phase sends when it
// is neither aborted nor cut short by its Duration: the sum over groups of
// users times iterations. It is 0 when that number is not fixed in advance: in
// the open and ramping models, and when a group's iterations are unlimited.
func (p Phase) Requests() int64 {
	if p.Model.normalized() != Closed {
		return 0
	}
	var n int64
	for _, g := range p.Groups {
		if g.Iterations == 0 {
			return 0
		}
		n += int64(g.Users) * int64(g.Iterations)
	}
	return n
}

// Connections returns the number of HTTP connections the phase's driver can
// use at once, the size NewClient's idle pool should have: the users of a
// closed phase, MaxInFlight of an open one, and the most users a ramping
// phase can reach (Ramp.Max, or the ramp's value at Duration when it has no
// Max); of a sharded phase, this shard's share of them.
func (p Phase) Connections() int {
	switch p.Model.normalized() {
	case Open, RampingRate:
		return max(p.Shard.Share(p.MaxInFlight), 1)
	case Ramping:
		return max(p.Shard.Share(RampUsers(p.Ramp, p.Duration)), 1)
	}
	return max(p.Shard.Share(p.Users()), 1)
}

// Validate reports every problem of p at once (joined with errors.Join); each
// message names the offending field by its YAML/JSON key. Fields of another
// model than p.Model are not checked (except ranges every model shares).
func (p Phase) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	model := p.Model.normalized()
	switch model {
	case Closed, Open, Ramping, RampingRate:
	default:
		bad("model: unknown model %q (want closed, open, ramping or ramping-rate)", p.Model)
	}
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
	total := 0
	var requests int64
	for i, g := range p.Groups {
		def, ok := p.Operations[g.Operation]
		switch {
		case !ok:
			bad("users[%d].operation: unknown operation %q; defined operations: %s", i, g.Operation, operationList(p.Operations))
		case def.IsSubscription():
			bad("users[%d].operation: %s is a subscription; name it in subscriptions.operation, not in a user group", i, g.Operation)
		}
		if j, dup := seen[g.Operation]; dup {
			bad("users[%d].operation: %s already used by users[%d] (one group per operation)", i, g.Operation, j)
		} else {
			seen[g.Operation] = i
		}
		if g.Weight < 0 || g.Weight > MaxWeight {
			bad("users[%d].weight: must be between 0 and %d, got %d", i, MaxWeight, g.Weight)
		}
		switch model {
		case Closed:
			if g.Users < 1 || g.Users > MaxUsers {
				bad("users[%d].users: must be between 1 and %d, got %d", i, MaxUsers, g.Users)
			} else {
				total += g.Users
			}
			switch {
			case g.Iterations < 0 || (g.Iterations == 0 && p.Duration <= 0):
				bad("users[%d].iterations: must be at least 1 (or 0 for unlimited with a duration), got %d", i, g.Iterations)
			case g.Iterations > 0 && g.Users >= 1 && g.Users <= MaxUsers:
				if int64(g.Iterations) > (math.MaxInt64-requests)/int64(g.Users) {
					bad("users[%d].iterations: total requests overflow", i)
				} else {
					requests += int64(g.Users) * int64(g.Iterations)
				}
			}
		case Ramping:
			if g.Iterations < 0 {
				bad("users[%d].iterations: must not be negative (0 is unlimited), got %d", i, g.Iterations)
			}
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
	}{{"ramp_up", p.RampUp}, {"trim_head", p.TrimHead}, {"trim_tail", p.TrimTail}, {"duration", p.Duration}} {
		if d.v < 0 || d.v > MaxDuration {
			bad("%s: must be between 0 and %s, got %s", d.key, MaxDuration, d.v)
		}
	}
	if p.RequestTimeout <= 0 || p.RequestTimeout > MaxRequestTimeout {
		bad("request_timeout: must be above 0 and at most %s, got %s", MaxRequestTimeout, p.RequestTimeout)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Operations)) {
		if err := p.Operations[name].Validate(p.Operations); err != nil {
			for _, e := range unjoin(err) {
				bad("operations.%s.%v", name, e)
			}
		}
	}
	if p.Subscriptions != (Subscriptions{}) {
		if err := p.Subscriptions.Validate(); err != nil {
			for _, e := range unjoin(err) {
				bad("subscriptions.%v", e)
			}
		}
		if model != Closed {
			bad("subscriptions: only a closed-model phase can open subscriptions")
		}
		if name, err := p.SubscriptionOperation(); err != nil {
			bad("subscriptions.operation: %v", err)
		} else if raiser := p.Operations[name].Subscription.RaisedBy; !slices.ContainsFunc(p.Groups, func(g UserGroup) bool { return g.Operation == raiser }) {
			bad("subscriptions: need a %s group, whose writes raise %s's events", raiser, name)
		}
	}
	if err := p.Shard.Validate(); err != nil {
		for _, e := range unjoin(err) {
			bad("shard.%v", e)
		}
	} else if (model == Open || model == RampingRate) && p.MaxInFlight >= 1 && p.MaxInFlight < p.Shard.Count {
		bad("max_in_flight: %d request slots cannot be shared by %d shards (each needs at least one): use at least %d, or fewer shards",
			p.MaxInFlight, p.Shard.Count, p.Shard.Count)
	}
	switch model {
	case Open:
		errs = append(errs, p.validateOpen()...)
	case Ramping:
		errs = append(errs, p.validateRamping()...)
	case RampingRate:
		errs = append(errs, p.validateOpen()...)
		if !(p.RateEnd > p.Rate) {
			errs = append(errs, fmt.Errorf("rate_end: must be above rate (%g) in the ramping-rate model, the rate the ramp ends at, got %g", p.Rate, p.RateEnd))
		}
		errs = append(errs, p.Failure.validate()...)
	}
	return errors.Join(errs...)
}

// validateOpen checks the open model's fields.
func (p Phase) validateOpen() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if p.Duration <= 0 {
		bad("duration: required (above 0) in the open model, got %s", p.Duration)
	}
	if !(p.Rate > 0 && p.Rate <= MaxRate) { // also rejects NaN
		bad("rate: must be above 0 and at most %g requests/s in the open model, got %g", MaxRate, p.Rate)
	}
	if !(p.RateEnd >= 0 && p.RateEnd <= MaxRate) {
		bad("rate_end: must be 0 (constant rate) or above 0 and at most %g requests/s, got %g", MaxRate, p.RateEnd)
	}
	if p.MaxInFlight < 1 || p.MaxInFlight > MaxUsers {
		bad("max_in_flight: must be between 1 and %d in the open model, got %d", MaxUsers, p.MaxInFlight)
	}
	return errs
}

// validateRamping checks the ramping model's fields.
func (p Phase) validateRamping() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	r, f := p.Ramp, p.Failure
	if p.Duration <= 0 {
		bad("duration: required (above 0) in the ramping model as the cap on its length, got %s", p.Duration)
	}
	if r.Start < 0 || r.Start > MaxUsers {
		bad("ramp.start: must be between 0 and %d, got %d", MaxUsers, r.Start)
	}
	if r.Step < 0 || r.Step > MaxUsers {
		bad("ramp.step: must be between 0 and %d, got %d", MaxUsers, r.Step)
	}
	if r.Start == 0 && r.Step == 0 {
		bad("ramp: start or step must be at least 1, or no user ever runs")
	}
	if r.Step > 0 && (r.Every <= 0 || r.Every > MaxDuration) {
		bad("ramp.every: must be above 0 and at most %s when ramp.step is set, got %s", MaxDuration, r.Every)
	} else if r.Every < 0 || r.Every > MaxDuration {
		bad("ramp.every: must be between 0 and %s, got %s", MaxDuration, r.Every)
	}
	if r.Max < 0 || r.Max > MaxUsers {
		bad("ramp.max: must be between 0 (meaning %d) and %d, got %d", MaxUsers, MaxUsers, r.Max)
	} else if r.Max > 0 && r.Max < r.Start {
		bad("ramp.max: must not be below ramp.start (%d), got %d", r.Start, r.Max)
	}
	return append(errs, f.validate()...)
}

// validate checks the failure rules of a ramping or ramping-rate phase.
func (f Failure) validate() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if f.Window < LoadBucket || f.Window > MaxFailureWindow || f.Window%LoadBucket != 0 {
		bad("failure.window: must be a whole number of %s between %s and %s, got %s", LoadBucket, LoadBucket, MaxFailureWindow, f.Window)
	}
	if !(f.MaxErrorRatio >= 0 && f.MaxErrorRatio <= 1) {
		bad("failure.max_error_ratio: must be between 0 (disabled) and 1, got %g", f.MaxErrorRatio)
	}
	if f.MaxP99 < 0 || f.MaxP99 > MaxRequestTimeout {
		bad("failure.max_p99: must be between 0 (disabled) and %s, got %s", MaxRequestTimeout, f.MaxP99)
	}
	if f.MaxConnectionErrors < 0 {
		bad("failure.max_connection_errors: must not be negative (0 disables), got %d", f.MaxConnectionErrors)
	}
	if f.MinRequests < 0 {
		bad("failure.min_requests: must not be negative, got %d", f.MinRequests)
	}
	return errs
}
