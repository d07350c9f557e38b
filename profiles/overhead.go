package profiles

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/google/pprof/profile"

	"github.com/soakd/soakd/internal/fsutil"
)

// FunctionCost is one function's flat (self) CPU time per request in each arm and GraphQL's extra, as
// Overhead and OverheadRounds compute it, with the profile samples it rests on. Times are CPU
// microseconds per request; the JSON names match the report's overhead rows.
type FunctionCost struct {
	// Function is the function's full name, as in the profile (e.g. "encoding/json.(*decodeState).object").
	Function string `json:"function"`
	// RESTMicrosPerReq is the function's self CPU in the REST arm divided by that arm's request count (µs).
	RESTMicrosPerReq float64 `json:"rest_us_per_request"`
	// GraphQLMicrosPerReq is the same for the GraphQL arm (µs).
	GraphQLMicrosPerReq float64 `json:"graphql_us_per_request"`
	// ExtraMicrosPerReq is GraphQLMicrosPerReq - RESTMicrosPerReq (µs).
	ExtraMicrosPerReq float64 `json:"extra_us_per_request"`
	// SharePercent is ExtraMicrosPerReq as a percentage of the summed extra of every function whose extra
	// is positive: where GraphQL's additional CPU goes.
	SharePercent float64 `json:"share_percent"`
	// RESTSamples is how many CPU profile samples (one per profiling period, 10 ms at the default
	// 100 Hz) of the REST arm the function's self time rests on (count).
	RESTSamples int64 `json:"rest_samples"`
	// GraphQLSamples is the same for the GraphQL arm (count).
	GraphQLSamples int64 `json:"graphql_samples"`
	// WithinNoise is set when the samples are too few to tell the arms apart (see WithinNoise).
	WithinNoise bool `json:"within_noise"`
}

// Noise rule of the overhead breakdown; see WithinNoise.
const (
	// NoiseMinSamples is the fewest samples (count) the larger arm must have for a row to count as
	// evidence.
	NoiseMinSamples = 20
	// NoiseSigmas is how many standard deviations (Poisson) the per-request difference must exceed.
	NoiseSigmas = 2
)

// WithinNoise reports whether a function's difference between the arms is too thin to tell from
// sampling noise. restSamples and gqlSamples are the function's profile samples (counts) in each arm,
// restRequests and gqlRequests the arms' request counts. A CPU profile's sample count is a count, so it
// is taken as Poisson: its variance is the count itself. The rule: the row is within noise when
//
//   - the larger of the two sample counts is below NoiseMinSamples (20), or
//   - |g/Ng − r/Nr| < NoiseSigmas · sqrt(g/Ng² + r/Nr²), with r, g the samples and Nr, Ng the requests:
//     the per-request difference is within 2 standard deviations of zero.
//
// With equal request counts the second condition is |g − r| < 2·sqrt(g + r), the difference in
// samples smaller than twice the square root of their sum; the request counts only rescale each arm.
// Non-positive request counts are always within noise.
func WithinNoise(restSamples, gqlSamples, restRequests, gqlRequests int64) bool {
	if restRequests <= 0 || gqlRequests <= 0 || max(restSamples, gqlSamples) < NoiseMinSamples {
		return true
	}
	r, g := float64(restSamples), float64(gqlSamples)
	nr, ng := float64(restRequests), float64(gqlRequests)
	diff := math.Abs(g/ng - r/nr)
	sd := math.Sqrt(g/(ng*ng) + r/(nr*nr))
	return diff < NoiseSigmas*sd
}

// Breakdown is OverheadRounds's result: the functions and the evidence behind the whole table.
type Breakdown struct {
	// Functions are the listed rows: those with evidence first, largest extra first, then rows within
	// noise (see OverheadRounds).
	Functions []FunctionCost
	// RESTProfiles and GraphQLProfiles are how many profiles (rounds) each arm merged.
	RESTProfiles, GraphQLProfiles int
	// RESTRequests and GraphQLRequests are the summed request counts the arms were divided by.
	RESTRequests, GraphQLRequests int64
	// RESTSamples and GraphQLSamples are the merged profiles' total samples (count) that were compared:
	// all of them, or with handlersOnly and labels on both sides only the labelled ones.
	RESTSamples, GraphQLSamples int64
	// SampleRateHz is the merged profiles' sampling rate (Hz, 1/period), 0 when the period is not
	// in nanoseconds.
	SampleRateHz float64
}

