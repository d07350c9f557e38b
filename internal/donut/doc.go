// Package donut is the domain shared by both arms of the experiment: a tiny
// in-memory store of donuts and a broker that fans update events out to
// subscribers.
//
// Both the GraphQL server (package graph) and the REST control group (package
// control) call the same [Service], so the domain work per request is identical
// and any measured difference comes from the API layer alone. There is no
// database on purpose: the experiment measures framework overhead (parse,
// validate, execute, serialise), not data access.
package donut
