package graph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
)

// lenSize charges a string entry its value's length, in bytes.
func lenSize(_ string, v string) int64 { return int64(len(v)) }

// has reports which of keys c holds, without touching recency order
// more than Get does.
func has(c *byteLRU[string], keys ...string) string {
	var b strings.Builder
	for _, k := range keys {
		if _, ok := c.Get(context.Background(), k); ok {
			b.WriteString(k)
		}
	}
	return b.String()
}

func TestByteLRUEvictsLeastRecentlyUsed(t *testing.T) {
	ctx := context.Background()
	c := newByteLRU(100, 10, lenSize)
	c.Add(ctx, "a", "aaaa")
	c.Add(ctx, "b", "bbbb")
	if _, ok := c.Get(ctx, "a"); !ok { // b is now the least recently used
		t.Fatal("a missing")
	}
	c.Add(ctx, "c", "cccc") // 12 bytes > 10: b goes
	if got := has(c, "a", "b", "c"); got != "ac" {
		t.Errorf("cached %q, want ac", got)
	}
	if c.Len() != 2 || c.Bytes() != 8 {
		t.Errorf("Len %d Bytes %d, want 2 and 8", c.Len(), c.Bytes())
	}
	c.Add(ctx, "d", "dddddddd") // 8 more bytes: both a and c must go
	if got := has(c, "a", "c", "d"); got != "d" || c.Bytes() != 8 {
		t.Errorf("cached %q (%d bytes), want only d (8 bytes)", got, c.Bytes())
	}
}

func TestByteLRUEntryBound(t *testing.T) {
	ctx := context.Background()
	c := newByteLRU(2, 1<<20, lenSize)
	for _, k := range []string{"a", "b", "c"} {
		c.Add(ctx, k, k)
	}
	if got := has(c, "a", "b", "c"); got != "bc" || c.Len() != 2 || c.Bytes() != 2 {
		t.Errorf("cached %q, Len %d, Bytes %d; want bc, 2, 2", got, c.Len(), c.Bytes())
	}
}

func TestByteLRUAccounting(t *testing.T) {
	ctx := context.Background()
	c := newByteLRU(100, 100, lenSize)
	c.Add(ctx, "a", "aaaa")
	c.Add(ctx, "a", "aa") // a replacement is charged its new size only
	c.Add(ctx, "b", "bbb")
	if v, _ := c.Get(ctx, "a"); v != "aa" || c.Bytes() != 5 || c.Len() != 2 {
		t.Errorf("a = %q, Bytes %d, Len %d; want aa, 5, 2", v, c.Bytes(), c.Len())
	}
	if !c.Remove("a") || c.Remove("a") || c.Bytes() != 3 || c.Len() != 1 {
		t.Errorf("after Remove: Bytes %d, Len %d; want 3, 1", c.Bytes(), c.Len())
	}
	c.Remove("b")
	if c.Bytes() != 0 || c.Len() != 0 {
		t.Errorf("empty cache: Bytes %d, Len %d", c.Bytes(), c.Len())
	}
}

func TestByteLRUOversizeRefused(t *testing.T) {
	ctx := context.Background()
	c := newByteLRU(100, 10, lenSize)
	c.Add(ctx, "a", "aaaa")
	c.Add(ctx, "big", strings.Repeat("x", 11))
	if got := has(c, "a", "big"); got != "a" || c.Bytes() != 4 {
		t.Errorf("cached %q (%d bytes), want only a (4 bytes): an oversize entry must not evict others", got, c.Bytes())
	}
	c.Add(ctx, "a", strings.Repeat("x", 11)) // an oversize replacement drops the old value
	if c.Len() != 0 || c.Bytes() != 0 {
		t.Errorf("Len %d Bytes %d, want 0 and 0", c.Len(), c.Bytes())
	}
	c.Add(ctx, "fits", strings.Repeat("x", 10)) // exactly the budget fits
	if c.Len() != 1 || c.Bytes() != 10 {
		t.Errorf("Len %d Bytes %d, want 1 and 10", c.Len(), c.Bytes())
	}
}

func TestByteLRUConcurrent(t *testing.T) {
	ctx := context.Background()
	c := newByteLRU(50, 200, lenSize)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				k := fmt.Sprint(g, i%70)
				c.Add(ctx, k, k)
				c.Get(ctx, k)
				if i%7 == 0 {
					c.Remove(k)
				}
			}
		})
	}
	wg.Wait()
	var sum int64
	for e := c.root.next; e != &c.root; e = e.next {
		sum += e.size
	}
	if c.Len() > 50 || c.Bytes() > 200 || sum != c.Bytes() {
		t.Errorf("Len %d Bytes %d (entries sum to %d): over the bounds or miscounted", c.Len(), c.Bytes(), sum)
	}
}

