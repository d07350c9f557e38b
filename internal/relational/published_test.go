package relational

import "testing"

// TestPublishedResults: every published row names one of Operations and a
// seed strategy, each operation has both, and each row's figures are in
// order (p50 ≤ p90 ≤ p99 ≤ max), which a transcription slip would break.
func TestPublishedResults(t *testing.T) {
	ops := map[string]bool{}
	for _, op := range Operations() {
		ops[op.Name] = true
	}
	seen := map[string]int{}
	for _, p := range PublishedResults() {
		if !ops[p.Operation] || (p.Strategy != PublishedIncludes && p.Strategy != PublishedBatching) {
			t.Errorf("row %+v: unknown operation or strategy", p)
		}
		if !(p.RPS > 0 && p.P50Ms <= p.P90Ms && p.P90Ms <= p.P99Ms && p.P99Ms <= p.MaxMs && p.MeanMs <= p.MaxMs) {
			t.Errorf("row %+v: figures out of order", p)
		}
		seen[p.Operation]++
	}
	if len(seen) != 14 || seen["tasks-user-25"] != 0 {
		t.Errorf("operations published: %v; want all 15 but tasks-user-25", seen)
	}
	for op, n := range seen {
		if n != 2 {
			t.Errorf("%s: %d rows, want includes and batching", op, n)
		}
	}
}
