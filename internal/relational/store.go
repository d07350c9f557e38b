package relational

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Store kinds.
const (
	// StoreSQLite is the embedded default: modernc.org/sqlite, pure Go, in
	// a temporary file that Close removes.
	StoreSQLite = "sqlite"
	// StorePostgres is a PostgreSQL server reached through pgx.
	StorePostgres = "postgres"
)

// DefaultPoolSize is the connection pool size used when Options.PoolSize is
// not positive: seed 000's Sequelize pool ({ max: 25 }), large enough that
// its c = 20 never waits for a connection.
const DefaultPoolSize = 25

// DefaultConnectTimeout bounds Open's first connection to PostgreSQL when
// the DSN sets no connect_timeout.
const DefaultConnectTimeout = 10 * time.Second

// Options configure Open. The zero value opens seed 000's data in SQLite.
type Options struct {
	// Store is StoreSQLite ("" too) or StorePostgres.
	Store string
	// DSN is the PostgreSQL connection string (URL or key=value), for
	// StorePostgres only. DSNSource names where it came from (a config key
	// or an environment variable), for error messages.
	DSN       string
	DSNSource string
	// Dir is where SQLite's temporary database file goes; "" is the
	// system's temporary directory.
	Dir string
	// PoolSize is the most open connections (database/sql's
	// SetMaxOpenConns); a request that needs one more waits for one, until
	// its context ends. Zero or less means DefaultPoolSize.
	PoolSize int
	// Seed drives Generate; Sizes are the data's dimensions (zero value:
	// SeedSizes).
	Seed  uint64
	Sizes Sizes
}

// Store is a loaded database and the instrumented queries over it. Its
// methods are safe for concurrent use.
type Store struct {
	db      *sql.DB
	kind    string
	pool    int
	sizes   Sizes
	cleanup func() error // removes the SQLite file or drops the PostgreSQL schema
}

// Open generates the data, creates the tables in a database of their own
// (a new SQLite file, or a new schema in PostgreSQL, both removed by Close)
// and loads it. ctx bounds the connection and the load.
//
// Why a temporary file for SQLite and not ":memory:": an in-memory database
// belongs to one connection, so a pool of PoolSize connections would see
// PoolSize empty databases (or, with a shared cache, serialise on table
// locks and fail with SQLITE_LOCKED under load). A file in WAL mode lets
// every pooled connection read at once; its ~15 MB stay in the operating
// system's page cache and SQLite's own, outside the Go heap.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Sizes == (Sizes{}) {
		o.Sizes = SeedSizes()
	}
	if o.PoolSize <= 0 {
		o.PoolSize = DefaultPoolSize
	}
	data, err := Generate(o.Seed, o.Sizes)
	if err != nil {
		return nil, fmt.Errorf("cannot generate the relational data: %w", err)
	}
	var s *Store
	switch o.Store {
	case "", StoreSQLite:
		s, err = openSQLite(o)
	case StorePostgres:
		s, err = openPostgres(ctx, o)
	default:
		return nil, fmt.Errorf("relational store must be %s or %s (got %q)", StoreSQLite, StorePostgres, o.Store)
	}
	if err != nil {
		return nil, err
	}
	s.sizes = o.Sizes
	if err := s.load(ctx, data); err != nil {
		return nil, errors.Join(fmt.Errorf("cannot load the relational data into %s: %w", s.kind, err), s.Close())
	}
	return s, nil
}

func openSQLite(o Options) (*Store, error) {
	dir := o.Dir
	if dir == "" {
		dir = os.TempDir()
	}
	tmp, err := os.MkdirTemp(dir, "soakd-relational-")
	if err != nil {
		return nil, fmt.Errorf("cannot create the SQLite database's directory: %w", err)
	}
	path := filepath.Join(tmp, "seed000.db")
	// WAL: readers on every pooled connection at once. busy_timeout: a
	// reader that meets the loader's lock waits instead of failing.
	// synchronous=OFF: the file is scratch, rebuilt on every start.
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous(OFF)&_pragma=foreign_keys(OFF)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return nil, fmt.Errorf("cannot open the SQLite database %s: %w", path, err)
	}
	db.SetMaxOpenConns(o.PoolSize)
	db.SetMaxIdleConns(o.PoolSize)
	return &Store{db: db, kind: StoreSQLite, pool: o.PoolSize, cleanup: func() error {
		return errors.Join(db.Close(), os.RemoveAll(tmp))
	}}, nil
}

