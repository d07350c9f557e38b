package profiles

import (
	"encoding/json"
	"maps"
	"slices"
)

// notMeasuredFields gives, for each key of Summary.NotMeasured, the JSON
// fields derived from that figure: MarshalJSON writes them as null.
var notMeasuredFields = map[string][]string{
	"cpu_seconds": {"cpu_seconds", "cpu_machine_percent", "cpu_core_percent"},
	// A service's replicas (target.kind kubernetes) without CPU limits:
	// their CPU is measured, its share of "the machine" is not.
	"cpu_machine_percent": {"cpu_machine_percent"},
	"gc_percent":          {"gc_percent"},
	"gc_cycles":           {"gc_cycles", "gc_interval_mean_seconds", "gc_interval_max_seconds"},
	"gc_forced_cycles":    {"gc_forced_cycles", "gc_automatic_cycles"},
	"gc_pauses":           {"gc_pauses"},
	"gc_pause_p50_ms":     {"gc_pause_p50_ms"},
	"gc_pause_p99_ms":     {"gc_pause_p99_ms"},
	"gc_pause_max_ms":     {"gc_pause_max_ms"},
	"alloc_bytes":         {"alloc_bytes", "alloc_bytes_per_second"},
	"alloc_objects":       {"alloc_objects", "alloc_objects_per_second"},
	"heap_live_bytes":     {"heap_live_bytes_max", "heap_live_bytes_last"},
	"heap_goal_bytes":     {"heap_goal_bytes_max"},
	"heap_objects":        {"heap_objects_last"},
	"rss_bytes":           {"rss_bytes_max"},
	"goroutines":          {"goroutines_max"},
	"fds":                 {"fds_max"},
	"threads":             {"threads_max"},
}

// NullableFields lists every Summary field MarshalJSON may write as null
// (for the schema generator): the fields of all NotMeasured keys.
func NullableFields() []string {
	var out []string
	for _, fs := range notMeasuredFields {
		out = append(out, fs...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// summaryFields is Summary without its methods.
type summaryFields Summary

// MarshalJSON writes the fields of a figure named in NotMeasured as null:
// a figure that was not measured is absent, never a 0 beside real ones.
func (s Summary) MarshalJSON() ([]byte, error) {
	var fields []string
	for _, k := range slices.Sorted(maps.Keys(s.NotMeasured)) {
		fields = append(fields, notMeasuredFields[k]...)
	}
	return MarshalWithNulls(summaryFields(s), fields)
}

// MarshalWithNulls marshals v (a struct), writes each of the named JSON
// fields present in it as null and leaves out those named in omit.
func MarshalWithNulls(v any, fields []string, omit ...string) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(fields)+len(omit) == 0 {
		return b, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, f := range fields {
		if _, ok := m[f]; ok {
			m[f] = json.RawMessage("null")
		}
	}
	for _, f := range omit {
		delete(m, f)
	}
	return json.Marshal(m)
}
