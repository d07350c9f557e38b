package relational

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metrics are the database figures per endpoint on the target's /metrics:
// divide the counters' increase by soakd_relational_requests_total's for
// queries, rows and database seconds per request. The endpoint label is
// one of a fixed set (the handlers' names), so series stay bounded.
type Metrics struct {
	requests   *prometheus.CounterVec
	queries    *prometheus.CounterVec
	rows       *prometheus.CounterVec
	seconds    *prometheus.CounterVec
	errors     *prometheus.CounterVec
	perRequest *prometheus.HistogramVec
}

// NewMetrics registers the relational series on reg (never the global
// registry), and the connection pool's statistics (go_sql_*, with label
// db_name="relational") as a collector read at scrape time.
func NewMetrics(reg prometheus.Registerer, s *Store) *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "soakd", Subsystem: "relational", Name: name, Help: help}, labels)
	}
	m := &Metrics{
		requests: counter("requests_total", "Requests the relational scenario served, by endpoint.", "endpoint"),
		queries:  counter("db_queries_total", "SQL queries the relational scenario's requests ran, by endpoint.", "endpoint"),
		rows:     counter("db_rows_total", "Rows those queries returned, by endpoint.", "endpoint"),
		seconds: counter("db_seconds_total",
			"Time spent in those queries, from the driver call that sends each until its result is closed (pool waits included), in seconds, by endpoint. Queries running at once each count their own time.",
			"endpoint"),
		errors: counter("db_errors_total", "Requests that met a database failure, by endpoint and cause (timeout, canceled, connection, query).", "endpoint", "cause"),
		perRequest: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "soakd", Subsystem: "relational", Name: "db_queries_per_request",
			Help:    "SQL queries per request, by endpoint.",
			Buckets: []float64{0, 1, 2, 3, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000},
		}, []string{"endpoint"}),
	}
	reg.MustRegister(m.requests, m.queries, m.rows, m.seconds, m.errors, m.perRequest,
		collectors.NewDBStatsCollector(s.DB(), "relational"))
	return m
}

// Observe adds one finished request's tally to endpoint's series.
func (m *Metrics) Observe(endpoint string, t *Tally) {
	if m == nil {
		return
	}
	s := t.Snapshot()
	m.requests.WithLabelValues(endpoint).Inc()
	m.queries.WithLabelValues(endpoint).Add(float64(s.Queries))
	m.rows.WithLabelValues(endpoint).Add(float64(s.Rows))
	m.seconds.WithLabelValues(endpoint).Add(s.Time.Seconds())
	m.perRequest.WithLabelValues(endpoint).Observe(float64(s.Queries))
	if e := t.Err(); e != nil {
		m.errors.WithLabelValues(endpoint, e.Cause).Inc()
	}
}
