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
// exponential walk and without __schema (which gqlgen prices 0 and
// queryLimits does not: TestIntrospectionComplexity).
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
	f(`{ __type(name: "Donut") { name fields { name type { name ofType { name } } } } }`)
	f(`{ t: __type(name: "Donut") { ...T } } fragment T on __Type { name ofType { ...R } o: ofType { ... on __Type { ...R } } } fragment R on __Type { kind }`)
	f(wide(8))
}

// schemaAliases returns issue 10's attack: n aliased copies of
// __schema { types { name fields { name args { name } } } }, each of
// complexity 7 (seven fields) and 1 alias.
func schemaAliases(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, " s%d: __schema { types { name fields { name args { name } } } }", i)
	}
	b.WriteString(" }")
	return b.String()
}

// TestIntrospectionComplexity checks that introspection fields count like
// any other: every field under __schema 1 plus its selections, fragments
// counted at each spread.
func TestIntrospectionComplexity(t *testing.T) {
	es := NewExecutableSchema(Config{Resolvers: &resolver{}})
	ctx := context.Background()
	f := func(query string, want int) {
		t.Helper()
		doc, errs := gqlparser.LoadQuery(es.Schema(), query)
		if len(errs) != 0 {
			t.Fatalf("invalid query %.100q: %v", query, errs)
		}
		if got := measureOperation(ctx, es, doc, doc.Operations[0], nil).complexity; got != want {
			t.Errorf("complexity of %.100q = %d, want %d", query, got, want)
		}
	}
	f(`{ __schema { queryType { name } } }`, 3)
	f(`{ __typename __schema { types { name } } }`, 4)
	f(schemaAliases(1), 7)
	f(schemaAliases(200), 1400)
	// __schema 1 + types (1 + T), T = name 1 + ofType (1 + 1).
	f(`{ __schema { ...S } } fragment S on __Schema { types { ...T } } fragment T on __Type { name ofType { name } }`, 5)
	// Each spread of F_i costs 1 + 2 (1 + F_(i+1)): exact, and fast, at 2^8 paths.
	f(fanOut(8), 1+1+fanOutCost(8))
	f(introspectionQuery, standardIntrospectionCost)
	if standardIntrospectionCost > DefaultMaxComplexity/2 {
		t.Errorf("the standard introspection query costs %d, too near the default limit %d", standardIntrospectionCost, DefaultMaxComplexity)
	}
}

// standardIntrospectionCost is the complexity of introspectionQuery,
// counted by hand: TypeRef is kind and name plus seven nested
// ofType { kind name }, 2 + 7 x 3 = 23; InputValue is 3 + type (1 + 23) =
// 27; FullType is 3 + fields (1 + 2 + args 28 + type 24 + 2 = 57) +
// inputFields 28 + interfaces 24 + enumValues 5 + possibleTypes 24 = 141;
// the operation is __schema 1 + three root types 2 each + types 142 +
// directives (1 + 3 + args 28 = 32) = 181.
const standardIntrospectionCost = 181

