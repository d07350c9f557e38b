package config

import (
	"testing"
	"time"
)

// TestSchedulesAccepted: a schedule with every key, one with only name and
// cron (zone UTC, the default profile, kind run), and a user file's list
// replacing the embedded (empty) one.
func TestSchedulesAccepted(t *testing.T) {
	cfg, err := Load(defaults(t), []byte(`
schedules:
  - name: nightly-quick
    cron: "0 2 * * MON-FRI"
    timezone: Europe/Berlin
    profile: seed
    kind: run
    catch_up: true
  - {name: hourly, cron: "@hourly"}
`), "user.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Schedules) != 2 {
		t.Fatalf("schedules: %+v, want 2", cfg.Schedules)
	}
	if s := cfg.Schedules[0]; s != (ScheduleConfig{Name: "nightly-quick", Cron: "0 2 * * MON-FRI", Timezone: "Europe/Berlin", Profile: "seed", Kind: "run", CatchUp: true}) {
		t.Errorf("schedules[0]: %+v", s)
	}
	s, err := cfg.Schedules[1].Parse()
	if err != nil {
		t.Fatal(err)
	}
	if s.Location() != time.UTC {
		t.Errorf("a schedule without timezone is read in %s, want UTC", s.Location())
	}
	berlin, err := cfg.Schedules[0].Parse()
	if err != nil {
		t.Fatal(err)
	}
	if got := berlin.Next(time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 5, 5, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("0 2 * * MON-FRI in Berlin after Monday 00:00 UTC: %s, want Tuesday 02:00 CEST (00:00 UTC)", got)
	}
	if c := cfg.Clone(); &c.Schedules[0] == &cfg.Schedules[0] {
		t.Error("Clone shares the schedules")
	}
}

// badSchedules holds one of each mistake a schedule can make, by line.
const badSchedules = `
schedules:
  - name: Nightly
    cron: "61 2 * * *"
  - name: twice
    cron: "0 2 * *"
    timezone: Mars/Olympus
  - name: twice
    cron: "0 3 * * *"
    profile: nope
    kind: soak
  - cron: "0 0 30 2 *"
    timezone: Local
  - name: no-cron
  - name: bad-step
    cron: "5/15 * * * *"
`

// TestSchedulesRefused: every problem named with its key path and line,
// all at once.
func TestSchedulesRefused(t *testing.T) {
	ps := problems(t, badSchedules+"    catch_up: sometimes\n")
	has(t, ps, "schedules[5].catch_up", 17, "is not a boolean")
	// The type problem stops the document before validation: fix it and
	// see the rest.
	ps = problems(t, badSchedules)
	has(t, ps, "schedules[0].name", 3, `"Nightly": a schedule name is lower-case letters, digits and hyphens`)
	has(t, ps, "schedules[0].cron", 4, `minute field "61": 61 is out of range: minute is 0-59`)
	has(t, ps, "schedules[1].cron", 6, "want 5 fields")
	has(t, ps, "schedules[1].timezone", 7, `"Mars/Olympus" is no IANA time zone`)
	has(t, ps, "schedules[2].name", 8, `"twice" is also the name of schedules[1]`)
	has(t, ps, "schedules[2].profile", 10, `names no profile (got "nope"`)
	has(t, ps, "schedules[2].kind", 11, `must be run, one run of the profile (got "soak")`)
	has(t, ps, "schedules[3].name", 0, "must be set")
	has(t, ps, "schedules[3].cron", 12, `day-of-month field "30"`)
	has(t, ps, "schedules[3].timezone", 13, "the host's zone")
	has(t, ps, "schedules[4].cron", 0, "must be set: a 5-field cron expression")
	has(t, ps, "schedules[5].cron", 16, "a step needs * or a range before it")
	if len(ps) != 12 {
		t.Errorf("got %d problems, want 12: %v", len(ps), ps)
	}
}

// TestSchedulesOverrideRefused: a run started through the API cannot
// bring schedules of its own.
func TestSchedulesOverrideRefused(t *testing.T) {
	err := RefuseOverrides([]byte("schedules: [{name: x, cron: \"@daily\"}]\n"), "overrides")
	ce, ok := err.(*ConfigError)
	if !ok || len(ce.Problems) != 2 || ce.Problems[0].Path != "schedules[0].cron" || ce.Problems[1].Path != "schedules[0].name" {
		t.Fatalf("overrides with schedules: %v, want refused", err)
	}
	for _, p := range ce.Problems {
		if p.Msg != "override refused: the schedules are the daemon's, read once by its scheduler when it starts; set it in the daemon's config and restart" {
			t.Errorf("%s: %s", p.Path, p.Msg)
		}
	}
}
