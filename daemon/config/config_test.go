package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/exitcode"
)

func defaults(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../../config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEmbeddedDefaultsLoad(t *testing.T) {
	cfg, err := Load(defaults(t), nil, "embedded")
	if err != nil {
		t.Fatalf("the embedded config.yaml must load: %v", err)
	}
	if cfg.DefaultProfile != "quick" {
		t.Errorf("default_profile: got %q, want quick", cfg.DefaultProfile)
	}
	for _, name := range []string{"quick", "seed"} {
		p, ok := cfg.Profiles[name]
		if !ok {
			t.Fatalf("profile %s missing", name)
		}
		if len(cfg.Phases(p, "r")) != len(p.Phases) {
			t.Errorf("%s: phases not converted", name)
		}
	}
	seed := cfg.Profiles["seed"]
	if u := seed.Phases[1].Users[0]; u.Users != 300 || u.Iterations != 10000 {
		t.Errorf("seed profile must keep seed 002's 300 users x 10,000: got %+v", u)
	}
}

// problems loads user on top of the defaults and returns the problems.
func problems(t *testing.T, user string) []FieldError {
	t.Helper()
	cfg, err := Load(defaults(t), []byte(user), "user.yaml")
	if err == nil {
		t.Fatalf("expected an error for:\n%s\ngot config %+v", user, cfg.Server)
	}
	if cfg != nil {
		t.Errorf("a config came back with an error")
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("error is %T, want *ConfigError: %v", err, err)
	}
	if exitcode.Of(err) != exitcode.Usage {
		t.Errorf("exit code: got %d, want %d", exitcode.Of(err), exitcode.Usage)
	}
	if !strings.Contains(err.Error(), "user.yaml") {
		t.Errorf("the message must name the file: %v", err)
	}
	return ce.Problems
}

func has(t *testing.T, ps []FieldError, path string, line int, msg string) {
	t.Helper()
	for _, p := range ps {
		if p.Path == path && (line == 0 || p.Line == line) && strings.Contains(p.Msg, msg) {
			return
		}
	}
	t.Errorf("no problem %q at %s line %d in:\n%v", msg, path, line, errors.Join(asErrors(ps)...))
}

func TestUnknownKeys(t *testing.T) {
	ps := problems(t, "server:\n  lisen: 127.0.0.1:1\nsampler:\n  interval: 1s\n  rate: 2\n")
	has(t, ps, "server.lisen", 2, "unknown key; allowed keys here: listen,")
	has(t, ps, "sampler.rate", 5, "unknown key")
	if len(ps) != 2 {
		t.Errorf("got %d problems, want 2: %v", len(ps), ps)
	}
	ps = problems(t, "profiles:\n  mine:\n    phases:\n      - name: a\n        arms: rest\n")
	has(t, ps, "profiles.mine.phases[0].arms", 5, "unknown key")
}

func TestWrongTypes(t *testing.T) {
	ps := problems(t, `
server:
  max_body_bytes: lots
  read_timeout: 5
  idle_timeout: soon
graphql:
  introspection: yes please
data: [1, 2]
kpis:
  gc_increase_points: one
`)
	has(t, ps, "server.max_body_bytes", 3, `"lots" is not a valid integer`)
	has(t, ps, "server.read_timeout", 4, "is not a duration; write it with a unit")
	has(t, ps, "server.idle_timeout", 5, "is not a duration")
	has(t, ps, "graphql.introspection", 7, "is not a boolean")
	has(t, ps, "data", 8, "must be a mapping")
	has(t, ps, "kpis.gc_increase_points", 10, "is not a valid number")
	if len(ps) != 6 {
		t.Errorf("all problems must come at once: got %d, want 6: %v", len(ps), ps)
	}
}

func TestOutOfRange(t *testing.T) {
	ps := problems(t, `
server:
  listen: nowhere
  max_body_bytes: 10
data:
  donuts: 0
sampler:
  interval: 1ms
kpis:
  throughput_decrease_percent: 120
default_profile: nope
profiles:
  bad:
    request_timeout: 0s
    compare: {rest: g, graphql: missing}
    phases:
      - name: g
        arm: graphql
        think: {min: 30ms, max: 10ms}
        users:
          - {operation: rest-get, users: 0, iterations: 0}
      - name: g
        arm: soap
        users: []
`)
	has(t, ps, "server.listen", 3, "must be host:port")
	has(t, ps, "server.max_body_bytes", 4, "at least 1024")
	has(t, ps, "data.donuts", 6, "between 1 and")
	has(t, ps, "sampler.interval", 8, "between 10ms and 1m")
	has(t, ps, "kpis.throughput_decrease_percent", 10, "between 0 and 100")
	has(t, ps, "default_profile", 11, "names no profile")
	has(t, ps, "profiles.bad.request_timeout", 14, "positive")
	has(t, ps, "profiles.bad.compare.rest", 15, "is a graphql phase, not rest")
	has(t, ps, "profiles.bad.compare.graphql", 15, "names no phase")
	has(t, ps, "profiles.bad.phases[0].think.max", 19, "must be between think.min (30ms)")
	has(t, ps, "profiles.bad.phases[0].users[0].operation", 21, "does not belong in a graphql phase")
	has(t, ps, "profiles.bad.phases[0].users[0].users", 21, "between 1 and 100000")
	has(t, ps, "profiles.bad.phases[0].users[0].iterations", 21, "at least 1")
	has(t, ps, "profiles.bad.phases[1].name", 22, "used twice")
	has(t, ps, "profiles.bad.phases[1].arm", 23, "must be rest or graphql")
	has(t, ps, "profiles.bad.phases[1].users", 24, "at least one user group is required")
}

func TestGraphQLLimits(t *testing.T) {
	cfg, err := Load(defaults(t), nil, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	if g := cfg.GraphQL; g.Introspection || g.MaxAliases != 100 || g.MaxComplexity != 1000 || g.MaxDepth != 15 {
		t.Errorf("embedded graphql limits: got %+v, want introspection off, max_aliases 100, max_complexity 1000, max_depth 15", g)
	}
	ps := problems(t, "graphql:\n  max_aliases: 0\n  max_complexity: -1\n")
	has(t, ps, "graphql.max_aliases", 2, "must be at least 1 (got 0)")
	has(t, ps, "graphql.max_complexity", 3, "must be at least 1 (got -1)")
}

func TestProfilingLayers(t *testing.T) {
	cfg, err := Load(defaults(t), []byte("profiling:\n  layers:\n    - name: my-cache\n      functions: [\"github.com/acme/cache.*\"]\n"), "user.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Profiling.LayerRules(); len(got) != 1 || got[0].Layer != "my-cache" || got[0].Patterns[0] != "github.com/acme/cache.*" {
		t.Errorf("layers: got %+v, want my-cache claiming github.com/acme/cache.*", got)
	}
	ps := problems(t, "profiling:\n  layers:\n    - name: \"\"\n      functions: [\"a.*\"]\n")
	has(t, ps, "profiling.layers", 3, "the name is empty")
	ps = problems(t, "profiling:\n  layers:\n    - name: slow\n      functions: [\"a b\"]\n")
	has(t, ps, "profiling.layers", 3, "without spaces")
}

func TestUserFileOverlaysDefaults(t *testing.T) {
	cfg, err := Load(defaults(t), []byte("server:\n  listen: 127.0.0.1:9999\ndefault_profile: seed\n"), "user.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Listen != "127.0.0.1:9999" || cfg.DefaultProfile != "seed" {
		t.Errorf("user values not applied: %q %q", cfg.Server.Listen, cfg.DefaultProfile)
	}
	if cfg.Server.MaxBodyBytes != 1048576 || cfg.Profiles["quick"].Phases == nil {
		t.Errorf("defaults lost under a partial user file")
	}
}

func TestNotYAML(t *testing.T) {
	has(t, problems(t, "server: [unclosed"), "", 0, "not valid YAML")
	has(t, problems(t, ""), "", 0, "empty")
	has(t, problems(t, "a: 1\n---\nb: 2\n"), "", 2, "more than one YAML document")
	has(t, problems(t, "- 1\n- 2\n"), "", 1, "must be a mapping")
}

func FuzzLoadConfig(f *testing.F) {
	d := defaults(f)
	f.Add([]byte("server:\n  listen: 127.0.0.1:0\n"))
	f.Add([]byte("profiles:\n  x:\n    phases: [{name: a, arm: rest, users: [{operation: rest-get, users: 1, iterations: 1}]}]\n"))
	f.Add([]byte("kpis: {cpu_increase_points: -1}\n"))
	f.Add([]byte("&a [*a]"))
	f.Add(d)
	f.Fuzz(func(t *testing.T, user []byte) {
		cfg, err := Load(d, user, "fuzz.yaml")
		if (cfg == nil) == (err == nil) {
			t.Fatalf("want exactly one of config and error, got %v and %v", cfg, err)
		}
		if err != nil && exitcode.Of(err) != exitcode.Usage {
			t.Fatalf("a config error must be a usage error, got %d: %v", exitcode.Of(err), err)
		}
	})
}

func asErrors(ps []FieldError) []error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errs
}

func TestWorkloadModelProblems(t *testing.T) {
	ps := problems(t, `
profiles:
  m:
    request_timeout: 5s
    compare: {rest: r, graphql: g}
    phases:
      - name: r
        arm: rest
        users: [{operation: rest-get, users: 1, iterations: 1}]
        subscriptions: {clients: 2, per_client: 1, protocol: graphql-ws}
      - name: g
        arm: graphql
        model: open
        users: [{operation: graphql-query, users: 1, iterations: 1}]
      - name: x
        arm: graphql
        model: ramping
        duration: 10s
        ramp: {start: 0, step: 0, every: 0s, max: 0}
        failure: {window: 1500ms}
        users: [{operation: graphql-mutation, users: 1, iterations: 0}]
        subscriptions: {clients: 0, per_client: 1, protocol: smoke}
`)
	has(t, ps, "profiles.m.phases[0].subscriptions", 10, "need a graphql-mutation group")
	has(t, ps, "profiles.m.phases[1].rate", 0, "")
	has(t, ps, "profiles.m.phases[1].duration", 0, "")
	has(t, ps, "profiles.m.phases[1].max_in_flight", 0, "")
	has(t, ps, "profiles.m.phases[2].ramp", 19, "start or step must be at least 1")
	has(t, ps, "profiles.m.phases[2].failure.window", 0, "")
	has(t, ps, "profiles.m.phases[2].subscriptions.protocol", 0, "unknown protocol")
	has(t, ps, "profiles.m.phases[2].subscriptions", 0, "only a closed-model phase")
	if _, err := Load(defaults(t), []byte("profiles:\n  x:\n    phases: [{model: bursty}]\n"), "u.yaml"); err == nil || !strings.Contains(err.Error(), "model") {
		t.Errorf("an unknown model must be named: %v", err)
	}
}

func TestMemoryKeys(t *testing.T) {
	cfg, err := Load(defaults(t), nil, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.Memory; m.Warmup != 5*time.Second || m.MinGCCycles != 8 || m.MinSpan != 10*time.Second {
		t.Errorf("memory defaults: got warmup %s, min_gc_cycles %d, min_span %s; want 5s, 8, 10s", m.Warmup,
			m.MinGCCycles, m.MinSpan)
	}
	cfg, err = Load(defaults(t), []byte("memory:\n  warmup: 0s\n  min_gc_cycles: 3\n  min_span: 0s\n"), "user.yaml")
	if err != nil {
		t.Fatalf("the smallest valid memory keys must load: %v", err)
	}
	if m := cfg.Memory; m.Warmup != 0 || m.MinGCCycles != 3 || m.MinSpan != 0 {
		t.Errorf("memory keys not applied: %+v", m)
	}

	f := func(name, user, path string, line int, msg string) {
		t.Helper()
		ps := problems(t, user)
		has(t, ps, path, line, msg)
		if len(ps) != 1 {
			t.Errorf("%s: got %d problems, want 1: %v", name, len(ps), ps)
		}
	}
	f("negative warm-up", "memory:\n  warmup: -1s\n", "memory.warmup", 2, "must not be a negative duration (got -1s)")
	f("two GC cycles", "memory:\n  min_gc_cycles: 2\n", "memory.min_gc_cycles", 2, "must be at least 3")
	f("no GC cycles", "memory:\n  min_gc_cycles: 0\n", "memory.min_gc_cycles", 2, "(got 0)")
	f("negative span", "memory:\n  min_span: -500ms\n", "memory.min_span", 2, "must not be a negative duration (got -500ms)")
	f("span without a unit", "memory:\n  min_span: 10\n", "memory.min_span", 2, "is not a duration")
}

// TestUnmeasurableProfileRefused: a profile whose compared phases cannot
// hold enough samples at the sampler interval is refused before it runs,
// naming the phase and what to change.
func TestUnmeasurableProfileRefused(t *testing.T) {
	user := `
sampler: {interval: 1s}
profiles:
  short:
    description: too short to measure
    settle: 1s
    trim_head: 1s
    trim_tail: 1s
    request_timeout: 5s
    compare: {rest: r, graphql: g}
    phases:
      - {name: r, arm: rest, ramp_up: 2s, think: {min: 0ms, max: 30ms}, users: [{operation: rest-get, users: 10, iterations: 300}]}
      - {name: g, arm: graphql, ramp_up: 2s, think: {min: 0ms, max: 30ms}, users: [{operation: graphql-query, users: 10, iterations: 600}]}
`
	_, err := Load(defaults(t), []byte(user), "short.yaml")
	if err == nil || !strings.Contains(err.Error(), "profiles.short.phases[0]") || !strings.Contains(err.Error(), "phase r cannot be measured") ||
		strings.Contains(err.Error(), "phase g cannot") || !strings.Contains(err.Error(), "lower sampler.interval") {
		t.Fatalf("want phase r refused with advice, phase g accepted; got %v", err)
	}
	// The same profile at a faster sampler (100 ms) is measurable.
	if _, err := Load(defaults(t), []byte(strings.Replace(user, "interval: 1s", "interval: 100ms", 1)), "short.yaml"); err != nil {
		t.Errorf("at 100 ms the profile is measurable: %v", err)
	}
}

// TestCacheByteKeys: the GraphQL caches' byte budgets default to 16 MiB and
// 4 MiB, load from user config and must be positive.
func TestCacheByteKeys(t *testing.T) {
	cfg, err := Load(defaults(t), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if g := cfg.GraphQL; g.QueryCacheBytes != 16<<20 || g.APQCacheBytes != 4<<20 {
		t.Errorf("defaults: query_cache_bytes %d, apq_cache_bytes %d; want %d and %d", g.QueryCacheBytes, g.APQCacheBytes, 16<<20, 4<<20)
	}
	cfg, err = Load(defaults(t), []byte("graphql:\n  query_cache_bytes: 1\n  apq_cache_bytes: 2048\n"), "user.yaml")
	if err != nil {
		t.Fatalf("valid cache budgets must load: %v", err)
	}
	if g := cfg.GraphQL; g.QueryCacheBytes != 1 || g.APQCacheBytes != 2048 {
		t.Errorf("cache budgets not applied: %+v", g)
	}
	for _, key := range []string{"query_cache_bytes", "apq_cache_bytes"} {
		ps := problems(t, "graphql:\n  "+key+": 0\n")
		has(t, ps, "graphql."+key, 2, "must be at least 1 (got 0)")
		if len(ps) != 1 {
			t.Errorf("%s: got %d problems, want 1: %v", key, len(ps), ps)
		}
	}
}

// TestMaxSubscriptionsPerSocket: the per-connection cap on websocket
// operations defaults to 100, must be at least 1, and must hold every
// profile's subscriptions per client.
func TestMaxSubscriptionsPerSocket(t *testing.T) {
	cfg, err := Load(defaults(t), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.GraphQL.MaxSubscriptionsPerSocket; got != 100 {
		t.Errorf("default max_subscriptions_per_socket = %d, want 100", got)
	}
	ps := problems(t, "graphql:\n  max_subscriptions_per_socket: 0\n")
	has(t, ps, "graphql.max_subscriptions_per_socket", 2, "must be at least 1 (got 0)")
	ps = problems(t, "graphql:\n  max_subscriptions_per_socket: 1\n")
	has(t, ps, "profiles.quick.phases[2].subscriptions.per_client", 0,
		"2 subscriptions per client exceed graphql.max_subscriptions_per_socket (1)")
}

// TestTargetBindRule: server.listen off loopback needs
// server.allow_non_loopback, since /debug/pprof/ and unauthenticated
// mutations share the target's listener.
func TestTargetBindRule(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "'[::]:0'", "192.0.2.1:80", "example.com:80"} {
		ps := problems(t, "server:\n  listen: "+addr+"\n")
		has(t, ps, "server.listen", 2, "set server.allow_non_loopback: true")
	}
	for _, addr := range []string{"127.0.0.1:0", "127.0.0.2:0", "localhost:0", "'[::1]:0'"} {
		if _, err := Load(defaults(t), []byte("server:\n  listen: "+addr+"\n"), "user.yaml"); err != nil {
			t.Errorf("loopback %s must load: %v", addr, err)
		}
	}
	cfg, err := Load(defaults(t), []byte("server:\n  listen: 0.0.0.0:0\n  allow_non_loopback: true\n"), "user.yaml")
	if err != nil {
		t.Fatalf("0.0.0.0 with allow_non_loopback must load: %v", err)
	}
	if !cfg.Server.AllowNonLoopback {
		t.Errorf("allow_non_loopback not decoded")
	}
	// The compose stack's overlay listens on all interfaces of its
	// container, on purpose.
	stack, err := os.ReadFile("../../grafana/soakd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(defaults(t), stack, "grafana/soakd.yaml"); err != nil {
		t.Errorf("the compose stack's config must load: %v", err)
	}
}

func TestProfileScenarioAndRequestTimeout(t *testing.T) {
	ps := problems(t, `
profiles:
  bad:
    request_timeout: 2m
    scenario: graph
    compare: {graphql: g}
    phases:
      - {name: g, arm: graphql, users: [{operation: graphql-query, users: 1, iterations: 1}]}
`)
	has(t, ps, "profiles.bad.request_timeout", 4, "at most 1m0s, the top of the latency histograms")
	has(t, ps, "profiles.bad.scenario", 5, "must be empty, donut or relational")
}

// TestDriversShards refuses a number of shards out of range and shards
// the open model's request slots cannot serve; 3 shards of closed and open
// phases load, and 2 of a ramping phase.
func TestDriversShards(t *testing.T) {
	const prof = `
profiles:
  s:
    request_timeout: 5s
    drivers: {shards: %s}
    compare: {rest: r, graphql: g}
    phases:
      - name: r
        arm: rest
        users: [{operation: rest-get, users: 2, iterations: 3}]
        duration: 10s
      - name: g
        arm: graphql
        model: open
        rate: 10
        duration: 10s
        max_in_flight: %s
        users: [{operation: graphql-query, users: 1, iterations: 1}]
`
	cfg, err := Load(defaults(t), []byte(fmt.Sprintf(prof, "3", "4")), "user.yaml")
	if err != nil {
		t.Fatalf("3 shards of a closed and an open phase: %v", err)
	}
	if n := cfg.Profiles["s"].Drivers.Count(); n != 3 {
		t.Errorf("drivers.shards: got %d, want 3", n)
	}
	if n := cfg.Profiles["quick"].Drivers.Count(); n != 1 {
		t.Errorf("the default is one driver, got %d", n)
	}
	has(t, problems(t, fmt.Sprintf(prof, "-1", "4")), "profiles.s.drivers.shards", 0, "between 1 and 1000")
	has(t, problems(t, fmt.Sprintf(prof, "1001", "4")), "profiles.s.drivers.shards", 0, "between 1 and 1000")
	has(t, problems(t, fmt.Sprintf(prof, "3", "2")), "profiles.s.phases[1].max_in_flight", 0, "cannot be shared by 3 shards")
	ramping := fmt.Sprintf(prof, "2", "4") + `      - name: knee
        arm: graphql
        model: ramping
        duration: 10s
        ramp: {start: 1, step: 1, every: 1s, max: 5}
        failure: {window: 2s, max_error_ratio: 0.1}
        users: [{operation: graphql-query, users: 1, iterations: 0}]
`
	// The shards' windows are merged and the knee judged on the whole
	// load's (workloads.MaxLoadJudge): a sharded ramping phase loads.
	if cfg, err := Load(defaults(t), []byte(ramping), "user.yaml"); err != nil || len(cfg.Profiles["s"].Phases) != 3 {
		t.Errorf("2 shards of a ramping phase: %v", err)
	}
}
