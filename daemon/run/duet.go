package run

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/target"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/pin"
	"github.com/soakd/soakd/internal/report"
)

// duetLead is how far ahead of now a duet phase's common start instant
// (the spec's start_at) is set: time for both sides' baseline, profile
// capture and driver start (a new process that reads its spec and opens
// its subscriptions) on a busy machine. A driver not ready by then fails
// the phase rather than start late.
const duetLead = 3 * time.Second

// duetHalves splits the CPUs this process may run on into two halves of
// equal size, the lower CPUs first (an odd CPU out is left unused, so
// that neither side has more). It refuses fewer than two CPUs (exit 2).
func duetHalves(allowed []int) ([2][]int, error) {
	if len(allowed) < 2 {
		return [2][]int{}, exitcode.Usagef("--duet (compare.duet) needs at least 2 CPUs, one half for each build, but this process may run on %d (%s): run the A/B session sequentially (without --duet)",
			len(allowed), pin.Format(allowed))
	}
	cs := slices.Clone(allowed)
	slices.Sort(cs)
	h := len(cs) / 2
	return [2][]int{cs[:h], cs[h : 2*h]}, nil
}

// duetRefusal refuses a duet the configuration cannot give its symmetric
// layout (exit 2): a pinning: key set on either side (the duet places both
// targets and drivers itself), or a built-in target in soakd's own process
// (target.in_process: both targets would be one process, which cannot be
// on two halves).
func duetRefusal(sides ...*config.Config) error {
	for i, c := range sides {
		name := []string{"the configuration (--config)", "the old side (--old)", "the new side (--new)"}[min(i, 2)]
		if c.Pinning.Target != "" || c.Pinning.Driver != "" {
			return exitcode.Usagef("--duet (compare.duet) places both builds' targets and drivers on halves of the CPUs itself, but %s sets pinning.target or pinning.driver: remove pinning: for a duet, or run the session without --duet", name)
		}
		if c.Target.InProcess {
			return exitcode.Usagef("--duet (compare.duet) runs each build's target in a process of its own, but %s sets target.in_process: remove it for a duet", name)
		}
	}
	return nil
}

// duetCPUs is a duet's layout: the two halves of the CPUs, and with
// compare.duet_layout: shared every CPU this process may run on, which
// both sides then share.
type duetCPUs struct {
	halves [2][]int
	shared []int
}

// duetLayout is the CPUs of each side for the phase at index i of the
// session's plan. Halves: swapped from round to round (a phase outside the
// rounds, such as a warm-up, alternates by its place), so that a faster
// core or an interrupt-heavy CPU favours neither build; oldFirst (drawn at
// random per session) gives the old side the lower half in round 1.
// Shared: both sides on every CPU, always.
func duetLayout(lay duetCPUs, pl planned, i int, oldFirst bool) (old, new []int) {
	if lay.shared != nil {
		return lay.shared, lay.shared
	}
	halves := lay.halves
	k := i
	if pl.round > 0 {
		k = pl.round - 1
	}
	if (k%2 == 0) == oldFirst {
		return halves[0], halves[1]
	}
	return halves[1], halves[0]
}

// duetRenewals is, for each round of a duet session's plan that starts
// both targets afresh, the order to start them in: none with
// compare.duet_processes: session; with round, every round after the
// first, the side started first alternating from round to round, round 1
// being first's (the session's own start order).
func duetRenewals(plans []planned, processes string, first string) map[int][2]string {
	out := map[int][2]string{}
	if processes == config.DuetProcessesSession {
		return out
	}
	for _, pl := range plans {
		if pl.round < 2 {
			continue
		}
		a, b := first, report.OtherSide(first)
		if pl.round%2 == 0 {
			a, b = b, a
		}
		out[pl.round] = [2]string{a, b}
	}
	return out
}

// renewSides starts both sides' targets afresh, in order (side names).
func renewSides(ctx context.Context, sides []*abSide, order [2]string) (*abSide, error) {
	for _, name := range order {
		for _, s := range sides {
			if s.name != name {
				continue
			}
			if err := s.r.renewTarget(ctx); err != nil {
				return s, fmt.Errorf("cannot start the %s side's target afresh for the next round: %w", s.name, err)
			}
		}
	}
	return nil, nil
}

