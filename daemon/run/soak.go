package run

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/target"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/fsutil"
	"github.com/soakd/soakd/internal/history"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/termtext"
	"github.com/soakd/soakd/profiles"
)

// SoakFile is the soak's own record in the data directory: every cycle's
// figures and the drift verdict, rewritten after each cycle.
const SoakFile = "soak.json"

// SoakSchemaVersion is the version of soak.json's layout
// (schemas/soak.schema.json); it changes only when a field changes meaning
// or disappears.
const SoakSchemaVersion = 1

// SoakStatusStopped is the status of a soak stopped before its bound
// (SIGTERM, Ctrl-C, soakd stop) after at least one cycle completed: judged
// over its completed cycles.
const SoakStatusStopped = "stopped"

// SoakReport is soak.json.
type SoakReport struct {
	// SchemaVersion is SoakSchemaVersion.
	SchemaVersion int       `json:"schema_version"`
	Soak          string    `json:"soak"`
	Profile       string    `json:"profile"`
	StartedAt     time.Time `json:"started_at"`
	UpdatedAt     time.Time `json:"updated_at"`
	// Status is running, complete, stopped (before its bound, judged over
	// the cycles it completed) or aborted (stopped before any cycle
	// completed, or failing to run).
	Status string `json:"status"`
	// Verdict combines the drift rules, the KPIs over every cycle's rounds
	// (KPIs), and each cycle's checks (memory, delivery, errors, return to
	// rest): pass when all pass, fail when one fails, inconclusive otherwise.
	Verdict kpi.Outcome     `json:"verdict"`
	Cycles  []Cycle         `json:"cycles"`
	Drift   []kpi.DriftRule `json:"drift"`
	// KPIs are the GraphQL-vs-REST rows judged with every round of every
	// finished cycle as one sample (interleaved rounds, repeated over
	// hours): a soak of one-round cycles still gets intervals. Empty until
	// a cycle finished.
	KPIs  []kpi.Result `json:"kpis,omitempty"`
	Notes []string     `json:"notes,omitempty"`
}

// Cycle is one soak cycle: its run and the figures drift rules watch.
type Cycle struct {
	kpi.CycleFigures
	// Verdict is the cycle's own run verdict (its KPIs over its own rounds,
	// and its checks).
	Verdict kpi.Outcome `json:"verdict"`
	// Checks is the outcome of the cycle's checks alone (pass, fail,
	// inconclusive; "" for a cycle without a report): what the soak's
	// verdict takes from the cycle, its KPIs being judged over all cycles.
	Checks kpi.Outcome `json:"checks,omitempty"`
	Error  string      `json:"error,omitempty"`
	// Interrupted is true for the cycle the soak's stop cut short: it is
	// not judged.
	Interrupted bool `json:"interrupted,omitempty"`
	// rounds are the cycle's per-round KPI rows (point values).
	rounds [][]kpi.Result
}

// cycleNullable are the JSON fields of a Cycle's figures that MarshalJSON
// writes as null when NotMeasured names them.
var cycleNullable = []string{"heap_live_bytes", "rss_bytes", "goroutines", "gc_percent", "cpu_us_per_request"}

// CycleNullableFields lists them, for the schema generator.
func CycleNullableFields() []string { return slices.Clone(cycleNullable) }

// cycleFields is Cycle without its methods.
type cycleFields Cycle

// MarshalJSON writes a figure the cycle did not measure (named in
// NotMeasured) as null: soak.json read gc_percent 0 beside a reason.
func (c Cycle) MarshalJSON() ([]byte, error) {
	var nulls []string
	for _, f := range cycleNullable {
		if _, ok := c.NotMeasured[f]; ok {
			nulls = append(nulls, f)
		}
	}
	return profiles.MarshalWithNulls(cycleFields(c), nulls)
}

// SoakOptions configure a soak.
type SoakOptions struct {
	RunOptions
	// Cycles and Duration bound the soak (0: unbounded on that axis; one
	// of them must be set).
	Cycles   int
	Duration time.Duration
}

