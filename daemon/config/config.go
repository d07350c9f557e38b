package config

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/extsample"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/pin"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

// Config is the whole of soakd's configuration. The embedded config.yaml at
// the repository root holds the defaults; a user's file is decoded on top of
// it, so a user file names only what it changes (a profile given in a user
// file replaces the embedded profile of the same name as a whole).
type Config struct {
	Target    TargetConfig    `yaml:"target"`
	Server    ServerConfig    `yaml:"server"`
	GraphQL   GraphQLConfig   `yaml:"graphql"`
	Data      DataConfig      `yaml:"data"`
	Sampler   SamplerConfig   `yaml:"sampler"`
	KPIs      KPIConfig       `yaml:"kpis"`
	Memory    MemoryConfig    `yaml:"memory"`
	Profiling ProfilingConfig `yaml:"profiling"`
	Pinning   PinningConfig   `yaml:"pinning"`
	Compare   CompareConfig   `yaml:"compare"`
	Metrics   MetricsConfig   `yaml:"metrics"`
	Inject    InjectConfig    `yaml:"inject"`
	// Relational configures target.scenario relational (docs/target.md, "The relational scenario").
	Relational RelationalConfig `yaml:"relational"`
	DataDir    string           `yaml:"data_dir"`
	Retention  RetentionConfig  `yaml:"retention"`
	Report     ReportConfig     `yaml:"report"`
	Soak       SoakConfig       `yaml:"soak"`
	// Schedules are the runs `soakd serve` starts on cron schedules
	// (docs/operations.md, "Scheduled runs").
	Schedules []ScheduleConfig `yaml:"schedules"`
	API       APIConfig        `yaml:"api"`
	// KubernetesDrivers is the Kubernetes driver backend's settings.
	KubernetesDrivers KubernetesDriversConfig `yaml:"kubernetes_drivers"`
	// Operations are what phases' user groups send and subscriptions open,
	// by name (docs/configuration.md, "Operations"); the embedded config.yaml defines the
	// built-in target's. A user file's operation replaces the embedded one
	// of the same name as a whole.
	Operations     map[workloads.Operation]workloads.OperationDef `yaml:"operations"`
	DefaultProfile string                                         `yaml:"default_profile"`
	Profiles       map[string]Profile                             `yaml:"profiles"`

	// CSVFiles describes every CSV file an operation's data reads, by its
	// absolute path: validated when the configuration is loaded (loadCSV)
	// without keeping its values, and sent to the driver in the phase spec,
	// which reads the values from the file.
	CSVFiles map[string]workloads.CSVFile `yaml:"-"`

	// Warnings are what loading the configuration had to say without
	// refusing it (a deprecated key, say); commands log each one.
	Warnings []string `yaml:"-"`
}

// TargetConfig selects the server a run measures: soakd's built-in target
// (the default), a running server attached to by PID, or a server soakd
// starts from a command line. The server must answer the donut API
// (docs/target.md, "The target's API"): GraphQL at GraphQLURL, the REST twin under RESTURL.
type TargetConfig struct {
	// Kind is builtin (soakd hosts GraphQL and REST, in a process of its
	// own), attach (a running process, by PID) or command (soakd starts it).
	Kind string `yaml:"kind"`
	// Scenario (builtin) is what the built-in target serves besides the
	// Donut schema and its REST control group, which it always serves:
	// ScenarioDonut (nothing more) or ScenarioRelational (seed 000's
	// relational data, configured under relational:).
	Scenario string `yaml:"scenario"`
	// InProcess (builtin) runs the built-in target inside the orchestrating
	// soakd process instead of its own `soakd target` child: its heap
	// then also holds the reports, logs and driver results (for comparison).
	InProcess bool `yaml:"in_process"`
	// GraphQLURL is the GraphQL endpoint (http or https), e.g.
	// http://127.0.0.1:4000/graphql.
	GraphQLURL string `yaml:"graphql_url"`
	// GraphQLWSURL is its websocket URL for subscriptions (ws or wss);
	// empty: GraphQLURL with a ws scheme.
	GraphQLWSURL string `yaml:"graphql_ws_url"`
	// RESTURL is the base URL of the REST twin: it serves
	// RESTURL/api/donuts/{id}. It may be another server than GraphQL's,
	// or none (""): then only profiles with no REST phase can run.
	RESTURL string `yaml:"rest_url"`
	// MetricsURL is the target's Prometheus endpoint, scraped for its
	// runtime figures (GC, allocation, heap); empty: OS figures only.
	MetricsURL string `yaml:"metrics_url"`
	// PprofURL is a Go target's /debug/pprof/ base; when set, heap
	// profiles and goroutine dumps are fetched from it around each phase.
	PprofURL string `yaml:"pprof_url"`
	// Runtime is go, node, dotnet, jvm, or auto (told from the series the
	// metrics endpoint exposes).
	Runtime string `yaml:"runtime"`
	// PID (attach) is the process to measure; PIDFile names a file holding
	// it instead, read when the run starts.
	PID     int    `yaml:"pid"`
	PIDFile string `yaml:"pid_file"`
	// Argv (command) is the command line soakd starts: program and
	// arguments, no shell. Env adds to (or overrides) soakd's environment,
	// less the secrets soakd reads; Dir is its working directory.
	Argv []string          `yaml:"argv"`
	Env  map[string]string `yaml:"env"`
	Dir  string            `yaml:"dir"`
	// ReadyURL must answer HTTP 200 within ReadyTimeout before the run
	// begins: of the start (command), or of the run's start (attach, where
	// it is optional: without it the run waits for the GraphQL URL's port
	// to take a TCP connection).
	ReadyURL     string        `yaml:"ready_url"`
	ReadyTimeout time.Duration `yaml:"ready_timeout"`
	// StopGrace (command) is how long the process gets after SIGTERM, at
	// the end, before SIGKILL.
	StopGrace time.Duration `yaml:"stop_grace"`
	// AllowNonLoopback permits URLs off loopback: load and scrapes then
	// leave this machine, so it takes this explicit opt-in.
	AllowNonLoopback bool `yaml:"allow_non_loopback"`
	// Kubernetes (kind kubernetes) finds the service's replicas.
	Kubernetes KubeTargetConfig `yaml:"kubernetes"`
}

// Scrape paths of a Kubernetes target's replicas (target.kubernetes.scrape_via).
const (
	// ScrapeViaAPIServer reaches each pod's metrics endpoint through the
	// API server's pod proxy (pods/proxy): soakd outside the cluster.
	ScrapeViaAPIServer = "api_server"
	// ScrapeViaPodIP scrapes each pod's IP directly: soakd in the cluster
	// (or on a node), where pod IPs are routable.
	ScrapeViaPodIP = "pod_ip"
)

// KubeTargetConfig (target.kind kubernetes) is a service that runs as
// replicas in a cluster: the load goes to its Service URLs (graphql_url,
// rest_url), its figures come from every replica's Prometheus endpoint,
// found by label selector, summed per phase. The cluster is the one
// kubernetes_drivers.kubeconfig and .context name.
type KubeTargetConfig struct {
	// Namespace is the replicas' namespace.
	Namespace string `yaml:"namespace"`
	// Selector is the label selector of the replicas' pods ("app=books").
	Selector string `yaml:"selector"`
	// MetricsPort is the replicas' metrics port: a number, or the name of
	// a container port.
	MetricsPort string `yaml:"metrics_port"`
	// MetricsPath is the metrics endpoint's path on that port.
	MetricsPath string `yaml:"metrics_path"`
	// ScrapeVia is api_server (through the API server's pod proxy) or
	// pod_ip (straight to each pod's IP).
	ScrapeVia string `yaml:"scrape_via"`
	// MinReplicas is how many replicas must be running and ready when the
	// run starts (within target.ready_timeout).
	MinReplicas int `yaml:"min_replicas"`
	// AllowRestarts keeps the run going when a replica restarts or the
	// set of replicas changes: the windows across the change are then not
	// measured. False: the run stops with the replica and the reason.
	AllowRestarts bool `yaml:"allow_restarts"`
}

// External reports whether the target is a server soakd does not host.
func (t TargetConfig) External() bool {
	return t.Kind == report.TargetAttach || t.Kind == report.TargetCommand || t.Kind == report.TargetKubernetes
}

// Built-in target scenarios (target.scenario).
const (
	ScenarioDonut      = "donut"
	ScenarioRelational = "relational"
)

// RelationalConfig configures the relational scenario (target.scenario:
// relational): seed 000's data in a real database, served as GraphQL in
// three resolution strategies and as a REST twin (package relational).
type RelationalConfig struct {
	// Store is sqlite (embedded, a temporary file) or postgres.
	Store string `yaml:"store"`
	// DSNEnv names the environment variable holding the PostgreSQL
	// connection string (store postgres); the DSN, which may carry a
	// password, never goes in the config file, and drivers do not inherit it.
	DSNEnv string `yaml:"dsn_env"`
	// PoolSize is the most database connections the target opens.
	PoolSize int `yaml:"pool_size"`
	// Seed drives the data generator: the same seed, the same data.
	Seed uint64 `yaml:"seed"`
	// Scale multiplies seed 000's users and tasks (1: the seed's 1,000
	// users and 10,000 parent tasks); smaller loads faster, for tests and
	// demos, but is no longer the seed's data.
	Scale float64 `yaml:"scale"`
	// RequestTimeout bounds each request's database work: an exhausted
	// pool or a slow database answers 503 after it, not never.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// BatchWait is how long the batched strategy's data loaders gather
	// keys before they query.
	BatchWait time.Duration `yaml:"batch_wait"`
}

// ServerConfig configures the target's HTTP server (the process measured).
type ServerConfig struct {
	// Listen is host:port; port 0 picks a free port. Only loopback by default.
	Listen string `yaml:"listen"`
	// ReadHeaderTimeout bounds how long a client may take to send headers
	// (slowloris protection).
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// ReadTimeout bounds reading a whole request, body included.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout bounds writing a response. Websocket connections are
	// hijacked and not subject to it.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// IdleTimeout closes keep-alive connections idle for this long.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// ShutdownGrace is how long in-flight requests get to finish on SIGTERM.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	// MaxHeaderBytes caps request header size in bytes.
	MaxHeaderBytes int `yaml:"max_header_bytes"`
	// MaxBodyBytes caps request body size in bytes; larger bodies get 413.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// AllowNonLoopback permits a Listen address other hosts can reach.
	// The target's listener also serves /debug/pprof/ and mutations, with
	// no authentication, so that takes this explicit opt-in; the target
	// then logs a warning saying so.
	AllowNonLoopback bool `yaml:"allow_non_loopback"`
}

