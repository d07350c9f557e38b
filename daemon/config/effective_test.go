package config

import (
	"reflect"
	"strings"
	"testing"
)

// TestEffectiveYAMLRoundTrips: the YAML `soakd config` prints loads back as
// a user file into exactly the configuration it came from, with the token
// redacted.
func TestEffectiveYAMLRoundTrips(t *testing.T) {
	cfg, err := Load(defaults(t), []byte("api:\n  token: s3cret\nkpis:\n  cpu_per_request_increase_percent: 12.5\n"), "user.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := EffectiveYAML(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "s3cret") || !strings.Contains(string(out), "token: <redacted>") {
		t.Fatalf("token not redacted:\n%s", out)
	}
	if cfg.API.Token != "s3cret" {
		t.Fatal("EffectiveYAML changed the configuration it printed")
	}
	back, err := Load(defaults(t), out, "effective.yaml")
	if err != nil {
		t.Fatalf("the effective YAML does not load: %v\n%s", err, out)
	}
	back.API.Token = cfg.API.Token
	if !reflect.DeepEqual(back, cfg) {
		t.Errorf("round trip changed the configuration:\nwas %+v\nnow %+v", cfg, back)
	}
}

// TestDeprecatedControlKey: control: still configures the control API, with
// a warning naming the new key; control: and api: together are refused.
func TestDeprecatedControlKey(t *testing.T) {
	cfg, err := Load(defaults(t), []byte("kpis:\n  confidence: 0.9\ncontrol:\n  listen: 127.0.0.1:7171\n"), "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.API.Listen != "127.0.0.1:7171" {
		t.Errorf("control.listen not read as api.listen: %q", cfg.API.Listen)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "old.yaml: line 3: the key control: is deprecated") {
		t.Errorf("warnings = %q", cfg.Warnings)
	}
	_, err = Load(defaults(t), []byte("control:\n  listen: 127.0.0.1:7171\napi:\n  listen: 127.0.0.1:7172\n"), "both.yaml")
	if err == nil || !strings.Contains(err.Error(), "line 1: control: both control: (the old name) and api: are given") {
		t.Errorf("both keys: err = %v", err)
	}
	// Only the top-level key is renamed: a profile named control is a profile.
	if _, err := Load(defaults(t), []byte("api:\n  listen: 127.0.0.1:7172\n"), "new.yaml"); err != nil {
		t.Errorf("api: refused: %v", err)
	}
}
