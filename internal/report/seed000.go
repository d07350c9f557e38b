package report

import (
	"fmt"
	"strings"

	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/workloads"
)

// Seed000 is the report's "Seed 000" section: seed 000's table as soakd
// measured it (each query shape at its size and strategy: throughput and
// latency), soakd's own costs per request of every phase that ran those
// queries (target CPU, allocation, GC, and the database's queries, rows
// and time), and the seed's published figures for reference, which are
// theirs (another stack, machine and database).
type Seed000 struct {
	// Rows are the measured queries, one per query, strategy and phase.
	Rows []Seed000Row `json:"rows"`
	// Phases are the phases that ran them, with the strategy they drove;
	// their per-request figures are the phases' own (phases[].per_request,
	// phases[].database).
	Phases []Seed000Phase `json:"phases"`
	// Published is seed 000's own table (graphql-sequelize, ab n = 500,
	// c = 20), for reference only.
	Published []relational.Published `json:"published"`
}

// Strategies of Seed000 rows: the GraphQL endpoint's resolution strategy,
// or the REST twin's style.
const (
	StrategyRESTEmbedded = "rest-embedded"
	StrategyRESTChatty   = "rest-chatty"
)

// Seed000Row is one query at one size and strategy, as one phase ran it.
type Seed000Row struct {
	// Operation is seed 000's query at its size (relational.Operations:
	// users-tasks-250); Shape the seed's name for it; X its root limit (0
	// for the projects shapes).
	Operation string `json:"operation"`
	Shape     string `json:"shape"`
	X         int    `json:"x,omitempty"`
	// Strategy is naive, batched, joined, rest-embedded or rest-chatty.
	Strategy string `json:"strategy"`
	// Phase and ConfigOperation are the phase and the configured
	// operation (operations: key) that sent it.
	Phase           string `json:"phase"`
	ConfigOperation string `json:"config_operation"`
	Users           int    `json:"users"`
	Requests        int64  `json:"requests"`
	Errors          int64  `json:"errors"`
	// RPS is Requests ÷ the phase's duration_seconds (ab's "requests per
	// second": n ÷ the whole test's time), requests per second.
	RPS float64 `json:"rps"`
	// LatencyMs summarises the successful requests, in milliseconds; a
	// chatty request is all its calls, from the first send to the last
	// body.
	LatencyMs workloads.Latency `json:"latency_ms"`
}

// Seed000Phase is a phase that ran seed 000's queries.
type Seed000Phase struct {
	Phase    string `json:"phase"`
	Strategy string `json:"strategy"`
	// Operations are the seed's queries it ran (one in seed-000's phases,
	// all of them mixed in relational's).
	Operations []string `json:"operations"`
}

// seed000Heading heads the section in both reports.
const seed000Heading = "Seed 000"

// seed000Table is one table of the section: a heading, an introduction,
// column heads and rows, as report.md and report.html both print it.
type seed000Table struct {
	Heading, Intro string
	Head           []string
	Rows           [][]string
}

