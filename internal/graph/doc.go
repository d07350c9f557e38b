// Package graph is the GraphQL arm of the experiment: a gqlgen server over the
// shared donut.Service, with query, mutation and subscription modelled on the
// GraphQL ASP.NET load tests (seed 002) and seed 003's add query.
//
// schema.graphqls is the schema; generated.go is written by gqlgen (run
// `go generate ./graph/...`, configured by gqlgen.yml) and never edited by
// hand; resolver.go holds the hand-written resolvers and handler.go the HTTP
// and websocket wiring.
package graph
