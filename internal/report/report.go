// Package report defines soakd's run report (report.json), renders it as
// report.md and as a terminal table, and writes it atomically. The report is
// plain data: the daemon fills it, this package only shapes and renders it.
package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/internal/extsample"
	"github.com/soakd/soakd/internal/fsutil"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

// SchemaVersion is the version of report.json's layout; it changes only when
// a field changes meaning or disappears.
const SchemaVersion = 1

// Run statuses.
const (
	StatusRunning  = "running"
	StatusComplete = "complete"
	StatusAborted  = "aborted"
)

// Report is report.json.
type Report struct {
	SchemaVersion int    `json:"schema_version"`
	Run           string `json:"run"`
	Profile       string `json:"profile"`
	Description   string `json:"description"`
	// Status is running (a partial report written after each phase),
	// complete or aborted.
	Status string `json:"status"`
	// Verdict is pass or fail once complete, running while Status is
	// running, aborted when the run could not finish.
	Verdict kpi.Outcome `json:"verdict"`
	// Error says why an aborted run stopped.
	Error      string    `json:"error,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// TargetPID is the process that served and was measured; each phase's
	// DriverPID is the process that generated its load. They differ by
	// construction: load is never generated inside the measured process.
	TargetPID int `json:"target_pid"`
	// Target says what was measured: the built-in target or a server soakd
	// does not host, its PID and URLs, and where each resource figure came
	// from; nil in reports written before it existed.
	Target *TargetInfo `json:"target,omitempty"`
	Host   Host        `json:"host"`
	// SamplerIntervalSeconds is the resource sampling period.
	SamplerIntervalSeconds float64 `json:"sampler_interval_seconds"`
	// Compare names the phases the KPIs compare, as they ran.
	Compare Compare `json:"compare"`
	// Arms is what was compared: "rest,graphql", or a self-check
	// ("rest,rest", "graphql,graphql") that measures the noise floor.
	Arms string `json:"arms"`
	// KPIs is the verdict table, one row per metric.
	KPIs []kpi.Result `json:"kpis"`
	// Rounds holds each interleaved REST/GraphQL round's KPI rows when the
	// profile runs more than one; KPIs then aggregates them (median or worst
	// round, as the gate rule says).
	Rounds []Round `json:"rounds,omitempty"`
	// Gate is the rule that turns rounds into the verdict: "median" or "worst".
	Gate string `json:"gate,omitempty"`
	// JUnitInconclusive is how junit.xml shows an inconclusive verdict, as
	// report.junit_inconclusive chose: "failure" (the "run" case fails,
	// type inconclusive) or "skipped"; empty reads as failure.
	JUnitInconclusive string `json:"junit_inconclusive,omitempty"`
	// Checks are the verdict rules other than the KPI rows: the memory
	// profile's rules, exact subscription delivery, error-free compared arms.
	Checks []Check `json:"checks"`
	// Overhead lists the functions where GraphQL spends the most extra CPU
	// per request compared with REST (from the two arms' CPU profiles,
	// merged over the rounds): rows with evidence first, then rows within
	// noise.
	Overhead []OverheadRow `json:"overhead,omitempty"`
	// OverheadBasis is what the Overhead table rests on: rounds, requests
	// and samples; nil when there is no table (or in older reports).
	OverheadBasis *OverheadBasis `json:"overhead_basis,omitempty"`
	// OverheadLayers is the same CPU attributed by layer (transport, parse,
	// validate, execute, …; profiles.Layers); nil when there is no overhead
	// table (or in older reports).
	OverheadLayers *OverheadLayers `json:"overhead_layers,omitempty"`
	// OverheadNotMeasured says why there are no overhead tables when the
	// run compared two arms ("" when they exist, or nothing was compared):
	// no CPU profiles (profiling.cpu off, a target without a pprof
	// endpoint, profiles that failed) or profiling.overhead_top 0.
	OverheadNotMeasured string `json:"overhead_not_measured,omitempty"`
	// Flame is the compared phases' call tree from both arms' merged CPU
	// profiles (profiles.Icicle), drawn in report.html as an icicle of
	// each arm and of the difference; nil without an overhead table.
	Flame *profiles.IcicleNode `json:"flame,omitempty"`
	// OverheadCumulative is the same CPU by cumulative (inclusive) time:
	// each function with everything it called, the functions whose
	// extra is largest, beyond noise first (profiles.CumulativeRounds);
	// SharePercent is of GraphQL's whole extra CPU per request, and rows
	// overlap. Absent without an overhead table or a positive extra.
	OverheadCumulative []OverheadRow `json:"overhead_cumulative,omitempty"`
	// AllocLayers is GraphQL's allocation per request against REST's by
	// layer, from the compared phases' heap profiles; nil without them.
	AllocLayers *AllocLayers `json:"alloc_layers,omitempty"`
	// Pinning records the CPUs the target and the drivers were pinned to;
	// nil when not pinned.
	Pinning *Pinning `json:"pinning,omitempty"`
	// Profiles lists the pprof files captured in the run directory.
	Profiles []string `json:"profiles,omitempty"`
	// ProfileRequests is, for each CPU profile in Profiles (by file
	// name), the requests the phase's drivers completed while it ran
	// (count): what a profile's CPU is divided by to give CPU per request
	// by layer and function (soakd compare's attribution).
	ProfileRequests map[string]int64 `json:"profile_requests,omitempty"`
	// Phases in the order they ran.
	Phases []Phase `json:"phases"`
	// Seed000 is seed 000's table as this run measured it, beside the
	// seed's published figures; nil when no phase ran seed 000's queries.
	Seed000 *Seed000 `json:"seed_000,omitempty"`
	// NoiseFloor names the self-check whose recorded round-to-round spread
	// gave the KPI rows their noise_sd and noise_min_detectable; nil when
	// none was applied (a self-check, no record for the profile, or an
	// unreadable noise-floor.json: the notes say which).
	NoiseFloor *NoiseSource `json:"noise_floor,omitempty"`
	// AB marks the report as one side of an A/B session (soakd ab); nil
	// for a run of its own.
	AB *ABSide `json:"ab,omitempty"`
	// Notes are statements a reader needs to interpret the numbers.
	Notes []string `json:"notes"`
}

// ABSide places a report in an A/B session (soakd ab): two builds of the
// target measured in one session, each phase run on one build and at once
// on the other, alternating which goes first, so a machine that drifts
// during the session drifts under both. soakd compare pairs the two sides'
// rounds (Comparison.Paired).
type ABSide struct {
	// Session is the session's id, the same in both sides' reports.
	Session string `json:"session"`
	// Side is ABOld (the build compared against) or ABNew.
	Side string `json:"side"`
	// Other is the run id of the other side.
	Other string `json:"other"`
	// Duet is set when the session was a duet (soakd ab --duet): both
	// builds ran every phase at the same time, each target with its own
	// driver on its half of the CPUs, the halves swapped between rounds.
	// It lists, phase by phase, which CPUs each side had; empty for a
	// sequential session.
	Duet []DuetPlacement `json:"duet,omitempty"`
	// StartedFirst is true for the side whose target was started first;
	// the order is drawn at random per session, so that a start order
	// fixed by role cannot bias every session the same way.
	StartedFirst bool `json:"started_first"`
	// DuetProcesses is how long a process of each build served the duet:
	// "round" (both targets started afresh before every round after the
	// first, ab.duet's old_pid, new_pid and started_first say which and in
	// what order) or "session" (one process per side); "" for a
	// sequential session.
	DuetProcesses string `json:"duet_processes,omitempty"`
}

// DuetPlacement is where the two sides of a duet ran during one phase:
// each side's target and its driver shared that side's CPUs.
type DuetPlacement struct {
	// Phase is the phase's name, the same on both sides.
	Phase string `json:"phase"`
	// OldCPUs and NewCPUs are the CPUs (kernel numbers) the old and the
	// new side's target and driver were pinned to.
	OldCPUs []int `json:"old_cpus"`
	NewCPUs []int `json:"new_cpus"`
	// OldPID and NewPID are the processes of the old and the new side's
	// targets that served the phase (0 when not known): with
	// compare.duet_processes: round, new processes from round 2 on.
	OldPID int `json:"old_pid,omitempty"`
	NewPID int `json:"new_pid,omitempty"`
	// StartedFirst is the side (old or new) whose target was started
	// afresh first before this phase, the first of its round; "" when the
	// targets were not started afresh before it.
	StartedFirst string `json:"started_first,omitempty"`
}

// Sides of an A/B session.
const (
	ABOld = "old"
	ABNew = "new"
)

// OtherSide names the other side of an A/B session.
func OtherSide(side string) string {
	if side == ABOld {
		return ABNew
	}
	return ABOld
}

// NoiseSource identifies the self-check a run's recorded noise floor came
// from (an entry of data_dir/noise-floor.json).
type NoiseSource struct {
	// Run is the self-check's run id.
	Run string `json:"run"`
	// Arms is the self-check's arms, "rest,rest" or "graphql,graphql".
	Arms string `json:"arms"`
	// Rounds is the most rounds behind any KPI's recorded spread.
	Rounds int `json:"rounds"`
	// RecordedAt is when the self-check finished (UTC).
	RecordedAt time.Time `json:"recorded_at"`
	// AgeSeconds is RecordedAt's age when this run applied it, in seconds.
	AgeSeconds float64 `json:"age_seconds"`
}

// Round is one interleaved pair of a REST and a GraphQL phase.
type Round struct {
	Round   int          `json:"round"`
	REST    string       `json:"rest"`
	GraphQL string       `json:"graphql"`
	KPIs    []kpi.Result `json:"kpis"`
	Verdict kpi.Outcome  `json:"verdict"`
}

// Check is one verdict rule that is not a KPI row.
type Check struct {
	// Group is memory, delivery, errors or rest.
	Group string  `json:"group"`
	Name  string  `json:"name"`
	Title string  `json:"title"`
	Phase string  `json:"phase,omitempty"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	Pass  bool    `json:"pass"`
	// Outcome is pass, fail, inconclusive or not_measured; "" in reports of
	// older versions, where Pass alone is the outcome.
	Outcome kpi.Outcome `json:"outcome,omitempty"`
	// Detail gives the measured figures behind Value in words.
	Detail     string `json:"detail,omitempty"`
	Definition string `json:"definition"`
}

