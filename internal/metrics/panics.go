package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// GraphQLPanics exposes the GraphQL arm's recovered resolver panics as the
// counter soakd_graphql_resolver_panics_total, read from panics (such as
// graph.Handler.Panics) at each scrape. Each panic was answered with a
// GraphQL "internal server error" and the server kept serving; any increase
// is a bug in the target. A later call replaces the earlier function (a new
// target's handler). It panics if the registry refuses the counter for any
// other reason, as prometheus.MustRegister does.
func (m *Metrics) GraphQLPanics(panics func() uint64) {
	c := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Namespace: "soakd",
		Name:      "graphql_resolver_panics_total",
		Help:      "Panics recovered in GraphQL resolvers since the target started; each request got a GraphQL error and the server kept serving.",
	}, func() float64 { return float64(panics()) })
	m.mu.Lock()
	defer m.mu.Unlock()
	err := m.reg.Register(c)
	if err == nil {
		return
	}
	are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err)
	if !ok {
		panic(err)
	}
	m.reg.Unregister(are.ExistingCollector)
	m.reg.MustRegister(c)
}
