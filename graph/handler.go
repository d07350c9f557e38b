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
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/coder/websocket"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"go.uber.org/zap"

	"github.com/soakd/soakd/donut"
)

// Defaults applied by NewHandler to zero-valued Options fields.
const (
	// DefaultQueryCacheSize is the parsed-query LRU size, in entries, used when
	// Options.QueryCacheSize is not positive; it is gqlgen's own default.
	DefaultQueryCacheSize = 1000
	// DefaultAPQCacheSize is the persisted-query LRU size, in entries, used
	// when Options.APQCacheSize is not positive; it is gqlgen's own default.
	DefaultAPQCacheSize = 100
	// DefaultKeepAlive is the websocket keep-alive interval used when
	// Options.KeepAlive is zero; seed 002's server used 5 s.
	DefaultKeepAlive = 5 * time.Second
	// DefaultMaxBodyBytes is the request body limit, in bytes, used when
	// Options.MaxBodyBytes is not positive. 1 MiB is orders of magnitude above
	// any request the experiment sends.
	DefaultMaxBodyBytes int64 = 1 << 20
)

// Options configures NewHandler. The zero value is usable: every zero field
// takes the default documented on it.
type Options struct {
	// Introspection enables __schema and __type queries. Off by default, as a
	// production server would have it.
	Introspection bool
	// QueryCacheSize is the number of parsed query documents kept in an LRU,
	// so repeated queries skip parsing and validation. Zero or less means
	// DefaultQueryCacheSize.
	QueryCacheSize int
	// APQCacheSize is the number of automatic persisted queries (query text by
	// SHA-256 hash) kept in an LRU. Zero or less means DefaultAPQCacheSize.
	APQCacheSize int
	// KeepAlive is the interval between keep-alive messages: "ka" on legacy
	// graphql-ws connections, ping on graphql-transport-ws ones. Zero means
	// DefaultKeepAlive; a negative value disables keep-alives.
	KeepAlive time.Duration
	// MaxBodyBytes is the largest accepted request body, in bytes; larger
	// bodies get HTTP 413. Zero or less means DefaultMaxBodyBytes.
	MaxBodyBytes int64
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

	h := &Handler{
		maxBody:  opts.MaxBodyBytes,
		log:      opts.Logger,
		resolver: &resolver{svc: svc},
	}
	srv := handler.New(NewExecutableSchema(Config{Resolvers: h.resolver}))
	srv.AddTransport(transport.Websocket{
		Implementation: transport.CoderWebsocketImplementation{
			AcceptOptions: websocket.AcceptOptions{
				// Same-host origins are always accepted; these patterns add
				// any loopback origin, since soakd only ever serves and drives
				// load on 127.0.0.1. Browsers elsewhere are refused.
				OriginPatterns: []string{"127.0.0.1:*", "localhost:*", `\[::1\]:*`},
			},
		},
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
	srv.SetQueryCache(lru.New[*ast.QueryDocument](opts.QueryCacheSize))
	srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](opts.APQCacheSize)})
	if opts.Introspection {
		srv.Use(extension.Introspection{})
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
