package run

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
)

var noiseLimits = kpi.Limits{CPUIncreasePoints: 5, GCIncreasePoints: 1, ThroughputDecreasePercent: 10}

// noiseRound is one round's KPI rows: REST at 10 % CPU and 100 req/s, the
// other arm at cpu and rps.
func noiseRound(cpu, rps float64) []kpi.Result {
	return kpi.Evaluate(kpi.Figures{CPUMachinePercent: 10, GCPercent: 1, ThroughputRPS: 100}, kpi.Figures{CPUMachinePercent: cpu, GCPercent: 1, ThroughputRPS: rps}, noiseLimits)
}

// noiseReport is a complete run of profile quick with one round per entry
// of cpus (the second arm's CPU %; throughput alternates 98 and 102).
func noiseReport(id, arms string, finished time.Time, cpus ...float64) *report.Report {
	rep := &report.Report{Run: id, Profile: "quick", Arms: arms, Status: report.StatusComplete, FinishedAt: finished,
		Host: report.Host{Cores: 2, GOMAXPROCS: 2}}
	var all [][]kpi.Result
	for i, c := range cpus {
		k := noiseRound(c, 98+4*float64(i%2))
		all = append(all, k)
		rep.Rounds = append(rep.Rounds, report.Round{Round: i + 1, KPIs: k})
	}
	rep.KPIs, _ = kpi.Aggregate(all, kpi.DefaultConfidence)
	return rep
}

func TestNoiseFloorRoundTrip(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data") // created on first write
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	rec := func(rep *report.Report) {
		t.Helper()
		path, replaced, err := recordNoiseFloor(data, rep)
		if err != nil || replaced != nil || path != filepath.Join(data, NoiseFloorFile) {
			t.Fatalf("record %s: path %s replaced %v err %v", rep.Run, path, replaced, err)
		}
	}
	rec(noiseReport("sc1", "rest,rest", t0, 11, 9, 11, 9))
	rec(noiseReport("sc2", "graphql,graphql", t0.Add(time.Hour), 10, 10.5))
	rec(noiseReport("sc3", "rest,rest", t0.Add(2*time.Hour), 10, 12, 10)) // replaces sc1
	other := noiseReport("sc4", "rest,rest", t0, 10, 11)
	other.Profile = "default"
	rec(other)

	nf, exists, err := readNoiseFloors(data)
	if err != nil || !exists {
		t.Fatalf("read: exists %v err %v", exists, err)
	}
	var got []string
	for _, f := range nf.Floors {
		got = append(got, f.Profile+"/"+f.Arms+"/"+f.Run)
	}
	if want := "default/rest,rest/sc4 quick/graphql,graphql/sc2 quick/rest,rest/sc3"; strings.Join(got, " ") != want || nf.SchemaVersion != 1 {
		t.Fatalf("floors %v (schema %d), want %s", got, nf.SchemaVersion, want)
	}
	sc3 := nf.Floors[2]
	cpu := sc3.KPIs["cpu_machine_percent"]
	// Deltas 0, +2, 0 points: mean 2/3, sd √(4/3).
	if cpu.DeltaUnit != "points" || cpu.Rounds != 3 || math.Abs(cpu.SD-math.Sqrt(4.0/3)) > 1e-9 || math.Abs(cpu.MeanDelta-2.0/3) > 1e-9 {
		t.Errorf("sc3 cpu noise %+v", cpu)
	}
	if tp := sc3.KPIs["throughput_rps"]; tp.DeltaUnit != "percent" || tp.Rounds != 3 {
		t.Errorf("sc3 throughput noise %+v", tp)
	}
	if sc3.Host != (NoiseHost{Cores: 2, GOMAXPROCS: 2}) || !sc3.Time.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("sc3 host %+v time %v", sc3.Host, sc3.Time)
	}
	// The file is indented JSON with the documented keys.
	b, err := os.ReadFile(filepath.Join(data, NoiseFloorFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"schema_version": 1`, `"run": "sc3"`, `"gomaxprocs": 2`, `"time": "2026-12-01T12:00:00Z"`, `"sd":`, `"mean_delta":`, `"rounds": 3`, `"delta_unit": "points"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("noise-floor.json lacks %s:\n%s", k, b)
		}
	}
	entries, _ := os.ReadDir(data)
	if len(entries) != 1 {
		t.Errorf("data_dir holds %d files, want only %s (no temporary file left)", len(entries), NoiseFloorFile)
	}
}

func TestNoiseFloorNotRecorded(t *testing.T) {
	data := t.TempDir()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	f := func(rep *report.Report, want string) {
		t.Helper()
		_, _, err := recordNoiseFloor(data, rep)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", rep.Run, err, want)
		}
		if _, err := os.Stat(filepath.Join(data, NoiseFloorFile)); !os.IsNotExist(err) {
			t.Errorf("%s: the file was written", rep.Run)
		}
	}
	f(noiseReport("one", "rest,rest", t0, 11), "1 round")
	aborted := noiseReport("ab", "rest,rest", t0, 11, 10)
	aborted.Status = report.StatusAborted
	f(aborted, "aborted, not complete")
	f(noiseReport("gate", "rest,graphql", t0, 11, 10), "not a self-check")
}