// fanOutCost is the complexity of fragment F0 of fanOut(n).
func fanOutCost(n int) int {
	c := 1 // F_n { name }
	for range n {
		c = 1 + 2*(1+c)
	}
	return c
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
		{"at the default limit", Options{MaxAliases: -1}, aliases(1000), ""},
		{"over the default limit", Options{MaxAliases: -1}, aliases(1001), "operation has complexity 1001, which exceeds the limit of 1000"},
		{"over a set limit", Options{MaxComplexity: 5}, aliases(6), "operation has complexity 6, which exceeds the limit of 5"},
		{"nested fields count", Options{MaxComplexity: 5},
			`query Q($id: ID!) { a: donut(id: $id) { id name } b: donut(id: $id) { id name } }`,
			"operation has complexity 6, which exceeds the limit of 5"},
		{"no limit", Options{MaxComplexity: -1, MaxAliases: -1}, aliases(1001), ""},
		{"standard introspection", Options{Introspection: true}, introspectionQuery, ""},
		{"introspection counted", Options{Introspection: true, MaxComplexity: standardIntrospectionCost - 1}, introspectionQuery,
			fmt.Sprintf("operation has complexity %d, which exceeds the limit of %d", standardIntrospectionCost, standardIntrospectionCost-1)},
		{"aliased __schema", Options{Introspection: true, MaxAliases: -1}, schemaAliases(200),
			"operation has complexity 1400, which exceeds the limit of 1000"},
		{"aliased __schema, introspection off", Options{MaxAliases: -1}, schemaAliases(200),
			"operation has complexity 1400, which exceeds the limit of 1000"},
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

func TestMeasureAliases(t *testing.T) {
	f := func(query string, want int) {
		t.Helper()
		doc, err := parser.ParseQuery(&ast.Source{Input: query})
		if err != nil {
			t.Fatalf("cannot parse %q: %v", query, err)
		}
		if got := measureOperation(context.Background(), nil, doc, doc.Operations[0], nil).aliases; got != want {
			t.Errorf("aliases of %.100q = %d, want %d", query, got, want)
		}
	}
	f(donutQuery, 0)
	f(introspectionQuery, 0)
	f(`{ add a: add }`, 1)
	f(`{ add: add }`, 0) // an alias equal to the name selects nothing more
	f(aliases(7), 7)
	f(`{ d: donut(id: "1") { i: id n: name __typename t: __typename } }`, 4)
	f(schemaAliases(3), 3)
	// Aliases count at every spread, inside inline fragments too.
	f(`{ ...Q q: __typename ... on Query { ...Q } } fragment Q on Query { a: add b: add }`, 5)
	// Each F_i of fanOut has one alias and spreads F_(i+1) twice: 2^60 - 1
	// aliased fields in all, measured in linear time.
	f(fanOut(60), 1<<60-1)
}

func TestAliasLimit(t *testing.T) {
	const fragments = `query { ...Q ...R } fragment Q on Query { a: add b: add } fragment R on Query { c: add ...Q }`
	tests := []struct {
		name    string
		opts    Options
		query   string
		wantErr string
	}{
		{"experiment query", Options{}, donutQuery, ""},
		{"at the default limit", Options{}, aliases(DefaultMaxAliases), ""},
		{"over the default limit", Options{}, aliases(DefaultMaxAliases + 1),
			"operation has 101 aliased fields, which exceeds the limit of 100"},
		{"at a set limit", Options{MaxAliases: 3}, aliases(3), ""},
		{"over a set limit", Options{MaxAliases: 3}, aliases(4), "operation has 4 aliased fields, which exceeds the limit of 3"},
		{"fragments counted at each spread", Options{MaxAliases: 4}, fragments,
			"operation has 5 aliased fields, which exceeds the limit of 4"},
		{"fragments at the limit", Options{MaxAliases: 5}, fragments, ""},
		{"no limit", Options{MaxAliases: -1}, aliases(DefaultMaxAliases + 1), ""},
		{"standard introspection", Options{Introspection: true}, introspectionQuery, ""},
		{"aliased __typename", Options{MaxAliases: 1}, `{ a: __typename b: __typename }`,
			"operation has 2 aliased fields, which exceeds the limit of 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t, tt.opts)
			status, raw, gr := ts.post(t, tt.query, map[string]any{"id": "1"})
			checkLimit(t, status, raw, gr, tt.wantErr, "ALIAS_LIMIT_EXCEEDED")
		})
	}
}

// TestIntrospectionAttack replays issue 10's attack at 200 aliases (the
// original sent 15,000 and got 33 MB back): refused before execution with
// a short answer, whether introspection is on or off, while a single
// introspection query of the same shape still answers.
func TestIntrospectionAttack(t *testing.T) {
	const want = "operation has 200 aliased fields, which exceeds the limit of 100"
	for _, introspection := range []bool{true, false} {
		ts := newTestServer(t, Options{Introspection: introspection})
		status, raw, gr := ts.post(t, schemaAliases(200), nil)
		checkLimit(t, status, raw, gr, want, "ALIAS_LIMIT_EXCEEDED")
		if len(raw) > 512 {
			t.Errorf("introspection %v: the refusal is %d bytes, want a short error: %.300s", introspection, len(raw), raw)
		}
	}

	ts := newTestServer(t, Options{Introspection: true})
	status, raw, gr := ts.post(t, schemaAliases(1), nil)
	checkLimit(t, status, raw, gr, "", "")
	if !strings.Contains(string(raw), `"name":"Donut"`) {
		t.Errorf("a single __schema query answered %.300s, want the Donut type among the types", raw)
	}
}
