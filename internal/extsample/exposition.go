package extsample

import (
	"math"
	"slices"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// point is one sample of a series: its labels and value.
type point struct {
	labels []*dto.LabelPair
	value  float64
}

// label returns the value of the label name ("" when absent).
func (p point) label(name string) string {
	for _, l := range p.labels {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// points returns the samples of the series named series as it appears in the exposition text, and whether the
// series is exposed at all. A counter, gauge or untyped family gives its values; "<base>_count" and
// "<base>_sum" give the sample count and sum of a summary or histogram family <base>, whether the text
// declared its type or not (untyped _count and _sum lines parse as families of their own).
func (e Exposition) points(series string) ([]point, bool) {
	if mf, ok := e[series]; ok {
		var out []point
		for _, m := range mf.GetMetric() {
			var v float64
			switch {
			case m.Counter != nil:
				v = m.GetCounter().GetValue()
			case m.Gauge != nil:
				v = m.GetGauge().GetValue()
			case m.Untyped != nil:
				v = m.GetUntyped().GetValue()
			default:
				continue
			}
			out = append(out, point{labels: m.GetLabel(), value: v})
		}
		return out, len(out) > 0
	}
	for _, suffix := range []string{"_count", "_sum"} {
		base, ok := strings.CutSuffix(series, suffix)
		if !ok {
			continue
		}
		mf, ok := e[base]
		if !ok {
			return nil, false
		}
		var out []point
		for _, m := range mf.GetMetric() {
			var v float64
			switch {
			case m.Summary != nil && suffix == "_count":
				v = float64(m.GetSummary().GetSampleCount())
			case m.Summary != nil:
				v = m.GetSummary().GetSampleSum()
			case m.Histogram != nil && suffix == "_count":
				v = float64(m.GetHistogram().GetSampleCount())
			case m.Histogram != nil:
				v = m.GetHistogram().GetSampleSum()
			default:
				continue
			}
			out = append(out, point{labels: m.GetLabel(), value: v})
		}
		return out, len(out) > 0
	}
	return nil, false
}

// has reports whether any of the series is exposed.
func (e Exposition) has(series ...string) bool {
	for _, s := range series {
		if _, ok := e.points(s); ok {
			return true
		}
	}
	return false
}

// where selects samples by label; nil selects all.
type where func(point) bool

// labelIs selects samples whose label name has value v.
func labelIs(name, v string) where { return func(p point) bool { return p.label(name) == v } }

// read is one way to read a figure: a series, an optional label selection, a scale and the definition the
// figure gets when read this way.
type read struct {
	series string
	// sel is how the samples are chosen, in PromQL-like words for the source ("{area=\"heap\"}", " summed over
	// gc"); "" when the series has one sample.
	sel    string
	filter where
	// scale multiplies the value (0 means 1), e.g. 0.001 for milliseconds.
	scale float64
	// absentIsZero makes an exposed series with no selected sample read as 0: for series whose label values
	// appear only once something happened (prom-client's GC kinds).
	absentIsZero bool
	def          string
}

// source names the series the figure was read from.
func (r read) source() string { return "series " + r.series + r.sel }

// value sums the selected samples of r's series. found is false when the series is not exposed or no sample
// is selected.
func (r read) value(e Exposition) (v float64, found bool) {
	pts, ok := e.points(r.series)
	if !ok {
		return 0, false
	}
	for _, p := range pts {
		if r.filter != nil && !r.filter(p) {
			continue
		}
		v += p.value
		found = true
	}
	if r.absentIsZero {
		found = true
	}
	if r.scale != 0 {
		v *= r.scale
	}
	return v, found
}

// pick returns the figure read the first way whose series is exposed, or a figure not measured for missing
// (or, when missing is "", for a reason naming the series looked for). A NaN or infinite value is not
// measured.
func pick(e Exposition, name, unit, missing string, reads ...read) Figure {
	for _, r := range reads {
		v, ok := r.value(e)
		if !ok {
			continue
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return notMeasured(name, unit, r.source(), r.def, r.source()+" is "+formatFloat(v))
		}
		return measured(name, unit, r.source(), r.def, v)
	}
	if missing == "" {
		var names []string
		for _, r := range reads {
			names = append(names, r.series+r.sel)
		}
		missing = "the target exposes none of " + strings.Join(names, ", ")
	}
	last := reads[len(reads)-1]
	return notMeasured(name, unit, last.source(), last.def, missing)
}

// labelValues returns the distinct values of label across the samples of series, sorted with the values in
// first leading in their given order.
func (e Exposition) labelValues(series, label string, first ...string) []string {
	pts, _ := e.points(series)
	seen := map[string]bool{}
	var rest []string
	for _, p := range pts {
		v := p.label(label)
		if seen[v] {
			continue
		}
		seen[v] = true
		if !slices.Contains(first, v) {
			rest = append(rest, v)
		}
	}
	sort.Strings(rest)
	var out []string
	for _, v := range first {
		if seen[v] {
			out = append(out, v)
		}
	}
	return append(out, rest...)
}
