package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/testkit"
)

// nodeExampleDir is the Node Donut server the examples run (npm ci there).
const nodeExampleDir = "examples/node-donut"

// needNode skips a test that needs node and the example's installed
// packages when either is missing, saying how to get them; under CI=true
// (.ci/run installs both) it fails instead.
func needNode(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the Node example server and the soakd binary")
	}
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH (apt-get install nodejs npm)"
	} else if _, err := os.Stat(filepath.Join(nodeExampleDir, "node_modules")); err != nil {
		missing = nodeExampleDir + "/node_modules is missing (npm ci --prefix " + nodeExampleDir + ")"
	}
	if missing == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s; .ci/run installs it", missing)
	}
	t.Skip(missing)
}

// exampleConfig reads examples/name with its port 4000 moved to port, and
// each old string of the pairs oldnew replaced by its new one (a PID file,
// a binary's path).
func exampleConfig(t *testing.T, name string, port int, oldnew ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("examples", name))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "4000", strconv.Itoa(port))
	for i := 0; i+1 < len(oldnew); i += 2 {
		if !strings.Contains(s, oldnew[i]) {
			t.Fatalf("examples/%s holds no %q to replace", name, oldnew[i])
		}
		s = strings.ReplaceAll(s, oldnew[i], oldnew[i+1])
	}
	return s
}

// startNode starts the Node example on port and waits for it to answer;
// it is stopped (SIGTERM) when the test ends.
func startNode(t *testing.T, port int) *exec.Cmd {
	t.Helper()
	return startServer(t, "the Node server", exec.Command("node", filepath.Join(nodeExampleDir, "server.js"), strconv.Itoa(port)), port)
}

