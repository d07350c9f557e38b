package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/soakd/soakd/internal/report"
)

// goBooksDir is the Go server with a schema of its own (books and authors)
// that examples/gobooks-*.yaml soak: a module of its own, whose
// dependencies are modules soakd's go.mod requires at the same versions,
// so it builds from the module cache soakd's build fills.
const goBooksDir = "examples/gobooks"

// goBooksBinary is the path the gobooks examples name for the built server.
const goBooksBinary = "/tmp/gobooks"

// buildGoBooks builds examples/gobooks into a temporary directory.
func buildGoBooks(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the gobooks example server and the soakd binary")
	}
	bin := filepath.Join(t.TempDir(), "gobooks")
	cmd := exec.Command("go", "build", "-C", goBooksDir, "-o", bin, ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -C %s: %v\n%s", goBooksDir, err, out)
	}
	return bin
}

// goBooksRun is what the gobooks tests read of report.json beyond
// nodeReport: each phase's operations and error classes.
type goBooksRun struct {
	Phases []struct {
		Name          string              `json:"name"`
		ErrorsByClass map[string]int64    `json:"errors_by_class"`
		ErrorExamples map[string][]string `json:"error_examples"`
		Operations    []struct {
			Operation string `json:"operation"`
			Requests  int64  `json:"requests"`
			Errors    int64  `json:"errors"`
		} `json:"operations"`
	} `json:"phases"`
}