// GraphQLConfig configures the gqlgen handler.
type GraphQLConfig struct {
	// Introspection enables __schema and __type queries. Off in the
	// embedded config.yaml: neither the driver nor the checks use it, and
	// a soak target needs no schema discovery.
	Introspection  bool `yaml:"introspection"`
	QueryCacheSize int  `yaml:"query_cache_size"` // parsed-query LRU entries
	APQCacheSize   int  `yaml:"apq_cache_size"`   // automatic persisted query LRU entries
	// QueryCacheBytes bounds the parsed-query LRU in bytes too, each query
	// charged graph.QueryBytesPerSourceByte per byte of its text (an upper
	// bound of its text and AST); APQCacheBytes bounds the persisted-query
	// LRU in bytes of hash and query text. Entries over the whole budget
	// are not cached.
	QueryCacheBytes int64         `yaml:"query_cache_bytes"`
	APQCacheBytes   int64         `yaml:"apq_cache_bytes"`
	KeepAlive       time.Duration `yaml:"websocket_keepalive"`
	// MaxDepth and MaxComplexity refuse over-deep or over-complex queries
	// (selection depth in field levels with fragments expanded; gqlgen's
	// complexity count, in fields, with introspection fields counted).
	MaxDepth      int `yaml:"max_depth"`
	MaxComplexity int `yaml:"max_complexity"`
	// MaxAliases refuses operations with more aliased fields than this
	// (fragments expanded, counted at each spread).
	MaxAliases int `yaml:"max_aliases"`
	// WebsocketInitTimeout closes a websocket that sends no
	// connection_init in time; WebsocketWriteTimeout one that stops reading.
	WebsocketInitTimeout  time.Duration `yaml:"websocket_init_timeout"`
	WebsocketWriteTimeout time.Duration `yaml:"websocket_write_timeout"`
	// MaxSubscriptionsPerSocket caps the operations one websocket may have
	// active at once; one more closes it with 4429, and reusing an active
	// operation's id closes it with 4409.
	MaxSubscriptionsPerSocket int `yaml:"max_subscriptions_per_socket"`
}

// DataConfig sizes the in-memory data both arms serve.
type DataConfig struct {
	// Donuts is the number of seeded donuts readers choose from.
	Donuts int `yaml:"donuts"`
	// SubscriberBuffer is each subscription's event buffer; a full buffer
	// drops (and counts) events rather than block a publisher.
	SubscriberBuffer int `yaml:"subscriber_buffer"`
}

// SamplerConfig configures the in-target resource sampler.
type SamplerConfig struct {
	// Interval between samples. Resource figures are deltas between the
	// first and last sample inside a phase's steady window, so shorter
	// phases need a shorter interval.
	Interval time.Duration `yaml:"interval"`
	// MaxSamples bounds the samples kept in memory (oldest dropped first);
	// each costs about 180 bytes. A phase's steady window must fit in
	// MaxSamples × Interval.
	MaxSamples int `yaml:"max_samples"`
}

// KPIConfig holds the release gate: how much more GraphQL may cost than the
// REST control group. Optional limits (pointers) are reported but not gated
// when unset.
type KPIConfig struct {
	// CPUIncreasePoints: GraphQL target CPU (share of the machine, %) may
	// exceed REST's by at most this many percentage points (seed 002: 5).
	CPUIncreasePoints float64 `yaml:"cpu_increase_points"`
	// GCIncreasePoints: GC % time may exceed REST's by at most this many
	// points (seed 002: 1).
	GCIncreasePoints float64 `yaml:"gc_increase_points"`
	// ThroughputDecreasePercent: GraphQL throughput may be at most this
	// many percent below REST's (seed 002: 10).
	ThroughputDecreasePercent float64 `yaml:"throughput_decrease_percent"`
	// CPUPerRequestIncreasePercent optionally gates target CPU µs per request.
	CPUPerRequestIncreasePercent *float64 `yaml:"cpu_per_request_increase_percent"`
	// AllocPerRequestIncreasePercent optionally gates heap bytes allocated per request.
	AllocPerRequestIncreasePercent *float64 `yaml:"alloc_per_request_increase_percent"`
	// GCPauseP99IncreasePercent optionally gates the p99 stop-the-world GC pause.
	GCPauseP99IncreasePercent *float64 `yaml:"gc_pause_p99_increase_percent"`
	// GCPauseP99FloorMs is the absolute floor of the GC pause limit, in ms:
	// the limit applied is max(percent × REST, floor).
	GCPauseP99FloorMs float64 `yaml:"gc_pause_p99_floor_ms"`
	// Confidence is the two-sided level of every interval the gate judges
	// (0.95: a build exactly on a limit fails by chance at most 2.5 % of
	// the time).
	Confidence float64 `yaml:"confidence"`
	// Absolute are limits on the GraphQL arm's own figures, with or
	// without a control group: the gate a GraphQL-only target has.
	Absolute AbsoluteLimits `yaml:"absolute"`
}

// AbsoluteLimits (kpis.absolute) bound the compared GraphQL phase's own
// figures, judged over its rounds as a check each (the interval of the
// mean across rounds wholly within the limit: pass; wholly beyond: fail;
// else inconclusive). 0 turns a limit off.
type AbsoluteLimits struct {
	// P99LatencyMs: the phase's p99 latency at most this, in ms.
	P99LatencyMs float64 `yaml:"p99_latency_ms"`
	// ErrorRatio: failed requests ÷ requests at most this (0.001: 0.1 %).
	ErrorRatio float64 `yaml:"error_ratio"`
	// CPUMicrosPerRequest: the target's CPU µs per request at most this.
	CPUMicrosPerRequest float64 `yaml:"cpu_us_per_request"`
	// ThroughputRPS: the steady throughput at least this, in requests/s.
	ThroughputRPS float64 `yaml:"throughput_rps"`
}

// MemoryConfig holds the memory-profile verdict's limits (seed 002's
// qualitative expectations made measurable).
type MemoryConfig struct {
	// AllocSpikeFactor: no allocation-rate window may exceed this many
	// times the median window ("steady allocation, no extreme spikes").
	AllocSpikeFactor float64 `yaml:"alloc_spike_factor"`
	// AllocWindow is the length of those windows.
	AllocWindow time.Duration `yaml:"alloc_window"`
	// LiveHeapSlopeMaxBytesPerMin bounds the growth of the live heap after
	// GC across the steady window, in bytes per minute ("little to nothing
	// survives"): survivor growth fails only when the slope is significant
	// and even its lower confidence bound is above this.
	LiveHeapSlopeMaxBytesPerMin float64 `yaml:"live_heap_slope_max_bytes_per_min"`
	// Warmup is how long after the start of the steady window survivor
	// growth ignores live-heap points: caches, pools and connection buffers
	// fill at the start of a phase, and that climb is not a leak (default 5s).
	Warmup time.Duration `yaml:"warmup"`
	// MinGCCycles is the fewest GC cycles past the warm-up survivor growth
	// needs to judge (at least 3; default 8); fewer is "not measured".
	MinGCCycles int `yaml:"min_gc_cycles"`
	// MinSpan is the shortest time between the first and last GC cycle used
	// past the warm-up that survivor growth needs to judge (default 10s);
	// shorter is "not measured".
	MinSpan time.Duration `yaml:"min_span"`
	// HeapReturnTolerancePercent and HeapReturnToleranceBytes: after the
	// phase, a settle period and forced GCs, the live heap must be within
	// either of the pre-phase baseline ("back to the steady state").
	HeapReturnTolerancePercent float64 `yaml:"heap_return_tolerance_percent"`
	HeapReturnToleranceBytes   uint64  `yaml:"heap_return_tolerance_bytes"`
	// GoroutineReturnTolerance: goroutines at most this many above baseline.
	GoroutineReturnTolerance int `yaml:"goroutine_return_tolerance"`
}

// ProfilingConfig selects the pprof captures written into the run
// directory and the optional Pyroscope push.
type ProfilingConfig struct {
	// CPU captures a CPU profile of the target over each phase's steady
	// window (all users active).
	CPU bool `yaml:"cpu"`
	// Heap captures heap profiles before and after each phase.
	Heap bool `yaml:"heap"`
	// Goroutines writes a goroutine dump after each phase.
	Goroutines bool `yaml:"goroutines"`
	// OverheadTop is how many functions the "where the overhead goes"
	// table lists (0 turns it off).
	OverheadTop int `yaml:"overhead_top"`
	// Layers are the user's layer rules of the "where the overhead goes, by
	// layer" table, checked before the built-in ones (profiles.NewLayers).
	Layers []LayerConfig `yaml:"layers"`
	// Pyroscope pushes continuous profiles when server_address is set.
	Pyroscope PyroscopeConfig `yaml:"pyroscope"`
}

// LayerConfig is one user layer rule: the functions whose full names match
// any of Functions (globs, '*' matching any run of characters, the whole
// name matched) are the layer Name.
type LayerConfig struct {
	Name      string   `yaml:"name"`
	Functions []string `yaml:"functions"`
}

// LayerRules converts the configured layers into profiles.LayerRules.
func (p ProfilingConfig) LayerRules() []profiles.LayerRule {
	out := make([]profiles.LayerRule, 0, len(p.Layers))
	for _, l := range p.Layers {
		out = append(out, profiles.LayerRule{Layer: l.Name, Patterns: l.Functions})
	}
	return out
}

// PyroscopeConfig configures the Pyroscope push (off when ServerAddress is
// empty).
type PyroscopeConfig struct {
	ServerAddress   string            `yaml:"server_address"`
	ApplicationName string            `yaml:"application_name"`
	UploadRate      time.Duration     `yaml:"upload_rate"`
	Tags            map[string]string `yaml:"tags"`
	BasicAuthUser   string            `yaml:"basic_auth_user"`
	// BasicAuthPasswordEnv names the environment variable holding the
	// password, so it never sits in a config file.
	BasicAuthPasswordEnv string `yaml:"basic_auth_password_env"`
}

// PinningConfig pins the target and the drivers to disjoint CPUs
// (sched_setaffinity), e.g. target "0" and driver "1". Empty: not pinned.
type PinningConfig struct {
	Target string `yaml:"target"`
	Driver string `yaml:"driver"`
}

// RetentionConfig bounds the run history kept in data_dir. The run marked
// as baseline is never deleted.
type RetentionConfig struct {
	// KeepLast keeps the newest this many runs (0: no count limit).
	KeepLast int `yaml:"keep_last"`
	// MaxAge deletes runs older than this (0: no age limit).
	MaxAge time.Duration `yaml:"max_age"`
}

// ReportConfig shapes the report files a run writes (docs/reports.md).
type ReportConfig struct {
	// JUnitInconclusive is how junit.xml shows an inconclusive verdict
	// (exit 4): JUnitFailure (the default) makes its "run" case a failure
	// of type inconclusive, so that a CI widget is red while the job's exit
	// code says the gate did not decide; JUnitSkipped makes it a skipped
	// case, for teams that let exit 4 through and want the widget to agree.
	// A fail is a failure and an aborted run an error either way.
	JUnitInconclusive string `yaml:"junit_inconclusive"`
}

// The values of report.junit_inconclusive.
const (
	JUnitFailure = "failure"
	JUnitSkipped = "skipped"
)

