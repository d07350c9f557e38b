package relgraph

import (
	"fmt"
	"io"
	"strconv"

	"github.com/99designs/gqlgen/graphql"

	"github.com/soakd/soakd/internal/relational"
)

// joinRef points an object loaded by the joined strategy at the request's
// loaded rows and at the plan node it came from, so its fields' resolvers
// read their children from there instead of querying.
type joinRef struct {
	joined *relational.Joined
	node   *relational.PlanNode
}

// Task is a task as GraphQL serves it.
type Task struct {
	relational.Task
	j *joinRef
}

// User is a user as GraphQL serves it.
type User struct {
	relational.User
	j *joinRef
}

// Project is a project as GraphQL serves it.
type Project struct {
	relational.Project
	j *joinRef
}

// TaskConnection is a list of tasks, Relay style.
type TaskConnection struct{ Edges []TaskEdge }

// TaskEdge holds one task of a TaskConnection.
type TaskEdge struct{ Node Task }

// UserConnection is a list of users, Relay style.
type UserConnection struct{ Edges []UserEdge }

// UserEdge holds one user of a UserConnection.
type UserEdge struct{ Node User }

// MarshalID64 writes an int64 id as a GraphQL ID (a JSON string), the
// marshaller gqlgen uses for the model ID64 (gqlgen.yml).
func MarshalID64(id int64) graphql.Marshaler {
	return graphql.WriterFunc(func(w io.Writer) {
		_, _ = io.WriteString(w, `"`+strconv.FormatInt(id, 10)+`"`)
	})
}

// UnmarshalID64 reads a GraphQL ID (a string or an integer) as an int64.
func UnmarshalID64(v any) (int64, error) {
	switch x := v.(type) {
	case string:
		id, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("id %q is not an integer", x)
		}
		return id, nil
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	}
	return 0, fmt.Errorf("id must be a string or an integer (got %T)", v)
}