// Overhead compares two CPU profiles, one of the REST arm and one of the GraphQL arm, function by function.
// It is OverheadRounds with one profile per arm, returning only the rows.
func Overhead(rest, gql *profile.Profile, restRequests, gqlRequests int64, n int, handlersOnly bool) ([]FunctionCost, error) {
	if rest == nil || gql == nil {
		return nil, errors.New("cannot compare cpu profiles: a profile is missing")
	}
	b, err := OverheadRounds([]*profile.Profile{rest}, []*profile.Profile{gql}, restRequests, gqlRequests, n, handlersOnly)
	return b.Functions, err
}

// OverheadRounds merges each arm's CPU profiles (one per round, profile.Merge) and compares the merged
// profiles function by function. restRequests and gqlRequests are the requests completed while each arm's
// profiles ran, summed over the rounds. Each arm's CPU nanoseconds (the "cpu"/"nanoseconds" sample value)
// are divided by its request count, so arms that reached different throughputs compare fairly. A sample's
// time goes to the innermost function of its leaf location (inlined frames count as their own functions):
// the breakdown is of flat (self) time, and each row's sample counts are the flat samples (the
// "samples"/"count" value, or nanoseconds / period when the profile has none).
//
// Only functions with positive extra are listed. Rows whose difference is within noise (WithinNoise) are
// kept but sorted after every row with evidence; n bounds the whole list, so rows within noise are left
// out when n functions have evidence. Within each group rows go largest extra first. SharePercent is
// each function's part of the summed positive extra of all functions, not only of the n returned, noisy
// ones included.
//
// With handlersOnly, only request-handling time is compared when it can be told apart: when both
// merged profiles have samples labelled endpoint (any value, as Labeled sets), only labelled samples count.
// Without it (what the report uses, since the CPU KPI is the whole process's) every sample counts, so
// the GC's background mark workers and net/http's connection handling show up where GraphQL costs them.
func OverheadRounds(rest, gql []*profile.Profile, restRequests, gqlRequests int64, n int, handlersOnly bool) (Breakdown, error) {
	return overheadBy(rest, gql, restRequests, gqlRequests, n, handlersOnly, false)
}

// CumulativeRounds is OverheadRounds by cumulative (inclusive) time: a
// sample's time goes to every distinct function on its stack, once each
// (a recursive function is not counted twice), so a row is the CPU per
// request spent in the function and everything it called, and a layer's
// extra can be followed down to the function that carries it. Shares are
// of GraphQL's whole extra CPU per request (the flat rows' sum); rows
// overlap, so they do not add up to 100 %.
func CumulativeRounds(rest, gql []*profile.Profile, restRequests, gqlRequests int64, n int) (Breakdown, error) {
	return overheadBy(rest, gql, restRequests, gqlRequests, n, false, true)
}