// soaker runs cycles on one long-lived target and judges drift.
type soaker struct {
	cfg    *config.Config
	store  *history.Store
	target target.Target
	log    *zap.Logger
	rep    SoakReport
	// claim, when set, takes the daemon's one run slot for a cycle (so the
	// control API sees it running and can stop it).
	claim Claim
	// opts are the soak's bounds, for the drift projection.
	opts SoakOptions
	// stopped is set when the soak was stopped before its bound.
	stopped bool
}

// Claim takes the daemon's one run slot for the run id (so the control
// API sees it running and can stop it): the context the run goes on under,
// and the release of the slot.
type Claim func(ctx context.Context, id string) (context.Context, func(), error)

// SoakOn is Soak on a target and a history the caller opened and keeps
// (the daemon's scheduled soak): each cycle takes the run slot through
// claim.
func SoakOn(ctx context.Context, cfg *config.Config, store *history.Store, t target.Target, claim Claim, log *zap.Logger, opts SoakOptions) (*SoakReport, error) {
	s := &soaker{cfg: cfg, store: store, target: t, log: log, claim: claim}
	return s.run(ctx, opts)
}

// Soak runs the soak profile in cycles on one target until the cycle count
// or the duration is reached (or ctx ends), keeping every cycle's run in the
// data directory and judging drift across cycles. A cycle whose driver
// failed is recorded and the soak goes on; an interrupted soak returns
// exitcode.Aborted. The error carries the soak's exit code.
func Soak(ctx context.Context, cfg *config.Config, opts SoakOptions) (*SoakReport, error) {
	if opts.Cycles <= 0 && opts.Duration <= 0 {
		return nil, exitcode.Usagef("a soak needs a number of cycles or a duration (soak.cycles, soak.duration, --cycles, --duration)")
	}
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	store, err := OpenHistory(cfg, history.Options{})
	if err != nil {
		return nil, err
	}
	defer CloseHistory(store, log)
	if err := store.ReadOnly(); err != nil {
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("cannot soak in data_dir %s: %w: %w", cfg.DataDir, history.ErrReadOnly, err))
	}
	if err := soakNeedsRESTTwin(cfg, opts); err != nil {
		return nil, err
	}
	target, err := target.Open(ctx, cfg, opts.Executable, cfg.DataDir, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := target.Shutdown(context.WithoutCancel(ctx)); err != nil {
			log.Warn("target shutdown", zap.Error(err))
		}
	}()
	s := &soaker{cfg: cfg, store: store, target: target, log: log}
	return s.run(ctx, opts)
}

// soakProfile names the profile a soak runs: --profile, else soak.profile,
// else default_profile.
func soakProfile(cfg *config.Config, opts SoakOptions) string {
	return cmp.Or(opts.Profile, cfg.Soak.Profile, cfg.DefaultProfile)
}

// soakNeedsRESTTwin refuses, before the target starts, a soak whose profile
// drives REST phases against a target without a REST twin (needsRESTTwin);
// every cycle would be refused alike.
func soakNeedsRESTTwin(cfg *config.Config, opts SoakOptions) error {
	name := soakProfile(cfg, opts)
	p, ok := cfg.Profiles[name]
	if !ok {
		return nil // each cycle says so
	}
	arms := opts.Arms
	if arms == (Arms{}) {
		arms = DefaultArms()
	}
	plans, err := plan(cfg.Phases(p, ""), p.Compare, p.Rounds, arms)
	if err != nil {
		return nil // each cycle says so
	}
	return needsRESTTwin(cfg.Target, name, plans)
}

