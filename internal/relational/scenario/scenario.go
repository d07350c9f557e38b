// Package scenario serves the relational scenario (seed 000) as one HTTP
// handler: the GraphQL schema in each resolution strategy and the REST
// twin, over one relational.Store, each request tallied (queries, rows,
// database time) into relational.Metrics under its endpoint.
package scenario

import (
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/internal/relational/relgraph"
	"github.com/soakd/soakd/internal/relational/relrest"
)

// GraphQLPath is the path of strategy s's GraphQL endpoint, e.g.
// /graphql/batched.
func GraphQLPath(s relgraph.Strategy) string { return "/graphql/" + string(s) }

// Endpoint labels of relational.Metrics: "graphql_<strategy>" and "rest".
const EndpointREST = "rest"

// GraphQLEndpoint is strategy s's endpoint label.
func GraphQLEndpoint(s relgraph.Strategy) string { return "graphql_" + string(s) }

// Options configure NewHandler; the zero value is usable.
type Options struct {
	// Timeout bounds each request's database work (relational.Instrument);
	// zero: none.
	Timeout time.Duration
	// BatchWait is the batched strategy's loader wait (relgraph.Options).
	BatchWait time.Duration
	// Metrics receives each request's tally; nil: none.
	Metrics *relational.Metrics
	Logger  *zap.Logger
}

// NewHandler returns a handler serving GraphQLPath(s) for every strategy
// and the REST twin under relrest.Prefix. Register it on a ServeMux for
// those paths (Patterns lists them).
func NewHandler(store *relational.Store, o Options) (http.Handler, error) {
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	mux := http.NewServeMux()
	for _, s := range relgraph.Strategies() {
		h, err := relgraph.NewHandler(store, relgraph.Options{Strategy: s, BatchWait: o.BatchWait, Logger: o.Logger.Named("graphql")})
		if err != nil {
			return nil, fmt.Errorf("cannot build the %s GraphQL handler: %w", s, err)
		}
		mux.Handle(GraphQLPath(s), relational.Instrument(GraphQLEndpoint(s), o.Metrics, o.Timeout, h))
	}
	mux.Handle(relrest.Prefix, relational.Instrument(EndpointREST, o.Metrics, o.Timeout, relrest.NewHandler(store, o.Logger.Named("rest"))))
	return mux, nil
}

// Patterns are the ServeMux patterns NewHandler's handler answers.
func Patterns() []string {
	var ps []string
	for _, s := range relgraph.Strategies() {
		ps = append(ps, GraphQLPath(s))
	}
	return append(ps, relrest.Prefix)
}