// checkFields is Check without its methods.
type checkFields Check

// MarshalJSON writes a check that was not measured with a null value and
// no pass: its Value (0) is no figure, and it did not pass.
func (c Check) MarshalJSON() ([]byte, error) {
	if c.Outcome != kpi.OutcomeNotMeasured {
		return json.Marshal(checkFields(c))
	}
	return profiles.MarshalWithNulls(checkFields(c), []string{"value"}, "pass")
}

// OverheadRow is one function's self CPU per request in each arm (µs),
// with the profile samples it rests on.
type OverheadRow struct {
	Function            string  `json:"function"`
	RESTMicrosPerReq    float64 `json:"rest_us_per_request"`
	GraphQLMicrosPerReq float64 `json:"graphql_us_per_request"`
	ExtraMicrosPerReq   float64 `json:"extra_us_per_request"`
	// SharePercent is this function's part of all extra CPU per request.
	SharePercent float64 `json:"share_percent"`
	// RESTSamples and GraphQLSamples are the CPU profile samples (count,
	// one per profiling period) of the function's self time in each arm's
	// merged profile.
	RESTSamples    int64 `json:"rest_samples"`
	GraphQLSamples int64 `json:"graphql_samples"`
	// WithinNoise marks a row whose samples cannot tell the arms apart:
	// the larger arm has fewer than 20 samples, or the per-request
	// difference is within 2 Poisson standard deviations
	// (|g/Ng − r/Nr| < 2·sqrt(g/Ng² + r/Nr²), samples r, g over requests
	// Nr, Ng; |g − r| < 2·sqrt(g + r) at equal requests). See
	// profiles.WithinNoise.
	WithinNoise bool `json:"within_noise"`
}

// OverheadLayers is the by-layer table: every CPU sample of each arm's
// merged profile attributed to one layer (profiles.LayerRounds), on the
// same rounds, requests and samples as OverheadBasis.
type OverheadLayers struct {
	// Layers has one row per layer with samples, user layers first, "other"
	// always last and always listed.
	Layers []OverheadLayer `json:"layers"`
	// TotalExtraMicrosPerReq is GraphQL's whole CPU per request minus
	// REST's (µs): the sum of the rows' extra.
	TotalExtraMicrosPerReq float64 `json:"total_extra_us_per_request"`
	// ExplainedPercent is the share of the total extra the named layers
	// (every row but "other") explain; null when the total extra is not
	// positive (nothing to explain).
	ExplainedPercent *float64 `json:"explained_percent"`
}

