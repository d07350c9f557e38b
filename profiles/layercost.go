package profiles

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/google/pprof/profile"
	"gonum.org/v1/gonum/stat/distuv"
)

// Interval is a two-sided interval [Low, High] of a figure, in the figure's unit.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// LayerCost is one layer's CPU per request in each arm and GraphQL's extra, as LayerRounds computes
// it. Times are CPU microseconds per request; intervals are at NoiseSigmas (2) standard deviations,
// about 95.4 %.
type LayerCost struct {
	// Layer is the layer's name (see Layers).
	Layer string
	// RESTMicrosPerReq is the CPU of the REST arm's samples attributed to the layer, divided by the
	// arm's requests (µs); REST is its Poisson interval (PoissonInterval of the samples, scaled).
	RESTMicrosPerReq float64
	REST             Interval
	// GraphQLMicrosPerReq and GraphQL are the same for the GraphQL arm.
	GraphQLMicrosPerReq float64
	GraphQL             Interval
	// RESTAllocMicrosPerReq and GraphQLAllocMicrosPerReq are the part of each arm's figure spent in
	// the allocator on the layer's behalf (µs; see Layers.Classify).
	RESTAllocMicrosPerReq, GraphQLAllocMicrosPerReq float64
	// ExtraMicrosPerReq is GraphQLMicrosPerReq - RESTMicrosPerReq (µs) and Extra its interval
	// (DifferenceInterval).
	ExtraMicrosPerReq float64
	Extra             Interval
	// SharePercent is ExtraMicrosPerReq as a percentage of the total extra (every layer's extra
	// summed: GraphQL's whole CPU per request minus REST's); NaN when the total is not positive.
	SharePercent float64
	// RESTSamples and GraphQLSamples are the samples (count) attributed to the layer in each arm.
	RESTSamples, GraphQLSamples int64
}

// LayerBreakdown is LayerRounds's result.
type LayerBreakdown struct {
	// Layers has one row per layer of Layers.Order, "other" last, rows with no samples in either arm
	// left out except "other", which is always listed.
	Layers []LayerCost
	// TotalExtraMicrosPerReq is GraphQL's whole CPU per request minus REST's (µs).
	TotalExtraMicrosPerReq float64
	// ExplainedPercent is the share of the total extra the named layers (all but "other") explain,
	// 100 − other's share; NaN when the total extra is not positive (nothing to explain).
	ExplainedPercent float64
}

// LayerRounds merges each arm's CPU profiles and attributes every sample to a layer (Layers.Classify),
// whole process (as OverheadRounds without handlersOnly). restRequests and gqlRequests are the requests
// completed while each arm's profiles ran.
func LayerRounds(rest, gql []*profile.Profile, restRequests, gqlRequests int64, l *Layers) (LayerBreakdown, error) {
	if l == nil {
		return LayerBreakdown{}, errors.New("cannot attribute cpu by layer: no layer rules")
	}
	if len(rest) == 0 || len(gql) == 0 || slices.Contains(rest, nil) || slices.Contains(gql, nil) {
		return LayerBreakdown{}, errors.New("cannot attribute cpu by layer: a profile is missing")
	}
	if restRequests <= 0 || gqlRequests <= 0 {
		return LayerBreakdown{}, fmt.Errorf("cannot attribute cpu by layer: request counts must be positive, got rest %d, graphql %d", restRequests, gqlRequests)
	}
	restProf, err := profile.Merge(rest)
	if err != nil {
		return LayerBreakdown{}, fmt.Errorf("cannot merge the rest cpu profiles: %w", err)
	}
	gqlProf, err := profile.Merge(gql)
	if err != nil {
		return LayerBreakdown{}, fmt.Errorf("cannot merge the graphql cpu profiles: %w", err)
	}
	restBy, err := layerCPU(restProf, l)
	if err != nil {
		return LayerBreakdown{}, fmt.Errorf("cannot read the rest cpu profile: %w", err)
	}
	gqlBy, err := layerCPU(gqlProf, l)
	if err != nil {
		return LayerBreakdown{}, fmt.Errorf("cannot read the graphql cpu profile: %w", err)
	}
	var b LayerBreakdown
	var otherExtra float64
	for _, name := range l.Order() {
		r, g := restBy[name], gqlBy[name]
		if r.samples == 0 && g.samples == 0 && r.nanos == 0 && g.nanos == 0 && name != LayerOther {
			continue
		}
		c := LayerCost{
			Layer:                    name,
			RESTMicrosPerReq:         perReq(r.nanos, restRequests),
			GraphQLMicrosPerReq:      perReq(g.nanos, gqlRequests),
			RESTAllocMicrosPerReq:    perReq(r.allocNanos, restRequests),
			GraphQLAllocMicrosPerReq: perReq(g.allocNanos, gqlRequests),
			RESTSamples:              r.samples,
			GraphQLSamples:           g.samples,
		}
		rw, gw := perReq(restBy.nanosPerSample(), restRequests), perReq(gqlBy.nanosPerSample(), gqlRequests)
		c.REST = PoissonInterval(r.samples).scale(rw)
		c.GraphQL = PoissonInterval(g.samples).scale(gw)
		c.ExtraMicrosPerReq = c.GraphQLMicrosPerReq - c.RESTMicrosPerReq
		c.Extra = DifferenceInterval(c.ExtraMicrosPerReq, r.samples, g.samples, rw, gw)
		b.TotalExtraMicrosPerReq += c.ExtraMicrosPerReq
		if name == LayerOther {
			otherExtra = c.ExtraMicrosPerReq
		}
		b.Layers = append(b.Layers, c)
	}
	for i := range b.Layers {
		b.Layers[i].SharePercent = math.NaN()
		if b.TotalExtraMicrosPerReq > 0 {
			b.Layers[i].SharePercent = b.Layers[i].ExtraMicrosPerReq / b.TotalExtraMicrosPerReq * 100
		}
	}
	b.ExplainedPercent = math.NaN()
	if b.TotalExtraMicrosPerReq > 0 {
		b.ExplainedPercent = 100 - otherExtra/b.TotalExtraMicrosPerReq*100
	}
	return b, nil
}

