package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/run"
	"github.com/soakd/soakd/daemon/target"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/daemonmetrics"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/history"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/progress"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/webui"
)

// ServeOptions configure `soakd serve`.
type ServeOptions struct {
	// Executable is the soakd binary started as the driver.
	Executable string
	Log        *zap.Logger
	// Stderr receives the drivers' logs.
	Stderr io.Writer
	// History configures the run history; tests inject a failing writer.
	History history.Options
}

// daemon is `soakd serve`: one long-lived target, the run history, the
// control API and at most one run at a time. It implements api.Runner.
type daemon struct {
	cfg    *config.Config
	opts   ServeOptions
	log    *zap.Logger
	store  *history.Store
	target target.Target
	base   context.Context // the daemon's lifetime; runs derive from it
	ready  atomic.Bool
	runs   sync.WaitGroup // runs started through the API
	// metrics are the daemon's own series (the API's /metrics); nil in
	// tests that build a daemon by hand.
	metrics *daemonmetrics.Metrics
	// changes caches the change points /metrics exports (changes.go).
	changes changeCache
	// view is the progress of the run holding the slot (API runs and soak
	// cycles alike), which GET /v1/runs/{id}/events streams; its plain
	// lines go to the log. Nil in tests that build a daemon by hand.
	view *progress.View
	// schedules starts the runs of the configured schedules (schedule.go);
	// nil in tests that build a daemon by hand, which then have none.
	schedules *scheduler

	mu      sync.Mutex
	running string             // id of the run in progress, "" when idle
	cancel  context.CancelFunc // stops the run in progress
	seq     int                // disambiguates run ids within one second

	// suite executes one run; nil means RunSuite. Tests set it to see the
	// configuration each run gets without starting a target or a driver.
	suite func(context.Context, *config.Config, run.RunOptions) (*report.Report, error)
}

var _ api.Runner = (*daemon)(nil)

