package graph

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/soakd/soakd/internal/donut"
)

const donutQuery = `query Donut($id: ID!) { donut(id: $id) { id name flavor } }`

func TestQueryDonut(t *testing.T) {
	ts := newTestServer(t, Options{})
	f := func(id, want string) {
		t.Helper()
		status, _, gr := ts.post(t, donutQuery, map[string]any{"id": id})
		mustData(t, status, gr, want)
	}
	f("1", `{"donut":{"id":"1","name":"donut-1","flavor":"STRAWBERRY"}}`)
	f("3", `{"donut":{"id":"3","name":"donut-3","flavor":"VANILLA"}}`)
	f("42", `{"donut":null}`) // unknown id: null, no error
}

func TestMutation(t *testing.T) {
	ts := newTestServer(t, Options{})
	const m = `mutation Put($d: DonutInput!) { addOrUpdateDonut(donut: $d) { id name flavor } }`
	in := map[string]any{"id": "2", "name": "glazed", "flavor": "VANILLA"}
	status, _, gr := ts.post(t, m, map[string]any{"d": in})
	mustData(t, status, gr, `{"addOrUpdateDonut":{"id":"2","name":"glazed","flavor":"VANILLA"}}`)
	want := donut.Donut{ID: "2", Name: "glazed", Flavor: donut.Vanilla}
	if got, _ := ts.svc.Store.Get("2"); got != want {
		t.Errorf("store has %+v, want %+v", got, want)
	}

	// A new id is added.
	status, _, gr = ts.post(t, `mutation { addOrUpdateDonut(donut: {id: "new", name: "n", flavor: CHOCOLATE}) { id flavor } }`, nil)
	mustData(t, status, gr, `{"addOrUpdateDonut":{"id":"new","flavor":"CHOCOLATE"}}`)
	if got, want := ts.svc.Store.Len(), seeded+1; got != want {
		t.Errorf("store has %d donuts, want %d", got, want)
	}
	if got := ts.svc.Broker.Stats().Published; got != 2 {
		t.Errorf("Published = %d, want 2", got)
	}

	// An empty name is refused, as the REST arm refuses it.
	_, _, gr = ts.post(t, m, map[string]any{"d": map[string]any{"id": "2", "name": "", "flavor": "VANILLA"}})
	mustError(t, gr, "name must not be empty")
	if got, _ := ts.svc.Store.Get("2"); got != want {
		t.Errorf("store has %+v after a refused mutation, want %+v", got, want)
	}
}

func TestInvalidEnum(t *testing.T) {
	ts := newTestServer(t, Options{})
	_, _, gr := ts.post(t, `mutation { addOrUpdateDonut(donut: {id: "1", name: "x", flavor: MINT}) { id } }`, nil)
	mustError(t, gr, "MINT")
	_, _, gr = ts.post(t, `mutation Put($d: DonutInput!) { addOrUpdateDonut(donut: $d) { id } }`,
		map[string]any{"d": map[string]any{"id": "1", "name": "x", "flavor": "MINT"}})
	mustError(t, gr, "MINT")
	if got, _ := ts.svc.Store.Get("1"); got != donut.SeedDonut(1) {
		t.Errorf("store has %+v after invalid mutations, want %+v", got, donut.SeedDonut(1))
	}
}

func TestAdd(t *testing.T) {
	ts := newTestServer(t, Options{})
	f := func(query string, vars map[string]any, want string) {
		t.Helper()
		status, _, gr := ts.post(t, query, vars)
		mustData(t, status, gr, want)
	}
	const q = `query Add($x: Int, $y: Int) { add(x: $x, y: $y) }`
	f(q, map[string]any{"x": 1, "y": 2}, `{"add":3}`)
	f(q, map[string]any{"x": -5, "y": 2}, `{"add":-3}`)
	f(q, map[string]any{"x": nil, "y": 2}, `{"add":null}`)
	f(q, map[string]any{"x": 1}, `{"add":null}`)
	f(`{ add }`, nil, `{"add":null}`)
	f(`{ add(x: 50, y: 50) }`, nil, `{"add":100}`)
}

// TestApplicationGraphQL sends seed 003's exact autocannon request.
func TestApplicationGraphQL(t *testing.T) {
	ts := newTestServer(t, Options{})
	status, _, gr := ts.do(t, http.MethodPost, "/graphql", "application/graphql",
		strings.NewReader(`query Add { add(x: 50, y: 50) }`))
	mustData(t, status, gr, `{"add":100}`)
}