// runDuet runs every phase of plans on both sides at once: before the
// first phase of a round that renewals names, it starts both targets
// afresh in the order given; for each phase, it pins each side's target to
// its half (duetLayout) and its driver with it, gives both drivers the
// same spec with one start instant (start_at, duetLead ahead), and waits
// for both phases to end. It returns the placements and the simultaneous
// seconds of the compared GraphQL arm, by phase base name and round.
func runDuet(ctx context.Context, sides []*abSide, plans []planned, lay duetCPUs, oldFirst bool, renewals map[int][2]string, log *zap.Logger) ([]report.DuetPlacement, report.DuetSeconds, *abSide, error) {
	var places []report.DuetPlacement
	seconds := report.DuetSeconds{}
	took, started := map[string]time.Duration{}, time.Now()
	renewed := map[int]bool{}
	for i, pl := range plans {
		var startedFirst string
		if order, ok := renewals[pl.round]; ok && !renewed[pl.round] {
			renewed[pl.round] = true
			if failed, err := renewSides(ctx, sides, order); err != nil {
				return places, seconds, failed, err
			}
			startedFirst = order[0]
		}
		// The session's position: both sides run phase i at once.
		sides[0].r.opts.View.SetPosition(position(plans, i, 0, took, sides[0].r.prof.Settle, started))
		began := time.Now()
		oldCPUs, newCPUs := duetLayout(lay, pl, i, oldFirst)
		place := report.DuetPlacement{Phase: pl.spec.Name, OldCPUs: oldCPUs, NewCPUs: newCPUs, StartedFirst: startedFirst}
		for _, s := range sides {
			if s.name == report.ABOld {
				place.OldPID = s.r.rep.TargetPID
			} else {
				place.NewPID = s.r.rep.TargetPID
			}
		}
		places = append(places, place)
		// Which side is pinned and started first alternates from round to
		// round too (oldFirst in round 1): the first goroutine's head start
		// of a few microseconds must not be one build's every time.
		launch := sides
		if k := max(pl.round, i+1); (k%2 == 1) != oldFirst {
			launch = []*abSide{sides[1], sides[0]}
		}
		for _, s := range launch {
			cpus := oldCPUs
			if s.name == report.ABNew {
				cpus = newCPUs
			}
			s.r.rep.AB.Duet = places
			s.r.cfg.Pinning.Driver = pin.Format(cpus)
			if p, ok := s.r.target.(target.Pinnable); ok {
				if err := p.PinCPUs(cpus); err != nil {
					return places, seconds, s, fmt.Errorf("cannot pin the %s side's target to CPUs %s: %w", s.name, pin.Format(cpus), err)
				}
			}
		}
		spec := pl.spec
		spec.StartAt = time.Now().Add(duetLead)
		errs := make([]error, len(launch))
		var wg sync.WaitGroup
		for j, s := range launch {
			wg.Go(func() {
				c, err := s.r.runPhase(ctx, spec, pl.role)
				if c != nil {
					s.captures[pl.spec.Name] = c
				}
				errs[j] = err
			})
		}
		wg.Wait()
		took[planKey(pl)] = time.Since(began)
		for j, s := range launch {
			if errs[j] != nil {
				return places, seconds, s, errs[j]
			}
			s.ran = append(s.ran, pl)
		}
		log.Info("duet phase done", zap.String("phase", pl.spec.Name), zap.String("old_cpus", pin.Format(oldCPUs)), zap.String("new_cpus", pin.Format(newCPUs)))
		if pl.role == roleGQLArm {
			seconds[pl.base] = append(seconds[pl.base], duetPhaseSeconds(sides, pl.spec.Name))
		}
	}
	return places, seconds, nil, nil
}

// duetPhaseSeconds reads both sides' cumulative CPU time and completed
// requests over the phase's common steady window and returns its
// simultaneous seconds (duetSeconds); none when either side lacks them.
func duetPhaseSeconds(sides []*abSide, phase string) []kpi.DuetSecond {
	var series [2]duetSeries
	var from, to time.Time
	for j, s := range sides {
		p, ok := s.r.rep.PhaseNamed(phase)
		if !ok || p.DriverSeries == nil || p.SteadyStart.IsZero() {
			return nil
		}
		if j == 0 || p.SteadyStart.After(from) {
			from = p.SteadyStart
		}
		if j == 0 || p.SteadyEnd.Before(to) {
			to = p.SteadyEnd
		}
		// The counts are cumulative from the phase's start, where none
		// had completed; the first progress report comes a second in.
		series[j].requests = []cumPoint{{p.Start, 0}}
		for k, ts := range p.DriverSeries.TSeconds {
			series[j].requests = append(series[j].requests, cumPoint{p.Start.Add(time.Duration(ts * float64(time.Second))), float64(p.DriverSeries.Requests[k])})
		}
		// The readings around the window too, to interpolate its edges.
		margin := 2 * s.r.cfg.Sampler.Interval
		for _, rd := range s.r.target.CPUReadings(p.Start.Add(-margin), p.End.Add(margin)) {
			if rd.OK {
				series[j].cpu = append(series[j].cpu, cumPoint{rd.Time, rd.CPUSeconds})
			}
		}
	}
	old, new := series[0], series[1]
	if sides[0].name != report.ABOld {
		old, new = new, old
	}
	return duetSeconds(old, new, from, to)
}

