package workloads

import (
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// The built-in target's operations, by the names config.yaml gives them.
// The engine knows none of them: tests drive it with config.yaml's own
// definitions (donutOps) against a fake of the built-in target.
const (
	RESTGet         Operation = "rest-get"
	RESTPut         Operation = "rest-put"
	GraphQLQuery    Operation = "graphql-query"
	GraphQLMutation Operation = "graphql-mutation"
	DonutUpdates    Operation = "donut-updates"
)

// The documents config.yaml's GraphQL operations send, which the fake target
// recognises.
const (
	queryDocument    = "query Donut($id: ID!) { donut(id: $id) { id name flavor } }"
	mutationDocument = "mutation UpdateDonut($donut: DonutInput!) { addOrUpdateDonut(donut: $donut) { id name flavor } }"
)

// donutJSON is a donut as the built-in target returns it.
type donutJSON struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Flavor string `json:"flavor"`
}

// donutOps returns the operations of the repository's config.yaml, with the
// readers' id range narrowed to [1, donuts] (the fake target's seeded ids).
func donutOps(donuts int) map[Operation]OperationDef {
	b, err := os.ReadFile("../config.yaml")
	if err != nil {
		panic(fmt.Sprintf("cannot read config.yaml: %v", err))
	}
	var doc struct {
		Operations map[Operation]OperationDef `yaml:"operations"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		panic(fmt.Sprintf("cannot decode config.yaml's operations: %v", err))
	}
	for _, name := range []Operation{RESTGet, GraphQLQuery} {
		op := doc.Operations[name]
		id := op.Data["id"]
		id.Range = []int64{1, int64(donuts)}
		op.Data["id"] = id
	}
	return doc.Operations
}
