package report

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/google/pprof/profile"

	"github.com/soakd/soakd/internal/termtext"
	"github.com/soakd/soakd/profiles"
)

// ChangeAttribution is where the compared GraphQL phase's CPU per request
// changed from the old build to the new one: both builds' CPU profiles of
// that phase, merged over the rounds both have, attributed by layer
// (profiles.Layers) and by function (flat time), old against new. It
// answers "where did the regression come from" beside the row that says
// there is one.
type ChangeAttribution struct {
	// Phase is the compared GraphQL phase (its base name).
	Phase string `json:"phase"`
	// Rounds is how many rounds' profiles were merged on each side (the
	// rounds whose CPU profile both sides have).
	Rounds int `json:"rounds"`
	// OldRequests and NewRequests are the requests completed while the
	// merged profiles ran (count); OldSamples and NewSamples their samples.
	OldRequests int64 `json:"old_requests"`
	NewRequests int64 `json:"new_requests"`
	OldSamples  int64 `json:"old_samples"`
	NewSamples  int64 `json:"new_samples"`
	// TotalChangeMicrosPerReq is the new build's CPU per request in the
	// profiles minus the old build's (µs), every layer's change summed.
	TotalChangeMicrosPerReq float64 `json:"total_change_us_per_request"`
	// ExplainedPercent is the share of a positive total change that the
	// named layers (all but other) carry; null when the total is not
	// positive.
	ExplainedPercent *float64 `json:"explained_percent"`
	// Layers are the layers' CPU per request on each side and the change
	// with its interval (NoiseSigmas, Poisson), in the layers' order.
	Layers []LayerChange `json:"layers"`
	// Functions are the functions whose flat CPU per request grew, those
	// beyond noise first, largest first (at most profiling.overhead_top).
	Functions []FunctionChange `json:"functions"`
	// Alloc is the same phase's allocation per request by layer in each
	// build, from its heap profiles around each round; nil without them.
	Alloc *AllocChange `json:"alloc,omitempty"`
}

// AllocChange is a phase's allocation per request by layer in two builds.
type AllocChange struct {
	// Rounds is how many rounds' heap profiles both runs have.
	Rounds int `json:"rounds"`
	// TotalChangeBytesPerReq is new − old over every layer (bytes).
	TotalChangeBytesPerReq float64            `json:"total_change_bytes_per_request"`
	Layers                 []AllocLayerChange `json:"layers"`
}

// AllocLayerChange is one layer's allocation per request in each build
// (bytes).
type AllocLayerChange struct {
	Layer          string  `json:"layer"`
	OldBytesPerReq float64 `json:"old_bytes_per_request"`
	NewBytesPerReq float64 `json:"new_bytes_per_request"`
	ChangeBytes    float64 `json:"change_bytes_per_request"`
}

// LayerChange is one layer's CPU per request in each build (µs).
type LayerChange struct {
	Layer           string            `json:"layer"`
	OldMicrosPerReq float64           `json:"old_us_per_request"`
	NewMicrosPerReq float64           `json:"new_us_per_request"`
	ChangeMicros    float64           `json:"change_us_per_request"`
	ChangeInterval  profiles.Interval `json:"change_interval"`
	// Beyond is true when the change's interval excludes 0.
	Beyond     bool  `json:"beyond_noise"`
	OldSamples int64 `json:"old_samples"`
	NewSamples int64 `json:"new_samples"`
}

// FunctionChange is one function's flat CPU per request in each build
// (µs); WithinNoise as profiles.WithinNoise.
type FunctionChange struct {
	Function        string  `json:"function"`
	OldMicrosPerReq float64 `json:"old_us_per_request"`
	NewMicrosPerReq float64 `json:"new_us_per_request"`
	ChangeMicros    float64 `json:"change_us_per_request"`
	WithinNoise     bool    `json:"within_noise"`
}

