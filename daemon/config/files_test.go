package config

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestMergeOverrides(t *testing.T) {
	got, err := MergeOverrides([]byte("kpis:\n  confidence: 0.9\nsoak: {pause: 5s}\n"), []string{
		"kpis.cpu_increase_points=7", "sampler.interval=2s", "profiling.cpu=false", "kpis.confidence=0.8", "note=a=b",
	})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(got), &m); err != nil {
		t.Fatal(err)
	}
	kpis := m["kpis"].(map[string]any)
	if kpis["cpu_increase_points"] != 7 || kpis["confidence"] != 0.8 {
		t.Errorf("kpis = %v (numbers must stay numbers; --set wins over the file)", kpis)
	}
	if m["sampler"].(map[string]any)["interval"] != "2s" || m["profiling"].(map[string]any)["cpu"] != false || m["note"] != "a=b" {
		t.Errorf("overrides = %v", m)
	}
	if m["soak"].(map[string]any)["pause"] != "5s" {
		t.Errorf("the file's keys were lost: %v", m)
	}
	if s, err := MergeOverrides(nil, nil); err != nil || s != "" {
		t.Errorf("no overrides: %q, %v", s, err)
	}
	for _, bad := range [][]string{{"novalue"}, {"=1"}, {"a..b=1"}, {"a=1", "a.b=2"}, {"a=[1"}} {
		if _, err := MergeOverrides(nil, bad); err == nil || !strings.Contains(err.Error(), "--set") {
			t.Errorf("--set %q: err = %v", bad, err)
		}
	}
	if _, err := MergeOverrides([]byte("- a\n- b\n"), nil); err == nil {
		t.Error("a list as the overrides file was accepted")
	}
}
