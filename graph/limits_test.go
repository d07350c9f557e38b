package graph

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/complexity"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"
)

// introspectionQuery is GraphiQL's standard introspection query (graphql-js
// getIntrospectionQuery): 13 levels deep, through TypeRef's seven ofTypes.
const introspectionQuery = `query IntrospectionQuery {
  __schema {
    queryType { name }
    mutationType { name }
    subscriptionType { name }
    types { ...FullType }
    directives { name description locations args { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description
  fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type {
  kind name
  ofType { kind name ofType { kind name ofType { kind name ofType { kind name
    ofType { kind name ofType { kind name ofType { kind name } } } } } } }
}`

// deepIntrospection returns __schema { types { fields { type { ofType {
// ... { name } } } } } } with n ofType levels: depth 5 + n.
func deepIntrospection(n int) string {
	return `{ __schema { types { fields { type { ` + strings.Repeat("ofType { ", n) + "name" +
		strings.Repeat(" }", n) + ` } } } } }`
}

// fanOut returns a document whose fragment F0 spreads F1 twice, one level
// down, F1 spreads F2 twice, and so on: 2^n paths through n fragments,
// depth n+3.
func fanOut(n int) string {
	var b strings.Builder
	b.WriteString(`{ __schema { types { ...F0 } } }`)
	for i := range n {
		fmt.Fprintf(&b, "\nfragment F%d on __Type { name ofType { ...F%d } o: ofType { ... on __Type { ...F%d } } }", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "\nfragment F%d on __Type { name }", n)
	return b.String()
}

// wide returns a document whose fragment F0 spreads F1 twice at the same
// level, F1 spreads F2 twice, and so on: depth 2, complexity 2^(n+1) and
// 2^n paths for a walker that does not remember fragments.
func wide(n int) string {
	var b strings.Builder
	b.WriteString(`{ donut(id: "1") { ...F0 } }`)
	for i := range n {
		fmt.Fprintf(&b, "\nfragment F%d on Donut { id ...F%d ... on Donut { ...F%d } }", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "\nfragment F%d on Donut { name }", n)
	return b.String()
}

func TestMeasureDepth(t *testing.T) {
	f := func(query string, want int) {
		t.Helper()
		doc, err := parser.ParseQuery(&ast.Source{Input: query})
		if err != nil {
			t.Fatalf("cannot parse %q: %v", query, err)
		}
		if got := measureOperation(context.Background(), nil, doc, doc.Operations[0], nil).depth; got != want {
			t.Errorf("depth of %.100q = %d, want %d", query, got, want)
		}
	}
	f(`{ add }`, 1)
	f(`{ add(x: 1, y: 2) __typename }`, 1)
	f(`{ donut(id: "1") { id name } }`, 2)
	f(`{ a: add b: donut(id: "1") { id } }`, 2)
	// Inline fragments and fragment spreads add no level; their fields do.
	f(`{ ... on Query { donut(id: "1") { ... on Donut { id } } } }`, 2)
	f(`query { ...Q } fragment Q on Query { donut(id: "1") { ...D } } fragment D on Donut { id }`, 2)
	f(`{ donut(id: "1") { ...D } } fragment D on Donut { id } fragment Unused on Query { __schema { types { name } } }`, 2)
	// A fragment spread at several depths counts at the deepest.
	f(`{ __schema { ...T types { fields { type { ...T } } } } } fragment T on __Schema { queryType { name } }`, 6)
	// Introspection counts like any other field.
	f(introspectionQuery, 13)
	f(deepIntrospection(18), 23)
	// Cycles (invalid, but measured safely) and unknown fragments add nothing.
	f(`{ donut(id: "1") { ...A } } fragment A on Donut { id ...B } fragment B on Donut { name ...A }`, 2)
	f(`{ donut(id: "1") { ...A } } fragment A on Donut { ...A }`, 1)
	f(`{ donut(id: "1") { ...Missing } }`, 1)
	// Each fragment is measured once: 2^60 paths would never finish.
	f(fanOut(60), 63)
	f(wide(60), 2)
}

// TestComplexityMatchesGqlgen checks that queryLimits measures exactly
// gqlgen's complexity.Calculate, on documents small enough for gqlgen's
// exponential walk.
func TestComplexityMatchesGqlgen(t *testing.T) {
	es := NewExecutableSchema(Config{Resolvers: &resolver{}})
	ctx := context.Background()
	vars := map[string]any{"id": "1", "x": 1, "y": 2, "d": map[string]any{"id": "1", "name": "n", "flavor": "VANILLA"}}
	f := func(query string) {
		t.Helper()
		doc, errs := gqlparser.LoadQuery(es.Schema(), query)
		if len(errs) != 0 {
			t.Fatalf("invalid query %.100q: %v", query, errs)
		}
		op := doc.Operations[0]
		want := complexity.Calculate(ctx, es, op, vars)
		if got := measureOperation(ctx, es, doc, op, vars).complexity; got != want {
			t.Errorf("complexity of %.100q = %d, want gqlgen's %d", query, got, want)
		}
	}
	f(donutQuery)
	f(`query Add($x: Int, $y: Int) { add(x: $x, y: $y) }`)
	f(`mutation Put($d: DonutInput!) { addOrUpdateDonut(donut: $d) { id name flavor } }`)
	f(subscriptionQuery)
	f(`{ __typename a: add b: add donut(id: "1") { __typename id } }`)
	f(aliases(50))
	f(`query Q($id: ID!) { ...Root } fragment Root on Query { donut(id: $id) { ...D ... on Donut { name } } } fragment D on Donut { id flavor }`)
	f(introspectionQuery)
	f(deepIntrospection(10))
	f(`{ __type(name: "Donut") { name fields { name type { name ofType { name } } } } }`)
	f(wide(8))
	f(fanOut(8))
}

func TestFragmentFanOut(t *testing.T) {
	// Each would take longer than any test timeout if a fragment were walked
	// once per spread (2^64 walks).
	ts := newTestServer(t, Options{Introspection: true})
	tests := []struct{ query, wantErr string }{
		{wide(64), "operation has complexity 9223372036854775807, which exceeds the limit of 1000"},
		{fanOut(64), "query depth 67 exceeds the limit of 15"},
	}
	for _, tt := range tests {
		status, raw, gr := ts.post(t, tt.query, nil)
		code := "COMPLEXITY_LIMIT_EXCEEDED"
		if strings.HasPrefix(tt.wantErr, "query depth") {
			code = "DEPTH_LIMIT_EXCEEDED"
		}
		checkLimit(t, status, raw, gr, tt.wantErr, code)
	}
}

func TestDepthLimit(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		query   string
		wantErr string // "" when the query must succeed
	}{
		{"experiment query", Options{}, donutQuery, ""},
		{"at the limit", Options{MaxDepth: 2}, donutQuery, ""},
		{"over the limit", Options{MaxDepth: 1}, donutQuery, "query depth 2 exceeds the limit of 1"},
		{"standard introspection", Options{Introspection: true}, introspectionQuery, ""},
		{"deep introspection", Options{Introspection: true}, deepIntrospection(18), "query depth 23 exceeds the limit of 15"},
		{"deep introspection, introspection off", Options{}, deepIntrospection(18), "query depth 23 exceeds the limit of 15"},
		{"deep introspection, no limit", Options{Introspection: true, MaxDepth: -1}, deepIntrospection(18), ""},
		{"fragments counted", Options{MaxDepth: 1},
			`query Q($id: ID!) { ...Root } fragment Root on Query { donut(id: $id) { ...D } } fragment D on Donut { id }`,
			"query depth 2 exceeds the limit of 1"},
		{"inline fragments counted", Options{MaxDepth: 1},
			`query Q($id: ID!) { ... on Query { donut(id: $id) { ... on Donut { id } } } }`,
			"query depth 2 exceeds the limit of 1"},
		{"introspection fragments counted", Options{Introspection: true, MaxDepth: 12}, introspectionQuery,
			"query depth 13 exceeds the limit of 12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, tt.opts)
			status, raw, gr := ts.post(t, tt.query, map[string]any{"id": "1"})
			checkLimit(t, status, raw, gr, tt.wantErr, "DEPTH_LIMIT_EXCEEDED")
		})
	}
}

