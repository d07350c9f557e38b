package config

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/soakd/soakd/workloads"
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

// TestNonFiniteFloatsRefused: .nan and .inf are YAML floats; as limits they
// made every comparison false, and the run failed at its end writing
// report.json (exit 3, left "running").
func TestNonFiniteFloatsRefused(t *testing.T) {
	for _, c := range []struct{ doc, path string }{
		{"kpis:\n  cpu_increase_points: .nan\n", "kpis.cpu_increase_points"},
		{"compare:\n  cpu_per_request_increase_percent: .inf\n", "compare.cpu_per_request_increase_percent"},
		{"memory:\n  alloc_spike_factor: -.inf\n", "memory.alloc_spike_factor"},
	} {
		_, err := Load(defaults(t), []byte(c.doc), "user.yaml")
		if err == nil || !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), "must be a finite number") {
			t.Errorf("%q: %v, want %s refused as not finite", c.doc, err, c.path)
		}
	}
}

// TestSideChangesSeesCSVContents: a side whose CSV file holds other
// contents (another SHA-256) runs another workload; the same contents
// under a newer modification time do not.
func TestSideChangesSeesCSVContents(t *testing.T) {
	base, err := Load(defaults(t), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	base.CSVFiles = map[string]workloads.CSVFile{"/d/items.csv": {Rows: 2, Size: 9, ModTime: 1, SHA256: "aa"}}
	for _, c := range []struct {
		name string
		file workloads.CSVFile
		want []string
	}{
		{"the same contents, touched", workloads.CSVFile{Rows: 2, Size: 9, ModTime: 2, SHA256: "aa"}, nil},
		{"other contents", workloads.CSVFile{Rows: 2, Size: 9, ModTime: 1, SHA256: "bb"}, []string{"operations data (CSV file contents)"}},
	} {
		side := base.Clone()
		side.CSVFiles["/d/items.csv"] = c.file
		got, err := SideChanges(base, side)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: changes %q, want %q", c.name, got, c.want)
		}
	}
}