// seed000Tables lays out the Seed 000 section; nil when the report has none.
func (r *Report) seed000Tables() []seed000Table {
	s := r.Seed000
	if s == nil || len(s.Rows) == 0 {
		return nil
	}
	ms := func(v float64) string { return fmt.Sprintf("%.1f", v) }
	measured := seed000Table{
		Heading: "Seed 000: soakd's measurement",
		Intro: "Each query at its size and strategy, as this run sent it (closed model, the users of its group at once): requests per second are the group's requests ÷ its phase's duration (ab's n ÷ time); " +
			"latencies in ms over the successful requests (a chatty request is all its calls, end to end). Strategies: naive, batched and joined are the GraphQL endpoints /graphql/naive, /graphql/batched and /graphql/joined; " +
			"rest-embedded is one REST call with ?include=; rest-chatty one call per resource.",
		Head: []string{"Query", "X", "Strategy", "Phase", "Users", "Requests", "Errors", "req/s", "mean", "p50", "p90", "p99", "max"},
	}
	for _, row := range s.Rows {
		x := "—"
		if row.X > 0 {
			x = fmt.Sprint(row.X)
		}
		l := row.LatencyMs
		measured.Rows = append(measured.Rows, []string{row.Operation, x, row.Strategy, row.Phase, fmt.Sprint(row.Users), fmt.Sprint(row.Requests), fmt.Sprint(row.Errors),
			fmt.Sprintf("%.2f", row.RPS), ms(l.Mean), ms(l.P50), ms(l.P90), ms(l.P99), ms(l.Max)})
	}
	cost := seed000Table{
		Heading: "Seed 000: cost per request",
		Intro: "What soakd adds to the seed's table, per phase: the target's CPU, heap allocation and GC per request (steady window, target rate ÷ throughput) and GC share of CPU, " +
			"and the database's work per request from the target's own tally over the whole phase (HTTP calls, SQL queries, rows returned, time in queries, pool waits included). " +
			"A phase running several queries at once gives their mix.",
		Head: []string{"Phase", "Strategy", "Queries", "CPU", "Heap allocated", "GC cycles per 10k requests", "GC %", "HTTP calls", "SQL queries", "Rows", "DB time"},
	}
	for _, sp := range s.Phases {
		p, ok := r.PhaseNamed(sp.Phase)
		if !ok {
			continue
		}
		queries := strings.Join(sp.Operations, ", ")
		if len(sp.Operations) > 3 {
			queries = fmt.Sprintf("%d queries", len(sp.Operations))
		}
		row := []string{p.Name, sp.Strategy, queries}
		if p.Resources != nil {
			pr := perRequestCells(p)
			row = append(row, pr[0], pr[1], pr[3], resourceCells(p.Resources)[1])
		} else {
			// Too short a steady window for the sampler: say so, never 0.
			why := "not measured"
			if p.ResourcesError != "" {
				why += ": " + p.ResourcesError
			}
			row = append(row, why, "—", "—", "—")
		}
		if d := p.Database; d != nil && d.NotMeasured == "" {
			row = append(row, fmt.Sprintf("%.2f", d.CallsPerRequest), fmt.Sprintf("%.2f", d.QueriesPerRequest),
				fmt.Sprintf("%.0f", d.RowsPerRequest), fmt.Sprintf("%.2f ms", d.MsPerRequest))
		} else {
			why := "not measured"
			if d != nil {
				why += ": " + d.NotMeasured
			}
			row = append(row, why, "—", "—", "—")
		}
		cost.Rows = append(cost.Rows, row)
	}
	theirs := seed000Table{
		Heading: "Seed 000: the seed's published figures (theirs, not this run's)",
		Intro: "For reference only: seed 000's own results, graphql-sequelize on Node.js with Sequelize (pool max 25), Apache Bench n = 500, c = 20, on the seed author's machine and database. " +
			"Their includes is a SQL join (soakd's joined), their batching a dataloader (soakd's batched). Mean and percentiles in ms, as ab printed them; the seed gives no figures for tasks-user-25.",
		Head: []string{"Query", "Their strategy", "req/s", "mean", "p50", "p90", "p99", "max"},
	}
	for _, p := range s.Published {
		theirs.Rows = append(theirs.Rows, []string{p.Operation, p.Strategy, fmt.Sprintf("%.2f", p.RPS),
			fmt.Sprintf("%.0f", p.MeanMs), fmt.Sprintf("%.0f", p.P50Ms), fmt.Sprintf("%.0f", p.P90Ms), fmt.Sprintf("%.0f", p.P99Ms), fmt.Sprintf("%.0f", p.MaxMs)})
	}
	return []seed000Table{measured, cost, theirs}
}

// seed000Section prints the Seed 000 section as Markdown.
func (r *Report) seed000Section(b *strings.Builder) {
	tables := r.seed000Tables()
	if tables == nil {
		return
	}
	fmt.Fprintf(b, "## %s\n\n", seed000Heading)
	for _, t := range tables {
		fmt.Fprintf(b, "### %s\n\n%s\n\n| %s |\n|---|", t.Heading, t.Intro, strings.Join(t.Head, " | "))
		for range t.Head[1:] {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		for _, row := range t.Rows {
			b.WriteString(mdRow(mdTexts(row)...))
		}
		b.WriteString("\n")
	}
}
