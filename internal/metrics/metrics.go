// Package metrics holds the Prometheus series soakd exposes on the target's
// /metrics: request counts and latency by arm and operation (middleware.go),
// the driver's live figures and latency summary per phase, a phase marker
// for annotations, subscription delivery, the broker's counters and the KPI
// rows of the last run.
//
// Everything is registered on a registry the caller passes in (never the
// global one), and every label set is bounded whatever the run length:
// phases, arms, error classes, KPIs and GraphQL operation names are small
// sets with hard caps, and the run id appears only on soakd_phase_info, for
// the current phase only.
package metrics

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soakd/soakd/internal/donut"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/workloads"
)

// Caps on the distinct label values kept, so that no run length and no
// configuration can grow the number of series without bound.
const (
	// MaxPhases is how many distinct phase names keep series; starting a
	// new phase beyond it deletes the series of the least recently started one.
	MaxPhases = 32
	// MaxErrorClasses is how many distinct driver error classes get their
	// own series; further classes are counted as "other".
	MaxErrorClasses = 32
	// MaxOperations is how many distinct GraphQL operation names get their
	// own series; further names are counted as OperationOther.
	MaxOperations = 50
	// MaxKPIs is how many KPI rows KPIResults exposes; later rows are ignored.
	MaxKPIs = 64
	// maxLabelBytes bounds one label value taken from outside input.
	maxLabelBytes = 64
)

// Label values with a fixed meaning.
const (
	// OperationAnonymous labels a GraphQL request whose operation has no
	// name (or that failed before an operation was chosen).
	OperationAnonymous = "anonymous"
	// OperationOther labels a GraphQL operation whose name is invalid or
	// arrived after MaxOperations distinct names were seen.
	OperationOther = "other"
	// OperationWebsocket labels websocket upgrade requests, which last as
	// long as their connection and so are counted but not timed.
	OperationWebsocket = "websocket"
	// ClassUnclassified labels driver errors reported without a class.
	ClassUnclassified = "unclassified"
	// classOther labels error classes beyond MaxErrorClasses.
	classOther = "other"
)

// DriverProgress is the driver's cumulative view of one running phase, as
// its progress messages report it about once per second. It is defined here
// rather than taken from workloads.Progress because it also carries the
// error classes; FromProgress converts.
type DriverProgress struct {
	// Requests is the number of requests completed since the phase started.
	Requests int64
	// Errors is the number of failed requests since the phase started.
	Errors int64
	// ErrorsByClass splits Errors by error class (workloads.Class*, or
	// "http_<code>"); nil when the message carries no split. The part of
	// Errors it does not cover is counted as ClassUnclassified.
	ErrorsByClass map[string]int64
	// Dropped is the open model's number of arrivals not sent so far.
	Dropped int64
	// ActiveUsers is the number of users running (open model: requests in flight).
	ActiveUsers int64
}

// FromProgress converts a driver progress message; it carries no error
// classes, so its errors count as ClassUnclassified until a message or
// result with classes arrives.
func FromProgress(p workloads.Progress) DriverProgress {
	return DriverProgress{Requests: p.Requests, Errors: p.Errors, Dropped: p.Dropped, ActiveUsers: p.ActiveUsers}
}

// phaseArm identifies the driver-side series of one phase.
type phaseArm struct{ phase, arm string }

// counted is what has already been added to the counters of one phase and
// arm, so that cumulative snapshots become counter increments.
type counted struct {
	requests, dropped int64
	classes           map[string]int64 // by label value, ClassUnclassified included
}

