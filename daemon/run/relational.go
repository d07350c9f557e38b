package run

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/internal/relational/relgraph"
	"github.com/soakd/soakd/internal/relational/scenario"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/workloads"
)

// seed000Query tells which of seed 000's queries an operation sends, and
// by which strategy: a GraphQL operation posting an Operations document to
// /graphql/<strategy> (graphql.path), a REST one getting its embedded path,
// or one following its chatty steps. It is read from what the operation
// sends, not from its name, so an operation a config file defines counts
// as soon as it sends the same request.
func seed000Query(d workloads.OperationDef, ops []relational.Operation) (relational.Operation, string, bool) {
	for _, op := range ops {
		switch {
		case d.GraphQL != nil && d.GraphQL.Document == op.GraphQL && (d.GraphQL.Transport == "" || d.GraphQL.Transport == workloads.TransportPost):
			for _, s := range relgraph.Strategies() {
				if d.GraphQL.Path == scenario.GraphQLPath(s) {
					return op, string(s), true
				}
			}
		case d.REST != nil && (d.REST.Method == "" || d.REST.Method == "GET") && len(d.REST.Follow) == 0 && d.REST.Path == op.Embedded:
			return op, report.StrategyRESTEmbedded, true
		case d.REST != nil && (d.REST.Method == "" || d.REST.Method == "GET") && len(d.REST.Follow) > 0 && chattyMatches(d.REST, op.Chatty):
			return op, report.StrategyRESTChatty, true
		}
	}
	return relational.Operation{}, "", false
}

// chattyMatches reports whether r calls what steps do: the first step's
// path, then each later one from the same call with the same id field.
func chattyMatches(r *workloads.RESTDef, steps []relational.ChattyStep) bool {
	if len(steps) != len(r.Follow)+1 || r.Path != steps[0].Path {
		return false
	}
	for i, f := range r.Follow {
		s := steps[i+1]
		if f.Path != s.Path || f.From != s.From || f.IDField != s.IDField {
			return false
		}
	}
	return true
}

// seed000Section gathers the report's Seed 000 section from the phases
// that ran seed 000's queries (seed000Query over the configured
// operations); nil when none did.
func seed000Section(defs map[workloads.Operation]workloads.OperationDef, phases []report.Phase) *report.Seed000 {
	ops := relational.Operations()
	s := &report.Seed000{Rows: []report.Seed000Row{}, Phases: []report.Seed000Phase{}, Published: relational.PublishedResults()}
	for _, p := range phases {
		sp := report.Seed000Phase{Phase: p.Name, Operations: []string{}}
		var strategies []string
		for _, g := range p.Operations {
			op, strategy, ok := seed000Query(defs[workloads.Operation(g.Operation)], ops)
			if !ok {
				continue
			}
			row := report.Seed000Row{Operation: op.Name, Shape: op.Shape, X: op.X, Strategy: strategy, Phase: p.Name, ConfigOperation: g.Operation,
				Users: g.Users, Requests: g.Requests, Errors: g.Errors, LatencyMs: g.LatencyMs}
			if p.DurationSeconds > 0 {
				row.RPS = float64(g.Requests) / p.DurationSeconds
			}
			s.Rows = append(s.Rows, row)
			sp.Operations = append(sp.Operations, op.Name)
			if !slices.Contains(strategies, strategy) {
				strategies = append(strategies, strategy)
			}
		}
		if len(sp.Operations) > 0 {
			sp.Strategy = strings.Join(strategies, "+")
			s.Phases = append(s.Phases, sp)
		}
	}
	if len(s.Rows) == 0 {
		return nil
	}
	return s
}

// databaseFigures is a phase's database work from two readings of the
// target's relational tally, before and after the phase's driver ran, per
// request the driver completed (requests): a chatty operation's calls
// count as one request, and calls_per_request says how many HTTP requests
// each was. errBefore or errAfter make every figure not measured.
func databaseFigures(before, after map[string]relational.Totals, errBefore, errAfter error, requests int64) *report.Database {
	d := &report.Database{Endpoints: []string{}}
	if err := errors.Join(errBefore, errAfter); err != nil {
		d.NotMeasured = "cannot read the target's relational tally: " + err.Error()
		return d
	}
	for _, ep := range slices.Sorted(maps.Keys(after)) {
		a, b := after[ep], before[ep]
		if a.Requests == b.Requests {
			continue
		}
		d.Endpoints = append(d.Endpoints, ep)
		d.HTTPRequests += a.Requests - b.Requests
		d.Queries += a.Queries - b.Queries
		d.Rows += a.Rows - b.Rows
		d.Seconds += (a.Time - b.Time).Seconds()
	}
	switch {
	case requests <= 0:
		d.NotMeasured = "the phase completed no request"
	case d.HTTPRequests == 0:
		d.NotMeasured = "the phase sent no request to the relational scenario's endpoints"
	default:
		n := float64(requests)
		d.CallsPerRequest = float64(d.HTTPRequests) / n
		d.QueriesPerRequest = float64(d.Queries) / n
		d.RowsPerRequest = float64(d.Rows) / n
		d.MsPerRequest = d.Seconds * 1000 / n
	}
	return d
}