// retainedAST returns the live heap, in bytes, that one parsed and validated
// document of q keeps, averaged over enough copies to drown out noise.
func retainedAST(t *testing.T, schema *ast.Schema, q string) float64 {
	t.Helper()
	copies := max(4, 200_000/len(q))
	docs := make([]*ast.QueryDocument, copies)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range docs {
		doc, err := parser.ParseQuery(&ast.Source{Input: q})
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		if errs := validator.Validate(schema, doc); len(errs) != 0 {
			t.Fatalf("validate: %v", errs)
		}
		docs[i] = doc
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(docs)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(copies)
}

// TestQueryBytesPerSourceByte measures what a cached document keeps per
// byte of its text and checks QueryBytesPerSourceByte charges at least
// that (text included) for every shape measured.
func TestQueryBytesPerSourceByte(t *testing.T) {
	schema := NewExecutableSchema(Config{Resolvers: &resolver{}}).Schema()
	repeat := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(f(i))
		}
		return b.String()
	}
	shapes := []struct{ name, query string }{
		{"introspection", introspectionQuery},
		{"donut", donutQuery},
		{"typename aliases", "{" + repeat(3000, func(i int) string { return fmt.Sprintf(" q%d: __typename", i) }) + " }"},
		{"add aliases", aliases(1000)},
		{"two-letter aliases", "{donut(id:1){" + repeat(600, func(i int) string { return fmt.Sprintf("%c%c:id ", 'a'+i%26, 'a'+i/26) }) + "}}"},
		{"repeated field", "{donut(id:1){" + strings.Repeat("id ", 500) + "}}"},
	}
	for _, s := range shapes {
		ast := retainedAST(t, schema, s.query)
		ratio := ast / float64(len(s.query))
		t.Logf("%-18s %7d B of text keep %9.0f B of AST: %.1f B per byte", s.name, len(s.query), ast, ratio)
		if charge := queryEntryBytes(s.query, nil); float64(len(s.query))+ast > float64(charge) {
			t.Errorf("%s: text and AST keep %.0f B, more than the %d B charged", s.name, float64(len(s.query))+ast, charge)
		}
	}
}

// TestGqlgenCachesOnlyValidatedDocuments pins the gqlgen behaviour
// forgetRefused relies on: the executor caches a document after it parses
// and validates, never before, and before the extensions run, so one
// refused by queryLimits is in the cache when its error response is made.
func TestGqlgenCachesOnlyValidatedDocuments(t *testing.T) {
	exec := executor.New(NewExecutableSchema(Config{Resolvers: &resolver{}}))
	cache := graphql.MapCache[*ast.QueryDocument]{}
	exec.SetQueryCache(cache)
	exec.Use(&queryLimits{maxDepth: 1})
	for _, tt := range []struct {
		query  string
		cached bool
	}{
		{`{ add(x: 1, y: 2) }`, true},
		{`{ add(x: 1, y: 2) `, false},     // parse error
		{`{ nosuchfield }`, false},        // validation error
		{`{ donut(id: 1) { id } }`, true}, // depth 2: refused by queryLimits, yet cached
	} {
		ctx := graphql.StartOperationTrace(context.Background())
		_, errs := exec.CreateOperationContext(ctx, &graphql.RawParams{Query: tt.query})
		if _, ok := cache[tt.query]; ok != tt.cached {
			t.Errorf("%s (errors %v): cached %v, want %v", tt.query, errs, ok, tt.cached)
		}
	}
}

// postAPQ sends query with its persisted-query hash; an empty query sends
// the hash alone.
func (ts *testServer) postAPQ(t *testing.T, query, hash string) gqlResponse {
	t.Helper()
	body := map[string]any{"extensions": map[string]any{"persistedQuery": map[string]any{"version": 1, "sha256Hash": hash}}}
	if query != "" {
		body["query"] = query
	}
	b, _ := json.Marshal(body)
	_, _, gr := ts.do(t, http.MethodPost, "/graphql", "application/json", strings.NewReader(string(b)))
	return gr
}

func sha(q string) string {
	s := sha256.Sum256([]byte(q))
	return hex.EncodeToString(s[:])
}

// typenames returns a distinct (by tag) query of n __typename aliases:
// complexity n, about 16 bytes a field.
func typenames(tag, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "query Q%d {", tag)
	for i := range n {
		fmt.Fprintf(&b, " q%d: __typename", i)
	}
	b.WriteString(" }")
	return b.String()
}

