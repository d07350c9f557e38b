package relgraph

import (
	"context"
	"fmt"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vikstrous/dataloadgen"

	"github.com/soakd/soakd/internal/relational"
)

// Strategy is how field resolvers reach the database.
type Strategy string

// Strategies.
const (
	Naive   Strategy = "naive"
	Batched Strategy = "batched"
	Joined  Strategy = "joined"
)

// Strategies lists every strategy, in the order a comparison shows them.
func Strategies() []Strategy { return []Strategy{Naive, Batched, Joined} }

// MaxLimit is the largest limit the root lists accept: seed 000 asks for
// at most 250, and a bound keeps one request's work finite.
const MaxLimit = 1000

// resolver is the resolver root for one strategy.
type resolver struct {
	store    *relational.Store
	strategy Strategy
}

func (r *resolver) Project() ProjectResolver { return projectResolver{r} }
func (r *resolver) Query() QueryResolver     { return queryResolver{r} }
func (r *resolver) Task() TaskResolver       { return taskResolver{r} }
func (r *resolver) User() UserResolver       { return userResolver{r} }

type (
	queryResolver   struct{ *resolver }
	projectResolver struct{ *resolver }
	taskResolver    struct{ *resolver }
	userResolver    struct{ *resolver }
)

func checkLimit(limit int) error {
	if limit < 1 || limit > MaxLimit {
		return fmt.Errorf("limit must be between 1 and %d (got %d)", MaxLimit, limit)
	}
	return nil
}

// Tasks resolves Query.tasks.
func (r queryResolver) Tasks(ctx context.Context, limit int) ([]*Task, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	if r.strategy == Joined {
		j, p, err := r.join(ctx, relational.RootTasks, limit, "Task")
		if err != nil {
			return nil, err
		}
		roots := j.Roots()
		out := make([]*Task, len(roots))
		ref := &joinRef{joined: j, node: &p.Node}
		for i, row := range roots {
			out[i] = &Task{Task: row.Task(), j: ref}
		}
		return out, nil
	}
	ts, err := r.store.Tasks(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]*Task, len(ts))
	for i := range ts {
		out[i] = &Task{Task: ts[i]}
	}
	return out, nil
}

// Users resolves Query.users.
func (r queryResolver) Users(ctx context.Context, limit int) ([]*User, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	if r.strategy == Joined {
		j, p, err := r.join(ctx, relational.RootUsers, limit, "User")
		if err != nil {
			return nil, err
		}
		roots := j.Roots()
		out := make([]*User, len(roots))
		ref := &joinRef{joined: j, node: &p.Node}
		for i, row := range roots {
			out[i] = &User{User: row.User(), j: ref}
		}
		return out, nil
	}
	us, err := r.store.Users(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]*User, len(us))
	for i := range us {
		out[i] = &User{User: us[i]}
	}
	return out, nil
}

// Projects resolves Query.projects.
func (r queryResolver) Projects(ctx context.Context) ([]*Project, error) {
	if r.strategy == Joined {
		j, p, err := r.join(ctx, relational.RootProjects, 0, "Project")
		if err != nil {
			return nil, err
		}
		roots := j.Roots()
		out := make([]*Project, len(roots))
		ref := &joinRef{joined: j, node: &p.Node}
		for i, row := range roots {
			out[i] = &Project{Project: row.Project(), j: ref}
		}
		return out, nil
	}
	ps, err := r.store.Projects(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*Project, len(ps))
	for i := range ps {
		out[i] = &Project{Project: ps[i]}
	}
	return out, nil
}

