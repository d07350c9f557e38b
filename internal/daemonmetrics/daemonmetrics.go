// Package daemonmetrics holds the series `soakd serve` exposes about
// itself on the control API's /metrics: runs by outcome and their
// duration, the run in progress, the history's size and retention
// deletions, whether the history is read-only, control API requests by
// route and code, and the build. They live on a registry of their own, never
// the target's (package metrics), so that the daemon's health is scraped
// and alerted on apart from the figures a run measures.
//
// Every label set is bounded: outcomes are four, routes are the API's
// ServeMux patterns (never the raw path), codes are HTTP statuses, the
// profile appears on soakd_run_in_progress_info for the run in progress
// only and on the change-point series for the configured profiles with
// runs, each with the few figures the daemon follows; a run id appears on
// the newest RecentRuns runs and on each change point (a handful per
// series: a change needs runs on both sides).
package daemonmetrics

import (
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/soakd/soakd/internal/buildinfo"
	"github.com/soakd/soakd/internal/kpi"
)

// State is what the daemon is at one scrape; the collector asks for it
// each time, so the series never lag the daemon.
type State struct {
	// Running is true while a run (or a soak's cycle) holds the run slot.
	Running bool
	// Profile is the profile of the run in progress, "" when idle or not
	// known yet.
	Profile string
	// HistoryRuns is how many runs the history holds.
	HistoryRuns int
	// RetentionDeletions is how many runs retention removed since the
	// daemon started.
	RetentionDeletions int64
	// ReadOnly is true when the history takes no writes (no run can start).
	ReadOnly bool
	// Changes are the change points of the history's series, one entry
	// per profile and followed figure.
	Changes []ChangeSeries
	// Recent are the history's newest runs, newest first; the collector
	// exports the first RecentRuns of them.
	Recent []Run
}

// RecentRuns is how many of the newest runs soakd_history_run_started_timestamp_seconds
// lists: a Grafana table of the last runs' verdicts, two to three weeks of
// nightly runs, with a bounded label set.
const RecentRuns = 20

// Run is one run of the history as the last runs' series show it.
type Run struct {
	ID      string
	Profile string
	// Verdict is the history's verdict: pass, fail, inconclusive, running,
	// aborted, or "" for a run whose report cannot be read (exported as
	// unreadable).
	Verdict   kpi.Outcome
	StartedAt time.Time
	// Baseline is true for the run marked as the baseline.
	Baseline bool
}

// ChangeSeries is what the change-point detector found in one profile's
// series of one figure (package changepoint, as GET /v1/history/changes
// answers).
type ChangeSeries struct {
	Profile string
	// Metric is the figure, as /v1/history/changes names it
	// ("cpu_us_per_request.graphql").
	Metric string
	// Points are the series' change points, oldest first.
	Points []Point
	// LastRunsAgo is, when there are Points, how many runs of the series
	// came after the newest change point's first run at the new level (0:
	// it is the newest run).
	LastRunsAgo int
}

// Point is one change point.
type Point struct {
	// Run is the id of the first run at the new level, At its start.
	Run string
	At  time.Time
	// Relative is the step over |the mean before| (0.3: 30 % higher); nil
	// when that mean is 0.
	Relative *float64
}

// Metrics are the daemon's own series. Safe for concurrent use.
type Metrics struct {
	reg      *prometheus.Registry
	runs     *prometheus.CounterVec
	duration prometheus.Histogram
	requests *prometheus.CounterVec
}

