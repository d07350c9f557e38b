package profiles

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/google/pprof/profile"
)

// FunctionCost is one function's flat (self) CPU time per request in each arm and GraphQL's extra, as
// Overhead computes it. Times are CPU microseconds per request; the JSON names match the report's
// overhead rows.
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
}

// Overhead compares two CPU profiles, one of the REST arm and one of the GraphQL arm, function by function
// and returns the n functions with the most extra flat (self) CPU per request in the GraphQL arm, largest
// first. Each arm's CPU nanoseconds (the "cpu"/"nanoseconds" sample value) are divided by that arm's
// request count, so arms that reached different throughputs compare fairly. A sample's time goes to the
// innermost function of its leaf location (inlined frames count as their own functions).
//
// With handlersOnly, only request-handling time is compared when it can be told apart: when both
// profiles have samples labelled endpoint (any value, as Labeled sets), only labelled samples count.
// Without it (what the report uses, since the CPU KPI is the whole process's) every sample counts, so
// the GC's background mark workers and net/http's connection handling show up where GraphQL costs them.
// Only functions
// with positive extra are returned, so the list may be shorter than n. SharePercent is each function's
// part of the summed positive extra of all functions, not only of the n returned.
func Overhead(rest, gql *profile.Profile, restRequests, gqlRequests int64, n int, handlersOnly bool) ([]FunctionCost, error) {
	if rest == nil || gql == nil {
		return nil, errors.New("cannot compare cpu profiles: a profile is missing")
	}
	if restRequests <= 0 || gqlRequests <= 0 {
		return nil, fmt.Errorf("cannot compare cpu profiles: request counts must be positive, got rest %d, graphql %d", restRequests, gqlRequests)
	}
	if n <= 0 {
		return nil, fmt.Errorf("cannot compare cpu profiles: n must be positive, got %d", n)
	}
	labelled := handlersOnly && hasEndpointLabel(rest) && hasEndpointLabel(gql)
	restNanos, err := flatCPU(rest, labelled)
	if err != nil {
		return nil, fmt.Errorf("cannot read the rest cpu profile: %w", err)
	}
	gqlNanos, err := flatCPU(gql, labelled)
	if err != nil {
		return nil, fmt.Errorf("cannot read the graphql cpu profile: %w", err)
	}

	costs := make([]FunctionCost, 0, len(gqlNanos))
	var totalExtra float64
	for fn, g := range gqlNanos {
		c := FunctionCost{
			Function:            fn,
			RESTMicrosPerReq:    float64(restNanos[fn]) / 1e3 / float64(restRequests),
			GraphQLMicrosPerReq: float64(g) / 1e3 / float64(gqlRequests),
		}
		c.ExtraMicrosPerReq = c.GraphQLMicrosPerReq - c.RESTMicrosPerReq
		if c.ExtraMicrosPerReq > 0 {
			costs = append(costs, c)
			totalExtra += c.ExtraMicrosPerReq
		}
	}
	// Functions only in the REST profile have negative extra and are never listed.
	slices.SortFunc(costs, func(a, b FunctionCost) int {
		if c := cmp.Compare(b.ExtraMicrosPerReq, a.ExtraMicrosPerReq); c != 0 {
			return c
		}
		return cmp.Compare(a.Function, b.Function)
	})
	costs = costs[:min(n, len(costs))]
	for i := range costs {
		costs[i].SharePercent = costs[i].ExtraMicrosPerReq / totalExtra * 100
	}
	return costs, nil
}

// ReadProfile reads a pprof profile file (gzip'd or not) such as a CaptureCPU capture.
func ReadProfile(path string) (*profile.Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read profile: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only
	p, err := profile.Parse(f)
	if err != nil {
		return nil, fmt.Errorf("cannot parse profile %s: %w", path, err)
	}
	return p, nil
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

// flatCPU sums p's cpu nanoseconds by the function each sample's time is spent in; with labelled, only
// samples carrying the endpoint label count.
func flatCPU(p *profile.Profile, labelled bool) (map[string]int64, error) {
	vi := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool {
		return t != nil && t.Type == "cpu" && t.Unit == "nanoseconds"
	})
	if vi < 0 {
		return nil, errors.New("no cpu/nanoseconds sample type (not a cpu profile)")
	}
	out := make(map[string]int64)
	for _, s := range p.Sample {
		if vi >= len(s.Value) || (labelled && len(s.Label[LabelEndpoint]) == 0) {
			continue
		}
		out[leafFunction(s)] += s.Value[vi]
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