// join plans the current root field's selection and loads it.
func (r *resolver) join(ctx context.Context, root relational.Root, limit int, typ string) (*relational.Joined, *relational.Plan, error) {
	p := &relational.Plan{Root: root, Limit: limit}
	op := graphql.GetOperationContext(ctx)
	if err := plan(op, graphql.GetFieldContext(ctx).Field.Selections, typ, &p.Node); err != nil {
		return nil, nil, err
	}
	j, err := r.store.Join(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	return j, p, nil
}

// plan adds to node a child for every relation field selected on an
// object of type typ, recursively. Connection fields are looked through
// (edges, then node), merging what every edges and node selection asks
// for, since the loaded list is shared by all of them.
func plan(op *graphql.OperationContext, sel ast.SelectionSet, typ string, node *relational.PlanNode) error {
	for _, f := range graphql.CollectFields(op, sel, []string{typ}) {
		child := &relational.PlanNode{Key: f.Alias}
		var childType string
		var childSel ast.SelectionSet
		args := f.ArgumentMap(op.Variables)
		switch typ + "." + f.Name {
		case "Task.user":
			child.Relation, childType, childSel = relational.TaskUser, "User", f.Selections
		case "Task.subTasks":
			child.Relation, childType, childSel = relational.TaskSubTasks, "Task", connectionNodes(op, f.Selections, "Task")
		case "User.tasks":
			child.Relation, childType, childSel = relational.UserTasks, "Task", connectionNodes(op, f.Selections, "Task")
			if c, ok := args["completed"].(bool); ok {
				child.Completed = &c
			}
		case "User.subordinates":
			child.Relation, childType, childSel = relational.UserSubordinates, "User", connectionNodes(op, f.Selections, "User")
		case "Project.users":
			child.Relation, childType, childSel = relational.ProjectUsers, "User", connectionNodes(op, f.Selections, "User")
			if first, ok := args["first"].(int64); ok {
				if err := checkFirst(int(first)); err != nil {
					return err
				}
				child.First = int(first)
			}
		default:
			continue // a scalar field, or __typename
		}
		if err := plan(op, childSel, childType, child); err != nil {
			return err
		}
		node.Children = append(node.Children, child)
	}
	return nil
}

// connectionNodes returns the selections under a connection's every
// edges { node { … } }, concatenated (CollectFields merges them).
func connectionNodes(op *graphql.OperationContext, conn ast.SelectionSet, nodeType string) ast.SelectionSet {
	var out ast.SelectionSet
	for _, e := range graphql.CollectFields(op, conn, []string{nodeType + "Connection"}) {
		if e.Name != "edges" {
			continue
		}
		for _, n := range graphql.CollectFields(op, e.Selections, []string{nodeType + "Edge"}) {
			if n.Name == "node" {
				out = append(out, n.Selections...)
			}
		}
	}
	return out
}

func checkFirst(first int) error {
	if first < 1 {
		return fmt.Errorf("first must be at least 1 (got %d)", first)
	}
	return nil
}

// joined returns the rows the joined strategy loaded for the current
// field of an object carrying ref, and whether it did.
func joined(ctx context.Context, ref *joinRef, parent int64) ([]relational.Row, *joinRef, bool) {
	if ref == nil {
		return nil, nil, false
	}
	node := ref.node.Child(graphql.GetFieldContext(ctx).Field.Alias)
	if node == nil {
		return nil, nil, false
	}
	return ref.joined.Children(node, parent), &joinRef{joined: ref.joined, node: node}, true
}

// User resolves Task.user.
func (r taskResolver) User(ctx context.Context, obj *Task) (*User, error) {
	if rows, ref, ok := joined(ctx, obj.j, obj.ID); ok {
		if len(rows) == 0 {
			return nil, nil
		}
		return &User{User: rows[0].User(), j: ref}, nil
	}
	if r.strategy == Batched {
		return loadersFrom(ctx).user.Load(ctx, obj.UserID)
	}
	us, err := r.store.UsersByID(ctx, []int64{obj.UserID})
	if err != nil {
		return nil, err
	}
	if u, ok := us[obj.UserID]; ok {
		return &User{User: u}, nil
	}
	return nil, nil
}

// SubTasks resolves Task.subTasks.
func (r taskResolver) SubTasks(ctx context.Context, obj *Task) (TaskConnection, error) {
	if rows, ref, ok := joined(ctx, obj.j, obj.ID); ok {
		return taskRows(rows, ref), nil
	}
	var ts []relational.Task
	var err error
	if r.strategy == Batched {
		ts, err = loadersFrom(ctx).subTasks.Load(ctx, obj.ID)
	} else {
		var m map[int64][]relational.Task
		m, err = r.store.SubTasksOf(ctx, []int64{obj.ID})
		ts = m[obj.ID]
	}
	return tasks(ts), err
}

// Tasks resolves User.tasks.
func (r userResolver) Tasks(ctx context.Context, obj *User, completed *bool) (TaskConnection, error) {
	if rows, ref, ok := joined(ctx, obj.j, obj.ID); ok {
		return taskRows(rows, ref), nil
	}
	var ts []relational.Task
	var err error
	if r.strategy == Batched {
		ts, err = loadersFrom(ctx).tasks.Load(ctx, tasksKey{user: obj.ID, completed: tristate(completed)})
	} else {
		var m map[int64][]relational.Task
		m, err = r.store.TasksOfUsers(ctx, []int64{obj.ID}, completed)
		ts = m[obj.ID]
	}
	return tasks(ts), err
}

// Subordinates resolves User.subordinates.
func (r userResolver) Subordinates(ctx context.Context, obj *User) (UserConnection, error) {
	if rows, ref, ok := joined(ctx, obj.j, obj.ID); ok {
		return userRows(rows, ref), nil
	}
	var us []relational.User
	var err error
	if r.strategy == Batched {
		us, err = loadersFrom(ctx).subordinates.Load(ctx, obj.ID)
	} else {
		var m map[int64][]relational.User
		m, err = r.store.SubordinatesOf(ctx, []int64{obj.ID})
		us = m[obj.ID]
	}
	return users(us), err
}

// Users resolves Project.users.
func (r projectResolver) Users(ctx context.Context, obj *Project, first *int) (UserConnection, error) {
	n := 0
	if first != nil {
		if err := checkFirst(*first); err != nil {
			return UserConnection{}, err
		}
		n = *first
	}
	if rows, ref, ok := joined(ctx, obj.j, obj.ID); ok {
		return userRows(rows, ref), nil
	}
	var us []relational.User
	var err error
	if r.strategy == Batched {
		us, err = loadersFrom(ctx).projectUsers.Load(ctx, projectKey{project: obj.ID, first: n})
	} else {
		var m map[int64][]relational.User
		m, err = r.store.UsersOfProjects(ctx, []int64{obj.ID}, n)
		us = m[obj.ID]
	}
	return users(us), err
}

func tasks(ts []relational.Task) TaskConnection {
	c := TaskConnection{Edges: make([]TaskEdge, len(ts))}
	for i := range ts {
		c.Edges[i].Node.Task = ts[i]
	}
	return c
}

func users(us []relational.User) UserConnection {
	c := UserConnection{Edges: make([]UserEdge, len(us))}
	for i := range us {
		c.Edges[i].Node.User = us[i]
	}
	return c
}

func taskRows(rows []relational.Row, ref *joinRef) TaskConnection {
	c := TaskConnection{Edges: make([]TaskEdge, len(rows))}
	for i, row := range rows {
		c.Edges[i].Node = Task{Task: row.Task(), j: ref}
	}
	return c
}

func userRows(rows []relational.Row, ref *joinRef) UserConnection {
	c := UserConnection{Edges: make([]UserEdge, len(rows))}
	for i, row := range rows {
		c.Edges[i].Node = User{User: row.User(), j: ref}
	}
	return c
}

// The batched strategy's loaders, one set per request (their caches must
// not outlive it).

// tasksKey asks for one user's parent tasks under one completion filter:
// -1 all, 0 open, 1 completed.
type tasksKey struct {
	user      int64
	completed int8
}

func tristate(b *bool) int8 {
	switch {
	case b == nil:
		return -1
	case *b:
		return 1
	}
	return 0
}

// projectKey asks for one project's members, the first first (0 all).
type projectKey struct {
	project int64
	first   int
}

type loaders struct {
	user         *dataloadgen.Loader[int64, *User]
	tasks        *dataloadgen.Loader[tasksKey, []relational.Task]
	subTasks     *dataloadgen.Loader[int64, []relational.Task]
	subordinates *dataloadgen.Loader[int64, []relational.User]
	projectUsers *dataloadgen.Loader[projectKey, []relational.User]
}

type loadersKey struct{}

func loadersFrom(ctx context.Context) *loaders { return ctx.Value(loadersKey{}).(*loaders) }

// newLoaders returns a request's loaders. wait is how long a loader
// gathers keys before it queries: a level's resolvers run in goroutines
// gqlgen starts together, so a short wait collects them all.
func newLoaders(store *relational.Store, wait time.Duration) *loaders {
	opt := dataloadgen.WithWait(wait)
	// byKeys runs one query per distinct argument value among the keys
	// (one in practice: the same field of every object of a level) and
	// returns the results in the keys' order.
	return &loaders{
		user: dataloadgen.NewLoader(func(ctx context.Context, ids []int64) ([]*User, []error) {
			m, err := store.UsersByID(ctx, ids)
			if err != nil {
				return nil, []error{err}
			}
			out := make([]*User, len(ids))
			for i, id := range ids {
				if u, ok := m[id]; ok {
					out[i] = &User{User: u}
				}
			}
			return out, nil
		}, opt),
		tasks: dataloadgen.NewLoader(func(ctx context.Context, keys []tasksKey) ([][]relational.Task, []error) {
			return byArgs(keys, func(k tasksKey) (int8, int64) { return k.completed, k.user },
				func(c int8, ids []int64) (map[int64][]relational.Task, error) {
					var completed *bool
					if c >= 0 {
						b := c == 1
						completed = &b
					}
					return store.TasksOfUsers(ctx, ids, completed)
				})
		}, opt),
		subTasks: dataloadgen.NewLoader(func(ctx context.Context, ids []int64) ([][]relational.Task, []error) {
			m, err := store.SubTasksOf(ctx, ids)
			return inOrder(ids, m, err)
		}, opt),
		subordinates: dataloadgen.NewLoader(func(ctx context.Context, ids []int64) ([][]relational.User, []error) {
			m, err := store.SubordinatesOf(ctx, ids)
			return inOrder(ids, m, err)
		}, opt),
		projectUsers: dataloadgen.NewLoader(func(ctx context.Context, keys []projectKey) ([][]relational.User, []error) {
			return byArgs(keys, func(k projectKey) (int, int64) { return k.first, k.project },
				func(first int, ids []int64) (map[int64][]relational.User, error) {
					return store.UsersOfProjects(ctx, ids, first)
				})
		}, opt),
	}
}

func inOrder[V any](ids []int64, m map[int64][]V, err error) ([][]V, []error) {
	if err != nil {
		return nil, []error{err}
	}
	out := make([][]V, len(ids))
	for i, id := range ids {
		out[i] = m[id]
	}
	return out, nil
}

// byArgs splits keys by their argument value, runs fetch once per value
// with that value's parent ids, and returns the results in keys' order.
func byArgs[K any, A comparable, V any](keys []K, split func(K) (A, int64), fetch func(A, []int64) (map[int64][]V, error)) ([][]V, []error) {
	groups := make(map[A][]int64)
	var order []A
	for _, k := range keys {
		a, id := split(k)
		if _, ok := groups[a]; !ok {
			order = append(order, a)
		}
		groups[a] = append(groups[a], id)
	}
	results := make(map[A]map[int64][]V, len(order))
	for _, a := range order {
		m, err := fetch(a, groups[a])
		if err != nil {
			return nil, []error{err}
		}
		results[a] = m
	}
	out := make([][]V, len(keys))
	for i, k := range keys {
		a, id := split(k)
		out[i] = results[a][id]
	}
	return out, nil
}