// SoakConfig schedules repeated cycles of a profile (`soakd soak`, and
// `soakd serve` when cycles or duration is set) and the drift rules judged
// across them.
type SoakConfig struct {
	// Profile each cycle runs ("" = default_profile).
	Profile string `yaml:"profile"`
	// Cycles to run (0: no count limit) and Duration of the whole soak (0:
	// no time limit); a scheduled soak needs at least one of them.
	Cycles   int           `yaml:"cycles"`
	Duration time.Duration `yaml:"duration"`
	// Pause between cycles.
	Pause time.Duration `yaml:"pause"`
	Drift DriftConfig   `yaml:"drift"`
}

// DriftConfig holds the drift rules: cycle N against the mean of the first
// baseline_cycles cycles.
type DriftConfig struct {
	// WarmupCycles are the first cycles no drift rule judges (a cold
	// process is no baseline); BaselineCycles the cycles after them whose
	// median is the baseline; SustainedCycles how many cycles in a row
	// beyond a limit, with the trend rising, fail a rule (fewer are
	// warnings). See kpi.DriftLimits.
	WarmupCycles            int     `yaml:"warmup_cycles"`
	BaselineCycles          int     `yaml:"baseline_cycles"`
	SustainedCycles         int     `yaml:"sustained_cycles"`
	HeapLiveRatio           float64 `yaml:"heap_live_ratio"`
	RSSRatio                float64 `yaml:"rss_ratio"`
	CPUPerRequestRatio      float64 `yaml:"cpu_per_request_ratio"`
	GoroutinesIncrease      float64 `yaml:"goroutines_increase"`
	GCPercentIncreasePoints float64 `yaml:"gc_percent_increase_points"`
	// RelativeToControl judges the CPU per request and GC % drift on the
	// GraphQL arm's figure against the REST control's of the same cycle
	// (GraphQL ÷ REST, GraphQL − REST), so machine-wide noise hitting both
	// arms cancels; false judges the GraphQL figure alone. See
	// kpi.DriftLimits.RelativeToControl.
	RelativeToControl bool `yaml:"relative_to_control"`
}

// APIConfig configures the control API of `soakd serve` (the key was
// `control:` before; that name is still read, with a warning, because it was
// easy to confuse with the REST control group).
type APIConfig struct {
	// Listen is the API's own address; loopback by default. Any other
	// address requires a token.
	Listen string `yaml:"listen"`
	// Token is the bearer token the API requires when set; the
	// SOAKD_CONTROL_TOKEN environment variable overrides it (keep tokens out
	// of files).
	Token string `yaml:"token"`
}

// InjectConfig plants a known regression in the GraphQL arm, to prove the
// gate catches one: a test switch, never set in a real run (a run with it
// set says so in its report).
type InjectConfig struct {
	// GraphQLAllocBytesPerRequest makes every GraphQL request allocate this
	// many extra heap bytes (garbage).
	GraphQLAllocBytesPerRequest int `yaml:"graphql_alloc_bytes_per_request"`
	// GraphQLLeakBytesPerRequest makes every GraphQL request keep this many
	// bytes alive for the rest of the process: a leak.
	GraphQLLeakBytesPerRequest int `yaml:"graphql_leak_bytes_per_request"`
	// GraphQLCPUMicrosPerRequest makes every GraphQL request burn about
	// this many µs of CPU (a calibrated busy loop): a CPU regression of
	// known size, to prove the gate detects one.
	GraphQLCPUMicrosPerRequest int `yaml:"graphql_cpu_us_per_request"`
	// DriverCPUMicrosPerRequest makes the driver burn about this many µs
	// of its own CPU after every request of a max-load phase: a load
	// generator made slow on purpose, to prove a driver-bound knee is
	// labelled as such and not blamed on the server.
	DriverCPUMicrosPerRequest int `yaml:"driver_cpu_us_per_request"`
}

// MetricsConfig configures /metrics beyond what is always exposed.
type MetricsConfig struct {
	// Linger keeps a finished `soakd run` serving /metrics this long, so
	// Prometheus scrapes the final KPI series (0: exit at once).
	Linger time.Duration `yaml:"linger"`
}

// CompareConfig holds the regression limits of `soakd compare OLD NEW`:
// how much worse NEW may be than OLD, per metric (0 disables that gate).
type CompareConfig struct {
	CPUPerRequestPercent      float64 `yaml:"cpu_per_request_increase_percent"`
	AllocPerRequestPercent    float64 `yaml:"alloc_per_request_increase_percent"`
	GCPercentPoints           float64 `yaml:"gc_increase_points"`
	P99LatencyPercent         float64 `yaml:"p99_latency_increase_percent"`
	ThroughputDecreasePercent float64 `yaml:"throughput_decrease_percent"`
	HeapLivePercent           float64 `yaml:"heap_live_increase_percent"`
	// P99LatencyFloorMs and HeapLiveFloorBytes are the absolute floors of
	// the relative p99 and live-heap limits: the limit applied is
	// max(percent × OLD, floor).
	P99LatencyFloorMs  float64 `yaml:"p99_latency_floor_ms"`
	HeapLiveFloorBytes float64 `yaml:"heap_live_floor_bytes"`
	// Duet makes every soakd ab session a duet (as --duet does): both
	// builds under the same load at the same instant (DuetLayout).
	Duet bool `yaml:"duet"`
	// DuetLayout is how a duet places the two sides on the CPUs:
	// DuetLayoutShared (both sides on every CPU, left to the kernel's
	// scheduler, so that interference from the rest of the machine lands
	// on both at the same instant wherever it runs; the default: its
	// per-round spread was about half of halves' beside a core burner) or
	// DuetLayoutHalves (each target and its driver on half of the CPUs,
	// the halves swapped between rounds). Empty is shared.
	DuetLayout string `yaml:"duet_layout"`
	// DuetProcesses is how long one process of each build serves a duet:
	// DuetProcessesRound (the default: both targets are started afresh
	// before every round after the first, in the order opposite to the
	// round before, so that a difference between two processes of one
	// build becomes a round effect the interval counts instead of a bias
	// of the whole session) or DuetProcessesSession (one process per side
	// for the session). Targets soakd does not start (attach, kubernetes)
	// keep theirs, and the report says so. Empty is round.
	DuetProcesses string `yaml:"duet_processes"`
}

// Duet processes (compare.duet_processes).
const (
	DuetProcessesRound   = "round"
	DuetProcessesSession = "session"
)

// Duet layouts (compare.duet_layout).
const (
	DuetLayoutHalves = "halves"
	DuetLayoutShared = "shared"
)

// Limits converts the config into the comparison's limits.
func (c CompareConfig) Limits() report.CompareLimits {
	return report.CompareLimits{
		CPUPerRequestPercent:      c.CPUPerRequestPercent,
		AllocPerRequestPercent:    c.AllocPerRequestPercent,
		GCPercentPoints:           c.GCPercentPoints,
		P99LatencyPercent:         c.P99LatencyPercent,
		ThroughputDecreasePercent: c.ThroughputDecreasePercent,
		HeapLivePercent:           c.HeapLivePercent,
		P99LatencyFloorMs:         c.P99LatencyFloorMs,
		HeapLiveFloorBytes:        c.HeapLiveFloorBytes,
	}
}

// Profile is a named suite: phases run one after the other, and the two
// phases named in Compare are the REST and GraphQL arms of the verdict.
type Profile struct {
	Description string `yaml:"description"`
	// Settle is the pause after each phase (before the forced GC) that lets
	// the target return to rest.
	Settle time.Duration `yaml:"settle"`
	// TrimHead and TrimTail cut the first and last part of each phase's
	// steady window (all users active) from every figure.
	TrimHead time.Duration `yaml:"trim_head"`
	TrimTail time.Duration `yaml:"trim_tail"`
	// RequestTimeout bounds one request in the driver.
	RequestTimeout time.Duration `yaml:"request_timeout"`
	// Seed makes the driver's random choices (think times, ids) repeatable.
	Seed uint64 `yaml:"seed"`
	// Rounds repeats the compared REST and GraphQL phases, interleaved
	// (REST, GraphQL, GraphQL, REST, ...), to see past a noisy machine:
	// each round is one sample of every KPI, and the gate judges the
	// confidence interval across rounds. One round is always inconclusive.
	Rounds int `yaml:"rounds"`
	// MaxRounds, when above Rounds, makes rounds adaptive: after round
	// Rounds and each later one the KPIs are judged (each look at a
	// Bonferroni-corrected level) and the rounds stop once every gated KPI
	// is conclusive, or at MaxRounds.
	MaxRounds int `yaml:"max_rounds"`
	// Gate is the rule that turns rounds into the verdict; "interval" (the
	// default and the only rule).
	Gate string `yaml:"gate"`
	// Scenario, when set, is the built-in target's scenario the profile's
	// operations need (relational: seed 000's endpoints). A run of it on
	// a target soakd starts serves it whatever target.scenario says; one
	// on a target already running (serve, soak) or not built in is
	// refused up front unless that target serves it.
	Scenario string `yaml:"scenario"`
	// MemoryPhase names the phase the memory verdict judges ("" for none).
	MemoryPhase string `yaml:"memory_phase"`
	// Drivers sets how many driver processes generate the profile's load.
	Drivers DriversConfig `yaml:"drivers"`
	Compare Compare       `yaml:"compare"`
	Phases  []PhaseConfig `yaml:"phases"`
}

// DriversConfig sets how a profile's load is generated on this machine
// (the local driver backend).
type DriversConfig struct {
	// Backend is where the drivers run: BackendLocal (child processes of
	// soakd; empty means it) or BackendKubernetes (the pods of an Indexed
	// Job, configured by kubernetes_drivers).
	Backend string `yaml:"backend"`
	// Shards is the number of `soakd drive --shard i/N` processes each
	// phase runs, together offering the phase's load and merged into one
	// result (docs/methodology.md, "Sharded drivers"); 0 or 1 is one
	// driver. A ramping or ramping-rate phase is judged on the shards'
	// merged per-second windows.
	Shards int `yaml:"shards"`
}

// Count returns the number of driver processes per phase, at least 1.
func (d DriversConfig) Count() int { return max(d.Shards, 1) }

// Compare names the phases the verdict compares. REST may be empty: the
// GraphQL phase then runs its rounds alone, with no control group.
type Compare struct {
	REST    string `yaml:"rest"`
	GraphQL string `yaml:"graphql"`
}