// AllocLayers is allocation by layer: what each arm's compared phases
// allocated (each phase's heap profile after it minus before it,
// alloc_space, summed over the rounds) attributed to the layer of the
// allocating stack, over the arm's requests.
type AllocLayers struct {
	// Layers has a row per layer that allocated in either arm, "other"
	// last and always listed.
	Layers []AllocLayer `json:"layers"`
	// TotalExtraBytesPerReq is GraphQL's allocation per request in the
	// profiles minus REST's (bytes): the rows' extra summed.
	TotalExtraBytesPerReq float64 `json:"total_extra_bytes_per_request"`
	// ExplainedPercent is the share of a positive total the named layers
	// carry; null otherwise.
	ExplainedPercent *float64 `json:"explained_percent"`
	// Rounds is how many rounds' heap profiles were used.
	Rounds int `json:"rounds"`
}

// AllocLayer is one layer's allocation per request in each arm (bytes).
type AllocLayer struct {
	Layer              string  `json:"layer"`
	RESTBytesPerReq    float64 `json:"rest_bytes_per_request"`
	GraphQLBytesPerReq float64 `json:"graphql_bytes_per_request"`
	ExtraBytesPerReq   float64 `json:"extra_bytes_per_request"`
	// SharePercent is the extra's part of the total extra; null when the
	// total is not positive.
	SharePercent *float64 `json:"share_percent"`
}

// OverheadLayer is one layer's CPU per request in each arm (µs) with its
// Poisson interval, and GraphQL's extra.
type OverheadLayer struct {
	Layer string `json:"layer"`
	// RESTMicrosPerReq is the CPU of the REST arm's samples attributed to
	// the layer over the arm's requests (µs); RESTInterval its exact
	// Poisson (Garwood) interval at ≈95.45 % (2σ), from the sample count.
	RESTMicrosPerReq float64           `json:"rest_us_per_request"`
	RESTInterval     profiles.Interval `json:"rest_interval"`
	// GraphQLMicrosPerReq and GraphQLInterval are the same for GraphQL.
	GraphQLMicrosPerReq float64           `json:"graphql_us_per_request"`
	GraphQLInterval     profiles.Interval `json:"graphql_interval"`
	// RESTAllocMicrosPerReq and GraphQLAllocMicrosPerReq are the part of
	// each arm's figure spent in the allocator on the layer's behalf (µs).
	RESTAllocMicrosPerReq    float64 `json:"rest_alloc_us_per_request"`
	GraphQLAllocMicrosPerReq float64 `json:"graphql_alloc_us_per_request"`
	// ExtraMicrosPerReq is GraphQL − REST (µs); ExtraInterval its interval,
	// extra ± 2·sqrt(r·wr² + g·wg²) (samples r, g weighing wr, wg µs per
	// request each).
	ExtraMicrosPerReq float64           `json:"extra_us_per_request"`
	ExtraInterval     profiles.Interval `json:"extra_interval"`
	// SharePercent is the extra's part of the total extra (negative when
	// the layer costs GraphQL less); null when the total is not positive.
	SharePercent *float64 `json:"share_percent"`
	// RESTSamples and GraphQLSamples are the samples (count) attributed to
	// the layer in each arm.
	RESTSamples    int64 `json:"rest_samples"`
	GraphQLSamples int64 `json:"graphql_samples"`
}

// OverheadBasis is the evidence behind the whole overhead table.
type OverheadBasis struct {
	// Rounds is how many rounds' profiles each arm merged.
	Rounds int `json:"rounds"`
	// RESTRequests and GraphQLRequests are the requests completed while
	// the merged profiles ran, summed over the rounds (count).
	RESTRequests    int64 `json:"rest_requests"`
	GraphQLRequests int64 `json:"graphql_requests"`
	// RESTSamples and GraphQLSamples are the merged profiles' samples
	// (count).
	RESTSamples    int64 `json:"rest_samples"`
	GraphQLSamples int64 `json:"graphql_samples"`
	// SampleRateHz is the profiles' sampling rate (Hz); 0 when unknown.
	SampleRateHz float64 `json:"sample_rate_hz"`
}

// Pinning records CPU affinity.
type Pinning struct {
	// TargetCPUs are the CPUs the target's threads may run on, read back
	// from the kernel at the start of the run.
	TargetCPUs []int `json:"target_cpus"`
	// DriverCPUs are the CPUs the drivers were pinned to (--cpus); empty
	// when they were not pinned and inherited the target's mask.
	DriverCPUs []int `json:"driver_cpus"`
}

// Describe says in one sentence which CPUs the target and the drivers had.
func (p *Pinning) Describe() string {
	drivers := fmt.Sprintf("drivers on CPUs %v", p.DriverCPUs)
	if len(p.DriverCPUs) == 0 {
		drivers = "drivers not pinned (they inherit the target's mask)"
	}
	return fmt.Sprintf("CPU affinity: target on CPUs %v, %s.", p.TargetCPUs, drivers)
}

// Samples is samples.json: the target's time series for a run, kept so
// that `soakd report DIR` can re-render charts.
type Samples struct {
	// PauseBuckets are the GC pause histogram boundaries (seconds) the
	// samples' sparse pause deltas index into.
	PauseBuckets Bounds            `json:"pause_buckets"`
	Samples      []profiles.Sample `json:"samples"`
	// External are the samples of a target soakd does not host, each
	// figure with its source and definition (Samples is then empty: the
	// charts are drawn from the built-in sampler's samples only).
	External []extsample.Sample `json:"external_samples,omitempty"`
}

// Bounds are histogram boundaries. runtime/metrics histograms start at -Inf
// and end at +Inf, which JSON numbers cannot hold: they are written as the
// strings "-Inf" and "+Inf".
type Bounds []float64

