// Package relational is the data side of soakd's second built-in scenario,
// seed 000 (graphql-sequelize's benchmarks): Projects, Users and Tasks with
// subtasks in a real SQL database, where the cost GraphQL servers actually
// fight lives, nested lists and the N+1 queries behind them.
//
// It generates the seed's data deterministically (Generate), loads it into
// an embedded SQLite database (the default, pure Go through
// modernc.org/sqlite, nothing to install) or a PostgreSQL database (through
// pgx) (Open), and answers the queries the GraphQL strategies and the REST
// twin need: one query per parent (the naive resolvers' N+1), one per level
// for a set of parents (batching and REST includes), and one planned join
// per request (Plan, Store.Join). Every query is timed and counted, per
// request (Tally) and in Prometheus counters (Metrics), so a report can give
// queries, rows and database time per request from the driver's own timing.
//
// Operations lists the seed's query shapes as GraphQL documents and REST
// paths, with the response shape each returns.
package relational
