// Package preflight is `soakd check`: before a run of many minutes finds a
// typo, every operation a profile uses is sent once against the
// configured target, each subscription is opened and one event raised on
// it, and the target's figures are read once, all in seconds. A check
// that fails names the operation and why (its status, the expectation it
// missed, the error), as the run would have, 20 minutes later.
package preflight

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/target"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/workloads"
)

// subscriptionDrain bounds how long a subscription check waits for its
// event after the mutation that raised it was answered.
const subscriptionDrain = 5 * time.Second

// Options configure a check.
type Options struct {
	// Profile is the profile whose operations are checked ("": the
	// config's default_profile).
	Profile string
	// Executable is soakd's binary, which starts the built-in target.
	Executable string
	Log        *zap.Logger
}

// Check is one operation's (or one subscription's) result.
type Check struct {
	// Operation is the operation checked; for a subscription, the
	// subscription operation, RaisedBy the operation that raised its event.
	Operation string `json:"operation"`
	RaisedBy  string `json:"raised_by,omitempty"`
	// Arm is the arm of the first phase that uses it (rest or graphql).
	Arm string `json:"arm"`
	// OK is true when the request was answered and met its expectations
	// (for a subscription: every event raised arrived, once).
	OK bool `json:"ok"`
	// LatencyMs is the request's latency in ms (the raising mutation's
	// for a subscription); absent when no request completed.
	LatencyMs *float64 `json:"latency_ms,omitempty"`
	// Detail says what was seen: the error class and example, or what
	// was checked.
	Detail string `json:"detail"`
}

// Result is a whole check.
type Result struct {
	Profile string            `json:"profile"`
	Target  report.TargetInfo `json:"target"`
	Checks  []Check           `json:"checks"`
	// Seconds is the check's wall time, the target's start included.
	Seconds float64 `json:"seconds"`
}

// Failed is the number of checks that did not pass.
func (r Result) Failed() int {
	n := 0
	for _, c := range r.Checks {
		if !c.OK {
			n++
		}
	}
	return n
}

