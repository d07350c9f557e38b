package relational

import (
	"maps"
	"sync"
	"time"

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

	// mu guards totals, the same sums as the counters, read back by
	// Totals without a scrape.
	mu     sync.Mutex
	totals map[string]Totals
}

// Totals are one endpoint's cumulative figures since the target started:
// requests served and their tallies summed. Two readings' difference is
// the work of the requests in between.
type Totals struct {
	Requests int64         `json:"requests"`
	Queries  int64         `json:"queries"`
	Rows     int64         `json:"rows"`
	Time     time.Duration `json:"time_ns"`
}

// Totals returns every endpoint's cumulative figures (a copy), by
// endpoint label; an endpoint that served nothing yet is absent.
func (m *Metrics) Totals() map[string]Totals {
	if m == nil {
		return map[string]Totals{}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.totals)
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
		totals: map[string]Totals{},
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
	m.mu.Lock()
	t0 := m.totals[endpoint]
	m.totals[endpoint] = Totals{Requests: t0.Requests + 1, Queries: t0.Queries + s.Queries, Rows: t0.Rows + s.Rows, Time: t0.Time + s.Time}
	m.mu.Unlock()
	if e := t.Err(); e != nil {
		m.errors.WithLabelValues(endpoint, e.Cause).Inc()
	}
}