// Attribute attributes the change between two builds' CPU profiles of one
// phase (each merged over its rounds; oldReq and newReq the requests
// completed while they ran) by layer and by function, the top functions
// whose flat time grew. It is pure.
func Attribute(phase string, old, new []*profile.Profile, oldReq, newReq int64, l *profiles.Layers, top int) (*ChangeAttribution, error) {
	lb, err := profiles.LayerRounds(old, new, oldReq, newReq, l)
	if err != nil {
		return nil, err
	}
	fb, err := profiles.OverheadRounds(old, new, oldReq, newReq, top, false)
	if err != nil {
		return nil, err
	}
	a := &ChangeAttribution{Phase: phase, Rounds: len(old), OldRequests: oldReq, NewRequests: newReq,
		OldSamples: fb.RESTSamples, NewSamples: fb.GraphQLSamples, TotalChangeMicrosPerReq: lb.TotalExtraMicrosPerReq,
		Layers: []LayerChange{}, Functions: []FunctionChange{}}
	if !math.IsNaN(lb.ExplainedPercent) {
		v := lb.ExplainedPercent
		a.ExplainedPercent = &v
	}
	for _, c := range lb.Layers {
		a.Layers = append(a.Layers, LayerChange{Layer: c.Layer, OldMicrosPerReq: c.RESTMicrosPerReq, NewMicrosPerReq: c.GraphQLMicrosPerReq,
			ChangeMicros: c.ExtraMicrosPerReq, ChangeInterval: c.Extra, Beyond: c.Extra.Low > 0 || c.Extra.High < 0,
			OldSamples: c.RESTSamples, NewSamples: c.GraphQLSamples})
	}
	for _, f := range fb.Functions {
		a.Functions = append(a.Functions, FunctionChange{Function: f.Function, OldMicrosPerReq: f.RESTMicrosPerReq,
			NewMicrosPerReq: f.GraphQLMicrosPerReq, ChangeMicros: f.ExtraMicrosPerReq, WithinNoise: f.WithinNoise})
	}
	return a, nil
}

// LoadAttribution reads the compared GraphQL phase's CPU profiles of two
// runs from their directories (each round's <phase>_<round>.cpu.pb.gz, as
// listed in the report with its request count) and attributes the change
// (Attribute). A round is used only when both runs have its profile. why
// is "" when it was built, otherwise why not.
func LoadAttribution(oldDir, newDir string, old, new *Report, l *profiles.Layers, top int) (a *ChangeAttribution, why string) {
	phase := new.Compare.GraphQL
	if phase == "" || old.Compare.GraphQL != phase {
		return nil, "the runs name no common compared GraphQL phase"
	}
	_, oldNames := old.Compare.Ran()
	_, newNames := new.Compare.Ran()
	var op, np []*profile.Profile
	var oreq, nreq int64
	for _, name := range newNames {
		if !slices.Contains(oldNames, name) {
			continue
		}
		file := filepath.Base(profiles.CapturePath("", name, "cpu.pb.gz"))
		on, nn := old.ProfileRequests[file], new.ProfileRequests[file]
		if on <= 0 || nn <= 0 {
			continue
		}
		o, err := profiles.ReadProfile(filepath.Join(oldDir, file))
		if err != nil {
			continue
		}
		n, err := profiles.ReadProfile(filepath.Join(newDir, file))
		if err != nil {
			continue
		}
		op, np = append(op, o), append(np, n)
		oreq, nreq = oreq+on, nreq+nn
	}
	alloc := loadAllocChange(oldDir, newDir, old, new, oldNames, newNames, l)
	if len(op) == 0 {
		why := fmt.Sprintf("no round of %s has a CPU profile with its request count in both runs (profiling.cpu off, a target without target.pprof_url, or runs written before profile_requests)", phase)
		if alloc != nil {
			return &ChangeAttribution{Phase: phase, Layers: []LayerChange{}, Functions: []FunctionChange{}, Alloc: alloc}, why
		}
		return nil, why
	}
	a, err := Attribute(phase, op, np, oreq, nreq, l, top)
	if err != nil {
		return nil, err.Error()
	}
	a.Alloc = alloc
	return a, ""
}

// loadAllocChange is the compared GraphQL phase's allocation by layer in
// the old build (as "REST") and the new one (as "GraphQL"), from each
// round's heap profiles before and after it in both runs; nil without
// them.
func loadAllocChange(oldDir, newDir string, old, new *Report, oldNames, newNames []string, l *profiles.Layers) *AllocChange {
	var op, np []profiles.HeapPair
	var oreq, nreq int64
	read := func(dir, name string) (profiles.HeapPair, bool) {
		var hp profiles.HeapPair
		for i, kind := range []string{"heap-before.pb.gz", "heap-after.pb.gz"} {
			p, err := profiles.ReadProfile(filepath.Join(dir, filepath.Base(profiles.CapturePath("", name, kind))))
			if err != nil {
				return hp, false
			}
			if i == 0 {
				hp.Before = p
			} else {
				hp.After = p
			}
		}
		return hp, true
	}
	for _, name := range newNames {
		if !slices.Contains(oldNames, name) {
			continue
		}
		o, okO := old.PhaseNamed(name)
		n, okN := new.PhaseNamed(name)
		if !okO || !okN || o.Requests <= 0 || n.Requests <= 0 {
			continue
		}
		ho, ok1 := read(oldDir, name)
		hn, ok2 := read(newDir, name)
		if !ok1 || !ok2 {
			continue
		}
		op, np = append(op, ho), append(np, hn)
		oreq, nreq = oreq+o.Requests, nreq+n.Requests
	}
	if len(op) == 0 {
		return nil
	}
	b, err := profiles.AllocLayerRounds(op, np, oreq, nreq, l)
	if err != nil {
		return nil
	}
	c := &AllocChange{Rounds: len(op), TotalChangeBytesPerReq: b.TotalExtraBytesPerReq, Layers: []AllocLayerChange{}}
	for _, x := range b.Layers {
		c.Layers = append(c.Layers, AllocLayerChange{Layer: x.Layer, OldBytesPerReq: x.RESTBytesPerReq, NewBytesPerReq: x.GraphQLBytesPerReq, ChangeBytes: x.ExtraBytesPerReq})
	}
	return c
}