// Metrics holds every soakd collector. Create it with New; its methods are
// safe for concurrent use.
type Metrics struct {
	reg prometheus.Registerer

	// Target side (middleware.go).
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	inFlight   *prometheus.GaugeVec
	websockets *prometheus.GaugeVec
	opsMu      sync.RWMutex
	ops        map[string]*string // admitted GraphQL operation names, canonical pointers
	anonymous  *string
	other      *string

	// Driver side, guarded by mu.
	mu             sync.Mutex
	phaseInfo      *prometheus.GaugeVec
	driverRequests *prometheus.CounterVec
	driverErrors   *prometheus.CounterVec
	driverDropped  *prometheus.CounterVec
	activeUsers    *prometheus.GaugeVec
	latency        map[phaseArm]latencySummary
	subExpected    *prometheus.GaugeVec
	subReceived    *prometheus.GaugeVec
	subLost        *prometheus.GaugeVec
	subDuplicated  *prometheus.GaugeVec
	peakRPS        *prometheus.GaugeVec
	peakUsers      *prometheus.GaugeVec
	failUsers      *prometheus.GaugeVec
	maxLoadFailed  *prometheus.GaugeVec
	kpiValue       map[string]*prometheus.GaugeVec // by base unit family (kpiFamilies)
	kpiDelta       *prometheus.GaugeVec
	kpiThreshold   *prometheus.GaugeVec
	kpiPass        *prometheus.GaugeVec
	kpiOutcome     *prometheus.GaugeVec
	checkOutcome   *prometheus.GaugeVec
	runVerdict     *prometheus.GaugeVec
	phases         []string // phase label values with series, oldest first
	lastRun        string   // the run of the last PhaseStarted
	classes        map[string]bool
	counted        map[phaseArm]*counted
	current        *phaseArm // the running phase, nil between phases
	broker         prometheus.Collector
}

// RequestDurationBuckets returns the upper bounds, in seconds, of the
// target's request duration histogram: from 100 µs (a loopback REST read)
// to 10 s, about 2.5x apart, so histogram_quantile interpolates within a
// factor of 2.5 anywhere in that range. A new slice each call, so nobody can
// change another's.
func RequestDurationBuckets() []float64 {
	return []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
}

