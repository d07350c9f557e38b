package config

import (
	"strings"
	"testing"
)

// TestChangedYAML: only what the user's file set is printed (a changed
// profile whole), and read back on the defaults it is the same
// configuration.
func TestChangedYAML(t *testing.T) {
	def := defaults(t)
	base, err := Load(def, nil, "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := ChangedYAML(base, base); err != nil || string(out) != "{}\n" {
		t.Fatalf("nothing set: %q %v", out, err)
	}
	user := "kpis:\n  cpu_increase_points: 7\nsampler:\n  interval: 500ms\nprofiles:\n  mine:\n    request_timeout: 5s\n    compare: {graphql: g}\n    phases:\n      - {name: g, arm: graphql, think: {min: 0ms, max: 10ms}, users: [{operation: graphql-query, users: 2, iterations: 5000}]}\n"
	cfg, err := Load(def, []byte(user), "user.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := ChangedYAML(base, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{"cpu_increase_points: 7", "interval: 500ms", "mine:", "iterations: 5000"} {
		if !strings.Contains(s, want) {
			t.Errorf("changed YAML lacks %q:\n%s", want, s)
		}
	}
	for _, not := range []string{"gc_increase_points", "quick:", "listen:", "operations:"} {
		if strings.Contains(s, not) {
			t.Errorf("changed YAML holds the unchanged %q:\n%s", not, s)
		}
	}
	if n := strings.Count(s, "\n"); n > 80 { // the new profile is printed whole, its zero fields too
		t.Errorf("changed YAML is %d lines for 3 settings:\n%s", n, s)
	}
	back, err := Load(def, out, "changed.yaml")
	if err != nil {
		t.Fatalf("the changed YAML does not load back: %v\n%s", err, s)
	}
	a, _ := EffectiveYAML(cfg)
	b, _ := EffectiveYAML(back)
	if string(a) != string(b) {
		t.Error("the changed YAML, read back on the defaults, is another configuration")
	}
}
