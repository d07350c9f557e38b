package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/soakd/soakd/internal/fsutil"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
)

// NoiseFloorFile is the machine's recorded noise floor in the data
// directory: the last complete self-check (two rounds or more) per profile
// and arms.
const NoiseFloorFile = "noise-floor.json"

// NoiseFloorSchemaVersion is the version of noise-floor.json's layout; a
// file of another version is not read.
const NoiseFloorSchemaVersion = 1

// NoiseFloors is noise-floor.json.
type NoiseFloors struct {
	SchemaVersion int `json:"schema_version"`
	// Floors holds one entry per (profile, arms), sorted by profile, then
	// arms.
	Floors []NoiseFloor `json:"floors"`
}

// NoiseFloor is one self-check's round-to-round noise.
type NoiseFloor struct {
	// Run is the self-check's run id.
	Run string `json:"run"`
	// Arms is "rest,rest" or "graphql,graphql".
	Arms    string `json:"arms"`
	Profile string `json:"profile"`
	// Host is the machine as the self-check saw it.
	Host NoiseHost `json:"host"`
	// Time is when the self-check finished (UTC).
	Time time.Time `json:"time"`
	// KPIs is each KPI's noise by name: sd and mean_delta in its
	// delta_unit (points or percent), and the rounds behind them.
	KPIs map[string]kpi.Noise `json:"kpis"`
}

// NoiseHost is the part of the host that sets the noise.
type NoiseHost struct {
	Cores      int `json:"cores"`
	GOMAXPROCS int `json:"gomaxprocs"`
}

// rounds is the most rounds behind any KPI's spread.
func (f NoiseFloor) rounds() int {
	n := 0
	for _, k := range f.KPIs {
		n = max(n, k.Rounds)
	}
	return n
}

// readNoiseFloors reads dataDir's noise-floor.json. A missing file is
// (zero, false, nil); a file that cannot be read, decoded or validated is
// an error.
func readNoiseFloors(dataDir string) (NoiseFloors, bool, error) {
	path := filepath.Join(dataDir, NoiseFloorFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return NoiseFloors{}, false, nil
	}
	if err != nil {
		return NoiseFloors{}, true, err
	}
	var nf NoiseFloors
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&nf); err != nil {
		return NoiseFloors{}, true, fmt.Errorf("not valid JSON: %w", err)
	}
	if nf.SchemaVersion != NoiseFloorSchemaVersion {
		return NoiseFloors{}, true, fmt.Errorf("schema_version %d, this soakd reads %d", nf.SchemaVersion, NoiseFloorSchemaVersion)
	}
	for _, f := range nf.Floors {
		if f.Run == "" || f.Profile == "" || f.Arms == "" {
			return NoiseFloors{}, true, errors.New("an entry lacks run, profile or arms")
		}
		for name, k := range f.KPIs {
			if math.IsNaN(k.SD) || math.IsInf(k.SD, 0) || k.SD < 0 || k.Rounds < 2 {
				return NoiseFloors{}, true, fmt.Errorf("run %s: %s has sd %v over %d rounds", f.Run, name, k.SD, k.Rounds)
			}
		}
	}
	return nf, true, nil
}

// recordNoiseFloor stores a complete self-check's noise (kpi.NoiseSpread of
// its rounds) in dataDir's noise-floor.json, atomically, replacing the entry
// of the same profile and arms. An unreadable file is replaced (replaced
// says why). Nothing is written, with an error, when the report is not a
// complete self-check of two rounds or more.
func recordNoiseFloor(dataDir string, rep *report.Report) (path string, replaced, err error) {
	path = filepath.Join(dataDir, NoiseFloorFile)
	switch {
	case !rep.SelfCheck():
		return path, nil, fmt.Errorf("run %s is not a self-check (arms %s)", rep.Run, rep.Arms)
	case rep.Status != report.StatusComplete:
		return path, nil, fmt.Errorf("run %s is %s, not complete", rep.Run, rep.Status)
	case len(rep.Rounds) < 2:
		return path, nil, fmt.Errorf("run %s has %d round: the spread needs at least 2 (set rounds: 2 or more)", rep.Run, len(rep.Rounds))
	}
	rounds := make([][]kpi.Result, len(rep.Rounds))
	for i, rd := range rep.Rounds {
		rounds[i] = rd.KPIs
	}
	spread, err := kpi.NoiseSpread(rounds)
	if err != nil {
		return path, nil, err
	}
	if len(spread) == 0 {
		return path, nil, fmt.Errorf("run %s measured no KPI in two rounds", rep.Run)
	}
	nf, _, rerr := readNoiseFloors(dataDir)
	if rerr != nil {
		replaced, nf = rerr, NoiseFloors{}
	}
	nf.SchemaVersion = NoiseFloorSchemaVersion
	entry := NoiseFloor{Run: rep.Run, Arms: rep.Arms, Profile: rep.Profile, Host: NoiseHost{Cores: rep.Host.Cores, GOMAXPROCS: rep.Host.GOMAXPROCS},
		Time: rep.FinishedAt.UTC(), KPIs: spread}
	nf.Floors = slices.DeleteFunc(nf.Floors, func(f NoiseFloor) bool { return f.Profile == entry.Profile && f.Arms == entry.Arms })
	nf.Floors = append(nf.Floors, entry)
	slices.SortFunc(nf.Floors, func(a, b NoiseFloor) int {
		if c := strings.Compare(a.Profile, b.Profile); c != 0 {
			return c
		}
		return strings.Compare(a.Arms, b.Arms)
	})
	b, err := json.MarshalIndent(nf, "", "  ")
	if err != nil {
		return path, replaced, fmt.Errorf("cannot encode %s: %w", NoiseFloorFile, err)
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return path, replaced, fmt.Errorf("cannot create data_dir: %w", err)
	}
	return path, replaced, fsutil.WriteFile(path, append(b, '\n'), 0o644)
}