// New creates every collector and registers it on reg (never the global
// registry). It panics if reg already holds soakd collectors, as
// prometheus.MustRegister does: that is a programming error.
func New(reg prometheus.Registerer) *Metrics {
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "soakd", Name: name, Help: help}, labels)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "soakd", Name: name, Help: help}, labels)
	}
	anonymous, other := OperationAnonymous, OperationOther
	m := &Metrics{
		reg: reg,
		requests: counter("target_requests_total",
			"Requests served by the target, by arm (rest or graphql), operation (REST route template or GraphQL operation name) and HTTP status code.",
			"arm", "operation", "code"),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "soakd", Name: "target_request_duration_seconds",
			Help:    "Time the target took to serve a request, from the handler's start to its return, in seconds, by arm and operation (websocket upgrades excluded).",
			Buckets: RequestDurationBuckets(),
		}, []string{"arm", "operation"}),
		inFlight:   gauge("target_requests_in_flight", "Requests the target is serving right now, by arm (websocket connections excluded).", "arm"),
		websockets: gauge("target_websocket_connections", "Websocket connections open on the target, by arm.", "arm"),
		ops:        make(map[string]*string),
		anonymous:  &anonymous,
		other:      &other,

		phaseInfo: gauge("phase_info", "1 while a phase runs, labelled with the run id, the phase and its arm; absent between phases. Use it for annotations.",
			"run", "phase", "arm"),
		driverRequests: counter("driver_requests_total", "Requests the driver completed (successfully or not), by phase and arm.", "phase", "arm"),
		driverErrors:   counter("driver_errors_total", "Requests the driver counted as failed, by phase, arm and error class.", "phase", "arm", "class"),
		driverDropped:  counter("driver_dropped_total", "Open-model arrivals the driver did not send because max_in_flight requests were in flight, by phase and arm.", "phase", "arm"),
		activeUsers:    gauge("driver_active_users", "Virtual users running in the driver (open model: requests in flight), by phase and arm; 0 once the phase ends.", "phase", "arm"),
		latency:        make(map[phaseArm]latencySummary),
		subExpected:    gauge("subscription_expected_events", "Subscription events a finished phase's subscriptions should have received.", "phase"),
		subReceived:    gauge("subscription_received_events", "Subscription events a finished phase's subscriptions received, duplicates included.", "phase"),
		subLost:        gauge("subscription_lost_events", "Subscription events a finished phase expected and never received; must be 0.", "phase"),
		subDuplicated:  gauge("subscription_duplicated_events", "Subscription events a finished phase received more than once (or out of order); must be 0.", "phase"),
		peakRPS:        gauge("max_load_peak_requests_per_second", "A finished max-load phase's highest sustained throughput (best sliding window that broke no rule), in requests per second.", "phase", "arm"),
		peakUsers:      gauge("max_load_peak_users", "Active users at the end of a finished max-load phase's peak window.", "phase", "arm"),
		failUsers:      gauge("max_load_users_at_failure", "Active users when a max-load phase's failure rule tripped; 0 when none tripped.", "phase", "arm"),
		maxLoadFailed:  gauge("max_load_failed", "1 when a finished max-load phase ended because a failure rule tripped, 0 otherwise.", "phase", "arm"),
		kpiValue: map[string]*prometheus.GaugeVec{
			familyRatio:   gauge("kpi_value_ratio", "The last run's KPI figure per arm (rest or graphql) for KPIs that are shares (CPU of the machine or of one core, GC time), as a ratio: 0.25 is 25 %.", "kpi", "arm"),
			familySeconds: gauge("kpi_value_seconds", "The last run's KPI figure per arm for KPIs that are durations (CPU per request, GC pause p99), in seconds.", "kpi", "arm"),
			familyBytes:   gauge("kpi_value_bytes", "The last run's KPI figure per arm for KPIs that are sizes (heap allocated per request), in bytes.", "kpi", "arm"),
			familyRPS:     gauge("kpi_value_requests_per_second", "The last run's KPI figure per arm for throughput KPIs: requests completed per second over the steady window (a finished phase's figure, not a live rate).", "kpi", "arm"),
		},
		kpiDelta:     gauge("kpi_delta_ratio", "The last run's KPI variance of GraphQL from REST as a ratio: kind=difference is GraphQL - REST of two shares (0.05 = 5 points), kind=relative is (GraphQL - REST) / REST (0.1 = +10 %); absent when undefined (REST 0).", "kpi", "kind"),
		kpiThreshold: gauge("kpi_threshold_ratio", "The last run's limit on soakd_kpi_delta_ratio, in the same ratio and kind; absent for informational KPIs.", "kpi", "kind"),
		kpiPass:      gauge("kpi_pass", "1 when the last run's gated KPI passed (its whole confidence interval inside the limit), 0 when it failed, was inconclusive or was not measured; absent for informational KPIs.", "kpi"),
		kpiOutcome:   gauge("kpi_outcome", "1 for the last run's outcome of each gated KPI (pass, fail, inconclusive, not_measured), 0 for the others.", "kpi", "outcome"),
		checkOutcome: gauge("check_outcome", "1 for the last run's outcome of each check (memory rules, delivery, errors, return to rest; pass, fail, inconclusive, not_measured), 0 for the others; check is group/name and phase the phase it judged.", "check", "phase", "outcome"),
		runVerdict:   gauge("run_verdict", "1 for the last run's verdict (pass, fail, inconclusive, aborted, running), 0 for the others; every value is always present.", "verdict"),
		classes:      make(map[string]bool),
		counted:      make(map[phaseArm]*counted),
	}
	reg.MustRegister(
		m.requests, m.duration, m.inFlight, m.websockets,
		m.phaseInfo, m.driverRequests, m.driverErrors, m.driverDropped, m.activeUsers, newLatencyCollector(m),
		m.subExpected, m.subReceived, m.subLost, m.subDuplicated,
		m.peakRPS, m.peakUsers, m.failUsers, m.maxLoadFailed,
		m.kpiValue[familyRatio], m.kpiValue[familySeconds], m.kpiValue[familyBytes], m.kpiValue[familyRPS],
		m.kpiDelta, m.kpiThreshold, m.kpiPass, m.kpiOutcome, m.checkOutcome, m.runVerdict,
	)
	m.RunVerdict("")
	return m
}