func TestGET(t *testing.T) {
	ts := newTestServer(t, Options{})
	f := func(params url.Values, want string) {
		t.Helper()
		status, _, gr := ts.do(t, http.MethodGet, "/graphql?"+params.Encode(), "", nil)
		mustData(t, status, gr, want)
	}
	f(url.Values{"query": {`{ donut(id: "2") { flavor } }`}}, `{"donut":{"flavor":"CHOCOLATE"}}`)
	f(url.Values{"query": {donutQuery}, "variables": {`{"id":"4"}`}}, `{"donut":{"id":"4","name":"donut-4","flavor":"STRAWBERRY"}}`)

	// Mutations are not allowed over GET.
	status, _, gr := ts.do(t, http.MethodGet, "/graphql?"+url.Values{"query": {
		`mutation { addOrUpdateDonut(donut: {id: "1", name: "x", flavor: VANILLA}) { id } }`}}.Encode(), "", nil)
	if status == http.StatusOK || len(gr.Errors) == 0 {
		t.Errorf("GET mutation: status %d, errors %v; want a non-200 error", status, gr.messages())
	}
	if got, _ := ts.svc.Store.Get("1"); got != donut.SeedDonut(1) {
		t.Errorf("GET mutation changed the store: %+v", got)
	}
}

func TestMalformedRequests(t *testing.T) {
	ts := newTestServer(t, Options{})
	tests := []struct {
		name, contentType, body string
		wantStatus              int
	}{
		{"malformed JSON", "application/json", `{"query": `, http.StatusBadRequest},
		{"not an object", "application/json", `[1,2]`, http.StatusBadRequest},
		{"syntax error", "application/json", `{"query":"{ donut(id: "}`, http.StatusUnprocessableEntity},
		{"unknown field", "application/json", `{"query":"{ nope }"}`, http.StatusUnprocessableEntity},
		{"unsupported content type", "text/plain", `{ add(x:1,y:1) }`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, raw, gr := ts.do(t, http.MethodPost, "/graphql", tt.contentType, strings.NewReader(tt.body))
			if status != tt.wantStatus {
				t.Errorf("status = %d, want %d (body %s)", status, tt.wantStatus, raw)
			}
			if len(gr.Errors) == 0 {
				t.Errorf("body %s has no errors", raw)
			}
		})
	}
}

// chunked hides a reader's length so the request is sent chunked, with
// ContentLength -1 on the server.
type chunked struct{ io.Reader }

func TestOversizedBody(t *testing.T) {
	const limit = 256
	ts := newTestServer(t, Options{MaxBodyBytes: limit})
	big := `{"query":"{ add(x: 1, y: 1) }","variables":{"pad":"` + strings.Repeat("x", 2*limit) + `"}}`
	tests := []struct {
		name string
		body io.Reader
	}{
		{"declared length", strings.NewReader(big)},
		{"chunked", chunked{strings.NewReader(big)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, raw, gr := ts.do(t, http.MethodPost, "/graphql", "application/json", tt.body)
			if status != http.StatusRequestEntityTooLarge {
				t.Errorf("status = %d, want 413 (body %s)", status, raw)
			}
			mustError(t, gr, "too large")
		})
	}
	// Bodies within the limit still work, chunked or not.
	small := `{"query":"{ add(x: 1, y: 1) }"}`
	status, _, gr := ts.do(t, http.MethodPost, "/graphql", "application/json", chunked{strings.NewReader(small)})
	mustData(t, status, gr, `{"add":2}`)
	status, _, gr = ts.do(t, http.MethodPost, "/graphql", "application/json", strings.NewReader(small))
	mustData(t, status, gr, `{"add":2}`)
}

func TestAutomaticPersistedQuery(t *testing.T) {
	ts := newTestServer(t, Options{})
	const query = `{ donut(id: "5") { flavor } }`
	sum := sha256.Sum256([]byte(query))
	ext := `"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + hex.EncodeToString(sum[:]) + `"}}`
	send := func(body string) (int, gqlResponse) {
		t.Helper()
		status, _, gr := ts.do(t, http.MethodPost, "/graphql", "application/json", strings.NewReader(body))
		return status, gr
	}

	_, gr := send(`{` + ext + `}`)
	mustError(t, gr, "PersistedQueryNotFound")

	status, gr := send(`{"query":` + quote(query) + `,` + ext + `}`) // registers it
	mustData(t, status, gr, `{"donut":{"flavor":"CHOCOLATE"}}`)

	status, gr = send(`{` + ext + `}`)
	mustData(t, status, gr, `{"donut":{"flavor":"CHOCOLATE"}}`)
}

func quote(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	b.WriteString(strings.ReplaceAll(s, `"`, `\"`))
	b.WriteByte('"')
	return b.String()
}

func TestIntrospection(t *testing.T) {
	const q = `{ __schema { queryType { name } } }`
	off := newTestServer(t, Options{})
	_, _, gr := off.post(t, q, nil)
	mustError(t, gr, "introspection disabled")

	on := newTestServer(t, Options{Introspection: true})
	status, _, gr := on.post(t, q, nil)
	mustData(t, status, gr, `{"__schema":{"queryType":{"name":"Query"}}}`)
}

func TestResolverPanic(t *testing.T) {
	ts := newTestServer(t, Options{}, func(h *Handler) {
		h.resolver.testHook = func() { panic("injected") }
	})
	status, raw, gr := ts.post(t, donutQuery, map[string]any{"id": "1"})
	if status != http.StatusOK {
		t.Errorf("status = %d, want 200 (a field error, body %s)", status, raw)
	}
	mustError(t, gr, "internal server error")
	if strings.Contains(string(raw), "injected") {
		t.Errorf("panic value leaked to the client: %s", raw)
	}
	if got := ts.h.Panics(); got != 1 {
		t.Errorf("Panics() = %d, want 1", got)
	}
	// The server keeps serving.
	status, _, gr = ts.post(t, `{ add(x: 1, y: 2) }`, nil)
	mustData(t, status, gr, `{"add":3}`)
}

