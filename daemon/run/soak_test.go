package run

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/soakd/soakd/internal/kpi"
)

// TestSoakTableSaysWhatFailed: a drift line names its figure in words
// beside the rule's name, and the verdict line names what failed the soak.
func TestSoakTableSaysWhatFailed(t *testing.T) {
	var figs []kpi.CycleFigures
	for i := range 6 {
		figs = append(figs, kpi.CycleFigures{Cycle: i + 1, HeapLiveBytes: 4e6 + 1.6e6*float64(i), RSSBytes: 1, Goroutines: 1, GCPercent: 1, CPUMicrosPerRequest: 1})
	}
	r := &SoakReport{Soak: "s", Profile: "p", Verdict: kpi.OutcomeFail,
		Drift: kpi.Drift(figs, kpi.DriftLimits{WarmupCycles: 1, BaselineCycles: 1, SustainedCycles: 3, HeapLiveRatio: 1.1, RSSRatio: 1.2, CPUPerRequestRatio: 1.2, GoroutinesIncrease: 5, GCPercentIncreasePoints: 1})}
	for _, f := range figs {
		r.Cycles = append(r.Cycles, Cycle{CycleFigures: f, Verdict: kpi.OutcomePass, Checks: kpi.OutcomePass})
	}
	var b bytes.Buffer
	r.Table(&b)
	out := b.String()
	for _, want := range []string{"drift heap_live_drift        FAIL  Live heap after GC: baseline 5.341 MiB", "+1.526 MiB per cycle", "soak verdict: fail (failed: drift heap_live_drift)", "(REST not measured)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the soak table lacks %q:\n%s", want, out)
		}
	}
}

// TestCycleWritesNotMeasuredAsNull: a cycle figure named in not_measured is
// null in soak.json (it read "gc_percent": 0 beside the reason), and a
// measured one keeps its value.
func TestCycleWritesNotMeasuredAsNull(t *testing.T) {
	c := Cycle{CycleFigures: kpi.CycleFigures{Cycle: 3, HeapLiveBytes: 4 << 20, GCPercent: 0,
		NotMeasured: map[string]string{"gc_percent": "no GC cycle ended in the window"}}, Verdict: kpi.OutcomePass}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if v, ok := m["gc_percent"]; !ok || v != nil {
		t.Errorf("gc_percent not measured: %v (present %v), want null", v, ok)
	}
	if m["heap_live_bytes"] != float64(4<<20) || m["cycle"] != float64(3) || m["verdict"] != "pass" {
		t.Errorf("measured fields changed: %s", b)
	}
}

// TestCycleLine: a finished cycle's line gives its verdict, the figures
// the drift rules read ("not measured" where it was not, never 0) and the
// drift rules that do not pass so far.
func TestCycleLine(t *testing.T) {
	c := Cycle{CycleFigures: kpi.CycleFigures{Cycle: 3, HeapLiveBytes: 12.5 * (1 << 20), GCPercent: 1.234, CPUMicrosPerRequest: 150.26,
		NotMeasured: map[string]string{"gc_percent": "no GC cycle ended"}}, Verdict: kpi.OutcomeInconclusive}
	got := cycleLine(c, []kpi.DriftRule{{Name: "heap_live", Outcome: kpi.OutcomePass}, {Name: "rss", Outcome: kpi.OutcomeInconclusive}})
	for _, want := range []string{"◆ cycle 3  INCONCLUSIVE", "live heap 12.5 MiB", "gc not measured", "cpu 150.3 µs/req", "drift: rss INCONCLUSIVE"} {
		if !strings.Contains(got, want) {
			t.Errorf("line %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "heap_live") {
		t.Errorf("line %q names a passing rule", got)
	}
	if got := cycleLine(Cycle{CycleFigures: kpi.CycleFigures{Cycle: 1}, Verdict: kpi.OutcomePass}, nil); !strings.Contains(got, "drift: not judged yet") {
		t.Errorf("first cycle: %q", got)
	}
}