// Serve runs the daemon until ctx is cancelled (SIGTERM): the target
// (GraphQL, REST control group, /metrics, /debug/pprof/), the control API on
// its own listener, runs on demand through the API, the runs of its
// schedules (schedule.go) and, when soak.cycles or soak.duration is set, a
// scheduled soak. On the way out a run in progress
// is stopped gracefully (its partial report written) and everything it
// started is awaited.
func Serve(ctx context.Context, cfg *config.Config, opts ServeOptions) error {
	log := opts.Log
	if log == nil {
		log = zap.NewNop()
	}
	token := cfg.API.Token
	if env := os.Getenv(config.TokenEnv); env != "" {
		token = env
	}
	if err := api.CheckBind(cfg.API.Listen, token); err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	store, err := run.OpenHistory(cfg, opts.History)
	if err != nil {
		return err
	}
	defer run.CloseHistory(store, log)
	for _, r := range store.List() {
		if r.Status == report.StatusAborted {
			log.Info("history", zap.String("run", r.ID), zap.String("status", r.Status))
		}
	}
	ro := store.ReadOnly()
	if ro != nil {
		log.Warn("history is read-only: no run can start until data_dir takes writes and the daemon is restarted",
			zap.String("data_dir", cfg.DataDir), zap.Error(ro))
	}
	schedules, err := newScheduler(cfg, opts.History.WriteFile, ro, log.Named("schedule"))
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.API.Listen)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("cannot listen on api.listen %q: %w", cfg.API.Listen, err))
	}
	target, err := target.Open(ctx, cfg, opts.Executable, cfg.DataDir, log)
	if err != nil {
		_ = ln.Close()
		return err
	}
	base, stopRuns := context.WithCancel(ctx)
	defer stopRuns()
	d := &daemon{cfg: cfg, opts: opts, log: log, store: store, target: target, base: base, view: progress.New(logLines{log}, progress.Options{})}
	d.metrics = daemonmetrics.New(d.healthState)
	d.schedules, schedules.start = schedules, d.Start
	srv := &http.Server{
		Handler:           d.metrics.Instrument(api.NewHandlerWith(d, api.Options{Token: token, Log: log.Named("api"), Metrics: d.metrics.Handler(), UI: webui.Handler()})),
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout,
		ReadTimeout:       cfg.Server.ReadTimeout,
		WriteTimeout:      cfg.Server.WriteTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout,
		MaxHeaderBytes:    cfg.Server.MaxHeaderBytes,
		ErrorLog:          zap.NewStdLog(log.Named("api")),
	}
	var wg sync.WaitGroup
	apiErr := make(chan error, 1)
	wg.Go(func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			apiErr <- err
		}
	})
	d.ready.Store(true)
	log.Info("control api listening", zap.String("url", "http://"+ln.Addr().String()), zap.Bool("token", token != ""))

	switch {
	case (cfg.Soak.Cycles > 0 || cfg.Soak.Duration > 0) && ro != nil:
		log.Warn("scheduled soak not started", zap.Error(ro))
	case cfg.Soak.Cycles > 0 || cfg.Soak.Duration > 0:
		wg.Go(func() {
			rep, err := run.SoakOn(base, cfg, store, target, d.claim, log, run.SoakOptions{RunOptions: d.runOptions(), Cycles: cfg.Soak.Cycles, Duration: cfg.Soak.Duration})
			if rep != nil {
				log.Info("scheduled soak finished", zap.String("verdict", string(rep.Verdict)), zap.Int("cycles", len(rep.Cycles)), zap.Error(err))
			}
		})
	}

	var scheduling sync.WaitGroup // the scheduler, awaited before the runs it starts
	scheduling.Go(func() { schedules.run(base) })

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("stopping", zap.String("cause", context.Cause(ctx).Error()))
	case <-target.Done():
		serveErr = fmt.Errorf("the target stopped serving: %w", target.Err())
	case err := <-apiErr:
		serveErr = fmt.Errorf("the control api stopped serving: %w", err)
	}
	d.ready.Store(false)
	stopRuns() // a run in progress stops gracefully and writes its partial report
	// No scheduled run starts once the scheduler has returned.
	scheduling.Wait()
	d.runs.Wait()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Server.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		serveErr = errors.Join(serveErr, err)
	}
	wg.Wait()
	if err := target.Shutdown(context.WithoutCancel(ctx)); err != nil {
		serveErr = errors.Join(serveErr, err)
	}
	return serveErr
}

// runOptions are the options every run of the daemon shares.
func (d *daemon) runOptions() run.RunOptions {
	return run.RunOptions{Executable: d.opts.Executable, Log: d.log, Stderr: d.opts.Stderr, Target: d.target, View: d.view}
}

// claim takes the one run slot for id, returning the run's context and the
// release function, or a *api.BusyError.
func (d *daemon) claim(ctx context.Context, id string) (context.Context, func(), error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.running != "" {
		return nil, nil, &api.BusyError{RunningID: d.running}
	}
	runCtx, cancel := context.WithCancel(ctx)
	d.running, d.cancel = id, cancel
	claimed := time.Now()
	return runCtx, func() {
		cancel()
		d.countFinished(id, claimed)
		d.mu.Lock()
		d.running, d.cancel = "", nil
		d.mu.Unlock()
		d.schedules.slotFreed() // a pending scheduled slot starts now
	}, nil
}

// countFinished counts run id, which held the slot from claimed until now,
// in the daemon's series with the outcome the history recorded: every run
// (API runs, soak cycles) records it with history.Store.Finish before it
// releases the slot. A run that never got into the history (NewRun failed)
// is not counted.
func (d *daemon) countFinished(id string, claimed time.Time) {
	if d.metrics == nil {
		return
	}
	s, _, err := d.store.Get(id)
	if errors.Is(err, history.ErrNotFound) {
		return
	}
	end := s.FinishedAt
	if end.IsZero() {
		end = time.Now()
	}
	start := s.StartedAt
	if start.IsZero() || start.After(end) {
		start = claimed
	}
	d.metrics.RunFinished(s.Verdict, end.Sub(start).Seconds())
}