func overheadBy(rest, gql []*profile.Profile, restRequests, gqlRequests int64, n int, handlersOnly, cumulative bool) (Breakdown, error) {
	if len(rest) == 0 || len(gql) == 0 || slices.Contains(rest, nil) || slices.Contains(gql, nil) {
		return Breakdown{}, errors.New("cannot compare cpu profiles: a profile is missing")
	}
	if restRequests <= 0 || gqlRequests <= 0 {
		return Breakdown{}, fmt.Errorf("cannot compare cpu profiles: request counts must be positive, got rest %d, graphql %d", restRequests, gqlRequests)
	}
	if n <= 0 {
		return Breakdown{}, fmt.Errorf("cannot compare cpu profiles: n must be positive, got %d", n)
	}
	restProf, err := profile.Merge(rest)
	if err != nil {
		return Breakdown{}, fmt.Errorf("cannot merge the rest cpu profiles: %w", err)
	}
	gqlProf, err := profile.Merge(gql)
	if err != nil {
		return Breakdown{}, fmt.Errorf("cannot merge the graphql cpu profiles: %w", err)
	}
	labelled := handlersOnly && hasEndpointLabel(restProf) && hasEndpointLabel(gqlProf)
	restFlat, err := flatCPU(restProf, labelled, cumulative)
	if err != nil {
		return Breakdown{}, fmt.Errorf("cannot read the rest cpu profile: %w", err)
	}
	gqlFlat, err := flatCPU(gqlProf, labelled, cumulative)
	if err != nil {
		return Breakdown{}, fmt.Errorf("cannot read the graphql cpu profile: %w", err)
	}
	b := Breakdown{
		RESTProfiles: len(rest), GraphQLProfiles: len(gql),
		RESTRequests: restRequests, GraphQLRequests: gqlRequests,
		SampleRateHz: sampleRate(gqlProf),
	}
	var restNanos, gqlNanos int64
	for fn, c := range restFlat {
		if fn != totalKey {
			b.RESTSamples += c.samples
		}
	}
	for fn, c := range gqlFlat {
		if fn != totalKey {
			b.GraphQLSamples += c.samples
		}
	}
	if cumulative {
		b.RESTSamples, b.GraphQLSamples = restFlat[totalKey].samples, gqlFlat[totalKey].samples
		restNanos, gqlNanos = restFlat[totalKey].nanos, gqlFlat[totalKey].nanos
	}
	delete(restFlat, totalKey)
	delete(gqlFlat, totalKey)

	costs := make([]FunctionCost, 0, len(gqlFlat))
	var totalExtra float64
	for fn, g := range gqlFlat {
		r := restFlat[fn]
		c := FunctionCost{
			Function:            fn,
			RESTMicrosPerReq:    float64(r.nanos) / 1e3 / float64(restRequests),
			GraphQLMicrosPerReq: float64(g.nanos) / 1e3 / float64(gqlRequests),
			RESTSamples:         r.samples,
			GraphQLSamples:      g.samples,
			WithinNoise:         WithinNoise(r.samples, g.samples, restRequests, gqlRequests),
		}
		c.ExtraMicrosPerReq = c.GraphQLMicrosPerReq - c.RESTMicrosPerReq
		if c.ExtraMicrosPerReq > 0 {
			costs = append(costs, c)
			totalExtra += c.ExtraMicrosPerReq
		}
	}
	// Functions only in the REST profile have negative extra and are never listed.
	slices.SortFunc(costs, func(a, b FunctionCost) int {
		if a.WithinNoise != b.WithinNoise {
			if a.WithinNoise {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(b.ExtraMicrosPerReq, a.ExtraMicrosPerReq); c != 0 {
			return c
		}
		return cmp.Compare(a.Function, b.Function)
	})
	costs = costs[:min(n, len(costs))]
	if cumulative {
		totalExtra = float64(gqlNanos)/1e3/float64(gqlRequests) - float64(restNanos)/1e3/float64(restRequests)
	}
	for i := range costs {
		costs[i].SharePercent = math.NaN()
		if totalExtra > 0 {
			costs[i].SharePercent = costs[i].ExtraMicrosPerReq / totalExtra * 100
		}
	}
	b.Functions = costs
	return b, nil
}

// MaxProfileBytes bounds a profile file ReadProfile reads.
const MaxProfileBytes = 64 << 20

// ReadProfile reads a pprof profile file (gzip'd or not) such as a CaptureCPU capture.
func ReadProfile(path string) (*profile.Profile, error) {
	// A run directory given to soakd compare may be anyone's: only a
	// regular file is read (a FIFO would block for ever), and at most
	// MaxProfileBytes of it, inflated to at most MaxInflatedProfileBytes.
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read profile: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only
	b, err := io.ReadAll(io.LimitReader(f, MaxProfileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read profile: %w", err)
	}
	if len(b) > MaxProfileBytes {
		return nil, fmt.Errorf("cannot read profile %s: over %d MiB", path, MaxProfileBytes>>20)
	}
	p, err := ParseBounded(b)
	if err != nil {
		return nil, fmt.Errorf("cannot parse profile %s: %w", path, err)
	}
	return p, nil
}

// MaxInflatedProfileBytes bounds a gzip'd profile once inflated: profile.ParseData
// inflates without a bound, so a small file (or a server's answer) could
// expand into all of memory.
const MaxInflatedProfileBytes = 256 << 20

// ParseBounded parses a pprof profile (gzip'd or not), inflating at most
// MaxInflatedProfileBytes.
func ParseBounded(b []byte) (*profile.Profile, error) {
	return parseBounded(b, MaxInflatedProfileBytes)
}

func parseBounded(b []byte, max int) (*profile.Profile, error) {
	if len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b {
		gz, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("decompressing profile: %w", err)
		}
		if b, err = io.ReadAll(io.LimitReader(gz, int64(max)+1)); err != nil {
			return nil, fmt.Errorf("decompressing profile: %w", err)
		}
		if len(b) > max {
			return nil, fmt.Errorf("the profile inflates beyond %d MiB", max>>20)
		}
	}
	return profile.ParseData(b)
}

// hasEndpointLabel reports whether any sample of p carries the endpoint label.
func hasEndpointLabel(p *profile.Profile) bool {
	for _, s := range p.Sample {
		if len(s.Label[LabelEndpoint]) > 0 {
			return true
		}
	}
	return false
}

// flat is one function's self time in a profile: CPU nanoseconds and samples (count).
type flat struct {
	nanos, samples int64
}

// sampleRate is p's sampling rate in Hz when its period is in nanoseconds, else 0.
func sampleRate(p *profile.Profile) float64 {
	if p.PeriodType == nil || p.PeriodType.Unit != "nanoseconds" || p.Period <= 0 {
		return 0
	}
	return 1e9 / float64(p.Period)
}

// flatCPU sums p's cpu nanoseconds and samples by the function each sample's time is spent in; with
// labelled, only samples carrying the endpoint label count. Samples are the "samples"/"count" value when
// the profile has one (runtime/pprof's do), else the nanoseconds divided by the period.
// totalKey is flatCPU's entry for the whole profile (cumulative only).
const totalKey = "\x00total"

func flatCPU(p *profile.Profile, labelled, cumulative bool) (map[string]flat, error) {
	vi := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool {
		return t != nil && t.Type == "cpu" && t.Unit == "nanoseconds"
	})
	if vi < 0 {
		return nil, errors.New("no cpu/nanoseconds sample type (not a cpu profile)")
	}
	ci := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool {
		return t != nil && t.Type == "samples" && t.Unit == "count"
	})
	out := make(map[string]flat)
	seen := map[string]bool{}
	for _, s := range p.Sample {
		if vi >= len(s.Value) || (labelled && len(s.Label[LabelEndpoint]) == 0) {
			continue
		}
		var n int64
		switch {
		case ci >= 0 && ci < len(s.Value):
			n = s.Value[ci]
		case p.Period > 0:
			n = s.Value[vi] / p.Period
		}
		add := func(fn string) {
			f := out[fn]
			f.nanos += s.Value[vi]
			f.samples += n
			out[fn] = f
		}
		if !cumulative {
			add(leafFunction(s))
			continue
		}
		add(totalKey)
		clear(seen)
		for _, loc := range s.Location {
			if loc == nil {
				continue
			}
			for _, ln := range loc.Line {
				if ln.Function == nil || ln.Function.Name == "" || seen[ln.Function.Name] {
					continue
				}
				seen[ln.Function.Name] = true
				add(ln.Function.Name)
			}
		}
	}
	return out, nil
}

// leafFunction names the function a sample was executing: the innermost line of its first location, or
// the location's address when the profile is not symbolized.
func leafFunction(s *profile.Sample) string {
	if len(s.Location) == 0 || s.Location[0] == nil {
		return "(unknown)"
	}
	loc := s.Location[0]
	if len(loc.Line) == 0 || loc.Line[0].Function == nil || loc.Line[0].Function.Name == "" {
		return fmt.Sprintf("0x%x", loc.Address)
	}
	return loc.Line[0].Function.Name
}