// MarshalJSON writes infinities as strings.
func (b Bounds) MarshalJSON() ([]byte, error) {
	out := make([]any, len(b))
	for i, v := range b {
		switch {
		case math.IsInf(v, 1):
			out[i] = "+Inf"
		case math.IsInf(v, -1):
			out[i] = "-Inf"
		default:
			out[i] = v
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (b *Bounds) UnmarshalJSON(data []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := make(Bounds, len(raw))
	for i, r := range raw {
		var s string
		if json.Unmarshal(r, &s) == nil {
			switch s {
			case "+Inf":
				out[i] = math.Inf(1)
			case "-Inf":
				out[i] = math.Inf(-1)
			default:
				return fmt.Errorf("bound %d: %q is not a number or ±Inf", i, s)
			}
			continue
		}
		if err := json.Unmarshal(r, &out[i]); err != nil {
			return fmt.Errorf("bound %d: %w", i, err)
		}
	}
	*b = out
	return nil
}

// Target kinds (TargetInfo.Kind).
const (
	// TargetBuiltin is soakd's own GraphQL and REST target, in its process.
	TargetBuiltin = "builtin"
	// TargetAttach is a running server soakd attached to by PID.
	TargetAttach = "attach"
	// TargetCommand is a server soakd started from a command line.
	TargetCommand = "command"
	// TargetKubernetes is a service's replicas in a cluster, found by
	// label selector.
	TargetKubernetes = "kubernetes"
)

// TargetInfo describes the server a run measured.
type TargetInfo struct {
	// Kind is builtin, attach or command.
	Kind string `json:"kind"`
	// Scenario is what the built-in target serves besides the Donut arms:
	// donut (nothing more) or relational (seed 000's endpoints); "" for a
	// target soakd does not host.
	Scenario string `json:"scenario,omitempty"`
	// PID is the measured process (soakd's own for builtin). For a target
	// soakd does not host it is the process holding the socket the GraphQL
	// URL's host:port listens on (or the nearest common ancestor of the
	// processes holding it), which may be a child of the process soakd
	// started or was given (GivenPID); the OS figures are summed over it and
	// every process under it (Processes).
	PID int `json:"pid"`
	// GivenPID is the process soakd was given (target.pid, the pid in
	// target.pid_file) or started (target.argv), when it is not PID.
	GivenPID int `json:"given_pid,omitempty"`
	// Processes are the target's processes when it started: PID and every
	// process under it (Sampled), and above it up to the process soakd was
	// given or started when that is a launcher of PID.
	Processes []ProcessInfo `json:"processes,omitempty"`
	// ListenerCheck says how PID was found to be the server that answers:
	// "verified" (it holds the listening socket), or why that could not be
	// checked (a URL off this machine, no permission to see the socket's
	// holder).
	ListenerCheck string `json:"listener_check,omitempty"`
	// GraphQLURL is the GraphQL endpoint, GraphQLWSURL its websocket URL,
	// RESTURL the base of the REST twin (/api/donuts/{id} below it).
	GraphQLURL   string `json:"graphql_url"`
	GraphQLWSURL string `json:"graphql_ws_url"`
	RESTURL      string `json:"rest_url"`
	// MetricsURL is the Prometheus endpoint the runtime figures were
	// scraped from ("" when none: builtin reads runtime/metrics in process,
	// an external target without one has no runtime figures).
	MetricsURL string `json:"metrics_url,omitempty"`
	// PprofURL is where heap profiles and goroutine dumps were fetched from
	// ("" when none was).
	PprofURL string `json:"pprof_url,omitempty"`
	// Runtime is go, node, dotnet or jvm ("" when not known), and
	// RuntimeBasis how it was told (set in the config, detected from a
	// series).
	Runtime      string `json:"runtime,omitempty"`
	RuntimeBasis string `json:"runtime_basis,omitempty"`
	// Argv is the command soakd started (kind command).
	Argv []string `json:"argv,omitempty"`
	// Exit is how a command target's process ended, once it has ("exit
	// status 2", "signal: killed").
	Exit string `json:"exit,omitempty"`
	// Figures says, per resource figure (named as in phases[].resources),
	// where it comes from and what it is; a figure the target does not give
	// is not measured, with the reason.
	Figures []FigureSource `json:"figures"`

	// Namespace and Selector (kind kubernetes) find the service's
	// replicas: the pods the label selector matches in the namespace.
	Namespace string `json:"namespace,omitempty"`
	Selector  string `json:"selector,omitempty"`
	// ScrapeVia (kind kubernetes) is how each replica's metrics endpoint
	// was reached: api_server (the API server's pod proxy) or pod_ip.
	ScrapeVia string `json:"scrape_via,omitempty"`
	// Replicas (kind kubernetes) are the pods sampled at the run's end
	// (at its start when the report is written before): every resource
	// figure is the sum over them.
	Replicas []ReplicaInfo `json:"replicas,omitempty"`
	// ReplicaEvents (kind kubernetes) are the replicas that restarted,
	// left or joined during the run: a window across one is not measured.
	ReplicaEvents []ReplicaEvent `json:"replica_events,omitempty"`
	// CPUCapacityCores (kind kubernetes) is the sum of the replicas' CPU
	// limits, in cores: what cpu_machine_percent is a share of. Absent
	// when a replica has no CPU limit (the share is then not measured).
	CPUCapacityCores *float64 `json:"cpu_capacity_cores,omitempty"`
}

// ReplicaInfo is one replica of a kind kubernetes target.
type ReplicaInfo struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	UID       string `json:"uid"`
	// Node is the node the pod runs on, PodIP its address.
	Node  string `json:"node,omitempty"`
	PodIP string `json:"pod_ip,omitempty"`
	// MetricsURL is the URL its figures were scraped from.
	MetricsURL string `json:"metrics_url"`
	// Restarts is the sum of its containers' restart counts, last seen.
	Restarts int32 `json:"restarts"`
	// CPULimitCores is the sum of its containers' CPU limits, in cores; 0
	// when a container has none.
	CPULimitCores float64 `json:"cpu_limit_cores"`
}

// ReplicaEvent is a change of a kind kubernetes target's replica set.
type ReplicaEvent struct {
	Time time.Time `json:"time"`
	Pod  string    `json:"pod"`
	// Event is restarted, left or joined.
	Event string `json:"event"`
	// Detail says what was seen (the restart count, the pod's phase).
	Detail string `json:"detail"`
}

// ProcessInfo is one process of a target's sampled tree.
type ProcessInfo struct {
	PID  int `json:"pid"`
	PPID int `json:"ppid"`
	// Comm is the executable's name as the kernel keeps it (15 bytes at most).
	Comm string `json:"comm"`
	// Cmdline is its command line (200 bytes at most).
	Cmdline string `json:"cmdline,omitempty"`
	// HoldsListener is true for a process holding the socket the GraphQL
	// URL's host:port listens on.
	HoldsListener bool `json:"holds_listener,omitempty"`
	// Sampled is true for the processes whose OS figures are summed: PID
	// and every process under it.
	Sampled bool `json:"sampled"`
}

// FigureSource is one resource figure's provenance.
type FigureSource struct {
	// Name is the figure, as phases[].resources names it (cpu_seconds,
	// gc_percent, heap_live_bytes, ...).
	Name string `json:"name"`
	// Source is where the value is read: "os: gopsutil, pid 1234",
	// "series go_gc_heap_live_bytes", "runtime/metrics /gc/heap/live:bytes".
	Source string `json:"source"`
	// Definition says in one line what the value is.
	Definition string `json:"definition"`
	// Measured is false when the target does not give the figure; Reason
	// says why.
	Measured bool   `json:"measured"`
	Reason   string `json:"reason,omitempty"`
}

// External reports whether the target is a server soakd does not host.
func (t *TargetInfo) External() bool { return t != nil && t.Kind != "" && t.Kind != TargetBuiltin }

// Describe says in one line what was measured.
func (t *TargetInfo) Describe() string {
	if t == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Target: %s, pid %d; GraphQL %s (websocket %s), REST %s", t.Kind, t.PID, t.GraphQLURL, t.GraphQLWSURL, t.RESTURL)
	if t.MetricsURL != "" {
		fmt.Fprintf(&b, ", metrics %s", t.MetricsURL)
	}
	if t.Runtime != "" {
		fmt.Fprintf(&b, "; runtime %s", t.Runtime)
		if t.RuntimeBasis != "" {
			fmt.Fprintf(&b, " (%s)", t.RuntimeBasis)
		}
	}
	if len(t.Argv) > 0 {
		fmt.Fprintf(&b, "; command %q", t.Argv)
	}
	if t.Exit != "" {
		fmt.Fprintf(&b, "; exited: %s", t.Exit)
	}
	b.WriteString(".")
	return b.String()
}

// Host describes where the run happened.
type Host struct {
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Soakd      string `json:"soakd_version"`
}

// Compare names the phases of the two compared arms under the names they
// ran (in a partial report, will run) under. REST is the first arm's phase
// and GraphQL the second's; in a self-check both arms are the same API (see
// Report.Arms) and the second is a copy of the first named "<name>-b". REST
// and GraphQL are base names: with several rounds each arm runs as
// "<name>#<round>", and RESTPhases and GraphQLPhases list the phases as
// they ran, in round order (with one round, just the base name).
type Compare struct {
	REST          string   `json:"rest"`
	GraphQL       string   `json:"graphql"`
	RESTPhases    []string `json:"rest_phases,omitempty"`
	GraphQLPhases []string `json:"graphql_phases,omitempty"`
}

// Ran returns the phases each arm ran under, in round order. A report
// written before the lists existed gives the base names.
func (c Compare) Ran() (first, second []string) {
	first, second = c.RESTPhases, c.GraphQLPhases
	if len(first) == 0 && c.REST != "" {
		first = []string{c.REST}
	}
	if len(second) == 0 && c.GraphQL != "" {
		second = []string{c.GraphQL}
	}
	return first, second
}

// NoControlGroup reports whether the GraphQL arm ran alone, with no REST
// phase to compare with (arms "graphql").
func (r *Report) NoControlGroup() bool { return r.Arms == "graphql" }

// SelfCheck reports whether both arms ran the same API.
func (r *Report) SelfCheck() bool {
	a, b, ok := strings.Cut(r.Arms, ",")
	return ok && a == b
}

// ArmTitles names the two compared arms for people: "REST" and "GraphQL",
// or in a self-check the one API twice, e.g. "REST" and "REST (copy)".
func (r *Report) ArmTitles() (first, second string) {
	if !r.SelfCheck() {
		return "REST", "GraphQL"
	}
	a, _, _ := strings.Cut(r.Arms, ",")
	title := map[string]string{"rest": "REST", "graphql": "GraphQL"}[a]
	if title == "" {
		title = a
	}
	return title, title + " (copy)"
}

// Phase is one phase's results: the driver's view (requests, latency) and
// the target's (resources over the steady window).
type Phase struct {
	Name      string `json:"name"`
	Arm       string `json:"arm"`
	DriverPID int    `json:"driver_pid"`
	// Model is closed (users with think time: latency is service time),
	// open (arrival rate: latency from the intended send time) or ramping
	// (users added until failure).
	Model           string    `json:"model"`
	Start           time.Time `json:"start"`
	End             time.Time `json:"end"`
	DurationSeconds float64   `json:"duration_seconds"`
	// SteadyStart and SteadyEnd bound the steady window: all users active,
	// less the profile's trim_head and trim_tail.
	SteadyStart    time.Time `json:"steady_start"`
	SteadyEnd      time.Time `json:"steady_end"`
	SteadyFallback string    `json:"steady_fallback,omitempty"`
	Requests       int64     `json:"requests"`
	Errors         int64     `json:"errors"`
	// ErrorsByClass counts failed requests by class (http_500, timeout,
	// connection_refused, graphql_error, payload_mismatch, ...).
	ErrorsByClass map[string]int64    `json:"errors_by_class"`
	ErrorExamples map[string][]string `json:"error_examples,omitempty"`
	// ThroughputRPS is requests completed per second in the steady window.
	ThroughputRPS float64 `json:"throughput_rps"`
	// LatencyMs summarises every request of the phase, in milliseconds.
	LatencyMs  workloads.Latency `json:"latency_ms"`
	Operations []Operation       `json:"operations"`
	// Resources are the target's figures over the steady window; nil when
	// they could not be computed (ResourcesError says why).
	Resources      *profiles.Summary `json:"resources"`
	ResourcesError string            `json:"resources_error,omitempty"`
	// ResourceFigures are, for a target soakd does not host, the external
	// sampler's figures over the same window, each with its source,
	// definition and, when not measured, the reason (Resources is derived
	// from them); nil for the built-in target.
	ResourceFigures *extsample.Window `json:"resource_figures,omitempty"`
	// PerRequest are the target's costs per completed request.
	PerRequest PerRequest `json:"per_request"`
	// DriverCPUPercent is the driver process's CPU time over its lifetime
	// (the phase plus subscription setup and drain) as a share of the machine: high values mean the load generator competed
	// with the target. Null when the drivers ran where soakd cannot see
	// their processes (drivers.backend: kubernetes; their own figures are
	// in DriverShards).
	DriverCPUPercent *float64 `json:"driver_cpu_percent"`
	// DriverShards lists, when the phase ran sharded drivers
	// (drivers.shards above 1), each driver process: its shard, pid,
	// requests and CPU; absent with one driver. DriverPID is then shard
	// 0's, and DriverCPUPercent their CPU together over the longest
	// lifetime.
	DriverShards []DriverShard `json:"driver_shards,omitempty"`
	// Open holds the open model's schedule figures (intended and achieved
	// rate, dropped and late requests, service time); nil otherwise.
	Open *workloads.OpenResult `json:"open,omitempty"`
	// MaxLoad holds a ramping phase's outcome: why it stopped, the best
	// sustained throughput before that and the target at that peak.
	MaxLoad *MaxLoad `json:"max_load,omitempty"`
	// Subscriptions is the delivery of subscription events during the
	// phase; nil when it opened none.
	Subscriptions *workloads.SubscriptionResult `json:"subscriptions,omitempty"`
	// DriverSeries is the driver's progress over the phase (requests,
	// errors, active users and the interval's latency about once a
	// second) for report.html's charts; nil when the driver sent no
	// progress report (or in older reports).
	DriverSeries *DriverSeries `json:"driver_series,omitempty"`
	// Database is the phase's database work on the relational scenario
	// (target.scenario relational); nil on any other target.
	Database *Database `json:"database,omitempty"`
	// After is the target once the phase has settled; nil for an
	// interrupted phase.
	After   *After `json:"after"`
	Aborted bool   `json:"aborted"`
}

// After is the target's state once a phase has ended and settled (settle
// period, then a forced GC): the check that the phase released what it took.
type After struct {
	// BaselineGoroutines and BaselineHeapLiveBytes were sampled just before
	// the phase, after a forced GC.
	BaselineGoroutines    uint64 `json:"baseline_goroutines"`
	BaselineHeapLiveBytes uint64 `json:"baseline_heap_live_bytes"`
	// Goroutines, HeapLiveBytes and Subscribers were sampled after the
	// settle period and a forced GC.
	Goroutines    uint64 `json:"goroutines"`
	HeapLiveBytes uint64 `json:"heap_live_bytes"`
	Subscribers   int    `json:"subscribers"`
	// GoroutineAnalogue names what Goroutines and BaselineGoroutines count
	// on a runtime without goroutines: "active handles" on Node (libuv
	// handles, prom-client's nodejs_active_handles_total: the sockets,
	// timers and servers a finished phase must release). Absent: goroutines.
	GoroutineAnalogue string `json:"goroutine_analogue,omitempty"`
	// Returned is true when no subscription is left open and goroutines
	// (or their analogue) are back within 2 of the baseline.
	Returned bool `json:"returned"`
	// ReturnedNotMeasured is why Returned could not be judged (the
	// goroutine count, or its analogue, was not measured before or after
	// the phase); Returned is then false and printed "not measured", never
	// "no" and never "yes". Empty when it was judged.
	ReturnedNotMeasured string `json:"returned_not_measured,omitempty"`
	// NotMeasured names the figures above that could not be read, with the
	// reason (goroutines, heap_live_bytes, subscribers of a target soakd
	// does not host); their values are 0 and mean nothing. Empty for the
	// built-in target.
	NotMeasured map[string]string `json:"not_measured,omitempty"`
	// NoForcedGC is true when no GC could be forced before the samples
	// (a target soakd does not host): its live heap is as of its own last
	// GC cycle.
	NoForcedGC bool `json:"no_forced_gc,omitempty"`
	// ReturnedAfterSeconds is when, during the settle period, the target
	// first looked returned; -1 if it never did.
	ReturnedAfterSeconds float64 `json:"returned_after_seconds"`
	SettleSeconds        float64 `json:"settle_seconds"`
}

// DriverPIDs names the phase's driver processes for a table cell: its one
// pid, or with sharded drivers every shard's pid and their count
// ("101, 102, 103 (3 shards)").
func (p Phase) DriverPIDs() string {
	if len(p.DriverShards) == 0 {
		return strconv.Itoa(p.DriverPID)
	}
	pids := make([]string, len(p.DriverShards))
	for i, s := range p.DriverShards {
		pids[i] = strconv.Itoa(s.PID)
	}
	return fmt.Sprintf("%s (%d shards)", strings.Join(pids, ", "), len(p.DriverShards))
}

// MaxLoad is the driver's max-load outcome plus the target's resources over
// the peak window.
type MaxLoad struct {
	workloads.MaxLoadResult
	// PeakResources are the target's figures over the peak window (CPU and
	// RSS at the maximum sustained throughput); nil with PeakResourcesError
	// when they could not be computed.
	PeakResources      *profiles.Summary `json:"peak_resources"`
	PeakResourcesError string            `json:"peak_resources_error,omitempty"`
	// Knee says whose limit the phase found (the target, the driver, the
	// shared machine, or none) and what ran out, at what users and
	// throughput; only a knee attributed to the target says anything about
	// the server.
	Knee *kpi.Knee `json:"knee,omitempty"`
	// Chart is the knee chart's data: per second of the ramp, users,
	// throughput, p99, errors and both the driver's and the target's CPU
	// utilisation (shares of their own CPUs).
	Chart []kpi.KneePoint `json:"chart,omitempty"`
}

// Operation is one user group's share of a phase.
type Operation struct {
	Operation  string            `json:"operation"`
	Users      int               `json:"users"`
	Iterations int               `json:"iterations"`
	Requests   int64             `json:"requests"`
	Errors     int64             `json:"errors"`
	LatencyMs  workloads.Latency `json:"latency_ms"`
}

// PerRequest are costs per completed request over the steady window: the
// fair comparison when the arms reach different throughputs. Each is a rate
// of the target (per second) divided by the throughput (requests per second).
type PerRequest struct {
	CPUMicros         float64 `json:"cpu_us"`
	AllocBytes        float64 `json:"alloc_bytes"`
	AllocObjects      float64 `json:"alloc_objects"`
	GCCyclesPer10kReq float64 `json:"gc_cycles_per_10k"`
	// NotMeasured names the figures above that were not measured, with the
	// reason; they are written as null (MarshalJSON), never as 0.
	NotMeasured map[string]string `json:"not_measured,omitempty"`
}

// DriverShard is one of a phase's sharded driver processes.
type DriverShard struct {
	// Shard is its index, from 0 (`soakd drive --shard Shard/N`).
	Shard int `json:"shard"`
	// PID is its process id (in a pod, the id inside the pod).
	PID int `json:"pid"`
	// Pod is its pod, "namespace/name", when the Kubernetes backend ran it.
	Pod string `json:"pod,omitempty"`
	// Requests is the requests it completed, its share of the phase's.
	Requests int64 `json:"requests"`
	// CPUSeconds is its CPU time (user + system) over its lifetime, in
	// seconds, from the OS once it exited; null where soakd cannot see
	// the process (a pod).
	CPUSeconds *float64 `json:"cpu_seconds"`
	// CPUPercent is CPUSeconds as a share of the machine over its own
	// lifetime, in percent of all cores; null with CPUSeconds.
	CPUPercent *float64 `json:"cpu_percent"`
	// LoadCPUSeconds is the CPU time it reported itself (getrusage) from
	// its load's start (start_at: not its wait for it) to its result, in
	// seconds; null when it did not report one.
	LoadCPUSeconds *float64 `json:"load_cpu_seconds"`
	// LoadCPUCorePercent is LoadCPUSeconds over its load's length, in
	// percent of one core (100: one core busy all along): the figure that
	// says whether a driver was the limit, wherever it ran.
	LoadCPUCorePercent *float64 `json:"load_cpu_core_percent"`
	// EndSeconds is when its load ended, in seconds after the phase's
	// common start (start_at); null without its result. The shards of a
	// max-load phase stopped by the merged windows end within about a
	// second of each other.
	EndSeconds *float64 `json:"end_seconds"`
}

// perRequestFields is PerRequest without its methods.
type perRequestFields PerRequest

// MarshalJSON writes a figure named in NotMeasured as null.
func (p PerRequest) MarshalJSON() ([]byte, error) {
	return profiles.MarshalWithNulls(perRequestFields(p), slices.Sorted(maps.Keys(p.NotMeasured)))
}

// NewPhase combines a driver result with the target's resource summary.
// sum may be nil when the resources could not be summarised.
func NewPhase(r workloads.Result, sum *profiles.Summary, sumErr error) Phase {
	p := Phase{
		Name: r.Phase, Arm: r.Arm, DriverPID: r.DriverPID,
		Start: r.Start, End: r.End, DurationSeconds: r.DurationSeconds,
		SteadyStart: r.SteadyStart, SteadyEnd: r.SteadyEnd,
		Requests: r.Requests, Errors: r.Errors,
		ErrorsByClass: r.ErrorsByClass, ErrorExamples: r.ErrorExamples,
		ThroughputRPS: r.ThroughputRPS, LatencyMs: r.LatencyMs,
		Resources: sum, Aborted: r.Aborted, Model: string(r.Model),
		Subscriptions: r.Subscriptions,
	}
	if p.Model == "" {
		p.Model = string(workloads.Closed)
	}
	if r.Open != nil {
		o := *r.Open
		o.ServiceHistogram = nil // kept in the driver's output, too bulky for a report
		p.Open = &o
	}
	if p.ErrorsByClass == nil {
		p.ErrorsByClass = map[string]int64{}
	}
	if r.SteadyFallback {
		p.SteadyFallback = r.SteadyFallbackReason
	}
	if sumErr != nil {
		p.ResourcesError = sumErr.Error()
	}
	for _, op := range r.Operations {
		p.Operations = append(p.Operations, Operation{
			Operation: string(op.Operation), Users: op.Users, Iterations: op.Iterations,
			Requests: op.Requests, Errors: op.Errors, LatencyMs: op.LatencyMs,
		})
	}
	p.PerRequest = perRequest(sum, r.ThroughputRPS)
	return p
}

// perRequest divides the target's rates by the throughput; zero when either
// is unknown.
func perRequest(s *profiles.Summary, rps float64) PerRequest {
	if s == nil || rps <= 0 || s.WindowSeconds <= 0 {
		return PerRequest{}
	}
	perSec := func(v float64) float64 { return v / s.WindowSeconds / rps }
	pr := PerRequest{
		AllocBytes:        perSec(float64(s.AllocBytes)),
		AllocObjects:      perSec(float64(s.AllocObjects)),
		GCCyclesPer10kReq: perSec(float64(s.GCCycles)) * 10_000,
	}
	if s.CPUKnown {
		pr.CPUMicros = perSec(s.CPUSeconds) * 1e6
	}
	for fig, key := range map[string]string{"cpu_seconds": "cpu_us", "alloc_bytes": "alloc_bytes", "alloc_objects": "alloc_objects", "gc_cycles": "gc_cycles_per_10k"} {
		if why, ok := s.NotMeasured[fig]; ok {
			if pr.NotMeasured == nil {
				pr.NotMeasured = map[string]string{}
			}
			pr.NotMeasured[key] = why
		}
	}
	return pr
}

// Figures extracts what the KPIs compare from a phase.
//
// A figure the phase could not measure is listed in NotMeasured with the
// reason, so the KPI row says "not measured" instead of comparing a 0.
func (p Phase) Figures() kpi.Figures {
	f := kpi.Figures{
		ThroughputRPS:        p.ThroughputRPS,
		CPUMicrosPerRequest:  p.PerRequest.CPUMicros,
		AllocBytesPerRequest: p.PerRequest.AllocBytes,
		NotMeasured:          map[string]string{},
	}
	miss := func(why string, names ...string) {
		for _, n := range names {
			if _, ok := f.NotMeasured[n]; !ok {
				f.NotMeasured[n] = why
			}
		}
	}
	all := []string{"cpu_machine_percent", "cpu_core_percent", "gc_percent", "throughput_rps", "cpu_us_per_request", "alloc_bytes_per_request", "gc_pause_p99_ms"}
	if p.SteadyFallback != "" {
		miss(fmt.Sprintf("phase %s had no steady window (%s)", p.Name, p.SteadyFallback), all...)
	}
	if p.ThroughputRPS <= 0 {
		miss(fmt.Sprintf("phase %s completed no request in its steady window", p.Name), all...)
	}
	s := p.Resources
	if s == nil {
		why := p.ResourcesError
		if why == "" {
			why = "no resource summary"
		}
		miss(fmt.Sprintf("phase %s: %s", p.Name, why), "cpu_machine_percent", "cpu_core_percent", "gc_percent", "cpu_us_per_request", "alloc_bytes_per_request", "gc_pause_p99_ms")
		return f
	}
	// A figure the target does not give (an external target's runtime)
	// says so with its reason, before the generic reasons below.
	for _, m := range []struct {
		figure string
		kpis   []string
	}{
		{"cpu_seconds", []string{"cpu_machine_percent", "cpu_core_percent", "cpu_us_per_request"}},
		{"cpu_machine_percent", []string{"cpu_machine_percent"}},
		{"gc_percent", []string{"gc_percent"}},
		{"alloc_bytes", []string{"alloc_bytes_per_request"}},
		{"gc_pause_p99_ms", []string{"gc_pause_p99_ms"}},
	} {
		if why, ok := s.NotMeasured[m.figure]; ok {
			miss(fmt.Sprintf("phase %s: %s not measured: %s", p.Name, m.figure, why), m.kpis...)
		}
	}
	f.CPUMachinePercent = s.CPUMachinePercent
	f.CPUCorePercent = s.CPUCorePercent
	f.GCPercent = s.GCPercent
	f.GCPauseP99Ms = s.GCPauseP99Ms
	if !s.CPUKnown {
		miss(fmt.Sprintf("phase %s: fewer than two samples had OS CPU times", p.Name), "cpu_machine_percent", "cpu_core_percent", "cpu_us_per_request")
	}
	if !s.GCPercentKnown {
		miss(fmt.Sprintf("phase %s: the runtime's CPU classes did not advance in the window", p.Name), "gc_percent")
	}
	if s.GCPauses == 0 {
		miss(fmt.Sprintf("phase %s: no GC pause in the steady window", p.Name), "gc_pause_p99_ms")
	}
	return f
}

// PhaseNamed returns the phase called name.
func (r *Report) PhaseNamed(name string) (Phase, bool) {
	for _, p := range r.Phases {
		if p.Name == name {
			return p, true
		}
	}
	return Phase{}, false
}

// Files written into a run directory.
const (
	JSONFile     = "report.json"
	MarkdownFile = "report.md"
	SamplesFile  = "samples.json"
	JUnitFile    = "junit.xml"
	HTMLFile     = "report.html"
	// RESTCPUFile and GraphQLCPUFile are the compared phases' CPU profiles
	// merged over the rounds the overhead table used, so that
	// go tool pprof -diff_base rest.cpu.pb.gz graphql.cpu.pb.gz shows what
	// the table shows.
	RESTCPUFile    = "rest.cpu.pb.gz"
	GraphQLCPUFile = "graphql.cpu.pb.gz"
)

// Write stores report.json, report.md, junit.xml and report.html in dir,
// and samples.json when s is not nil, each atomically.
func (r *Report) Write(dir string, s *Samples) error {
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("cannot encode the report: %w", err)
	}
	if s != nil {
		sj, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("cannot encode the samples: %w", err)
		}
		if err := fsutil.WriteFile(filepath.Join(dir, SamplesFile), sj, 0o644); err != nil {
			return err
		}
	}
	junit, err := r.JUnit()
	if err != nil {
		return err
	}
	html, err := r.HTML(s)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{JSONFile, append(js, '\n')}, {MarkdownFile, []byte(r.Markdown())}, {JUnitFile, junit}, {HTMLFile, html}} {
		if err := fsutil.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// ReadSamples loads a samples.json.
func ReadSamples(path string) (*Samples, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read samples: %w", err)
	}
	var s Samples
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("cannot decode %s: %w", path, err)
	}
	return &s, nil
}