// healthState is the daemon's state for its own series, at each scrape.
func (d *daemon) healthState() daemonmetrics.State {
	d.mu.Lock()
	running := d.running
	d.mu.Unlock()
	st := daemonmetrics.State{
		Running:            running != "",
		HistoryRuns:        d.store.Len(),
		RetentionDeletions: d.store.Removed(),
		ReadOnly:           d.store.ReadOnly() != nil,
		Changes:            d.changeSeries(),
	}
	// From the index (newest first): Get would read each report.json at
	// each scrape.
	for i, s := range d.store.List() {
		if s.ID == running {
			st.Profile = s.Profile
		}
		if i < daemonmetrics.RecentRuns {
			st.Recent = append(st.Recent, daemonmetrics.Run{ID: s.ID, Profile: s.Profile, Verdict: s.Verdict, StartedAt: s.StartedAt, Baseline: s.Baseline})
		}
	}
	return st
}

// newID returns a fresh run id: the UTC time, with a suffix when several
// runs start within a second.
func (d *daemon) newID() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seq++
	return fmt.Sprintf("%s-%d", time.Now().UTC().Format("20060102T150405Z"), d.seq)
}

// Start begins a run in the background. With a read-only history it
// returns an error wrapping api.ErrUnavailable that says why.
func (d *daemon) Start(_ context.Context, req api.StartRequest) (api.RunSummary, error) {
	if err := d.store.ReadOnly(); err != nil {
		return api.RunSummary{}, fmt.Errorf("%w: %w: %w", api.ErrUnavailable, history.ErrReadOnly, err)
	}
	cfg, err := d.runConfig(req.Overrides)
	if err != nil {
		return api.RunSummary{}, fmt.Errorf("%w: %w", api.ErrInvalidRequest, err)
	}
	profile := req.Profile
	if profile == "" {
		profile = cfg.DefaultProfile
	}
	if _, ok := cfg.Profiles[profile]; !ok {
		return api.RunSummary{}, fmt.Errorf("%w: profile %q does not exist; profiles: %v", api.ErrInvalidRequest, profile, cfg.ProfileNames())
	}
	planted, err := d.plantFor(cfg)
	if err != nil {
		return api.RunSummary{}, fmt.Errorf("%w: %w", api.ErrInvalidRequest, err)
	}
	id := d.newID()
	runCtx, release, err := d.claim(d.base, id)
	if err != nil {
		return api.RunSummary{}, err
	}
	dir, err := d.store.NewRun(id, profile)
	if err != nil {
		release()
		if errors.Is(err, history.ErrReadOnly) {
			err = fmt.Errorf("%w: %w", api.ErrUnavailable, err)
		}
		return api.RunSummary{}, err
	}
	// The reply is the new run's entry, whatever the run does next.
	s, _, err := d.store.Get(id)
	if err != nil && !errors.Is(err, history.ErrNoReport) {
		release()
		return api.RunSummary{}, err
	}
	ro := d.runOptions()
	ro.Profile, ro.OutDir, ro.RunID = profile, dir, id
	suite := d.suite
	if suite == nil {
		suite = run.RunSuite
	}
	d.runs.Go(func() {
		defer release()
		err := planted.set(runCtx)
		if err == nil {
			_, err = suite(runCtx, cfg, ro)
		}
		planted.restore()
		// A run whose last writes failed (a full disk) ends aborted all the
		// same, before the slot is released.
		sum, ferr := d.store.Finish(id, err)
		if ferr != nil {
			d.log.Warn("history", zap.Error(ferr))
		}
		d.log.Info("run finished", zap.String("run", id), zap.String("status", sum.Status), zap.String("verdict", string(sum.Verdict)), zap.Error(err))
		if _, err := d.store.Prune(d.cfg.Retention.KeepLast, d.cfg.Retention.MaxAge, time.Now()); err != nil {
			d.log.Warn("retention", zap.Error(err))
		}
	})
	return api.RunSummary(s), nil
}