func (s *soaker) run(ctx context.Context, opts SoakOptions) (*SoakReport, error) {
	s.opts = opts
	profile := soakProfile(s.cfg, opts)
	start := time.Now().UTC()
	s.rep = SoakReport{SchemaVersion: SoakSchemaVersion, Soak: start.Format("20060102T150405Z"), Profile: profile, StartedAt: start, Status: report.StatusRunning, Cycles: []Cycle{}}
	for n := 1; opts.Cycles == 0 || n <= opts.Cycles; n++ {
		if opts.Duration > 0 && time.Since(start) >= opts.Duration {
			break
		}
		if n > 1 && s.cfg.Soak.Pause > 0 {
			if err := pause(ctx, s.cfg.Soak.Pause); err != nil {
				return s.stoppedEarly("the soak was stopped between cycles")
			}
		}
		c, interrupted := s.cycle(ctx, opts.RunOptions, profile, n)
		if interrupted {
			// The cycle cut short by the stop is no sample: it is not
			// judged, and the soak is judged over the cycles it completed.
			c.Interrupted = true
		}
		s.rep.Cycles = append(s.rep.Cycles, c)
		s.judge()
		if err := s.write(); err != nil {
			return s.finish(err)
		}
		if v := opts.View; v != nil {
			fmt.Fprintln(v, cycleLine(c, s.rep.Drift))
		} else {
			s.log.Info("soak cycle done", zap.String("line", cycleLine(c, s.rep.Drift)))
		}
		if removed, err := s.store.Prune(s.cfg.Retention.KeepLast, s.cfg.Retention.MaxAge, time.Now()); err != nil {
			s.log.Warn("retention", zap.Error(err))
		} else if len(removed) > 0 {
			s.log.Info("retention removed runs", zap.Strings("runs", removed))
		}
		if interrupted {
			return s.stoppedEarly(fmt.Sprintf("the soak was stopped during cycle %d, which is not judged", n))
		}
	}
	return s.finish(nil)
}

// cycleLine is a finished cycle's permanent line: its verdict, the
// figures the drift rules read (each "not measured" when it was not), and
// the drift rules' outcome over the cycles so far, those not passing named.
func cycleLine(c Cycle, drift []kpi.DriftRule) string {
	fig := func(field, format string, v float64) string {
		if _, ok := c.NotMeasured[field]; ok {
			return "not measured"
		}
		return fmt.Sprintf(format, v)
	}
	verdict := string(c.Verdict)
	switch {
	case c.Interrupted:
		verdict = "interrupted (not judged)"
	case c.Verdict != kpi.OutcomePass:
		verdict = strings.ToUpper(verdict)
	}
	heap := "not measured"
	if _, ok := c.NotMeasured["heap_live_bytes"]; !ok {
		heap = termtext.Bytes(c.HeapLiveBytes)
	}
	line := fmt.Sprintf("◆ cycle %d  %s  live heap %s  gc %s  cpu %s", c.Cycle, verdict,
		heap, fig("gc_percent", "%.2f %%", c.GCPercent), fig("cpu_us_per_request", "%.1f µs/req", c.CPUMicrosPerRequest))
	if c.Error != "" {
		line += "  (" + c.Error + ")"
	}
	var open []string
	for _, d := range drift {
		if d.Outcome != kpi.OutcomePass {
			open = append(open, d.Name+" "+strings.ToUpper(string(d.Outcome)))
		}
	}
	switch {
	case len(drift) == 0:
		line += "  drift: not judged yet"
	case len(open) == 0:
		line += "  drift: pass"
	default:
		line += "  drift: " + strings.Join(open, ", ")
	}
	return line
}

// stoppedEarly ends a soak stopped before its bound (SIGTERM, Ctrl-C,
// soakd stop): judged over the cycles it completed, as k6 still evaluates
// its thresholds on Ctrl-C, with status stopped and a note saying so. A
// soak stopped before any cycle completed is aborted.
func (s *soaker) stoppedEarly(why string) (*SoakReport, error) {
	completed := 0
	for _, c := range s.rep.Cycles {
		if !c.Interrupted {
			completed++
		}
	}
	if completed == 0 {
		return s.finish(errors.New(why + ", before any cycle completed"))
	}
	s.judge()
	s.rep.Notes = append(s.rep.Notes, fmt.Sprintf("Stopped early: %s; the verdict is judged over the %d cycles that completed.", why, completed))
	s.stopped = true
	return s.finish(nil)
}