// PhaseConfig is one phase of a profile. The workload shapes are the
// driver's own spec types, so the config and the wire spec cannot drift.
type PhaseConfig struct {
	Name string `yaml:"name"`
	// Arm is "rest" or "graphql": which API the phase drives.
	Arm string `yaml:"arm"`
	// Model is closed (default: users with think time), open (arrival
	// rate) or ramping (users added until failure: max load).
	Model workloads.Model `yaml:"model"`
	// RampUp spreads user starts evenly over this duration (closed model).
	RampUp time.Duration `yaml:"ramp_up"`
	// Duration caps a closed phase, sets an open schedule's length and caps
	// a ramping phase.
	Duration time.Duration `yaml:"duration"`
	// Think is the uniform random pause before each request.
	Think workloads.Think `yaml:"think"`
	// Users lists the user groups: operation, users, iterations per user
	// (and weight in the open model).
	Users []workloads.UserGroup `yaml:"users"`
	// Rate and RateEnd are the open model's arrival rate (req/s) at the
	// start and, when set, at the end of a linear ramp.
	Rate    float64 `yaml:"rate"`
	RateEnd float64 `yaml:"rate_end"`
	// MaxInFlight bounds requests in flight in the open model; arrivals
	// beyond it are dropped and counted.
	MaxInFlight int `yaml:"max_in_flight"`
	// Ramp adds users over time in the ramping model.
	Ramp workloads.Ramp `yaml:"ramp"`
	// Failure defines when a ramping phase has found the target's limit.
	Failure workloads.Failure `yaml:"failure"`
	// Subscriptions, when Clients > 0, open websocket subscriptions to the
	// writers' ids for the phase's length (graphql phases with a
	// graphql-mutation group).
	Subscriptions workloads.Subscriptions `yaml:"subscriptions"`
}

// ConfigError carries every problem found in a configuration, so a user
// fixes them all in one go.
type ConfigError struct {
	Source   string
	Problems []FieldError
}

// Error lists every problem on its own line.
// ExitCode is exitcode.Usage: a configuration that does not validate is
// bad usage, and nothing ran.
func (e *ConfigError) ExitCode() exitcode.Code { return exitcode.Usage }

func (e *ConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid configuration %s (%d problem", e.Source, len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteString("s")
	}
	b.WriteString("):")
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// embeddedSeed000 is seed000.yaml: seed 000's operations and the profiles
// relational and seed-000, generated from relational.Operations
// (TestSeed000YAML). LoadConfig decodes it right after the defaults, as
// if it were part of them, so soakd config shows it and a user file may
// replace any of it.
//
//go:embed seed000.yaml
var embeddedSeed000 []byte

// Load decodes the embedded defaults (and seed000.yaml) and then,
// when user is not nil, the user's document on top; it rejects unknown keys and bad values and
// validates the result, returning a *ConfigError with every problem found.
// source names the user document in messages (usually its path).
func Load(defaults []byte, user []byte, source string) (*Config, error) {
	return load(defaults, user, source, true)
}

// LoadTarget is Load for `soakd target`, the measured process: it reads no
// operation data. The target serves; only the orchestrator and its drivers
// send what the CSV files hold, and a 300 MB file cost the measured process
// 747 MB of RSS before a request was served.
func LoadTarget(defaults []byte, user []byte, source string) (*Config, error) {
	return load(defaults, user, source, false)
}

func load(defaults []byte, user []byte, source string, readCSV bool) (*Config, error) {
	cfg := &Config{}
	if _, err := decodeStrict(defaults, cfg, "embedded config.yaml"); err != nil {
		return nil, fmt.Errorf("embedded defaults are broken: %w", err)
	}
	if _, err := decodeStrict(embeddedSeed000, cfg, "embedded seed000.yaml"); err != nil {
		return nil, fmt.Errorf("embedded seed000.yaml is broken: %w", err)
	}
	lines := map[string]int{}
	if user != nil {
		l, err := decodeStrict(user, cfg, source)
		if err != nil {
			return nil, err
		}
		lines = l
	}
	cfg.applyDefaults()
	var problems []FieldError
	if readCSV {
		problems = cfg.loadCSV()
	}
	if problems = append(problems, cfg.Validate()...); len(problems) > 0 {
		for i := range problems {
			if problems[i].Line == 0 {
				problems[i].Line = lineOf(lines, problems[i].Path)
			}
		}
		return nil, &ConfigError{Source: source, Problems: problems}
	}
	return cfg, nil
}

// Overlay decodes doc (YAML, as strict as a config file) on top of a copy
// of c and validates the result: a run's overrides. c is left unchanged.
//
// The copy is a deep one (Clone): yaml.v3 decodes a key whose field is a
// non-nil pointer through that pointer, so a shallow copy would let a run's
// overrides rewrite c, and with it every later run.
func (c *Config) Overlay(doc []byte, source string) (*Config, error) {
	cp := c.Clone()
	lines, err := decodeStrict(doc, cp, source)
	if err != nil {
		return nil, err
	}
	cp.applyDefaults()
	problems := cp.loadCSV()
	if problems = append(problems, cp.Validate()...); len(problems) > 0 {
		for i := range problems {
			if problems[i].Line == 0 {
				problems[i].Line = lineOf(lines, problems[i].Path)
			}
		}
		return nil, &ConfigError{Source: source, Problems: problems}
	}
	return cp, nil
}

// Clone returns a deep copy of c: every pointer, map and slice reachable
// from c is copied, so nothing done to the copy (decoding overrides onto
// it, a run adjusting its settings) shows in c, nor the other way round.
// A field of a new reference kind (pointer, map, slice) must be copied here
// too; TestCloneSharesNothing fails until it is. Clone of nil is nil.
func (c *Config) Clone() *Config {
	if c == nil {
		return nil
	}
	cp := *c
	cp.KPIs = c.KPIs.clone()
	cp.Profiling = c.Profiling.clone()
	cp.Warnings = slices.Clone(c.Warnings)
	cp.Schedules = slices.Clone(c.Schedules)
	cp.Target.Argv = slices.Clone(c.Target.Argv)
	cp.Target.Env = maps.Clone(c.Target.Env)
	cp.KubernetesDrivers.NodeSelector = maps.Clone(c.KubernetesDrivers.NodeSelector)
	if c.Operations != nil {
		cp.Operations = make(map[workloads.Operation]workloads.OperationDef, len(c.Operations))
		for name, op := range c.Operations {
			cp.Operations[name] = cloneOperation(op)
		}
	}
	cp.CSVFiles = maps.Clone(c.CSVFiles)
	if c.Profiles != nil {
		cp.Profiles = make(map[string]Profile, len(c.Profiles))
		for name, p := range c.Profiles {
			cp.Profiles[name] = p.clone()
		}
	}
	return &cp
}

// clone returns k with its optional limits pointing at copies.
func (k KPIConfig) clone() KPIConfig {
	k.CPUPerRequestIncreasePercent = clonePtr(k.CPUPerRequestIncreasePercent)
	k.AllocPerRequestIncreasePercent = clonePtr(k.AllocPerRequestIncreasePercent)
	k.GCPauseP99IncreasePercent = clonePtr(k.GCPauseP99IncreasePercent)
	return k
}

// clone returns p with its own copy of the Pyroscope tags.
func (p ProfilingConfig) clone() ProfilingConfig {
	p.Pyroscope.Tags = maps.Clone(p.Pyroscope.Tags)
	if p.Layers != nil {
		layers := make([]LayerConfig, len(p.Layers))
		for i, l := range p.Layers {
			layers[i] = LayerConfig{Name: l.Name, Functions: slices.Clone(l.Functions)}
		}
		p.Layers = layers
	}
	return p
}

// clone returns p with its own copies of the phases and their user groups.
func (p Profile) clone() Profile {
	p.Phases = slices.Clone(p.Phases)
	for i := range p.Phases {
		p.Phases[i].Users = slices.Clone(p.Phases[i].Users)
	}
	return p
}

// cloneOperation returns a deep copy of d.
func cloneOperation(d workloads.OperationDef) workloads.OperationDef {
	if r := d.REST; r != nil {
		cp := *r
		cp.Body = cloneAny(r.Body)
		cp.Follow = slices.Clone(r.Follow)
		d.REST = &cp
	}
	if g := d.GraphQL; g != nil {
		cp := *g
		cp.Variables, _ = cloneAny(g.Variables).(map[string]any)
		d.GraphQL = &cp
	}
	if sub := d.Subscription; sub != nil {
		cp := *sub
		cp.Variables, _ = cloneAny(sub.Variables).(map[string]any)
		cp.ConnectionParams, _ = cloneAny(sub.ConnectionParams).(map[string]any)
		d.Subscription = &cp
	}
	d.Headers = maps.Clone(d.Headers)
	d.HeadersEnv = maps.Clone(d.HeadersEnv)
	if d.Data != nil {
		data := make(map[string]workloads.DataDef, len(d.Data))
		for k, v := range d.Data {
			v.Range, v.List, v.Lookup = slices.Clone(v.Range), slices.Clone(v.List), slices.Clone(v.Lookup)
			if v.File != nil {
				f := *v.File
				v.File = &f
			}
			data[k] = v
		}
		d.Data = data
	}
	d.Expect.JSON = maps.Clone(d.Expect.JSON)
	d.Expect.Present = slices.Clone(d.Expect.Present)
	return d
}

// cloneAny deep-copies a value decoded from YAML or JSON: maps and lists
// are copied, scalars shared (they are immutable). A nil map stays nil.
func cloneAny(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = cloneAny(e)
		}
		return m
	case []any:
		if v == nil {
			return v
		}
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = cloneAny(e)
		}
		return l
	}
	return v
}

// clonePtr returns a pointer to a copy of *p, or nil for nil.
func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// applyDefaults fills the profile keys whose zero value means "the usual":
// one round, judged by the median.
func (c *Config) applyDefaults() {
	for name, p := range c.Profiles {
		if p.Rounds == 0 {
			p.Rounds = 1
		}
		if p.Gate == "" {
			p.Gate = kpi.GateInterval
		}
		c.Profiles[name] = p
	}
}

