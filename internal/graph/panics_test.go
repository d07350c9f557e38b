package graph

import (
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soakd/soakd/internal/metrics"
)

// TestResolverPanicCounted checks that recovered panics reach
// soakd_graphql_resolver_panics_total through metrics.GraphQLPanics, and that
// the server keeps serving between them.
func TestResolverPanicCounted(t *testing.T) {
	var fail atomic.Bool
	ts := newTestServer(t, Options{}, func(h *Handler) {
		h.resolver.testHook = func() {
			if fail.Load() {
				panic("injected")
			}
		}
	})
	reg := prometheus.NewRegistry()
	metrics.New(reg).GraphQLPanics(ts.h.Panics)
	counter := func() float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatalf("cannot gather: %v", err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "soakd_graphql_resolver_panics_total" && len(mf.GetMetric()) == 1 {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		t.Fatalf("no soakd_graphql_resolver_panics_total series")
		return 0
	}

	for i := 1; i <= 3; i++ {
		fail.Store(true)
		_, _, gr := ts.post(t, donutQuery, map[string]any{"id": "1"})
		mustError(t, gr, "internal server error")
		if got := counter(); got != float64(i) {
			t.Errorf("after panic %d: counter = %v, want %d", i, got, i)
		}
		// The same resolver works again once it stops panicking.
		fail.Store(false)
		status, _, gr := ts.post(t, donutQuery, map[string]any{"id": "1"})
		mustData(t, status, gr, `{"donut":{"id":"1","name":"donut-1","flavor":"STRAWBERRY"}}`)
	}
	if got := counter(); got != 3 {
		t.Errorf("after 3 panics and 3 good requests: counter = %v, want 3", got)
	}
}
