package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/schemas"
)

// soakdBinary is the binary the tests run, built once for the whole test
// binary (a build takes seconds; sixteen of them added minutes to make test).
var soakdBinary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// TestMain runs the end-to-end tests from the module root, as a user runs
// soakd from a checkout: examples/, docs/ and config.yaml are where the
// README says, and the binary is built from there.
func TestMain(m *testing.M) {
	if err := os.Chdir("../.."); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	if soakdBinary.dir != "" {
		_ = os.RemoveAll(soakdBinary.dir)
	}
	os.Exit(code)
}

// buildSoakd compiles the binary, as a user would get it, once per test run.
func buildSoakd(t *testing.T) string {
	t.Helper()
	b := &soakdBinary
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", "soakd-test-bin-")
		if b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "soakd")
		// -buildvcs=auto stamps the commit where a checkout has one, as
		// make build does, whatever GOFLAGS says.
		cmd := exec.Command("go", "build", "-buildvcs=auto", "-o", b.path, ".")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// tinyConfig is a profile small enough for a test (a few seconds on two
// cores) with the same shapes as the quick profile, and a sampler fast
// enough to put several samples in each steady window.
const tinyConfig = `
sampler:
  interval: 100ms
kpis:
  alloc_per_request_increase_percent: 2000
default_profile: tiny
profiles:
  tiny:
    description: end-to-end test profile
    settle: 300ms
    trim_head: 200ms
    trim_tail: 200ms
    request_timeout: 5s
    seed: 7
    compare: {rest: rest-control, graphql: graphql-load}
    phases:
      - name: rest-control
        arm: rest
        ramp_up: 300ms
        think: {min: 0ms, max: 10ms}
        users:
          - {operation: rest-get, users: 5, iterations: 300}
          - {operation: rest-put, users: 5, iterations: 300}
      - name: graphql-load
        arm: graphql
        ramp_up: 300ms
        think: {min: 0ms, max: 10ms}
        users:
          - {operation: graphql-query, users: 5, iterations: 300}
          - {operation: graphql-mutation, users: 5, iterations: 300}
        subscriptions: {clients: 5, per_client: 2, protocol: mixed, drain: 5s}
      - name: max-load-graphql
        arm: graphql
        model: ramping
        duration: 3s
        think: {min: 0ms, max: 10ms}
        ramp: {start: 5, step: 5, every: 1s, max: 15}
        failure: {window: 1s, max_error_ratio: 0.01, max_p99: 2s, min_requests: 10}
        users:
          - {operation: graphql-query, users: 1, iterations: 0}
`

// runSoakd runs the soakd binary bin with args, killed after 2 minutes,
// and returns its output and exit code.
func runSoakd(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runSoakdWithin(t, 2*time.Minute, bin, args...)
}

// runSoakdWithin is runSoakd killed after limit instead: for a session
// longer than one run, such as soakd ab's two.
func runSoakdWithin(t *testing.T, limit time.Duration, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("cannot run soakd: %v", err)
	}
	return o.String(), e.String(), code
}

func TestEndToEndRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(cfg, []byte(tinyConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	stdout, stderr, code := runSoakd(t, bin, "run", "--config", cfg, "--out", out, "--log-format", "json")

	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatalf("no report.json (exit %d): %v\nstderr:\n%s", code, err, stderr)
	}
	var rep struct {
		Verdict   string `json:"verdict"`
		Status    string `json:"status"`
		TargetPID int    `json:"target_pid"`
		Host      struct {
			Soakd string `json:"soakd_version"`
		} `json:"host"`
		KPIs []struct {
			Name      string   `json:"name"`
			Unit      string   `json:"unit"`
			REST      *float64 `json:"rest"`
			GraphQL   *float64 `json:"graphql"`
			Delta     *float64 `json:"delta"`
			Threshold *float64 `json:"threshold"`
			Pass      *bool    `json:"pass"`
			Outcome   string   `json:"outcome"`
		} `json:"kpis"`
		Phases []struct {
			Name          string  `json:"name"`
			Arm           string  `json:"arm"`
			Requests      int64   `json:"requests"`
			Errors        int64   `json:"errors"`
			ThroughputRPS float64 `json:"throughput_rps"`
			DriverPID     int     `json:"driver_pid"`
			LatencyMs     struct {
				P50, P90, P99, Max *float64
			} `json:"latency_ms"`
			Resources *struct {
				CPUMachinePercent float64 `json:"cpu_machine_percent"`
				Samples           int     `json:"samples"`
				AllocBytes        uint64  `json:"alloc_bytes"`
			} `json:"resources"`
			Subscriptions *struct {
				Subscriptions            int
				Expected, Received, Lost int64
			} `json:"subscriptions"`
			MaxLoad *struct {
				Reason            string  `json:"reason"`
				PeakThroughputRPS float64 `json:"peak_throughput_rps"`
				PeakUsers         int     `json:"peak_users"`
			} `json:"max_load"`
			After *struct {
				Returned    bool
				Subscribers int
			} `json:"after"`
		} `json:"phases"`
		OverheadLayers *struct {
			Layers []struct {
				Layer          string   `json:"layer"`
				Extra          float64  `json:"extra_us_per_request"`
				Share          *float64 `json:"share_percent"`
				RESTSamples    int64    `json:"rest_samples"`
				GraphQLSamples int64    `json:"graphql_samples"`
			} `json:"layers"`
			TotalExtra float64  `json:"total_extra_us_per_request"`
			Explained  *float64 `json:"explained_percent"`
		} `json:"overhead_layers"`
		AllocLayers *struct {
			Layers []struct {
				Layer   string  `json:"layer"`
				GraphQL float64 `json:"graphql_bytes_per_request"`
			} `json:"layers"`
			TotalExtra float64  `json:"total_extra_bytes_per_request"`
			Explained  *float64 `json:"explained_percent"`
		} `json:"alloc_layers"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("report.json does not decode: %v", err)
	}
	if err := schemas.Validate(schemas.Report, raw); err != nil {
		t.Errorf("report.json: %v", err)
	}
	if rep.Status != "complete" {
		t.Fatalf("status: got %q, want complete (exit %d)\nstderr:\n%s", rep.Status, code, stderr)
	}
	// The exit code is the verdict's: 0 pass, 1 fail, 4 inconclusive (one
	// round cannot be conclusive), nothing else.
	switch {
	case rep.Verdict == "pass" && code == 0, rep.Verdict == "fail" && code == 1, rep.Verdict == "inconclusive" && code == 4:
	default:
		t.Errorf("verdict %q with exit code %d", rep.Verdict, code)
	}
	wantKPIs := map[string]bool{"cpu_machine_percent": true, "gc_percent": true, "throughput_rps": true}
	for _, k := range rep.KPIs {
		if k.Unit == "" || k.REST == nil || k.GraphQL == nil || k.Pass == nil {
			t.Errorf("kpi %q lacks unit/rest/graphql/pass: %s", k.Name, raw)
		}
		if wantKPIs[k.Name] && (k.Threshold == nil || k.Delta == nil) {
			t.Errorf("gated kpi %q lacks delta or threshold", k.Name)
		}
		delete(wantKPIs, k.Name)
	}
	if len(wantKPIs) > 0 {
		t.Errorf("kpis missing: %v", wantKPIs)
	}
	if len(rep.Phases) != 3 {
		t.Fatalf("phases: got %d, want 3", len(rep.Phases))
	}
	// The report names the build that measured it, as --version does.
	if version, _, _ := runSoakd(t, bin, "--version"); rep.Host.Soakd == "" || "soakd "+rep.Host.Soakd != strings.TrimSpace(version) {
		t.Errorf("report.json's soakd_version %q does not match --version %q", rep.Host.Soakd, version)
	}
	pids := map[int]bool{rep.TargetPID: true}
	for _, p := range rep.Phases {
		if p.After == nil || !p.After.Returned || p.After.Subscribers != 0 {
			t.Errorf("%s: the target did not return to rest: %+v", p.Name, p.After)
		}
		// Isolation: every driver is its own process, never the target.
		if p.DriverPID <= 0 || pids[p.DriverPID] {
			t.Errorf("%s: driver pid %d is not a separate process (target %d)", p.Name, p.DriverPID, rep.TargetPID)
		}
		pids[p.DriverPID] = true
	}
	// Max load: a ramp from 5 to 15 users within 3 s under a generous SLO
	// ends without failure (user cap or duration cap) with a measured peak.
	if ml := rep.Phases[2].MaxLoad; ml == nil || (ml.Reason != "max_users" && ml.Reason != "duration") || ml.PeakThroughputRPS <= 0 || ml.PeakUsers < 5 {
		t.Errorf("max load: %+v, want no failure (max_users or duration) and a peak", ml)
	}
	if s := rep.Phases[1].Subscriptions; s == nil || s.Subscriptions != 10 || s.Expected != 10*300 || s.Received != s.Expected || s.Lost != 0 {
		t.Errorf("subscriptions: %+v, want 10 subscriptions receiving all 3000 events", s)
	}
	for _, p := range rep.Phases[:2] {
		if p.Requests != 3000 || p.Errors != 0 {
			t.Errorf("%s: requests %d errors %d, want 3000 and 0", p.Name, p.Requests, p.Errors)
		}
		if p.ThroughputRPS <= 0 || p.LatencyMs.P50 == nil || p.LatencyMs.P99 == nil || *p.LatencyMs.P99 <= 0 {
			t.Errorf("%s: throughput %v or latency missing", p.Name, p.ThroughputRPS)
		}
		if p.Resources == nil || p.Resources.Samples < 2 || p.Resources.CPUMachinePercent <= 0 || p.Resources.AllocBytes == 0 {
			t.Errorf("%s: resources missing or empty: %+v", p.Name, p.Resources)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| Metric | REST | GraphQL | Variance | KPI | Result |", "GC % time", "Throughput", "no Gen0/Gen1/Gen2"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if !strings.Contains(stdout, "verdict: "+strings.ToUpper(rep.Verdict)) || !strings.Contains(stdout, "CPU (share of machine)") {
		t.Errorf("the terminal table is missing from stdout:\n%s", stdout)
	}
	// The control for TestInjectedRegressionFailsTheGate: without the
	// planted cost, GraphQL's allocation per request is within the limit.
	for _, k := range rep.KPIs {
		if k.Name == "alloc_bytes_per_request" && k.Outcome == "fail" {
			t.Errorf("alloc_bytes_per_request fails without an injected cost: delta %v", *k.Delta)
		}
	}
	// The CPU by layer: samples of both arms attributed, other listed last,
	// and the named layers explaining a share of GraphQL's extra.
	if ol := rep.OverheadLayers; ol == nil || len(ol.Layers) < 2 || ol.Layers[len(ol.Layers)-1].Layer != "other" {
		t.Errorf("overhead_layers: got %+v, want rows ending with other", ol)
	} else {
		var rs, gs int64
		var named float64
		for _, l := range ol.Layers {
			rs, gs = rs+l.RESTSamples, gs+l.GraphQLSamples
			if l.Layer != "other" && l.Share != nil {
				named += *l.Share
			}
		}
		if rs == 0 || gs == 0 {
			t.Errorf("overhead_layers: %d REST and %d GraphQL samples, want both arms attributed", rs, gs)
		}
		if ol.TotalExtra <= 0 || ol.Explained == nil || *ol.Explained <= 0 || math.Abs(*ol.Explained-named) > 1e-6 {
			t.Errorf("overhead_layers: total extra %v, explained %v, named shares %v: want a positive extra the named layers explain part of", ol.TotalExtra, ol.Explained, named)
		}
		if !strings.Contains(string(md), "## Where the overhead goes, by layer") {
			t.Errorf("report.md lacks the layer table")
		}
		// Allocation by layer, from the heap profiles around each compared
		// phase: GraphQL allocates more, and named layers carry most of it.
		if al := rep.AllocLayers; al == nil || al.TotalExtra <= 0 || al.Explained == nil || *al.Explained < 50 || !strings.Contains(string(md), "## Allocation by layer") {
			t.Errorf("alloc_layers: %+v; want GraphQL's extra allocation mostly in named layers, and the section in report.md", al)
		} else {
			t.Logf("allocation by layer: GraphQL +%.0f B/request, named layers %.0f %%: %+v", al.TotalExtra, *al.Explained, al.Layers)
		}
		// Cumulative time by function beside the flat table, so a layer
		// can be followed down: gqlgen's frames carry GraphQL's extra. Which
		// of them make the table's 15 rows is chance in a run this short
		// (about 10 GraphQL samples, every row within noise; the executor
		// fell off in 1 run of 4), but gqlgen's handler holds every
		// GraphQL sample.
		if !strings.Contains(string(md), "## Where the overhead goes, cumulative") || !strings.Contains(string(md), "`github.com/99designs/gqlgen/graphql/") {
			_, cum, _ := strings.Cut(string(md), "## Where the overhead goes, cumulative")
			t.Errorf("report.md lacks the cumulative table naming gqlgen's frames:\n%.3000s", cum)
		}
		if !strings.Contains(string(md), "## Flame graph") || !strings.Contains(string(raw), `"flame": {`) {
			t.Errorf("no flame graph in report.md or report.json")
		}
		// The merged profiles the table was made from are in the run
		// directory: their samples are the table's, so go tool pprof
		// -diff_base rest.cpu.pb.gz graphql.cpu.pb.gz shows the same.
		for f, want := range map[string]int64{report.RESTCPUFile: rs, report.GraphQLCPUFile: gs} {
			p, err := profiles.ReadProfile(filepath.Join(out, f))
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			var n int64
			for _, smp := range p.Sample {
				n += smp.Value[0]
			}
			if n != want {
				t.Errorf("%s holds %d samples, the layer table %d", f, n, want)
			}
		}
	}
	for _, f := range []string{"report.html", "junit.xml", "samples.json", "graphql-load.cpu.pb.gz", "rest-control.cpu.pb.gz"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}

	// soakd report re-renders the run and exits with its verdict.
	if err := os.Remove(filepath.Join(out, "report.md")); err != nil {
		t.Fatal(err)
	}
	_, stderr, rcode := runSoakd(t, bin, "report", out)
	if rcode != code {
		t.Errorf("soakd report: exit %d, want the run's %d\n%s", rcode, code, stderr)
	}
	if md2, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || !strings.Contains(string(md2), "| Metric | REST | GraphQL | Variance | KPI | Result |") {
		t.Errorf("soakd report did not re-render report.md: %v", err)
	}
	// A one-round run compared with itself shows no change, but one sample
	// per run cannot be gated: inconclusive (exit 4), saying why.
	cout, stderr, ccode := runSoakd(t, bin, "compare", out, filepath.Join(out, "report.json"))
	if ccode != 4 || !strings.Contains(cout, "graphql-load is reported, not gated: one sample per run") || !strings.Contains(cout, "INCONCLUSIVE") {
		t.Errorf("soakd compare of a one-round run with itself: exit %d, want 4 with the reason\n%s\n%s", ccode, cout, stderr)
	}
	// junit.xml's one timed case is the run's verdict, carrying the run's
	// duration: the cases' times add up to the run's.
	if junit, err := os.ReadFile(filepath.Join(out, "junit.xml")); err != nil || bytes.Count(junit, []byte("<testcase ")) < 2 ||
		len(regexp.MustCompile(`<testcase [^>]*time="[0-9]+\.[0-9]{3}"`).FindAll(junit, -1)) != 1 ||
		!regexp.MustCompile(`<testcase classname="soakd" name="run" time="[0-9]+\.[0-9]{3}"`).Match(junit) {
		t.Errorf("junit.xml: want one timed case, soakd/run (%v):\n%.2000s", err, junit)
	}
	// The same as JSON: a document of its schema, the exit code unchanged.
	cout, stderr, ccode = runSoakd(t, bin, "compare", "--format", "json", out, out)
	if err := schemas.Validate(schemas.Compare, []byte(cout)); ccode != 4 || err != nil {
		t.Errorf("soakd compare --format json: exit %d, want 4 and a valid document: %v\n%s\n%s", ccode, err, cout, stderr)
	}
}