// aliases returns a query of n aliased add fields: complexity n.
func aliases(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, " a%d: add(x: %d, y: 1)", i, i)
	}
	b.WriteString(" }")
	return b.String()
}

func TestComplexityLimit(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		query   string
		wantErr string
	}{
		{"experiment query", Options{}, donutQuery, ""},
		{"at the default limit", Options{}, aliases(1000), ""},
		{"over the default limit", Options{}, aliases(1001), "operation has complexity 1001, which exceeds the limit of 1000"},
		{"over a set limit", Options{MaxComplexity: 5}, aliases(6), "operation has complexity 6, which exceeds the limit of 5"},
		{"nested fields count", Options{MaxComplexity: 5},
			`query Q($id: ID!) { a: donut(id: $id) { id name } b: donut(id: $id) { id name } }`,
			"operation has complexity 6, which exceeds the limit of 5"},
		{"no limit", Options{MaxComplexity: -1}, aliases(1001), ""},
		{"standard introspection", Options{Introspection: true}, introspectionQuery, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, tt.opts)
			status, raw, gr := ts.post(t, tt.query, map[string]any{"id": "1"})
			checkLimit(t, status, raw, gr, tt.wantErr, "COMPLEXITY_LIMIT_EXCEEDED")
		})
	}
}

// checkLimit fails unless the response succeeded (wantErr "") or was refused
// before execution with wantErr and code: no data, status 200 or 422.
func checkLimit(t *testing.T, status int, raw []byte, gr gqlResponse, wantErr, code string) {
	t.Helper()
	if wantErr == "" {
		if status != http.StatusOK || len(gr.Errors) != 0 || len(gr.Data) == 0 || string(gr.Data) == "null" {
			t.Errorf("status %d, body %.300s; want 200 with data and no errors", status, raw)
		}
		return
	}
	if status != http.StatusOK && status != http.StatusUnprocessableEntity {
		t.Errorf("status = %d, want 200 or 422", status)
	}
	if len(gr.Errors) != 1 || gr.Errors[0].Message != wantErr {
		t.Fatalf("errors = %q, want exactly %q", gr.messages(), wantErr)
	}
	if got := gr.Errors[0].Extensions["code"]; got != code {
		t.Errorf("extensions.code = %v, want %s", got, code)
	}
	if len(gr.Data) != 0 && string(gr.Data) != "null" {
		t.Errorf("data = %s, want none: the operation must not execute", gr.Data)
	}
}
