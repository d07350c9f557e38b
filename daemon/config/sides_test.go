package config

import (
	"slices"
	"strconv"
	"testing"
)

// TestSideChanges: an A/B side file may change the build (target, inject,
// the built-in server), never what the session is judged by: a candidate's
// side file with compare: {cpu_per_request_increase_percent: 100000} passed
// a +238 % CPU regression before.
func TestSideChanges(t *testing.T) {
	base, err := Load(defaults(t), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, side string
		want       []string
	}{
		{"a planted regression", "inject:\n  graphql_cpu_us_per_request: 400\n", nil},
		{"another build's server", "server:\n  listen: 127.0.0.1:0\ngraphql:\n  introspection: true\n", nil},
		{"a key set to the base value", "compare:\n  cpu_per_request_increase_percent: " + strconv.FormatFloat(base.Compare.CPUPerRequestPercent, 'g', -1, 64) + "\n", nil},
		{"loosened limits", "compare:\n  cpu_per_request_increase_percent: 100000\nkpis:\n  confidence: 0.5\n",
			[]string{"compare.cpu_per_request_increase_percent", "kpis.confidence"}},
		{"another workload", "default_profile: gate\nsampler:\n  interval: 50ms\n", []string{"default_profile", "sampler.interval"}},
	} {
		side, err := base.Overlay([]byte(c.side), "side.yaml")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, err := SideChanges(base, side)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: changes %q, want %q", c.name, got, c.want)
		}
	}
}
