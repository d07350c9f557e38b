// Package relrest is the relational scenario's REST twin: the same data as
// the GraphQL arm (package relgraph) through REST as REST clients really get
// it, full resources, in two styles that bracket what GraphQL replaces:
//
//   - embedded: one call per query shape, related resources embedded on
//     request (?include=tasks.subTasks), loaded one query per included
//     level, as an ORM's eager loading does;
//   - chatty: one call per resource (GET /api/rel/users/{id}/tasks), so a
//     client assembling a nested view makes 1 + N + … calls.
//
// Lists come as {"data": [...]}, single resources as {"data": {...}}, in id
// order. Bad parameters get 400, unknown ids 404 and database failures 503,
// each with {"error": "..."} saying what was wrong.
package relrest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/echo"
	"github.com/soakd/soakd/internal/relational"
)

// MaxLimit is the largest ?limit= the lists accept (as GraphQL's).
const MaxLimit = 1000

// Prefix is the path every route lives under.
const Prefix = "/api/rel/"

// includes each list accepts.
var includes = map[string][]string{
	"tasks":    {"user", "subTasks"},
	"users":    {"tasks", "tasks.subTasks", "subordinates"},
	"projects": {"users", "users.tasks", "users.tasks.subTasks"},
}

// Handler serves the REST twin. Wrap it in relational.Instrument for the
// per-request tally, deadline and metrics.
type Handler struct {
	store *relational.Store
	log   *zap.Logger
	mux   *http.ServeMux
}

// NewHandler returns the REST twin over store; log (nil: none) receives
// database failures.
func NewHandler(store *relational.Store, log *zap.Logger) *Handler {
	if log == nil {
		log = zap.NewNop()
	}
	h := &Handler{store: store, log: log, mux: http.NewServeMux()}
	h.mux.Handle("GET "+Prefix+"tasks", h.fn(h.listTasks))
	h.mux.Handle("GET "+Prefix+"users", h.fn(h.listUsers))
	h.mux.Handle("GET "+Prefix+"projects", h.fn(h.listProjects))
	h.mux.Handle("GET "+Prefix+"users/{id}", h.fn(h.user))
	h.mux.Handle("GET "+Prefix+"users/{id}/tasks", h.fn(h.userTasks))
	h.mux.Handle("GET "+Prefix+"users/{id}/subordinates", h.fn(h.subordinates))
	h.mux.Handle("GET "+Prefix+"tasks/{id}/subtasks", h.fn(h.subTasks))
	h.mux.Handle("GET "+Prefix+"projects/{id}/users", h.fn(h.projectUsers))
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// httpError is an error with its status.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{code: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// fn adapts a handler returning its data or an error to the one renderer.
func (h *Handler) fn(f func(*http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := f(r)
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			code := http.StatusInternalServerError
			var he *httpError
			var de *relational.DBError
			switch {
			case errors.As(err, &he):
				code = he.code
			case errors.As(err, &de):
				code = http.StatusServiceUnavailable
				h.log.Warn("database failure", zap.String("path", r.URL.Path), zap.String("cause", de.Cause), zap.Error(err))
			}
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(struct {
			Data any `json:"data"`
		}{v})
	})
}

// The resources as REST serves them: every column, plus what was embedded.
type (
	taskJSON struct {
		relational.Task
		User     *userJSON   `json:"user,omitempty"`
		SubTasks *[]taskJSON `json:"subTasks,omitempty"`
	}
	userJSON struct {
		relational.User
		Tasks        *[]taskJSON `json:"tasks,omitempty"`
		Subordinates *[]userJSON `json:"subordinates,omitempty"`
	}
	projectJSON struct {
		relational.Project
		Users *[]userJSON `json:"users,omitempty"`
	}
)

func intParam(r *http.Request, name string, lo, hi int, required bool) (int, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		if required {
			return 0, badRequest("query parameter %s is required (an integer from %d to %d)", name, lo, hi)
		}
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("query parameter %s must be an integer from %d to %d (got %q)", name, lo, hi, echo.Input(raw))
	}
	return n, nil
}