// applyNoiseFloor gives a run (not a self-check) the machine's recorded
// noise: the newest self-check of the run's profile in dataDir's
// noise-floor.json sets each gated KPI row's noise_sd and
// noise_min_detectable for the run's rounds (kpi.WithNoise), the report's
// noise_floor and a note naming it and its age at now. A missing record is
// a note saying how to make one; an unreadable file is a warning in the
// notes, never an error.
func applyNoiseFloor(rep *report.Report, dataDir string, rounds int, confidence float64, now time.Time) {
	path := filepath.Join(dataDir, NoiseFloorFile)
	how := fmt.Sprintf("run `soakd run --profile %s --arms rest,rest` with rounds of 2 or more once on this machine to record its round-to-round spread", rep.Profile)
	nf, exists, err := readNoiseFloors(dataDir)
	if err != nil {
		rep.Notes = append(rep.Notes, fmt.Sprintf("Warning: the noise floor on record (%s) cannot be read (%v), so no recorded noise is shown; %s (it replaces the file).", path, err, how))
		return
	}
	var best *NoiseFloor
	for i, f := range nf.Floors {
		if f.Profile == rep.Profile && (best == nil || f.Time.After(best.Time)) {
			best = &nf.Floors[i]
		}
	}
	if best == nil {
		where := "no noise floor is on record (" + path + " does not exist)"
		if exists {
			where = fmt.Sprintf("%s holds no self-check of profile %s", path, rep.Profile)
		}
		rep.Notes = append(rep.Notes, fmt.Sprintf("Noise floor: %s; %s, and later runs show the smallest effect this machine can detect for their rounds (noise_min_detectable).", where, how))
		return
	}
	rep.KPIs = kpi.WithNoise(rep.KPIs, best.KPIs, rounds, confidence)
	age := now.Sub(best.Time)
	rep.NoiseFloor = &report.NoiseSource{Run: best.Run, Arms: best.Arms, Rounds: best.rounds(), RecordedAt: best.Time, AgeSeconds: math.Round(age.Seconds())}
	note := fmt.Sprintf("Noise floor on record: self-check %s (--arms %s, %d rounds, finished %s ago, in %s). noise_sd is its round-to-round standard deviation of each gated KPI's delta; noise_min_detectable the smallest effect this run's %d rounds detect with that spread (80 %% power), beside the run's own min_detectable.",
		best.Run, best.Arms, best.rounds(), ageWords(age), path, rounds)
	if rounds < 2 {
		note += " With one round nothing is detectable: raise rounds."
	}
	if best.Host.Cores != rep.Host.Cores || best.Host.GOMAXPROCS != rep.Host.GOMAXPROCS {
		note += fmt.Sprintf(" It was recorded on %d cores (GOMAXPROCS %d), this run has %d (GOMAXPROCS %d): record it again on this machine.",
			best.Host.Cores, best.Host.GOMAXPROCS, rep.Host.Cores, rep.Host.GOMAXPROCS)
	}
	rep.Notes = append(rep.Notes, note)
}

// ageWords words a duration for a note: "5 min", "3 h", "12 days".
func ageWords(d time.Duration) string {
	switch {
	case d < time.Hour:
		d = max(d, 0)
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}
