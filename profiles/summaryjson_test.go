package profiles

import (
	"encoding/json"
	"testing"
)

// TestSummaryNotMeasuredIsNull: a Node target's GC pause p99 and heap
// allocation bytes are not measured; report.json wrote them as 0 beside
// real figures. They are null now, and what was measured is untouched.
func TestSummaryNotMeasuredIsNull(t *testing.T) {
	s := Summary{CPUKnown: true, CPUSeconds: 1.5, RSSBytesMax: 1 << 20, NotMeasured: map[string]string{
		"gc_pause_p99_ms": "no pause histogram", "alloc_bytes": "no allocation counter",
	}}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"gc_pause_p99_ms", "alloc_bytes", "alloc_bytes_per_second"} {
		if v, ok := m[k]; !ok || v != nil {
			t.Errorf("%s = %v (present %v), want null", k, v, ok)
		}
	}
	if m["cpu_seconds"] != 1.5 || m["rss_bytes_max"] != float64(1<<20) || m["gc_pause_p50_ms"] != 0.0 {
		t.Errorf("measured figures changed: %s", b)
	}
	var back Summary
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.CPUSeconds != 1.5 || back.NotMeasured["alloc_bytes"] == "" {
		t.Errorf("round trip: %+v", back)
	}
	for k := range notMeasuredFields {
		if len(notMeasuredFields[k]) == 0 {
			t.Errorf("%s names no field", k)
		}
	}
}
