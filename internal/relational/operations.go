package relational

import "strconv"

// Field is one field of an operation's expected response: its name, whether
// it is a connection (GraphQL: {"edges":[{"node":{…}}]}; REST: a list) and
// the fields selected under it. A field without Fields is a scalar.
type Field struct {
	Name       string  `json:"name"`
	Connection bool    `json:"connection,omitempty"`
	Fields     []Field `json:"fields,omitempty"`
}

// ChattyStep is one round of a chatty REST client's calls. The first step
// (From -1) is one call; every later step calls Path once per item that
// step From returned (across all its calls), with {id} replaced by the
// item's IDField, and attaches the answer to the item as Attach.
type ChattyStep struct {
	Path    string `json:"path"`
	From    int    `json:"from"`
	IDField string `json:"id_field,omitempty"`
	Attach  string `json:"attach,omitempty"`
}

// Operation is one of seed 000's query shapes at one size, as each arm
// sends it: a GraphQL document (POST it to /graphql/naive, /graphql/batched
// or /graphql/joined), the embedded REST call, and the chatty REST calls.
// Response is the GraphQL response's data shape; the REST answers hold the
// same values as full resources, connections as plain lists.
type Operation struct {
	// Name is unique, e.g. "users-completed-tasks-subtasks-250".
	Name string `json:"name"`
	// Shape is the seed's name for the query ("Nested has many").
	Shape string `json:"shape"`
	// X is the root list's limit; 0 for the projects shapes (no limit).
	X        int          `json:"x,omitempty"`
	GraphQL  string       `json:"graphql"`
	Embedded string       `json:"embedded"`
	Chatty   []ChattyStep `json:"chatty"`
	Response Field        `json:"response"`
}

// Sizes seed 000 runs its limited shapes at.
var seedX = []int{25, 250}

// Operations returns seed 000's query shapes: the five with a root limit at
// X = 25 and 250, and the five over every project, fifteen in all. The
// GraphQL documents are the seed's, with the connections it writes.
func Operations() []Operation {
	name := Field{Name: "name"}
	conn := func(n string, fs ...Field) Field { return Field{Name: n, Connection: true, Fields: fs} }
	obj := func(n string, fs ...Field) Field { return Field{Name: n, Fields: fs} }
	var ops []Operation
	for _, x := range seedX {
		xs := strconv.Itoa(x)
		lim := "?limit=" + xs
		ops = append(ops,
			Operation{
				Name: "tasks-user-" + xs, Shape: "Single belongs to", X: x,
				GraphQL:  "{ tasks(limit: " + xs + ") { user { name } } }",
				Embedded: "/api/rel/tasks" + lim + "&include=user",
				Chatty: []ChattyStep{
					{Path: "/api/rel/tasks" + lim, From: -1},
					{Path: "/api/rel/users/{id}", From: 0, IDField: "userId", Attach: "user"},
				},
				Response: obj("tasks", obj("user", name)),
			},
			Operation{
				Name: "users-tasks-" + xs, Shape: "Single has many", X: x,
				GraphQL:  "{ users(limit: " + xs + ") { tasks { edges { node { name } } } } }",
				Embedded: "/api/rel/users" + lim + "&include=tasks",
				Chatty: []ChattyStep{
					{Path: "/api/rel/users" + lim, From: -1},
					{Path: "/api/rel/users/{id}/tasks", From: 0, IDField: "id", Attach: "tasks"},
				},
				Response: obj("users", conn("tasks", name)),
			},
			Operation{
				Name: "users-completed-tasks-" + xs, Shape: "Has many with where clause", X: x,
				GraphQL:  "{ users(limit: " + xs + ") { tasks(completed: true) { edges { node { name completed } } } } }",
				Embedded: "/api/rel/users" + lim + "&include=tasks&completed=true",
				Chatty: []ChattyStep{
					{Path: "/api/rel/users" + lim, From: -1},
					{Path: "/api/rel/users/{id}/tasks?completed=true", From: 0, IDField: "id", Attach: "tasks"},
				},
				Response: obj("users", conn("tasks", name, Field{Name: "completed"})),
			},
			Operation{
				Name: "users-completed-tasks-subtasks-" + xs, Shape: "Nested has many", X: x,
				GraphQL:  "{ users(limit: " + xs + ") { tasks(completed: true) { edges { node { name subTasks { edges { node { name } } } } } } } }",
				Embedded: "/api/rel/users" + lim + "&include=tasks.subTasks&completed=true",
				Chatty: []ChattyStep{
					{Path: "/api/rel/users" + lim, From: -1},
					{Path: "/api/rel/users/{id}/tasks?completed=true", From: 0, IDField: "id", Attach: "tasks"},
					{Path: "/api/rel/tasks/{id}/subtasks", From: 1, IDField: "id", Attach: "subTasks"},
				},
				Response: obj("users", conn("tasks", name, conn("subTasks", name))),
			},
			Operation{
				Name: "users-tasks-subordinates-" + xs, Shape: "Two parallel has many", X: x,
				GraphQL:  "{ users(limit: " + xs + ") { tasks { edges { node { name } } } subordinates { edges { node { name } } } } }",
				Embedded: "/api/rel/users" + lim + "&include=tasks,subordinates",
				Chatty: []ChattyStep{
					{Path: "/api/rel/users" + lim, From: -1},
					{Path: "/api/rel/users/{id}/tasks", From: 0, IDField: "id", Attach: "tasks"},
					{Path: "/api/rel/users/{id}/subordinates", From: 0, IDField: "id", Attach: "subordinates"},
				},
				Response: obj("users", conn("tasks", name), conn("subordinates", name)),
			},
		)
	}
	projects := func(opName, shape, gqlUsers, restQuery, chattyUsers string, users Field, tasksStep string) Operation {
		op := Operation{
			Name: opName, Shape: shape,
			GraphQL:  "{ projects { " + gqlUsers + " } }",
			Embedded: "/api/rel/projects?" + restQuery,
			Chatty: []ChattyStep{
				{Path: "/api/rel/projects", From: -1},
				{Path: "/api/rel/projects/{id}/users" + chattyUsers, From: 0, IDField: "id", Attach: "users"},
			},
			Response: obj("projects", users),
		}
		if tasksStep != "" {
			op.Chatty = append(op.Chatty, ChattyStep{Path: tasksStep, From: 1, IDField: "id", Attach: "tasks"})
		}
		return op
	}
	ops = append(ops,
		projects("projects-users", "Single belongs to many",
			"users { edges { node { name } } }", "include=users", "", conn("users", name), ""),
		projects("projects-users-first15", "Single belongs to many with limit",
			"users(first: 15) { edges { node { name } } }", "include=users&first=15", "?first=15", conn("users", name), ""),
		projects("projects-users-tasks", "Belongs to many with nested has many",
			"users { edges { node { name tasks { edges { node { name } } } } } }", "include=users.tasks", "",
			conn("users", name, conn("tasks", name)), "/api/rel/users/{id}/tasks"),
		projects("projects-users-first15-tasks", "Belongs to many with nested has many and with limit",
			"users(first: 15) { edges { node { name tasks { edges { node { name } } } } } }", "include=users.tasks&first=15", "?first=15",
			conn("users", name, conn("tasks", name)), "/api/rel/users/{id}/tasks"),
		projects("projects-users-completed-tasks", "Belongs to many with nested has many and where clause",
			"users { edges { node { name tasks(completed: true) { edges { node { name } } } } } }", "include=users.tasks&completed=true", "",
			conn("users", name, conn("tasks", name)), "/api/rel/users/{id}/tasks?completed=true"),
	)
	return ops
}