// withRounds sets the tiny profile's rounds.
func withRounds(cfg string, n int) string {
	return strings.Replace(cfg, "    seed: 7\n", fmt.Sprintf("    seed: 7\n    rounds: %d\n", n), 1)
}

// runTiny runs soakd on tinyConfig plus extra YAML and returns the report,
// the run directory and the exit code.

func runTiny(t *testing.T, bin, extra string, args ...string) (map[string]any, string, int) {
	t.Helper()
	return runConfig(t, bin, tinyConfig+extra, args...)
}

// runConfig runs `soakd run` on the config text cfg and returns the
// decoded report.json, the run directory and the exit code.
func runConfig(t *testing.T, bin, cfg string, args ...string) (map[string]any, string, int) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	if !strings.Contains(cfg, "\ndata_dir:") {
		// A self-check records the noise floor in data_dir: keep it out of
		// the working directory.
		cfg += "\ndata_dir: " + filepath.Join(dir, "data") + "\n"
	}
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	_, stderr, code := runSoakd(t, bin, append([]string{"run", "--config", path, "--out", out, "--log-format", "json"}, args...)...)
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatalf("no report.json (exit %d): %v\n%s", code, err, stderr)
	}
	var rep map[string]any
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	return rep, out, code
}

func rows(rep map[string]any, key string) []map[string]any {
	var out []map[string]any
	list, _ := rep[key].([]any)
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// TestInjectedRegressionFailsTheGate plants 256 KiB of garbage per GraphQL
// request: the allocation KPI must fail, by name, in report.json and in
// junit.xml, and the run must exit 1.
func TestInjectedRegressionFailsTheGate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	// Three rounds (one round is always inconclusive), given on the command
	// line: --rounds replaces the profile's one round.
	rep, out, code := runConfig(t, bin, tinyConfig+"inject:\n  graphql_alloc_bytes_per_request: 262144\n", "--rounds", "3")
	if code != 1 || rep["verdict"] != "fail" {
		t.Fatalf("an injected regression: exit %d verdict %v, want 1 and fail", code, rep["verdict"])
	}
	if n := len(rows(rep, "rounds")); n != 3 {
		t.Errorf("--rounds 3 ran %d rounds", n)
	}
	found := false
	for _, k := range rows(rep, "kpis") {
		if k["name"] == "alloc_bytes_per_request" {
			found = true
			if k["pass"] != false || k["outcome"] != "fail" || k["interval"] == nil {
				t.Errorf("alloc_bytes_per_request must fail with 256 KiB injected per request: %v", k)
			}
		}
	}
	if !found {
		t.Fatal("no alloc_bytes_per_request row")
	}
	junit, err := os.ReadFile(filepath.Join(out, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?s)<testcase[^>]*name="alloc_bytes_per_request"[^>]*>\s*<failure`).Match(junit) {
		t.Errorf("junit.xml does not fail alloc_bytes_per_request:\n%s", junit)
	}
	if !strings.Contains(fmt.Sprint(rep["notes"]), "TEST RUN") {
		t.Errorf("a run with a planted regression must say so in its notes")
	}
}

// TestInjectedLeakFailsTheMemoryVerdict plants a leak of 16 KiB per GraphQL
// request: the memory profile's survivor-growth and heap-return rules must
// fail. The phase lasts seconds, so survivor growth is told to judge it
// without a warm-up and on as few GC cycles as it ever accepts; with the
// defaults it would be not measured, which does not pass either.
func TestInjectedLeakFailsTheMemoryVerdict(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	extra := `
inject:
  graphql_leak_bytes_per_request: 16384
memory:
  alloc_window: 500ms
  warmup: 0s
  min_gc_cycles: 3
  min_span: 500ms
`
	cfg := strings.Replace(tinyConfig, "    compare: {rest: rest-control, graphql: graphql-load}\n    phases:\n",
		"    memory_phase: memory-profile\n    compare: {rest: rest-control, graphql: graphql-load}\n    phases:\n"+
			"      - name: memory-profile\n        arm: graphql\n        ramp_up: 200ms\n        think: {min: 0ms, max: 4ms}\n        users:\n          - {operation: graphql-query, users: 5, iterations: 1500}\n", 1)
	if cfg == tinyConfig {
		t.Fatal("could not add the memory phase to the test config")
	}
	rep, _, code := runConfig(t, bin, cfg+extra)
	if code != 1 {
		t.Errorf("a leaking run: exit %d, want 1", code)
	}
	got, outcome, detail := map[string]bool{}, map[string]any{}, map[string]any{}
	for _, c := range rows(rep, "checks") {
		if c["group"] == "memory" {
			got[c["name"].(string)] = c["pass"].(bool)
			outcome[c["name"].(string)], detail[c["name"].(string)] = c["outcome"], c["detail"]
		}
	}
	if pass, ok := got["survivor_growth"]; !ok || pass || outcome["survivor_growth"] != "fail" {
		t.Errorf("survivor_growth must fail under a leak: %v, outcomes %v: %v", got, outcome, detail["survivor_growth"])
	}
	t.Logf("survivor_growth: %v", detail["survivor_growth"])
	if pass, ok := got["heap_returned"]; !ok || pass {
		t.Errorf("heap_returned must fail under a leak: %v", got)
	}
}

// TestSelfCheckRounds runs REST against itself in two interleaved rounds:
// the second arm is REST too, the KPIs carry the rounds' spread, and the
// deltas are the noise floor.
func TestSelfCheckRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	rep, out, code := runConfig(t, bin, withRounds(tinyConfig, 2), "--arms", "rest,rest")
	if rep["arms"] != "rest,rest" || rep["gate"] != "interval" {
		t.Errorf("arms %v gate %v, want rest,rest and interval", rep["arms"], rep["gate"])
	}
	var names []string
	for _, p := range rows(rep, "phases") {
		names = append(names, p["name"].(string)+":"+p["arm"].(string))
	}
	want := "rest-control#1:rest rest-control-b#1:rest rest-control-b#2:rest rest-control#2:rest max-load-graphql:graphql" // A B, B A
	if got := strings.Join(names, " "); got != want {
		t.Errorf("phases:\n got %s\nwant %s", got, want)
	}
	if n := len(rows(rep, "rounds")); n != 2 {
		t.Errorf("rounds: got %d, want 2", n)
	}
	// compare names the phases that ran, not the profile's graphql-load.
	if got, want := fmt.Sprint(rep["compare"]), "map[graphql:rest-control-b graphql_phases:[rest-control-b#1 rest-control-b#2] rest:rest-control rest_phases:[rest-control#1 rest-control#2]]"; got != want {
		t.Errorf("compare:\n got %s\nwant %s", got, want)
	}
	for _, k := range rows(rep, "kpis") {
		if k["rounds"] != 2.0 || k["delta_min"] == nil || k["delta_max"] == nil {
			t.Errorf("kpi %v lacks the rounds' spread", k["name"])
		}
	}
	switch {
	case rep["verdict"] == "pass" && code == 0, rep["verdict"] == "fail" && code == 1, rep["verdict"] == "inconclusive" && code == 4:
	default:
		t.Errorf("verdict %v with exit %d", rep["verdict"], code)
	}
	// Two complete rounds: the noise floor is on record in data_dir, and the
	// report says where.
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(out), "data", "noise-floor.json"))
	if err != nil {
		t.Fatalf("no noise floor recorded: %v", err)
	}
	var nf struct {
		SchemaVersion int `json:"schema_version"`
		Floors        []struct {
			Run, Arms, Profile string
			KPIs               map[string]struct {
				SD     float64 `json:"sd"`
				Rounds int     `json:"rounds"`
			} `json:"kpis"`
		} `json:"floors"`
	}
	if err := json.Unmarshal(raw, &nf); err != nil {
		t.Fatal(err)
	}
	if nf.SchemaVersion != 1 || len(nf.Floors) != 1 || nf.Floors[0].Run != rep["run"] || nf.Floors[0].Arms != "rest,rest" || nf.Floors[0].Profile != "tiny" ||
		nf.Floors[0].KPIs["cpu_machine_percent"].Rounds != 2 {
		t.Errorf("noise-floor.json:\n%s", raw)
	}
	if notes := fmt.Sprint(rep["notes"]); !strings.Contains(notes, "Noise floor recorded in") {
		t.Errorf("notes do not say the noise floor was recorded: %s", notes)
	}
	t.Logf("self-check verdict %v; kpis %v", rep["verdict"], rows(rep, "kpis"))
}

func TestUsageErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("server:\n  lisen: x\nsampler:\n  interval: fast\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := func(wantCode int, wantStderr []string, args ...string) {
		t.Helper()
		_, stderr, code := runSoakd(t, bin, args...)
		if code != wantCode {
			t.Errorf("soakd %v: exit %d, want %d\n%s", args, code, wantCode, stderr)
		}
		for _, w := range wantStderr {
			if !strings.Contains(stderr, w) {
				t.Errorf("soakd %v: stderr lacks %q:\n%s", args, w, stderr)
			}
		}
	}
	f(2, []string{"line 2: server.lisen: unknown key", "line 4: sampler.interval: \"fast\" is not a duration"}, "run", "--config", bad)
	f(2, []string{"--profile \"nope\" does not exist"}, "run", "--profile", "nope", "--out", t.TempDir())
	exposed := filepath.Join(t.TempDir(), "exposed.yaml")
	if err := os.WriteFile(exposed, []byte("server:\n  listen: 0.0.0.0:0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f(2, []string{"line 2: server.listen:", "server.allow_non_loopback"}, "serve", "--config", exposed)
	f(2, []string{"unknown command"}, "frobnicate")
	f(2, []string{"unknown flag: --bogus"}, "run", "--bogus")
	f(2, []string{"drive needs --target"}, "drive")
	// A bad duet option starts no side: nothing is written.
	out := filepath.Join(t.TempDir(), "session")
	f(2, []string{`--duet-processes must be round or session (got "bogus")`}, "ab", "--duet", "--duet-processes", "bogus", "--out", out)
	f(2, []string{`--duet-layout must be halves or shared (got "diagonal")`}, "ab", "--duet", "--duet-layout", "diagonal", "--out", out)
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused duet option left %s behind (%v)", out, err)
	}
}

// longRun prepares `soakd run` on tinyConfig with a second phase that would
// take about a minute, for tests that interrupt it; it returns the command
// (not started) and the run directory.
func longRun(t *testing.T, bin string) (*exec.Cmd, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "long.yaml")
	long := strings.Replace(tinyConfig, "graphql-mutation, users: 5, iterations: 300", "graphql-mutation, users: 5, iterations: 20000", 1)
	if err := os.WriteFile(cfg, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return exec.CommandContext(ctx, bin, "run", "--config", cfg, "--out", out, "--log-format", "json"), out
}

// startRun starts `soakd run --config cfg --out out` (JSON logs), killed
// after two minutes as a safety net for a test that waits on its log, and
// returns it with its standard error to read.
func startRun(t *testing.T, bin, cfg, out string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, "run", "--config", cfg, "--out", out, "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stderr
}

func TestSIGTERMKeepsPartialReport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	// The second phase would take about a minute; SIGTERM arrives during it.
	cmd, out := longRun(t, bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first phase's partial report appears when it ends; give the
	// second phase a moment to start, then stop the run.
	for deadline := time.Now().Add(time.Minute); ; {
		if time.Now().After(deadline) {
			t.Fatalf("no partial report within a minute:\n%s", stderr.String())
		}
		if raw, err := os.ReadFile(filepath.Join(out, "report.json")); err == nil && bytes.Contains(raw, []byte(`"driver_pid"`)) {
			break // the first phase is in the report
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("SIGTERM during a phase: got %v, want exit code 3\n%s", err, stderr.String())
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Status, Verdict, Error string
		Phases                 []struct {
			Name      string
			Requests  int64
			Errors    int64
			Aborted   bool
			DriverPID int `json:"driver_pid"`
		}
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Status != "aborted" || rep.Verdict != "aborted" || rep.Error == "" {
		t.Errorf("status %q verdict %q error %q, want aborted, aborted and a reason", rep.Status, rep.Verdict, rep.Error)
	}
	if len(rep.Phases) != 2 {
		t.Fatalf("phases: got %d, want the finished one and the interrupted one:\n%s", len(rep.Phases), raw)
	}
	if p := rep.Phases[0]; p.Requests != 3000 || p.Aborted {
		t.Errorf("the finished phase must be kept whole: %+v", p)
	}
	if p := rep.Phases[1]; !p.Aborted || p.Requests == 0 || p.Requests >= 101500 || p.Errors != 0 {
		t.Errorf("the interrupted phase must keep its partial, error-free result: %+v", p)
	}
	// No driver is left behind.
	for _, p := range rep.Phases {
		if err := syscall.Kill(p.DriverPID, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("driver %d is still running (kill 0: %v)", p.DriverPID, err)
		}
	}
}

// TestDriverKilledMidPhase kills the driver with SIGKILL during the second
// phase: the daemon notices at once (its pipe closes), keeps the first
// phase's results, marks the run aborted and exits 3.
func TestDriverKilledMidPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	cmd, out := longRun(t, bin)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Find the second phase's driver in the daemon's JSON log.
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	pid := 0
	for pid == 0 && sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		var m struct {
			Msg   string `json:"msg"`
			Phase string `json:"phase"`
			PID   int    `json:"pid"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.Msg == "driver started" && m.Phase == "graphql-load" {
			pid = m.PID
		}
	}
	if pid == 0 {
		t.Fatalf("no driver for graphql-load in the log:\n%s", log.String())
	}
	time.Sleep(500 * time.Millisecond) // mid-phase
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("driver killed: got %v, want exit code 3", err)
	}
	raw, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Status, Error string
		Phases        []struct {
			Name     string
			Requests int64
		}
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Status != "aborted" || !strings.Contains(rep.Error, "driver") || !strings.Contains(rep.Error, "graphql-load") {
		t.Errorf("status %q error %q, want aborted naming the dead driver and its phase", rep.Status, rep.Error)
	}
	if len(rep.Phases) != 1 || rep.Phases[0].Name != "rest-control" || rep.Phases[0].Requests != 3000 {
		t.Errorf("the finished phase must be kept: %+v", rep.Phases)
	}
}