// cycle runs one cycle of profile as its own run in the history.
func (s *soaker) cycle(ctx context.Context, ro RunOptions, profile string, n int) (Cycle, bool) {
	id := fmt.Sprintf("%s-c%04d", s.rep.Soak, n)
	c := Cycle{CycleFigures: kpi.CycleFigures{Cycle: n, Run: id}}
	outer := ctx // the soak's; a stop through the API ends only this cycle
	if s.claim != nil {
		runCtx, release, err := s.claim(ctx, id)
		for err != nil && ctx.Err() == nil {
			// A run started through the API holds the slot: wait for it.
			if perr := pause(ctx, time.Second); perr != nil {
				break
			}
			runCtx, release, err = s.claim(ctx, id)
		}
		if err != nil {
			c.Verdict, c.Error = kpi.OutcomeAborted, err.Error()
			return c, true
		}
		defer release()
		ctx = runCtx
	}
	dir, err := s.store.NewRun(id, profile)
	if err != nil {
		c.Verdict, c.Error = kpi.OutcomeAborted, err.Error()
		return c, false
	}
	ro.Profile, ro.OutDir, ro.RunID, ro.Target, ro.Log = profile, dir, id, s.target, s.log.With(zap.Int("cycle", n))
	s.log.Info("soak cycle started", zap.Int("cycle", n), zap.String("run", id))
	rep, err := RunSuite(ctx, s.cfg, ro)
	if _, ferr := s.store.Finish(id, err); ferr != nil {
		s.log.Warn("history", zap.Error(ferr))
	}
	if rep != nil {
		c.Verdict = rep.Verdict
		c.CycleFigures = cycleFigures(rep, n)
		c.Checks = checksOutcome(rep)
		for _, rd := range rep.Rounds {
			c.rounds = append(c.rounds, rd.KPIs)
		}
	}
	if code := exitcode.Of(err); err != nil && code != exitcode.Fail && code != exitcode.Inconclusive {
		c.Error = err.Error()
		// A failed driver fails the cycle, not the soak; an interrupted
		// soak ends.
		return c, outer.Err() != nil
	}
	return c, false
}

// cycleFigures takes the drift figures from a cycle's report: the state
// after its last phase settled, its largest RSS, and the GraphQL arm's GC %
// and CPU per request with the REST control's of the same cycle (the KPI
// rows' means over the cycle's rounds). A figure the cycle did not measure
// is named in NotMeasured with the reason, never taken as 0.
func cycleFigures(rep *report.Report, n int) kpi.CycleFigures {
	f := kpi.CycleFigures{Cycle: n, Run: rep.Run}
	notMeasured := func(field, why string) {
		if f.NotMeasured == nil {
			f.NotMeasured = map[string]string{}
		}
		f.NotMeasured[field] = why
	}
	for _, p := range rep.Phases {
		if p.After != nil {
			f.HeapLiveBytes, f.Goroutines = float64(p.After.HeapLiveBytes), float64(p.After.Goroutines)
		}
		if p.Resources != nil {
			f.RSSBytes = max(f.RSSBytes, float64(p.Resources.RSSBytesMax))
		}
	}
	for _, k := range rep.KPIs {
		var gql *float64
		var rest **float64
		switch k.Name {
		case "gc_percent":
			gql, rest = &f.GCPercent, &f.RESTGCPercent
		case "cpu_us_per_request":
			gql, rest = &f.CPUMicrosPerRequest, &f.RESTCPUMicrosPerRequest
		default:
			continue
		}
		why := cmp.Or(k.Reason, "not measured in any of the cycle's rounds")
		if k.GraphQLNotMeasured {
			notMeasured(k.Name, why)
		} else {
			*gql = k.GraphQL
		}
		switch {
		case k.NoControl:
			notMeasured("rest_"+k.Name, kpi.NoControlGroup)
		case k.RESTNotMeasured:
			notMeasured("rest_"+k.Name, why)
		default:
			v := k.REST
			*rest = &v
		}
	}
	return f
}