func completedParam(r *http.Request) (*bool, error) {
	switch raw := r.URL.Query().Get("completed"); raw {
	case "":
		return nil, nil
	case "true", "false":
		b := raw == "true"
		return &b, nil
	default:
		return nil, badRequest("query parameter completed must be true or false (got %q)", echo.Input(raw))
	}
}

func idParam(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, badRequest("id must be a positive integer (got %q)", echo.Input(r.PathValue("id")))
	}
	return id, nil
}

// includeParam parses ?include= for list, a comma-separated subset of
// includes[list]; a nested path includes its parents.
func includeParam(r *http.Request, list string) (map[string]bool, error) {
	out := map[string]bool{}
	raw := r.URL.Query().Get("include")
	if raw == "" {
		return out, nil
	}
	for p := range strings.SplitSeq(raw, ",") {
		if !slices.Contains(includes[list], p) {
			return nil, badRequest("include %q is not one of %s's: %s", echo.Input(p), list, strings.Join(includes[list], ", "))
		}
		for i := range p {
			if p[i] == '.' {
				out[p[:i]] = true
			}
		}
		out[p] = true
	}
	return out, nil
}

func (h *Handler) listTasks(r *http.Request) (any, error) {
	limit, err := intParam(r, "limit", 1, MaxLimit, true)
	if err != nil {
		return nil, err
	}
	inc, err := includeParam(r, "tasks")
	if err != nil {
		return nil, err
	}
	ts, err := h.store.Tasks(r.Context(), limit)
	if err != nil {
		return nil, err
	}
	out := toTasks(ts)
	if inc["user"] {
		ids := make([]int64, 0, len(ts))
		for _, t := range ts {
			ids = append(ids, t.UserID)
		}
		us, err := h.store.UsersByID(r.Context(), uniq(ids))
		if err != nil {
			return nil, err
		}
		for i := range out {
			if u, ok := us[out[i].UserID]; ok {
				out[i].User = &userJSON{User: u}
			}
		}
	}
	if inc["subTasks"] {
		if err := h.embedSubTasks(r, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (h *Handler) listUsers(r *http.Request) (any, error) {
	limit, err := intParam(r, "limit", 1, MaxLimit, true)
	if err != nil {
		return nil, err
	}
	inc, err := includeParam(r, "users")
	if err != nil {
		return nil, err
	}
	completed, err := completedParam(r)
	if err != nil {
		return nil, err
	}
	us, err := h.store.Users(r.Context(), limit)
	if err != nil {
		return nil, err
	}
	out := toUsers(us)
	if err := h.embedUsers(r, out, inc, "", completed); err != nil {
		return nil, err
	}
	return out, nil
}

func (h *Handler) listProjects(r *http.Request) (any, error) {
	inc, err := includeParam(r, "projects")
	if err != nil {
		return nil, err
	}
	completed, err := completedParam(r)
	if err != nil {
		return nil, err
	}
	first, err := intParam(r, "first", 1, MaxLimit, false)
	if err != nil {
		return nil, err
	}
	ps, err := h.store.Projects(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]projectJSON, len(ps))
	ids := make([]int64, len(ps))
	for i, p := range ps {
		out[i].Project, ids[i] = p, p.ID
	}
	if !inc["users"] {
		return out, nil
	}
	m, err := h.store.UsersOfProjects(r.Context(), ids, first)
	if err != nil {
		return nil, err
	}
	// Members of several projects are embedded in each; their own
	// includes load once per distinct user.
	var all []userJSON
	for i := range out {
		us := toUsers(m[out[i].ID])
		out[i].Users = &us
		all = append(all, us...)
	}
	if err := h.embedUsers(r, all, inc, "users.", completed); err != nil {
		return nil, err
	}
	byID := make(map[int64]userJSON, len(all))
	for _, u := range all {
		byID[u.ID] = u
	}
	for i := range out {
		for k, u := range *out[i].Users {
			(*out[i].Users)[k] = byID[u.ID]
		}
	}
	return out, nil
}

// embedUsers loads the includes under prefix ("" or "users.") for us.
func (h *Handler) embedUsers(r *http.Request, us []userJSON, inc map[string]bool, prefix string, completed *bool) error {
	ids := make([]int64, len(us))
	for i := range us {
		ids[i] = us[i].ID
	}
	ids = uniq(ids)
	if inc[prefix+"tasks"] {
		m, err := h.store.TasksOfUsers(r.Context(), ids, completed)
		if err != nil {
			return err
		}
		var all []taskJSON
		for i := range us {
			ts := toTasks(m[us[i].ID])
			us[i].Tasks = &ts
			all = append(all, ts...)
		}
		if inc[prefix+"tasks.subTasks"] {
			if err := h.embedSubTasks(r, all); err != nil {
				return err
			}
			// all holds copies: put their subtasks back by task id.
			byID := make(map[int64]*[]taskJSON, len(all))
			for _, t := range all {
				byID[t.ID] = t.SubTasks
			}
			for i := range us {
				for k := range *us[i].Tasks {
					(*us[i].Tasks)[k].SubTasks = byID[(*us[i].Tasks)[k].ID]
				}
			}
		}
	}
	if inc[prefix+"subordinates"] {
		m, err := h.store.SubordinatesOf(r.Context(), ids)
		if err != nil {
			return err
		}
		for i := range us {
			s := toUsers(m[us[i].ID])
			us[i].Subordinates = &s
		}
	}
	return nil
}

func (h *Handler) embedSubTasks(r *http.Request, ts []taskJSON) error {
	ids := make([]int64, len(ts))
	for i := range ts {
		ids[i] = ts[i].ID
	}
	m, err := h.store.SubTasksOf(r.Context(), uniq(ids))
	if err != nil {
		return err
	}
	for i := range ts {
		s := toTasks(m[ts[i].ID])
		ts[i].SubTasks = &s
	}
	return nil
}

func (h *Handler) user(r *http.Request) (any, error) {
	id, err := idParam(r)
	if err != nil {
		return nil, err
	}
	m, err := h.store.UsersByID(r.Context(), []int64{id})
	if err != nil {
		return nil, err
	}
	u, ok := m[id]
	if !ok {
		return nil, &httpError{code: http.StatusNotFound, msg: fmt.Sprintf("no user %d", id)}
	}
	return u, nil
}

func (h *Handler) userTasks(r *http.Request) (any, error) {
	id, err := idParam(r)
	if err != nil {
		return nil, err
	}
	completed, err := completedParam(r)
	if err != nil {
		return nil, err
	}
	m, err := h.store.TasksOfUsers(r.Context(), []int64{id}, completed)
	return nonNil(m[id]), err
}

func (h *Handler) subordinates(r *http.Request) (any, error) {
	id, err := idParam(r)
	if err != nil {
		return nil, err
	}
	m, err := h.store.SubordinatesOf(r.Context(), []int64{id})
	return nonNil(m[id]), err
}

func (h *Handler) subTasks(r *http.Request) (any, error) {
	id, err := idParam(r)
	if err != nil {
		return nil, err
	}
	m, err := h.store.SubTasksOf(r.Context(), []int64{id})
	return nonNil(m[id]), err
}

func (h *Handler) projectUsers(r *http.Request) (any, error) {
	id, err := idParam(r)
	if err != nil {
		return nil, err
	}
	first, err := intParam(r, "first", 1, MaxLimit, false)
	if err != nil {
		return nil, err
	}
	m, err := h.store.UsersOfProjects(r.Context(), []int64{id}, first)
	return nonNil(m[id]), err
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func toTasks(ts []relational.Task) []taskJSON {
	out := make([]taskJSON, len(ts))
	for i := range ts {
		out[i].Task = ts[i]
	}
	return out
}

func toUsers(us []relational.User) []userJSON {
	out := make([]userJSON, len(us))
	for i := range us {
		out[i].User = us[i]
	}
	return out
}

// uniq returns ids sorted without duplicates.
func uniq(ids []int64) []int64 {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return slices.Compact(ids)
}
