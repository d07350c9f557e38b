package serve

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/changepoint"
	"github.com/soakd/soakd/internal/daemonmetrics"
	"github.com/soakd/soakd/internal/history"
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

// latencyP99 is the one changes metric that is no KPI row: the compared
// phases' p99 latency (ms), each arm's the median of its rounds'.
const latencyP99 = "latency_p99_ms"

// metricNames lists the figures a changes metric may name: the KPI rows,
// in the order reports hold them, then latencyP99.
func metricNames() []string {
	var names []string
	for _, r := range kpi.Evaluate(kpi.Figures{}, kpi.Figures{}, kpi.Limits{}) {
		names = append(names, r.Name)
	}
	return append(names, latencyP99)
}

// armP99 is the median over the rounds of the p99 latency (ms) of the
// phases an arm ran under (compare's lists); ok is false when none has a
// request.
func armP99(rep *report.Report, phases []string) (float64, bool) {
	var ps []float64
	for _, p := range rep.Phases {
		if slices.Contains(phases, p.Name) && p.Requests > 0 {
			ps = append(ps, p.LatencyMs.P99)
		}
	}
	if len(ps) == 0 {
		return 0, false
	}
	return kpi.Median(ps), true
}

// latencyFigure is figure for latencyP99: ms per arm, the delta in
// percent of REST's.
func latencyFigure(rep *report.Report, arm string) (float64, string, bool) {
	restPhases, graphqlPhases := rep.Compare.Ran()
	g, gok := armP99(rep, graphqlPhases)
	r, rok := armP99(rep, restPhases)
	switch arm {
	case armGraphQL:
		return g, "ms", gok
	case armREST:
		return r, "ms", rok
	}
	if !gok || !rok || r <= 0 {
		return 0, "percent", false
	}
	return (g - r) / r * 100, "percent", true
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
	if name == latencyP99 {
		return latencyFigure(rep, arm)
	}
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

// seriesRun is one complete run of the series: its point and its figures
// (figure's answers, from its report or from values read from it before).
type seriesRun struct {
	point api.SeriesPoint
	fig   func(name, arm string) (value float64, unit string, ok bool)
}

// reportRun is a seriesRun reading its figures from rep.
func reportRun(point api.SeriesPoint, rep *report.Report) seriesRun {
	return seriesRun{point: point, fig: func(name, arm string) (float64, string, bool) { return figure(rep, name, arm) }}
}

// figureValue is one figure as figure answered it.
type figureValue struct {
	value float64
	unit  string
	ok    bool
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
		if v, unit, ok := r.fig(name, arm); ok {
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
	runs, known := d.profileRuns(d.store.List(), profile)
	if _, ok := d.cfg.Profiles[profile]; !ok && !known {
		return api.HistoryChanges{}, fmt.Errorf("%w: profile %q has no runs and is not configured; profiles: %v", api.ErrBadQuery, profile, d.cfg.ProfileNames())
	}
	return changesOf(profile, name, arm, runs, detectorOptions())
}

// detectorOptions are the change-point detector's options the daemon uses.
func detectorOptions() changepoint.Options {
	return changepoint.Options{MinRuns: changepoint.DefaultMinRuns, Level: changepoint.DefaultLevel}
}

// profileRuns reads the complete runs of profile in list (the history's,
// newest first) oldest first, with their reports; known is whether the
// history has any run of the profile at all.
func (d *daemon) profileRuns(list []history.Summary, profile string) (runs []seriesRun, known bool) {
	for _, s := range slices.Backward(list) {
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
		runs = append(runs, reportRun(api.SeriesPoint{ID: sum.ID, StartedAt: sum.StartedAt, Verdict: sum.Verdict}, rep))
	}
	return runs, known
}

// followedMetrics are the figures whose change points the daemon's
// /metrics exports for every profile with complete runs: GraphQL's CPU and
// allocation per request, GC %, p99 latency and throughput.
func followedMetrics() []string {
	return []string{"cpu_us_per_request.graphql", "alloc_bytes_per_request.graphql", "gc_percent.graphql", latencyP99 + ".graphql", "throughput_rps.graphql"}
}

// changeCache holds the change-point series computed for /metrics and the
// history they were computed from, so that a scrape reads nothing while
// the history is as it was, and each complete run's followed figures, so
// that a new run costs the reading of its own report only.
type changeCache struct {
	mu     sync.Mutex
	key    string
	series []daemonmetrics.ChangeSeries
	runs   map[string]cachedRun // by run id
}

// cachedRun is a complete run's profile, point and followed figures.
type cachedRun struct {
	profile string
	point   api.SeriesPoint
	values  map[string]figureValue // by followed metric
}

// changeSeries returns the change points of every followed figure of every
// profile with complete runs, from the cache when the history is as it was.
func (d *daemon) changeSeries() []daemonmetrics.ChangeSeries {
	list := d.store.List()
	var key strings.Builder
	for _, s := range list {
		key.WriteString(s.ID + "\x00" + s.Status + "\x00")
	}
	c := &d.changes
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.series != nil && c.key == key.String() {
		return c.series
	}
	known := map[string]cachedRun{}
	byProfile := map[string][]seriesRun{}
	var profiles []string
	for _, s := range slices.Backward(list) { // oldest first
		if s.Status != report.StatusComplete {
			continue
		}
		cr, ok := c.runs[s.ID]
		if !ok {
			sum, rep, err := d.store.Get(s.ID)
			if err != nil || rep == nil || sum.Status != report.StatusComplete {
				continue // gone, or unreadable since it was listed
			}
			cr = cachedRun{profile: sum.Profile, point: api.SeriesPoint{ID: sum.ID, StartedAt: sum.StartedAt, Verdict: sum.Verdict}, values: map[string]figureValue{}}
			for _, m := range followedMetrics() {
				name, arm, _ := parseMetric(m)
				v, unit, ok := figure(rep, name, arm)
				cr.values[name+"."+arm] = figureValue{v, unit, ok}
			}
		}
		known[s.ID] = cr
		if _, ok := byProfile[cr.profile]; !ok {
			profiles = append(profiles, cr.profile)
		}
		values := cr.values
		byProfile[cr.profile] = append(byProfile[cr.profile], seriesRun{point: cr.point, fig: func(name, arm string) (float64, string, bool) {
			f := values[name+"."+arm]
			return f.value, f.unit, f.ok
		}})
	}
	slices.Sort(profiles)
	series := []daemonmetrics.ChangeSeries{}
	for _, p := range profiles {
		for _, m := range followedMetrics() {
			name, arm, _ := parseMetric(m)
			hc, err := changesOf(p, name, arm, byProfile[p], detectorOptions())
			if err != nil {
				continue
			}
			series = append(series, changeSeriesOf(hc))
		}
	}
	c.key, c.series, c.runs = key.String(), series, known
	return series
}

// changeSeriesOf summarises one series' change points for /metrics.
func changeSeriesOf(hc api.HistoryChanges) daemonmetrics.ChangeSeries {
	cs := daemonmetrics.ChangeSeries{Profile: hc.Profile, Metric: hc.Metric, Points: []daemonmetrics.Point{}}
	for _, c := range hc.Changes {
		cs.Points = append(cs.Points, daemonmetrics.Point{Run: c.Run, At: hc.Runs[c.Index].StartedAt, Relative: c.Relative})
	}
	if n := len(hc.Changes); n > 0 {
		for _, r := range hc.Runs[hc.Changes[n-1].Index+1:] {
			if r.Value != nil {
				cs.LastRunsAgo++
			}
		}
	}
	return cs
}
