package metrics

import (
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestGraphQLPanics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg)
	const name = "soakd_graphql_resolver_panics_total"
	if got := gather(t, reg, name); len(got) != 0 {
		t.Fatalf("before GraphQLPanics: got %v, want no series", got)
	}

	var first atomic.Uint64
	m.GraphQLPanics(first.Load)
	f := func(want float64) {
		t.Helper()
		if got := mustValue(t, reg, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	f(0)
	first.Add(3)
	f(3) // read at each scrape

	// A second target's handler replaces the first, without a duplicate
	// registration panic.
	var second atomic.Uint64
	second.Add(1)
	m.GraphQLPanics(second.Load)
	f(1)
	if got := gather(t, reg, name); len(got) != 1 {
		t.Errorf("got %d series, want 1", len(got))
	}
}
