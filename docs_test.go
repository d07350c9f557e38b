package main

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/soakd/soakd/daemon"
)

// readme returns README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestREADMEDocumentsEveryCommandAndFlag: a command or flag --help shows
// is in README.md too, so the two cannot drift apart.
func TestREADMEDocumentsEveryCommandAndFlag(t *testing.T) {
	doc := readme(t)
	c := &cli{stdout: os.Stdout, stderr: os.Stderr}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Hidden || cmd.Name() == "help" {
			return
		}
		path := cmd.CommandPath()
		if !strings.Contains(doc, "`"+path) {
			t.Errorf("README.md does not document the command %q", path)
		}
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			if !strings.Contains(doc, "--"+f.Name) {
				t.Errorf("README.md does not document %s --%s", path, f.Name)
			}
		})
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(c.root())
}

// TestREADMEDocumentsEveryConfigKey: every configuration key (outside the
// profiles, which have their own section) is named in README.md, in full
// (`sampler.interval`), as a sibling after its parent (`.upload_rate` in
// the row of `profiling.pyroscope.application_name`) or under a documented
// wildcard (`compare.*`).
func TestREADMEDocumentsEveryConfigKey(t *testing.T) {
	doc := readme(t)
	for _, key := range configKeys(reflect.TypeFor[daemon.Config](), "") {
		if key == "profiles" || strings.HasPrefix(key, "profiles.") {
			continue
		}
		if documented(doc, key) {
			continue
		}
		t.Errorf("README.md does not document the config key %s", key)
	}
}

func documented(doc, key string) bool {
	if strings.Contains(doc, "`"+key+"`") || strings.Contains(doc, "`"+key+":") {
		return true
	}
	parts := strings.Split(key, ".")
	for i := 1; i < len(parts); i++ {
		parent := strings.Join(parts[:i], ".")
		if strings.Contains(doc, "`"+parent+".*`") {
			return true
		}
		// A row naming a sibling in full and this key as `.leaf`.
		for _, line := range strings.Split(doc, "\n") {
			if strings.HasPrefix(line, "| `"+parent+".") && strings.Contains(line, "`."+strings.Join(parts[i:], ".")+"`") {
				return true
			}
		}
	}
	return false
}

// configKeys lists the dotted key paths of t's leaves (structs are walked;
// maps, slices and scalars are leaves).
func configKeys(t reflect.Type, prefix string) []string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.PkgPath() == "time" {
		return []string{prefix}
	}
	var keys []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		keys = append(keys, configKeys(f.Type, p)...)
	}
	return keys
}