// New registers the daemon's series on a registry of its own; state is
// called at every scrape (it must be cheap and safe for concurrent use).
func New(state func() State) *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "soakd_runs_total",
			Help: "Runs (API runs and soak cycles) finished since the daemon started, by outcome: pass, fail, inconclusive or aborted.",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "soakd_run_duration_seconds",
			Help: "Wall time of the runs finished since the daemon started, from start to end, in seconds.",
			// From a smoke run's seconds to a night's soak cycle of hours.
			Buckets: []float64{1, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400, 28800},
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "soakd_api_requests_total",
			Help: "Control API requests served, by route (the API's route pattern, never the raw path) and HTTP status code.",
		}, []string{"route", "code"}),
	}
	// Every outcome is exported from the start, at 0, so that increase()
	// sees the first fail.
	for _, o := range []kpi.Outcome{kpi.OutcomePass, kpi.OutcomeFail, kpi.OutcomeInconclusive, kpi.OutcomeAborted} {
		m.runs.WithLabelValues(string(o))
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "soakd_build_info",
		Help:        "Always 1: the soakd build serving, by version, vcs commit and Go version.",
		ConstLabels: prometheus.Labels{"version": buildinfo.Version(), "commit": buildinfo.Commit(), "go": runtime.Version()},
	})
	build.Set(1)
	reg.MustRegister(m.runs, m.duration, m.requests, build, newStateCollector(state))
	return m
}

// RunFinished counts one finished run with its outcome (the history's
// verdict: pass, fail, inconclusive, aborted; anything else, a run whose
// report cannot be read, counts as aborted) and its wall time in seconds.
func (m *Metrics) RunFinished(outcome kpi.Outcome, seconds float64) {
	switch outcome {
	case kpi.OutcomePass, kpi.OutcomeFail, kpi.OutcomeInconclusive:
	default:
		outcome = kpi.OutcomeAborted
	}
	m.runs.WithLabelValues(string(outcome)).Inc()
	if seconds >= 0 {
		m.duration.Observe(seconds)
	}
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Instrument wraps the control API's handler so each request is counted in
// soakd_api_requests_total{route,code}. The route is the pattern the API's
// ServeMux matched (r.Pattern, which ServeMux sets on the request it is
// given), read after next has served: "unmatched" when none did.
func (m *Metrics) Instrument(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" {
			route = "unmatched"
		}
		m.requests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
	})
}

// recorder keeps the status code a handler wrote.
type recorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.code, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// stateCollector exports State at each scrape.
type stateCollector struct {
	state                                                        func() State
	inProgress, inProgressInfo, historyRuns, deletions, readOnly *prometheus.Desc
	changes, changeAt, changeRunsAgo, changeRelative             *prometheus.Desc
	pointAt, pointRelative, recent                               *prometheus.Desc
}

