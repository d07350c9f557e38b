package config

import (
	"fmt"
	"math"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/soakd/soakd/workloads"
)

// MaxScale bounds `soakd run --scale`.
const MaxScale = 100

// Scaled is p with every phase's length multiplied by f and its intensity
// kept (`soakd run --scale`): a closed group's iterations (at least 1; 0,
// a ramping phase's "until the phase ends", stays 0), a phase's duration,
// and a ramping-rate phase's end rate moved so its slope stays the same.
// Users, rates, think times, ramps, settles and trims are unchanged, so a
// shrunk profile offers the same load for less time; one too short to
// measure is refused by validation, naming the phase.
func (p Profile) Scaled(f float64) (Profile, error) {
	if !(f > 0 && f <= MaxScale) {
		return p, fmt.Errorf("--scale %g: must be above 0 and at most %d (1 is the profile as it is)", f, MaxScale)
	}
	out := p
	out.Phases = make([]PhaseConfig, len(p.Phases))
	for i, ph := range p.Phases {
		ph.Users = append([]workloads.UserGroup(nil), ph.Users...)
		for j := range ph.Users {
			if n := ph.Users[j].Iterations; n > 0 {
				ph.Users[j].Iterations = max(1, int(math.Round(float64(n)*f)))
			}
		}
		if ph.Duration > 0 {
			ph.Duration = time.Duration(math.Round(float64(ph.Duration) * f))
		}
		if ph.Model == workloads.RampingRate {
			ph.RateEnd = ph.Rate + (ph.RateEnd-ph.Rate)*f
		}
		out.Phases[i] = ph
	}
	return out, nil
}

// WithScaled is c with profile name (the default profile when "") scaled
// by f (Profile.Scaled) and validated as if a file had set it.
func (c *Config) WithScaled(name string, f float64) (*Config, error) {
	if name == "" {
		name = c.DefaultProfile
	}
	p, ok := c.Profiles[name]
	if !ok {
		return nil, fmt.Errorf("--profile %q does not exist; profiles: %v", name, c.ProfileNames())
	}
	sp, err := p.Scaled(f)
	if err != nil {
		return nil, err
	}
	doc, err := yaml.Marshal(map[string]any{"profiles": map[string]Profile{name: sp}})
	if err != nil {
		return nil, fmt.Errorf("cannot render the scaled profile: %w", err)
	}
	return c.Overlay(doc, fmt.Sprintf("--scale %g", f))
}
