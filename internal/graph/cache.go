package graph

import (
	"context"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/vektah/gqlparser/v2/ast"
)

// Byte estimates charged to cache entries.
const (
	// QueryBytesPerSourceByte is the heap, in bytes, charged to the
	// parsed-query cache for each byte of a cached query's text: the text
	// itself (the cache key, which the AST's positions share) plus its
	// parsed and validated ast.QueryDocument.
	//
	// Measured with runtime.MemStats (live heap after GC, documents kept
	// alive; TestQueryBytesPerSourceByte) on gqlparser v2.5.64, the AST
	// alone retains per source byte: 18.5 B for GraphiQL's introspection
	// query, 22.5 B for a document of `qN: __typename` aliases (the shape
	// of issue 10's 1 MB query, which kept ~19 MB), 31.9 B for the
	// experiment's donut query, 31.7 B for `aN: add(x: N, y: 1)` aliases,
	// 37.4 B for two-letter aliases of a scalar field, and 75.7 B for the
	// densest document found, a run of `id id id ...` (3 source bytes per
	// ~230-byte ast.Field). 100 covers all of them, key included, with
	// about 30% to spare, so the byte budget bounds the real heap rather
	// than merely estimating it.
	QueryBytesPerSourceByte = 100
	// cacheEntryOverhead is the bytes charged to every entry besides its
	// key and value: the entry node (key and value headers, size, two
	// links: about 64 B) and its map slot (about 32 B), rounded up.
	cacheEntryOverhead = 128
)

// queryEntryBytes is the bytes charged to a parsed-query cache entry whose
// key is the query text: QueryBytesPerSourceByte per byte of it.
func queryEntryBytes(query string, _ *ast.QueryDocument) int64 {
	return int64(len(query))*QueryBytesPerSourceByte + cacheEntryOverhead
}

// apqEntryBytes is the bytes charged to an automatic persisted query
// entry: its key (the hex SHA-256 of the query) and the query text.
func apqEntryBytes(hash, query string) int64 {
	return int64(len(hash)) + int64(len(query)) + cacheEntryOverhead
}

// byteLRU is a least-recently-used cache bounded both by its number of
// entries and by the bytes its entries are charged (by its size function,
// fixed at construction). Adding an entry evicts the least recently used
// ones (Get and Add count as uses) until both bounds hold; an entry charged
// more than the whole byte budget is not kept at all. It implements
// gqlgen's graphql.Cache and is safe for concurrent use.
type byteLRU[T any] struct {
	maxEntries int   // at least 1
	maxBytes   int64 // at least 1
	size       func(key string, value T) int64

	mu    sync.Mutex
	items map[string]*lruEntry[T]
	// root links the entries in a ring: root.next is the most recently
	// used, root.prev the least.
	root  lruEntry[T]
	bytes int64 // sum of the entries' sizes
}

type lruEntry[T any] struct {
	key        string
	value      T
	size       int64
	prev, next *lruEntry[T]
}

var _ graphql.Cache[string] = (*byteLRU[string])(nil)

// newByteLRU returns an empty cache of at most maxEntries entries and
// maxBytes bytes as charged by size; non-positive bounds are taken as 1.
func newByteLRU[T any](maxEntries int, maxBytes int64, size func(key string, value T) int64) *byteLRU[T] {
	c := &byteLRU[T]{
		maxEntries: max(maxEntries, 1),
		maxBytes:   max(maxBytes, 1),
		size:       size,
		items:      make(map[string]*lruEntry[T]),
	}
	c.root.next, c.root.prev = &c.root, &c.root
	return c
}

// Get returns the value cached under key and marks it most recently used.
func (c *byteLRU[T]) Get(_ context.Context, key string) (value T, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return value, false
	}
	c.unlink(e)
	c.pushFront(e)
	return e.value, true
}

// Add caches value under key, replacing any value there, as the most
// recently used entry, then evicts the least recently used entries until
// the cache is within both bounds. A value whose charge exceeds the byte
// budget is not cached (and an older value under key is dropped).
func (c *byteLRU[T]) Add(_ context.Context, key string, value T) {
	n := c.size(key, value)
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[key]; ok {
		c.remove(e)
	}
	if n > c.maxBytes {
		return
	}
	e := &lruEntry[T]{key: key, value: value, size: n}
	c.items[key] = e
	c.pushFront(e)
	c.bytes += n
	for len(c.items) > c.maxEntries || c.bytes > c.maxBytes {
		c.remove(c.root.prev)
	}
}

// Remove drops the entry under key, reporting whether there was one.
func (c *byteLRU[T]) Remove(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if ok {
		c.remove(e)
	}
	return ok
}

// Len returns the number of entries cached.
func (c *byteLRU[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}

// Bytes returns the bytes charged to the cached entries, at most the
// byte budget.
func (c *byteLRU[T]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// remove unlinks e and forgets it; c.mu is held.
func (c *byteLRU[T]) remove(e *lruEntry[T]) {
	c.unlink(e)
	delete(c.items, e.key)
	c.bytes -= e.size
}

func (c *byteLRU[T]) unlink(e *lruEntry[T]) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

func (c *byteLRU[T]) pushFront(e *lruEntry[T]) {
	e.prev, e.next = &c.root, c.root.next
	c.root.next.prev = e
	c.root.next = e
}

// forgetRefused is a response middleware that uncaches what a refused
// operation left behind. gqlgen adds a document to the query cache only
// once it parses and validates (executor.parseQuery), but before the
// extensions run, so a document queryLimits refuses is cached by then: its
// entry is removed here. The APQ extension stores a query's text before it
// is even parsed, so a persisted query whose document fails to parse or
// validate, or is refused by queryLimits, is removed from the APQ cache
// too. A document that validates but is sent with bad variables or an
// unknown operation name stays cached: it is valid, and another request
// may use it.
func (h *Handler) forgetRefused(ctx context.Context, next graphql.ResponseHandler) *graphql.Response {
	resp := next(ctx)
	if resp == nil || len(resp.Errors) == 0 || !graphql.HasOperationContext(ctx) {
		return resp
	}
	oc := graphql.GetOperationContext(ctx)
	var invalid, limited bool
	for _, err := range resp.Errors {
		switch err.Extensions["code"] {
		case errcode.ParseFailed, errcode.ValidationFailed:
			invalid = invalid || oc.Doc == nil
		case errDepthLimit, errAliasLimit, errComplexityLimit:
			limited = true
		}
	}
	if limited {
		h.queryCache.Remove(oc.RawQuery)
	}
	if invalid || limited {
		if s := extension.GetApqStats(ctx); s != nil {
			h.apqCache.Remove(s.Hash)
		}
	}
	return resp
}