func newStateCollector(state func() State) *stateCollector {
	return &stateCollector{
		state: state,
		inProgress: prometheus.NewDesc("soakd_run_in_progress",
			"1 while a run (or a soak's cycle) holds the daemon's run slot, 0 when idle.", nil, nil),
		inProgressInfo: prometheus.NewDesc("soakd_run_in_progress_info",
			"Always 1, present only while a run is in progress: its profile.", []string{"profile"}, nil),
		historyRuns: prometheus.NewDesc("soakd_history_runs",
			"Runs the daemon's history holds (every status), after retention.", nil, nil),
		deletions: prometheus.NewDesc("soakd_retention_deletions_total",
			"Runs retention (retention.keep_last, retention.max_age) removed since the daemon started.", nil, nil),
		readOnly: prometheus.NewDesc("soakd_read_only",
			"1 when the history takes no writes (a full or read-only data_dir): no run can start until it does and the daemon restarts; 0 otherwise.", nil, nil),
		changes: prometheus.NewDesc("soakd_history_change_points",
			"Change points in a profile's series of a figure over the history's complete runs (GET /v1/history/changes).", []string{"profile", "metric"}, nil),
		changeAt: prometheus.NewDesc("soakd_history_last_change_timestamp_seconds",
			"Start of the first run at the new level of the series' newest change point, in Unix seconds (a Grafana annotation's time); absent without a change point.", []string{"profile", "metric"}, nil),
		changeRunsAgo: prometheus.NewDesc("soakd_history_last_change_runs_ago",
			"Runs of the series after the first run at the new level of its newest change point (0: that run is the newest); absent without a change point.", []string{"profile", "metric"}, nil),
		changeRelative: prometheus.NewDesc("soakd_history_last_change_relative",
			"The newest change point's step over the mean before it, as a ratio (0.3: 30 % higher); absent without a change point or when the mean before is 0.", []string{"profile", "metric"}, nil),
		pointAt: prometheus.NewDesc("soakd_history_change_point_timestamp_seconds",
			"One series per change point of a profile's series of a figure: the start of its first run at the new level (run), in Unix seconds (Grafana annotates each at that time).", []string{"profile", "metric", "run"}, nil),
		pointRelative: prometheus.NewDesc("soakd_history_change_point_relative",
			"One series per change point: its step over the mean before it, as a ratio (0.3: 30 % higher); absent when the mean before is 0.", []string{"profile", "metric", "run"}, nil),
		recent: prometheus.NewDesc("soakd_history_run_started_timestamp_seconds",
			"One series for each of the history's newest "+strconv.Itoa(RecentRuns)+" runs: its start in Unix seconds, with its id, profile, verdict (pass, fail, inconclusive, running, aborted, unreadable) and whether it is the baseline.", []string{"run", "profile", "verdict", "baseline"}, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.inProgress
	ch <- c.inProgressInfo
	ch <- c.historyRuns
	ch <- c.deletions
	ch <- c.readOnly
	ch <- c.changes
	ch <- c.changeAt
	ch <- c.changeRunsAgo
	ch <- c.changeRelative
	ch <- c.pointAt
	ch <- c.pointRelative
	ch <- c.recent
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.state()
	ch <- prometheus.MustNewConstMetric(c.inProgress, prometheus.GaugeValue, bool01(s.Running))
	if s.Running {
		ch <- prometheus.MustNewConstMetric(c.inProgressInfo, prometheus.GaugeValue, 1, s.Profile)
	}
	ch <- prometheus.MustNewConstMetric(c.historyRuns, prometheus.GaugeValue, float64(s.HistoryRuns))
	ch <- prometheus.MustNewConstMetric(c.deletions, prometheus.CounterValue, float64(s.RetentionDeletions))
	ch <- prometheus.MustNewConstMetric(c.readOnly, prometheus.GaugeValue, bool01(s.ReadOnly))
	for _, cs := range s.Changes {
		ch <- prometheus.MustNewConstMetric(c.changes, prometheus.GaugeValue, float64(len(cs.Points)), cs.Profile, cs.Metric)
		for _, p := range cs.Points {
			ch <- prometheus.MustNewConstMetric(c.pointAt, prometheus.GaugeValue, unixSeconds(p.At), cs.Profile, cs.Metric, p.Run)
			if p.Relative != nil {
				ch <- prometheus.MustNewConstMetric(c.pointRelative, prometheus.GaugeValue, *p.Relative, cs.Profile, cs.Metric, p.Run)
			}
		}
		if len(cs.Points) == 0 {
			continue
		}
		last := cs.Points[len(cs.Points)-1]
		ch <- prometheus.MustNewConstMetric(c.changeAt, prometheus.GaugeValue, unixSeconds(last.At), cs.Profile, cs.Metric)
		ch <- prometheus.MustNewConstMetric(c.changeRunsAgo, prometheus.GaugeValue, float64(cs.LastRunsAgo), cs.Profile, cs.Metric)
		if last.Relative != nil {
			ch <- prometheus.MustNewConstMetric(c.changeRelative, prometheus.GaugeValue, *last.Relative, cs.Profile, cs.Metric)
		}
	}
	for _, r := range s.Recent[:min(len(s.Recent), RecentRuns)] {
		verdict := string(r.Verdict)
		if verdict == "" {
			verdict = "unreadable"
		}
		ch <- prometheus.MustNewConstMetric(c.recent, prometheus.GaugeValue, unixSeconds(r.StartedAt), r.ID, r.Profile, verdict, strconv.FormatBool(r.Baseline))
	}
}

// unixSeconds is t in Unix seconds, to the millisecond.
func unixSeconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func bool01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
