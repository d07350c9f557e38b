package profiles

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/google/pprof/profile"
)

// HeapPair is one phase's heap profiles: before it started and after it
// settled. Their alloc_space values are cumulative since the process
// started, so after − before is what the phase allocated.
type HeapPair struct{ Before, After *profile.Profile }

// AllocLayerCost is one layer's allocation per request in each arm
// (bytes), as AllocLayerRounds computes it.
type AllocLayerCost struct {
	Layer string
	// RESTBytesPerReq and GraphQLBytesPerReq are the bytes allocated by
	// stacks the layer claims, over the arm's requests.
	RESTBytesPerReq, GraphQLBytesPerReq float64
	// ExtraBytesPerReq is GraphQL − REST (bytes); SharePercent its part of
	// the total extra (NaN when the total is not positive).
	ExtraBytesPerReq, SharePercent float64
}

// AllocLayerBreakdown is AllocLayerRounds's result.
type AllocLayerBreakdown struct {
	// Layers has a row per layer with allocation in either arm, in
	// Layers.Order, other last and always listed.
	Layers []AllocLayerCost
	// TotalExtraBytesPerReq is every row's extra summed: GraphQL's
	// allocation per request in the profiles minus REST's.
	TotalExtraBytesPerReq float64
	// ExplainedPercent is the share of a positive total extra the named
	// layers carry (NaN otherwise).
	ExplainedPercent float64
	// RESTBytes and GraphQLBytes are the arms' allocated bytes in the
	// profiles' deltas (the runtime's sampled estimate, every 512 KiB on
	// average).
	RESTBytes, GraphQLBytes float64
}

// AllocLayerRounds attributes what each arm's phases allocated (the
// alloc_space of each phase's heap profile after it, minus before it,
// summed over the rounds) to layers by the allocating stack
// (Layers.Classify: the first frame from the allocator up that a rule
// claims), and divides by the arm's requests over those phases. The
// runtime's heap profile records allocations as of the last completed GC
// cycle; soakd forces one before each profile of a target it hosts, so a
// phase's delta is what it allocated; for a server it does not host the
// ends are the server's own last cycles, which under load are at most a
// GC interval old.
func AllocLayerRounds(rest, gql []HeapPair, restRequests, gqlRequests int64, l *Layers) (AllocLayerBreakdown, error) {
	if l == nil {
		return AllocLayerBreakdown{}, errors.New("cannot attribute allocation by layer: no layer rules")
	}
	if len(rest) == 0 || len(gql) == 0 {
		return AllocLayerBreakdown{}, errors.New("cannot attribute allocation by layer: a heap profile is missing")
	}
	if restRequests <= 0 || gqlRequests <= 0 {
		return AllocLayerBreakdown{}, fmt.Errorf("cannot attribute allocation by layer: request counts must be positive, got rest %d, graphql %d", restRequests, gqlRequests)
	}
	restBy, err := allocDeltas(rest, l)
	if err != nil {
		return AllocLayerBreakdown{}, fmt.Errorf("rest: %w", err)
	}
	gqlBy, err := allocDeltas(gql, l)
	if err != nil {
		return AllocLayerBreakdown{}, fmt.Errorf("graphql: %w", err)
	}
	b := AllocLayerBreakdown{RESTBytes: restBy[""], GraphQLBytes: gqlBy[""]}
	var other float64
	for _, name := range l.Order() {
		r, g := restBy[name], gqlBy[name]
		if r == 0 && g == 0 && name != LayerOther {
			continue
		}
		c := AllocLayerCost{Layer: name, RESTBytesPerReq: r / float64(restRequests), GraphQLBytesPerReq: g / float64(gqlRequests)}
		c.ExtraBytesPerReq = c.GraphQLBytesPerReq - c.RESTBytesPerReq
		b.TotalExtraBytesPerReq += c.ExtraBytesPerReq
		if name == LayerOther {
			other = c.ExtraBytesPerReq
		}
		b.Layers = append(b.Layers, c)
	}
	b.ExplainedPercent = math.NaN()
	for i := range b.Layers {
		b.Layers[i].SharePercent = math.NaN()
		if b.TotalExtraBytesPerReq > 0 {
			b.Layers[i].SharePercent = b.Layers[i].ExtraBytesPerReq / b.TotalExtraBytesPerReq * 100
		}
	}
	if b.TotalExtraBytesPerReq > 0 {
		b.ExplainedPercent = 100 - other/b.TotalExtraBytesPerReq*100
	}
	return b, nil
}

// allocDeltas sums after − before of each pair's alloc_space by layer
// ("" is the total).
func allocDeltas(pairs []HeapPair, l *Layers) (map[string]float64, error) {
	out := map[string]float64{}
	for _, p := range pairs {
		if p.Before == nil || p.After == nil {
			return nil, errors.New("a heap profile is missing")
		}
		for sign, prof := range map[float64]*profile.Profile{-1: p.Before, 1: p.After} {
			if err := addAllocSpace(out, prof, sign, l); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// addAllocSpace adds sign × each sample's alloc_space to its layer and to
// the total.
func addAllocSpace(out map[string]float64, p *profile.Profile, sign float64, l *Layers) error {
	vi := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool {
		return t != nil && t.Type == "alloc_space" && t.Unit == "bytes"
	})
	if vi < 0 {
		return errors.New("no alloc_space/bytes sample type (not a heap profile)")
	}
	var stack []Frame
	for _, s := range p.Sample {
		if vi >= len(s.Value) {
			continue
		}
		stack = stackFrames(s, stack[:0])
		layer, _ := l.Classify(stack)
		if layer == LayerGC {
			// No frame claimed the allocating stack (Classify's
			// fallback for an allocator leaf): the allocation is
			// unattributed, not the collector's.
			layer = LayerOther
		}
		v := sign * float64(s.Value[vi])
		out[layer] += v
		out[""] += v
	}
	return nil
}
