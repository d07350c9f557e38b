package relational

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// Root is the list a query starts from.
type Root int

// Roots.
const (
	RootTasks    Root = iota + 1 // parent tasks by id, Limit of them
	RootUsers                    // users by id, Limit of them
	RootProjects                 // every project
)

// Relation is an edge from a parent row to its children.
type Relation int

// Relations.
const (
	TaskUser         Relation = iota + 1 // a task's user (one)
	TaskSubTasks                         // a task's subtasks
	UserTasks                            // a user's parent tasks, Completed filtering
	UserSubordinates                     // the users a user manages
	ProjectUsers                         // a project's members, the First of them when First > 0
)

// Kind of row a relation yields.
func (r Relation) rowKind() string {
	switch r {
	case TaskUser, UserSubordinates, ProjectUsers:
		return "user"
	}
	return "task"
}

// PlanNode is one relation to load, with its children. Key identifies it
// among its siblings (a GraphQL planner uses the field's response name).
type PlanNode struct {
	Key       string
	Relation  Relation
	Completed *bool // UserTasks: keep tasks with this completion; nil all
	First     int   // ProjectUsers: members per project, 0 all
	Children  []*PlanNode

	branch int // index of the UNION ALL branch that loads it
}

// Child returns the child node with key, or nil.
func (n *PlanNode) Child(key string) *PlanNode {
	for _, c := range n.Children {
		if c.Key == key {
			return c
		}
	}
	return nil
}

// Plan is a whole query tree: a root list and the relations under it,
// loaded by Store.Join in one SQL statement.
type Plan struct {
	Root  Root
	Limit int // RootTasks, RootUsers
	Node  PlanNode
}

// Row is one loaded task, user or project, with its relation's parent.
// Task rows fill Completed, UserID and ParentID; user rows fill ManagerID.
type Row struct {
	ID, UserID, ParentID, ManagerID int64
	Name                            string
	Completed                       bool
}

// Task converts a task row.
func (r Row) Task() Task {
	return Task{ID: r.ID, UserID: r.UserID, ParentID: r.ParentID, Name: r.Name, Completed: r.Completed}
}

// User converts a user row.
func (r Row) User() User { return User{ID: r.ID, Name: r.Name, ManagerID: r.ManagerID} }

// Project converts a project row.
func (r Row) Project() Project { return Project{ID: r.ID, Name: r.Name} }

// Joined is what Store.Join loaded: the rows of each plan node, grouped by
// parent id, in id order.
type Joined struct {
	rows []map[int64][]Row // by branch, then parent id (0 for the root)
}

// Roots returns the root rows.
func (j *Joined) Roots() []Row { return j.rows[0][0] }

// Children returns the rows node loaded under parent (a parent row's id).
func (j *Joined) Children(node *PlanNode, parent int64) []Row {
	if node.branch <= 0 || node.branch >= len(j.rows) {
		return nil
	}
	return j.rows[node.branch][parent]
}