// soakConfig adds what a soak needs to tinyConfig: a data directory and a
// short pause between cycles, and drift judged from the first cycles on
// (no warm-up, one baseline cycle, one cycle beyond a limit fails): the
// tests' soaks have two or three cycles, far fewer than the defaults need.
func soakConfig(dataDir string) string {
	return tinyConfig + fmt.Sprintf(`
data_dir: %s
soak:
  pause: 200ms
  drift: {warmup_cycles: 0, baseline_cycles: 1, sustained_cycles: 1}
`, dataDir)
}

// TestSoakCycles runs three cycles on one target: every cycle's run is kept
// in the data directory, soak.json records their figures and the drift
// rules, and the exit code is the soak's verdict.
func TestSoakCycles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "soak.yaml")
	if err := os.WriteFile(cfg, []byte(soakConfig(data)), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runSoakd(t, bin, "soak", "--config", cfg, "--cycles", "3", "--log-format", "json")
	var soak struct {
		Status, Verdict string
		Cycles          []struct {
			Cycle         int
			Run           string
			Verdict       string
			HeapLiveBytes float64 `json:"heap_live_bytes"`
			RSSBytes      float64 `json:"rss_bytes"`
		}
		Drift []struct {
			Name string
			Pass bool
		}
		KPIs []struct {
			Name    string
			Rounds  int
			Gated   bool
			Outcome string
		}
	}
	raw, err := os.ReadFile(filepath.Join(data, "soak.json"))
	if err != nil {
		t.Fatalf("no soak.json (exit %d): %v\n%s", code, err, stderr)
	}
	if err := json.Unmarshal(raw, &soak); err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate(schemas.Soak, raw); err != nil {
		t.Errorf("soak.json: %v", err)
	}
	if soak.Status != "complete" || len(soak.Cycles) != 3 || len(soak.Drift) != 5 {
		t.Fatalf("soak: status %s, %d cycles, %d drift rules; want complete, 3, 5\n%s", soak.Status, len(soak.Cycles), len(soak.Drift), raw)
	}
	for _, c := range soak.Cycles {
		if c.HeapLiveBytes <= 0 || c.RSSBytes <= 0 {
			t.Errorf("cycle %d lacks figures: %+v", c.Cycle, c)
		}
		if _, err := os.Stat(filepath.Join(data, "runs", c.Run, "report.json")); err != nil {
			t.Errorf("cycle %d's run is not in the history: %v", c.Cycle, err)
		}
	}
	switch {
	case soak.Verdict == "pass" && code == 0, soak.Verdict == "fail" && code == 1, soak.Verdict == "inconclusive" && code == 4:
	default:
		t.Errorf("soak verdict %s with exit %d\n%s", soak.Verdict, code, stdout)
	}
	if !strings.Contains(stdout, "soak verdict: "+soak.Verdict) {
		t.Errorf("the soak table is missing:\n%s", stdout)
	}
	// The KPIs are judged over the cycles' rounds: three one-round cycles
	// give three samples, so the soak has intervals a single cycle lacks.
	gated := 0
	for _, k := range soak.KPIs {
		if k.Rounds != 3 {
			t.Errorf("soak KPI %s over %d rounds, want 3 (one per cycle)", k.Name, k.Rounds)
		}
		if k.Gated {
			gated++
			if k.Outcome == "" || !strings.Contains(stdout, "kpi "+k.Name) {
				t.Errorf("gated soak KPI %s: outcome %q, on the terminal: %v", k.Name, k.Outcome, strings.Contains(stdout, "kpi "+k.Name))
			}
		}
	}
	if gated == 0 {
		t.Errorf("soak.json has no gated KPI over the cycles:\n%s", raw)
	}
}