// lineOf finds the line of path or of its nearest ancestor present in the
// user's document (a defaulted key has no line).
func lineOf(lines map[string]int, path string) int {
	for path != "" {
		if l, ok := lines[path]; ok {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

// decodeStrict decodes doc onto cfg after checking every key and scalar
// against Config's types, and returns the line of every key path in doc.
func decodeStrict(doc []byte, cfg *Config, source string) (map[string]int, error) {
	body, err := parseDoc(doc, source)
	if err != nil {
		return nil, err
	}
	var seen []string
	if abs, err := filepath.Abs(source); err == nil {
		seen = []string{abs}
	}
	return decodeNode(body, cfg, source, seen)
}

// decodeNode is decodeStrict of a parsed document: its include: files
// decoded first (seen the files being included), its profiles' extends:
// expanded, then checked and decoded.
func decodeNode(body *yaml.Node, cfg *Config, source string, seen []string) (map[string]int, error) {
	if err := includes(body, cfg, source, seen); err != nil {
		return nil, err
	}
	if err := extends(body, cfg, source); err != nil {
		return nil, err
	}
	if warn, problem := renameDeprecated(body); problem != nil {
		return nil, &ConfigError{Source: source, Problems: []FieldError{*problem}}
	} else if warn != "" {
		cfg.Warnings = append(cfg.Warnings, source+": "+warn)
	}
	c := &checker{lines: map[string]int{}}
	c.check(body, reflect.TypeFor[Config](), "")
	if len(c.problems) > 0 {
		return nil, &ConfigError{Source: source, Problems: c.problems}
	}
	// Operations this document defines replace any of the same name whole
	// (yaml.v3 would decode into the old value and keep its other keys).
	for _, name := range definedOperations(body) {
		delete(cfg.Operations, workloads.Operation(name))
	}
	if err := body.Decode(cfg); err != nil {
		// The checker should have caught every type problem; whatever is
		// left is reported as yaml.v3 words it.
		var te *yaml.TypeError
		if errors.As(err, &te) {
			var ps []FieldError
			for _, m := range te.Errors {
				ps = append(ps, FieldError{Msg: m})
			}
			return nil, &ConfigError{Source: source, Problems: ps}
		}
		return nil, &ConfigError{Source: source, Problems: []FieldError{{Msg: err.Error()}}}
	}
	// A CSV file named by this document is relative to the document's
	// file, and made absolute here: relative to a relative --config, it
	// broke every built-in run, the `soakd target` child resolving it in
	// the temporary directory of its own config.
	if st, err := os.Stat(source); err == nil && st.Mode().IsRegular() {
		for _, name := range definedOperations(body) {
			op := cfg.Operations[workloads.Operation(name)]
			for v, d := range op.Data {
				if d.CSV != "" && !filepath.IsAbs(d.CSV) {
					if abs, err := filepath.Abs(filepath.Join(filepath.Dir(source), d.CSV)); err == nil {
						d.CSV = abs
					}
					op.Data[v] = d
				}
			}
		}
	}
	return c.lines, nil
}

// definedOperations returns the names under the top-level operations: key
// of a document.
func definedOperations(body *yaml.Node) []string {
	if body.Kind != yaml.MappingNode {
		return nil
	}
	var names []string
	for i := 0; i+1 < len(body.Content); i += 2 {
		if body.Content[i].Value != "operations" || body.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		ops := body.Content[i+1]
		for j := 0; j+1 < len(ops.Content); j += 2 {
			names = append(names, ops.Content[j].Value)
		}
	}
	return names
}

// loadCSV validates every CSV file the operations' data names, once per
// file for all the columns read from it (workloads.ValidateCSVFile), into
// CSVFiles, and returns a problem per file that cannot be read or parsed,
// at the first variable naming it; the message names the line, never the
// file's text.
func (c *Config) loadCSV() []FieldError {
	c.CSVFiles = nil
	var paths []string
	columns := map[string][]string{}
	key := map[string]string{} // the first variable naming a file
	for _, name := range slices.Sorted(maps.Keys(c.Operations)) {
		op := c.Operations[name]
		for _, v := range slices.Sorted(maps.Keys(op.Data)) {
			d := op.Data[v]
			if d.CSV == "" || d.Column == "" {
				continue
			}
			if _, seen := key[d.CSV]; !seen {
				key[d.CSV] = fmt.Sprintf("operations.%s.data.%s.csv", name, v)
				paths = append(paths, d.CSV)
			}
			if !slices.Contains(columns[d.CSV], d.Column) {
				columns[d.CSV] = append(columns[d.CSV], d.Column)
			}
		}
	}
	var ps []FieldError
	for _, path := range paths {
		f, err := workloads.ValidateCSVFile(path, columns[path])
		if err != nil {
			ps = append(ps, FieldError{Path: key[path], Msg: err.Error()})
			continue
		}
		if c.CSVFiles == nil {
			c.CSVFiles = map[string]workloads.CSVFile{}
		}
		c.CSVFiles[path] = f
	}
	return ps
}

// parseDoc parses doc, one YAML document, and returns its top node; errors
// are *ConfigError naming source.
func parseDoc(doc []byte, source string) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(doc))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ConfigError{Source: source, Problems: []FieldError{{Msg: "the document is empty"}}}
		}
		return nil, &ConfigError{Source: source, Problems: []FieldError{{Msg: "not valid YAML: " + err.Error()}}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &ConfigError{Source: source, Problems: []FieldError{{Line: extra.Line, Msg: "more than one YAML document; put everything in one"}}}
	}
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		return root.Content[0], nil
	}
	return &root, nil
}

// renameDeprecated rewrites, in a document's top-level mapping, the
// deprecated key `control:` to its new name `api:` and returns a warning
// saying so; a document with both gets a problem instead, since it is not
// clear which the user meant.
func renameDeprecated(body *yaml.Node) (warning string, problem *FieldError) {
	if body.Kind != yaml.MappingNode {
		return "", nil
	}
	var old, cur *yaml.Node
	for i := 0; i+1 < len(body.Content); i += 2 {
		switch k := body.Content[i]; k.Value {
		case "control":
			old = k
		case "api":
			cur = k
		}
	}
	switch {
	case old == nil:
		return "", nil
	case cur != nil:
		return "", &FieldError{Path: "control", Line: old.Line, Msg: "both control: (the old name) and api: are given; move control:'s keys under api: and delete it"}
	}
	old.Value = "api"
	return fmt.Sprintf("line %d: the key control: is deprecated and read as api: (it configures the control API, not the REST control group); rename it", old.Line), nil
}

// validateOperations checks every operation once (a phase naming one does
// not repeat its problems) and that the environment variables its headers
// read are set.
func (c *Config) validateOperations() []FieldError {
	var ps []FieldError
	for _, name := range slices.Sorted(maps.Keys(c.Operations)) {
		op := c.Operations[name]
		path := "operations." + string(name)
		if name == "" || strings.ContainsAny(string(name), " \t\n.") {
			ps = append(ps, FieldError{Path: path, Msg: "an operation name is a word without spaces or dots, like rest-get"})
		}
		if err := op.Validate(c.Operations); err != nil {
			for _, e := range unjoinErr(err) {
				ps = append(ps, fieldErrorAt(path, e))
			}
		}
		for _, h := range slices.Sorted(maps.Keys(op.HeadersEnv)) {
			if env := op.HeadersEnv[h]; env != "" {
				if _, ok := os.LookupEnv(env); !ok {
					ps = append(ps, FieldError{Path: path + ".headers_env." + h,
						Msg: fmt.Sprintf("the environment variable %s is not set; export it before running soakd (header values never come from the config file)", env)})
				}
			}
		}
	}
	return ps
}

