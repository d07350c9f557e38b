package serve

import (
	"context"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/run"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/history"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/testkit"
)

// TestStartReplyNamesProfileAndRunning checks the control API's start
// reply and the run list while a run is in progress: the profile is named
// (the default profile when the request names none) and the verdict is
// running, not aborted nor empty. The run is a stand-in suite that waits
// for the test, without starting a target or writing a report: what the
// API shows comes from the history's new-run entry, as it does in the
// moments after a real start.
func TestStartReplyNamesProfileAndRunning(t *testing.T) {
	cfg, err := config.Load(testkit.Defaults(t), nil, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	store, err := history.Open(cfg.DataDir, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	proceed := make(chan struct{})
	d := &daemon{cfg: cfg, log: zap.NewNop(), store: store, base: t.Context(),
		suite: func(context.Context, *config.Config, run.RunOptions) (*report.Report, error) {
			<-proceed
			return nil, nil
		}}

	for _, tc := range []struct{ asked, want string }{{"", cfg.DefaultProfile}, {"seed", "seed"}} {
		got, err := d.Start(t.Context(), api.StartRequest{Profile: tc.asked})
		if err != nil {
			t.Fatalf("Start(%q): %v", tc.asked, err)
		}
		if got.Profile != tc.want || got.Status != report.StatusRunning || got.Verdict != kpi.OutcomeRunning {
			t.Errorf("Start(%q) replied %+v, want profile %q, status and verdict running", tc.asked, got, tc.want)
		}
		list, err := d.List(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range list {
			if r.ID == got.ID {
				found = true
				if r.Profile != tc.want || r.Verdict == kpi.OutcomeAborted || r.Verdict == "" {
					t.Errorf("List shows the new run as %+v, want profile %q and a verdict other than aborted or empty", r, tc.want)
				}
			}
		}
		if !found {
			t.Errorf("List lacks the new run %s", got.ID)
		}
		proceed <- struct{}{}
		d.runs.Wait()
	}
}

// TestOverridesLeaveDaemonConfigAlone reproduces issue 10 item 1: a start
// request's overrides must change that run only. The daemon's config sets
// kpis.cpu_per_request_increase_percent (a pointer field) to 50; a run
// started through the control API with 999 must see 999, and the daemon's
// own config and the next run without overrides must still see 50. Each run
// is recorded by a stand-in suite instead of RunSuite, which also scribbles
// over the config it got: what one run does to its config must not reach the
// daemon's either.
func TestOverridesLeaveDaemonConfigAlone(t *testing.T) {
	cfg, err := config.Load(testkit.Defaults(t), []byte("kpis:\n  cpu_per_request_increase_percent: 50\nprofiling:\n  pyroscope:\n    tags: {team: soak}\n"), "daemon.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	store, err := history.Open(cfg.DataDir, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		cpuPerRequest float64
		tags          map[string]string
	}
	var runs []seen
	d := &daemon{cfg: cfg, log: zap.NewNop(), store: store, base: t.Context(),
		suite: func(_ context.Context, c *config.Config, _ run.RunOptions) (*report.Report, error) {
			s := seen{cpuPerRequest: math.NaN(), tags: maps.Clone(c.Profiling.Pyroscope.Tags)}
			if p := c.KPIs.CPUPerRequestIncreasePercent; p != nil {
				s.cpuPerRequest = *p
				*p = -1
			}
			c.Profiling.Pyroscope.Tags["scribbled"] = "by a run"
			runs = append(runs, s)
			return nil, nil
		}}
	h := api.NewHandler(d, "", zap.NewNop())
	start := func(body string) {
		t.Helper()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/runs", strings.NewReader(body)))
		if rec.Code != http.StatusAccepted {
			t.Fatalf("POST /v1/runs %s: HTTP %d %s", body, rec.Code, rec.Body)
		}
		d.runs.Wait()
	}
	start(`{"overrides":"kpis: {cpu_per_request_increase_percent: 999}\nprofiling: {pyroscope: {tags: {env: override}}}"}`)
	start(`{}`)

	if got := d.cfg.KPIs.CPUPerRequestIncreasePercent; got == nil || *got != 50 {
		t.Errorf("after an override run the daemon's kpis.cpu_per_request_increase_percent is %v, want 50", deref(got))
	}
	if want := map[string]string{"team": "soak"}; !reflect.DeepEqual(d.cfg.Profiling.Pyroscope.Tags, want) {
		t.Errorf("after an override run the daemon's pyroscope tags are %v, want %v", d.cfg.Profiling.Pyroscope.Tags, want)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs recorded, want 2", len(runs))
	}
	want := []seen{
		{cpuPerRequest: 999, tags: map[string]string{"team": "soak", "env": "override"}},
		{cpuPerRequest: 50, tags: map[string]string{"team": "soak"}},
	}
	for i := range want {
		if runs[i].cpuPerRequest != want[i].cpuPerRequest || !reflect.DeepEqual(runs[i].tags, want[i].tags) {
			t.Errorf("run %d saw cpu_per_request_increase_percent %g and tags %v, want %g and %v",
				i+1, runs[i].cpuPerRequest, runs[i].tags, want[i].cpuPerRequest, want[i].tags)
		}
	}
}

// deref renders an optional limit for messages.
func deref(p *float64) any {
	if p == nil {
		return "unset"
	}
	return *p
}

// TestCompleteOnlyOnceTheSlotIsFree: a run whose report already says
// complete while it still holds the run slot reads running, so a client
// that starts the next run on seeing complete is never refused as busy
// (seen in TestHostileInputsEndToEnd on a loaded machine).
func TestCompleteOnlyOnceTheSlotIsFree(t *testing.T) {
	cfg, err := config.Load(testkit.Defaults(t), nil, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	store, err := history.Open(cfg.DataDir, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	written, finish := make(chan struct{}), make(chan struct{})
	d := &daemon{cfg: cfg, log: zap.NewNop(), store: store, base: t.Context(),
		suite: func(_ context.Context, _ *config.Config, ro run.RunOptions) (*report.Report, error) {
			rep := &report.Report{Run: ro.RunID, Profile: ro.Profile, Status: report.StatusComplete, Verdict: "pass", StartedAt: time.Now(), FinishedAt: time.Now()}
			if err := rep.Write(ro.OutDir, nil); err != nil {
				return nil, err
			}
			close(written)
			<-finish // the run still finishing after its final report
			return rep, nil
		}}
	first, err := d.Start(t.Context(), api.StartRequest{})
	if err != nil {
		t.Fatal(err)
	}
	<-written
	got, _, err := d.Get(t.Context(), first.ID)
	if err != nil {
		t.Fatal(err)
	}
	list, _ := d.List(t.Context())
	if got.Status != report.StatusRunning || len(list) != 1 || list[0].Status != report.StatusRunning {
		t.Errorf("a run holding the slot with a complete report reads %q (list %+v), want running", got.Status, list)
	}
	close(finish)
	d.runs.Wait()
	if got, _, _ := d.Get(t.Context(), first.ID); got.Status != report.StatusComplete || got.Verdict != "pass" {
		t.Errorf("after the slot is free: %+v, want complete and pass", got)
	}
	d.suite = func(context.Context, *config.Config, run.RunOptions) (*report.Report, error) { return nil, nil }
	if _, err := d.Start(t.Context(), api.StartRequest{}); err != nil {
		t.Errorf("the next run after complete: %v", err)
	}
	d.runs.Wait()
}
