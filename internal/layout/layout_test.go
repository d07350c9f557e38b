package layout

import (
	"bufio"
	"bytes"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/soakd/soakd"

// forbidden says, for a package (or, ending in "/...", every package under
// it), the soakd packages it must not depend on, directly or not.
var forbidden = []struct {
	pkg    string
	denied []string
	why    string
}{
	{"daemon/builtin", []string{"daemon/target", "daemon/run", "daemon/serve", "internal/cli", "internal/history", "internal/childlog"},
		"the built-in target runs inside the measured process and holds the server only"},
	{"daemon/target", []string{"daemon/run", "daemon/serve", "internal/cli"}, "targets return data; the run judges it"},
	{"daemon/run", []string{"daemon/serve", "internal/cli"}, "a run and its sessions know nothing of the daemon"},
	{"daemon/serve", []string{"internal/cli"}, "the daemon is not the command line"},
	{"daemon/config", []string{"daemon/builtin", "daemon/target", "daemon/run", "daemon/serve", "internal/cli"}, "configuration sits below every role"},
	{"internal/kpi", []string{"daemon/...", "internal/report", "internal/cli"}, "the gate's rules are pure"},
	{"internal/report", []string{"daemon/...", "internal/cli"}, "reports render data; they do not run anything"},
	{"workloads", []string{"daemon/...", "internal/cli", "internal/report"}, "the driver is a process of its own"},
	{"profiles", []string{"daemon/...", "internal/cli"}, "the sampler is a leaf of the measured process"},
	{"control", []string{"daemon/...", "internal/cli"}, "the REST control group is a scenario package"},
	{"internal/graph", []string{"daemon/...", "internal/cli"}, "the GraphQL arm is a scenario package"},
	{"internal/relational/...", []string{"daemon/...", "internal/cli"}, "the relational scenario is a scenario package"},
	{"internal/pin", []string{"daemon/...", "internal/..."}, "a leaf"},
	{"internal/procstat", []string{"daemon/...", "internal/..."}, "a leaf"},
	{"internal/exitcode", []string{"daemon/...", "internal/..."}, "a leaf"},
	{"internal/failsig", []string{"daemon/...", "internal/..."}, "a leaf"},
	{"internal/fsutil", []string{"daemon/...", "internal/..."}, "a leaf"},
	{"internal/strictjson", []string{"daemon/...", "internal/..."}, "a leaf"},
	{"internal/jsonhttp", []string{"daemon/...", "internal/..."}, "a leaf"},
	{"internal/proctree", []string{"daemon/...", "internal/..."}, "a leaf"},
	{"internal/nofollow", []string{"daemon/...", "internal/..."}, "a leaf"},
	{"internal/schedule", []string{"daemon/...", "internal/..."}, "cron maths is a pure leaf"},
	{"internal/guard", []string{"daemon/...", "internal/cli", "internal/report", "internal/kpi", "internal/extsample"}, "the guard runs a target's tree and nothing else"},
}

// topLevel are the directories holding Go packages at the top: the design
// card's (daemon, workloads, control, profiles, grafana), internal/, and
// the schemas and scripts users look for.
var topLevel = []string{"daemon", "workloads", "control", "profiles", "grafana", "internal", "schemas", "scripts"}

// testOnly are imported by tests alone.
var testOnly = []string{"internal/testkit", "internal/e2e", "internal/kubetest"}

func covers(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pkg == pattern
}

// deps lists every soakd package (relative to the module) with the soakd
// packages its non-test code depends on, directly or not.
func deps(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", module+"/...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		var own []string
		for _, d := range f[1:] {
			if rel, ok := strings.CutPrefix(d, module+"/"); ok {
				own = append(own, rel)
			}
		}
		m[pkg] = own
	}
	return m
}

func TestImportDirection(t *testing.T) {
	all := deps(t)
	for pkg, ds := range all {
		for _, r := range forbidden {
			if !covers(r.pkg, pkg) {
				continue
			}
			for _, d := range ds {
				for _, denied := range r.denied {
					if covers(denied, d) {
						t.Errorf("%s depends on %s: it must not (%s)", pkg, d, r.why)
					}
				}
			}
		}
		for _, d := range ds {
			if d == "internal/cli" && pkg != "" {
				t.Errorf("%s depends on internal/cli: only main does", pkg)
			}
			for _, to := range testOnly {
				if covers(to, d) {
					t.Errorf("%s depends on %s, which only tests may import", pkg, d)
				}
			}
		}
	}
	for _, want := range []string{"daemon/config", "daemon/builtin", "daemon/target", "daemon/run", "daemon/serve", "internal/cli"} {
		if _, ok := all[want]; !ok {
			t.Errorf("no package %s: the layout the README draws has one", want)
		}
	}
}

func TestTopLevel(t *testing.T) {
	for pkg := range deps(t) {
		if pkg == "" {
			continue // main, a few lines over internal/cli
		}
		top, _, _ := strings.Cut(pkg, "/")
		if !slices.Contains(topLevel, top) {
			t.Errorf("package %s sits at the top level: the top level is the design card's (%s); move it under internal/", pkg, strings.Join(topLevel, ", "))
		}
	}
}

// TestRuleTableMatters: each rule names packages that exist, so a rename
// cannot leave a rule that checks nothing.
func TestRuleTableMatters(t *testing.T) {
	all := deps(t)
	for _, r := range forbidden {
		found := false
		for pkg := range all {
			found = found || covers(r.pkg, pkg)
		}
		if !found {
			t.Errorf("rule for %s: no such package", r.pkg)
		}
	}
}