// label makes an outside string a safe, bounded label value: valid UTF-8,
// at most maxLabelBytes, never empty (empty label values read as a missing
// label in PromQL).
func label(s string) string {
	if s == "" {
		return "none"
	}
	s = strings.ToValidUTF8(s, "?")
	if len(s) > maxLabelBytes {
		cut := maxLabelBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// phaseVecs are the collectors labelled by phase, for eviction.
func (m *Metrics) phaseVecs() []*prometheus.MetricVec {
	return []*prometheus.MetricVec{
		m.driverRequests.MetricVec, m.driverErrors.MetricVec, m.driverDropped.MetricVec, m.activeUsers.MetricVec,
		m.subExpected.MetricVec, m.subReceived.MetricVec, m.subLost.MetricVec, m.subDuplicated.MetricVec,
		m.peakRPS.MetricVec, m.peakUsers.MetricVec, m.failUsers.MetricVec, m.maxLoadFailed.MetricVec,
	}
}

// touchPhase records that phase has series, most recent last, and deletes
// the series of the least recently touched phase when there are more than
// MaxPhases. The caller holds mu.
func (m *Metrics) touchPhase(phase string) {
	if i := slices.Index(m.phases, phase); i >= 0 {
		m.phases = append(slices.Delete(m.phases, i, i+1), phase)
		return
	}
	m.phases = append(m.phases, phase)
	for len(m.phases) > MaxPhases {
		m.evictPhase()
	}
}

// evictPhase deletes the series of the least recently touched phase. The
// caller holds mu.
func (m *Metrics) evictPhase() {
	old := m.phases[0]
	m.phases = m.phases[1:]
	for _, v := range m.phaseVecs() {
		v.DeletePartialMatch(prometheus.Labels{"phase": old})
	}
	maps.DeleteFunc(m.counted, func(k phaseArm, _ *counted) bool { return k.phase == old })
	maps.DeleteFunc(m.latency, func(k phaseArm, _ latencySummary) bool { return k.phase == old })
}

// class returns the label value for an error class, "other" beyond
// MaxErrorClasses distinct classes. The caller holds mu.
func (m *Metrics) class(c string) string {
	c = label(c)
	if m.classes[c] {
		return c
	}
	if len(m.classes) >= MaxErrorClasses {
		return classOther
	}
	m.classes[c] = true
	return c
}

// DriverErrorClasses are the error classes the driver's counters start at
// zero with every phase, so that an error panel reads 0 rather than "No
// data" until the first error (http_<code> classes appear when they occur:
// their codes are not known in advance).
func DriverErrorClasses() []string {
	return []string{workloads.ClassTimeout, workloads.ClassConnectionRefused, workloads.ClassConnectionReset,
		workloads.ClassGraphQLError, workloads.ClassPayloadMismatch, workloads.ClassDecodeError, workloads.ClassOther}
}

// PhaseStarted marks phase (of arm, in run) as running: soakd_phase_info
// holds only this series until PhaseEnded, so the run id is never on more
// than one series. It also starts the phase's driver counters at zero (so
// rate() sees their first increase, and error panels read 0, not "No
// data") and forgets the phase's latency summary from an earlier run.
func (m *Metrics) PhaseStarted(run, phase, arm string) {
	run, phase, arm = label(run), label(phase), label(arm)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastRun != "" && run != m.lastRun {
		// A new run: the last run's phase series have lingered since it
		// ended, and go now. A long-lived daemon's target otherwise kept
		// about 17 series for every phase name ever run, in the measured
		// process's heap.
		for len(m.phases) > 0 {
			m.evictPhase()
		}
	}
	m.lastRun = run
	m.touchPhase(phase)
	m.phaseInfo.Reset()
	m.phaseInfo.WithLabelValues(run, phase, arm).Set(1)
	key := phaseArm{phase, arm}
	m.current = &key
	m.counted[key] = &counted{classes: make(map[string]int64)}
	m.driverRequests.WithLabelValues(phase, arm)
	m.driverDropped.WithLabelValues(phase, arm)
	for _, cls := range DriverErrorClasses() {
		m.driverErrors.WithLabelValues(phase, arm, m.class(cls))
	}
	m.activeUsers.WithLabelValues(phase, arm).Set(0)
	delete(m.latency, key)
}

// PhaseEnded marks the running phase as over: soakd_phase_info has no series
// until the next PhaseStarted, and the phase's active users drop to 0.
func (m *Metrics) PhaseEnded() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.phaseInfo.Reset()
	if m.current != nil {
		m.activeUsers.WithLabelValues(m.current.phase, m.current.arm).Set(0)
		m.current = nil
	}
}

// DriverProgress turns one cumulative progress snapshot of phase into
// counter increments and gauge values. Snapshots may repeat or arrive late:
// counters only move forward, and a snapshot below the last one (a new
// driver for the same phase without PhaseStarted) counts from zero again.
//
// The error classes always add up to p.Errors: errors without a class in
// the snapshot are counted as ClassUnclassified, and a later snapshot's
// classes only add what has not been counted yet, so the split is exact
// when every snapshot carries ErrorsByClass.
func (m *Metrics) DriverProgress(phase, arm string, p DriverProgress) {
	phase, arm = label(phase), label(arm)
	m.mu.Lock()
	defer m.mu.Unlock()
	key := phaseArm{phase, arm}
	c := m.counted[key]
	if c == nil {
		m.touchPhase(phase)
		c = &counted{classes: make(map[string]int64)}
		m.counted[key] = c
	}
	m.driverRequests.WithLabelValues(phase, arm).Add(float64(advance(&c.requests, p.Requests)))
	m.driverDropped.WithLabelValues(phase, arm).Add(float64(advance(&c.dropped, p.Dropped)))
	for cls, n := range m.errorIncrements(c, p) {
		m.driverErrors.WithLabelValues(phase, arm, cls).Add(float64(n))
	}
	m.activeUsers.WithLabelValues(phase, arm).Set(float64(p.ActiveUsers))
}

// advance moves *last to now and returns the increment: now - *last, or now
// when now is below *last (the source restarted from zero).
func advance(last *int64, now int64) int64 {
	d := now - *last
	if d < 0 {
		d = now
	}
	*last = now
	return max(d, 0)
}

// errorIncrements returns how much to add to each class counter so that
// the classes count p's errors: each class is brought up to its count in
// p.ErrorsByClass (in class order) as far as the errors not yet counted
// allow, and what is left goes to ClassUnclassified. The caller holds mu.
func (m *Metrics) errorIncrements(c *counted, p DriverProgress) map[string]int64 {
	var total int64
	for _, n := range c.classes {
		total += n
	}
	if p.Errors < total { // a new driver for the phase: start again
		clear(c.classes)
		total = 0
	}
	room := p.Errors - total
	if room <= 0 {
		return nil
	}
	wanted := make(map[string]int64, len(p.ErrorsByClass))
	for cls, n := range p.ErrorsByClass {
		wanted[m.class(cls)] += n
	}
	inc := make(map[string]int64)
	for _, cls := range slices.Sorted(maps.Keys(wanted)) {
		d := min(wanted[cls]-c.classes[cls], room)
		if d > 0 {
			inc[cls] += d
			c.classes[cls] += d
			room -= d
		}
	}
	if room > 0 {
		inc[ClassUnclassified] += room
		c.classes[ClassUnclassified] += room
	}
	return inc
}

// DriverLatency exposes a finished phase's latency summary as the summary
// soakd_driver_latency_seconds{phase,arm,quantile="0.5"|"0.9"|"0.99"|"0.999"|"1"}
// (quantile 1 is the maximum) with _count = successes, the number of
// successful requests it covers, and _sum = their mean × successes.
// workloads reports milliseconds; the series are in seconds. The quantiles
// come from the driver's HDR histograms over the whole phase: Prometheus
// never averages or re-derives them.
func (m *Metrics) DriverLatency(phase, arm string, l workloads.Latency, successes int64) {
	phase, arm = label(phase), label(arm)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.touchPhase(phase)
	successes = max(successes, 0)
	m.latency[phaseArm{phase, arm}] = latencySummary{
		count: uint64(successes),
		sum:   l.Mean / 1000 * float64(successes),
		quantiles: map[float64]float64{
			0.5: l.P50 / 1000, 0.9: l.P90 / 1000, 0.99: l.P99 / 1000, 0.999: l.P999 / 1000, 1: l.Max / 1000,
		},
	}
}

// latencySummary is one finished phase's driver latency, in seconds.
type latencySummary struct {
	count     uint64
	sum       float64
	quantiles map[float64]float64
}

// latencyCollector exposes Metrics.latency as constant summaries.
type latencyCollector struct {
	m    *Metrics
	desc *prometheus.Desc
}

func newLatencyCollector(m *Metrics) *latencyCollector {
	return &latencyCollector{m: m, desc: prometheus.NewDesc("soakd_driver_latency_seconds",
		"The driver's latency of a finished phase's successful requests, in seconds, with quantiles computed by its HDR histograms over the whole phase (quantile 1 is the maximum).",
		[]string{"phase", "arm"}, nil)}
}

// Describe implements prometheus.Collector.
func (c *latencyCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *latencyCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	for k, s := range c.m.latency {
		ch <- prometheus.MustNewConstSummary(c.desc, s.count, s.sum, s.quantiles, k.phase, k.arm)
	}
}

// Subscriptions exposes a finished phase's subscription delivery: events
// expected, received (duplicates included), lost and duplicated.
func (m *Metrics) Subscriptions(phase string, expected, received, lost, duplicated int64) {
	phase = label(phase)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.touchPhase(phase)
	m.subExpected.WithLabelValues(phase).Set(float64(expected))
	m.subReceived.WithLabelValues(phase).Set(float64(received))
	m.subLost.WithLabelValues(phase).Set(float64(lost))
	m.subDuplicated.WithLabelValues(phase).Set(float64(duplicated))
}

// MaxLoad exposes a finished max-load (ramping) phase's outcome: its peak
// sustained throughput and users, and the users at failure.
func (m *Metrics) MaxLoad(phase, arm string, r workloads.MaxLoadResult) {
	phase, arm = label(phase), label(arm)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.touchPhase(phase)
	if r.PeakWindowEnd.IsZero() { // no window judged: no peak, rather than a 0
		m.peakRPS.DeleteLabelValues(phase, arm)
		m.peakUsers.DeleteLabelValues(phase, arm)
	} else {
		m.peakRPS.WithLabelValues(phase, arm).Set(r.PeakThroughputRPS)
		m.peakUsers.WithLabelValues(phase, arm).Set(float64(r.PeakUsers))
	}
	failed, users := 0.0, 0.0
	if r.Failed {
		failed, users = 1, float64(r.UsersAtFailure)
	}
	m.failUsers.WithLabelValues(phase, arm).Set(users)
	m.maxLoadFailed.WithLabelValues(phase, arm).Set(failed)
}

// DriverResult feeds a phase's final result: its exact request, error (with
// classes) and dropped counts, its latency summary, and, when present, its
// subscription delivery and max-load outcome. Call it before PhaseEnded.
func (m *Metrics) DriverResult(res workloads.Result) {
	p := DriverProgress{Requests: res.Requests, Errors: res.Errors, ErrorsByClass: res.ErrorsByClass}
	if res.Open != nil {
		p.Dropped = res.Open.Dropped
	}
	m.DriverProgress(res.Phase, res.Arm, p)
	m.DriverLatency(res.Phase, res.Arm, res.LatencyMs, res.Requests-res.Errors)
	if s := res.Subscriptions; s != nil {
		m.Subscriptions(res.Phase, s.Expected, s.Received, s.Lost, s.Duplicated)
	}
	if ml := res.MaxLoad; ml != nil {
		m.MaxLoad(res.Phase, res.Arm, *ml)
	}
}

// The base-unit families of the KPI value series (one metric per unit).
const (
	familyRatio   = "ratio"
	familySeconds = "seconds"
	familyBytes   = "bytes"
	familyRPS     = "requests_per_second"
)

// BaseUnit maps a KPI's report unit to the family of soakd_kpi_value_*
// series that carries it and the factor that converts a value into the
// family's base unit: "%" → ratio ×0.01, "µs" → seconds ×1e-6, "ms" →
// seconds ×1e-3, "B" → bytes, "req/s" → requests_per_second. ok is false
// for a unit with no base-unit family; such a row is not exported.
func BaseUnit(unit string) (family string, factor float64, ok bool) {
	switch unit {
	case "%":
		return familyRatio, 0.01, true
	case "µs":
		return familySeconds, 1e-6, true
	case "ms":
		return familySeconds, 1e-3, true
	case "s":
		return familySeconds, 1, true
	case "B", "bytes":
		return familyBytes, 1, true
	case "req/s":
		return familyRPS, 1, true
	}
	return "", 0, false
}

// deltaKind names a KPI's delta unit for the kind label: a difference of
// two shares ("points") or a change relative to REST ("percent").
func deltaKind(unit string) string {
	if unit == "points" {
		return "difference"
	}
	return "relative"
}

// KPIResults replaces the exposed KPI rows with rows (the last run's):
// soakd_kpi_value_<unit> per arm in base units (BaseUnit),
// soakd_kpi_delta_ratio and soakd_kpi_threshold_ratio (points and percent
// ÷ 100; absent when nil), soakd_kpi_pass (1 or 0) and soakd_kpi_outcome,
// labelled by the row's Name.
func (m *Metrics) KPIResults(rows []kpi.Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.kpiValue {
		v.Reset()
	}
	m.kpiDelta.Reset()
	m.kpiThreshold.Reset()
	m.kpiPass.Reset()
	m.kpiOutcome.Reset()
	for _, r := range rows[:min(len(rows), MaxKPIs)] {
		name := label(r.Name)
		if family, factor, ok := BaseUnit(r.Unit); ok {
			// No REST arm, or an arm not measured: no value, rather than a 0.
			if !r.NoControl && !r.RESTNotMeasured {
				m.kpiValue[family].WithLabelValues(name, "rest").Set(r.REST * factor)
			}
			if !r.GraphQLNotMeasured {
				m.kpiValue[family].WithLabelValues(name, "graphql").Set(r.GraphQL * factor)
			}
		}
		kind := deltaKind(r.DeltaUnit)
		if r.Delta != nil {
			m.kpiDelta.WithLabelValues(name, kind).Set(*r.Delta / 100)
		}
		if r.Threshold != nil {
			m.kpiThreshold.WithLabelValues(name, kind).Set(*r.Threshold / 100)
		}
		if !r.Gated {
			continue // informational: neither pass nor fail
		}
		pass := 0.0
		if r.Pass {
			pass = 1
		}
		m.kpiPass.WithLabelValues(name).Set(pass)
		o := r.Outcome
		if o == "" {
			o = kpi.OutcomeFail
			if r.Pass {
				o = kpi.OutcomePass
			}
		}
		for _, x := range []kpi.Outcome{kpi.OutcomePass, kpi.OutcomeFail, kpi.OutcomeInconclusive, kpi.OutcomeNotMeasured} {
			v := 0.0
			if x == o {
				v = 1
			}
			m.kpiOutcome.WithLabelValues(name, string(x)).Set(v)
		}
	}
}

// CheckOutcome is one check of a run (a memory rule, delivery, errors,
// return to rest) as soakd_check_outcome exposes it.
type CheckOutcome struct {
	// Check is the check's group and name, "memory/survivor_growth" say.
	Check string
	// Phase is the phase it judged ("" for a run-wide check).
	Phase   string
	Outcome kpi.Outcome
}

// MaxChecks bounds the checks exposed per run (a profile has a few per
// phase); later ones are left out rather than grow the series without end.
const MaxChecks = 200

// CheckResults replaces the exposed checks with checks (the last run's):
// soakd_check_outcome is 1 for each check's outcome and 0 for the other
// outcomes, so a failed or inconclusive check is named on a dashboard, not
// only the run's verdict.
func (m *Metrics) CheckResults(checks []CheckOutcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.checkOutcome.Reset()
	for _, c := range checks[:min(len(checks), MaxChecks)] {
		for _, x := range []kpi.Outcome{kpi.OutcomePass, kpi.OutcomeFail, kpi.OutcomeInconclusive, kpi.OutcomeNotMeasured} {
			v := 0.0
			if x == c.Outcome {
				v = 1
			}
			m.checkOutcome.WithLabelValues(label(c.Check), label(c.Phase), string(x)).Set(v)
		}
	}
}

// RunVerdict sets soakd_run_verdict: 1 for verdict, 0 for every other
// value, all of them always present so a panel never reads "No data" ("" sets
// them all to 0: no run yet).
func (m *Metrics) RunVerdict(verdict kpi.Outcome) {
	for _, v := range []kpi.Outcome{kpi.OutcomePass, kpi.OutcomeFail, kpi.OutcomeInconclusive, kpi.OutcomeAborted, kpi.OutcomeRunning} {
		x := 0.0
		if v == verdict {
			x = 1
		}
		m.runVerdict.WithLabelValues(string(v)).Set(x)
	}
}

// Broker exposes a broker's counters, read from stats once per scrape:
// soakd_broker_subscribers and soakd_broker_{published,delivered,dropped}_events_total.
// A later call replaces the earlier stats function (a new target's broker).
func (m *Metrics) Broker(stats func() donut.BrokerStats) {
	c := newBrokerCollector(stats)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.broker != nil {
		m.reg.Unregister(m.broker)
	}
	m.reg.MustRegister(c)
	m.broker = c
}

// brokerCollector reads one BrokerStats snapshot per scrape, so the four
// series of a scrape come from the same moment.
type brokerCollector struct {
	stats                                      func() donut.BrokerStats
	subscribers, published, delivered, dropped *prometheus.Desc
}

func newBrokerCollector(stats func() donut.BrokerStats) *brokerCollector {
	return &brokerCollector{
		stats:       stats,
		subscribers: prometheus.NewDesc("soakd_broker_subscribers", "Subscriptions registered on the target's event broker now.", nil, nil),
		published:   prometheus.NewDesc("soakd_broker_published_events_total", "Donut update events published to the target's broker.", nil, nil),
		delivered:   prometheus.NewDesc("soakd_broker_delivered_events_total", "Events the broker placed in a subscriber's buffer.", nil, nil),
		dropped:     prometheus.NewDesc("soakd_broker_dropped_events_total", "Events the broker dropped because a subscriber's buffer was full.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (b *brokerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- b.subscribers
	ch <- b.published
	ch <- b.delivered
	ch <- b.dropped
}

// Collect implements prometheus.Collector.
func (b *brokerCollector) Collect(ch chan<- prometheus.Metric) {
	s := b.stats()
	ch <- prometheus.MustNewConstMetric(b.subscribers, prometheus.GaugeValue, float64(s.Subscribers))
	ch <- prometheus.MustNewConstMetric(b.published, prometheus.CounterValue, float64(s.Published))
	ch <- prometheus.MustNewConstMetric(b.delivered, prometheus.CounterValue, float64(s.Delivered))
	ch <- prometheus.MustNewConstMetric(b.dropped, prometheus.CounterValue, float64(s.Dropped))
}

var _ prometheus.Collector = (*brokerCollector)(nil)