// cells are one allocation change row's old, new and change.
func (c AllocLayerChange) cells() [3]string {
	change := termtext.Bytes(c.ChangeBytes)
	if c.ChangeBytes > 0 {
		change = "+" + change
	}
	return [3]string{termtext.Bytes(c.OldBytesPerReq), termtext.Bytes(c.NewBytesPerReq), change}
}

// Attach puts the attribution into the comparison (c.Attribution) and,
// on each of its phase's CPU rows that did not pass, says where the change
// came from; with none (why its reason), a CPU row that did not pass gets
// a note saying why there is no attribution.
func (c *Comparison) Attach(a *ChangeAttribution, why string) {
	c.Attribution = a
	noted := false
	for i := range c.Rows {
		r := &c.Rows[i]
		if !r.Gated || r.Pass {
			continue
		}
		if r.Metric == metricAlloc {
			if a != nil && a.Phase == r.Phase {
				if w := a.WhereAlloc(); w != "" {
					r.Reason = strings.TrimPrefix(r.Reason+"; where: "+w, "; ")
				}
			}
			continue
		}
		if r.Metric != metricCPU && r.Metric != MetricCPUSeconds {
			continue
		}
		switch {
		case a != nil && a.Phase == r.Phase && a.Rounds > 0:
			if w := a.Where(); w != "" {
				r.Reason = strings.TrimPrefix(r.Reason+"; where: "+w, "; ")
			}
		case why != "" && !noted:
			// No CPU profiles on both sides (an attribution of the
			// allocation alone has no rounds of them).
			c.Notes = append(c.Notes, fmt.Sprintf("No attribution of %s's CPU change by layer: %s.", r.Phase, why))
			noted = true
		}
	}
}

// WhereAlloc words the allocation change for a failing allocation row:
// the layer whose allocation per request grew most, and by how much
// ("execute +256.0 KiB"); "" without a layer that grew.
func (a *ChangeAttribution) WhereAlloc() string {
	if a == nil || a.Alloc == nil {
		return ""
	}
	var best *AllocLayerChange
	for i := range a.Alloc.Layers {
		c := &a.Alloc.Layers[i]
		if c.ChangeBytes > 0 && (best == nil || c.ChangeBytes > best.ChangeBytes) {
			best = c
		}
	}
	if best == nil {
		return ""
	}
	return fmt.Sprintf("%s +%s a request (heap profiles)", best.Layer, termtext.Bytes(best.ChangeBytes))
}

// Where words the attribution for a failing or inconclusive CPU row: the
// layer that grew most beyond noise with its interval, and the functions
// in it that grew most ("execute +21.8 µs [+19.0, +24.6]:
// main.burn +20.9 µs"); "" when no layer grew beyond noise.
func (a *ChangeAttribution) Where() string {
	if a == nil {
		return ""
	}
	var best *LayerChange
	for i := range a.Layers {
		c := &a.Layers[i]
		if c.ChangeInterval.Low > 0 && (best == nil || c.ChangeMicros > best.ChangeMicros) {
			best = c
		}
	}
	if best == nil {
		return ""
	}
	s := fmt.Sprintf("%s %+.1f µs [%+.1f, %+.1f]", best.Layer, best.ChangeMicros, best.ChangeInterval.Low, best.ChangeInterval.High)
	var fns []string
	for _, f := range a.Functions {
		if !f.WithinNoise && len(fns) < 3 {
			fns = append(fns, fmt.Sprintf("%s %+.1f µs", f.Function, f.ChangeMicros))
		}
	}
	if len(fns) > 0 {
		s += ": " + strings.Join(fns, ", ")
	}
	return s
}

// heading words what the attribution tables show.
func (a *ChangeAttribution) heading() string {
	if a.Rounds == 0 {
		return fmt.Sprintf("Where %s's cost per request changed (new − old): CPU not attributed (no round has a CPU profile with its request count in both runs); allocation by layer from the heap profiles", a.Phase)
	}
	explained := "not measured (no positive change)"
	if a.ExplainedPercent != nil {
		explained = fmt.Sprintf("%.0f %%", *a.ExplainedPercent)
	}
	return fmt.Sprintf("Where %s's CPU per request changed (new − old, from both builds' CPU profiles over %d rounds: %d and %d samples, %d and %d requests): %+.1f µs in all, named layers explain %s",
		a.Phase, a.Rounds, a.OldSamples, a.NewSamples, a.OldRequests, a.NewRequests, a.TotalChangeMicrosPerReq, explained)
}