func openPostgres(ctx context.Context, o Options) (*Store, error) {
	src := o.DSNSource
	if src == "" {
		src = "the DSN"
	}
	if o.DSN == "" {
		return nil, fmt.Errorf("relational store postgres needs a DSN, and %s is empty: set it to a connection string such as postgres://user:password@127.0.0.1:5432/db", src)
	}
	cfg, err := pgx.ParseConfig(o.DSN)
	if err != nil {
		// pgx's message quotes the DSN with its password masked.
		return nil, fmt.Errorf("%s is not a PostgreSQL connection string pgx can parse (postgres://user:password@host:5432/db or host=… user=… dbname=…): %w", src, err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	// A schema of our own, so that nothing of the user's database is
	// touched and two stores (two targets, parallel test packages) never
	// meet. search_path may name a schema that does not exist yet.
	schema := "soakd_relational_" + randomHex(6)
	cfg.RuntimeParams["search_path"] = schema
	cfg.RuntimeParams["application_name"] = "soakd relational target"
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(o.PoolSize)
	db.SetMaxIdleConns(o.PoolSize)
	where := fmt.Sprintf("%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("cannot connect to PostgreSQL %s (from %s): %w", where, src, err)
	}
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("cannot create schema %s in PostgreSQL %s (the role needs CREATE on the database): %w", schema, where, err)
	}
	return &Store{db: db, kind: StorePostgres, pool: o.PoolSize, cleanup: func() error {
		// A pool of its own: the store's may be closed already (the
		// database went away, or a test closed it).
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		closeErr := db.Close()
		drop := stdlib.OpenDB(*cfg)
		defer func() { _ = drop.Close() }()
		if _, err := drop.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			return errors.Join(fmt.Errorf("cannot drop schema %s: %w", schema, err), closeErr)
		}
		return closeErr
	}}, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// Close releases the database: it removes SQLite's file, or drops the
// PostgreSQL schema Open created. Queries after Close fail.
func (s *Store) Close() error { return s.cleanup() }

// Kind is StoreSQLite or StorePostgres.
func (s *Store) Kind() string { return s.kind }

// PoolSize is the most connections the store opens.
func (s *Store) PoolSize() int { return s.pool }

// Sizes are the dimensions of the loaded data.
func (s *Store) Sizes() Sizes { return s.sizes }

// DB is the connection pool, for its statistics (sql.DBStats) and for
// tests that hold connections to exhaust it. Queries go through the
// Store's methods, which are instrumented.
func (s *Store) DB() *sql.DB { return s.db }

// schemaSQL creates the tables; the same statements run on SQLite and
// PostgreSQL. Partial index tasks_user serves User.tasks (parent tasks).
var schemaSQL = []string{
	`CREATE TABLE projects (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`,
	`CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, manager_id INTEGER REFERENCES users (id))`,
	`CREATE TABLE project_users (project_id INTEGER NOT NULL REFERENCES projects (id), user_id INTEGER NOT NULL REFERENCES users (id), PRIMARY KEY (project_id, user_id))`,
	`CREATE TABLE tasks (id INTEGER PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users (id), parent_id INTEGER REFERENCES tasks (id), name TEXT NOT NULL, completed BOOLEAN NOT NULL)`,
	`CREATE INDEX tasks_user ON tasks (user_id, id) WHERE parent_id IS NULL`,
	`CREATE INDEX tasks_parent ON tasks (parent_id, id)`,
	`CREATE INDEX users_manager ON users (manager_id, id)`,
}

// insertBatch is how many rows one INSERT carries: 200 rows of at most 5
// columns stay far below SQLite's 32,766 and PostgreSQL's 65,535 parameters.
const insertBatch = 200

// load creates the tables and inserts data in one transaction, then
// refreshes the planner's statistics.
func (s *Store) load(ctx context.Context, d Dataset) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	for _, q := range schemaSQL {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	nullable := func(v int64) any {
		if v == 0 {
			return nil
		}
		return v
	}
	insert := func(table string, cols []string, n int, row func(i int) []any) error {
		for start := 0; start < n; start += insertBatch {
			end := min(start+insertBatch, n)
			var b strings.Builder
			args := make([]any, 0, (end-start)*len(cols))
			b.WriteString("INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES ")
			for i := start; i < end; i++ {
				if i > start {
					b.WriteString(", ")
				}
				b.WriteByte('(')
				for c, v := range row(i) {
					if c > 0 {
						b.WriteString(", ")
					}
					args = append(args, v)
					b.WriteString("$" + strconv.Itoa(len(args)))
				}
				b.WriteByte(')')
			}
			if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
				return fmt.Errorf("insert into %s: %w", table, err)
			}
		}
		return nil
	}
	if err := insert("projects", []string{"id", "name"}, len(d.Projects), func(i int) []any {
		return []any{d.Projects[i].ID, d.Projects[i].Name}
	}); err != nil {
		return err
	}
	if err := insert("users", []string{"id", "name", "manager_id"}, len(d.Users), func(i int) []any {
		return []any{d.Users[i].ID, d.Users[i].Name, nullable(d.Users[i].ManagerID)}
	}); err != nil {
		return err
	}
	if err := insert("project_users", []string{"project_id", "user_id"}, len(d.Members), func(i int) []any {
		return []any{d.Members[i].ProjectID, d.Members[i].UserID}
	}); err != nil {
		return err
	}
	if err := insert("tasks", []string{"id", "user_id", "parent_id", "name", "completed"}, len(d.Tasks), func(i int) []any {
		t := d.Tasks[i]
		return []any{t.ID, t.UserID, nullable(t.ParentID), t.Name, t.Completed}
	}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, "ANALYZE"); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}
