package e2e

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

// shardedMaxLoadConfig is a profile of two sharded drivers: a closed
// graphql phase (the compared arm) and a ramping max-load phase whose p99
// limit every request exceeds (1 µs), judged once the window holds
// min_requests 400: the merged load of both shards reaches that seconds
// before either shard's own half does, so the stop is decided on the
// merged windows and must reach both shards.
const shardedMaxLoadConfig = `
sampler:
  interval: 100ms
default_profile: tiny
profiles:
  tiny:
    settle: 300ms
    trim_head: 200ms
    trim_tail: 200ms
    request_timeout: 5s
    seed: 7
    drivers: {shards: 2}
    compare: {graphql: graphql-load}
    phases:
      - name: graphql-load
        arm: graphql
        ramp_up: 300ms
        think: {min: 0ms, max: 10ms}
        users: [{operation: graphql-query, users: 4, iterations: 1000}]
      - name: max-load-graphql
        arm: graphql
        model: ramping
        duration: 30s
        think: {min: 5ms, max: 10ms}
        ramp: {start: 2, step: 2, every: 1s, max: 40}
        failure: {window: 1s, max_p99: 1us, min_requests: 400}
        users: [{operation: graphql-query, users: 1, iterations: 0}]
`

// TestShardedMaxLoadStopsOnce runs a max-load phase with two sharded
// drivers against the built-in target: the failure rule trips once, on
// the merged windows, at the first second with 400 requests of both
// shards together; both shards stop within a second of it and of each
// other; the timeline is the merged one (one point per second up to the
// failure, its users both shards'), and the closed phase's steady window
// falls on whole seconds (its count the exact sum of the merged seconds).
func TestShardedMaxLoadStopsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildSoakd(t)
	raw, _, code := runConfig(t, bin, shardedMaxLoadConfig)
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Phases []struct {
			Name           string    `json:"name"`
			Start          time.Time `json:"start"`
			SteadyStart    time.Time `json:"steady_start"`
			SteadyEnd      time.Time `json:"steady_end"`
			SteadyFallback string    `json:"steady_fallback"`
			ThroughputRPS  float64   `json:"throughput_rps"`
			Requests       int64     `json:"requests"`
			MaxLoad        *struct {
				Reason        string    `json:"reason"`
				Failed        bool      `json:"failed"`
				FailureAt     time.Time `json:"failure_at"`
				FailureWindow *struct {
					Requests int64 `json:"requests"`
				} `json:"failure_window"`
				Timeline []struct {
					TSeconds float64 `json:"t_seconds"`
					Users    int     `json:"users"`
					RPS      float64 `json:"rps"`
				} `json:"timeline"`
			} `json:"max_load"`
			DriverShards []struct {
				Shard      int      `json:"shard"`
				Requests   int64    `json:"requests"`
				EndSeconds *float64 `json:"end_seconds"`
			} `json:"driver_shards"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Status != "complete" || len(rep.Phases) != 2 {
		t.Fatalf("status %q (%s), %d phases, exit %d: want complete with 2", rep.Status, rep.Error, len(rep.Phases), code)
	}
	closed := rep.Phases[0]
	from, to := closed.SteadyStart.Sub(closed.Start), closed.SteadyEnd.Sub(closed.Start)
	steady := closed.ThroughputRPS * (to - from).Seconds() // the exact count: a whole number
	t.Logf("%s: steady %s to %s, %.0f of %d requests", closed.Name, from, to, steady, closed.Requests)
	if closed.SteadyFallback != "" || from%time.Second != 0 || to%time.Second != 0 || to <= from ||
		math.Abs(steady-math.Round(steady)) > 1e-6 || steady <= 0 || steady > float64(closed.Requests) {
		t.Errorf("%s: steady window %s to %s (fallback %q) with %g requests: want whole seconds and a whole count from the merged windows", closed.Name, from, to, closed.SteadyFallback, steady)
	}

	p := rep.Phases[1]
	ml := p.MaxLoad
	if ml == nil || ml.Reason != "p99_latency" || !ml.Failed || ml.FailureWindow == nil || ml.FailureWindow.Requests < 400 {
		t.Fatalf("%s: max load %+v: want a p99_latency failure on a window of at least 400 merged requests", p.Name, ml)
	}
	stop := ml.FailureAt.Sub(p.Start).Seconds()
	t.Logf("%s: stopped by %s at %.3f s on %d merged requests; timeline %+v", p.Name, ml.Reason, stop, ml.FailureWindow.Requests, ml.Timeline)
	if len(ml.Timeline) == 0 || ml.Timeline[len(ml.Timeline)-1].TSeconds != stop || len(ml.Timeline) != int(math.Round(stop)) {
		t.Errorf("timeline of %d points ending at %v, failure at %.3f s: want one merged point per second up to the failure", len(ml.Timeline), ml.Timeline, stop)
	}
	for _, pt := range ml.Timeline {
		if pt.Users < 2 {
			t.Errorf("timeline point %+v: want both shards' users (at least the ramp's 2)", pt)
		}
	}
	if len(p.DriverShards) != 2 {
		t.Fatalf("driver_shards %+v: want 2", p.DriverShards)
	}
	var ends [2]float64
	for i, d := range p.DriverShards {
		if d.EndSeconds == nil || d.Requests <= 0 {
			t.Fatalf("shard %d: %+v: want its requests and end", i, d)
		}
		ends[i] = *d.EndSeconds
		t.Logf("shard %d: %d requests, load ended at %.3f s", d.Shard, d.Requests, ends[i])
		if ends[i] < stop-0.1 || ends[i] > stop+1 {
			t.Errorf("shard %d ended at %.3f s, the merged judge stopped the phase at %.3f s: want within a second after", i, ends[i], stop)
		}
	}
	if math.Abs(ends[0]-ends[1]) > 1 {
		t.Errorf("shards ended at %.3f s and %.3f s: want within a second of each other", ends[0], ends[1])
	}
}