// Run opens cfg's target, checks every operation profile uses and reads
// the target's figures, then stops what it started. The error is a usage
// error for a profile that does not exist, the target's own when it cannot
// be opened, and exitcode.Fail when a check failed (the Result is complete
// then).
func Run(ctx context.Context, cfg *config.Config, o Options) (Result, error) {
	start := time.Now()
	log := o.Log
	if log == nil {
		log = zap.NewNop()
	}
	name := cmp.Or(o.Profile, cfg.DefaultProfile)
	prof, ok := cfg.Profiles[name]
	if !ok {
		return Result{}, exitcode.Usagef("profile %q is not defined (the config defines %v)", name, slices.Sorted(maps.Keys(cfg.Profiles)))
	}
	specs := cfg.Phases(prof, "check")
	dir, err := os.MkdirTemp("", "soakd-check-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	t, err := target.Open(ctx, cfg, o.Executable, dir, log)
	if err != nil {
		return Result{}, fmt.Errorf("cannot open the target: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := t.Shutdown(sctx); err != nil {
			log.Warn("target shutdown", zap.Error(err))
		}
	}()
	info := t.Info()
	ep := workloads.Endpoints{GraphQL: info.GraphQLURL, GraphQLWS: info.GraphQLWSURL, REST: info.RESTURL}
	res := Result{Profile: name}
	for _, spec := range Plan(specs) {
		if err := ctx.Err(); err != nil {
			return res, exitcode.With(exitcode.Aborted, err)
		}
		res.Checks = append(res.Checks, runOne(ctx, ep, spec))
	}
	res.Target = t.Info() // after the load: the figures of a target that served it
	res.Seconds = time.Since(start).Seconds()
	if n := res.Failed(); n > 0 {
		return res, exitcode.With(exitcode.Fail, fmt.Errorf("%d of %d checks failed", n, len(res.Checks)))
	}
	return res, nil
}

// Spec is one check's phase: one user sending one request of an
// operation, or one subscription client with one subscription and one
// writer raising one event on it.
type Spec struct {
	Phase workloads.Phase
	// Subscription is the subscription operation checked ("" for a
	// request).
	Subscription workloads.Operation
}

// Plan is the checks of a profile's phases: each operation once, in the
// order the phases first use it (with that phase's arm, seed, data and
// timeout), then each subscription with the operation that raises it.
func Plan(phases []workloads.Phase) []Spec {
	var out []Spec
	seen := map[workloads.Operation]bool{}
	for _, ph := range phases {
		for _, g := range ph.Groups {
			if seen[g.Operation] {
				continue
			}
			seen[g.Operation] = true
			out = append(out, Spec{Phase: one(ph, g.Operation)})
		}
	}
	subs := map[workloads.Operation]bool{}
	for _, ph := range phases {
		if ph.Subscriptions.Clients == 0 {
			continue
		}
		op, err := ph.SubscriptionOperation()
		if err != nil || subs[op] {
			continue
		}
		subs[op] = true
		raiser := workloads.Operation("")
		if d := ph.Operations[op]; d.Subscription != nil {
			raiser = d.Subscription.RaisedBy
		}
		if raiser == "" {
			continue // the phase's validation names it
		}
		spec := one(ph, raiser)
		spec.Subscriptions = ph.Subscriptions
		spec.Subscriptions.Operation, spec.Subscriptions.Clients, spec.Subscriptions.PerClient = op, 1, 1
		spec.Subscriptions.Drain = min(cmp.Or(ph.Subscriptions.Drain, subscriptionDrain), subscriptionDrain)
		out = append(out, Spec{Phase: spec, Subscription: op})
	}
	return out
}

// one is phase ph reduced to one user sending op once, at once.
func one(ph workloads.Phase, op workloads.Operation) workloads.Phase {
	return workloads.Phase{
		Name: "check " + string(op), Arm: ph.Arm, Model: workloads.Closed,
		Groups:         []workloads.UserGroup{{Operation: op, Users: 1, Iterations: 1}},
		RequestTimeout: ph.RequestTimeout, Operations: ph.Operations, Seed: ph.Seed, Run: ph.Run,
	}
}

// runOne runs one check against ep.
func runOne(ctx context.Context, ep workloads.Endpoints, s Spec) Check {
	op := s.Phase.Groups[0].Operation
	c := Check{Operation: string(op), Arm: s.Phase.Arm}
	if s.Subscription != "" {
		c.Operation, c.RaisedBy = string(s.Subscription), string(op)
	}
	client := workloads.NewClient(s.Phase.Connections(), s.Phase.RequestTimeout)
	defer client.CloseIdleConnections()
	r, err := workloads.RunAt(ctx, ep, s.Phase, client, nil)
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	if r.Requests > 0 && r.Errors < r.Requests {
		ms := r.LatencyMs.Max
		c.LatencyMs = &ms
	}
	if r.Errors > 0 || r.Requests == 0 {
		c.Detail = firstError(r)
		return c
	}
	if s.Subscription == "" {
		c.OK, c.Detail = true, "answered; every expectation met"
		return c
	}
	sub := r.Subscriptions
	switch {
	case sub == nil || sub.Subscriptions == 0:
		c.Detail = "the subscription was not opened"
	case sub.Expected == 0:
		c.Detail = fmt.Sprintf("%s raised no event on the subscription (its match values and the subscription's variables do not meet)", op)
	case sub.Received-sub.Duplicated == sub.Expected && sub.Lost == 0 && sub.Duplicated == 0:
		c.OK, c.Detail = true, fmt.Sprintf("%d event raised by %s, received once", sub.Expected, op)
	default:
		c.Detail = fmt.Sprintf("%d event(s) expected, %d received, %d lost, %d duplicated (drain %s)", sub.Expected, sub.Received, sub.Lost, sub.Duplicated, s.Phase.Subscriptions.Drain)
	}
	return c
}

// firstError is the first error class of a result and its first example.
func firstError(r workloads.Result) string {
	if r.Requests == 0 {
		return "no request completed"
	}
	for _, class := range slices.Sorted(maps.Keys(r.ErrorsByClass)) {
		if ex := r.ErrorExamples[class]; len(ex) > 0 {
			return class + ": " + strings.TrimSpace(ex[0])
		}
		return class
	}
	return fmt.Sprintf("%d of %d requests failed", r.Errors, r.Requests)
}