// perReq converts nanoseconds over n requests to microseconds per request.
func perReq(nanos float64, n int64) float64 { return nanos / 1e3 / float64(n) }

// poissonCoverage is the two-sided coverage of NoiseSigmas standard deviations of a normal
// distribution (≈ 0.9545), the level of every interval here.
func poissonCoverage() float64 { return math.Erf(NoiseSigmas / math.Sqrt2) }

// PoissonInterval is the exact (Garwood) interval for the mean of a Poisson count k at the
// NoiseSigmas coverage (≈ 95.45 %): [χ²(α/2; 2k)/2, χ²(1−α/2; 2k+2)/2], the lower bound 0 when k
// is 0. In samples; scale by a sample's CPU per request for µs per request.
func PoissonInterval(k int64) Interval {
	alpha := 1 - poissonCoverage()
	var lo float64
	if k > 0 {
		lo = distuv.ChiSquared{K: float64(2 * k)}.Quantile(alpha/2) / 2
	}
	hi := distuv.ChiSquared{K: float64(2*k + 2)}.Quantile(1-alpha/2) / 2
	return Interval{Low: lo, High: hi}
}

func (i Interval) scale(f float64) Interval { return Interval{Low: i.Low * f, High: i.High * f} }

// DifferenceInterval is the interval of a difference of two Poisson rates, extra = g·gw − r·rw, at
// NoiseSigmas standard deviations: extra ± 2·sqrt(r·rw² + g·gw²), r and g the sample counts and rw,
// gw what one sample weighs (µs per request). It is the normal approximation WithinNoise uses: the
// interval excludes zero exactly when WithinNoise's second condition finds a difference.
func DifferenceInterval(extra float64, r, g int64, rw, gw float64) Interval {
	sd := math.Sqrt(float64(r)*rw*rw + float64(g)*gw*gw)
	return Interval{Low: extra - NoiseSigmas*sd, High: extra + NoiseSigmas*sd}
}

// layerSum is one layer's CPU nanoseconds (of which in the allocator) and samples in a profile.
type layerSum struct {
	nanos, allocNanos float64
	samples           int64
}

// layerSums maps layer names to their sums; the "" key holds the profile's totals.
type layerSums map[string]layerSum

// nanosPerSample is what one sample weighs in the profile (ns): its total CPU over its total samples,
// which for runtime/pprof is the sampling period.
func (m layerSums) nanosPerSample() float64 {
	t := m[""]
	if t.samples == 0 {
		return 0
	}
	return t.nanos / float64(t.samples)
}

// layerCPU sums p's cpu nanoseconds and samples by layer. Samples are the "samples"/"count" value
// when the profile has one, else nanoseconds over the period (as flatCPU).
func layerCPU(p *profile.Profile, l *Layers) (layerSums, error) {
	vi := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool {
		return t != nil && t.Type == "cpu" && t.Unit == "nanoseconds"
	})
	if vi < 0 {
		return nil, errors.New("no cpu/nanoseconds sample type (not a cpu profile)")
	}
	ci := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool {
		return t != nil && t.Type == "samples" && t.Unit == "count"
	})
	out := layerSums{}
	var stack []Frame
	for _, s := range p.Sample {
		if vi >= len(s.Value) {
			continue
		}
		stack = stackFrames(s, stack[:0])
		layer, alloc := l.Classify(stack)
		var n int64
		switch {
		case ci >= 0 && ci < len(s.Value):
			n = s.Value[ci]
		case p.Period > 0:
			n = s.Value[vi] / p.Period
		}
		ns := float64(s.Value[vi])
		for _, key := range []string{layer, ""} {
			sum := out[key]
			sum.nanos += ns
			sum.samples += n
			if alloc {
				sum.allocNanos += ns
			}
			out[key] = sum
		}
	}
	return out, nil
}

// stackFrames appends s's frames, leaf first (inlined functions before the function they were
// inlined into), to buf. An unsymbolized location is a frame named by its address.
func stackFrames(s *profile.Sample, buf []Frame) []Frame {
	for _, loc := range s.Location {
		if loc == nil {
			continue
		}
		if len(loc.Line) == 0 {
			buf = append(buf, Frame{Function: fmt.Sprintf("0x%x", loc.Address)})
			continue
		}
		for _, ln := range loc.Line {
			if ln.Function == nil {
				continue
			}
			buf = append(buf, Frame{Function: ln.Function.Name, File: ln.Function.Filename})
		}
	}
	return buf
}