// Read loads a report.json as soakd's own history does: any JSON object
// soakd wrote, a partial one included.
func Read(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read report: %w", err)
	}
	return Unmarshal(b, path)
}

// Unmarshal decodes a report.json's text as Read does (any JSON object
// soakd wrote, a partial one included), what naming it in errors.
func Unmarshal(b []byte, what string) (*Report, error) {
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("cannot decode %s: %w", what, err)
	}
	return &r, nil
}

// ReadStrict loads a report.json given by a user (soakd compare, soakd
// report): see Decode.
func ReadStrict(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read report: %w", err)
	}
	return Decode(b, path)
}

// Decode decodes a report.json's text, what naming it in errors. It
// refuses what is not a report soakd can read: not a JSON object (null, a
// list), one without schema_version, run and status (`{}` compared as an
// empty run before), and a schema_version other than SchemaVersion (a newer
// soakd's layout would be read wrong without a word).
func Decode(b []byte, what string) (*Report, error) {
	var r *Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("cannot decode %s: %w", what, err)
	}
	switch {
	case r == nil:
		return nil, fmt.Errorf("%s is not a soakd report.json: it holds null", what)
	case r.SchemaVersion == 0:
		return nil, fmt.Errorf("%s is not a soakd report.json: it has no schema_version", what)
	case r.SchemaVersion != SchemaVersion:
		return nil, fmt.Errorf("%s has schema_version %d, which this soakd (%d) cannot read: compare it with the soakd that wrote it", what, r.SchemaVersion, SchemaVersion)
	case r.Run == "" || r.Status == "":
		return nil, fmt.Errorf("%s is not a complete soakd report.json: it lacks %s", what, missingKeys(r))
	}
	return r, nil
}