// runConfig returns the configuration of one run: a deep copy of the
// daemon's own with overrides (YAML, "" for none) decoded on top and
// validated. The daemon's configuration is never changed, so every run
// starts from the same one whatever earlier runs were given. Overrides of
// keys a run cannot honour on the running target (overrideRules) are
// refused, all of them named at once, and nothing runs.
func (d *daemon) runConfig(overrides string) (*config.Config, error) {
	if overrides == "" {
		return d.cfg.Clone(), nil
	}
	if err := config.RefuseOverrides([]byte(overrides), "overrides"); err != nil {
		return nil, err
	}
	return d.cfg.Overlay([]byte(overrides), "overrides")
}

// Stop asks the run in progress to stop.
func (d *daemon) Stop(_ context.Context, id string) error {
	d.mu.Lock()
	running, cancel := d.running, d.cancel
	d.mu.Unlock()
	if id == running && cancel != nil {
		cancel()
		return nil
	}
	if _, _, err := d.store.Get(id); errors.Is(err, history.ErrNotFound) {
		return fmt.Errorf("%w: %s", api.ErrNotFound, id)
	}
	return fmt.Errorf("%w: %s", api.ErrNotRunning, id)
}

// List returns every run in the history, newest first.
func (d *daemon) List(context.Context) ([]api.RunSummary, error) {
	runs := d.store.List()
	out := make([]api.RunSummary, 0, len(runs))
	for _, r := range runs {
		out = append(out, d.inProgress(api.RunSummary(r)))
	}
	return out, nil
}

// inProgress returns s, reading running while s is the run holding the
// slot: its report may already say complete while the run still finishes
// (history, retention), and a client that started the next run on seeing
// complete would be refused as busy.
func (d *daemon) inProgress(s api.RunSummary) api.RunSummary {
	d.mu.Lock()
	running := d.running
	d.mu.Unlock()
	if s.ID == running {
		s.Status, s.Verdict = report.StatusRunning, kpi.OutcomeRunning
	}
	return s
}

// Get returns one run and its report.json; a run whose report cannot be
// read has status unreadable, the reason and no report.
func (d *daemon) Get(_ context.Context, id string) (api.RunSummary, json.RawMessage, error) {
	if err := d.store.Update(id); err != nil && errors.Is(err, history.ErrNotFound) {
		return api.RunSummary{}, nil, fmt.Errorf("%w: %s", api.ErrNotFound, id)
	}
	s, rep, raw, err := d.store.GetJSON(id)
	if errors.Is(err, history.ErrNotFound) {
		return api.RunSummary{}, nil, fmt.Errorf("%w: %s", api.ErrNotFound, id)
	}
	if rep == nil {
		return d.inProgress(api.RunSummary(s)), nil, nil // none yet, or unreadable: s says why
	}
	// The bytes (fields this version does not know kept) are the file the
	// report was decoded from.
	return d.inProgress(api.RunSummary(s)), raw, nil
}

// SetBaseline marks run id as the baseline.
func (d *daemon) SetBaseline(_ context.Context, id string) error {
	err := d.store.SetBaseline(id)
	switch {
	case errors.Is(err, history.ErrNotFound):
		return fmt.Errorf("%w: %s", api.ErrNotFound, id)
	case errors.Is(err, history.ErrReadOnly):
		return fmt.Errorf("%w: %w", api.ErrUnavailable, err)
	}
	return err
}

// History says whether the run history takes writes, and why not, and
// whether a soak has left its soak.json in the data directory.
func (d *daemon) History(context.Context) api.HistoryState {
	h := api.HistoryState{DataDir: d.cfg.DataDir}
	if fi, err := os.Lstat(filepath.Join(d.cfg.DataDir, run.SoakFile)); err == nil && fi.Mode().IsRegular() {
		h.Soak = true // what GET /v1/soak serves: a regular file, no link
	}
	if err := d.store.ReadOnly(); err != nil {
		h.ReadOnly, h.Reason = true, err.Error()
	}
	return h
}

// Ready is true while the target serves and the daemon accepts runs.
func (d *daemon) Ready() bool { return d.ready.Load() }
