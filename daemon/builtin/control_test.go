package builtin

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/testkit"
)

// ctlDo sends one control request with token (none when "") and
// returns the status and body.
func ctlDo(t *testing.T, base, token, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestTargetControlSurface: `soakd target` prints its ready line, its
// control surface refuses every request without the right token, and with
// it samples, forces GCs and reports the rest state, settles, writes
// profiles and sets soakd's series on the target's /metrics.
func TestTargetControlSurface(t *testing.T) {
	cfg := testkit.Config(t, "sampler:\n  interval: 50ms\n")
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- ServeTarget(ctx, cfg, TargetOptions{Log: zap.NewNop(), Stdout: pw, Token: "s3cret"})
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v", err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	var ready TargetReady
	if err := json.Unmarshal([]byte(line), &ready); err != nil || ready.PID != os.Getpid() ||
		!strings.HasPrefix(ready.URL, "http://127.0.0.1:") || !strings.HasPrefix(ready.ControlURL, "http://127.0.0.1:") {
		t.Fatalf("ready line %q (%v)", line, err)
	}
	endpoints := []struct{ method, path, body string }{
		{"GET", "/soakd/samples", ""},
		{"POST", "/soakd/phase", `{"Name":"x"}`},
		{"POST", "/soakd/baseline", ""},
		{"POST", "/soakd/settle", `{"Duration":1000000}`},
		{"POST", "/soakd/heap", `{"Path":"/tmp/never"}`},
		{"POST", "/soakd/goroutines", `{"Path":"/tmp/never"}`},
		{"POST", "/soakd/cpu/start", `{"Path":"/tmp/never"}`},
		{"POST", "/soakd/cpu/stop", ""},
		{"POST", "/soakd/metrics", `{"Op":"run_verdict","Verdict":"fail"}`},
		{"POST", "/soakd/pin", `{"CPUs":[0]}`},
		{"GET", "/soakd/affinity", ""},
		{"GET", "/soakd/nothing", ""},
	}
	for _, e := range endpoints {
		for _, tok := range []string{"", "wrong", "s3cret-but-longer"} {
			if code, body := ctlDo(t, ready.ControlURL, tok, e.method, e.path, e.body); code != http.StatusUnauthorized {
				t.Errorf("%s %s with token %q: HTTP %d %s, want 401", e.method, e.path, tok, code, body)
			}
		}
	}
	// The target's own endpoints stay open; the control paths are not there.
	if code, _ := testkit.Get(t, ready.URL+"/soakd/samples"); code != http.StatusNotFound {
		t.Errorf("the target's listener answers /soakd/samples with %d, want 404", code)
	}

	// The sampler's first sample may not be taken yet on a loaded machine:
	// ask again (bounded) until one is.
	var (
		s    report.Samples
		code int
		body string
	)
	for range 100 {
		code, body = ctlDo(t, ready.ControlURL, "s3cret", "GET", "/soakd/samples", "")
		s = report.Samples{}
		if err = json.Unmarshal([]byte(body), &s); code != http.StatusOK || err != nil || len(s.Samples) > 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code != http.StatusOK || err != nil || len(s.Samples) == 0 || len(s.PauseBuckets) == 0 {
		t.Fatalf("samples: HTTP %d (%v) %d samples, %d buckets", code, err, len(s.Samples), len(s.PauseBuckets))
	}
	last := s.Samples[len(s.Samples)-1].Time
	if code, _ := ctlDo(t, ready.ControlURL, "s3cret", "POST", "/soakd/phase", `{"Name":"p1"}`); code != http.StatusNoContent {
		t.Errorf("phase: HTTP %d", code)
	}
	code, body = ctlDo(t, ready.ControlURL, "s3cret", "GET", "/soakd/samples?after="+last.Format(time.RFC3339Nano), "")
	s = report.Samples{}
	// Only samples after last, the one SetPhase took among them (a
	// periodic one may come first).
	if err := json.Unmarshal([]byte(body), &s); code != http.StatusOK || err != nil || len(s.Samples) == 0 || !s.Samples[0].Time.After(last) ||
		s.Samples[len(s.Samples)-1].Phase != "p1" || len(s.PauseBuckets) != 0 {
		t.Errorf("samples after %s: HTTP %d (%v) %+v", last, code, err, s)
	}
	code, body = ctlDo(t, ready.ControlURL, "s3cret", "POST", "/soakd/baseline", "")
	var rest Rest
	if err := json.Unmarshal([]byte(body), &rest); code != http.StatusOK || err != nil || rest.Goroutines == 0 || rest.HeapLiveBytes == 0 {
		t.Errorf("baseline: HTTP %d %s", code, body)
	}
	code, body = ctlDo(t, ready.ControlURL, "s3cret", "POST", "/soakd/settle",
		fmt.Sprintf(`{"BaselineGoroutines":%d,"BaselineHeapLiveBytes":%d,"Duration":200000000}`, rest.Goroutines+100, rest.HeapLiveBytes))
	var after report.After
	if err := json.Unmarshal([]byte(body), &after); code != http.StatusOK || err != nil || !after.Returned || after.SettleSeconds < 0.2 || after.HeapLiveBytes == 0 {
		t.Errorf("settle: HTTP %d %s", code, body)
	}
	dir := t.TempDir()
	for _, w := range []struct{ path, file string }{{"/soakd/heap", "h.pb.gz"}, {"/soakd/goroutines", "g.txt"}, {"/soakd/cpu/start", "c.pb.gz"}, {"/soakd/cpu/stop", ""}} {
		body := ""
		if w.file != "" {
			body = fmt.Sprintf(`{"Path":%q}`, filepath.Join(dir, w.file))
		}
		if code, msg := ctlDo(t, ready.ControlURL, "s3cret", "POST", w.path, body); code != http.StatusNoContent {
			t.Errorf("%s: HTTP %d %s", w.path, code, msg)
		}
	}
	for _, f := range []string{"h.pb.gz", "g.txt", "c.pb.gz"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("profile %s not written: %v", f, err)
		}
	}
	for _, bad := range []string{"relative.pb.gz", filepath.Join(dir, "config.yaml")} {
		if code, _ := ctlDo(t, ready.ControlURL, "s3cret", "POST", "/soakd/heap", fmt.Sprintf(`{"Path":%q}`, bad)); code != http.StatusBadRequest {
			t.Errorf("a heap profile to %s: HTTP %d, want 400", bad, code)
		}
	}
	if code, _ := ctlDo(t, ready.ControlURL, "s3cret", "POST", "/soakd/cpu/stop", ""); code != http.StatusConflict {
		t.Errorf("cpu/stop with none running: HTTP %d, want 409", code)
	}
	for _, m := range []string{
		`{"Op":"phase_started","Run":"r1","Phase":"p1","Arm":"graphql"}`,
		`{"Op":"driver_progress","Phase":"p1","Arm":"graphql","Progress":{"Requests":10,"ActiveUsers":2}}`,
		`{"Op":"kpi_results","KPIs":[{"name":"gc_percent","rest":1,"graphql":2,"gated":true,"pass":true,"outcome":"pass"}]}`,
		`{"Op":"run_verdict","Verdict":"pass"}`,
	} {
		if code, msg := ctlDo(t, ready.ControlURL, "s3cret", "POST", "/soakd/metrics", m); code != http.StatusNoContent {
			t.Errorf("metrics %s: HTTP %d %s", m, code, msg)
		}
	}
	if code, _ := ctlDo(t, ready.ControlURL, "s3cret", "POST", "/soakd/metrics", `{"Op":"nope"}`); code != http.StatusBadRequest {
		t.Errorf("an unknown metrics operation: HTTP %d, want 400", code)
	}
	_, scrape := testkit.Get(t, ready.URL+"/metrics")
	for _, want := range []string{`soakd_run_verdict{verdict="pass"} 1`, `soakd_phase_info{arm="graphql",phase="p1",run="r1"} 1`,
		`soakd_driver_requests_total{arm="graphql",phase="p1"} 10`, `soakd_kpi_pass{kpi="gc_percent"} 1`} {
		if !strings.Contains(scrape, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("ServeTarget on cancel: %v", err)
	}
}
