package config

import (
	"maps"
	"reflect"
	"slices"
	"strings"
)

// overrideRule says whether a run started on a running daemon may override
// the configuration keys at and below Path, and Why not when it may not.
type overrideRule struct {
	Path string
	Why  string // "" for a key every run reads afresh
}

// restart ends the reason of every key that belongs to the running target
// or to the daemon.
const restart = "; set it in the daemon's config and restart"

// overrideRules lists what a run's overrides may change on `soakd serve`,
// whose target is one long-lived process: the allow-list (Why empty) names
// the keys RunSuite reads afresh for every run; every other key is refused,
// with the reason of its nearest listed ancestor (a key not listed at all
// is refused too).
func overrideRules() []overrideRule {
	const push = "where profiles are pushed, and with which credentials, is the daemon operator's choice: a run may not send the daemon's environment to an address of its own" + restart
	return []overrideRule{
		// Read by every run.
		{Path: "default_profile"},
		{Path: "profiles"},
		{Path: "operations"}, // compiled by each run's drivers
		{Path: "kpis"},
		{Path: "memory"},
		{Path: "profiling"},
		{Path: "metrics"},
		{Path: "profiling.pyroscope.server_address", Why: push},
		{Path: "profiling.pyroscope.basic_auth_user", Why: push},
		{Path: "profiling.pyroscope.basic_auth_password_env", Why: push},
		// The running target's, built once when it started.
		{Path: "target", Why: "the daemon measures one target, opened (or started, or attached to) when the daemon started" + restart},
		{Path: "server", Why: "the target's HTTP server is already listening with the daemon's settings" + restart},
		{Path: "graphql", Why: "the target's GraphQL handler (limits, caches, websockets) is built once when it starts" + restart},
		{Path: "data", Why: "the target's donut store and event broker were seeded when it started" + restart},
		{Path: "sampler", Why: "the sampler belongs to the running target" + restart},
		{Path: "inject", Why: "a planted regression is wired into the target when it starts" + restart},
		// The built-in target's CPU burn and extra allocation change while
		// it runs: the daemon sets them for the run and back afterwards (a
		// target without the switch refuses them when the run starts).
		{Path: "inject.graphql_cpu_us_per_request"},
		{Path: "inject.graphql_alloc_bytes_per_request"},
		{Path: "pinning", Why: "the target is a long-lived process (the daemon's child, or the daemon itself with target.in_process): pinning sets the CPU mask of all its threads, " +
			"which would outlive the run (and the drivers' CPUs must stay disjoint from the target's)" + restart},
		// The daemon's.
		{Path: "data_dir", Why: "the run history and the noise floor live in the daemon's data directory" + restart},
		{Path: "retention", Why: "retention prunes the daemon's history after every run with the daemon's settings" + restart},
		{Path: "soak", Why: "the scheduled soak is the daemon's; a run started through the API is not one of its cycles" + restart},
		{Path: "schedules", Why: "the schedules are the daemon's, read once by its scheduler when it starts" + restart},
		{Path: "api", Why: "the control API is already listening with the daemon's settings" + restart},
		// Read by no run.
		{Path: "compare", Why: "only soakd compare reads it; a run never does (pass --config to soakd compare)"},
	}
}

// overrideRefusal returns why the key at path (e.g. "sampler.interval",
// "profiles.quick.phases[0].name") cannot be overridden for one run on a
// running daemon, or "" when it can: the rule of the longest listed path
// that is path or one of its ancestors.
func overrideRefusal(path string) string {
	if parts := strings.Split(path, "."); len(parts) == 5 && parts[0] == "operations" && parts[2] == "data" && parts[4] == "csv" {
		// The daemon would read the file with its own rights for whoever
		// can reach the API: /etc/shadow, ../../…, /proc/self/environ
		// (which holds the control token and the database password).
		return "a run started through the control API may not name files: the daemon would read them with its own rights for whoever can reach the API; " +
			"define operations that read CSV data in the daemon's config" + restart
	}
	why, best := "it is not on the list of keys a run can override", -1
	for _, r := range overrideRules() {
		if (path == r.Path || strings.HasPrefix(path, r.Path+".") || strings.HasPrefix(path, r.Path+"[")) && len(r.Path) > best {
			why, best = r.Why, len(r.Path)
		}
	}
	return why
}

// RefuseOverrides checks a run's overrides (YAML) against overrideRules and
// returns a *ConfigError listing every refused key, by its path and line,
// with the reason, next to any unknown key or wrong type in doc; nil when
// nothing is refused. A key is named as deep as doc goes (sampler.interval,
// not sampler). Documents that do not parse are left to Overlay to report.
func RefuseOverrides(doc []byte, source string) error {
	body, err := parseDoc(doc, source)
	if err != nil {
		return nil
	}
	if _, problem := renameDeprecated(body); problem != nil {
		return nil // Overlay reports it
	}
	c := &checker{lines: map[string]int{}}
	c.check(body, reflect.TypeFor[Config](), "")
	paths := slices.Sorted(maps.Keys(c.lines))
	var refused []FieldError
	for _, p := range paths {
		if p == "" || slices.ContainsFunc(paths, func(q string) bool {
			return strings.HasPrefix(q, p+".") || strings.HasPrefix(q, p+"[")
		}) {
			continue // the root, or a key whose children are named instead
		}
		if why := overrideRefusal(p); why != "" {
			refused = append(refused, FieldError{Path: p, Line: c.lines[p], Msg: "override refused: " + why})
		}
	}
	if len(refused) == 0 {
		return nil
	}
	ps := append(refused, c.problems...)
	slices.SortStableFunc(ps, func(a, b FieldError) int { return strings.Compare(a.Path, b.Path) })
	return &ConfigError{Source: source, Problems: ps}
}