// layerCells are one layer row's cells: old, new, change, its interval and
// whether it is beyond noise.
func (c LayerChange) cells() []string {
	noise := "within noise"
	if c.Beyond {
		noise = "beyond noise"
	}
	return []string{c.Layer, fmt.Sprintf("%.1f", c.OldMicrosPerReq), fmt.Sprintf("%.1f", c.NewMicrosPerReq),
		fmt.Sprintf("%+.1f", c.ChangeMicros), fmt.Sprintf("[%+.1f, %+.1f]", c.ChangeInterval.Low, c.ChangeInterval.High), noise}
}

func (f FunctionChange) cells() []string {
	noise := "beyond noise"
	if f.WithinNoise {
		noise = "within noise"
	}
	return []string{f.Function, fmt.Sprintf("%.2f", f.OldMicrosPerReq), fmt.Sprintf("%.2f", f.NewMicrosPerReq), fmt.Sprintf("%+.2f", f.ChangeMicros), noise}
}

// table writes the attribution for a terminal: by layer, then the
// functions that grew.
func (a *ChangeAttribution) table(w io.Writer) error {
	fmt.Fprintf(w, "\n%s:\n", a.heading())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if a.Rounds > 0 {
		fmt.Fprintln(tw, "Layer\tOld µs/req\tNew µs/req\tChange µs\t±2σ\t")
	}
	for _, c := range a.Layers {
		fmt.Fprintln(tw, strings.Join(c.cells(), "\t"))
	}
	if len(a.Functions) > 0 {
		fmt.Fprintln(tw, "\t\t\t\t\t")
		fmt.Fprintln(tw, "Function (flat)\tOld µs/req\tNew µs/req\tChange µs\t\t")
		for _, f := range a.Functions {
			c := f.cells()
			fmt.Fprintln(tw, strings.Join([]string{c[0], c[1], c[2], c[3], "", c[4]}, "\t"))
		}
	}
	if al := a.Alloc; al != nil {
		fmt.Fprintln(tw, "\t\t\t\t\t")
		fmt.Fprintf(tw, "Allocation (heap profiles, %d rounds)\tOld B/req\tNew B/req\tChange\t\t\n", al.Rounds)
		for _, l := range al.Layers {
			c := l.cells()
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\t\n", l.Layer, c[0], c[1], c[2])
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("cannot write the attribution: %w", err)
	}
	_, err := fmt.Fprintln(w)
	return err
}

// markdown renders the attribution as two collapsed tables.
func (a *ChangeAttribution) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<details><summary>%s</summary>\n\n", mdText(a.heading()))
	if len(a.Layers) > 0 {
		b.WriteString("| Layer | Old µs/req | New µs/req | Change µs | ±2σ | |\n|---|---:|---:|---:|---:|---|\n")
	}
	for _, c := range a.Layers {
		b.WriteString(mdRow(mdTexts(c.cells())...))
	}
	if len(a.Functions) > 0 {
		b.WriteString("\n| Function (flat) | Old µs/req | New µs/req | Change µs | |\n|---|---:|---:|---:|---|\n")
		for _, f := range a.Functions {
			b.WriteString(mdRow(mdTexts(f.cells())...))
		}
	}
	if al := a.Alloc; al != nil {
		fmt.Fprintf(&b, "\n| Allocation by layer (heap profiles, %d rounds) | Old per request | New per request | Change |\n|---|---:|---:|---:|\n", al.Rounds)
		for _, l := range al.Layers {
			c := l.cells()
			b.WriteString(mdRow(mdTexts([]string{l.Layer, c[0], c[1], c[2]})...))
		}
	}
	b.WriteString("\n</details>\n\n")
	return b.String()
}

// AllocLayersOf converts an allocation breakdown over rounds into the
// report's table; NaN shares become null.
func AllocLayersOf(b profiles.AllocLayerBreakdown, rounds int) *AllocLayers {
	orNull := func(v float64) *float64 {
		if math.IsNaN(v) {
			return nil
		}
		return &v
	}
	out := &AllocLayers{TotalExtraBytesPerReq: b.TotalExtraBytesPerReq, ExplainedPercent: orNull(b.ExplainedPercent), Rounds: rounds, Layers: []AllocLayer{}}
	for _, c := range b.Layers {
		out.Layers = append(out.Layers, AllocLayer{Layer: c.Layer, RESTBytesPerReq: c.RESTBytesPerReq,
			GraphQLBytesPerReq: c.GraphQLBytesPerReq, ExtraBytesPerReq: c.ExtraBytesPerReq, SharePercent: orNull(c.SharePercent)})
	}
	return out
}