// TestRefusedDocumentsNotCached sends distinct refused documents of ~28 KB
// (each charged ~2.8 MB, well within the default budget), plainly and as
// persisted queries, and checks neither cache keeps any of them.
func TestRefusedDocumentsNotCached(t *testing.T) {
	ts := newTestServer(t, Options{MaxDepth: 1})
	const n = 6
	for i := range n {
		tooComplex := typenames(i, 1500) // complexity 1500 > 1000
		unclosed := tooComplex[:len(tooComplex)-2]
		invalid := unclosed + " nosuchfield }"
		tooDeep := fmt.Sprintf("query D%d { donut(id: 1) { id } }%s", i, strings.Repeat(" ", 20_000))
		for _, q := range []string{tooComplex, unclosed, invalid, tooDeep} {
			if _, _, gr := ts.post(t, q, nil); len(gr.Errors) == 0 {
				t.Fatalf("%.40s... succeeded, want it refused", q)
			}
			// As a persisted query (another text, so another hash): its
			// hash alone must not find it afterwards.
			q = "#apq\n" + q
			if gr := ts.postAPQ(t, q, sha(q)); len(gr.Errors) == 0 {
				t.Fatalf("%.40s... as a persisted query succeeded, want it refused", q)
			}
			mustError(t, ts.postAPQ(t, "", sha(q)), "PersistedQueryNotFound")
		}
	}
	if l, b := ts.h.queryCache.Len(), ts.h.queryCache.Bytes(); l != 0 || b != 0 {
		t.Errorf("query cache holds %d entries (%d bytes) after only refused queries, want none", l, b)
	}
	if l, b := ts.h.apqCache.Len(), ts.h.apqCache.Bytes(); l != 0 || b != 0 {
		t.Errorf("APQ cache holds %d entries (%d bytes) after only refused queries, want none", l, b)
	}

	// A valid document is cached, and stays cached when sent with
	// variables it refuses.
	const valid = `query V($x: Int) { add(x: $x, y: 1) }`
	status, _, gr := ts.post(t, valid, map[string]any{"x": 1})
	mustData(t, status, gr, `{"add":2}`)
	_, _, gr = ts.post(t, valid, map[string]any{"x": "not an int"})
	mustError(t, gr, "cannot use string as Int")
	if _, ok := ts.h.queryCache.Get(context.Background(), valid); !ok || ts.h.queryCache.Len() != 1 {
		t.Errorf("valid query not cached (Len %d, want 1)", ts.h.queryCache.Len())
	}
}

func TestQueryCacheByteBudget(t *testing.T) {
	const budget = 64 << 10
	ts := newTestServer(t, Options{QueryCacheBytes: budget})
	var last string
	for i := range 20 {
		// ~200 bytes, charged ~20 KB: three fit the budget.
		last = fmt.Sprintf("query A%d { add(x: %d, y: 1) }%s", i, i, strings.Repeat(" ", 160))
		status, _, gr := ts.post(t, last, nil)
		mustData(t, status, gr, fmt.Sprintf(`{"add":%d}`, i+1))
		if b := ts.h.queryCache.Bytes(); b > budget {
			t.Fatalf("after %d queries the cache is charged %d bytes, over its %d", i+1, b, budget)
		}
	}
	per := queryEntryBytes(last, nil)
	if l := ts.h.queryCache.Len(); int64(l) != budget/per {
		t.Errorf("cache holds %d entries, want %d (%d bytes each)", l, budget/per, per)
	}
	if _, ok := ts.h.queryCache.Get(context.Background(), last); !ok {
		t.Error("the most recent query was evicted")
	}

	// A valid query charged more than the whole budget is served, not cached.
	big := "{ add(x: 1, y: 1) }" + strings.Repeat(" ", budget/QueryBytesPerSourceByte)
	before := ts.h.queryCache.Len()
	status, _, gr := ts.post(t, big, nil)
	mustData(t, status, gr, `{"add":2}`)
	if _, ok := ts.h.queryCache.Get(context.Background(), big); ok || ts.h.queryCache.Len() != before {
		t.Errorf("an oversize query was cached (Len %d, was %d)", ts.h.queryCache.Len(), before)
	}
}

func TestAPQCacheByteBudget(t *testing.T) {
	const budget = 8 << 10
	ts := newTestServer(t, Options{APQCacheBytes: budget})
	var last string
	for i := range 12 {
		last = fmt.Sprintf("query P%d { add(x: %d, y: 1) }%s", i, i, strings.Repeat(" ", 1000))
		gr := ts.postAPQ(t, last, sha(last))
		if len(gr.Errors) != 0 {
			t.Fatalf("query %d: %v", i, gr.messages())
		}
		if b := ts.h.apqCache.Bytes(); b > budget {
			t.Fatalf("after %d queries the APQ cache is charged %d bytes, over its %d", i+1, b, budget)
		}
	}
	if l := ts.h.apqCache.Len(); l != int(budget/apqEntryBytes(sha(last), last)) {
		t.Errorf("APQ cache holds %d entries", l)
	}
	status := ts.postAPQ(t, "", sha(last)) // the most recent is served by hash
	if len(status.Errors) != 0 {
		t.Errorf("most recent persisted query: %v", status.messages())
	}
}
