package workloads

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Pick modes of a data variable.
const (
	// PickRandom draws each request's value uniformly at random from the
	// user's generator (seeded with the profile's seed and the user's index),
	// so the same seed gives the same sequence. It is the default.
	PickRandom = "random"
	// PickRoundRobin takes the values in turn: user u's n-th request (from 0)
	// gets value (u + n) mod count, so users start at different values.
	PickRoundRobin = "round-robin"
)

// MaxDataValues caps the values of one list and the rows of one CSV file,
// so a phase spec stays a size the driver reads in a moment and the
// driver's index of a file stays at most a few megabytes.
const MaxDataValues = 1_000_000

// DataDef is where one template variable of an operation takes its value
// from, for each request: exactly one of Range, List, CSV (with Column) or
// Lookup (with By).
type DataDef struct {
	// Range is [low, high]: an integer between both, inclusive.
	Range []int64 `yaml:"range,omitempty" json:"range,omitempty"`
	// List is the values to pick from.
	List []string `yaml:"list,omitempty" json:"list,omitempty"`
	// CSV names a CSV file whose first line names its columns, and Column
	// the column to read. The daemon validates the file when it loads the
	// config (a relative path is relative to the config file that names it,
	// and made absolute) and sends the driver what it found in File; the
	// driver reads the values from the file, which must not change during
	// the run. Variables reading the same file share one row per request,
	// so columns of one row stay together.
	CSV    string `yaml:"csv,omitempty" json:"csv,omitempty"`
	Column string `yaml:"column,omitempty" json:"column,omitempty"`
	// File is the CSV file as the daemon validated it (the spec's; no
	// config sets it).
	File *CSVFile `yaml:"-" json:"file,omitempty"`
	// Lookup with By derives a value from another variable: By's integer
	// value modulo len(Lookup) indexes Lookup (for example a flavour that
	// follows from an id).
	Lookup []string `yaml:"lookup,omitempty" json:"lookup,omitempty"`
	By     string   `yaml:"by,omitempty" json:"by,omitempty"`
	// Pick is PickRandom ("" means it) or PickRoundRobin; Lookup takes none.
	Pick string `yaml:"pick,omitempty" json:"pick,omitempty"`
}

// validate checks d as the data variable name; resolved reports whether a
// CSV source must already carry what the daemon found in File (the
// driver's side).
func (d DataDef) validate(name string, resolved bool, others map[string]DataDef) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	n := 0
	for _, set := range []bool{d.Range != nil, d.List != nil, d.CSV != "", d.Lookup != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		bad("%s: needs exactly one of range, list, csv (with column) or lookup (with by)", name)
		return errs
	}
	switch d.Pick {
	case "", PickRandom, PickRoundRobin:
	default:
		bad("%s.pick: must be random or round-robin, got %q", name, d.Pick)
	}
	switch {
	case d.Range != nil:
		if len(d.Range) != 2 || d.Range[0] > d.Range[1] {
			bad("%s.range: must be [low, high] with low <= high, got %v", name, d.Range)
		} else if d.Range[1]-d.Range[0] < 0 || d.Range[1]-d.Range[0] >= 1<<62 {
			bad("%s.range: %v spans too many values", name, d.Range)
		}
	case d.CSV != "":
		if d.Column == "" {
			bad("%s.column: required with csv: the name of the column to read", name)
		}
		if resolved && d.File == nil {
			bad("%s.csv: %s was not validated (no file in the spec); the daemon validates CSV files when it loads the config", name, d.CSV)
		}
	case d.Lookup != nil:
		if len(d.Lookup) == 0 {
			bad("%s.lookup: must list at least one value", name)
		}
		if d.Pick != "" {
			bad("%s.pick: a lookup follows its by variable and picks nothing", name)
		}
		switch by, ok := others[d.By]; {
		case d.By == "":
			bad("%s.by: required with lookup: the variable whose integer value indexes the lookup", name)
		case !ok:
			bad("%s.by: %q is not a data variable of the operation", name, d.By)
		case by.Range == nil:
			bad("%s.by: %q must be a range variable (an integer)", name, d.By)
		}
	}
	if d.List != nil && len(d.List) == 0 {
		bad("%s.list: must list at least one value", name)
	}
	if len(d.List) > MaxDataValues {
		bad("%s: %d values, at most %d allowed", name, len(d.List), MaxDataValues)
	}
	for i, v := range append(slices.Clip(d.List), d.Lookup...) {
		if strings.ContainsAny(v, "\r\n\x00") {
			bad("%s: value %d (%q) holds a line break or NUL, which no header or URL may carry", name, i, v)
			break
		}
	}
	return errs
}

// picker draws the values of one data source (a range, a list, or one CSV
// file's rows) for one user.
type picker struct {
	lo, n  int64 // range: low and count; list: 0 and len
	random bool
	user   int64 // the user's index, round-robin's start
	count  int64 // picks so far
}

// next returns the next index (list) or value (range) of p, drawing from
// rng when p is random.
func (p *picker) next(rng *rand.Rand) int64 {
	var k int64
	if p.random {
		k = rng.Int64N(p.n)
	} else {
		k = (p.user + p.count) % p.n
	}
	p.count++
	return p.lo + k
}

// appendRange appends v in decimal.
func appendRange(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }
