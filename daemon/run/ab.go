package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/target"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/fsutil"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/pin"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
)

// ABOptions configure an A/B session (RunAB): one profile run on two
// builds of the target in one session.
type ABOptions struct {
	// Profile, Executable (the soakd binary started as the driver, the same
	// for both sides), Log, Stderr and Terminal as for a run; OutDir is the
	// session's directory (default runs/<session>), RunID the session's id
	// (default the UTC start time). Stdout receives the comparison.
	RunOptions
	// Old and New configure the two sides: the build compared against and
	// the candidate (the same file with different target or inject keys).
	Old, New *config.Config
	// Base is the configuration both sides are made from (--config): the
	// session is judged by its limits, and a side that changes anything
	// but the build (config.SideChanges) is refused. Nil: Old is the base.
	Base *config.Config
	// Duet (--duet, or the base's compare.duet) runs both builds at the
	// same time instead of one after the other (runDuet).
	Duet bool
	// DuetLayout (--duet-layout) overrides the base's
	// compare.duet_layout: config.DuetLayoutHalves or DuetLayoutShared.
	DuetLayout string
	// DuetProcesses (--duet-processes) overrides the base's
	// compare.duet_processes: config.DuetProcessesRound or
	// DuetProcessesSession.
	DuetProcesses string
}

// ABResult is what an A/B session produced: each side's report (nil when
// that side never started) and the comparison of new against old.
type ABResult struct {
	Old, New   *report.Report
	Comparison report.Comparison
	// Dir is the session's directory: old/, new/, compare.json, compare.md.
	Dir string
}

// Files of an A/B session's directory, beside old/ and new/.
const (
	ABCompareJSON     = "compare.json"
	ABCompareMarkdown = "compare.md"
)

// abSide is one side of a session as it runs.
type abSide struct {
	name     string // report.ABOld or report.ABNew
	r        *run
	captures map[string]*capture
	ran      []planned
}

