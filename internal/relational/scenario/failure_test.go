package scenario

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/echo"
	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/internal/relational/relgraph"
)

// small is a data set that loads in milliseconds.
func small() relational.Sizes {
	return relational.Sizes{Projects: 2, MembersPerProject: 3, Users: 20, Managers: 2, Tasks: 40, SubTasksPerTask: 2}
}

const nested = "{ users(limit: 5) { tasks { edges { node { name subTasks { edges { node { name } } } } } } } }"

// checkFailure asserts a GraphQL answer of 503 whose errors name cause.
func checkGraphQLFailure(t *testing.T, code int, body []byte, cause string) {
	t.Helper()
	var r struct {
		Errors []struct {
			Message    string
			Extensions map[string]any
		}
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if code != http.StatusServiceUnavailable || len(r.Errors) == 0 {
		t.Fatalf("HTTP %d, %s; want 503 with errors", code, body)
	}
	e := r.Errors[0]
	if e.Extensions["code"] != relgraph.CodeDatabaseUnavailable || e.Extensions["cause"] != cause || !strings.Contains(e.Message, "database unavailable ("+cause+")") {
		t.Fatalf("error %+v; want code %s, cause %s", e, relgraph.CodeDatabaseUnavailable, cause)
	}
}

// TestPoolExhaustedTimesOut holds the pool's only connection, as a slow
// database would: every endpoint must answer 503 naming the timeout once
// the request's deadline passes, not wait for the connection forever.
func TestPoolExhaustedTimesOut(t *testing.T) {
	for _, o := range testStores(t) {
		t.Run(o.Store, func(t *testing.T) {
			o.Sizes, o.PoolSize = small(), 1
			s := start(t, o, Options{Timeout: 200 * time.Millisecond})
			conn, err := s.store.DB().Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, st := range relgraph.Strategies() {
				code, body := s.post(t, GraphQLPath(st), nested)
				checkGraphQLFailure(t, code, body, relational.CauseTimeout)
			}
			code, body := s.get(t, "/api/rel/users?limit=5&include=tasks")
			if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "database unavailable (timeout)") ||
				!strings.Contains(string(body), "all 1 connections busy") {
				t.Fatalf("REST: HTTP %d %s; want 503 naming the timeout and the pool", code, body)
			}
			// The connection back, the same request succeeds.
			conn.Close()
			if code, body := s.post(t, GraphQLPath(relgraph.Batched), nested); code != http.StatusOK {
				t.Fatalf("after the pool freed: HTTP %d %s", code, body)
			}
		})
	}
}

// TestDatabaseGoneMidRequest closes the database while a request waits
// for it: the request must end with 503 naming the lost connection.
func TestDatabaseGoneMidRequest(t *testing.T) {
	for _, o := range testStores(t) {
		t.Run(o.Store, func(t *testing.T) {
			o.Sizes, o.PoolSize = small(), 1
			s := start(t, o, Options{Timeout: time.Minute})
			conn, err := s.store.DB().Conn(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			type answer struct {
				code int
				body []byte
			}
			done := make(chan answer, 1)
			go func() {
				code, body := s.post(t, GraphQLPath(relgraph.Naive), nested)
				done <- answer{code, body}
			}()
			// Once the request waits for the held connection, the database
			// goes away under it.
			for deadline := time.Now().Add(30 * time.Second); s.store.DB().Stats().WaitCount == 0; {
				if time.Now().After(deadline) {
					t.Fatal("the request never waited for a connection")
				}
				time.Sleep(5 * time.Millisecond)
			}
			_ = s.store.DB().Close()
			conn.Close()
			a := <-done
			checkGraphQLFailure(t, a.code, a.body, relational.CauseConnection)
			code, body := s.get(t, "/api/rel/users/1")
			if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "database unavailable (connection)") {
				t.Fatalf("REST after the database went away: HTTP %d %s", code, body)
			}
		})
	}
}

// TestBadRequests: parameters out of range get a clear refusal, not a query.
func TestBadRequests(t *testing.T) {
	s := start(t, relational.Options{Sizes: small(), Dir: t.TempDir()}, Options{})
	code, body := s.post(t, GraphQLPath(relgraph.Joined), "{ users(limit: 5000) { name } }")
	if code != http.StatusOK || !strings.Contains(string(body), "limit must be between 1 and 1000 (got 5000)") {
		t.Fatalf("GraphQL limit 5000: HTTP %d %s", code, body)
	}
	// Lists nested in lists multiply: refused up front (it cost 800 MB of
	// RSS and 5–12 s of CPU before), while the seed's costliest query runs.
	for _, st := range []relgraph.Strategy{relgraph.Naive, relgraph.Batched, relgraph.Joined} {
		code, body := s.post(t, GraphQLPath(st), "{ users(limit: 1000) { tasks { edges { node { subTasks { edges { node { name } } } } } } } }")
		if code != http.StatusUnprocessableEntity && code != http.StatusOK || !strings.Contains(string(body), "exceeds the limit of 100000") {
			t.Errorf("%s: a 100,000-subtask query: HTTP %d %s; want it refused for its complexity", st, code, body)
		}
		code, body = s.post(t, GraphQLPath(st), "{ users(limit: 250) { tasks(completed: true) { edges { node { name subTasks { edges { node { name } } } } } } } }")
		if code != http.StatusOK || strings.Contains(string(body), "complexity") {
			t.Errorf("%s: seed 000's costliest query: HTTP %d %.300s", st, code, body)
		}
	}
	for path, want := range map[string]string{
		"/api/rel/users":                         "query parameter limit is required",
		"/api/rel/users?limit=0":                 "limit must be an integer from 1 to 1000",
		"/api/rel/users?limit=5&include=friends": `is not one of users's: tasks, tasks.subTasks, subordinates`,
		"/api/rel/users?limit=5&completed=yes":   "completed must be true or false",
		"/api/rel/users/x/tasks":                 "id must be a positive integer",
	} {
		code, body := s.get(t, path)
		if code != http.StatusBadRequest || !strings.Contains(string(body), want) {
			t.Errorf("%s: HTTP %d %s; want 400 saying %q", path, code, body, want)
		}
	}
	if code, body := s.get(t, "/api/rel/users/999"); code != http.StatusNotFound {
		t.Errorf("unknown user: HTTP %d %s, want 404", code, body)
	}
	// A refusal quotes at most echo.MaxBytes of each value it names.
	long := strings.Repeat("a", 5000)
	for _, path := range []string{"/api/rel/users?limit=" + long, "/api/rel/users?limit=5&include=" + long,
		"/api/rel/users?limit=5&completed=" + long, "/api/rel/users/" + long + "/tasks"} {
		code, body := s.get(t, path)
		if code != http.StatusBadRequest || len(body) > 2*echo.MaxBytes+200 || strings.Contains(string(body), strings.Repeat("a", echo.MaxBytes+1)) {
			t.Errorf("%.40s…: HTTP %d with a %d-byte body %.200s; want 400 quoting at most %d bytes", path, code, len(body), body, echo.MaxBytes)
		}
	}
}
