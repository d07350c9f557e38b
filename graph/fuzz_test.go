package graph

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/soakd/soakd/donut"
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