func readGoBooksRun(t *testing.T, raw string) goBooksRun {
	t.Helper()
	var r goBooksRun
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// checkGoBooksRun asserts what a complete run of the gobooks-small profile
// against the gobooks server shows: a verdict; the KPI rows, the GC and
// allocation ones measured from the server's own series; every figure with
// its source, the runtime ones from go_… series of its /metrics; the memory
// verdict's rules judged on the memory profile; every request of the
// config-defined operations passing its expectations; every subscription
// event delivered exactly once.
func checkGoBooksRun(t *testing.T, out string, code int, kind string, pid int) {
	t.Helper()
	rep, raw := readNodeReport(t, out)
	if rep.Status != "complete" || (code != 0 && code != 1 && code != 4) {
		t.Fatalf("status %q (error %q), exit %d; want a complete run with a verdict's code\n%.3000s", rep.Status, rep.Error, code, raw)
	}
	if rep.Verdict == "" || rep.Verdict == "running" || rep.Verdict == "aborted" {
		t.Errorf("verdict %q", rep.Verdict)
	}
	if rep.Target.Kind != kind || rep.Target.Runtime != "go" || (pid != 0 && rep.Target.PID != pid) {
		t.Errorf("target %s pid %d runtime %s; want %s pid %d go", rep.Target.Kind, rep.Target.PID, rep.Target.Runtime, kind, pid)
	}

	kpis := map[string]bool{}
	for _, k := range rep.KPIs {
		kpis[k.Name] = true
		switch k.Name {
		case "cpu_machine_percent", "gc_percent", "throughput_rps", "cpu_us_per_request", "alloc_bytes_per_request":
			if k.Delta == nil || k.NoControl {
				t.Errorf("KPI %s: not measured (%s); want REST and GraphQL compared from the server's figures", k.Name, k.Reason)
			}
		case "gc_pause_p99_ms":
			// From client_golang's pause histogram; a round without a GC pause in a window says so.
			if k.Delta == nil && !strings.Contains(k.Reason, "no GC pause") {
				t.Errorf("gc_pause_p99_ms: delta %v reason %q; want it compared from the pause histogram", k.Delta, k.Reason)
			}
		}
	}
	for _, want := range []string{"cpu_machine_percent", "gc_percent", "throughput_rps", "cpu_us_per_request", "alloc_bytes_per_request", "gc_pause_p99_ms"} {
		if !kpis[want] {
			t.Errorf("KPI row %s missing", want)
		}
	}

	figs := map[string]string{}
	for _, f := range rep.Target.Figures {
		switch {
		case !f.Measured && f.Reason == "":
			t.Errorf("figure %s not measured without a reason", f.Name)
		case !f.Measured:
			figs[f.Name] = "not measured: " + f.Reason
		case !strings.HasPrefix(f.Source, "os: /proc") && !strings.HasPrefix(f.Source, "series go_") && f.Source != "series process_cpu_seconds_total":
			t.Errorf("figure %s from %q; want the OS, a go_… series or process_cpu_seconds_total of the server's /metrics", f.Name, f.Source)
		default:
			figs[f.Name] = f.Source
		}
	}
	osSrc := fmt.Sprintf("os: /proc, pid %d and the processes under it", rep.Target.PID)
	for name, want := range map[string]string{
		"cpu_seconds":     osSrc,
		"rss_bytes":       osSrc,
		"gc_percent":      "series go_cpu_classes_gc_total_cpu_seconds_total ÷ series go_cpu_classes_total_cpu_seconds_total",
		"gc_cycles":       "series go_gc_cycles_total_gc_cycles_total",
		"alloc_bytes":     "series go_gc_heap_allocs_bytes_total",
		"heap_live_bytes": "series go_gc_heap_live_bytes",
		"goroutines":      "series go_sched_goroutines_goroutines",
		"gc_pause_p99_ms": "series go_", // the pause histogram: go_sched_pauses_total_gc_seconds or go_gc_pauses_seconds
	} {
		if !strings.HasPrefix(figs[name], want) {
			t.Errorf("figure %s: %q, want %q…", name, figs[name], want)
		}
	}

	ops := readGoBooksRun(t, raw)
	var names []string
	subs := 0
	for i, p := range rep.Phases {
		names = append(names, p.Name)
		if p.Requests == 0 || p.Errors != 0 {
			t.Errorf("%s: %d requests, %d errors %v; want requests, none failed", p.Name, p.Requests, p.Errors, ops.Phases[i].ErrorExamples)
		}
		for _, o := range ops.Phases[i].Operations {
			if !strings.HasPrefix(o.Operation, "book-") || o.Requests == 0 || o.Errors != 0 {
				t.Errorf("%s: operation %+v; want one of the config's book-… operations, sent, every response as expected", p.Name, o)
			}
		}
		r := p.Resources
		if r == nil {
			t.Errorf("%s: no resources", p.Name)
			continue
		}
		if !r.CPUKnown || !r.GCPercentKnown || r.GCCycles == 0 {
			t.Errorf("%s: CPU known %v, GC %% known %v, %d GC cycles; want the Go server's CPU and GC measured", p.Name, r.CPUKnown, r.GCPercentKnown, r.GCCycles)
		}
		for _, key := range []string{"alloc_bytes", "heap_live_bytes", "goroutines"} {
			if why := r.NotMeasured[key]; why != "" {
				t.Errorf("%s: %s not measured (%s); the Go collector's runtime/metrics series give it", p.Name, key, why)
			}
		}
		if r.ScrapeCostMeanUs <= 0 || r.ScrapeBytesMean < 1000 {
			t.Errorf("%s: scrape %.0f µs, %.0f bytes; want the scrape's cost measured", p.Name, r.ScrapeCostMeanUs, r.ScrapeBytesMean)
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

	memory := map[string]string{}
	for _, c := range rep.Checks {
		if c.Group == "memory" && c.Phase == "memory-profile" {
			memory[c.Name] = c.outcome() + ": " + c.Detail
		}
		if c.Name == "exact_delivery" && c.outcome() != "pass" {
			t.Errorf("exact delivery %s: %s", c.Phase, c.Detail)
		}
	}
	for _, name := range []string{"steady_allocation", "survivor_growth", "heap_returned", "goroutines_returned"} {
		if m := memory[name]; m == "" || strings.HasPrefix(m, "not_measured") {
			t.Errorf("memory rule %s on the memory profile: %q; want it judged from the server's go_… series", name, m)
		}
	}
}

// TestGoBooksCommandTarget soaks examples/gobooks, a Go server with a
// schema of its own, as a command target with examples/gobooks-command.yaml
// as written (on a free port, the binary built here): soakd starts it,
// drives the operations the config defines, measures it from outside and
// stops it.
func TestGoBooksCommandTarget(t *testing.T) {
	server := buildGoBooks(t)
	bin := buildSoakd(t)
	_, out, code := runConfig(t, bin, exampleConfig(t, "gobooks-command.yaml", freePort(t), goBooksBinary, server))
	checkGoBooksRun(t, out, code, "command", 0)
	rep, _ := readNodeReport(t, out)
	if rep.Target.Exit != "exit status 0" {
		t.Errorf("exit %q, want exit status 0 after SIGTERM", rep.Target.Exit)
	}
	if err := syscall.Kill(rep.Target.PID, 0); err == nil {
		t.Errorf("the gobooks server %d still runs after the run", rep.Target.PID)
	}
	if b, err := os.ReadFile(filepath.Join(out, "target.stdout.log")); err != nil || !strings.Contains(string(b), `"msg":"listening"`) {
		t.Errorf("target.stdout.log lacks the server's ready line (%v): %q", err, b)
	}
	if _, err := os.Stat(filepath.Join(out, "memory-profile.heap-after.pb.gz")); err != nil {
		t.Errorf("no heap profile fetched from target.pprof_url: %v", err)
	}
	// CPU profiles over each compared phase's steady window, fetched from
	// target.pprof_url in chunks: the overhead tables exist for a server
	// soakd does not host, each profile divided by the requests within
	// its chunks.
	full, err := report.Read(filepath.Join(out, report.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(full.ProfileRequests) == 0 || full.OverheadLayers == nil || len(full.Overhead) == 0 {
		t.Fatalf("no CPU profiles or overhead tables from target.pprof_url: profile_requests %v, layers %v, %d function rows; notes: %v", full.ProfileRequests, full.OverheadLayers, len(full.Overhead), full.Notes)
	}
	var gs int64
	for _, l := range full.OverheadLayers.Layers {
		gs += l.GraphQLSamples
	}
	if gs == 0 {
		t.Errorf("the layer table has no GraphQL samples")
	}
	for file, n := range full.ProfileRequests {
		if n <= 0 || !strings.HasSuffix(file, ".cpu.pb.gz") {
			t.Errorf("profile_requests[%s] = %d", file, n)
		}
	}
}

// TestGoBooksAttachTarget soaks a gobooks server the test started, by the
// PID file it wrote, with examples/gobooks-attach.yaml; it keeps running.
func TestGoBooksAttachTarget(t *testing.T) {
	server := buildGoBooks(t)
	bin := buildSoakd(t)
	port := freePort(t)
	pidFile := filepath.Join(t.TempDir(), "gobooks.pid")
	cmd := startServer(t, "the gobooks server", exec.Command(server, "-port", strconv.Itoa(port), "-pid-file", pidFile), port)
	if b, err := os.ReadFile(pidFile); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(cmd.Process.Pid) {
		t.Fatalf("PID file %q (%v), want %d", b, err, cmd.Process.Pid)
	}
	_, out, code := runConfig(t, bin, exampleConfig(t, "gobooks-attach.yaml", port, "/tmp/gobooks.pid", pidFile))
	checkGoBooksRun(t, out, code, "attach", cmd.Process.Pid)
	stillServing(t, port, "the attached gobooks server")
}

// TestGoBooksExpectationsChecked runs the command example, shortened to one
// round of 2 s phases, with the readers' expected title wrong ("Volume
// {{id}}" where the server answers "Book {{id}}"): every GraphQL and REST
// read fails as payload_mismatch with an example naming the path and both
// values, the writers still pass, and the verdict fails on the errors.
func TestGoBooksExpectationsChecked(t *testing.T) {
	server := buildGoBooks(t)
	bin := buildSoakd(t)
	cfg := exampleConfig(t, "gobooks-command.yaml", freePort(t), goBooksBinary, server,
		`"Book {{id}}"`, `"Volume {{id}}"`, "rounds: 2", "rounds: 1", "duration: 6s", "duration: 2s", "duration: 3s", "duration: 2s",
		"drain: 3s", "drain: 1s")
	_, out, code := runConfig(t, bin, cfg)
	rep, raw := readNodeReport(t, out)
	if rep.Status != "complete" || code != 1 || rep.Verdict != "fail" {
		t.Fatalf("status %q, verdict %q, exit %d; want a complete run failed by its errors\n%.3000s", rep.Status, rep.Verdict, code, raw)
	}
	run := readGoBooksRun(t, raw)
	if len(run.Phases) != 3 {
		t.Fatalf("%d phases, want memory-profile, rest-control and graphql-load", len(run.Phases))
	}
	readers := map[string]bool{}
	for _, p := range run.Phases {
		for _, o := range p.Operations {
			switch o.Operation {
			case "book-get", "book-query":
				readers[o.Operation] = true
				if o.Requests == 0 || o.Errors != o.Requests {
					t.Errorf("%s %s: %d of %d requests failed; want every read to fail its expectation", p.Name, o.Operation, o.Errors, o.Requests)
				}
			default:
				if o.Requests == 0 || o.Errors != 0 {
					t.Errorf("%s %s: %d of %d requests failed; want the writers to pass", p.Name, o.Operation, o.Errors, o.Requests)
				}
			}
		}
		var readErrors int64
		for _, o := range p.Operations {
			if o.Operation == "book-get" || o.Operation == "book-query" {
				readErrors += o.Errors
			}
		}
		if len(p.ErrorsByClass) != 1 || p.ErrorsByClass["payload_mismatch"] != readErrors {
			t.Errorf("%s: errors by class %v, want %d payload_mismatch only", p.Name, p.ErrorsByClass, readErrors)
		}
		path := "data.book.title"
		if p.Name == "rest-control" {
			path = "title"
		}
		ex := strings.Join(p.ErrorExamples["payload_mismatch"], "\n")
		if !strings.Contains(ex, path+`: got "Book `) || !strings.Contains(ex, `want "Volume `) {
			t.Errorf("%s: payload_mismatch examples %q; want %s with the value got and the one wanted", p.Name, ex, path)
		}
	}
	if !readers["book-get"] || !readers["book-query"] {
		t.Errorf("readers sent: %v, want book-get and book-query", readers)
	}
}

// TestGoBooksCheck: soakd check with examples/gobooks-command.yaml as
// written starts the gobooks server, sends each of its operations once
// (and one subscription event), every expectation passes against the real
// server, and the server is stopped again.
func TestGoBooksCheck(t *testing.T) {
	server := buildGoBooks(t)
	bin := buildSoakd(t)
	cfg := filepath.Join(t.TempDir(), "gobooks.yaml")
	if err := os.WriteFile(cfg, []byte(exampleConfig(t, "gobooks-command.yaml", freePort(t), goBooksBinary, server)), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runSoakd(t, bin, "check", "--config", cfg)
	t.Logf("soakd check:\n%s", stdout)
	if code != 0 || !strings.Contains(stdout, "check: pass (") || !strings.Contains(stdout, "book-query") || !strings.Contains(stdout, "book-get") {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}
