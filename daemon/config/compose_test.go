package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// write writes files (name to text) into a temporary directory and
// returns its path.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loadFile loads dir/name as --config.
func loadFile(t *testing.T, dir, name string) (*Config, error) {
	t.Helper()
	path := filepath.Join(dir, name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return Load(defaults(t), b, path)
}

// TestExtendsChangesOnlyWhatItNames: a profile that extends another is
// that profile with the keys it gives on top (an embedded base, or one of
// the same file extended in turn); the base is left as it was.
func TestExtendsChangesOnlyWhatItNames(t *testing.T) {
	cfg, err := Load(defaults(t), []byte(`
profiles:
  short:
    extends: quick
    description: quick in two rounds
    rounds: 2
  shorter:
    extends: short
    seed: 99
`), "user.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base, _ := Load(defaults(t), nil, "")
	quick, short, shorter := base.Profiles["quick"], cfg.Profiles["short"], cfg.Profiles["shorter"]
	if short.Rounds != 2 || short.Description != "quick in two rounds" || short.Seed != quick.Seed {
		t.Errorf("short: rounds %d, description %q, seed %d", short.Rounds, short.Description, short.Seed)
	}
	if shorter.Seed != 99 || shorter.Rounds != 2 || shorter.Description != short.Description {
		t.Errorf("shorter: seed %d, rounds %d", shorter.Seed, shorter.Rounds)
	}
	if !reflect.DeepEqual(short.Phases, quick.Phases) || !reflect.DeepEqual(shorter.Compare, quick.Compare) {
		t.Errorf("the phases and compare of quick were not kept")
	}
	if !reflect.DeepEqual(cfg.Profiles["quick"], quick) {
		t.Errorf("quick itself changed")
	}
}

// TestExtendsRefuses: a cycle, a base that does not exist and a base that
// is not a name are named at the key, with the line.
func TestExtendsRefuses(t *testing.T) {
	ps := problems(t, "profiles:\n  a:\n    extends: b\n  b:\n    extends: a\n")
	has(t, ps, "profiles.b.extends", 5, "cycle (a → b → a)")
	ps = problems(t, "profiles:\n  a:\n    extends: quik\n")
	has(t, ps, "profiles.a.extends", 3, `names no profile (got "quik"; profiles: `)
	ps = problems(t, "profiles:\n  a:\n    extends: [quick]\n")
	has(t, ps, "profiles.a.extends", 3, "must name the profile this one starts from")
	// A key of its own is checked as any profile's, on its line.
	ps = problems(t, "profiles:\n  a:\n    extends: quick\n    rounds: many\n")
	has(t, ps, "profiles.a.rounds", 4, "")
}

// TestIncludeReadsOperationLibraries: operations come from included files
// (relative to the including file, nested), the including file's own win,
// and an included file may define nothing but operations.
func TestIncludeReadsOperationLibraries(t *testing.T) {
	dir := write(t, map[string]string{
		"ops/books.yaml": `include: [more.yaml]
operations:
  book-get:
    rest: {method: GET, path: "/books/1"}
    expect: {status: 200}
  shared:
    rest: {method: GET, path: "/from-library"}
`,
		"ops/more.yaml": `operations:
  book-head:
    rest: {method: HEAD, path: "/books/1"}
`,
		"main.yaml": `include: [ops/books.yaml]
operations:
  shared:
    rest: {method: GET, path: "/own"}
profiles:
  books:
    extends: quick
    description: books
`,
	})
	cfg, err := loadFile(t, dir, "main.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Operations["book-get"]; !ok {
		t.Error("book-get from ops/books.yaml is missing")
	}
	if _, ok := cfg.Operations["book-head"]; !ok {
		t.Error("book-head from ops/more.yaml (included by ops/books.yaml) is missing")
	}
	if p := cfg.Operations["shared"].REST.Path; p != "/own" {
		t.Errorf("shared: path %q, want the including file's /own", p)
	}
	if _, ok := cfg.Profiles["books"]; !ok {
		t.Error("profile books missing")
	}
}

func TestIncludeRefuses(t *testing.T) {
	dir := write(t, map[string]string{
		"lib.yaml":     "operations: {}\nkpis:\n  cpu_increase_points: 50\n",
		"loop-a.yaml":  "include: [loop-b.yaml]\noperations: {}\n",
		"loop-b.yaml":  "include: [loop-a.yaml]\noperations: {}\n",
		"limits.yaml":  "include: [lib.yaml]\n",
		"loops.yaml":   "include: [loop-a.yaml]\n",
		"missing.yaml": "include: [nowhere.yaml]\n",
	})
	for name, want := range map[string]string{
		"limits.yaml":  "an included file is an operation library: it may hold operations: (and include:) only; put kpis:",
		"loops.yaml":   "loop-a.yaml includes itself",
		"missing.yaml": "cannot read nowhere.yaml",
	} {
		_, err := loadFile(t, dir, name)
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	// Overrides that are not a file cannot include: their paths would be
	// relative to nothing.
	base, err := Load(defaults(t), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := base.Overlay([]byte("include: [lib.yaml]\n"), "--set"); err == nil || !strings.Contains(err.Error(), "is read only in a config file") {
		t.Errorf("include in --set: %v", err)
	}
}
