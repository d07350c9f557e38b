package builtin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/internal/relational/scenario"
	"github.com/soakd/soakd/profiles"
)

// serveRelational opens the relational scenario's database (target.scenario
// relational) and registers its endpoints on mux and its series on reg. It
// returns the store to close at shutdown and the series, or nils for
// another scenario.
func serveRelational(ctx context.Context, cfg *config.Config, reg prometheus.Registerer, mux *http.ServeMux, log *zap.Logger) (*relational.Store, *relational.Metrics, error) {
	if cfg.Target.Scenario != config.ScenarioRelational {
		return nil, nil, nil
	}
	rc := cfg.Relational
	o := relational.Options{Store: rc.Store, PoolSize: rc.PoolSize, Seed: rc.Seed, Sizes: relational.SeedSizes().Scale(rc.Scale)}
	if name := cfg.RelationalDSNEnv(); name != "" {
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
func (t *Server) RelationalTotals(context.Context) (map[string]relational.Totals, error) {
	if t.relM == nil {
		return nil, errNoRelational
	}
	return t.relM.Totals(), nil
}
