package target

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/proctree"
	"github.com/soakd/soakd/profiles"
	"github.com/soakd/soakd/workloads"
)

// TestIdleCPUIsNotMeasured: a window in which the sampled process used no
// CPU while the target served thousands of requests is not measured, never
// 0.00 % and a pass.
func TestIdleCPUIsNotMeasured(t *testing.T) {
	start := time.Unix(1e9, 0)
	res := workloads.Result{Phase: "graphql-load", Arm: "graphql", ThroughputRPS: 2300, Requests: 9200,
		SteadyStart: start, SteadyEnd: start.Add(4 * time.Second)}
	for _, c := range []struct {
		cpu  float64
		want bool
	}{{0, false}, {0.92, true}} {
		p := newPhaseFrom(func(from, to time.Time) (*profiles.Summary, error) {
			return &profiles.Summary{WindowSeconds: 4, Samples: 40, Cores: 2, CPUKnown: true, CPUSeconds: c.cpu,
				CPUMachinePercent: c.cpu / 8 * 100, CPUCorePercent: c.cpu / 4 * 100}, nil
		}, res)
		r := p.Resources
		if r.CPUKnown != c.want {
			t.Errorf("cpu %.2f s over 9,200 requests: CPUKnown %v, want %v", c.cpu, r.CPUKnown, c.want)
		}
		if !c.want && (r.CPUMachinePercent != 0 || !strings.Contains(r.NotMeasured["cpu_seconds"], "not the process that answered")) {
			t.Errorf("idle CPU: %+v; want not measured with the reason", r)
		}
	}
}

func TestListenerStillOurs(t *testing.T) {
	tab := proctree.Table{1: {PID: 1}, 10: {PID: 10, PPID: 1, Comm: "node"}, 11: {PID: 11, PPID: 10, Comm: "node"},
		20: {PID: 20, PPID: 1, Comm: "node"}}
	if err := listenerStillOurs(tab, []int{10}, 10, "127.0.0.1:4000"); err != nil {
		t.Errorf("same holder: %v", err)
	}
	if err := listenerStillOurs(tab, []int{11}, 10, "127.0.0.1:4000"); err != nil {
		t.Errorf("a worker under it: %v", err)
	}
	if err := listenerStillOurs(tab, []int{20}, 10, "127.0.0.1:4000"); err == nil || !strings.Contains(err.Error(), "pid 20 (node)") {
		t.Errorf("replaced by another process: %v", err)
	}
	if err := listenerStillOurs(tab, nil, 10, "127.0.0.1:4000"); err == nil || !strings.Contains(err.Error(), "nothing listens") {
		t.Errorf("nothing listens: %v", err)
	}
}

// TestProfileFetchFollowsTheRun: no pprof fetch starts once the run is
// cancelled (with a hanging pprof_url, SIGINT took 2 min 18 s to end a run),
// and none follows a redirect.
func TestProfileFetchFollowsTheRun(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "http://127.0.0.2:1/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "heap.pb.gz")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := fetchProfile(ctx, srv.URL+"/heap", path); err == nil || hits.Load() != 0 {
		t.Errorf("after cancellation: %v, %d requests; want none sent", err, hits.Load())
	}
	if err := fetchProfile(t.Context(), srv.URL+"/heap", path); err == nil || !strings.Contains(err.Error(), "follows no redirect") {
		t.Errorf("a redirecting pprof_url: %v, want it refused", err)
	}
}

// TestReadyURLRedirectIsNotReady: a readiness URL answering 302 is not
// ready; the redirect is not followed.
func TestReadyURLRedirectIsNotReady(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.2:1/healthz", http.StatusFound)
	}))
	defer srv.Close()
	err := awaitAnswer(t.Context(), srv.URL+"/healthz", time.Second, func() error { return nil }, "the test server", nil)
	if err == nil || !strings.Contains(err.Error(), "HTTP 302") {
		t.Errorf("a redirecting ready_url: %v, want not ready (last: HTTP 302)", err)
	}
}
