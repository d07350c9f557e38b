package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/donut"
)

// Defaults applied by NewHandler to zero-valued Options fields.
const (
	// DefaultQueryCacheSize is the parsed-query LRU size, in entries, used when
	// Options.QueryCacheSize is not positive; it is gqlgen's own default.
	DefaultQueryCacheSize = 1000
	// DefaultAPQCacheSize is the persisted-query LRU size, in entries, used
	// when Options.APQCacheSize is not positive; it is gqlgen's own default.
	DefaultAPQCacheSize = 100
	// DefaultQueryCacheBytes is the parsed-query cache budget, in bytes as
	// charged by QueryBytesPerSourceByte, used when Options.QueryCacheBytes
	// is not positive: 16 MiB, which holds DefaultQueryCacheSize queries of
	// up to ~165 bytes of text each (the experiment's are under 100), or
	// fewer longer ones, and caches no query longer than ~167 KB.
	DefaultQueryCacheBytes int64 = 16 << 20
	// DefaultAPQCacheBytes is the persisted-query cache budget, in bytes of
	// hash and query text, used when Options.APQCacheBytes is not positive:
	// 4 MiB.
	DefaultAPQCacheBytes int64 = 4 << 20
	// DefaultKeepAlive is the websocket keep-alive interval used when
	// Options.KeepAlive is zero; seed 002's server used 5 s.
	DefaultKeepAlive = 5 * time.Second
	// DefaultMaxBodyBytes is the request body limit, in bytes, used when
	// Options.MaxBodyBytes is not positive. 1 MiB is orders of magnitude above
	// any request the experiment sends.
	DefaultMaxBodyBytes int64 = 1 << 20
	// DefaultWebsocketInitTimeout is how long a websocket may stay open
	// without connection_init when Options.WebsocketInitTimeout is zero:
	// soakd's own clients send it at once, so 10 s only ever catches a
	// client that is broken or idle on purpose.
	DefaultWebsocketInitTimeout = 10 * time.Second
	// DefaultWebsocketWriteTimeout bounds one websocket message write when
	// Options.WebsocketWriteTimeout is zero. A loopback write blocks only
	// when the client has stopped reading and both socket buffers (megabytes)
	// are full; 10 s of that means the client is gone or stuck.
	DefaultWebsocketWriteTimeout = 10 * time.Second
	// DefaultMaxSubscriptionsPerSocket is the most operations one websocket
	// may have active at once when Options.MaxSubscriptionsPerSocket is
	// zero: the driver opens at most 100 per connection (seed 002: 2).
	DefaultMaxSubscriptionsPerSocket = 100
)

// Options configures NewHandler. The zero value is usable: every zero field
// takes the default documented on it.
type Options struct {
	// Introspection enables __schema and __type queries. Off by default, as a
	// production server would have it.
	Introspection bool
	// QueryCacheSize is the largest number of parsed query documents kept
	// in an LRU, so repeated queries skip parsing and validation. Zero or
	// less means DefaultQueryCacheSize.
	QueryCacheSize int
	// QueryCacheBytes is the second bound of that LRU, in bytes: each
	// document is charged QueryBytesPerSourceByte per byte of its query
	// text (a measured upper bound of the text and AST it keeps), and the
	// least recently used are evicted to keep the total within the budget;
	// a document charged more than the whole budget is not cached. Only
	// documents that parse, validate and pass the depth and complexity
	// limits stay cached. Zero or less means DefaultQueryCacheBytes.
	QueryCacheBytes int64
	// APQCacheSize is the largest number of automatic persisted queries
	// (query text by SHA-256 hash) kept in an LRU. Zero or less means
	// DefaultAPQCacheSize.
	APQCacheSize int
	// APQCacheBytes is the second bound of that LRU, in bytes of hash and
	// query text (plus a small fixed charge per entry); a query larger than
	// the budget is not kept, nor is one whose document is refused. Zero or
	// less means DefaultAPQCacheBytes.
	APQCacheBytes int64
	// KeepAlive is the interval between keep-alive messages: "ka" on legacy
	// graphql-ws connections, ping on graphql-transport-ws ones. Zero means
	// DefaultKeepAlive; a negative value disables keep-alives.
	KeepAlive time.Duration
	// MaxBodyBytes is the largest accepted request body, in bytes; larger
	// bodies get HTTP 413. It is also the largest websocket message accepted
	// from a client (a subscribe message is that transport's request body);
	// a larger one closes the connection with status 1009 (message too
	// big). Zero or less means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxDepth is the deepest selection nesting accepted, in field levels
	// ({ donut(id: 1) { id } } is 2), with fragments and inline fragments
	// expanded and introspection fields counted. A deeper operation is
	// refused before it executes with the GraphQL error "query depth N
	// exceeds the limit of M". Zero means DefaultMaxDepth; a negative value
	// disables the limit.
	MaxDepth int
	// MaxAliases is the largest number of aliased fields (a: add counts,
	// add does not) accepted in one operation, fragments expanded and
	// introspection fields counted. An operation with more is refused
	// before it executes with the GraphQL error "operation has N aliased
	// fields, which exceeds the limit of M" (code ALIAS_LIMIT_EXCEEDED).
	// Zero means DefaultMaxAliases; a negative value disables the limit.
	MaxAliases int
	// MaxComplexity is the largest complexity accepted: one point per
	// field plus its selections' points, aliases and fragments included,
	// the figure of gqlgen's extension.FixedComplexityLimit except that
	// introspection fields (__schema and all under it) count like any
	// other, where gqlgen counts them 0. A costlier operation is refused
	// before it executes with the GraphQL error "operation has complexity N,
	// which exceeds the limit of M". Zero means DefaultMaxComplexity; a
	// negative value disables the limit.
	MaxComplexity int
	// WebsocketInitTimeout is how long a websocket may stay open without
	// sending connection_init; then it is closed with status 4408. Zero
	// means DefaultWebsocketInitTimeout; a negative value disables it.
	WebsocketInitTimeout time.Duration
	// WebsocketWriteTimeout bounds the write of one message to a websocket
	// client; a client that stops reading for longer is disconnected, which
	// ends its subscriptions. (Until then the broker drops and counts the
	// events it cannot take, and publishers never wait.) Zero means
	// DefaultWebsocketWriteTimeout; a negative value disables it.
	WebsocketWriteTimeout time.Duration
	// MaxSubscriptionsPerSocket is the most operations (subscriptions, and
	// queries or mutations sent over the socket) one websocket connection
	// may have active at once; an operation is active from its subscribe
	// (legacy: start) until the server's complete or error for it. One more
	// closes the connection with status 4429 "Too many subscriptions" (after
	// a connection_error on legacy graphql-ws). Zero means
	// DefaultMaxSubscriptionsPerSocket; a negative value disables the limit.
	MaxSubscriptionsPerSocket int
	// Logger receives resolver panics and websocket errors. Nil means
	// zap.NewNop().
	Logger *zap.Logger
	// OnOperation, when set, is called with each operation's context and
	// name ("" for an anonymous operation) before it executes: the hook
	// request metrics use to label by operation name, never by query text.
	OnOperation func(ctx context.Context, name string)
}

