package serve

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/changepoint"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
)

// Arms a changes metric may name after its KPI: metric "cpu_us_per_request"
// is "cpu_us_per_request.graphql".
const (
	armGraphQL = "graphql"
	armREST    = "rest"
	armDelta   = "delta"
)

// metricNames lists the KPI rows a changes metric may name, in the order
// reports hold them.
func metricNames() []string {
	var names []string
	for _, r := range kpi.Evaluate(kpi.Figures{}, kpi.Figures{}, kpi.Limits{}) {
		names = append(names, r.Name)
	}
	return names
}

// parseMetric splits metric into its KPI and arm, or says what the valid
// ones are.
func parseMetric(metric string) (name, arm string, err error) {
	if metric == "" {
		metric = api.DefaultChangesMetric
	}
	name, arm, _ = strings.Cut(metric, ".")
	if arm == "" {
		arm = armGraphQL
	}
	names := metricNames()
	if !slices.Contains(names, name) || (arm != armGraphQL && arm != armREST && arm != armDelta) {
		return "", "", fmt.Errorf("metric %q: want a KPI (%s), optionally followed by .graphql (the default), .rest or .delta", metric, strings.Join(names, ", "))
	}
	return name, arm, nil
}

// figure returns the run's value of KPI name for arm from rep, and its
// unit; ok is false when the report has no such row or the figure was not
// measured.
func figure(rep *report.Report, name, arm string) (value float64, unit string, ok bool) {
	for _, r := range rep.KPIs {
		if r.Name != name {
			continue
		}
		switch arm {
		case armGraphQL:
			return r.GraphQL, r.Unit, !r.GraphQLNotMeasured && r.Outcome != kpi.OutcomeNotMeasured
		case armREST:
			return r.REST, r.Unit, !r.RESTNotMeasured && !r.NoControl && r.Outcome != kpi.OutcomeNotMeasured
		case armDelta:
			if r.Delta == nil {
				return 0, r.DeltaUnit, false
			}
			return *r.Delta, r.DeltaUnit, true
		}
	}
	return 0, "", false
}

// seriesRun is one complete run of the series.
type seriesRun struct {
	point  api.SeriesPoint
	report *report.Report
}

// changesOf builds the series of metric (name, arm) over runs (oldest
// first) and finds its change points: a pure function of its inputs. Runs
// whose figure was not measured stay in the series as null and are left
// out of what the detector sees.
func changesOf(profile, name, arm string, runs []seriesRun, o changepoint.Options) (api.HistoryChanges, error) {
	c := api.HistoryChanges{Profile: profile, Metric: name + "." + arm, MinRuns: o.MinRuns, Level: o.Level, Runs: []api.SeriesPoint{}, Changes: []api.ChangePoint{}}
	var values []float64
	var at []int // position in c.Runs of each value
	for _, r := range runs {
		p := r.point
		if v, unit, ok := figure(r.report, name, arm); ok {
			p.Value = &v
			values = append(values, v)
			at = append(at, len(c.Runs))
			if c.Unit == "" {
				c.Unit = unit
			}
		}
		c.Runs = append(c.Runs, p)
	}
	cps, err := changepoint.Detect(values, o)
	if err != nil {
		return api.HistoryChanges{}, err
	}
	for _, cp := range cps {
		cp.Index = at[cp.Index]
		c.Changes = append(c.Changes, api.ChangePoint{Run: c.Runs[cp.Index].ID, Change: cp})
	}
	return c, nil
}

// Changes returns profile's series of metric over the history's complete
// runs, oldest first, with its change points (changepoint's defaults:
// DefaultMinRuns runs a side, level DefaultLevel). Each report is read
// from disk; aborted and unreadable runs have no place in the series.
func (d *daemon) Changes(_ context.Context, profile, metric string) (api.HistoryChanges, error) {
	if profile == "" {
		profile = d.cfg.DefaultProfile
	}
	name, arm, err := parseMetric(metric)
	if err != nil {
		return api.HistoryChanges{}, fmt.Errorf("%w: %w", api.ErrBadQuery, err)
	}
	list := d.store.List() // newest first
	slices.Reverse(list)
	var runs []seriesRun
	known := false
	for _, s := range list {
		if s.Profile != profile {
			continue
		}
		known = true
		if s.Status != report.StatusComplete {
			continue
		}
		sum, rep, err := d.store.Get(s.ID)
		if err != nil || rep == nil || sum.Status != report.StatusComplete {
			continue // gone, or unreadable since it was listed
		}
		runs = append(runs, seriesRun{point: api.SeriesPoint{ID: sum.ID, StartedAt: sum.StartedAt, Verdict: sum.Verdict}, report: rep})
	}
	if _, ok := d.cfg.Profiles[profile]; !ok && !known {
		return api.HistoryChanges{}, fmt.Errorf("%w: profile %q has no runs and is not configured; profiles: %v", api.ErrBadQuery, profile, d.cfg.ProfileNames())
	}
	return changesOf(profile, name, arm, runs, changepoint.Options{MinRuns: changepoint.DefaultMinRuns, Level: changepoint.DefaultLevel})
}
