package relational

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestGenerateMatchesSeed(t *testing.T) {
	d, err := Generate(1, SeedSizes())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Projects) != 10 || len(d.Users) != 1000 || len(d.Members) != 250 || len(d.Tasks) != 110000 {
		t.Fatalf("got %d projects, %d users, %d memberships, %d tasks; want 10, 1000, 250, 110000",
			len(d.Projects), len(d.Users), len(d.Members), len(d.Tasks))
	}
	members := map[int64]map[int64]bool{}
	for _, m := range d.Members {
		if members[m.ProjectID] == nil {
			members[m.ProjectID] = map[int64]bool{}
		}
		if members[m.ProjectID][m.UserID] {
			t.Fatalf("user %d is twice in project %d", m.UserID, m.ProjectID)
		}
		members[m.ProjectID][m.UserID] = true
	}
	for p := int64(1); p <= 10; p++ {
		if len(members[p]) != 25 {
			t.Errorf("project %d has %d members, want 25", p, len(members[p]))
		}
	}
	parents, completed, owners := 0, 0, map[int64]bool{}
	subs := map[int64]int{}
	for _, task := range d.Tasks {
		if task.UserID < 1 || task.UserID > 1000 {
			t.Fatalf("task %d belongs to user %d, out of 1..1000", task.ID, task.UserID)
		}
		if task.ParentID == 0 {
			parents++
			owners[task.UserID] = true
			if task.Completed {
				completed++
			}
			continue
		}
		subs[task.ParentID]++
		if p := d.Tasks[task.ParentID-1]; p.UserID != task.UserID {
			t.Fatalf("subtask %d is user %d's, its parent user %d's", task.ID, task.UserID, p.UserID)
		}
	}
	if parents != 10000 || len(subs) != 10000 {
		t.Fatalf("got %d parent tasks, %d with subtasks; want 10000 and 10000", parents, len(subs))
	}
	for p, n := range subs {
		if n != 10 {
			t.Fatalf("task %d has %d subtasks, want 10", p, n)
		}
	}
	// Random assignment and completion: a fair coin over 10,000 tasks lands
	// within 45 %..55 % with overwhelming probability; random owners reach
	// nearly every user (10 tasks each on average).
	if completed < 4500 || completed > 5500 {
		t.Errorf("%d of 10000 parent tasks completed; want about half", completed)
	}
	if len(owners) < 990 {
		t.Errorf("only %d users own a task; want nearly all 1000", len(owners))
	}
	managers := 0
	for _, u := range d.Users {
		if u.ManagerID != 0 {
			managers++
			if u.ManagerID < 1 || u.ManagerID > 100 {
				t.Fatalf("user %d reports to %d, not one of the 100 managers", u.ID, u.ManagerID)
			}
		}
	}
	if managers != 900 {
		t.Errorf("%d users have a manager, want 900", managers)
	}
}

func TestGenerateDeterministic(t *testing.T) {
	a, _ := Generate(42, SeedSizes())
	b, _ := Generate(42, SeedSizes())
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave different data")
	}
	c, _ := Generate(43, SeedSizes())
	if reflect.DeepEqual(a.Tasks, c.Tasks) {
		t.Fatal("seeds 42 and 43 gave the same tasks")
	}
}

func TestSizesValidate(t *testing.T) {
	bad := SeedSizes()
	bad.MembersPerProject = 2000
	if _, err := Generate(1, bad); err == nil || !strings.Contains(err.Error(), "members per project") {
		t.Fatalf("got %v, want an error naming members per project", err)
	}
}

// small is a data set small enough to load in milliseconds.
func small() Sizes {
	return Sizes{Projects: 2, MembersPerProject: 3, Users: 20, Managers: 2, Tasks: 40, SubTasksPerTask: 2}
}