// cumPoint is one reading of a cumulative counter.
type cumPoint struct {
	t time.Time
	v float64
}

// duetSeries is one side's cumulative CPU seconds and completed requests.
type duetSeries struct{ cpu, requests []cumPoint }

// duetSeconds cuts [from, to) into whole seconds and gives, for each, both
// sides' CPU seconds and requests over it: each counter read at the
// second's ends by linear interpolation between its neighbouring readings
// (the sampler and the driver report about once a second, at their own
// instants). A second either counter does not cover on both sides ends
// the series.
func duetSeconds(old, new duetSeries, from, to time.Time) []kpi.DuetSecond {
	var out []kpi.DuetSecond
	for t := from; !t.Add(time.Second).After(to); t = t.Add(time.Second) {
		e := t.Add(time.Second)
		var d [4]float64
		for k, s := range [][]cumPoint{old.cpu, new.cpu, old.requests, new.requests} {
			a, okA := interpolate(s, t)
			b, okB := interpolate(s, e)
			if !okA || !okB {
				return out
			}
			d[k] = b - a
		}
		out = append(out, kpi.DuetSecond{OldCPUSeconds: d[0], NewCPUSeconds: d[1], OldRequests: d[2], NewRequests: d[3]})
	}
	return out
}

// interpolate reads a cumulative counter at t, linearly between the
// readings either side of it; ok is false outside the readings.
func interpolate(ps []cumPoint, t time.Time) (float64, bool) {
	i, _ := slices.BinarySearchFunc(ps, t, func(p cumPoint, t time.Time) int { return p.t.Compare(t) })
	switch {
	case i < len(ps) && ps[i].t.Equal(t):
		return ps[i].v, true
	case i == 0 || i == len(ps):
		return math.NaN(), false
	}
	a, b := ps[i-1], ps[i]
	f := float64(t.Sub(a.t)) / float64(b.t.Sub(a.t))
	return a.v + f*(b.v-a.v), true
}

// duetNote says, in each side's report, how the duet ran.
func duetNote(session, side, other string, places []report.DuetPlacement, pinnedTargets, shared bool) string {
	var b strings.Builder
	layout := "each target with its own driver on its half of the CPUs, the halves swapped between rounds"
	if shared {
		layout = "both targets and both drivers on every CPU (compare.duet_layout: shared), placed by the kernel's scheduler"
	}
	fmt.Fprintf(&b, "Duet A/B session %s: this is its %s side; the %s side is %s. Both builds ran every phase at the same time, started together (one start_at for both drivers), %s: ",
		session, side, report.OtherSide(side), other, layout)
	for i, p := range places {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s old on CPU %s, new on CPU %s", p.Phase, pin.Format(p.OldCPUs), pin.Format(p.NewCPUs))
	}
	b.WriteString(".")
	var fresh []string
	for _, p := range places {
		if p.StartedFirst != "" {
			fresh = append(fresh, fmt.Sprintf("%s (%s first; old pid %d, new pid %d)", p.Phase, p.StartedFirst, p.OldPID, p.NewPID))
		}
	}
	if len(fresh) > 0 {
		fmt.Fprintf(&b, " Both targets were started afresh before %s (compare.duet_processes: round), the side started first alternating from round to round, so that what differs between two processes of one build is drawn afresh each round and the interval counts it.",
			strings.Join(fresh, ", "))
	}
	if !pinnedTargets && !shared {
		b.WriteString(" The targets are servers soakd does not host: only their drivers were pinned; pin the servers yourself (taskset) for a symmetric layout.")
	}
	return b.String()
}
