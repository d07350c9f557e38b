// Package relgraph is the relational scenario's GraphQL server (seed 000's
// schema, schema.graphqls), in three resolution strategies served side by
// side so that one run compares them:
//
//   - Naive: one resolver per field, each running its own query: the root
//     list costs one query and every object under it one more per list
//     field (1 + N + N×M: the N+1 problem).
//   - Batched: the same resolvers load through per-request data loaders
//     (github.com/vikstrous/dataloadgen), which gather the keys a level of
//     the response asks for and run one query per level.
//   - Joined: the root resolver plans the whole response from the
//     selection set (graphql.CollectFields) and loads it in one SQL
//     statement (relational.Store.Join); the field resolvers under it read
//     what was loaded.
//
// Every strategy returns the same JSON for the same query.
package relgraph