func TestOpenLoadsEveryRow(t *testing.T) {
	for _, o := range testStores(t) {
		t.Run(o.Store, func(t *testing.T) {
			// The seed's own size without the race detector (seconds);
			// under it, which slows SQLite twentyfold, a twentieth.
			o.Sizes = SeedSizes()
			if raceEnabled {
				o.Sizes = o.Sizes.Scale(0.05)
			}
			z := o.Sizes
			s, err := Open(t.Context(), o)
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := s.Close(); err != nil {
					t.Error(err)
				}
			}()
			d, _ := Generate(o.Seed, o.Sizes)
			completed := 0
			for _, task := range d.Tasks[:z.Tasks] {
				if task.Completed {
					completed++
				}
			}
			count := func(q string) int {
				var n int
				if err := s.DB().QueryRowContext(t.Context(), q).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			for q, want := range map[string]int{
				"SELECT COUNT(*) FROM projects":                                           z.Projects,
				"SELECT COUNT(*) FROM project_users":                                      z.Projects * z.MembersPerProject,
				"SELECT COUNT(*) FROM users":                                              z.Users,
				"SELECT COUNT(*) FROM tasks WHERE parent_id IS NULL":                      z.Tasks,
				"SELECT COUNT(*) FROM tasks WHERE parent_id IS NOT NULL":                  z.Tasks * z.SubTasksPerTask,
				"SELECT COUNT(DISTINCT parent_id) FROM tasks":                             z.Tasks,
				"SELECT COUNT(*) FROM users WHERE manager_id IS NOT NULL":                 z.Users - z.Managers,
				"SELECT COUNT(*) FROM tasks WHERE completed = true AND parent_id IS NULL": completed,
			} {
				if got := count(q); got != want {
					t.Errorf("%s: got %d, want %d", q, got, want)
				}
			}
		})
	}
}

func TestTallyCountsQueriesAndRows(t *testing.T) {
	s, err := Open(t.Context(), Options{Sizes: small()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var tally Tally
	ctx := WithTally(t.Context(), &tally)
	us, err := s.Users(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.TasksOfUsers(ctx, []int64{us[0].ID, us[1].ID}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SubTasksOf(ctx, nil); err != nil { // no parents: no query
		t.Fatal(err)
	}
	var tasks int
	if err := s.DB().QueryRowContext(t.Context(), "SELECT COUNT(*) FROM tasks WHERE parent_id IS NULL AND user_id IN ($1, $2)", us[0].ID, us[1].ID).Scan(&tasks); err != nil {
		t.Fatal(err)
	}
	got := tally.Snapshot()
	if got.Queries != 2 || got.Rows != int64(5+tasks) || got.Time <= 0 {
		t.Fatalf("tally %+v, want 2 queries, %d rows, a positive time", got, 5+tasks)
	}
}

func TestOpenRefusesBadSettings(t *testing.T) {
	f := func(o Options, want ...string) {
		t.Helper()
		s, err := Open(t.Context(), o)
		if err == nil {
			s.Close()
			t.Fatalf("Open(%+v) succeeded, want an error", o)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
	}
	f(Options{Store: "mysql"}, "sqlite or postgres", "mysql")
	f(Options{Store: StorePostgres, DSNSource: "$PGDSN"}, "$PGDSN is empty")
	f(Options{Store: StorePostgres, DSN: "postgres://u:secret@127.0.0.1:port/db", DSNSource: "$PGDSN"}, "$PGDSN is not a PostgreSQL connection string")
	// Port 1 on loopback: nothing listens, the connection is refused at once.
	f(Options{Store: StorePostgres, DSN: "postgres://u:secret@127.0.0.1:1/db?connect_timeout=5", DSNSource: "$PGDSN", Sizes: small()},
		"cannot connect to PostgreSQL u@127.0.0.1:1/db (from $PGDSN)")
}

// testStores returns the stores to run against: SQLite always, and
// PostgreSQL when SOAKD_TEST_PG_DSN holds a DSN (CI sets it).
func testStores(t testing.TB) []Options {
	out := []Options{{Store: StoreSQLite, Dir: t.TempDir()}}
	if dsn := os.Getenv("SOAKD_TEST_PG_DSN"); dsn != "" {
		out = append(out, Options{Store: StorePostgres, DSN: dsn, DSNSource: "$SOAKD_TEST_PG_DSN"})
	}
	return out
}