// TestSoakDriftCatchesALeak plants a leak of 16 KiB per GraphQL request: the
// live heap after GC grows from cycle to cycle, the drift rule fails and
// the soak exits 1.
func TestSoakDriftCatchesALeak(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "leak.yaml")
	if err := os.WriteFile(cfg, []byte(soakConfig(data)+"inject:\n  graphql_leak_bytes_per_request: 16384\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runSoakd(t, bin, "soak", "--config", cfg, "--cycles", "2", "--log-format", "json")
	raw, err := os.ReadFile(filepath.Join(data, "soak.json"))
	if err != nil {
		t.Fatalf("no soak.json (exit %d): %v\n%s", code, err, stderr)
	}
	var soak struct {
		Verdict string
		Drift   []struct {
			Name     string
			Pass     bool
			Measured float64
		}
	}
	if err := json.Unmarshal(raw, &soak); err != nil {
		t.Fatal(err)
	}
	if code != 1 || soak.Verdict != "fail" {
		t.Errorf("a leaking soak: exit %d verdict %s, want 1 and fail", code, soak.Verdict)
	}
	for _, d := range soak.Drift {
		if d.Name == "heap_live_drift" && (d.Pass || d.Measured < 1.1) {
			t.Errorf("heap_live_drift must fail with a 16 KiB-per-request leak: %+v", d)
		}
	}
}

// TestSoakGoesOnAfterADriverDies kills the first cycle's driver: that cycle
// is recorded as failed and the soak runs its second cycle.
func TestSoakGoesOnAfterADriverDies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "soak.yaml")
	if err := os.WriteFile(cfg, []byte(soakConfig(data)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "soak", "--config", cfg, "--cycles", "2", "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	killed := false
	for sc.Scan() {
		var m struct {
			Msg   string `json:"msg"`
			Cycle int    `json:"cycle"`
			Phase string `json:"phase"`
			PID   int    `json:"pid"`
		}
		if !killed && json.Unmarshal(sc.Bytes(), &m) == nil && m.Msg == "driver started" && m.Cycle == 1 && m.Phase == "graphql-load" {
			time.Sleep(300 * time.Millisecond)
			if err := syscall.Kill(m.PID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatal("never saw cycle 1's graphql-load driver")
	}
	raw, err := os.ReadFile(filepath.Join(data, "soak.json"))
	if err != nil {
		t.Fatal(err)
	}
	var soak struct {
		Status  string
		Verdict string
		Cycles  []struct {
			Cycle   int
			Verdict string
			Error   string
		}
	}
	if err := json.Unmarshal(raw, &soak); err != nil {
		t.Fatal(err)
	}
	if len(soak.Cycles) != 2 || soak.Cycles[0].Error == "" || soak.Cycles[1].Error != "" || soak.Status != "complete" || soak.Verdict != "fail" {
		t.Errorf("soak after a dead driver: %+v, want cycle 1 failed with an error, cycle 2 run, the soak complete and failed", soak)
	}
}

// awaitTargetAndPhase reads a `soakd run --log-format json` standard error
// until the driver of phase has started, and returns the pid logged with
// the message started (the target's process), whether the phase started,
// and the lines read.
func awaitTargetAndPhase(stderr io.Reader, started, phase string) (pid int, ok bool, log string) {
	var b strings.Builder
	sc := bufio.NewScanner(stderr)
	for !ok && sc.Scan() {
		line := sc.Text()
		b.WriteString(line + "\n")
		var m struct {
			Msg   string `json:"msg"`
			Phase string `json:"phase"`
			PID   int    `json:"pid"`
		}
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch {
		case m.Msg == started:
			pid = m.PID
		case m.Msg == "driver started" && m.Phase == phase:
			ok = true
		}
	}
	return pid, ok, b.String()
}

// killTargetMidPhase waits in a started `soakd run`'s JSON log for the
// target's pid (logged with the message started) and the graphql-load
// driver, kills the target with SIGKILL half a second into that phase, and
// checks the run exits 3 within 30 s (the phase would run about a minute
// more). It returns the pid it killed.
func killTargetMidPhase(t *testing.T, cmd *exec.Cmd, stderr io.Reader, started string) int {
	t.Helper()
	targetPID, ok, log := awaitTargetAndPhase(stderr, started, "graphql-load")
	if targetPID == 0 || targetPID == cmd.Process.Pid || !ok {
		t.Fatalf("no target pid (%d) or graphql-load driver in the log:\n%s", targetPID, log)
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	time.Sleep(500 * time.Millisecond) // mid-phase
	if err := syscall.Kill(targetPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("target killed: got %v, want exit code 3", err)
	}
	if d := time.Since(killed); d > 30*time.Second {
		t.Errorf("the run took %s to notice its target died", d)
	}
	return targetPID
}

// TestSoakStoppedEarlyIsJudged: a soak stopped with SIGTERM after a
// completed cycle is judged over it (status stopped, exit code from the
// verdict), not "aborted" with exit 3 as before; the cycle the stop cut
// short is kept, marked interrupted, and not judged.
func TestSoakStoppedEarlyIsJudged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "soak.yaml")
	if err := os.WriteFile(cfg, []byte(soakConfig(data)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "soak", "--config", cfg, "--cycles", "5", "--log-format", "json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	second := false
	for !second && sc.Scan() {
		var m struct {
			Msg   string `json:"msg"`
			Cycle int    `json:"cycle"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Msg == "soak cycle started" && m.Cycle == 2 {
			second = true
		}
	}
	if !second {
		t.Fatal("the second cycle never started")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	time.Sleep(time.Second) // into cycle 2
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	raw, rerr := os.ReadFile(filepath.Join(data, "soak.json"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	var soak struct {
		Status, Verdict string
		Notes           []string
		Cycles          []struct {
			Cycle       int
			Interrupted bool
		}
	}
	if err := json.Unmarshal(raw, &soak); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"pass": 0, "fail": 1, "inconclusive": 4}[soak.Verdict]
	if soak.Status != "stopped" || soak.Verdict == "aborted" || code != want || !strings.Contains(strings.Join(soak.Notes, " "), "Stopped early") {
		t.Fatalf("stopped soak: status %s verdict %s exit %d (want %d)\n%s", soak.Status, soak.Verdict, code, want, raw)
	}
	if n := len(soak.Cycles); n < 2 || soak.Cycles[0].Interrupted || !soak.Cycles[n-1].Interrupted {
		t.Errorf("cycles: %+v, want the first completed and the last interrupted", soak.Cycles)
	}
}