func (s *soaker) judge() {
	d := s.cfg.Soak.Drift
	var figs []kpi.CycleFigures
	for _, c := range s.rep.Cycles {
		if c.Error == "" && !c.Interrupted {
			figs = append(figs, c.CycleFigures)
		}
	}
	perCycle := 0.0
	if n := len(s.rep.Cycles); n > 0 {
		perCycle = time.Since(s.rep.StartedAt).Seconds() / float64(n)
	}
	horizon := s.opts.Duration.Seconds()
	if horizon == 0 && s.opts.Cycles > 0 {
		horizon = perCycle * float64(s.opts.Cycles)
	}
	s.rep.Drift = kpi.Drift(figs, kpi.DriftLimits{
		WarmupCycles: d.WarmupCycles, BaselineCycles: d.BaselineCycles, SustainedCycles: d.SustainedCycles,
		SecondsPerCycle: perCycle, HorizonSeconds: horizon,
		HeapLiveRatio: d.HeapLiveRatio, RSSRatio: d.RSSRatio,
		CPUPerRequestRatio: d.CPUPerRequestRatio, GoroutinesIncrease: d.GoroutinesIncrease, GCPercentIncreasePoints: d.GCPercentIncreasePoints,
		RelativeToControl: d.RelativeToControl,
	})
	// The KPIs over every finished cycle's rounds.
	var rounds [][]kpi.Result
	for _, c := range s.rep.Cycles {
		if c.Error == "" && !c.Interrupted {
			rounds = append(rounds, c.rounds...)
		}
	}
	s.rep.KPIs = nil
	kpiOutcome := kpi.OutcomeNotMeasured
	if len(rounds) > 0 {
		if agg, err := kpi.Aggregate(rounds, s.cfg.KPIs.Confidence); err == nil {
			s.rep.KPIs, kpiOutcome = agg, kpi.Outcome(kpi.Verdict(agg))
		} else {
			s.log.Warn("the soak's KPIs over cycles", zap.Error(err))
		}
	}
	// Drift failing, the KPIs over the cycles failing, or a cycle's checks
	// failing (or the cycle aborting) fails the soak; anything not yet
	// conclusive (too few cycles for drift or for the KPIs' intervals)
	// makes it inconclusive at best.
	os := []kpi.Outcome{kpi.OutcomePass, kpi.DriftOutcome(s.rep.Drift), kpiOutcome}
	for _, c := range s.rep.Cycles {
		switch {
		case c.Interrupted:
			// cut short by the stop: not judged
		case c.Error != "" || c.Checks == "":
			os = append(os, kpi.OutcomeFail)
		default:
			os = append(os, c.Checks)
		}
	}
	s.rep.Verdict = (kpi.Combine(os...))
}

// checksOutcome combines the outcomes of rep's checks (not its KPI rows):
// a check without an outcome counts by its pass flag; an aborted run fails.
func checksOutcome(rep *report.Report) kpi.Outcome {
	if rep.Status == report.StatusAborted {
		return kpi.OutcomeFail
	}
	os := []kpi.Outcome{kpi.OutcomePass}
	for _, c := range rep.Checks {
		switch {
		case c.Outcome != "":
			os = append(os, c.Outcome)
		case c.Pass:
			os = append(os, kpi.OutcomePass)
		default:
			os = append(os, kpi.OutcomeFail)
		}
	}
	return kpi.Combine(os...)
}

func (s *soaker) write() error {
	s.rep.UpdatedAt = time.Now().UTC()
	b, err := json.MarshalIndent(s.rep, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode %s: %w", SoakFile, err)
	}
	return fsutil.WriteFile(filepath.Join(s.cfg.DataDir, SoakFile), append(b, '\n'), 0o644)
}

// finish writes the final soak.json and maps the outcome to an exit code.
func (s *soaker) finish(err error) (*SoakReport, error) {
	s.rep.Status = report.StatusComplete
	if s.stopped {
		s.rep.Status = SoakStatusStopped
	}
	if err != nil {
		s.rep.Status, s.rep.Verdict = report.StatusAborted, kpi.OutcomeAborted
		s.rep.Notes = append(s.rep.Notes, err.Error())
	}
	if len(s.rep.Cycles) == 0 && err == nil {
		s.rep.Verdict = kpi.OutcomeAborted
		err = errors.New("no cycle ran")
	}
	if werr := s.write(); werr != nil {
		err = errors.Join(err, werr)
	}
	switch {
	case err != nil:
		return &s.rep, exitcode.With(exitcode.Aborted, err)
	case s.rep.Verdict == kpi.OutcomeInconclusive:
		return &s.rep, exitcode.With(exitcode.Inconclusive, errors.New("the soak's verdict is inconclusive"))
	case s.rep.Verdict != kpi.OutcomePass:
		return &s.rep, exitcode.With(exitcode.Fail, errors.New("the soak's verdict is fail"))
	}
	return &s.rep, nil
}