// TestSamePayloadAsREST checks the experiment's premise: the REST control
// group answers with exactly the bytes GraphQL does, so payload size is not
// what differs between the arms.
func TestSamePayloadAsREST(t *testing.T) {
	ts := newTestServer(t, Options{})
	_, gqlBody, _ := ts.post(t, donutQuery, map[string]any{"id": "7"})
	_, restBody, _ := ts.do(t, http.MethodGet, "/api/donuts/7", "", nil)
	if !bytes.Equal(gqlBody, restBody) {
		t.Errorf("GET bodies differ:\n graphql %s\n rest    %s", gqlBody, restBody)
	}

	_, gqlBody, _ = ts.post(t, `mutation Put($d: DonutInput!) { addOrUpdateDonut(donut: $d) { id name flavor } }`,
		map[string]any{"d": map[string]any{"id": "8", "name": "x", "flavor": "VANILLA"}})
	_, restBody, _ = ts.do(t, http.MethodPut, "/api/donuts/8", "application/json",
		strings.NewReader(`{"name":"x","flavor":"VANILLA"}`))
	if !bytes.Equal(gqlBody, restBody) {
		t.Errorf("PUT bodies differ:\n graphql %s\n rest    %s", gqlBody, restBody)
	}
}

// TestSubscriptionOverHTTP checks that a subscription sent as a plain HTTP
// request is refused at once instead of holding the request open.
func TestSubscriptionOverHTTP(t *testing.T) {
	ts := newTestServer(t, Options{})
	_, _, gr := ts.post(t, `subscription { onDonutUpdated(id: "1") { id } }`, nil)
	mustError(t, gr, "only over websocket")
	status, _, gr := ts.do(t, http.MethodGet, "/graphql?"+url.Values{"query": {`subscription { onDonutUpdated(id: "1") { id } }`}}.Encode(), "", nil)
	if status == http.StatusOK && len(gr.Errors) == 0 {
		t.Errorf("GET subscription: status %d and no error, want an error", status)
	}
	if got := ts.svc.Broker.Stats().Subscribers; got != 0 {
		t.Errorf("Subscribers = %d, want 0", got)
	}
}

// TestWebsocketOrigin checks that loopback origins may open websockets and
// others may not.
func TestWebsocketOrigin(t *testing.T) {
	ts := newTestServer(t, Options{})
	wsURL := "ws" + strings.TrimPrefix(ts.URL, "http") + "/graphql"
	tests := []struct {
		origin string
		ok     bool
	}{
		{"", true},
		{"http://127.0.0.1:3000", true},
		{"http://localhost:8080", true},
		{"http://[::1]:9000", true},
		{"http://example.com", false},
		{"http://127.0.0.1.example.com:80", false},
	}
	for _, tt := range tests {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		h := http.Header{}
		if tt.origin != "" {
			h.Set("Origin", tt.origin)
		}
		c, resp, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{
			HTTPHeader: h, Subprotocols: []string{"graphql-transport-ws"},
		})
		cancel()
		if got := err == nil; got != tt.ok {
			t.Errorf("origin %q: accepted = %v, want %v (err %v)", tt.origin, got, tt.ok, err)
		}
		if err == nil {
			_ = c.Close(websocket.StatusNormalClosure, "")
		} else if resp != nil && resp.StatusCode != http.StatusForbidden {
			t.Errorf("origin %q: status %d, want 403", tt.origin, resp.StatusCode)
		}
	}
}

// TestErrorsDoNotEchoLargeInput sends 900 KB of malformed input and checks
// that the error names the problem without sending the input back: an
// echoed body is cut to its first 120 bytes and its size, and any other
// message to 512 bytes.
func TestErrorsDoNotEchoLargeInput(t *testing.T) {
	ts := newTestServer(t, Options{})
	pad := strings.Repeat("a", 900_000)
	tests := []struct {
		name, body string
		wantStatus int
		want       string
	}{
		{"malformed JSON", `{"query": "` + pad, http.StatusBadRequest,
			`json request body could not be decoded: unexpected EOF body:{"query": "` + strings.Repeat("a", 109) + `… (900011 bytes)`},
		{"long field name", `{"query":"{ ` + pad + ` }"}`, http.StatusUnprocessableEntity,
			`Cannot query field "aaaa`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, raw, gr := ts.do(t, http.MethodPost, "/graphql", "application/json", strings.NewReader(tt.body))
			if status != tt.wantStatus {
				t.Errorf("status = %d, want %d", status, tt.wantStatus)
			}
			if len(raw) > 1024 {
				t.Errorf("a %d-byte request got a %d-byte answer, want at most 1 KiB: %.300s", len(tt.body), len(raw), raw)
			}
			mustError(t, gr, tt.want)
		})
	}
}