// startServer starts cmd, an example server (what names it in messages),
// and waits until it answers /healthz on port; it is stopped (SIGTERM, then
// SIGKILL after 10 s) when the test ends.
func startServer(t *testing.T, what string, cmd *exec.Cmd, port int) *exec.Cmd {
	t.Helper()
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/healthz", port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cmd
			}
		}
		select {
		case <-done:
			t.Fatalf("%s exited before answering: %v", what, cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer /healthz within 30 s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// nodeReport is what the Node tests read of report.json.
type nodeReport struct {
	Status  string `json:"status"`
	Verdict string `json:"verdict"`
	Error   string `json:"error"`
	Arms    string `json:"arms"`
	Target  struct {
		Kind    string `json:"kind"`
		PID     int    `json:"pid"`
		Runtime string `json:"runtime"`
		Exit    string `json:"exit"`
		Figures []struct {
			Name, Source, Definition, Reason string
			Measured                         bool
		} `json:"figures"`
	} `json:"target"`
	KPIs []struct {
		Name      string   `json:"name"`
		GraphQL   float64  `json:"graphql"`
		Delta     *float64 `json:"delta"`
		Gated     bool     `json:"gated"`
		Outcome   string   `json:"outcome"`
		Reason    string   `json:"reason"`
		NoControl bool     `json:"no_control_group"`
	} `json:"kpis"`
	Checks []nodeCheck `json:"checks"`
	Phases []struct {
		Name      string `json:"name"`
		Arm       string `json:"arm"`
		Requests  int64  `json:"requests"`
		Errors    int64  `json:"errors"`
		Resources *struct {
			CPUKnown         bool              `json:"cpu_known"`
			GCPercentKnown   bool              `json:"gc_percent_known"`
			GCCycles         uint64            `json:"gc_cycles"`
			SamplerCostUs    float64           `json:"sampler_cost_mean_us"`
			ScrapeCostMeanUs float64           `json:"scrape_cost_mean_us"`
			ScrapeCostMaxUs  float64           `json:"scrape_cost_max_us"`
			ScrapeBytesMean  float64           `json:"scrape_bytes_mean"`
			NotMeasured      map[string]string `json:"not_measured"`
		} `json:"resources"`
		PerRequest struct {
			NotMeasured map[string]string `json:"not_measured"`
		} `json:"per_request"`
		Subscriptions *struct {
			Subscriptions int   `json:"subscriptions"`
			Expected      int64 `json:"expected"`
			Received      int64 `json:"received"`
			Lost          int64 `json:"lost"`
			Duplicated    int64 `json:"duplicated"`
			Foreign       int64 `json:"foreign"`
		} `json:"subscriptions"`
	} `json:"phases"`
}

// nodeCheck is a check of report.json.
type nodeCheck struct {
	Group, Name, Phase, Outcome, Detail string
	Pass                                bool
}

// outcome is the check's outcome: its own, else read from pass.
func (c nodeCheck) outcome() string {
	switch {
	case c.Outcome != "":
		return c.Outcome
	case c.Pass:
		return "pass"
	}
	return "fail"
}

func readNodeReport(t *testing.T, dir string) (nodeReport, string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep nodeReport
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	return rep, string(raw)
}

// checkNodeRun asserts what a complete run of the node-small profile against
// the Node example shows: the verdict and the KPI rows; the figures Node's
// prom-client gives, each with its source; those it does not give not
// measured with a reason (never 0); every subscription event delivered once.
func checkNodeRun(t *testing.T, out string, code int, kind string, pid int) {
	t.Helper()
	rep, raw := readNodeReport(t, out)
	if rep.Status != "complete" || (code != 0 && code != 1 && code != 4) {
		t.Fatalf("status %q (error %q), exit %d; want a complete run with a verdict's code\n%.3000s", rep.Status, rep.Error, code, raw)
	}
	if rep.Verdict == "" || rep.Verdict == "running" || rep.Verdict == "aborted" {
		t.Errorf("verdict %q", rep.Verdict)
	}
	if rep.Target.Kind != kind || rep.Target.Runtime != "node" || (pid != 0 && rep.Target.PID != pid) {
		t.Errorf("target %s pid %d runtime %s; want %s pid %d node", rep.Target.Kind, rep.Target.PID, rep.Target.Runtime, kind, pid)
	}
	checkNothingUnmeasuredReadsAsANumber(t, raw)
	var kpis []string
	for _, k := range rep.KPIs {
		kpis = append(kpis, k.Name)
	}
	for _, want := range []string{"cpu_machine_percent", "gc_percent", "throughput_rps", "cpu_us_per_request", "alloc_bytes_per_request", "gc_pause_p99_ms"} {
		if !slices.Contains(kpis, want) {
			t.Errorf("KPI row %s missing (rows %v)", want, kpis)
		}
	}
	figs := map[string]string{}
	for _, f := range rep.Target.Figures {
		if f.Measured {
			figs[f.Name] = f.Source
		} else {
			figs[f.Name] = "not measured: " + f.Reason
			if f.Reason == "" {
				t.Errorf("figure %s not measured without a reason", f.Name)
			}
		}
	}
	osSrc := fmt.Sprintf("os: /proc, pid %d and the processes under it", rep.Target.PID)
	for name, want := range map[string]string{
		"cpu_seconds":               osSrc,
		"rss_bytes":                 osSrc,
		"gc_percent":                "series nodejs_gc_duration_seconds_sum",
		"gc_cycles":                 "series nodejs_gc_duration_seconds_count",
		"heap_used_bytes":           "series nodejs_heap_size_used_bytes",
		"eventloop_lag_p99_seconds": "series nodejs_eventloop_lag_p99_seconds",
		"alloc_bytes":               "not measured: ",
		"heap_live_bytes":           "not measured: the Node target exposes no heap-after-GC figure",
		"goroutines":                "series nodejs_active_handles_total", // Node's analogue: active libuv handles
		"gc_pause_p99_ms":           "not measured: the node runtime's standard Prometheus series have no GC pause histogram",
	} {
		if !strings.HasPrefix(figs[name], want) {
			t.Errorf("figure %s: %q, want %q…", name, figs[name], want)
		}
	}
	for _, k := range rep.KPIs {
		if k.Name == "alloc_bytes_per_request" && (k.Delta != nil || !strings.Contains(k.Reason, "no allocation counter")) {
			t.Errorf("alloc_bytes_per_request: delta %v reason %q; want not measured with Node's reason, never 0", k.Delta, k.Reason)
		}
	}
	var names []string
	subs := 0
	for _, p := range rep.Phases {
		names = append(names, p.Name)
		if p.Requests == 0 || p.Errors != 0 {
			t.Errorf("%s: %d requests, %d errors; want requests, none failed", p.Name, p.Requests, p.Errors)
		}
		r := p.Resources
		if r == nil {
			t.Errorf("%s: no resources", p.Name)
			continue
		}
		if !r.CPUKnown || !r.GCPercentKnown || r.GCCycles == 0 {
			t.Errorf("%s: CPU known %v, GC %% known %v, %d GC cycles; want Node's CPU and GC measured", p.Name, r.CPUKnown, r.GCPercentKnown, r.GCCycles)
		}
		for _, key := range []string{"alloc_bytes", "heap_live_bytes", "gc_pauses"} {
			if r.NotMeasured[key] == "" {
				t.Errorf("%s: resources.not_measured[%s] has no reason (%v)", p.Name, key, r.NotMeasured)
			}
		}
		if p.PerRequest.NotMeasured["alloc_bytes"] == "" {
			t.Errorf("%s: per-request allocation must be not measured with a reason", p.Name)
		}
		// The scrape's own cost, within the sampler's.
		if r.ScrapeCostMeanUs <= 0 || r.ScrapeCostMaxUs < r.ScrapeCostMeanUs || r.ScrapeCostMeanUs > r.SamplerCostUs || r.ScrapeBytesMean < 1000 {
			t.Errorf("%s: scrape %.0f µs (max %.0f), %.0f bytes; sampler %.0f µs", p.Name, r.ScrapeCostMeanUs, r.ScrapeCostMaxUs, r.ScrapeBytesMean, r.SamplerCostUs)
		}
		if s := p.Subscriptions; s != nil {
			subs++
			if s.Subscriptions != 10 || s.Expected == 0 || s.Received != s.Expected || s.Lost != 0 || s.Duplicated != 0 || s.Foreign != 0 {
				t.Errorf("%s: subscriptions %+v, want every expected event received once", p.Name, *s)
			}
		}
	}
	if want := []string{"memory-profile", "rest-control#1", "graphql-load#1", "graphql-load#2", "rest-control#2"}; !slices.Equal(names, want) {
		t.Errorf("phases %v, want %v", names, want)
	}
	if subs != 2 {
		t.Errorf("%d phases with subscriptions, want both graphql-load rounds", subs)
	}
	for _, c := range rep.Checks {
		if c.Name == "exact_delivery" && c.outcome() != "pass" {
			t.Errorf("exact delivery %s: %s", c.Phase, c.Detail)
		}
		if c.Outcome == "not_measured" && !strings.Contains(c.Detail, "not measured") {
			t.Errorf("check %s (%s) not measured without its reason: %q", c.Name, c.Phase, c.Detail)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Where the resource figures come from", "`series nodejs_gc_duration_seconds_sum", "## The harness's own cost", "Scrape mean"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// TestNodeCommandTarget soaks the Node example as a command target, with
// examples/node-command.yaml as written (on a free port): soakd starts it,
// measures it from outside and stops it.
func TestNodeCommandTarget(t *testing.T) {
	needNode(t)
	bin := buildSoakd(t)
	_, out, code := runConfig(t, bin, exampleConfig(t, "node-command.yaml", freePort(t)))
	checkNodeRun(t, out, code, "command", 0)
	rep, _ := readNodeReport(t, out)
	if rep.Target.Exit != "exit status 0" {
		t.Errorf("exit %q, want exit status 0 after SIGTERM", rep.Target.Exit)
	}
	if err := syscall.Kill(rep.Target.PID, 0); err == nil {
		t.Errorf("the Node server %d still runs after the run", rep.Target.PID)
	}
	if b, err := os.ReadFile(filepath.Join(out, "target.stdout.log")); err != nil || !strings.Contains(string(b), `"pid":`) {
		t.Errorf("target.stdout.log lacks the server's ready line (%v): %q", err, b)
	}
	// A runtime without a pprof endpoint: the overhead section says it is
	// not measured, and why, instead of vanishing.
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## Where the overhead goes, by layer\n\nNot measured: the target offers no CPU profile: ") || !strings.Contains(string(md), "target.pprof_url is not set") {
		t.Errorf("report.md does not say why the overhead is not measured:\n%s", md)
	}
}

// TestNodeAttachTarget soaks a Node example server the test started, by
// its PID file, with examples/node-attach.yaml; the server keeps running.
func TestNodeAttachTarget(t *testing.T) {
	needNode(t)
	bin := buildSoakd(t)
	port := freePort(t)
	node := startNode(t, port)
	pidFile := filepath.Join(t.TempDir(), "node-donut.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(node.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, out, code := runConfig(t, bin, exampleConfig(t, "node-attach.yaml", port, "/tmp/node-donut.pid", pidFile))
	checkNodeRun(t, out, code, "attach", node.Process.Pid)
	stillServing(t, port, "the attached Node server")
}

// TestNodeWithoutControlGroup runs examples/node-graphql-only.yaml: no REST
// twin, so the KPI rows read "no control group" and the verdict rests on
// the checks.
func TestNodeWithoutControlGroup(t *testing.T) {
	needNode(t)
	bin := buildSoakd(t)
	_, out, code := runConfig(t, bin, exampleConfig(t, "node-graphql-only.yaml", freePort(t)))
	rep, raw := readNodeReport(t, out)
	if rep.Status != "complete" || (code != 0 && code != 1 && code != 4) {
		t.Fatalf("status %q (error %q), exit %d\n%.3000s", rep.Status, rep.Error, code, raw)
	}
	checkNoControlGroup(t, rep)
}

// checkNoControlGroup asserts a run without a control group: every KPI row
// not measured for that reason and not gated, the GraphQL arm's own
// figures kept, the verdict decided by the checks alone.
func checkNoControlGroup(t *testing.T, rep nodeReport) {
	t.Helper()
	if rep.Arms != "graphql" {
		t.Errorf("arms %q, want graphql (one arm)", rep.Arms)
	}
	if len(rep.KPIs) == 0 {
		t.Fatal("no KPI rows")
	}
	for _, k := range rep.KPIs {
		if !k.NoControl || k.Gated || k.Outcome != "not_measured" || k.Delta != nil || !strings.HasPrefix(k.Reason, "no control group") {
			t.Errorf("KPI %s: %+v, want not measured for want of a control group, not gated", k.Name, k)
		}
		if k.Name == "throughput_rps" && k.GraphQL <= 0 {
			t.Errorf("throughput_rps: GraphQL %v, want the GraphQL arm's own figure", k.GraphQL)
		}
	}
	for _, p := range rep.Phases {
		if p.Arm != "graphql" {
			t.Errorf("phase %s drove the %s arm", p.Name, p.Arm)
		}
	}
	want := "pass"
	for _, c := range rep.Checks {
		switch o := c.outcome(); {
		case o == "fail":
			want = "fail"
		case o != "pass" && want != "fail":
			want = "inconclusive"
		}
	}
	if len(rep.Checks) == 0 || rep.Verdict != want {
		t.Errorf("verdict %q from %d checks, want %q: decided by the checks alone", rep.Verdict, len(rep.Checks), want)
	}
}

// abSideBase names, for each `soakd ab` side file in examples/ (an overlay
// of the keys one side changes, not a whole config), the config it is
// decoded on top of as --config.
var abSideBase = map[string]string{
	"gobooks-ab-old.yaml": "gobooks-command.yaml",
	"gobooks-ab-new.yaml": "gobooks-command.yaml",
}

// TestExamplesLoad: every examples/*.yaml is a valid configuration, each
// A/B side file once decoded on top of its --config as soakd ab does.
func TestExamplesLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	files, err := filepath.Glob(filepath.Join("examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("examples: %v, want one per target kind", files)
	}
	kinds := map[string]bool{}
	sides := map[string][]string{} // a base config's sides' servers (host:port)
	for _, f := range files {
		if base, ok := abSideBase[filepath.Base(f)]; ok {
			sides[base] = append(sides[base], checkABSide(t, f, base))
			continue
		}
		if strings.Contains(filepath.Base(f), "-ab-") {
			t.Errorf("%s looks like a soakd ab side file: name its --config in abSideBase", f)
			continue
		}
		stdout, stderr, code := runSoakd(t, bin, "config", "--all", "--config", f)
		if code != 0 {
			t.Errorf("soakd config --config %s: exit %d\n%s", f, code, stderr)
			continue
		}
		for _, k := range []string{"builtin", "attach", "command"} {
			if strings.Contains(stdout, "\n  kind: "+k+"\n") {
				kinds[k] = true
			}
		}
	}
	if len(kinds) != 3 {
		t.Errorf("target kinds in the examples: %v, want builtin, attach and command", kinds)
	}
	for base, servers := range sides {
		if slices.Sort(servers); len(servers) != 2 || servers[0] == servers[1] {
			t.Errorf("A/B sides of %s serve on %v; want two sides, each on a server of its own", base, servers)
		}
	}
}

// checkABSide loads the side file side on top of examples/base, as soakd ab
// --config base --old/--new side does, and checks the side names a server
// of its own: its command line and every URL give one host:port, not
// base's (a URL a side file leaves out keeps base's). It returns that
// host:port ("" when the file does not load).
func checkABSide(t *testing.T, side, base string) string {
	t.Helper()
	cfg, err := loadConfigFile(t, filepath.Join("examples", base))
	if err != nil {
		t.Errorf("examples/%s, the --config of %s: %v", base, side, err)
		return ""
	}
	doc, err := os.ReadFile(side)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := cfg.Overlay(doc, side)
	if err != nil {
		t.Errorf("%s on top of examples/%s: %v", side, base, err)
		return ""
	}
	host := func(raw string) string {
		u, err := url.Parse(raw)
		if err != nil {
			return raw
		}
		return u.Host
	}
	tc := sc.Target
	server := host(tc.GraphQLURL)
	for key, u := range map[string]string{"ready_url": tc.ReadyURL, "rest_url": tc.RESTURL, "metrics_url": tc.MetricsURL, "pprof_url": tc.PprofURL} {
		if host(u) != server {
			t.Errorf("%s: target.%s %q is not on the side's graphql_url server %s", side, key, u, server)
		}
	}
	if server == host(cfg.Target.GraphQLURL) {
		t.Errorf("%s: the side serves on %s, as examples/%s does; give it a port of its own", side, server, base)
	}
	_, port, _ := strings.Cut(server, ":")
	if tc.Kind != report.TargetCommand || !slices.Contains(tc.Argv, port) {
		t.Errorf("%s: target kind %s, argv %q; want a command started on port %s", side, tc.Kind, tc.Argv, port)
	}
	return server
}

// stillServing fails t unless the server on loopback port answers
// /healthz: an attached target outlives the run.
func stillServing(t *testing.T, port int, what string) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", port))
	if err != nil {
		t.Errorf("%s stopped serving: %v", what, err)
		return
	}
	resp.Body.Close()
}

// loadConfigFile is the file at path decoded on top of the embedded
// defaults, as soakd --config path does.
func loadConfigFile(t *testing.T, path string) (*config.Config, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return config.Load(testkit.Defaults(t), b, path)
}

// checkNothingUnmeasuredReadsAsANumber reads report.json as written: a KPI
// row or check not measured carries no pass and no value, a resource figure
// not measured is null (a Node target's gc_pause_p99_ms and alloc_bytes
// read 0 before), and a phase's return to rest is "not measured" rather
// than false when its goroutines (here: active handles) were not read, and
// says it counted active handles when it did.
func checkNothingUnmeasuredReadsAsANumber(t *testing.T, raw string) {
	t.Helper()
	var doc struct {
		KPIs   []map[string]any `json:"kpis"`
		Checks []map[string]any `json:"checks"`
		Phases []struct {
			Name      string         `json:"name"`
			Resources map[string]any `json:"resources"`
			After     map[string]any `json:"after"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range doc.KPIs {
		nm := k["outcome"] == "not_measured" || k["rest_not_measured"] == true || k["graphql_not_measured"] == true || k["no_control_group"] == true
		if _, has := k["pass"]; nm && has {
			t.Errorf("KPI %v not measured carries pass: %v", k["name"], k["pass"])
		}
		if k["graphql_not_measured"] == true && k["graphql"] != nil {
			t.Errorf("KPI %v: graphql %v not measured, want null", k["name"], k["graphql"])
		}
	}
	for _, c := range doc.Checks {
		if _, has := c["pass"]; c["outcome"] == "not_measured" && (has || c["value"] != nil) {
			t.Errorf("check %v (%v) not measured carries pass %v, value %v", c["name"], c["phase"], c["pass"], c["value"])
		}
	}
	for _, p := range doc.Phases {
		if p.Resources != nil {
			nm, _ := p.Resources["not_measured"].(map[string]any)
			for _, f := range []string{"gc_pause_p99_ms", "alloc_bytes"} {
				if _, ok := nm[f]; ok && p.Resources[f] != nil {
					t.Errorf("%s: resources.%s = %v not measured, want null", p.Name, f, p.Resources[f])
				}
			}
		}
		if p.After != nil {
			nm, _ := p.After["not_measured"].(map[string]any)
			if _, ok := nm["goroutines"]; ok && p.After["returned_not_measured"] == nil {
				t.Errorf("%s: goroutines not measured but returned = %v, want returned_not_measured", p.Name, p.After["returned"])
			} else if !ok && p.After["goroutine_analogue"] != "active handles" {
				t.Errorf("%s: a Node server's count is of active handles, not goroutines: goroutine_analogue %v", p.Name, p.After["goroutine_analogue"])
			}
		}
	}
}