func TestApplyNoiseFloor(t *testing.T) {
	data := t.TempDir()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if _, _, err := recordNoiseFloor(data, noiseReport("sc-old", "rest,rest", t0, 11, 9, 11, 9)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := recordNoiseFloor(data, noiseReport("sc-new", "graphql,graphql", t0.Add(time.Hour), 10, 12, 10)); err != nil {
		t.Fatal(err)
	}
	// A later gate run of 4 rounds takes the newest self-check of its profile.
	run := noiseReport("gate", "rest,graphql", t0.Add(5*time.Hour), 12, 13, 12, 13)
	applyNoiseFloor(run, data, 4, kpi.DefaultConfidence, t0.Add(5*time.Hour))
	sd := math.Sqrt(4.0 / 3)
	for _, k := range run.KPIs {
		switch {
		case !k.Gated:
			if k.NoiseSD != nil || k.NoiseMinDetectable != nil {
				t.Errorf("informational %s got noise", k.Name)
			}
		case k.Name == "cpu_machine_percent":
			if k.NoiseSD == nil || math.Abs(*k.NoiseSD-sd) > 1e-9 || k.NoiseMinDetectable == nil ||
				math.Abs(*k.NoiseMinDetectable-kpi.MinDetectableSD(sd, 4, kpi.DefaultConfidence)) > 1e-9 {
				t.Errorf("cpu row: noise_sd %v noise_min_detectable %v", k.NoiseSD, k.NoiseMinDetectable)
			}
		default:
			if k.NoiseSD == nil {
				t.Errorf("gated %s lacks noise_sd", k.Name)
			}
		}
	}
	src := run.NoiseFloor
	if src == nil || src.Run != "sc-new" || src.Arms != "graphql,graphql" || src.Rounds != 3 || src.AgeSeconds != 4*3600 {
		t.Fatalf("noise_floor %+v", src)
	}
	note := run.Notes[len(run.Notes)-1]
	for _, w := range []string{"self-check sc-new", "--arms graphql,graphql", "finished 4 h ago", "4 rounds"} {
		if !strings.Contains(note, w) {
			t.Errorf("note lacks %q: %s", w, note)
		}
	}
	// The rows serialise with the new fields.
	b, _ := json.Marshal(run)
	for _, w := range []string{`"noise_sd":`, `"noise_min_detectable":`, `"noise_floor":{"run":"sc-new"`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("report.json lacks %s", w)
		}
	}
	// Another machine: the note says so.
	moved := noiseReport("gate2", "rest,graphql", t0, 12, 13)
	moved.Host.Cores = 8
	applyNoiseFloor(moved, data, 2, kpi.DefaultConfidence, t0.Add(73*time.Hour))
	if n := moved.Notes[len(moved.Notes)-1]; !strings.Contains(n, "recorded on 2 cores") || !strings.Contains(n, "3 days") {
		t.Errorf("host change note: %s", n)
	}
	// No self-check of this profile: a note, no noise.
	other := noiseReport("gate3", "rest,graphql", t0, 12, 13)
	other.Profile = "soak"
	applyNoiseFloor(other, data, 2, kpi.DefaultConfidence, t0)
	if n := other.Notes[len(other.Notes)-1]; other.NoiseFloor != nil || other.KPIs[0].NoiseSD != nil || !strings.Contains(n, "no self-check of profile soak") || !strings.Contains(n, "soakd run --profile soak --arms rest,rest") {
		t.Errorf("other profile: %+v, note %s", other.NoiseFloor, n)
	}
}

func TestApplyNoiseFloorMissingOrCorrupt(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	f := func(content string, want ...string) {
		t.Helper()
		data := t.TempDir()
		if content != "" {
			if err := os.WriteFile(filepath.Join(data, NoiseFloorFile), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run := noiseReport("gate", "rest,graphql", t0, 12, 13)
		applyNoiseFloor(run, data, 2, kpi.DefaultConfidence, t0)
		if run.NoiseFloor != nil || run.KPIs[0].NoiseSD != nil || len(run.Notes) != 1 {
			t.Fatalf("%q: noise applied %+v, notes %v", content, run.NoiseFloor, run.Notes)
		}
		for _, w := range append(want, "soakd run --profile quick --arms rest,rest") {
			if !strings.Contains(run.Notes[0], w) {
				t.Errorf("%q: note lacks %q: %s", content, w, run.Notes[0])
			}
		}
	}
	f("", "does not exist")
	f("{not json", "Warning", "cannot be read", "not valid JSON")
	f(`{"schema_version": 9, "floors": []}`, "Warning", "schema_version 9")
	f(`{"schema_version": 1, "floors": [{"run": "x", "profile": "quick", "arms": "rest,rest", "kpis": {"gc_percent": {"sd": -1, "rounds": 3}}}]}`, "Warning", "sd -1")

	// A self-check replaces a corrupt file and says so.
	data := t.TempDir()
	path := filepath.Join(data, NoiseFloorFile)
	if err := os.WriteFile(path, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, replaced, err := recordNoiseFloor(data, noiseReport("sc", "rest,rest", t0, 11, 9))
	if err != nil || replaced == nil {
		t.Fatalf("replacing a corrupt file: replaced %v err %v", replaced, err)
	}
	if nf, _, err := readNoiseFloors(data); err != nil || len(nf.Floors) != 1 || nf.Floors[0].Run != "sc" {
		t.Errorf("after replacing: %+v %v", nf, err)
	}
}

func TestAgeWords(t *testing.T) {
	f := func(d time.Duration, want string) {
		t.Helper()
		if got := ageWords(d); got != want {
			t.Errorf("ageWords(%v) = %q, want %q", d, got, want)
		}
	}
	f(-time.Minute, "0 min")
	f(59*time.Minute, "59 min")
	f(47*time.Hour, "47 h")
	f(50*time.Hour, "2 days")
}
