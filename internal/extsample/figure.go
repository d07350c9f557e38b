package extsample

import (
	"fmt"
	"strconv"
)

// Figure is one value with its provenance. When Measured is false, Value is 0 and means nothing: Reason says
// why the figure is missing. Source and Definition are set either way, so a report can say what would have
// been measured and from where.
type Figure struct {
	// Name identifies the figure ("gc_cycles", "rss_bytes", "goroutines", …).
	Name string `json:"name"`
	// Value is the figure in Unit; meaningful only when Measured.
	Value float64 `json:"value"`
	// Unit is the unit of Value: "seconds", "bytes", "count", "percent", "bytes/s", …
	Unit string `json:"unit"`
	// Measured is false when the target did not give this figure; see Reason.
	Measured bool `json:"measured"`
	// Source says where the value came from: "os: gopsutil, pid 1234" or "series go_gc_heap_live_bytes".
	Source string `json:"source"`
	// Definition says in one line what the value is.
	Definition string `json:"definition"`
	// Reason says why the figure is not measured ("" when it is).
	Reason string `json:"reason,omitempty"`
}

// String renders the figure for people: "gc_cycles = 12 count (series go_gc_cycles_total_gc_cycles_total)"
// or "alloc_bytes not measured: <reason>".
func (f Figure) String() string {
	if !f.Measured {
		return f.Name + " not measured: " + f.Reason
	}
	return fmt.Sprintf("%s = %s %s (%s)", f.Name, formatFloat(f.Value), f.Unit, f.Source)
}

// measured returns a measured figure.
func measured(name, unit, source, def string, v float64) Figure {
	return Figure{Name: name, Value: v, Unit: unit, Measured: true, Source: source, Definition: def}
}

// notMeasured returns a figure that is not measured for reason.
func notMeasured(name, unit, source, def, reason string) Figure {
	return Figure{Name: name, Unit: unit, Source: source, Definition: def, Reason: reason}
}

// withReason returns f as not measured for reason, keeping its name, unit, source and definition.
func (f Figure) withReason(reason string) Figure {
	f.Value, f.Measured, f.Reason = 0, false, reason
	return f
}

// KindFigures is the GC activity of one kind of collection: a generation (.NET), a collector (JVM), a kind of
// GC event (Node) or a trigger (Go: automatic, forced).
type KindFigures struct {
	// Kind is the label value that names the kind as the target reports it ("0", "G1 Young Generation",
	// "minor", "forced", …).
	Kind string `json:"kind"`
	// Cycles counts collections of this kind (cumulative in a Sample, a difference in a Window).
	Cycles Figure `json:"cycles"`
	// Seconds is the time spent in collections of this kind (cumulative in a Sample, a difference in a Window).
	Seconds Figure `json:"seconds"`
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