// Table prints the soak's cycles and drift rules.
func (r *SoakReport) Table(w io.Writer) {
	fmt.Fprintf(w, "soak %s: %d cycles of %s\n", r.Soak, len(r.Cycles), r.Profile)
	for _, c := range r.Cycles {
		fmt.Fprintf(w, "  cycle %d %s: %s (checks %s)  live heap %.1f MiB  rss %.1f MiB  goroutines %.0f  gc %.2f %% (REST %s)  cpu %.1f µs/req (REST %s) %s\n",
			c.Cycle, c.Run, c.Verdict, c.Checks, c.HeapLiveBytes/(1<<20), c.RSSBytes/(1<<20), c.Goroutines, c.GCPercent, restFigure(c.RESTGCPercent, "%.2f %%"), c.CPUMicrosPerRequest, restFigure(c.RESTCPUMicrosPerRequest, "%.1f"), c.Error)
	}
	for _, k := range r.KPIs {
		if !k.Gated {
			continue
		}
		res := string(k.Outcome)
		if k.Outcome != kpi.OutcomePass {
			res = strings.ToUpper(res)
		}
		line := fmt.Sprintf("  kpi %-22s %s over %d rounds", k.Name, res, k.Rounds)
		if k.Interval != nil && k.Interval.Finite() {
			line += fmt.Sprintf(": %+.2f %s [%+.2f, %+.2f]", k.Interval.Center, k.DeltaUnit, k.Interval.Lo, k.Interval.Hi)
		}
		if k.Reason != "" {
			line += " (" + k.Reason + ")"
		}
		fmt.Fprintln(w, line)
	}
	for _, d := range r.Drift {
		res := string(d.Outcome)
		if d.Outcome != kpi.OutcomePass {
			res = strings.ToUpper(res)
		}
		fmt.Fprintf(w, "  drift %-22s %s  %s: %s\n", d.Name, res, d.Title, d.Detail)
	}
	fmt.Fprintf(w, "soak verdict: %s%s\n", r.Verdict, r.failing())
}

// failing names what failed the soak, for its verdict line: the drift
// rules, KPIs and cycles that failed ("" when none did).
func (r *SoakReport) failing() string {
	var fs []string
	for _, d := range r.Drift {
		if d.Outcome == kpi.OutcomeFail {
			fs = append(fs, "drift "+d.Name)
		}
	}
	for _, k := range r.KPIs {
		if k.Gated && k.Outcome == kpi.OutcomeFail {
			fs = append(fs, "kpi "+k.Name)
		}
	}
	for _, c := range r.Cycles {
		if !c.Interrupted && (c.Error != "" || c.Checks == "" || c.Checks == kpi.OutcomeFail) {
			fs = append(fs, fmt.Sprintf("cycle %d", c.Cycle))
		}
	}
	if len(fs) == 0 {
		return ""
	}
	return " (failed: " + strings.Join(fs, ", ") + ")"
}

// restFigure prints a cycle's REST control figure, "not measured" when nil.
func restFigure(v *float64, format string) string {
	if v == nil {
		return "not measured"
	}
	return fmt.Sprintf(format, *v)
}

// pause waits d or until ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// OpenHistory opens cfg.DataDir's history, taking the data directory's
// lock before anything else reads or writes it. Every failure, a directory
// in use by another daemon included, carries exitcode.Usage: nothing ran. A
// directory that takes no writes gives a read-only store, not an error.
func OpenHistory(cfg *config.Config, opts history.Options) (*history.Store, error) {
	store, err := history.Open(cfg.DataDir, opts)
	if _, locked := errors.AsType[*history.LockedError](err); locked {
		return nil, exitcode.With(exitcode.Usage, err)
	}
	if err != nil {
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("cannot open data_dir %s: %w", cfg.DataDir, err))
	}
	return store, nil
}

// CloseHistory releases the data directory's lock on the way out.
func CloseHistory(store *history.Store, log *zap.Logger) {
	if err := store.Close(); err != nil {
		log.Warn("history", zap.Error(err))
	}
}