// unjoinErr returns the errors joined in err, or err alone.
func unjoinErr(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// fieldErrorAt turns a "key: message" error under path into a FieldError.
func fieldErrorAt(path string, e error) FieldError {
	key, msg, found := strings.Cut(e.Error(), ": ")
	if !found || strings.ContainsAny(key, " \"") {
		return FieldError{Path: path, Msg: e.Error()}
	}
	return FieldError{Path: path + "." + key, Msg: msg}
}

// Validate checks ranges and cross references and returns every problem,
// each naming its key path.
func (c *Config) Validate() []FieldError {
	var ps []FieldError
	bad := func(path, format string, args ...any) {
		ps = append(ps, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	positive := func(path string, d time.Duration) {
		if d <= 0 {
			bad(path, "must be a positive duration (got %s)", d)
		}
	}

	ps = append(ps, nonFinite(reflect.ValueOf(c).Elem(), "")...)
	ps = append(ps, c.validateTarget()...)
	ps = append(ps, c.validateOperations()...)
	ps = append(ps, c.validateSchedules()...)
	used := ""
	for _, name := range c.ProfileNames() {
		if c.Profiles[name].Drivers.Backend == BackendKubernetes {
			used = "profiles." + name
			break
		}
	}
	ps = append(ps, c.KubernetesDrivers.validate(used)...)
	if host, _, err := net.SplitHostPort(c.Server.Listen); err != nil {
		bad("server.listen", "must be host:port, like 127.0.0.1:8080 or 127.0.0.1:0 (got %q)", c.Server.Listen)
	} else if !c.Server.AllowNonLoopback && !api.IsLoopback(host) {
		bad("server.listen", "%s is reachable from other hosts, and the target serves /debug/pprof/ and mutations there without authentication: "+
			"bind to 127.0.0.1, or set server.allow_non_loopback: true to expose them", c.Server.Listen)
	}
	positive("server.read_header_timeout", c.Server.ReadHeaderTimeout)
	positive("server.read_timeout", c.Server.ReadTimeout)
	positive("server.write_timeout", c.Server.WriteTimeout)
	positive("server.idle_timeout", c.Server.IdleTimeout)
	positive("server.shutdown_grace", c.Server.ShutdownGrace)
	if c.Server.MaxHeaderBytes < 1024 {
		bad("server.max_header_bytes", "must be at least 1024 (got %d)", c.Server.MaxHeaderBytes)
	}
	if c.Server.MaxBodyBytes < 1024 {
		bad("server.max_body_bytes", "must be at least 1024 (got %d)", c.Server.MaxBodyBytes)
	}
	if c.GraphQL.QueryCacheSize < 1 {
		bad("graphql.query_cache_size", "must be at least 1 (got %d)", c.GraphQL.QueryCacheSize)
	}
	if c.GraphQL.APQCacheSize < 1 {
		bad("graphql.apq_cache_size", "must be at least 1 (got %d)", c.GraphQL.APQCacheSize)
	}
	if c.GraphQL.QueryCacheBytes < 1 {
		bad("graphql.query_cache_bytes", "must be at least 1 (got %d)", c.GraphQL.QueryCacheBytes)
	}
	if c.GraphQL.APQCacheBytes < 1 {
		bad("graphql.apq_cache_bytes", "must be at least 1 (got %d)", c.GraphQL.APQCacheBytes)
	}
	positive("graphql.websocket_keepalive", c.GraphQL.KeepAlive)
	if c.GraphQL.MaxDepth < 1 || c.GraphQL.MaxDepth > 1000 {
		bad("graphql.max_depth", "must be between 1 and 1000 (got %d)", c.GraphQL.MaxDepth)
	}
	if c.GraphQL.MaxComplexity < 1 {
		bad("graphql.max_complexity", "must be at least 1 (got %d)", c.GraphQL.MaxComplexity)
	}
	if c.GraphQL.MaxAliases < 1 {
		bad("graphql.max_aliases", "must be at least 1 (got %d): it is the most aliased fields one operation may select", c.GraphQL.MaxAliases)
	}
	positive("graphql.websocket_init_timeout", c.GraphQL.WebsocketInitTimeout)
	positive("graphql.websocket_write_timeout", c.GraphQL.WebsocketWriteTimeout)
	if c.Data.Donuts < 1 || c.Data.Donuts > 10_000_000 {
		bad("data.donuts", "must be between 1 and 10000000 (got %d)", c.Data.Donuts)
	}
	if c.Data.SubscriberBuffer < 1 {
		bad("data.subscriber_buffer", "must be at least 1 (got %d)", c.Data.SubscriberBuffer)
	}
	if c.Sampler.Interval < 10*time.Millisecond || c.Sampler.Interval > time.Minute {
		bad("sampler.interval", "must be between 10ms and 1m (got %s)", c.Sampler.Interval)
	}
	if c.Sampler.MaxSamples < 16 || c.Sampler.MaxSamples > profiles.MaxMaxSamples {
		bad("sampler.max_samples", "must be between 16 and %d (got %d)", profiles.MaxMaxSamples, c.Sampler.MaxSamples)
	}
	nonNegative := func(path string, v float64) {
		if v < 0 {
			bad(path, "must not be negative (got %g)", v)
		}
	}
	nonNegative("kpis.cpu_increase_points", c.KPIs.CPUIncreasePoints)
	nonNegative("kpis.gc_increase_points", c.KPIs.GCIncreasePoints)
	nonNegative("kpis.gc_pause_p99_floor_ms", c.KPIs.GCPauseP99FloorMs)
	a := c.KPIs.Absolute
	nonNegative("kpis.absolute.p99_latency_ms", a.P99LatencyMs)
	nonNegative("kpis.absolute.cpu_us_per_request", a.CPUMicrosPerRequest)
	nonNegative("kpis.absolute.throughput_rps", a.ThroughputRPS)
	if a.ErrorRatio < 0 || a.ErrorRatio >= 1 {
		bad("kpis.absolute.error_ratio", "must be a share of requests from 0 (off) up to below 1, e.g. 0.001 for 0.1 %% (got %g)", a.ErrorRatio)
	}
	if v := c.KPIs.Confidence; !(v >= 0.5 && v < 1) {
		bad("kpis.confidence", "must be at least 0.5 and below 1, e.g. 0.95 (got %g)", v)
	}
	if v := c.KPIs.ThroughputDecreasePercent; v < 0 || v > 100 {
		bad("kpis.throughput_decrease_percent", "must be between 0 and 100 (got %g)", v)
	}
	for path, v := range map[string]*float64{
		"kpis.cpu_per_request_increase_percent":   c.KPIs.CPUPerRequestIncreasePercent,
		"kpis.alloc_per_request_increase_percent": c.KPIs.AllocPerRequestIncreasePercent,
		"kpis.gc_pause_p99_increase_percent":      c.KPIs.GCPauseP99IncreasePercent,
	} {
		if v != nil {
			nonNegative(path, *v)
		}
	}

	if c.Memory.AllocSpikeFactor < 1 {
		bad("memory.alloc_spike_factor", "must be at least 1 (got %g)", c.Memory.AllocSpikeFactor)
	}
	if c.Memory.AllocWindow < c.Sampler.Interval {
		bad("memory.alloc_window", "must be at least sampler.interval (%s), got %s", c.Sampler.Interval, c.Memory.AllocWindow)
	}
	nonNegative("memory.live_heap_slope_max_bytes_per_min", c.Memory.LiveHeapSlopeMaxBytesPerMin)
	if c.Memory.Warmup < 0 {
		bad("memory.warmup", "must not be a negative duration (got %s)", c.Memory.Warmup)
	}
	if c.Memory.MinGCCycles < 3 {
		bad("memory.min_gc_cycles", "must be at least 3: a slope's standard error needs 3 points (got %d)", c.Memory.MinGCCycles)
	}
	if c.Memory.MinSpan < 0 {
		bad("memory.min_span", "must not be a negative duration (got %s)", c.Memory.MinSpan)
	}
	nonNegative("memory.heap_return_tolerance_percent", c.Memory.HeapReturnTolerancePercent)
	if c.Memory.GoroutineReturnTolerance < 0 {
		bad("memory.goroutine_return_tolerance", "must not be negative (got %d)", c.Memory.GoroutineReturnTolerance)
	}
	if c.Profiling.OverheadTop < 0 || c.Profiling.OverheadTop > 100 {
		bad("profiling.overhead_top", "must be between 0 and 100 (got %d)", c.Profiling.OverheadTop)
	}
	if _, err := profiles.NewLayers(c.Profiling.LayerRules()); err != nil {
		bad("profiling.layers", "%v", err)
	}
	if py := c.Profiling.Pyroscope; py.ServerAddress != "" {
		if u, err := neturl.Parse(py.ServerAddress); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("profiling.pyroscope.server_address", "must be an http(s) URL like http://127.0.0.1:4040 (got %q)", py.ServerAddress)
		}
		if py.ApplicationName == "" {
			bad("profiling.pyroscope.application_name", "must not be empty when server_address is set")
		}
		if py.UploadRate < time.Second {
			bad("profiling.pyroscope.upload_rate", "must be at least 1s (got %s)", py.UploadRate)
		}
	}
	if (c.Pinning.Target == "") != (c.Pinning.Driver == "") {
		bad("pinning", "set both target and driver CPUs, or neither")
	} else if c.Pinning.Target != "" {
		t, terr := pin.Parse(c.Pinning.Target)
		if terr != nil {
			bad("pinning.target", "%v", terr)
		}
		d, derr := pin.Parse(c.Pinning.Driver)
		if derr != nil {
			bad("pinning.driver", "%v", derr)
		}
		if terr == nil && derr == nil && slices.ContainsFunc(t, func(cpu int) bool { return slices.Contains(d, cpu) }) {
			bad("pinning", "target CPUs %v and driver CPUs %v overlap; they must be disjoint", t, d)
		}
	}
	switch c.Compare.DuetLayout {
	case "", DuetLayoutHalves, DuetLayoutShared:
	default:
		bad("compare.duet_layout", "must be %s (each side on half of the CPUs, swapped between rounds) or %s (both sides on every CPU) (got %q)", DuetLayoutHalves, DuetLayoutShared, c.Compare.DuetLayout)
	}
	switch c.Compare.DuetProcesses {
	case "", DuetProcessesRound, DuetProcessesSession:
	default:
		bad("compare.duet_processes", "must be %s (fresh targets before every round) or %s (one process per side for the session) (got %q)", DuetProcessesRound, DuetProcessesSession, c.Compare.DuetProcesses)
	}
	for path, v := range map[string]float64{
		"compare.cpu_per_request_increase_percent":   c.Compare.CPUPerRequestPercent,
		"compare.alloc_per_request_increase_percent": c.Compare.AllocPerRequestPercent,
		"compare.gc_increase_points":                 c.Compare.GCPercentPoints,
		"compare.p99_latency_increase_percent":       c.Compare.P99LatencyPercent,
		"compare.throughput_decrease_percent":        c.Compare.ThroughputDecreasePercent,
		"compare.heap_live_increase_percent":         c.Compare.HeapLivePercent,
		"compare.p99_latency_floor_ms":               c.Compare.P99LatencyFloorMs,
		"compare.heap_live_floor_bytes":              c.Compare.HeapLiveFloorBytes,
	} {
		nonNegative(path, v)
	}

	if v := c.Inject.GraphQLAllocBytesPerRequest; v < 0 || v > 16<<20 {
		bad("inject.graphql_alloc_bytes_per_request", "must be between 0 and 16777216 (got %d)", v)
	}
	if v := c.Inject.GraphQLCPUMicrosPerRequest; v < 0 || v > 100000 {
		bad("inject.graphql_cpu_us_per_request", "must be between 0 and 100000 µs (got %d)", v)
	}
	if v := c.Inject.DriverCPUMicrosPerRequest; v < 0 || v > 100000 {
		bad("inject.driver_cpu_us_per_request", "must be between 0 and 100000 µs (got %d)", v)
	}
	if v := c.Inject.GraphQLLeakBytesPerRequest; v < 0 || v > 1<<20 {
		bad("inject.graphql_leak_bytes_per_request", "must be between 0 and 1048576 (got %d)", v)
	}
	if c.DataDir == "" {
		bad("data_dir", "must not be empty")
	}
	if c.Retention.KeepLast < 0 {
		bad("retention.keep_last", "must not be negative (got %d)", c.Retention.KeepLast)
	}
	if c.Retention.MaxAge < 0 {
		bad("retention.max_age", "must not be negative (got %s)", c.Retention.MaxAge)
	}
	switch c.Report.JUnitInconclusive {
	case JUnitFailure, JUnitSkipped:
	default:
		bad("report.junit_inconclusive", "must be %s or %s (got %q): how junit.xml shows an inconclusive verdict", JUnitFailure, JUnitSkipped, c.Report.JUnitInconclusive)
	}
	if c.Soak.Profile != "" {
		if _, ok := c.Profiles[c.Soak.Profile]; !ok {
			bad("soak.profile", "names no profile (got %q)", c.Soak.Profile)
		}
	}
	if c.Soak.Cycles < 0 {
		bad("soak.cycles", "must not be negative (got %d)", c.Soak.Cycles)
	}
	if c.Soak.Duration < 0 {
		bad("soak.duration", "must not be negative (got %s)", c.Soak.Duration)
	}
	if c.Soak.Pause < 0 {
		bad("soak.pause", "must not be negative (got %s)", c.Soak.Pause)
	}
	if d := c.Soak.Drift; d.WarmupCycles < 0 || d.WarmupCycles > 1000 {
		bad("soak.drift.warmup_cycles", "must be between 0 and 1000 (got %d)", d.WarmupCycles)
	}
	if d := c.Soak.Drift; d.SustainedCycles < 1 || d.SustainedCycles > 1000 {
		bad("soak.drift.sustained_cycles", "must be between 1 and 1000 (got %d)", d.SustainedCycles)
	}
	if d := c.Soak.Drift; d.BaselineCycles < 1 {
		bad("soak.drift.baseline_cycles", "must be at least 1 (got %d)", d.BaselineCycles)
	}
	for path, v := range map[string]float64{"soak.drift.heap_live_ratio": c.Soak.Drift.HeapLiveRatio, "soak.drift.rss_ratio": c.Soak.Drift.RSSRatio, "soak.drift.cpu_per_request_ratio": c.Soak.Drift.CPUPerRequestRatio} {
		if v < 1 {
			bad(path, "must be at least 1 (a ratio to the first cycles; got %g)", v)
		}
	}
	nonNegative("soak.drift.goroutines_increase", c.Soak.Drift.GoroutinesIncrease)
	nonNegative("soak.drift.gc_percent_increase_points", c.Soak.Drift.GCPercentIncreasePoints)
	if _, _, err := net.SplitHostPort(c.API.Listen); err != nil {
		bad("api.listen", "must be host:port, like 127.0.0.1:7070 (got %q)", c.API.Listen)
	}
	if c.Metrics.Linger < 0 || c.Metrics.Linger > time.Hour {
		bad("metrics.linger", "must be between 0s and 1h (got %s)", c.Metrics.Linger)
	}

	if len(c.Profiles) == 0 {
		bad("profiles", "at least one profile is needed")
	}
	if _, ok := c.Profiles[c.DefaultProfile]; !ok {
		bad("default_profile", "names no profile (got %q; profiles: %s)", c.DefaultProfile, strings.Join(c.ProfileNames(), ", "))
	}
	if c.GraphQL.MaxSubscriptionsPerSocket < 1 {
		bad("graphql.max_subscriptions_per_socket", "must be at least 1 (got %d)", c.GraphQL.MaxSubscriptionsPerSocket)
	}
	for _, name := range c.ProfileNames() {
		for i, ph := range c.Profiles[name].Phases {
			if s := ph.Subscriptions; s.Clients > 0 && c.GraphQL.MaxSubscriptionsPerSocket >= 1 && s.PerClient > c.GraphQL.MaxSubscriptionsPerSocket {
				bad(fmt.Sprintf("profiles.%s.phases[%d].subscriptions.per_client", name, i),
					"%d subscriptions per client exceed graphql.max_subscriptions_per_socket (%d): the target would close those sockets",
					s.PerClient, c.GraphQL.MaxSubscriptionsPerSocket)
			}
		}
		ps = append(ps, c.Profiles[name].validate("profiles."+name, c.Operations)...)
		ps = append(ps, c.Profiles[name].measurable("profiles."+name, c.Sampler.Interval)...)
	}
	slices.SortStableFunc(ps, func(a, b FieldError) int { return strings.Compare(a.Path, b.Path) })
	return ps
}

// validateTarget checks the target: section: the keys its kind needs, no
// key another kind reads, URLs of the right scheme on loopback unless
// target.allow_non_loopback, and the built-in target's own settings left
// alone when it is not the target.
func (c *Config) validateTarget() []FieldError {
	var ps []FieldError
	bad := func(path, format string, args ...any) {
		ps = append(ps, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	t := c.Target
	switch t.Kind {
	case report.TargetBuiltin, report.TargetAttach, report.TargetCommand, report.TargetKubernetes:
	default:
		bad("target.kind", "must be builtin, attach, command or kubernetes (got %q)", t.Kind)
		return ps
	}
	switch t.Scenario {
	case ScenarioDonut:
	case ScenarioRelational:
		if t.Kind != report.TargetBuiltin {
			bad("target.scenario", "relational is served by the built-in target; target.kind is %s", t.Kind)
		}
		ps = append(ps, c.Relational.validate()...)
	default:
		bad("target.scenario", "must be donut or relational (got %q)", t.Scenario)
	}
	switch extsample.Runtime(t.Runtime) {
	case extsample.RuntimeGo, extsample.RuntimeNode, extsample.RuntimeDotNet, extsample.RuntimeJVM, "auto":
	default:
		bad("target.runtime", "must be go, node, dotnet, jvm or auto (got %q)", t.Runtime)
	}
	if t.ReadyTimeout < time.Second || t.ReadyTimeout > time.Hour {
		bad("target.ready_timeout", "must be between 1s and 1h (got %s)", t.ReadyTimeout)
	}
	if t.StopGrace < 0 || t.StopGrace > 10*time.Minute {
		bad("target.stop_grace", "must be between 0s and 10m (got %s)", t.StopGrace)
	}
	// Keys that belong to other kinds.
	only := func(path string, set bool, kinds ...string) {
		if set && !slices.Contains(kinds, t.Kind) {
			bad(path, "is read only for target.kind %s; target.kind is %s", strings.Join(kinds, " or "), t.Kind)
		}
	}
	ext := []string{report.TargetAttach, report.TargetCommand, report.TargetKubernetes}
	only("target.graphql_url", t.GraphQLURL != "", ext...)
	only("target.graphql_ws_url", t.GraphQLWSURL != "", ext...)
	only("target.rest_url", t.RESTURL != "", ext...)
	only("target.metrics_url", t.MetricsURL != "", report.TargetAttach, report.TargetCommand)
	only("target.pprof_url", t.PprofURL != "", report.TargetAttach, report.TargetCommand)
	only("target.allow_non_loopback", t.AllowNonLoopback, ext...)
	only("target.kubernetes.selector", t.Kubernetes.Selector != "", report.TargetKubernetes)
	only("target.kubernetes.metrics_port", t.Kubernetes.MetricsPort != "", report.TargetKubernetes)
	only("target.kubernetes.allow_restarts", t.Kubernetes.AllowRestarts, report.TargetKubernetes)
	only("target.in_process", t.InProcess, report.TargetBuiltin)
	only("target.pid", t.PID != 0, report.TargetAttach)
	only("target.pid_file", t.PIDFile != "", report.TargetAttach)
	only("target.argv", len(t.Argv) > 0, report.TargetCommand)
	only("target.env", len(t.Env) > 0, report.TargetCommand)
	only("target.dir", t.Dir != "", report.TargetCommand)
	only("target.ready_url", t.ReadyURL != "", report.TargetAttach, report.TargetCommand)
	if !t.External() {
		return ps
	}

	url := func(path, raw string, required bool, schemes ...string) {
		if raw == "" {
			if required {
				bad(path, "must be set for target.kind %s (an %s URL)", t.Kind, strings.Join(schemes, " or "))
			}
			return
		}
		u, err := neturl.Parse(raw)
		if err != nil || !slices.Contains(schemes, u.Scheme) || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			bad(path, "must be an absolute %s URL without query or fragment, like %s://127.0.0.1:8080/... (got %q)", strings.Join(schemes, " or "), schemes[0], raw)
			return
		}
		if !t.AllowNonLoopback && !api.IsLoopback(u.Hostname()) {
			bad(path, "%s is not on loopback: soakd would send load (and mutations) or scrapes off this machine; "+
				"use 127.0.0.1, ::1 or localhost, or set target.allow_non_loopback: true", raw)
		}
	}
	url("target.graphql_url", t.GraphQLURL, true, "http", "https")
	url("target.graphql_ws_url", t.GraphQLWSURL, false, "ws", "wss")
	// Optional: a target without a REST twin runs GraphQL-only profiles
	// (no control group); RunSuite refuses REST phases against it.
	url("target.rest_url", t.RESTURL, false, "http", "https")
	url("target.metrics_url", t.MetricsURL, false, "http", "https")
	url("target.pprof_url", t.PprofURL, false, "http", "https")
	if t.PprofURL != "" && t.Runtime != "go" && t.Runtime != "auto" {
		bad("target.pprof_url", "is a Go target's /debug/pprof/; target.runtime is %s", t.Runtime)
	}
	switch t.Kind {
	case report.TargetAttach:
		switch {
		case t.PID == 0 && t.PIDFile == "":
			bad("target.pid", "attach needs the process to measure: set target.pid or target.pid_file")
		case t.PID != 0 && t.PIDFile != "":
			bad("target.pid", "set target.pid or target.pid_file, not both")
		case t.PID < 0:
			bad("target.pid", "must be a positive process id (got %d)", t.PID)
		case t.PID == os.Getpid():
			bad("target.pid", "%d is soakd itself; use target.kind builtin to measure the built-in target", t.PID)
		}
		url("target.ready_url", t.ReadyURL, false, "http", "https")
	case report.TargetCommand:
		if len(t.Argv) == 0 || t.Argv[0] == "" {
			bad("target.argv", "command needs the program to start and its arguments, e.g. [/usr/local/bin/server, --port, \"8080\"]")
		}
		for k := range t.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				bad("target.env", "%q is not an environment variable name", k)
			}
		}
		url("target.ready_url", t.ReadyURL, true, "http", "https")
	case report.TargetKubernetes:
		ps = append(ps, t.Kubernetes.validate()...)
	}
	// The built-in target's settings mean nothing for another server:
	// refuse those that would silently do nothing.
	if in := c.Inject; in != (InjectConfig{}) {
		bad("inject", "plants a regression in the built-in target, which is not the target for target.kind %s; remove it", t.Kind)
	}
	if c.Pinning.Target != "" {
		bad("pinning.target", "pins the built-in target's process, which is not the target for target.kind %s; pin the server yourself (taskset, a cgroup cpuset) and leave pinning unset", t.Kind)
	}
	if c.Profiling.Pyroscope.ServerAddress != "" {
		bad("profiling.pyroscope.server_address", "pushes the built-in target's profiles, which are not the target's for target.kind %s; remove it", t.Kind)
	}
	return ps
}

// validate checks the relational: section (target.scenario relational).
func (r RelationalConfig) validate() []FieldError {
	var ps []FieldError
	bad := func(path, format string, args ...any) {
		ps = append(ps, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	switch r.Store {
	case "sqlite":
	case "postgres":
		if r.DSNEnv == "" {
			bad("relational.dsn_env", "store postgres needs the name of the environment variable holding its DSN, e.g. SOAKD_RELATIONAL_DSN")
		}
	default:
		bad("relational.store", "must be sqlite or postgres (got %q)", r.Store)
	}
	if r.PoolSize < 1 || r.PoolSize > 1000 {
		bad("relational.pool_size", "must be between 1 and 1000 connections (got %d)", r.PoolSize)
	}
	if !(r.Scale >= 0.01 && r.Scale <= 10) {
		bad("relational.scale", "must be between 0.01 and 10 (got %g)", r.Scale)
	}
	if r.RequestTimeout < time.Millisecond || r.RequestTimeout > 10*time.Minute {
		bad("relational.request_timeout", "must be between 1ms and 10m (got %s)", r.RequestTimeout)
	}
	if r.BatchWait < 0 || r.BatchWait > time.Second {
		bad("relational.batch_wait", "must be between 0s and 1s (got %s)", r.BatchWait)
	}
	return ps
}

// ProfileNames returns the profile names in sorted order.
func (c *Config) ProfileNames() []string {
	names := make([]string, 0, len(c.Profiles))
	for n := range c.Profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// expectedSteady estimates a closed-model phase's steady window before it
// runs: the fewest iterations of any group times the mean think time (the
// time the first user needs at least, latency aside), less ramp_up,
// trim_head and trim_tail; for a phase with a duration, the duration less
// those. ok is false when no estimate exists (no think time: latency-bound).
func (p Profile) expectedSteady(ph PhaseConfig) (time.Duration, bool) {
	trims := p.TrimHead + p.TrimTail
	if ph.Model != "" && ph.Model != workloads.Closed {
		if ph.Duration <= 0 {
			return 0, false
		}
		return ph.Duration - trims, true
	}
	if ph.Duration > 0 {
		return ph.Duration - ph.RampUp - trims, true
	}
	meanThink := (ph.Think.Min + ph.Think.Max) / 2
	if meanThink <= 0 || len(ph.Users) == 0 {
		return 0, false
	}
	iters := ph.Users[0].Iterations
	for _, u := range ph.Users[1:] {
		iters = min(iters, u.Iterations)
	}
	if iters <= 0 {
		return 0, false
	}
	return time.Duration(iters)*meanThink - ph.RampUp - trims, true
}

// measurable refuses a profile whose compared phases cannot hold enough
// samples: a steady window expected to span fewer than minSteadySamples
// samples at the sampler interval would give figures that are not measured,
// so the run would be inconclusive by construction. The estimate ignores
// latency (real windows are longer), so only profiles that cannot work are
// refused.
func (p Profile) measurable(path string, interval time.Duration) []FieldError {
	var ps []FieldError
	if interval <= 0 {
		return nil
	}
	// A window of k intervals holds k or k+1 samples depending on where
	// the sampler's ticks fall: minSteadySamples intervals guarantee them.
	need := time.Duration(MinSteadySamples) * interval
	for i, ph := range p.Phases {
		if ph.Name != p.Compare.REST && ph.Name != p.Compare.GraphQL {
			continue
		}
		got, ok := p.expectedSteady(ph)
		if !ok || got >= need {
			continue
		}
		ps = append(ps, FieldError{Path: fmt.Sprintf("%s.phases[%d]", path, i), Msg: fmt.Sprintf(
			"phase %s cannot be measured: its steady window is expected to last about %s (iterations × mean think time − ramp_up − trim_head − trim_tail), "+
				"but %d samples at sampler.interval %s need at least %s; raise the iterations (or the duration), shorten ramp_up or the trims, or lower sampler.interval",
			ph.Name, got.Round(10*time.Millisecond), MinSteadySamples, interval, need)})
	}
	return ps
}

func (p Profile) validate(path string, ops map[workloads.Operation]workloads.OperationDef) []FieldError {
	var ps []FieldError
	bad := func(path, format string, args ...any) {
		ps = append(ps, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if p.Settle < 0 {
		bad(path+".settle", "must not be negative (got %s)", p.Settle)
	}
	if p.TrimHead < 0 {
		bad(path+".trim_head", "must not be negative (got %s)", p.TrimHead)
	}
	if p.TrimTail < 0 {
		bad(path+".trim_tail", "must not be negative (got %s)", p.TrimTail)
	}
	if p.RequestTimeout <= 0 || p.RequestTimeout > workloads.MaxRequestTimeout {
		bad(path+".request_timeout", "must be a positive duration of at most %s, the top of the latency histograms (got %s)", workloads.MaxRequestTimeout, p.RequestTimeout)
	}
	if len(p.Phases) == 0 {
		bad(path+".phases", "at least one phase is needed")
	}
	if p.Rounds < 1 || p.Rounds > 100 {
		bad(path+".rounds", "must be between 1 and 100 (got %d)", p.Rounds)
	}
	switch p.Gate {
	case kpi.GateInterval:
	case "median", "worst":
		bad(path+".gate", "%q was replaced by the confidence-interval rule (a verdict from one number failed unchanged builds): remove the key or write gate: interval, and see docs/methodology.md, \"Statistics of the gate\"", p.Gate)
	default:
		bad(path+".gate", "must be interval (got %q)", p.Gate)
	}
	if p.MaxRounds != 0 && (p.MaxRounds < p.Rounds || p.MaxRounds > 100) {
		bad(path+".max_rounds", "must be 0 (no adaptive rounds) or between rounds (%d) and 100 (got %d)", p.Rounds, p.MaxRounds)
	}
	if p.Scenario != "" && p.Scenario != ScenarioDonut && p.Scenario != ScenarioRelational {
		bad(path+".scenario", "must be empty, donut or relational (got %q)", p.Scenario)
	}
	if p.MemoryPhase != "" && !slices.ContainsFunc(p.Phases, func(ph PhaseConfig) bool { return ph.Name == p.MemoryPhase }) {
		bad(path+".memory_phase", "names no phase of this profile (got %q)", p.MemoryPhase)
	}
	switch p.Drivers.Backend {
	case "", BackendLocal, BackendKubernetes:
	default:
		bad(path+".drivers.backend", "must be local or kubernetes (got %q)", p.Drivers.Backend)
	}
	if n := p.Drivers.Shards; n < 0 || n > workloads.MaxShards {
		bad(path+".drivers.shards", "must be between 1 and %d driver processes per phase (0 or 1 is one driver; got %d)", workloads.MaxShards, n)
	}
	arms := map[string]string{}
	for i, ph := range p.Phases {
		pp := fmt.Sprintf("%s.phases[%d]", path, i)
		if ph.Name == "" {
			bad(pp+".name", "must not be empty")
		} else if _, dup := arms[ph.Name]; dup {
			bad(pp+".name", "phase name %q is used twice", ph.Name)
		} else {
			arms[ph.Name] = ph.Arm
		}
		ok := ph.Arm == "rest" || ph.Arm == "graphql"
		if !ok {
			bad(pp+".arm", "must be rest or graphql (got %q)", ph.Arm)
		}
		for j, u := range ph.Users {
			if def, defined := ops[u.Operation]; ok && defined && def.Endpoint() != "" && def.Endpoint() != ph.Arm {
				bad(fmt.Sprintf("%s.users[%d].operation", pp, j), "%s is a %s operation; it does not belong in a %s phase", u.Operation, def.Endpoint(), ph.Arm)
			}
		}
		spec := p.spec(ph, ops, i, "validate")
		if n := p.Drivers.Count(); n > 1 && n <= workloads.MaxShards {
			// What each of the n shards runs must be valid too (every
			// shard needs a request slot of the open model's).
			spec.Shard = workloads.Shard{Count: n}
		}
		ps = append(ps, specProblems(pp, spec)...)
	}
	for key, want := range map[string]string{"rest": p.Compare.REST, "graphql": p.Compare.GraphQL} {
		kp := path + ".compare." + key
		switch arm, ok := arms[want]; {
		case want == "" && key == "rest":
			// No control group: the GraphQL arm is measured alone and the
			// KPIs, which need REST, read "no control group".
		case want == "":
			bad(kp, "must name the %s phase to compare", key)
		case !ok:
			bad(kp, "names no phase of this profile (got %q)", want)
		case arm != key:
			bad(kp, "phase %q is a %s phase, not %s", want, arm, key)
		}
	}
	return ps
}

// Phases builds the driver specs of profile p for run id run.
func (c *Config) Phases(p Profile, run string) []workloads.Phase {
	out := make([]workloads.Phase, 0, len(p.Phases))
	for i, ph := range p.Phases {
		spec := p.spec(ph, c.Operations, i, run)
		spec.Operations = c.resolvedOperations(spec)
		if spec.Model == workloads.Ramping || spec.Model == workloads.RampingRate {
			spec.DriverBurn = time.Duration(c.Inject.DriverCPUMicrosPerRequest) * time.Microsecond
		}
		out = append(out, spec)
	}
	return out
}

// resolvedOperations returns the operations spec uses (its groups', its
// subscription's and the writer raising it), CSV data with its file as
// validated.
func (c *Config) resolvedOperations(spec workloads.Phase) map[workloads.Operation]workloads.OperationDef {
	used := map[workloads.Operation]workloads.OperationDef{}
	add := func(name workloads.Operation) {
		if d, ok := c.Operations[name]; ok {
			used[name] = cloneOperation(d)
		}
	}
	for _, g := range spec.Groups {
		add(g.Operation)
	}
	if spec.Subscriptions.Clients > 0 {
		if name, err := spec.SubscriptionOperation(); err == nil {
			add(name)
		}
	}
	for _, d := range used {
		for v, dd := range d.Data {
			if f, ok := c.CSVFiles[dd.CSV]; ok && dd.CSV != "" {
				dd.File = &f
				d.Data[v] = dd
			}
		}
	}
	return used
}

// spec is the driver's spec for phase i, with every defined operation (the
// driver gets only those it uses: resolvedOperations).
func (p Profile) spec(ph PhaseConfig, ops map[workloads.Operation]workloads.OperationDef, i int, run string) workloads.Phase {
	return workloads.Phase{
		Name: ph.Name, Arm: ph.Arm, Model: ph.Model,
		Groups: slices.Clone(ph.Users), Think: ph.Think, RampUp: ph.RampUp, Duration: ph.Duration,
		Rate: ph.Rate, RateEnd: ph.RateEnd, MaxInFlight: ph.MaxInFlight,
		Ramp: ph.Ramp, Failure: ph.Failure, Subscriptions: ph.Subscriptions,
		TrimHead: p.TrimHead, TrimTail: p.TrimTail, RequestTimeout: p.RequestTimeout,
		Operations: ops, Seed: p.Seed + uint64(i), Run: run,
	}
}

// specProblems runs the driver's own validation of a phase spec and turns
// its "key: message" errors into key paths: profile-level keys under the
// profile, the rest under the phase.
func specProblems(phasePath string, spec workloads.Phase) []FieldError {
	err := spec.Validate()
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var ps []FieldError
	for _, e := range errs {
		key, msg, found := strings.Cut(e.Error(), ": ")
		if !found {
			ps = append(ps, FieldError{Path: phasePath, Msg: e.Error()})
			continue
		}
		switch root, _, _ := strings.Cut(key, "."); root {
		case "trim_head", "trim_tail", "request_timeout", "seed":
			// Profile-level keys: the profile's own checks report them once.
			continue
		case "name", "arm", "run", "operations":
			// Set by soakd or checked above with better words (operations:
			// once each, at the top level).
			continue
		}
		ps = append(ps, FieldError{Path: phasePath + "." + key, Msg: msg})
	}
	return ps
}

// PhaseSpec returns the driver spec (JSON) of the phase called phase in
// profile ("" means the default profile), for running `soakd drive` by hand.
func PhaseSpec(c *Config, profile, phase string) ([]byte, error) {
	if profile == "" {
		profile = c.DefaultProfile
	}
	p, ok := c.Profiles[profile]
	if !ok {
		return nil, exitcode.Usagef("--profile %q does not exist; profiles: %v", profile, c.ProfileNames())
	}
	var names []string
	for _, spec := range c.Phases(p, "manual-"+time.Now().UTC().Format("20060102T150405Z")) {
		if spec.Name == phase {
			b, err := json.Marshal(spec)
			if err != nil {
				return nil, fmt.Errorf("cannot encode phase %s: %w", phase, err)
			}
			return b, nil
		}
		names = append(names, spec.Name)
	}
	return nil, exitcode.Usagef("profile %s has no phase %q; its phases: %v", profile, phase, names)
}

// EffectiveYAML renders c as the YAML document it stands for: every key,
// defaults included, so that `soakd config` shows what a run will use and its
// output is accepted back as --config. The API token is redacted.
func EffectiveYAML(c *Config) ([]byte, error) {
	cp := c.Clone()
	if cp.API.Token != "" {
		cp.API.Token = "<redacted>"
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(cp); err != nil {
		return nil, fmt.Errorf("cannot render the configuration: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("cannot render the configuration: %w", err)
	}
	return b.Bytes(), nil
}

// MinSteadySamples is the fewest target samples a steady window must hold
// for its resource figures to count as measured: two give one delta with
// no check on it; three let a torn or stalled sample show.
const MinSteadySamples = 3

// Limits are the KPI limits as the gate takes them.
func (k KPIConfig) Limits() kpi.Limits {
	return kpi.Limits{
		CPUIncreasePoints:              k.CPUIncreasePoints,
		GCIncreasePoints:               k.GCIncreasePoints,
		ThroughputDecreasePercent:      k.ThroughputDecreasePercent,
		CPUPerRequestIncreasePercent:   k.CPUPerRequestIncreasePercent,
		AllocPerRequestIncreasePercent: k.AllocPerRequestIncreasePercent,
		GCPauseP99IncreasePercent:      k.GCPauseP99IncreasePercent,
		GCPauseP99FloorMs:              k.GCPauseP99FloorMs,
	}
}
