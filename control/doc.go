// Package control is the experiment's control group: a plain REST API over
// the same donut.Service as the GraphQL arm, the baseline that GraphQL's
// overhead is measured against (seed 002: "acts as a control to compare the
// baseline web api against the overhead of the graphql library").
//
// It is NOT a control plane: it neither steers nor configures anything in
// soakd; it only serves donuts.
//
// Its responses deliberately mimic the GraphQL responses' shape and keys
// ({"data":{"donut":{...}}} and {"data":{"addOrUpdateDonut":{...}}}), so that
// payload size is not what differs between the two arms.
package control
