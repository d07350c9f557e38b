package relational

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Tally counts one request's database work: the queries it ran, the rows
// they returned and the time spent in them, measured around each query
// from the driver call that sends it until its last row is read and its
// result closed (so it includes waiting for a pooled connection). Attach it
// to the request's context with WithTally; it is safe for concurrent use
// (GraphQL resolvers and data loaders query from many goroutines).
type Tally struct {
	queries atomic.Int64
	rows    atomic.Int64
	nanos   atomic.Int64
	err     atomic.Pointer[DBError] // the first database failure
}

// TallySnapshot is a Tally's figures at one moment.
type TallySnapshot struct {
	Queries int64         `json:"queries"`
	Rows    int64         `json:"rows"`
	Time    time.Duration `json:"time_ns"`
}

// Snapshot returns the figures counted so far.
func (t *Tally) Snapshot() TallySnapshot {
	return TallySnapshot{Queries: t.queries.Load(), Rows: t.rows.Load(), Time: time.Duration(t.nanos.Load())}
}

// Err returns the request's first database failure, nil if none.
func (t *Tally) Err() *DBError { return t.err.Load() }

func (t *Tally) add(rows int64, d time.Duration) {
	if t == nil {
		return
	}
	t.queries.Add(1)
	t.rows.Add(rows)
	t.nanos.Add(int64(d))
}

func (t *Tally) fail(e *DBError) {
	if t != nil {
		t.err.CompareAndSwap(nil, e)
	}
}

type tallyKey struct{}

// WithTally returns ctx carrying t: the Store's queries under it count in t.
func WithTally(ctx context.Context, t *Tally) context.Context {
	return context.WithValue(ctx, tallyKey{}, t)
}

// TallyFrom returns the Tally ctx carries, or nil.
func TallyFrom(ctx context.Context) *Tally {
	t, _ := ctx.Value(tallyKey{}).(*Tally)
	return t
}

// Causes of a DBError: small fixed set, used as a metric label.
const (
	// CauseTimeout: the request's deadline passed while waiting for a
	// pooled connection or for the database's answer (an exhausted pool
	// or a slow database).
	CauseTimeout = "timeout"
	// CauseCanceled: the client went away before the database answered.
	CauseCanceled = "canceled"
	// CauseConnection: the database is closed, unreachable or dropped the
	// connection.
	CauseConnection = "connection"
	// CauseQuery: the database refused or failed the query itself.
	CauseQuery = "query"
)

// DBError is a database failure as the handlers report it: HTTP 503 and a
// GraphQL error naming Cause and the driver's message.
type DBError struct {
	Cause string
	// Detail says what the cause means for this store (pool size, etc.).
	Detail string
	Err    error
}

// Error implements error.
func (e *DBError) Error() string {
	return fmt.Sprintf("database unavailable (%s): %s: %v", e.Cause, e.Detail, e.Err)
}

// Unwrap returns the driver's error.
func (e *DBError) Unwrap() error { return e.Err }

// classify turns a query's error into a DBError naming its cause.
func (s *Store) classify(ctx context.Context, err error) *DBError {
	var de *DBError
	if errors.As(err, &de) {
		return de
	}
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return &DBError{Cause: CauseTimeout, Err: err, Detail: fmt.Sprintf(
			"no pooled connection or no answer before the request's deadline (all %d connections busy, or the %s database is slow)", s.pool, s.kind)}
	case errors.Is(ctx.Err(), context.Canceled) || errors.Is(err, context.Canceled):
		return &DBError{Cause: CauseCanceled, Err: err, Detail: "the request was cancelled while the query ran"}
	case errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) || isClosed(err) || isConnError(err):
		return &DBError{Cause: CauseConnection, Err: err, Detail: fmt.Sprintf("the %s database closed, refused or dropped the connection", s.kind)}
	}
	return &DBError{Cause: CauseQuery, Err: err, Detail: fmt.Sprintf("the %s database failed the query", s.kind)}
}

// isClosed reports database/sql's error for a closed *sql.DB, which it
// does not export.
func isClosed(err error) bool { return err != nil && err.Error() == "sql: database is closed" }
