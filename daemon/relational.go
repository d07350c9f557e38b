package daemon

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/relational"
	"github.com/soakd/soakd/relational/scenario"
)

// relationalDSNEnv names the variable holding the relational scenario's
// PostgreSQL DSN, or "" when the scenario reads none.
func relationalDSNEnv(cfg *Config) string {
	if cfg.Target.Scenario != ScenarioRelational || cfg.Relational.Store != relational.StorePostgres {
		return ""
	}
	return cfg.Relational.DSNEnv
}

// serveRelational opens the relational scenario's database (target.scenario
// relational) and registers its endpoints on mux and its series on reg. It
// returns the store to close at shutdown, or nil for another scenario.
func serveRelational(ctx context.Context, cfg *Config, reg prometheus.Registerer, mux *http.ServeMux, log *zap.Logger) (*relational.Store, error) {
	if cfg.Target.Scenario != ScenarioRelational {
		return nil, nil
	}
	rc := cfg.Relational
	o := relational.Options{Store: rc.Store, PoolSize: rc.PoolSize, Seed: rc.Seed, Sizes: relational.SeedSizes().Scale(rc.Scale)}
	if name := relationalDSNEnv(cfg); name != "" {
		o.DSN, o.DSNSource = os.Getenv(name), "$"+name+" (relational.dsn_env)"
	}
	log = log.Named("relational")
	store, err := relational.Open(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("cannot start the relational scenario: %w", err)
	}
	h, err := scenario.NewHandler(store, scenario.Options{
		Timeout: rc.RequestTimeout, BatchWait: rc.BatchWait,
		Metrics: relational.NewMetrics(reg, store), Logger: log,
	})
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	// Labelled "relational" in CPU profiles, apart from the Donut arms.
	lh := profiles.Labeled("relational", h)
	for _, p := range scenario.Patterns() {
		mux.Handle(p, lh)
	}
	s := store.Sizes()
	log.Info("relational scenario ready", zap.String("store", store.Kind()), zap.Int("pool", store.PoolSize()),
		zap.Int("users", s.Users), zap.Int("tasks", s.Tasks*(1+s.SubTasksPerTask)), zap.Strings("paths", scenario.Patterns()))
	return store, nil
}
