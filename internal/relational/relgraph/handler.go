package relgraph

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/relational"
)

// Defaults for zero Options fields.
const (
	// DefaultBatchWait is how long the batched strategy's loaders gather
	// keys before querying when Options.BatchWait is zero. The resolvers of
	// one level start together and reach their loader within microseconds
	// on an idle machine; 2 ms leaves room for a busy one and adds at most
	// 2 ms per level to a response (dataloadgen's own default is 16 ms).
	DefaultBatchWait = 2 * time.Millisecond
	// DefaultQueryCacheSize is the parsed-query LRU size, in entries.
	DefaultQueryCacheSize = 1000
	// DefaultMaxComplexity bounds a query's complexity (see complexity: a
	// field counts once per item the lists above it hold), refused up front
	// with a GraphQL error: seed 000's costliest query (250 users, their
	// completed tasks and the tasks' subtasks) counts 85,251; the 100,000
	// subtasks of users(limit: 1000) { tasks { … subTasks … } } count
	// 341,001, and cost 800 MB of RSS and 5–12 s of CPU before.
	DefaultMaxComplexity = 100000
)

// CodeDatabaseUnavailable is the extensions.code of a GraphQL error caused
// by the database (a relational.DBError); extensions.cause names which.
const CodeDatabaseUnavailable = "DATABASE_UNAVAILABLE"

// Options configure NewHandler; the zero value is usable (naive).
type Options struct {
	// Strategy is Naive ("" too), Batched or Joined.
	Strategy Strategy
	// BatchWait is the batched loaders' gathering time; zero means
	// DefaultBatchWait.
	BatchWait time.Duration
	// QueryCacheSize is the parsed-query LRU's size in entries; zero
	// means DefaultQueryCacheSize.
	QueryCacheSize int
	// MaxComplexity refuses costlier queries; zero means
	// DefaultMaxComplexity.
	MaxComplexity int
	// Logger receives resolver panics; nil means zap.NewNop().
	Logger *zap.Logger
}

// Handler serves the relational GraphQL schema with one strategy, over
// HTTP GET and POST. A request whose database work failed gets HTTP 503
// and GraphQL errors with code CodeDatabaseUnavailable naming the cause.
// Wrap it in relational.Instrument, which gives each request the Tally the
// 503 is decided from.
type Handler struct {
	srv      *handler.Server
	store    *relational.Store
	strategy Strategy
	wait     time.Duration
}

// NewHandler returns the handler of one strategy over store.
func NewHandler(store *relational.Store, o Options) (*Handler, error) {
	switch o.Strategy {
	case "":
		o.Strategy = Naive
	case Naive, Batched, Joined:
	default:
		return nil, fmt.Errorf("GraphQL strategy must be naive, batched or joined (got %q)", o.Strategy)
	}
	if o.BatchWait <= 0 {
		o.BatchWait = DefaultBatchWait
	}
	if o.QueryCacheSize <= 0 {
		o.QueryCacheSize = DefaultQueryCacheSize
	}
	if o.MaxComplexity <= 0 {
		o.MaxComplexity = DefaultMaxComplexity
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	es := NewExecutableSchema(Config{Resolvers: &resolver{store: store, strategy: o.Strategy}, Complexity: complexity()})
	srv := handler.New(es)
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](o.QueryCacheSize))
	srv.Use(extension.FixedComplexityLimit(o.MaxComplexity))
	log := o.Logger
	srv.SetRecoverFunc(func(ctx context.Context, v any) error {
		log.Error("resolver panic", zap.Any("panic", v), zap.String("strategy", string(o.Strategy)))
		return errors.New("internal server error")
	})
	srv.SetErrorPresenter(presentError)
	return &Handler{srv: srv, store: store, strategy: o.Strategy, wait: o.BatchWait}, nil
}

// presentError gives a database failure its code and cause.
func presentError(ctx context.Context, err error) *gqlerror.Error {
	ge := graphql.DefaultErrorPresenter(ctx, err)
	var de *relational.DBError
	if errors.As(err, &de) {
		ge.Message = de.Error()
		if ge.Extensions == nil {
			ge.Extensions = map[string]any{}
		}
		ge.Extensions["code"] = CodeDatabaseUnavailable
		ge.Extensions["cause"] = de.Cause
	}
	return ge
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.strategy == Batched {
		r = r.WithContext(context.WithValue(r.Context(), loadersKey{}, newLoaders(h.store, h.wait)))
	}
	h.srv.ServeHTTP(&statusWriter{ResponseWriter: w, tally: relational.TallyFrom(r.Context())}, r)
}

// statusWriter turns the 200 of a response whose request met a database
// failure into a 503: gqlgen writes the status only after execution, when
// the tally is final.
type statusWriter struct {
	http.ResponseWriter
	tally   *relational.Tally
	written bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.written {
		s.written = true
		if code == http.StatusOK && s.tally != nil && s.tally.Err() != nil {
			code = http.StatusServiceUnavailable
		}
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if !s.written {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

// Fan-outs of seed 000's data (relational.SeedSizes): what a connection
// below the root is expected to hold, for the complexity count.
const (
	tasksPerUser        = 10
	subTasksPerTask     = 10
	subordinatesPerUser = 10
	membersPerProject   = 25
	projects            = 10
)

// complexity counts a query's cost as the fields it resolves: a list field
// multiplies its selection by the items it returns, its limit argument
// for the root lists and seed 000's fan-out for the connections below, so
// that lists nested in lists multiply. gqlgen's default counts each field
// once whatever the lists above it, which let one request resolve 100,000
// subtasks.
func complexity() ComplexityRoot {
	var c ComplexityRoot
	list := func(n, child int) int { return 1 + max(n, 0)*child }
	c.Query.Users = func(child, limit int) int { return list(limit, child) }
	c.Query.Tasks = func(child, limit int) int { return list(limit, child) }
	c.Query.Projects = func(child int) int { return list(projects, child) }
	c.User.Tasks = func(child int, _ *bool) int { return list(tasksPerUser, child) }
	c.User.Subordinates = func(child int) int { return list(subordinatesPerUser, child) }
	c.Task.SubTasks = func(child int) int { return list(subTasksPerTask, child) }
	c.Project.Users = func(child int, first *int) int {
		n := membersPerProject
		if first != nil && *first < n {
			n = *first
		}
		return list(n, child)
	}
	return c
}
