package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/run"
	"github.com/soakd/soakd/daemon/target"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/fsutil"
	"github.com/soakd/soakd/internal/history"
	"github.com/soakd/soakd/internal/progress"
)

// Live returns the progress of run id while it holds the run slot, from
// the daemon's progress view (every run and soak cycle draws on it); ok is
// false for a known run that is not running.
func (d *daemon) Live(_ context.Context, id string) (api.LiveState, bool, error) {
	d.mu.Lock()
	running := d.running
	d.mu.Unlock()
	if id != running || id == "" {
		if _, _, err := d.store.Get(id); errors.Is(err, history.ErrNotFound) {
			return api.LiveState{}, false, fmt.Errorf("%w: %w", api.ErrNotFound, err)
		}
		return api.LiveState{}, false, nil
	}
	st, done := d.view.Snapshot()
	return liveState(id, st, done), true, nil
}

// liveState converts the progress view's state to the API's: a pure
// function, durations in seconds.
func liveState(id string, st progress.State, done []progress.Done) api.LiveState {
	pos := st.Position
	out := api.LiveState{Run: id, Phase: pos.Phase, Phases: pos.Phases, Round: pos.Round, Rounds: pos.Rounds,
		StartedAt: pos.Started, Running: []api.LivePhase{}, Finished: []api.LiveDone{}}
	if !pos.Started.IsZero() {
		out.ElapsedSeconds = st.Now.Sub(pos.Started).Seconds()
		if left, ok := st.Left(); ok {
			s := left.Seconds()
			out.LeftSeconds = &s
		}
	}
	for _, p := range st.Running {
		out.Running = append(out.Running, api.LivePhase{Name: p.Name, Fraction: p.Fraction, ElapsedSeconds: p.Elapsed.Seconds(),
			Requests: p.Requests, Errors: p.Errors, RPS: p.RPS, P99Ms: p.P99Ms})
	}
	for _, p := range done {
		out.Finished = append(out.Finished, api.LiveDone{Name: p.Name, Requests: p.Requests, Errors: p.Errors, RPS: p.RPS,
			P99Ms: p.P99Ms, ElapsedSeconds: p.Elapsed.Seconds(), Interrupted: p.Interrupted})
	}
	return out
}

// RunFiles lists run id's files the API serves (api.ValidRunFileName).
func (d *daemon) RunFiles(_ context.Context, id string) ([]api.RunFile, error) {
	fs, err := d.store.Files(id, api.ValidRunFileName)
	if err != nil {
		return nil, storeError(err)
	}
	out := make([]api.RunFile, len(fs))
	for i, f := range fs {
		out[i] = api.RunFile{Name: f.Name, Bytes: f.Bytes, Modified: f.Modified}
	}
	return out, nil
}

// OpenRunFile opens run id's file name: a regular file of the run's own
// directory, never through a link (history.Store.OpenFile).
func (d *daemon) OpenRunFile(_ context.Context, id, name string) (*os.File, error) {
	f, err := d.store.OpenFile(id, name, api.ValidRunFileName)
	if err != nil {
		return nil, storeError(err)
	}
	return f, nil
}

// storeError marks a history error with the API's sentinel for it.
func storeError(err error) error {
	switch {
	case errors.Is(err, history.ErrNotFound):
		return fmt.Errorf("%w: %w", api.ErrNotFound, err)
	case errors.Is(err, history.ErrNoFile):
		return fmt.Errorf("%w: %w", api.ErrNoFile, err)
	}
	return err
}

// logLines is the progress view's output in a daemon: each line it prints
// (a finished phase, a heartbeat, a soak cycle) becomes an info line of
// the daemon's log, as a run's progress was logged before the view.
type logLines struct{ log *zap.Logger }

// Write logs each non-empty line of p.
func (l logLines) Write(p []byte) (int, error) {
	for line := range strings.SplitSeq(strings.TrimRight(string(p), "\n"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			l.log.Info("progress", zap.String("line", line))
		}
	}
	return len(p), nil
}

// Soak returns data_dir's soak.json as written: the scheduled soak in
// progress (rewritten after every cycle) or the last one. Only a regular
// file is served: a symbolic link planted in its place (to any JSON file
// of the machine) is refused as if there were no soak, as the run files
// are (history.Store.OpenFile).
func (d *daemon) Soak(context.Context) (json.RawMessage, error) {
	b, err := readSoakFile(d.cfg.DataDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no soak has run in this data directory (soak.cycles or soak.duration starts one with the daemon)", api.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// readSoakFile reads dataDir's soak.json when it is a regular file, never
// through a symbolic link (fsutil.ReadNoFollow); an error wrapping
// fs.ErrNotExist for a link or anything but a regular file.
func readSoakFile(dataDir string) ([]byte, error) {
	b, err := fsutil.ReadNoFollow(filepath.Join(dataDir, run.SoakFile))
	if errors.Is(err, fsutil.ErrLink) || errors.Is(err, fsutil.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %w", fs.ErrNotExist, err) // a link, a FIFO, a directory: no soak
	}
	return b, err
}

// plant is a run's planted regression on the daemon's target: the
// run's inject settings before it, the daemon's own after it. The zero
// plant (the run plants nothing the daemon does not) does nothing.
type plant struct {
	target      target.Injectable
	run, daemon config.InjectConfig
	log         *zap.Logger
}

// plantFor returns the plant of a run configured as cfg: none when its
// inject settings are the daemon's; an error naming the key when they
// differ and the target cannot change them while it runs (a server soakd
// did not build: attach, command, kubernetes).
func (d *daemon) plantFor(cfg *config.Config) (plant, error) {
	if cfg.Inject == d.cfg.Inject {
		return plant{}, nil
	}
	inj, ok := d.target.(target.Injectable)
	if !ok || d.target == nil {
		return plant{}, fmt.Errorf("inject: override refused: only the built-in target can plant a regression for one run; the daemon's target is %s (target.kind)", d.cfg.Target.Kind)
	}
	return plant{target: inj, run: cfg.Inject, daemon: d.cfg.Inject, log: d.log}, nil
}

// set plants the run's regression.
func (p plant) set(ctx context.Context) error {
	if p.target == nil {
		return nil
	}
	if err := p.target.SetInject(ctx, p.run); err != nil {
		return fmt.Errorf("cannot plant the run's inject settings in the target: %w", err)
	}
	return nil
}

// restore puts the daemon's own settings back, whatever the run did.
func (p plant) restore() {
	if p.target == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.target.SetInject(ctx, p.daemon); err != nil {
		p.log.Error("cannot restore the daemon's inject settings in the target: later runs measure a planted regression", zap.Error(err))
	}
}
