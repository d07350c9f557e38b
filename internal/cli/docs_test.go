package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/workloads"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated parts of docs/*.md from the embedded config.yaml")

// configDoc is the configuration reference, whose key table is checked
// against the embedded config.yaml.
const configDoc = "docs/configuration.md"

// docFiles returns the user documentation by path: README.md and every
// docs/*.md, in a stable order.
func docFiles(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no docs/*.md: the reference lives there")
	}
	docs := map[string]string{}
	for _, p := range append([]string{"README.md"}, paths...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs[p] = string(b)
	}
	return docs
}

// allDocs is README.md and docs/*.md as one text, for "is it mentioned
// anywhere a user reads" checks.
func allDocs(t *testing.T) string {
	t.Helper()
	docs := docFiles(t)
	var b strings.Builder
	for _, p := range slices.Sorted(maps.Keys(docs)) {
		b.WriteString(docs[p])
		b.WriteString("\n")
	}
	return b.String()
}

// TestDocsDocumentEveryCommandAndFlag: a command or flag --help shows is
// in README.md or docs/*.md too, so the two cannot drift apart.
func TestDocsDocumentEveryCommandAndFlag(t *testing.T) {
	doc := allDocs(t)
	c := &cli{defaults: mustRead(t, "config.yaml"), stdout: os.Stdout, stderr: os.Stderr}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Hidden || cmd.Name() == "help" {
			return
		}
		path := cmd.CommandPath()
		if !strings.Contains(doc, "`"+path) {
			t.Errorf("README.md and docs/ do not document the command %q", path)
		}
		cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			if !strings.Contains(doc, "--"+f.Name) {
				t.Errorf("README.md and docs/ do not document %s --%s", path, f.Name)
			}
		})
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(c.root())
}

// TestDocsDocumentEveryConfigKey: every configuration key is named in the
// docs, in full (`sampler.interval`), as a sibling after its parent
// (`.upload_rate` in the row of `profiling.pyroscope.application_name`), as
// a field in its parent's row (`operation` in the row of
// `phases[].users[]`) or under a documented wildcard (`operations.NAME.*`).
// A profile's keys are named relative to the profile (`phases[].think.min`).
func TestDocsDocumentEveryConfigKey(t *testing.T) {
	doc := allDocs(t)
	for _, key := range configKeys(reflect.TypeFor[config.Config](), "") {
		if key == "profiles" || strings.HasPrefix(key, "profiles.") {
			continue
		}
		if !documented(doc, key) {
			t.Errorf("README.md and docs/ do not document the config key %s", key)
		}
	}
	for _, key := range configKeys(reflect.TypeFor[config.Profile](), "") {
		if !documented(doc, key) {
			t.Errorf("README.md and docs/ do not document the profile key %s (profiles.NAME.%s)", key, key)
		}
	}
}

func documented(doc, key string) bool {
	if strings.Contains(doc, "`"+key+"`") || strings.Contains(doc, "`"+key+":") {
		return true
	}
	parts := strings.Split(key, ".")
	for i := 1; i < len(parts); i++ {
		parent := strings.Join(parts[:i], ".")
		rest := strings.Join(parts[i:], ".")
		if strings.Contains(doc, "`"+parent+".*`") {
			return true
		}
		for _, line := range strings.Split(doc, "\n") {
			// A row naming a sibling in full and this key as `.leaf`.
			if strings.HasPrefix(line, "| `"+parent+".") && strings.Contains(line, "`."+rest+"`") {
				return true
			}
			// The row of a list of groups naming this field of its items.
			if strings.HasSuffix(parent, "[]") && strings.HasPrefix(line, "| `"+parent+"`") && strings.Contains(line, "`"+rest+"`") {
				return true
			}
		}
	}
	return false
}

// configKeys lists the dotted key paths of t's leaves: structs are walked,
// a list of structs as `name[].field` (phases[].think.min); maps, other
// lists and scalars are leaves.
func configKeys(t reflect.Type, prefix string) []string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
		return configKeys(t.Elem(), prefix+"[]")
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

// embeddedConfig is config.yaml as every run starts from it.
func embeddedConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Load(mustRead(t, "config.yaml"), nil, "config.yaml (embedded)")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// configRow is one row of the configuration reference's key table.
type configRow struct {
	line     int
	keys     []string
	defaults []string // literal YAML, or the words empty and unset
}

var (
	codeSpan     = regexp.MustCompile("`([^`]*)`")
	defaultToken = regexp.MustCompile("`([^`]*)`|\\b(empty|unset)\\b")
)

// configRows parses the table headed `| key | default | meaning |` in doc.
// A key cell names keys in full or, after a full one, as `.sibling`; a
// default cell gives one default per key, or one for all of them.
func configRows(t *testing.T, doc string) []configRow {
	t.Helper()
	var rows []configRow
	in := false
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "| key | default | meaning |") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			if len(rows) > 0 {
				break
			}
			continue
		}
		cells := tableCells(line)
		if len(cells) < 3 {
			t.Errorf("%s:%d: a key table row needs key, default and meaning: %s", configDoc, i+1, line)
			continue
		}
		row := configRow{line: i + 1}
		full := ""
		for _, m := range codeSpan.FindAllStringSubmatch(cells[0], -1) {
			k := m[1]
			if strings.HasPrefix(k, ".") {
				if full == "" {
					t.Errorf("%s:%d: sibling %s follows no full key", configDoc, i+1, k)
					continue
				}
				k = full[:strings.LastIndex(full, ".")] + k
			} else {
				full = k
			}
			row.keys = append(row.keys, k)
		}
		for _, m := range defaultToken.FindAllStringSubmatch(cells[1], -1) {
			if m[2] != "" {
				row.defaults = append(row.defaults, m[2])
			} else {
				row.defaults = append(row.defaults, "`"+m[1]+"`")
			}
		}
		rows = append(rows, row)
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no table headed | key | default | meaning |", configDoc)
	}
	return rows
}

// tableCells splits a Markdown table row on its unescaped pipes.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		if line[i] == '\\' && i+1 < len(line) && line[i+1] == '|' {
			cur.WriteByte('|')
			i++
			continue
		}
		if line[i] == '|' {
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteByte(line[i])
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// TestDocsConfigDefaults: the configuration reference cannot drift from the
// code. Every key of config.Config (outside operations and profiles, which
// have tables of their own) has a row in docs/configuration.md's key table,
// every key a row names exists, and its "default" column holds the value the
// embedded config.yaml really gives it (`soakd config`'s output). The
// operations and profiles rows name exactly the embedded ones.
func TestDocsConfigDefaults(t *testing.T) {
	b, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	cfg := embeddedConfig(t)
	effYAML, err := config.EffectiveYAML(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var eff map[string]any
	if err := yaml.Unmarshal(effYAML, &eff); err != nil {
		t.Fatal(err)
	}

	seen := map[string]int{}
	for _, row := range configRows(t, string(b)) {
		at := fmt.Sprintf("%s:%d", configDoc, row.line)
		if len(row.keys) == 0 {
			t.Errorf("%s: a row without a key", at)
			continue
		}
		for _, k := range row.keys {
			if prev, dup := seen[k]; dup {
				t.Errorf("%s: %s is documented twice (also line %d)", at, k, prev)
			}
			seen[k] = row.line
		}
		switch row.keys[0] {
		case "operations":
			var ops []string
			for op := range cfg.Operations {
				ops = append(ops, string(op))
			}
			checkNames(t, at, "operations", row.defaults, ops)
			continue
		case "profiles.NAME":
			checkNames(t, at, "profiles", row.defaults, cfg.ProfileNames())
			continue
		}
		defaults := row.defaults
		if len(defaults) == 1 && len(row.keys) > 1 {
			defaults = slices.Repeat(defaults, len(row.keys))
		}
		if len(defaults) != len(row.keys) {
			t.Errorf("%s: %d keys %v but %d defaults %v: give one default per key, or one for all", at, len(row.keys), row.keys, len(row.defaults), row.defaults)
			continue
		}
		for i, k := range row.keys {
			got, ok := lookup(eff, k)
			if !ok {
				t.Errorf("%s: documents %s, which is no config key (soakd config does not print it)", at, k)
				continue
			}
			if !sameDefault(defaults[i], got) {
				t.Errorf("%s: %s: the docs say the default is %s, the embedded config.yaml gives %s", at, k, defaults[i], render(got))
			}
		}
	}
	for _, key := range configKeys(reflect.TypeFor[config.Config](), "") {
		// A list's items have no defaults: the list's row documents them.
		if list, _, ok := strings.Cut(key, "[]."); ok {
			key = list
		}
		if key == "profiles" || key == "operations" {
			key = map[string]string{"profiles": "profiles.NAME", "operations": "operations"}[key]
		}
		if _, ok := seen[key]; !ok {
			t.Errorf("%s: the key table has no row for %s (add it with its default)", configDoc, key)
		}
	}
}

// checkNames compares a default cell listing names with the embedded ones.
//
// A name ending in "…" (`rel-…`) stands for the family of every name with
// that prefix, which must not be empty; a path (with a "/") names the file a
// family comes from and is not a name.
func checkNames(t *testing.T, at, what string, cell []string, want []string) {
	t.Helper()
	var got []string
	var families []string
	for _, c := range cell {
		switch c = strings.Trim(c, "`"); {
		case strings.Contains(c, "/"):
		case strings.HasSuffix(c, "…"):
			families = append(families, strings.TrimSuffix(c, "…"))
		default:
			got = append(got, c)
		}
	}
	for _, f := range families {
		n := len(want)
		want = slices.DeleteFunc(want, func(w string) bool { return strings.HasPrefix(w, f) })
		if len(want) == n {
			t.Errorf("%s: the docs name the family %s…, which has no embedded %s", at, f, what)
		}
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s: the docs list the embedded %s %v, config.yaml defines %v", at, what, got, want)
	}
}

// lookup walks a dotted key through the decoded effective configuration.
func lookup(m map[string]any, key string) (any, bool) {
	var cur any = m
	for _, part := range strings.Split(key, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// sameDefault reports whether a documented default (a `YAML literal`, or
// the words empty and unset) stands for the effective value got. Numbers
// compare by value (1048576 is 1.048576e+06), durations by length (720h is
// 720h0m0s).
func sameDefault(doc string, got any) bool {
	switch doc {
	case "empty":
		return got == ""
	case "unset":
		return got == nil
	}
	var want any
	if err := yaml.Unmarshal([]byte(strings.Trim(doc, "`")), &want); err != nil {
		return false
	}
	if wf, ok := number(want); ok {
		gf, ok := number(got)
		return ok && wf == gf
	}
	if ws, ok := want.(string); ok {
		gs, ok := got.(string)
		if !ok {
			return false
		}
		wd, werr := time.ParseDuration(ws)
		gd, gerr := time.ParseDuration(gs)
		if werr == nil && gerr == nil {
			return wd == gd
		}
		return ws == gs
	}
	if want == nil {
		return got == nil || got == ""
	}
	return reflect.DeepEqual(want, got)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func render(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return "`" + strings.TrimSpace(string(b)) + "`"
}

// The generated part of docs/configuration.md: the embedded profiles.
const (
	profilesBegin = "<!-- BEGIN embedded profiles (generated) -->\n"
	profilesEnd   = "<!-- END embedded profiles (generated) -->"
)

// TestDocsEmbeddedProfiles: the embedded profiles' tables in
// docs/configuration.md are what the embedded config.yaml holds, so no size
// the docs quote can drift from it. -update-docs rewrites them.
func TestDocsEmbeddedProfiles(t *testing.T) {
	b, err := os.ReadFile(configDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, profilesBegin)
	j := strings.Index(doc, profilesEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q … %q", configDoc, profilesBegin, profilesEnd)
	}
	want := profilesMarkdown(embeddedConfig(t))
	got := doc[i+len(profilesBegin) : j]
	if got == want {
		return
	}
	if *updateDocs {
		doc = doc[:i+len(profilesBegin)] + want + doc[j:]
		if err := os.WriteFile(configDoc, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the embedded profiles' tables differ from config.yaml; run go test -run TestDocsEmbeddedProfiles -update-docs . and commit\n--- docs\n%s\n--- config.yaml\n%s", configDoc, got, want)
}

// profilesMarkdown renders the profiles of cfg as two tables: each
// profile's settings, then every phase's load.
func profilesMarkdown(cfg *config.Config) string {
	names := cfg.ProfileNames()
	slices.SortStableFunc(names, func(a, b string) int {
		switch {
		case a == cfg.DefaultProfile:
			return -1
		case b == cfg.DefaultProfile:
			return 1
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	b.WriteString("\n| profile | description | settle | trim head, tail | request timeout | rounds | compared phases (REST, GraphQL) | memory verdict on |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, name := range names {
		p := cfg.Profiles[name]
		label := "`" + name + "`"
		if name == cfg.DefaultProfile {
			label += " (default)"
		}
		rounds := strconv.Itoa(p.Rounds)
		if p.MaxRounds > p.Rounds {
			rounds += fmt.Sprintf(", adaptive up to %d", p.MaxRounds)
		}
		rest := "none (no control group)"
		if p.Compare.REST != "" {
			rest = "`" + p.Compare.REST + "`"
		}
		memory := "none"
		if p.MemoryPhase != "" {
			memory = "`" + p.MemoryPhase + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s, %s | %s | %s | %s, `%s` | %s |\n", label, p.Description,
			dur(p.Settle), dur(p.TrimHead), dur(p.TrimTail), dur(p.RequestTimeout), rounds, rest, p.Compare.GraphQL, memory)
	}
	b.WriteString("\n| profile | phase | arm | model | users × iterations (per user), by operation | think | also |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, name := range names {
		for _, ph := range cfg.Profiles[name].Phases {
			model := ph.Model
			if model == "" {
				model = workloads.Closed
			}
			think := "none"
			if ph.Think.Max > 0 {
				think = strings.TrimSuffix(dur(ph.Think.Min), "s") + "–" + dur(ph.Think.Max)
				if ph.Think.Min > 0 {
					think = dur(ph.Think.Min) + "–" + dur(ph.Think.Max)
				}
			}
			fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %s | %s | %s |\n", name, ph.Name, ph.Arm, model,
				phaseUsers(ph, model), think, phaseAlso(ph, model))
		}
	}
	b.WriteString("\n")
	return b.String()
}

func phaseUsers(ph config.PhaseConfig, model workloads.Model) string {
	var groups []string
	for _, g := range ph.Users {
		switch model {
		case workloads.Ramping:
			groups = append(groups, fmt.Sprintf("`%s`: %s users, +%s every %s, at most %s", g.Operation,
				count(ph.Ramp.Start), count(ph.Ramp.Step), dur(ph.Ramp.Every), count(ph.Ramp.Max)))
		case workloads.Open, workloads.RampingRate:
			w := max(g.Weight, 1)
			groups = append(groups, fmt.Sprintf("`%s` (weight %d)", g.Operation, w))
		default:
			it := "until stopped"
			if g.Iterations > 0 {
				it = count(g.Iterations)
			}
			groups = append(groups, fmt.Sprintf("%s × %s `%s`", count(g.Users), it, g.Operation))
		}
	}
	return strings.Join(groups, " + ")
}

func phaseAlso(ph config.PhaseConfig, model workloads.Model) string {
	var also []string
	if ph.RampUp > 0 {
		also = append(also, "ramp-up "+dur(ph.RampUp))
	}
	switch model {
	case workloads.Open, workloads.RampingRate:
		rate := fmt.Sprintf("%g arrivals/s", ph.Rate)
		if ph.RateEnd > 0 {
			rate = fmt.Sprintf("%g → %g arrivals/s", ph.Rate, ph.RateEnd)
		}
		also = append(also, rate+" over "+dur(ph.Duration), fmt.Sprintf("at most %s in flight", count(ph.MaxInFlight)))
	default:
		if ph.Duration > 0 {
			also = append(also, "at most "+dur(ph.Duration))
		}
	}
	if f := ph.Failure; f.Window > 0 {
		var rules []string
		if f.MaxErrorRatio > 0 {
			rules = append(rules, fmt.Sprintf("errors > %g %%", f.MaxErrorRatio*100))
		}
		if f.MaxP99 > 0 {
			rules = append(rules, "p99 > "+dur(f.MaxP99))
		}
		if f.MaxConnectionErrors > 0 {
			rules = append(rules, fmt.Sprintf("connection errors > %d", f.MaxConnectionErrors))
		}
		also = append(also, fmt.Sprintf("fails on %s in a %s window of ≥ %s requests",
			strings.Join(rules, ", "), dur(f.Window), count(int(f.MinRequests))))
	}
	if s := ph.Subscriptions; s.Clients > 0 {
		also = append(also, fmt.Sprintf("%s clients × %d subscriptions (%s), drain %s", count(s.Clients), s.PerClient, s.Protocol, dur(s.Drain)))
	}
	return strings.Join(also, "; ")
}

// dur writes a duration as a config file would: 10m, not 10m0s.
func dur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// count writes n with thousands separators: 10,000.
func count(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`^#{1,6} +(.*?) *#*$`)
)

// TestDocsLinks: every relative link in README.md and docs/*.md points at
// a file that exists and, for #anchor, at a heading of that file (GitHub's
// anchors: lower case, punctuation dropped, spaces as hyphens, -1, -2 for
// repeats).
func TestDocsLinks(t *testing.T) {
	docs := docFiles(t)
	anchorsOf := map[string]map[string]bool{}
	anchors := func(path string) map[string]bool {
		if a, ok := anchorsOf[path]; ok {
			return a
		}
		text, ok := docs[path]
		if !ok {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			text = string(b)
		}
		anchorsOf[path] = headingAnchors(text)
		return anchorsOf[path]
	}
	links := 0
	for _, path := range slices.Sorted(maps.Keys(docs)) {
		for n, line := range outsideFences(docs[path]) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				file, anchor, _ := strings.Cut(target, "#")
				dest := path
				if file != "" {
					dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(path), file)))
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %s: no file %s", path, n+1, target, dest)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s:%d: link %s: an anchor into %s, which is not Markdown", path, n+1, target, dest)
					continue
				}
				if !anchors(dest)[anchor] {
					t.Errorf("%s:%d: link %s: %s has no heading with anchor #%s", path, n+1, target, dest, anchor)
				}
			}
		}
	}
	if links == 0 {
		t.Error("found no relative link at all: the link pattern is broken")
	}
}

// outsideFences returns doc's lines with those inside ``` fences blanked,
// so line numbers stay right.
func outsideFences(doc string) []string {
	lines := strings.Split(doc, "\n")
	fence := false
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			fence = !fence
			lines[i] = ""
			continue
		}
		if fence {
			lines[i] = ""
		}
	}
	return lines
}

// headingAnchors lists the anchors GitHub gives doc's headings.
func headingAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range outsideFences(doc) {
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := slug(m[1])
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// slug is GitHub's heading anchor: lower case, letters, digits, hyphens and
// underscores kept, spaces turned into hyphens, everything else dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// TestDocsSlug pins the anchor rule the link check relies on to anchors
// GitHub renders.
func TestDocsSlug(t *testing.T) {
	f := func(h, want string) {
		t.Helper()
		if got := slug(h); got != want {
			t.Errorf("slug(%q) = %q, want %q", h, got, want)
		}
	}
	f("The target's API", "the-targets-api")
	f("report.html", "reporthtml")
	f("`soakd target [--config FILE]`", "soakd-target---config-file")
	f("No REST twin: no control group", "no-rest-twin-no-control-group")
	f("The relational scenario (seed 000)", "the-relational-scenario-seed-000")
}

// TestDocsDocumentEveryReportField: every field of every document soakd
// writes for machines (the JSON Schemas under schemas/: report.json,
// soak.json, the compare JSON, the driver's lines) is named in the docs,
// inside a code span (`peak_resources_error`, or a path holding it).
func TestDocsDocumentEveryReportField(t *testing.T) {
	var spans strings.Builder
	for _, m := range regexp.MustCompile("`[^`\n]+`").FindAllString(allDocs(t), -1) {
		spans.WriteString(m)
		spans.WriteByte('\n')
	}
	doc := spans.String()
	paths, err := filepath.Glob("schemas/*.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no schemas/*.schema.json")
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var schema any
		if err := json.Unmarshal(b, &schema); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		names := map[string]bool{}
		schemaProperties(schema, names)
		if len(names) == 0 {
			t.Errorf("%s: no properties found: the walk is broken", p)
		}
		for _, name := range slices.Sorted(maps.Keys(names)) {
			word := regexp.MustCompile(`(^|[^A-Za-z0-9_])` + regexp.QuoteMeta(name) + `([^A-Za-z0-9_]|$)`)
			if !word.MatchString(doc) {
				t.Errorf("%s: the field %s is not documented in README.md or docs/", p, name)
			}
		}
	}
}

// schemaProperties collects the names under every "properties" of a JSON
// Schema document.
func schemaProperties(v any, names map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		if props, ok := v["properties"].(map[string]any); ok {
			for name := range props {
				names[name] = true
			}
		}
		for _, sub := range v {
			schemaProperties(sub, names)
		}
	case []any:
		for _, sub := range v {
			schemaProperties(sub, names)
		}
	}
}

// TestMain runs the package's tests from the module root, where README.md,
// docs/, schemas/ and config.yaml are.
func TestMain(m *testing.M) {
	if err := os.Chdir("../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// mustRead is the file at path (from the module root), or the test fails.
func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