// missingKeys names the identifying keys a decoded report lacks.
func missingKeys(r *Report) string {
	var m []string
	if r.Run == "" {
		m = append(m, "run")
	}
	if r.Status == "" {
		m = append(m, "status")
	}
	return strings.Join(m, " and ")
}

// Database is a phase's database work on the relational scenario, from the
// built-in target's own tally (relational.Tally: every query timed from the
// driver call that sends it until its result is closed, pool waits
// included), read before and after the phase's driver ran: every request
// of the phase, not only the steady window's. Per request is per request
// the driver completed, failed ones included; a chatty operation's calls
// are one request (CallsPerRequest says how many HTTP requests each was).
type Database struct {
	// Endpoints are the scenario's endpoints that served the phase
	// (graphql_naive, graphql_batched, graphql_joined, rest).
	Endpoints []string `json:"endpoints"`
	// HTTPRequests, Queries, Rows and Seconds are the phase's totals:
	// requests those endpoints served, SQL queries they ran, rows the
	// queries returned, seconds spent in them (queries at once each count
	// their own time).
	HTTPRequests int64   `json:"http_requests"`
	Queries      int64   `json:"queries"`
	Rows         int64   `json:"rows"`
	Seconds      float64 `json:"seconds"`
	// Per request of the driver: HTTP calls, queries, rows and database
	// time in milliseconds.
	CallsPerRequest   float64 `json:"calls_per_request"`
	QueriesPerRequest float64 `json:"queries_per_request"`
	RowsPerRequest    float64 `json:"rows_per_request"`
	MsPerRequest      float64 `json:"db_ms_per_request"`
	// NotMeasured says why the per-request figures were not measured
	// (their values are then 0 and mean nothing); "" when they were.
	NotMeasured string `json:"not_measured,omitempty"`
}
