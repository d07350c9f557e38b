package daemon

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/internal/relational/scenario"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
)

// RelationalDSNEnv names the variable holding the relational scenario's
// PostgreSQL DSN, or "" when the scenario reads none.
func RelationalDSNEnv(cfg *Config) string {
	if cfg.Target.Scenario != ScenarioRelational || cfg.Relational.Store != relational.StorePostgres {
		return ""
	}
	return cfg.Relational.DSNEnv
}

// serveRelational opens the relational scenario's database (target.scenario
// relational) and registers its endpoints on mux and its series on reg. It
// returns the store to close at shutdown and the series, or nils for
// another scenario.
func serveRelational(ctx context.Context, cfg *Config, reg prometheus.Registerer, mux *http.ServeMux, log *zap.Logger) (*relational.Store, *relational.Metrics, error) {
	if cfg.Target.Scenario != ScenarioRelational {
		return nil, nil, nil
	}
	rc := cfg.Relational
	o := relational.Options{Store: rc.Store, PoolSize: rc.PoolSize, Seed: rc.Seed, Sizes: relational.SeedSizes().Scale(rc.Scale)}
	if name := RelationalDSNEnv(cfg); name != "" {
		o.DSN, o.DSNSource = os.Getenv(name), "$"+name+" (relational.dsn_env)"
	}
	log = log.Named("relational")
	store, err := relational.Open(ctx, o)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot start the relational scenario: %w", err)
	}
	m := relational.NewMetrics(reg, store)
	h, err := scenario.NewHandler(store, scenario.Options{
		Timeout: rc.RequestTimeout, BatchWait: rc.BatchWait, Metrics: m, Logger: log,
	})
	if err != nil {
		_ = store.Close()
		return nil, nil, err
	}
	// Labelled "relational" in CPU profiles, apart from the Donut arms.
	lh := profiles.Labeled("relational", h)
	for _, p := range scenario.Patterns() {
		mux.Handle(p, lh)
	}
	s := store.Sizes()
	log.Info("relational scenario ready", zap.String("store", store.Kind()), zap.Int("pool", store.PoolSize()),
		zap.Int("users", s.Users), zap.Int("tasks", s.Tasks*(1+s.SubTasksPerTask)), zap.Strings("paths", scenario.Patterns()))
	return store, m, nil
}

// errNoRelational is relationalTotals' answer for a target without the
// relational scenario.
var errNoRelational = errors.New("the target does not serve the relational scenario (target.scenario is not relational)")

// RelationalTotals returns the relational scenario's tally by endpoint.
func (t *Target) RelationalTotals(context.Context) (map[string]relational.Totals, error) {
	if t.relM == nil {
		return nil, errNoRelational
	}
	return t.relM.Totals(), nil
}

// RelationalTotals asks the target process for its relational tally.
func (t *processTarget) RelationalTotals(ctx context.Context) (map[string]relational.Totals, error) {
	var tot map[string]relational.Totals
	if err := t.call(ctx, http.MethodGet, "relational", nil, &tot); err != nil {
		return nil, err
	}
	return tot, nil
}

// databaseFigures is a phase's database work from two readings of the
// target's relational tally, before and after the phase's driver ran, per
// request the driver completed (requests): a chatty operation's calls
// count as one request, and calls_per_request says how many HTTP requests
// each was. errBefore or errAfter make every figure not measured.
func databaseFigures(before, after map[string]relational.Totals, errBefore, errAfter error, requests int64) *report.Database {
	d := &report.Database{Endpoints: []string{}}
	if err := errors.Join(errBefore, errAfter); err != nil {
		d.NotMeasured = "cannot read the target's relational tally: " + err.Error()
		return d
	}
	for _, ep := range slices.Sorted(maps.Keys(after)) {
		a, b := after[ep], before[ep]
		if a.Requests == b.Requests {
			continue
		}
		d.Endpoints = append(d.Endpoints, ep)
		d.HTTPRequests += a.Requests - b.Requests
		d.Queries += a.Queries - b.Queries
		d.Rows += a.Rows - b.Rows
		d.Seconds += (a.Time - b.Time).Seconds()
	}
	switch {
	case requests <= 0:
		d.NotMeasured = "the phase completed no request"
	case d.HTTPRequests == 0:
		d.NotMeasured = "the phase sent no request to the relational scenario's endpoints"
	default:
		n := float64(requests)
		d.CallsPerRequest = float64(d.HTTPRequests) / n
		d.QueriesPerRequest = float64(d.Queries) / n
		d.RowsPerRequest = float64(d.Rows) / n
		d.MsPerRequest = d.Seconds * 1000 / n
	}
	return d
}