// Join loads the whole plan in one SQL statement, a UNION ALL of one
// SELECT per plan node that joins from the root list down to it. Unlike a
// single chain of LEFT JOINs (an ORM's "include"), sibling relations (a
// user's tasks and subordinates) do not multiply into their cartesian
// product; each row comes back once per path, duplicates (a user in two
// projects) dropped as they arrive.
func (s *Store) Join(ctx context.Context, p *Plan) (*Joined, error) {
	q, args, branches, err := buildJoin(p)
	if err != nil {
		return nil, err
	}
	j := &Joined{rows: make([]map[int64][]Row, branches)}
	for i := range j.rows {
		j.rows[i] = make(map[int64][]Row)
	}
	err = s.query(ctx, q, args, func(r *sql.Rows) error {
		var b, parent int64
		var row Row
		var completed sql.NullBool
		var a, c int64
		if err := r.Scan(&b, &parent, &row.ID, &row.Name, &completed, &a, &c); err != nil {
			return err
		}
		if b < 0 || b >= int64(branches) {
			return fmt.Errorf("join returned branch %d of %d", b, branches)
		}
		row.Completed = completed.Bool
		if completed.Valid { // a task: a is user_id, c parent_id
			row.UserID, row.ParentID = a, c
		} else {
			row.ManagerID = a
		}
		list := j.rows[b][parent]
		if n := len(list); n > 0 && list[n-1].ID == row.ID {
			return nil // the same child reached through another path
		}
		j.rows[b][parent] = append(list, row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return j, nil
}

// buildJoin writes Join's statement and numbers the plan's nodes.
func buildJoin(p *Plan) (q string, args []any, branches int, err error) {
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	var root, rootKind string
	switch p.Root {
	case RootTasks:
		root, rootKind = "(SELECT id, user_id, parent_id, name, completed FROM tasks WHERE parent_id IS NULL ORDER BY id LIMIT "+arg(p.Limit)+")", "task"
	case RootUsers:
		root, rootKind = "(SELECT id, name, manager_id FROM users ORDER BY id LIMIT "+arg(p.Limit)+")", "user"
	case RootProjects:
		root, rootKind = "projects", "project"
	default:
		return "", nil, 0, fmt.Errorf("plan has no root list (got %d)", p.Root)
	}
	cols := func(alias, kind string) string {
		switch kind {
		case "task":
			return alias + ".id, " + alias + ".name, " + alias + ".completed, " + alias + ".user_id, COALESCE(" + alias + ".parent_id, 0)"
		case "user":
			return alias + ".id, " + alias + ".name, CAST(NULL AS BOOLEAN), COALESCE(" + alias + ".manager_id, 0), 0"
		}
		return alias + ".id, " + alias + ".name, CAST(NULL AS BOOLEAN), 0, 0"
	}
	var selects []string
	selects = append(selects, "SELECT 0, 0, "+cols("a0", rootKind)+" FROM "+root+" a0")
	p.Node.branch = 0
	branches = 1
	// walk adds one SELECT per node: from is the join chain down to the
	// node's parent, whose alias is parent.
	var walk func(n *PlanNode, from, parent string, depth int) error
	walk = func(n *PlanNode, from, parent string, depth int) error {
		for _, c := range n.Children {
			a := "a" + strconv.Itoa(depth)
			var join string
			switch c.Relation {
			case TaskUser:
				join = " JOIN users " + a + " ON " + a + ".id = " + parent + ".user_id"
			case TaskSubTasks:
				join = " JOIN tasks " + a + " ON " + a + ".parent_id = " + parent + ".id"
			case UserTasks:
				join = " JOIN tasks " + a + " ON " + a + ".user_id = " + parent + ".id AND " + a + ".parent_id IS NULL"
				if c.Completed != nil {
					join += " AND " + a + ".completed = " + arg(*c.Completed)
				}
			case UserSubordinates:
				join = " JOIN users " + a + " ON " + a + ".manager_id = " + parent + ".id"
			case ProjectUsers:
				if c.First > 0 {
					join = " JOIN (SELECT pu.project_id, u.id, u.name, u.manager_id, ROW_NUMBER() OVER (PARTITION BY pu.project_id ORDER BY u.id) AS rn " +
						"FROM project_users pu JOIN users u ON u.id = pu.user_id) " + a + " ON " + a + ".project_id = " + parent + ".id AND " + a + ".rn <= " + arg(c.First)
				} else {
					join = " JOIN project_users j" + a + " ON j" + a + ".project_id = " + parent + ".id JOIN users " + a + " ON " + a + ".id = j" + a + ".user_id"
				}
			default:
				return fmt.Errorf("plan node %q has no relation (got %d)", c.Key, c.Relation)
			}
			c.branch = branches
			branches++
			chain := from + join
			selects = append(selects, "SELECT "+strconv.Itoa(c.branch)+", "+parent+".id, "+cols(a, c.Relation.rowKind())+" FROM "+chain)
			if err := walk(c, chain, a, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(&p.Node, root+" a0", "a0", 1); err != nil {
		return "", nil, 0, err
	}
	return strings.Join(selects, " UNION ALL ") + " ORDER BY 1, 2, 3", args, branches, nil
}
