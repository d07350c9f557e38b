package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/soakd/soakd/internal/schedule"
)

// Schedule kinds (schedules[].kind).
const (
	// ScheduleKindRun starts one run of the schedule's profile, as POST
	// /v1/runs does.
	ScheduleKindRun = "run"
)

// DefaultTimezone is the zone of a schedule that names none.
const DefaultTimezone = "UTC"

// ScheduleConfig is one entry of schedules: runs `soakd serve` starts on a
// cron schedule (docs/operations.md, "Scheduled runs").
type ScheduleConfig struct {
	// Name identifies the schedule in the API, the logs and the state
	// file: unique, lower-case letters, digits and hyphens.
	Name string `yaml:"name"`
	// Cron is a standard 5-field cron expression (minute hour
	// day-of-month month day-of-week) or a shorthand such as @daily
	// (package schedule).
	Cron string `yaml:"cron"`
	// Timezone is the IANA zone Cron's wall times are read in; empty:
	// DefaultTimezone.
	Timezone string `yaml:"timezone"`
	// Profile is the profile each slot runs; empty: default_profile.
	Profile string `yaml:"profile"`
	// Kind is what a slot starts; empty or ScheduleKindRun, the only kind.
	Kind string `yaml:"kind"`
	// CatchUp runs the newest slot missed while the daemon was not
	// running once when it starts; the other missed slots are reported
	// only.
	CatchUp bool `yaml:"catch_up"`
}

// Location loads the schedule's zone: Timezone, or DefaultTimezone when
// empty. "Local" is refused: a schedule must not change meaning with the
// host's zone.
func (s ScheduleConfig) Location() (*time.Location, error) {
	name := s.Timezone
	if name == "" {
		name = DefaultTimezone
	}
	if name == "Local" {
		return nil, errors.New(`"Local" is the host's zone, which a schedule must not depend on; write its IANA name, such as Europe/Berlin`)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("%q is no IANA time zone (such as UTC, Europe/Berlin or America/New_York): %w", name, err)
	}
	return loc, nil
}

// Parse returns the schedule's cron expression parsed in its zone.
func (s ScheduleConfig) Parse() (*schedule.Schedule, error) {
	loc, err := s.Location()
	if err != nil {
		return nil, err
	}
	return schedule.Parse(s.Cron, loc)
}

// validateSchedules checks every entry of schedules, each problem at its
// key path (schedules[0].cron).
func (c *Config) validateSchedules() []FieldError {
	var ps []FieldError
	bad := func(path, format string, args ...any) {
		ps = append(ps, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	first := map[string]int{} // name -> index of its first entry
	for i, s := range c.Schedules {
		p := fmt.Sprintf("schedules[%d]", i)
		switch j, dup := first[s.Name]; {
		case s.Name == "":
			bad(p+".name", "must be set: it names the schedule in the API, the logs and the state file")
		case !scheduleName(s.Name):
			bad(p+".name", "%q: a schedule name is lower-case letters, digits and hyphens, like nightly-quick", s.Name)
		case dup:
			bad(p+".name", "%q is also the name of schedules[%d]; names must be unique", s.Name, j)
		default:
			first[s.Name] = i
		}
		loc, err := s.Location()
		if err != nil {
			bad(p+".timezone", "%v", err)
			loc = time.UTC // still check the expression
		}
		if s.Cron == "" {
			bad(p+".cron", "must be set: a 5-field cron expression (minute hour day-of-month month day-of-week), such as \"0 2 * * *\", or @hourly, @daily, @weekly")
		} else if _, err := schedule.Parse(s.Cron, loc); err != nil {
			bad(p+".cron", "%v", err)
		}
		if s.Profile != "" {
			if _, ok := c.Profiles[s.Profile]; !ok {
				bad(p+".profile", "names no profile (got %q; profiles: %v)", s.Profile, c.ProfileNames())
			}
		}
		if s.Kind != "" && s.Kind != ScheduleKindRun {
			bad(p+".kind", "must be %s, one run of the profile (got %q)", ScheduleKindRun, s.Kind)
		}
	}
	return ps
}

// scheduleName reports whether name is one or more of a-z, 0-9 and '-'.
func scheduleName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}
