package graph

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/soakd/soakd/internal/donut"
)

// FuzzGraphQLRequest posts arbitrary bodies through the handler. It must never
// panic, and must always answer with a status below 500 or with a GraphQL
// error in the body.
func FuzzGraphQLRequest(f *testing.F) {
	seeds := []string{
		`{"query":"{ donut(id: \"1\") { id name flavor } }"}`,
		`{"query":"query Add($x: Int, $y: Int) { add(x: $x, y: $y) }","variables":{"x":1,"y":2}}`,
		`{"query":"mutation { addOrUpdateDonut(donut: {id: \"1\", name: \"x\", flavor: VANILLA}) { id } }"}`,
		`{"query":"subscription { onDonutUpdated(id: \"1\") { id } }"}`,
		`{"extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}`,
		`{"query":"{ add(x: 99999999999999999999, y: 1) }"}`,
		`{"query":"{ __schema { types { name } } }"}`,
		`{"query":"{ a: __schema { types { name fields { name args { name } } } } b: __schema { types { name } } }"}`,
		`{"query":"{ ...Q ...Q } fragment Q on Query { a: add b: __typename c: __type(name: \"Donut\") { name } }"}`,
		`query Add { add(x: 50, y: 50) }`,
		`{"query": `,
		``,
		`null`,
		`[]`,
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	svc := &donut.Service{Store: donut.NewStore(seeded), Broker: donut.NewBroker(0)}
	h := NewHandler(svc, Options{MaxBodyBytes: 4096})
	f.Fuzz(func(t *testing.T, body []byte, asGraphQL bool) {
		req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if asGraphQL {
			req.Header.Set("Content-Type", "application/graphql")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code < 500 {
			return
		}
		var gr gqlResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &gr); err != nil || len(gr.Errors) == 0 {
			t.Errorf("status %d without a GraphQL error: %s", rec.Code, rec.Body.Bytes())
		}
	})
}

// FuzzGraphQLLimits posts arbitrary bodies to a handler with introspection
// on and small limits (the hostile-input settings of issue 10). Whatever
// the body: no 5xx without a GraphQL error; a response stays small (the
// limits bound what a 4 KiB request can make the server write, and error
// messages never echo more than a capped slice of the input); and both
// caches stay within their byte budgets.
func FuzzGraphQLLimits(f *testing.F) {
	for _, s := range []string{
		`{"query":"{ a: __schema { types { name fields { name args { name } } } } b: __schema { types { name } } }"}`,
		`{"query":"{ a1: __typename a2: __typename a3: __typename a4: __typename a5: __typename a6: __typename }"}`,
		`{"query":"{ ...Q ...Q ...Q } fragment Q on Query { a: __schema { types { name } } }"}`,
		`{"query":"query P { donut(id: \"1\") { id } }","extensions":{"persistedQuery":{"version":1,"sha256Hash":"x"}}}`,
		`{"query":"{ __type(name: \"Donut\") { fields { type { ofType { ofType { ofType { name } } } } } } }"}`,
		`{"query": "` + string(bytes.Repeat([]byte("x"), 3000)),
	} {
		f.Add([]byte(s))
	}
	svc := &donut.Service{Store: donut.NewStore(seeded), Broker: donut.NewBroker(0)}
	const queryBudget, apqBudget = 64 << 10, 8 << 10
	h := NewHandler(svc, Options{
		Introspection: true, MaxBodyBytes: 4096, MaxAliases: 5, MaxComplexity: 50, MaxDepth: 6,
		QueryCacheBytes: queryBudget, APQCacheBytes: apqBudget,
	})
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			var gr gqlResponse
			if err := json.Unmarshal(rec.Body.Bytes(), &gr); err != nil || len(gr.Errors) == 0 {
				t.Errorf("status %d without a GraphQL error: %s", rec.Code, rec.Body.Bytes())
			}
		}
		// 50 complexity points of introspection over this schema stay
		// far below 256 KiB; an uncapped echo of a 4 KiB body or an
		// unlimited alias fan-out does not.
		if n := rec.Body.Len(); n > 256<<10 {
			t.Errorf("a %d-byte request got a %d-byte response", len(body), n)
		}
		if q, a := h.queryCache.Bytes(), h.apqCache.Bytes(); q > queryBudget || a > apqBudget {
			t.Errorf("caches over budget: queries %d of %d bytes, persisted %d of %d", q, queryBudget, a, apqBudget)
		}
	})
}