// RunAB measures two builds of the target in one session: both targets
// are started (each side's config opens its own: two command lines, two
// ports), then every phase of the profile runs on one build and at once on
// the other, which goes first alternating phase by phase (A B B A …, the
// first drawn at random), so a machine that drifts during the session, as
// a shared VM does by tens of percent within an hour, drifts under both
// builds alike. Each side writes a complete run directory (old/, new/,
// report.json's ab saying which side it is); soakd compare then pairs their
// rounds (report.CompareRuns with Paired), and the session writes that
// comparison as compare.json and compare.md and prints it. Adaptive rounds
// do not apply: each side runs the profile's rounds. The error carries the
// comparison's exit code: nil (pass), exitcode.Fail, exitcode.Inconclusive; exitcode.Usage
// or exitcode.Aborted when the session could not be compared.
func RunAB(ctx context.Context, opts ABOptions) (*ABResult, error) {
	if opts.Target != nil {
		return nil, exitcode.Usagef("an A/B session starts its own two targets: it cannot run on a daemon's target")
	}
	if opts.Old == nil || opts.New == nil {
		return nil, errors.New("an A/B session needs both sides' configs")
	}
	base := cmp.Or(opts.Base, opts.Old)
	for _, side := range []struct {
		name string
		cfg  *config.Config
	}{{report.ABOld, opts.Old}, {report.ABNew, opts.New}} {
		changed, err := config.SideChanges(base, side.cfg)
		if err != nil {
			return nil, err
		}
		if len(changed) > 0 {
			return nil, exitcode.Usagef("the %s side's file sets %s, which the base configuration (--config) decides for both sides: "+
				"limits, KPIs, the profile, its phases, operations, data and the sampler must be the same, or the comparison would judge the candidate by its own rules or another workload; "+
				"a side file may set only target:, inject:, server:, graphql:, pinning: and profiling:", side.name, strings.Join(changed, ", "))
		}
	}
	if err := abConflicts(opts.Old, opts.New); err != nil {
		return nil, err
	}
	duet := opts.Duet || base.Compare.Duet
	var lay duetCPUs
	if duet {
		if err := duetRefusal(base, opts.Old, opts.New); err != nil {
			return nil, err
		}
		allowed, err := pin.Current()
		if err != nil {
			return nil, exitcode.Usagef("--duet (compare.duet) cannot read the CPUs this process may run on: %v", err)
		}
		if lay.halves, err = duetHalves(allowed); err != nil {
			return nil, err
		}
		switch l := cmp.Or(opts.DuetLayout, base.Compare.DuetLayout, config.DuetLayoutShared); l {
		case config.DuetLayoutHalves:
		case config.DuetLayoutShared:
			lay.shared = slices.Sorted(slices.Values(allowed))
		default:
			return nil, exitcode.Usagef("--duet-layout must be %s or %s (got %q)", config.DuetLayoutHalves, config.DuetLayoutShared, l)
		}
		// Checked before a side exists, so a bad value starts nothing.
		switch p := cmp.Or(opts.DuetProcesses, base.Compare.DuetProcesses, config.DuetProcessesRound); p {
		case config.DuetProcessesRound, config.DuetProcessesSession:
		default:
			return nil, exitcode.Usagef("--duet-processes must be %s or %s (got %q)", config.DuetProcessesRound, config.DuetProcessesSession, p)
		}
		// Both sides' phases run at once: the view draws a bar for
		// each, named old <phase> and new <phase>.
	}
	start := time.Now().UTC()
	session := cmp.Or(opts.RunID, start.Format("20060102T150405Z"))
	res := &ABResult{Dir: cmp.Or(opts.OutDir, filepath.Join("runs", session))}
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	sides := []*abSide{{name: report.ABOld}, {name: report.ABNew}}
	// The side whose target starts first is drawn at random: a process
	// started earlier differs (its warm-up, what it finds on the machine),
	// and a start order fixed by role would bias every session the same
	// way.
	starts := []*abSide{sides[0], sides[1]}
	if rand.IntN(2) == 0 {
		starts[0], starts[1] = starts[1], starts[0]
	}
	plansOf := map[string][]planned{}
	for _, s := range starts {
		cfg := opts.Old.Clone()
		if s.name == report.ABNew {
			cfg = opts.New.Clone()
		}
		// One look at the profile's rounds on each side; the comparison,
		// not either side's KPIs, is the session's verdict.
		name := cmp.Or(opts.Profile, cfg.DefaultProfile)
		if p, ok := cfg.Profiles[name]; ok && p.MaxRounds != 0 {
			p.MaxRounds = 0
			cfg.Profiles[name] = p
		}
		cfg.Metrics.Linger = 0
		ro := opts.RunOptions
		ro.RunID = session + "-" + s.name
		ro.OutDir = filepath.Join(res.Dir, s.name)
		ro.Stdout = nil
		ro.Log = log.With(zap.String("side", s.name))
		r, plans, err := startRun(ctx, cfg, ro)
		if r != nil {
			defer r.close(ctx)
		}
		s.r = r
		if err != nil {
			// The side that did start (the old one, when the new one
			// cannot) is marked aborted too, never left running.
			res.Old, res.New = sideReports(sides)
			return res, abAbort(sides, s, err)
		}
		s.captures = map[string]*capture{}
		r.rep.AB = &report.ABSide{Session: session, Side: s.name, Other: session + "-" + report.OtherSide(s.name), StartedFirst: s == starts[0]}
		plansOf[s.name] = plans
	}
	sessionPlans := plansOf[report.ABOld] // the old side's plan is the session's
	if err := samePlans(sessionPlans, plansOf[report.ABNew]); err != nil {
		res.Old, res.New = sideReports(sides)
		return res, abAbort(sides, sides[1], exitcode.With(exitcode.Usage, err))
	}
	oldFirst := rand.IntN(2) == 0
	var seconds report.DuetSeconds
	if duet {
		processes := cmp.Or(opts.DuetProcesses, base.Compare.DuetProcesses, config.DuetProcessesRound) // checked above
		var kept []string
		for _, s := range sides {
			if rn, ok := s.r.target.(target.Renewable); !ok || !rn.CanRenew() {
				kept = append(kept, s.name)
			}
		}
		if processes == config.DuetProcessesRound && len(kept) > 0 {
			processes = config.DuetProcessesSession
			for _, s := range sides {
				s.r.rep.Notes = append(s.r.rep.Notes, fmt.Sprintf("One process per side for the whole duet: the %s side's target is one soakd did not start (target.kind %s), so it cannot be started afresh between rounds (compare.duet_processes: round). "+
					"A difference between the two processes themselves (where their code and heaps landed, what the machine did as each warmed up) then favours one side for the whole session, where the interval cannot see it.",
					strings.Join(kept, " and "), s.r.target.Info().Kind))
			}
		}
		var places []report.DuetPlacement
		var failed *abSide
		var err error
		renewals := duetRenewals(sessionPlans, processes, starts[0].name)
		places, seconds, failed, err = runDuet(ctx, sides, sessionPlans, lay, oldFirst, renewals, log)
		if err != nil {
			res.Old, res.New = sideReports(sides)
			return res, abAbort(sides, failed, err)
		}
		for _, s := range sides {
			_, pinned := s.r.target.(target.Pinnable)
			s.r.rep.Pinning = nil // per phase, in ab.duet
			s.r.rep.Notes = append(s.r.rep.Notes, duetNote(session, s.name, s.r.rep.AB.Other, places, pinned, lay.shared != nil))
			s.r.rep.AB.DuetProcesses = processes
		}
	}
	var order strings.Builder
	steps, took := sessionSteps(sessionPlans), map[string]time.Duration{}
	for i, pl := range sessionPlans {
		if duet {
			break
		}
		// A B, B A, A B, …: over two phases each build goes first once.
		pair := []*abSide{sides[0], sides[1]}
		if (i%2 == 1) == oldFirst {
			pair[0], pair[1] = pair[1], pair[0]
		}
		for k, s := range pair {
			order.WriteString(strings.ToUpper(s.name[:1]))
			opts.View.SetPosition(position(steps, 2*i+k, 0, took, s.r.prof.Settle, start))
			began := time.Now()
			c, err := s.r.runPhase(ctx, pl.spec, pl.role)
			took[planKey(pl)] = time.Since(began)
			if c != nil {
				s.captures[pl.spec.Name] = c
			}
			if err != nil {
				res.Old, res.New = sideReports(sides)
				return res, abAbort(sides, s, err)
			}
			s.ran = append(s.ran, pl)
		}
		order.WriteString(" ")
	}
	for _, s := range sides {
		if !duet {
			s.r.rep.Notes = append(s.r.rep.Notes, fmt.Sprintf("A/B session %s: this is its %s side; the %s side is %s. Each phase ran on both builds back to back, in this order (O old, N new, phase by phase): %s. Both sides were driven by the same soakd binary.",
				session, s.name, report.OtherSide(s.name), s.r.rep.AB.Other, strings.TrimSpace(order.String())))
		}
		if _, err := s.r.finish(ctx, s.ran, s.captures); err != nil && exitcode.Of(err) != exitcode.Fail && exitcode.Of(err) != exitcode.Inconclusive {
			res.Old, res.New = sideReports(sides)
			return res, abAbort(sides, s, err)
		}
	}
	res.Old, res.New = sideReports(sides)
	// The base configuration's limits, never a side's (a candidate could
	// otherwise pass itself).
	lim := base.Compare.Limits()
	lim.Confidence = base.KPIs.Confidence
	if duet {
		if err := report.WriteDuetSeconds(res.Dir, session, seconds); err != nil {
			return res, exitcode.With(exitcode.Aborted, err)
		}
		res.Comparison = report.CompareDuet(res.Old, res.New, lim, seconds)
	} else {
		res.Comparison = report.CompareRuns(res.Old, res.New, lim)
	}
	res.Comparison.Attach(Attribution(base, filepath.Join(res.Dir, report.ABOld), filepath.Join(res.Dir, report.ABNew), res.Old, res.New))
	if err := writeComparisonFiles(res.Dir, res.Comparison); err != nil {
		return res, exitcode.With(exitcode.Aborted, err)
	}
	log.Info("A/B session done", zap.String("session", session), zap.String("dir", res.Dir), zap.String("verdict", string(res.Comparison.Verdict)))
	switch res.Comparison.Verdict {
	case kpi.OutcomePass:
		return res, nil
	case kpi.OutcomeFail:
		return res, exitcode.With(exitcode.Fail, errors.New("the comparison is fail: "+strings.Join(res.Comparison.Reasons(), "; ")))
	}
	return res, exitcode.With(exitcode.Inconclusive, errors.New("the comparison is inconclusive: "+strings.Join(res.Comparison.Reasons(), "; ")))
}

