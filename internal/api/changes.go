package api

import (
	"time"

	"github.com/soakd/soakd/internal/changepoint"
	"github.com/soakd/soakd/internal/kpi"
)

// DefaultChangesMetric is the figure GET /v1/history/changes follows when
// the request names none: GraphQL's CPU per request.
const DefaultChangesMetric = "cpu_us_per_request"

// HistoryChanges is GET /v1/history/changes's body: one profile's series
// of one gated figure over the daemon's complete runs, oldest first, and
// its change points (package changepoint).
type HistoryChanges struct {
	// Profile is the profile whose runs make the series.
	Profile string `json:"profile"`
	// Metric is the figure: a KPI row's name, then .graphql (the default),
	// .rest or .delta (GraphQL's variance from REST).
	Metric string `json:"metric"`
	// Unit is the figure's unit (the KPI's unit, or its delta unit).
	Unit string `json:"unit"`
	// MinRuns and Level are the detector's options: the fewest runs on
	// each side of a change, and the largest corrected p-value.
	MinRuns int     `json:"min_runs"`
	Level   float64 `json:"level"`
	// Runs are the profile's complete runs, oldest first.
	Runs []SeriesPoint `json:"runs"`
	// Changes are the change points, oldest first.
	Changes []ChangePoint `json:"changes"`
}

// SeriesPoint is one run of the series.
type SeriesPoint struct {
	ID        string      `json:"id"`
	StartedAt time.Time   `json:"started_at"`
	Verdict   kpi.Outcome `json:"verdict"`
	// Value is the run's figure; null when it was not measured, and such
	// a run is left out of the series the detector sees.
	Value *float64 `json:"value"`
}

// ChangePoint is one change point, placed on a run.
type ChangePoint struct {
	// Run is the id of the first run at the new level.
	Run string `json:"run"`
	// Change's Index is that run's position in Runs (counting runs whose
	// figure was not measured, which the detector does not see).
	changepoint.Change
}
