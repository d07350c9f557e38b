package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/soakd/soakd/workloads"
)

// sideMaySet reports whether an A/B side file may change the top-level
// section key: only what a build is (the target and how it is started or
// reached, a planted regression, the built-in target's server and GraphQL
// settings, where its processes run and whether they are profiled). What
// the session is judged by — limits, KPIs, memory rules, the profile,
// phases, operations, data, the sampler — comes from the base
// configuration (--config) alone, so a candidate's side file cannot loosen
// the gate or run another workload than the build it is compared with. A
// new section is refused until it is named here.
func sideMaySet(key string) bool {
	switch key {
	case "target", "inject", "server", "graphql", "pinning", "profiling":
		return true
	}
	return false
}

// SideChanges returns the keys (dotted paths, "compare.cpu_per_request_increase_percent")
// whose value side, an A/B side's configuration (base with the side file
// on top), changes from base outside what a side may set (sideMaySet). It
// compares the effective configurations, so a key set to its base value
// is no change.
func SideChanges(base, side *Config) ([]string, error) {
	b, err := effectiveMap(base)
	if err != nil {
		return nil, err
	}
	s, err := effectiveMap(side)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range unionKeys(b, s) {
		if !sideMaySet(k) {
			out = append(out, diffPaths(k, b[k], s[k])...)
		}
	}
	// CSV data is loaded from files the operations name: the same names
	// with other contents would be another workload too.
	if !sameCSVContents(base.CSVFiles, side.CSVFiles) {
		out = append(out, "operations data (CSV file contents)")
	}
	return slices.Compact(out), nil
}

// effectiveMap is c's effective YAML as generic values.
func effectiveMap(c *Config) (map[string]any, error) {
	y, err := EffectiveYAML(c)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(y, &m); err != nil {
		return nil, fmt.Errorf("cannot compare the configurations: %w", err)
	}
	return m, nil
}

// diffPaths lists the leaf paths under path where a and b differ; maps are
// walked key by key, anything else compared whole.
func diffPaths(path string, a, b any) []string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		if reflect.DeepEqual(a, b) {
			return nil
		}
		return []string{path}
	}
	var out []string
	for _, k := range unionKeys(am, bm) {
		out = append(out, diffPaths(path+"."+k, am[k], bm[k])...)
	}
	return out
}

// unionKeys are the keys of a and of b, sorted, each once.
func unionKeys(a, b map[string]any) []string {
	keys := slices.Collect(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// sameCSVContents reports whether a and b describe the same CSV files with
// the same contents (their SHA-256: a copy touched since is the same data).
func sameCSVContents(a, b map[string]workloads.CSVFile) bool {
	return maps.EqualFunc(a, b, func(x, y workloads.CSVFile) bool { return x.SHA256 == y.SHA256 && x.Rows == y.Rows })
}