// Attribution attributes the change of the compared GraphQL phase's CPU
// per request between two runs by layer and function, from their CPU
// profiles (report.LoadAttribution) with cfg's layer rules; nil with the
// reason when it cannot.
func Attribution(cfg *config.Config, oldDir, newDir string, old, new *report.Report) (*report.ChangeAttribution, string) {
	if old == nil || new == nil {
		return nil, "a side has no report"
	}
	layers, err := profiles.NewLayers(cfg.Profiling.LayerRules())
	if err != nil {
		return nil, err.Error()
	}
	return report.LoadAttribution(oldDir, newDir, old, new, layers, max(cfg.Profiling.OverheadTop, 1))
}

// sideReports returns the sides' reports, nil for a side not started.
func sideReports(sides []*abSide) (old, new *report.Report) {
	for _, s := range sides {
		if s.r == nil {
			continue
		}
		if s.name == report.ABOld {
			old = s.r.rep
		} else {
			new = s.r.rep
		}
	}
	return old, new
}

// abAbort marks every side still running aborted, naming the side that
// failed, and returns the failing side's error with its exit code
// (exitcode.Aborted unless err carries another, exitcode.Usage for a side that could
// not start as configured).
func abAbort(sides []*abSide, failed *abSide, err error) error {
	code := exitcode.Of(err) // abort wraps err as aborted; a usage error stays one
	for _, s := range sides {
		if s.r == nil || s.r.rep.Status != report.StatusRunning {
			continue // not started, or aborted already by startRun
		}
		if s == failed {
			_, err = s.r.abort(err)
			continue
		}
		_, _ = s.r.abort(fmt.Errorf("the A/B session stopped: its %s side failed: %w", failed.name, err))
	}
	return exitcode.With(code, fmt.Errorf("A/B session, %s side: %w", failed.name, err))
}

