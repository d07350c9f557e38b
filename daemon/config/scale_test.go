package config

import (
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/workloads"
)

// TestScaled: --scale multiplies every phase's length and keeps its
// intensity; a ramping-rate phase keeps its slope; a scale that leaves a
// phase unmeasurable is refused naming it.
func TestScaled(t *testing.T) {
	p := Profile{Phases: []PhaseConfig{
		{Name: "c", Users: []workloads.UserGroup{{Operation: "rest-get", Users: 40, Iterations: 400}, {Operation: "rest-put", Users: 1, Iterations: 1}}},
		{Name: "r", Model: workloads.Ramping, Duration: 15 * time.Second, Users: []workloads.UserGroup{{Users: 1, Iterations: 0}}},
		{Name: "rr", Model: workloads.RampingRate, Duration: 20 * time.Second, Rate: 100, RateEnd: 500},
	}}
	q, err := p.Scaled(0.25)
	if err != nil {
		t.Fatal(err)
	}
	c, r, rr := q.Phases[0], q.Phases[1], q.Phases[2]
	if c.Users[0].Iterations != 100 || c.Users[0].Users != 40 || c.Users[1].Iterations != 1 || p.Phases[0].Users[0].Iterations != 400 {
		t.Errorf("closed: %+v (original %+v)", c.Users, p.Phases[0].Users)
	}
	if r.Duration != 3750*time.Millisecond || r.Users[0].Iterations != 0 {
		t.Errorf("ramping: %s %+v", r.Duration, r.Users)
	}
	if rr.Duration != 5*time.Second || rr.Rate != 100 || rr.RateEnd != 200 {
		t.Errorf("ramping-rate: %s, %g → %g: want 5s, 100 → 200 (slope 20/s kept)", rr.Duration, rr.Rate, rr.RateEnd)
	}
	for _, f := range []float64{0, -1, 101} {
		if _, err := p.Scaled(f); err == nil {
			t.Errorf("--scale %g taken", f)
		}
	}
	cfg, err := Load(defaults(t), nil, "config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	half, err := cfg.WithScaled("", 2)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := half.Profiles["quick"].Phases[1].Users[0].Iterations, cfg.Profiles["quick"].Phases[1].Users[0].Iterations*2; got != want {
		t.Errorf("quick at 2: %d iterations, want %d", got, want)
	}
	if _, err := cfg.WithScaled("quick", 0.01); err == nil || !strings.Contains(err.Error(), "cannot be measured") {
		t.Errorf("quick at 0.01: %v, want the phases too short to measure named", err)
	}
}
