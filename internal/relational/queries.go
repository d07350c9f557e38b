package relational

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"time"
)

// query runs q with args and calls row for each result row, counting the
// query, its rows and its time in the context's Tally (time from the call
// that sends it to the closing of its result). A failure becomes a
// *DBError, also recorded in the Tally.
func (s *Store) query(ctx context.Context, q string, args []any, row func(*sql.Rows) error) error {
	start := time.Now()
	var n int64
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err == nil {
		for rows.Next() {
			n++
			if err = row(rows); err != nil {
				break
			}
		}
		if err == nil {
			err = rows.Err()
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}
	t := TallyFrom(ctx)
	t.add(n, time.Since(start))
	if err != nil {
		de := s.classify(ctx, err)
		t.fail(de)
		return de
	}
	return nil
}

// Column lists, in the order the scanners read them.
const (
	taskCols = "id, user_id, COALESCE(parent_id, 0), name, completed"
	userCols = "id, name, COALESCE(manager_id, 0)"
)

func scanTask(r *sql.Rows, t *Task) error {
	return r.Scan(&t.ID, &t.UserID, &t.ParentID, &t.Name, &t.Completed)
}

func scanUser(r *sql.Rows, u *User) error { return r.Scan(&u.ID, &u.Name, &u.ManagerID) }

// placeholders returns "$from, $from+1, …" for n parameters.
func placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(from+i))
	}
	return b.String()
}

func int64Args(ids []int64, extra ...any) []any {
	args := make([]any, 0, len(ids)+len(extra))
	for _, id := range ids {
		args = append(args, id)
	}
	return append(args, extra...)
}

// Tasks returns the first limit parent tasks by id.
func (s *Store) Tasks(ctx context.Context, limit int) ([]Task, error) {
	var out []Task
	err := s.query(ctx, "SELECT "+taskCols+" FROM tasks WHERE parent_id IS NULL ORDER BY id LIMIT $1", []any{limit}, func(r *sql.Rows) error {
		var t Task
		err := scanTask(r, &t)
		out = append(out, t)
		return err
	})
	return out, err
}

// Users returns the first limit users by id.
func (s *Store) Users(ctx context.Context, limit int) ([]User, error) {
	var out []User
	err := s.query(ctx, "SELECT "+userCols+" FROM users ORDER BY id LIMIT $1", []any{limit}, func(r *sql.Rows) error {
		var u User
		err := scanUser(r, &u)
		out = append(out, u)
		return err
	})
	return out, err
}

// Projects returns every project by id.
func (s *Store) Projects(ctx context.Context) ([]Project, error) {
	var out []Project
	err := s.query(ctx, "SELECT id, name FROM projects ORDER BY id", nil, func(r *sql.Rows) error {
		var p Project
		err := r.Scan(&p.ID, &p.Name)
		out = append(out, p)
		return err
	})
	return out, err
}

// The per-level queries below take a set of parent ids and answer for all
// of them in one query (batching, REST includes); called with one id they
// are the naive resolvers' query per parent. An empty set runs no query.

// UsersByID returns the users with the given ids, by id.
func (s *Store) UsersByID(ctx context.Context, ids []int64) (map[int64]User, error) {
	out := make(map[int64]User, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	err := s.query(ctx, "SELECT "+userCols+" FROM users WHERE id IN ("+placeholders(1, len(ids))+")", int64Args(ids), func(r *sql.Rows) error {
		var u User
		err := scanUser(r, &u)
		out[u.ID] = u
		return err
	})
	return out, err
}

// TasksOfUsers returns the parent tasks of each user, by id; completed,
// when not nil, keeps those with that completion only.
func (s *Store) TasksOfUsers(ctx context.Context, userIDs []int64, completed *bool) (map[int64][]Task, error) {
	out := make(map[int64][]Task, len(userIDs))
	if len(userIDs) == 0 {
		return out, nil
	}
	q := "SELECT " + taskCols + " FROM tasks WHERE parent_id IS NULL AND user_id IN (" + placeholders(1, len(userIDs)) + ")"
	args := int64Args(userIDs)
	if completed != nil {
		args = append(args, *completed)
		q += " AND completed = $" + strconv.Itoa(len(args))
	}
	err := s.query(ctx, q+" ORDER BY user_id, id", args, func(r *sql.Rows) error {
		var t Task
		err := scanTask(r, &t)
		out[t.UserID] = append(out[t.UserID], t)
		return err
	})
	return out, err
}

// SubTasksOf returns the subtasks of each task, by id.
func (s *Store) SubTasksOf(ctx context.Context, taskIDs []int64) (map[int64][]Task, error) {
	out := make(map[int64][]Task, len(taskIDs))
	if len(taskIDs) == 0 {
		return out, nil
	}
	q := "SELECT " + taskCols + " FROM tasks WHERE parent_id IN (" + placeholders(1, len(taskIDs)) + ") ORDER BY parent_id, id"
	err := s.query(ctx, q, int64Args(taskIDs), func(r *sql.Rows) error {
		var t Task
		err := scanTask(r, &t)
		out[t.ParentID] = append(out[t.ParentID], t)
		return err
	})
	return out, err
}

// SubordinatesOf returns the users each manager manages, by id.
func (s *Store) SubordinatesOf(ctx context.Context, managerIDs []int64) (map[int64][]User, error) {
	out := make(map[int64][]User, len(managerIDs))
	if len(managerIDs) == 0 {
		return out, nil
	}
	q := "SELECT " + userCols + " FROM users WHERE manager_id IN (" + placeholders(1, len(managerIDs)) + ") ORDER BY manager_id, id"
	err := s.query(ctx, q, int64Args(managerIDs), func(r *sql.Rows) error {
		var u User
		err := scanUser(r, &u)
		out[u.ManagerID] = append(out[u.ManagerID], u)
		return err
	})
	return out, err
}

// UsersOfProjects returns each project's members by id, the first first
// of them when first > 0 (a window function ranks them per project, so the
// limit holds per project in one query).
func (s *Store) UsersOfProjects(ctx context.Context, projectIDs []int64, first int) (map[int64][]User, error) {
	out := make(map[int64][]User, len(projectIDs))
	if len(projectIDs) == 0 {
		return out, nil
	}
	in := placeholders(1, len(projectIDs))
	args := int64Args(projectIDs)
	var q string
	if first > 0 {
		args = append(args, first)
		q = "SELECT project_id, id, name, manager_id FROM (SELECT pu.project_id, u.id, u.name, COALESCE(u.manager_id, 0) AS manager_id, " +
			"ROW_NUMBER() OVER (PARTITION BY pu.project_id ORDER BY u.id) AS rn FROM project_users pu JOIN users u ON u.id = pu.user_id " +
			"WHERE pu.project_id IN (" + in + ")) r WHERE rn <= $" + strconv.Itoa(len(args)) + " ORDER BY project_id, id"
	} else {
		q = "SELECT pu.project_id, u.id, u.name, COALESCE(u.manager_id, 0) FROM project_users pu JOIN users u ON u.id = pu.user_id " +
			"WHERE pu.project_id IN (" + in + ") ORDER BY pu.project_id, u.id"
	}
	err := s.query(ctx, q, args, func(r *sql.Rows) error {
		var p int64
		var u User
		err := r.Scan(&p, &u.ID, &u.Name, &u.ManagerID)
		out[p] = append(out[p], u)
		return err
	})
	return out, err
}