// samePlans refuses sides whose profiles would run different phases: the
// session compares each phase with its namesake.
func samePlans(old, new []planned) error {
	names := func(ps []planned) []string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p.spec.Name
		}
		return out
	}
	if o, n := names(old), names(new); !slices.Equal(o, n) {
		return fmt.Errorf("the two sides run different phases (old: %s; new: %s): give both sides the same profile, rounds and phases, and put what differs between the builds under target: or inject:",
			strings.Join(o, ", "), strings.Join(n, ", "))
	}
	return nil
}

// abConflicts refuses two sides that would meet on one server: the same
// built-in target on one fixed address (the second could not listen), or
// two servers soakd does not host that share a host:port it loads, waits
// on or scrapes, or one attached process. A side file is decoded key by key on
// top of --config, so a URL it leaves out keeps --config's: both sides
// would then send that load to, or read those figures from, one server,
// and a second command's ready_url could answer for the first.
func abConflicts(old, new *config.Config) error {
	builtin := func(c *config.Config) bool { return c.Target.Kind == "" || c.Target.Kind == report.TargetBuiltin }
	if builtin(old) && builtin(new) && old.Server.Listen == new.Server.Listen && !strings.HasSuffix(old.Server.Listen, ":0") {
		return exitcode.Usagef("both sides of the A/B session would serve the built-in target on server.listen %s: give one side another address (or port 0, a free port each)", old.Server.Listen)
	}
	if !old.Target.External() || !new.Target.External() {
		return nil
	}
	o, n := old.Target, new.Target
	// host is a URL's host:port, "" when unset or unparsable (Validate
	// names a bad URL): two servers cannot share one, whatever the paths.
	host := func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			return ""
		}
		return u.Host
	}
	var shared []string
	for _, k := range []struct{ key, old, new string }{
		{"graphql_url", host(o.GraphQLURL), host(n.GraphQLURL)},
		{"graphql_ws_url", host(o.GraphQLWSURL), host(n.GraphQLWSURL)}, // unset: graphql_url's
		{"rest_url", host(o.RESTURL), host(n.RESTURL)},
		{"metrics_url", host(o.MetricsURL), host(n.MetricsURL)},
		{"pprof_url", host(o.PprofURL), host(n.PprofURL)},
		{"ready_url", host(o.ReadyURL), host(n.ReadyURL)},
		{"pid_file", o.PIDFile, n.PIDFile},
		{"pid", strconv.Itoa(o.PID), strconv.Itoa(n.PID)},
	} {
		if k.old != "" && k.old != "0" && k.old == k.new {
			shared = append(shared, "target."+k.key+" ("+k.old+")")
		}
	}
	if len(shared) > 0 {
		return exitcode.Usagef("both sides of the A/B session name one server in %s: give each side its own (a target: key a side file leaves out keeps --config's value, so a side file repeats every URL with its own port)",
			strings.Join(shared, ", "))
	}
	return nil
}

// writeComparisonFiles writes the session's comparison as compare.json
// and compare.md in dir, each atomically.
func writeComparisonFiles(dir string, c report.Comparison) error {
	js, err := c.JSON()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create the session directory: %w", err)
	}
	if err := fsutil.WriteFile(filepath.Join(dir, ABCompareJSON), js, 0o644); err != nil {
		return fmt.Errorf("cannot write %s: %w", ABCompareJSON, err)
	}
	if err := fsutil.WriteFile(filepath.Join(dir, ABCompareMarkdown), []byte(c.Markdown()), 0o644); err != nil {
		return fmt.Errorf("cannot write %s: %w", ABCompareMarkdown, err)
	}
	return nil
}

// sessionSteps are the steps of a sequential A/B session, for its
// position line: every phase of the plan once per side, one after the
// other.
func sessionSteps(plans []planned) []planned {
	steps := make([]planned, 0, 2*len(plans))
	for _, pl := range plans {
		steps = append(steps, pl, pl)
	}
	return steps
}