// Handler serves GraphQL over HTTP (GET, POST application/json, POST
// application/graphql) and websockets (graphql-transport-ws and the legacy
// graphql-ws). It is safe for concurrent use.
type Handler struct {
	srv      *handler.Server
	maxBody  int64
	log      *zap.Logger
	panics   atomic.Uint64
	resolver *resolver
	// queryCache holds parsed documents by query text, apqCache persisted
	// query texts by hash.
	queryCache *byteLRU[*ast.QueryDocument]
	apqCache   *byteLRU[string]
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns a GraphQL handler over svc configured by opts. It
// returns the concrete *Handler (an http.Handler) so that callers can also read
// its panic counter.
func NewHandler(svc *donut.Service, opts Options) *Handler {
	if opts.QueryCacheSize <= 0 {
		opts.QueryCacheSize = DefaultQueryCacheSize
	}
	if opts.APQCacheSize <= 0 {
		opts.APQCacheSize = DefaultAPQCacheSize
	}
	if opts.QueryCacheBytes <= 0 {
		opts.QueryCacheBytes = DefaultQueryCacheBytes
	}
	if opts.APQCacheBytes <= 0 {
		opts.APQCacheBytes = DefaultAPQCacheBytes
	}
	switch {
	case opts.KeepAlive == 0:
		opts.KeepAlive = DefaultKeepAlive
	case opts.KeepAlive < 0:
		opts.KeepAlive = 0 // gqlgen sends no keep-alives at 0
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.MaxDepth == 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	if opts.MaxAliases == 0 {
		opts.MaxAliases = DefaultMaxAliases
	}
	if opts.MaxComplexity == 0 {
		opts.MaxComplexity = DefaultMaxComplexity
	}
	if opts.WebsocketInitTimeout == 0 {
		opts.WebsocketInitTimeout = DefaultWebsocketInitTimeout
	}
	if opts.WebsocketWriteTimeout == 0 {
		opts.WebsocketWriteTimeout = DefaultWebsocketWriteTimeout
	}
	if opts.MaxSubscriptionsPerSocket == 0 {
		opts.MaxSubscriptionsPerSocket = DefaultMaxSubscriptionsPerSocket
	}

	h := &Handler{
		maxBody:    opts.MaxBodyBytes,
		log:        opts.Logger,
		resolver:   &resolver{svc: svc},
		queryCache: newByteLRU(opts.QueryCacheSize, opts.QueryCacheBytes, queryEntryBytes),
		apqCache:   newByteLRU(opts.APQCacheSize, opts.APQCacheBytes, apqEntryBytes),
	}
	srv := handler.New(NewExecutableSchema(Config{Resolvers: h.resolver}))
	srv.AddTransport(transport.Websocket{
		// The guard closes connections sending malformed or out-of-order
		// messages with graphql-transport-ws close codes (see judgeFrame)
		// or reusing an active operation's id, caps the operations active
		// per connection (see admit), and applies the init and write
		// timeouts (negative: none).
		Implementation: guardedWebsocket{
			inner: transport.CoderWebsocketImplementation{
				AcceptOptions: websocket.AcceptOptions{
					// Same-host origins are always accepted; these patterns add
					// any loopback origin, since soakd only ever serves and drives
					// load on 127.0.0.1. Browsers elsewhere are refused.
					OriginPatterns: []string{"127.0.0.1:*", "localhost:*", `\[::1\]:*`},
				},
			},
			initTimeout:  opts.WebsocketInitTimeout,
			writeTimeout: opts.WebsocketWriteTimeout,
			maxActive:    opts.MaxSubscriptionsPerSocket,
		},
		// coder/websocket closes a connection whose message exceeds this
		// with 1009 (message too big).
		PayloadReadLimit: &opts.MaxBodyBytes,
		// Both protocols get a keep-alive every opts.KeepAlive: "ka" messages
		// on graphql-ws, pings on graphql-transport-ws. A missing pong does not
		// close the connection (MissingPongOk), so a busy client is not
		// disconnected mid-soak; the pings only keep the socket warm.
		KeepAlivePingInterval: opts.KeepAlive,
		PingPongInterval:      opts.KeepAlive,
		MissingPongOk:         true,
		ErrorFunc: func(_ context.Context, err error) {
			h.log.Debug("websocket error", zap.Error(err))
		},
	})
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.AddTransport(transport.GRAPHQL{}) // Content-Type application/graphql, as seed 003 sends
	srv.SetQueryCache(h.queryCache)
	srv.Use(extension.AutomaticPersistedQuery{Cache: h.apqCache})
	srv.AroundResponses(h.forgetRefused)
	if opts.Introspection {
		srv.Use(extension.Introspection{})
	}
	// The limits run after parsing and validation, before execution (see
	// queryLimits for why not extension.FixedComplexityLimit).
	if opts.MaxDepth > 0 || opts.MaxAliases > 0 || opts.MaxComplexity > 0 {
		srv.Use(&queryLimits{maxDepth: opts.MaxDepth, maxAliases: opts.MaxAliases, maxComplexity: opts.MaxComplexity})
	}
	srv.AroundOperations(websocketOnlySubscriptions)
	if on := opts.OnOperation; on != nil {
		srv.AroundOperations(func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
			oc := graphql.GetOperationContext(ctx)
			name := oc.OperationName
			if name == "" && oc.Operation != nil {
				name = oc.Operation.Name // a single named operation sent without operationName
			}
			on(ctx, name)
			return next(ctx)
		})
	}
	srv.SetRecoverFunc(h.recoverResolver)
	srv.SetErrorPresenter(presentError) // no error quotes more than a little of the input
	h.srv = srv
	return h
}

// websocketKey marks the context of a websocket upgrade request.
type websocketKey struct{}

// websocketOnlySubscriptions refuses subscriptions outside websockets. Without
// it, a subscription POSTed over HTTP would hold the request (and a broker
// subscription) open until the client gave up, with no way to stream events.
// Only upgrade requests carry the marker, so ordinary queries pay no
// allocation for it.
func websocketOnlySubscriptions(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	if oc := graphql.GetOperationContext(ctx); oc.Operation != nil &&
		oc.Operation.Operation == ast.Subscription && ctx.Value(websocketKey{}) == nil {
		return graphql.OneShot(graphql.ErrorResponse(ctx,
			"subscriptions are served only over websocket (graphql-transport-ws or graphql-ws)"))
	}
	return next(ctx)
}

// recoverResolver counts and logs a panic raised while resolving, and gives
// the client a generic error: the server keeps serving.
func (h *Handler) recoverResolver(ctx context.Context, p any) error {
	h.panics.Add(1)
	fields := []zap.Field{zap.Any("panic", p), zap.StackSkip("stack", 1)}
	if fc := graphql.GetFieldContext(ctx); fc != nil {
		fields = append(fields, zap.Stringer("path", fc.Path()))
	}
	h.log.Error("resolver panic", fields...)
	return errors.New("internal server error")
}

// Panics returns the number of resolver panics recovered since NewHandler.
// Each one was turned into a GraphQL "internal server error".
func (h *Handler) Panics() uint64 {
	return h.panics.Load()
}

// ServeHTTP enforces the body limit, marks websocket upgrades (the only
// transport that may run subscriptions), then hands the request to gqlgen. A
// body
// declared larger than the limit is refused before reading; a body of unknown
// length (chunked) is read up to the limit first, so that it too gets a 413
// rather than a GraphQL error; other bodies are capped with
// http.MaxBytesReader.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.ContentLength > h.maxBody:
		h.tooLarge(w)
		return
	case r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody:
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				h.tooLarge(w)
				return
			}
			writeError(w, http.StatusBadRequest, fmt.Sprintf("cannot read request body: %v", err))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
	case r.Body != nil && r.Body != http.NoBody:
		r.Body = http.MaxBytesReader(w, r.Body, h.maxBody)
	}
	if r.Header.Get("Upgrade") != "" {
		r = r.WithContext(context.WithValue(r.Context(), websocketKey{}, true))
	}
	h.srv.ServeHTTP(w, r)
}

func (h *Handler) tooLarge(w http.ResponseWriter) {
	writeError(w, http.StatusRequestEntityTooLarge,
		fmt.Sprintf("request body too large: the limit is %d bytes", h.maxBody))
}

// writeError writes a GraphQL-shaped error response with the given status.
func writeError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(graphql.Response{Errors: gqlerror.List{{Message: msg}}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
