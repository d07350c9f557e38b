package workloads

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestCompileTemplate(t *testing.T) {
	names := map[string]int{"id": 0, "name": 1}
	vals := [][]byte{[]byte("7"), []byte(`a "b"/c d?`)}
	f := func(text string, esc escaping, want string) {
		t.Helper()
		tm, _, err := compileTemplate(text, esc, names)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if got := string(tm.expand(nil, vals)); got != want {
			t.Errorf("%q: got %q, want %q", text, got, want)
		}
	}
	f("plain", escRaw, "plain")
	f("", escRaw, "")
	f("{{id}}", escRaw, "7")
	f("x{{ id }}y{{name}}", escRaw, `x7ya "b"/c d?`)
	f(`{"n":"{{name}}"}`, escJSON, `{"n":"a \"b\"/c d?"}`)
	f(`{"n":"{{id|raw}}"}`, escJSON, `{"n":7}`)
	f("/d/{{name}}?q={{name}}", escPath, "/d/a%20%22b%22%2Fc%20d%3F?q=a+%22b%22%2Fc+d%3F")
	f("{{name}}", escJSONQuery, url.QueryEscape(`a \"b\"/c d?`))

	bad := func(text string, esc escaping, want string) {
		t.Helper()
		if _, _, err := compileTemplate(text, esc, names); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want an error with %q", text, err, want)
		}
	}
	bad("{{idd}}", escRaw, "uses {{idd}}, which is not a variable of the operation; its variables: id, name")
	bad("a {{id", escRaw, "without a closing }}")
	bad("{{ }}", escRaw, "empty placeholder")
	bad("{{id|raw}}", escRaw, "unknown modifier")
	bad(`{"n":"x{{id|raw}}"}`, escJSON, "must be a whole value")
	bad("{{id|upper}}", escJSON, "unknown modifier")
}

func TestURLEscapeMatchesNetURL(t *testing.T) {
	for _, s := range []string{"", "abc-_.~", "a b/c?d#e%f", "$&+,:;=@", "é\x00\xff"} {
		if got, want := string(appendURLEscaped(nil, []byte(s), false)), url.PathEscape(s); got != want {
			t.Errorf("path %q: got %q, want %q", s, got, want)
		}
		if got, want := string(appendURLEscaped(nil, []byte(s), true)), url.QueryEscape(s); got != want {
			t.Errorf("query %q: got %q, want %q", s, got, want)
		}
		if got, want := string(appendJSONString(nil, []byte(s))), quoteJSON(s); `"`+got+`"` != want && !strings.Contains(s, "\xff") {
			t.Errorf("json %q: got %q, want %q", s, got, want)
		}
	}
}

func TestPickers(t *testing.T) {
	// Round-robin starts at the user's index and wraps.
	p := picker{lo: 10, n: 3, user: 4}
	var got []int64
	for range 5 {
		got = append(got, p.next(nil))
	}
	if want := []int64{11, 12, 10, 11, 12}; !slices.Equal(got, want) {
		t.Errorf("round-robin of user 4 over [10,12]: got %v, want %v", got, want)
	}
	// Random: the same seed gives the same sequence, another seed another.
	draw := func(seed uint64) []int64 {
		p := picker{lo: 1, n: 1000, random: true}
		rng := userRand(seed, 3)
		var out []int64
		for range 20 {
			v := p.next(rng)
			if v < 1 || v > 1000 {
				t.Fatalf("random draw %d outside [1,1000]", v)
			}
			out = append(out, v)
		}
		return out
	}
	if a, b := draw(7), draw(7); !slices.Equal(a, b) {
		t.Errorf("same seed: %v and %v differ", a, b)
	}
	if a, b := draw(7), draw(8); slices.Equal(a, b) {
		t.Errorf("seeds 7 and 8 gave the same sequence %v", a)
	}
}

func TestDataValidation(t *testing.T) {
	f := func(d DataDef, want string) {
		t.Helper()
		errs := d.validate("v", true, map[string]DataDef{"id": {Range: []int64{1, 3}}, "name": {List: []string{"a"}}})
		got := ""
		for _, e := range errs {
			got += e.Error() + "; "
		}
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("%+v: got %q, want %q", d, got, want)
		}
	}
	f(DataDef{Range: []int64{1, 3}}, "")
	f(DataDef{Range: []int64{3, 1}}, "v.range: must be [low, high]")
	f(DataDef{Range: []int64{1}}, "v.range")
	f(DataDef{List: []string{}}, "v.list: must list at least one value")
	f(DataDef{List: []string{"a\nb"}}, "line break")
	f(DataDef{List: []string{"a"}, Range: []int64{1, 2}}, "needs exactly one of")
	f(DataDef{}, "needs exactly one of")
	f(DataDef{List: []string{"a"}, Pick: "sequential"}, "v.pick: must be random or round-robin")
	f(DataDef{CSV: "f.csv", Column: "id"}, "v.csv: f.csv was not validated")
	f(DataDef{CSV: "f.csv", File: &CSVFile{Rows: 1}}, "v.column: required with csv")
	f(DataDef{CSV: "f.csv", Column: "id", List: []string{"a"}}, "needs exactly one of")
	f(DataDef{Lookup: []string{"a"}, By: "id"}, "")
	f(DataDef{Lookup: []string{"a"}, By: "name"}, `v.by: "name" must be a range variable`)
	f(DataDef{Lookup: []string{"a"}, By: "nope"}, `v.by: "nope" is not a data variable`)
}

// wire is a loopback server recording the requests it got and answering
// each from answer.
type wire struct {
	*httptest.Server
	mu   sync.Mutex
	got  []recorded
	hand func(r recorded) (int, string)
}

type recorded struct {
	method, path, query, contentType, body string
	header                                 http.Header
}

func newWire(t *testing.T, hand func(r recorded) (int, string)) *wire {
	w := &wire{hand: hand}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec := recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), string(b), r.Header.Clone()}
		w.mu.Lock()
		w.got = append(w.got, rec)
		w.mu.Unlock()
		status, body := hand(rec)
		rw.WriteHeader(status)
		io.WriteString(rw, body)
	}))
	t.Cleanup(w.Close)
	return w
}

// requests returns what the server got so far.
func (w *wire) requests() []recorded {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

// runOp runs one closed-model group of n requests of def against w.
func runOp(t *testing.T, w *wire, def OperationDef, n int) Result {
	t.Helper()
	p := Phase{Name: "p", Arm: "graphql", Run: "r", Seed: 1, RequestTimeout: 5 * time.Second,
		Groups:     []UserGroup{{Operation: "op", Users: 1, Iterations: n}},
		Operations: map[Operation]OperationDef{"op": def}}
	res, err := Run(t.Context(), w.URL, p, NewClient(1, 5*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestTransportsOnTheWire sends every transport to a real server and checks
// what arrived.
func TestTransportsOnTheWire(t *testing.T) {
	const doc = "query Donut($id: ID!) { donut(id: $id) { id } }"
	vars := map[string]any{"id": "{{id}}", "n": "{{id|raw}}"}
	data := map[string]DataDef{"id": {Range: []int64{4, 4}}}
	ok := func(recorded) (int, string) { return 200, `{"data":{"donut":{"id":"4"}}}` }
	expect := Expect{NoGraphQLErrors: true, JSON: map[string]string{"data.donut.id": "{{id}}"}}

	t.Run("post", func(t *testing.T) {
		w := newWire(t, ok)
		r := runOp(t, w, OperationDef{GraphQL: &GraphQLDef{Document: doc, OperationName: "Donut", Variables: vars}, Data: data, Expect: expect}, 2)
		g := w.requests()[0]
		if r.Errors != 0 || g.method != "POST" || g.path != "/graphql" || g.contentType != "application/json" ||
			g.body != `{"query":"query Donut($id: ID!) { donut(id: $id) { id } }","operationName":"Donut","variables":{"id":"4","n":4}}` {
			t.Errorf("got %+v (errors %v)", g, r.ErrorExamples)
		}
		if b := g.header.Get("Baggage"); b != "soakd.run=r,soakd.phase=p,soakd.arm=graphql" {
			t.Errorf("baggage %q", b)
		}
	})
	t.Run("get", func(t *testing.T) {
		w := newWire(t, ok)
		r := runOp(t, w, OperationDef{GraphQL: &GraphQLDef{Document: doc, OperationName: "Donut", Variables: vars, Transport: TransportGet}, Data: data, Expect: expect}, 1)
		g := w.requests()[0]
		q, _ := url.ParseQuery(g.query)
		if r.Errors != 0 || g.method != "GET" || g.path != "/graphql" || g.body != "" || q.Get("query") != doc ||
			q.Get("operationName") != "Donut" || q.Get("variables") != `{"id":"4","n":4}` {
			t.Errorf("got %+v, query %v (errors %v)", g, q, r.ErrorExamples)
		}
	})
	t.Run("application/graphql", func(t *testing.T) {
		w := newWire(t, func(recorded) (int, string) { return 200, `{"data":{"add":100}}` })
		add := OperationDef{GraphQL: &GraphQLDef{Document: "query Add { add(x: {{x}}, y: 50) }", Transport: TransportGraphQL},
			Data: map[string]DataDef{"x": {List: []string{"50"}}}, Expect: Expect{NoGraphQLErrors: true, JSON: map[string]string{"data.add": "100"}}}
		r := runOp(t, w, add, 1)
		g := w.requests()[0]
		if r.Errors != 0 || g.method != "POST" || g.contentType != "application/graphql" || g.body != "query Add { add(x: 50, y: 50) }" {
			t.Errorf("got %+v (errors %v)", g, r.ErrorExamples)
		}
	})
	t.Run("persisted, with the not-found retry", func(t *testing.T) {
		sum := sha256.Sum256([]byte(doc))
		hash := hex.EncodeToString(sum[:])
		var stored atomic.Bool
		w := newWire(t, func(r recorded) (int, string) {
			var in struct {
				Query      string
				Extensions struct{ PersistedQuery struct{ Sha256Hash string } }
			}
			_ = json.Unmarshal([]byte(r.body), &in)
			switch {
			case in.Extensions.PersistedQuery.Sha256Hash != hash:
				return 400, "bad hash"
			case in.Query != "":
				stored.Store(true)
			case !stored.Load():
				return 200, `{"errors":[{"message":"PersistedQueryNotFound","extensions":{"code":"PERSISTED_QUERY_NOT_FOUND"}}],"data":null}`
			}
			return 200, `{"data":{"donut":{"id":"4"}}}`
		})
		r := runOp(t, w, OperationDef{GraphQL: &GraphQLDef{Document: doc, Variables: vars, Transport: TransportPersisted}, Data: data, Expect: expect}, 3)
		if r.Requests != 3 || r.Errors != 0 {
			t.Fatalf("got %d requests %d errors %v, want 3 and 0", r.Requests, r.Errors, r.ErrorExamples)
		}
		// Hash only, then the retry with the document, then hash only twice.
		if len(w.requests()) != 4 || strings.Contains(w.requests()[0].body, `"query"`) || !strings.Contains(w.requests()[1].body, `"query":"query Donut`) ||
			strings.Contains(w.requests()[2].body, `"query"`) || strings.Contains(w.requests()[3].body, `"query"`) {
			t.Errorf("wire: %+v", w.requests())
		}
		if want := `{"variables":{"id":"4","n":4},"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + hash + `"}}}`; w.requests()[0].body != want {
			t.Errorf("hash-only body %s, want %s", w.requests()[0].body, want)
		}
	})
	t.Run("rest with a JSON body and a CSV row", func(t *testing.T) {
		w := newWire(t, func(r recorded) (int, string) { return 201, `{"ok":true}` })
		items := writeCSV(t, "sku,tag\na/1,x&y\n\"b 2\",z\n", "sku", "tag")
		def := OperationDef{
			REST: &RESTDef{Method: "POST", Path: "/items/{{sku}}?tag={{tag}}", Body: map[string]any{"sku": "{{sku}}", "tag": "{{tag}}"}},
			Data: map[string]DataDef{
				"sku": {CSV: items.path, Column: "sku", File: &items.file, Pick: PickRoundRobin},
				"tag": {CSV: items.path, Column: "tag", File: &items.file, Pick: PickRoundRobin},
			},
			Headers: map[string]string{"X-Sku": "{{sku}}"},
			Expect:  Expect{Status: 201, JSON: map[string]string{"ok": "true"}},
		}
		r := runOp(t, w, def, 2)
		if r.Errors != 0 || len(w.requests()) != 2 {
			t.Fatalf("got %d requests, errors %v", len(w.requests()), r.ErrorExamples)
		}
		// One row per request: the columns of a CSV row stay together.
		for i, want := range []struct{ path, query, body, header string }{
			{"/items/a/1", "tag=x%26y", `{"sku":"a/1","tag":"x&y"}`, "a/1"},
			{"/items/b 2", "tag=z", `{"sku":"b 2","tag":"z"}`, "b 2"},
		} {
			g := w.requests()[i]
			if g.method != "POST" || g.path != want.path || g.query != want.query || g.body != want.body ||
				g.header.Get("X-Sku") != want.header || g.contentType != "application/json" {
				t.Errorf("request %d: got %+v, want %+v", i, g, want)
			}
		}
	})
}

// TestHeadersFromTheEnvironment: a secret header reaches the wire, and
// neither the phase's JSON nor the result holds its value.
func TestHeadersFromTheEnvironment(t *testing.T) {
	const secret = "Bearer s3cr3t-value"
	t.Setenv("SOAKD_TEST_TOKEN", secret)
	w := newWire(t, func(r recorded) (int, string) {
		if r.header.Get("Authorization") != secret {
			return 401, "no"
		}
		return 200, "{}"
	})
	def := OperationDef{REST: &RESTDef{Path: "/x"}, HeadersEnv: map[string]string{"Authorization": "SOAKD_TEST_TOKEN"}}
	p := Phase{Name: "p", Arm: "rest", Run: "r", RequestTimeout: time.Second,
		Groups: []UserGroup{{Operation: "op", Users: 1, Iterations: 1}}, Operations: map[Operation]OperationDef{"op": def}}
	spec, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(spec), "s3cr3t") || !strings.Contains(string(spec), `"headers_env":{"Authorization":"SOAKD_TEST_TOKEN"}`) {
		t.Errorf("phase JSON %s: want the variable's name, not its value", spec)
	}
	res, err := Run(t.Context(), w.URL, p, nil, nil)
	if err != nil || res.Errors != 0 {
		t.Fatalf("got %v, %+v", err, res.ErrorExamples)
	}
	if out, _ := json.Marshal(res); strings.Contains(string(out), "s3cr3t") {
		t.Errorf("the result holds the secret: %s", out)
	}
	os.Unsetenv("SOAKD_TEST_TOKEN") // t.Setenv restores it at the end
	if _, err := Run(t.Context(), w.URL, p, nil, nil); err == nil || !strings.Contains(err.Error(), "headers_env.Authorization: the environment variable SOAKD_TEST_TOKEN is not set") {
		t.Errorf("without the variable: got %v, want an error naming it", err)
	}
}

// TestOperationProblems: a bad definition gets every problem, each naming its key.
func TestOperationProblems(t *testing.T) {
	f := func(d OperationDef, want ...string) {
		t.Helper()
		err := d.Validate(map[Operation]OperationDef{"w": {REST: &RESTDef{Path: "/"}, Writes: true}, "r": {REST: &RESTDef{Path: "/"}}})
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("got %v, want %q", err, w)
			}
		}
	}
	f(OperationDef{}, "needs exactly one of rest, graphql or subscription")
	f(OperationDef{REST: &RESTDef{Path: "x", Method: "get"}}, "rest.path: must start with /", `rest.method: "get" is not an HTTP method`)
	f(OperationDef{REST: &RESTDef{Path: "/a\r\nX-Evil: 1"}}, "rest.path: a path holds no line break or NUL")
	f(OperationDef{REST: &RESTDef{Path: "/{{event}}"}}, "rest.path:", "{{event}}, which is not a variable")
	f(OperationDef{REST: &RESTDef{Path: "/", Body: "x"}}, "rest.body: a GET request carries no body")
	f(OperationDef{GraphQL: &GraphQLDef{Document: "q", Transport: "ws"}}, "graphql.transport: must be post, get, graphql or persisted")
	f(OperationDef{GraphQL: &GraphQLDef{Document: "q", Transport: TransportGraphQL, Variables: map[string]any{"a": 1}, OperationName: "Q"}},
		"graphql.variables: the graphql transport", "graphql.operation_name: the graphql transport")
	f(OperationDef{GraphQL: &GraphQLDef{Document: "q {{x}}", Transport: TransportPersisted}, Data: map[string]DataDef{"x": {List: []string{"a"}}}},
		"graphql.document: the persisted transport needs a constant document")
	f(OperationDef{GraphQL: &GraphQLDef{Document: "q", Variables: map[string]any{"x": "{{x|raw}}"}}, Data: map[string]DataDef{"x": {List: []string{"a"}}}},
		"only a range variable may be raw")
	f(OperationDef{REST: &RESTDef{Path: "/"}, Expect: Expect{Status: 99, JSON: map[string]string{"a..b": "1"}}},
		"expect.status: must be an HTTP status", `expect.json.a..b: "a..b" has an empty key`)
	f(OperationDef{REST: &RESTDef{Path: "/"}, Data: map[string]DataDef{"event": {List: []string{"a"}}, "a-b": {List: []string{"a"}}}},
		"data.event: event is a built-in variable", "data.a-b: a variable name")
	f(OperationDef{REST: &RESTDef{Path: "/"}, Headers: map[string]string{"X A": "1"}}, "headers.X A: not a valid header name")
	f(OperationDef{Subscription: &SubscriptionDef{Document: "s", RaisedBy: "r", Match: ""}},
		"subscription.raised_by: r is not a writer", "subscription.match:")
	f(OperationDef{Subscription: &SubscriptionDef{Document: "s", RaisedBy: "nope", Match: "a"}},
		`subscription.raised_by: "nope" is not a defined operation; defined: r, w`)
}

// TestSubscriptionHeaders: a subscription's headers and headers_env go on
// the websocket upgrade and connection_params in connection_init; a missing
// variable or a templated header is refused, naming the key.
func TestSubscriptionHeaders(t *testing.T) {
	ops := map[Operation]OperationDef{"w": {GraphQL: &GraphQLDef{Document: "mutation { w }"}, Writes: true}}
	def := OperationDef{
		Subscription: &SubscriptionDef{Document: "subscription { s }", RaisedBy: "w", Match: "data.s",
			ConnectionParams: map[string]any{"authToken": "t0k"}},
		Headers:    map[string]string{"X-Client": "soakd"},
		HeadersEnv: map[string]string{"Authorization": "SOAKD_SUB_TOKEN"},
	}
	env := func(name string) (string, bool) {
		if name == "SOAKD_SUB_TOKEN" {
			return "Bearer s3cret", true
		}
		return "", false
	}
	cs, err := compileSubscription(def, ops, env)
	if err != nil {
		t.Fatal(err)
	}
	if cs.header.Get("Authorization") != "Bearer s3cret" || cs.header.Get("X-Client") != "soakd" || string(cs.initPayload) != `{"authToken":"t0k"}` {
		t.Errorf("header %v, init payload %s", cs.header, cs.initPayload)
	}
	if _, err := compileSubscription(def, ops, func(string) (string, bool) { return "", false }); err == nil ||
		!strings.Contains(err.Error(), "headers_env.Authorization: the environment variable SOAKD_SUB_TOKEN is not set") {
		t.Errorf("a missing variable: got %v", err)
	}
	def.Headers = map[string]string{"X-Id": "{{writer_id}}"}
	if _, err := compileSubscription(def, ops, env); err == nil || !strings.Contains(err.Error(), "headers.X-Id") {
		t.Errorf("a templated header: got %v", err)
	}
}

// TestGraphQLPath: graphql.path sends the operation to another path of the
// GraphQL endpoint's server, every transport alike.
func TestGraphQLPath(t *testing.T) {
	ok := func(recorded) (int, string) { return 200, `{"data":{"x":1}}` }
	for _, tr := range []string{TransportPost, TransportGet, TransportGraphQL} {
		w := newWire(t, ok)
		r := runOp(t, w, OperationDef{GraphQL: &GraphQLDef{Document: "{ x }", Path: "/graphql/batched", Transport: tr},
			Expect: Expect{NoGraphQLErrors: true, JSON: map[string]string{"data.x": "1"}}}, 1)
		if g := w.requests(); r.Errors != 0 || len(g) != 1 || g[0].path != "/graphql/batched" {
			t.Errorf("%s: got %+v, errors %v; want one request to /graphql/batched", tr, g, r.ErrorExamples)
		}
	}
}

// TestChattyFollow: a chatty operation is one request of several calls:
// the first, then one per item each step follows, in order; a follow call
// that fails fails the request with its class, naming its URL.
func TestChattyFollow(t *testing.T) {
	def := OperationDef{
		REST: &RESTDef{Path: "/users?limit=2", Follow: []FollowDef{
			{Path: "/users/{id}/tasks", From: 0, IDField: "id"},
			{Path: "/tasks/{id}/subtasks?x=1", From: 1, IDField: "id"},
		}},
		Expect: Expect{Present: []string{"data.1.id"}},
	}
	answers := map[string]string{
		"/users":             `{"data":[{"id":1,"name":"a"},{"id":2,"name":"b"}]}`,
		"/users/1/tasks":     `{"data":[{"id":10},{"id":11}]}`,
		"/users/2/tasks":     `{"data":[]}`,
		"/tasks/10/subtasks": `{"data":[{"id":100}]}`,
		"/tasks/11/subtasks": `{"data":{"id":101}}`,
	}
	var mu sync.Mutex // the handler reads answers, the test changes them
	set := func(path, body string) {
		mu.Lock()
		defer mu.Unlock()
		if body == "" {
			delete(answers, path)
		} else {
			answers[path] = body
		}
	}
	w := newWire(t, func(r recorded) (int, string) {
		mu.Lock()
		defer mu.Unlock()
		if b, ok := answers[r.path]; ok {
			return 200, b
		}
		return 404, `{"error":"no"}`
	})
	r := runOp(t, w, def, 2)
	if r.Requests != 2 || r.Errors != 0 {
		t.Fatalf("got %d requests, %d errors %v; want 2 and 0", r.Requests, r.Errors, r.ErrorExamples)
	}
	var paths []string
	for _, g := range w.requests()[:5] {
		paths = append(paths, g.path+"?"+g.query)
	}
	want := []string{"/users?limit=2", "/users/1/tasks?", "/users/2/tasks?", "/tasks/10/subtasks?x=1", "/tasks/11/subtasks?x=1"}
	if !slices.Equal(paths, want) || len(w.requests()) != 10 {
		t.Errorf("calls %v (of %d), want %v twice", paths, len(w.requests()), want)
	}

	set("/tasks/11/subtasks", "")
	r = runOp(t, w, def, 1)
	if r.Errors != 1 || r.ErrorsByClass["http_404"] != 1 || !strings.Contains(fmt.Sprint(r.ErrorExamples), "/tasks/11/subtasks") {
		t.Errorf("a failing follow call: got %v %v, want one http_404 naming /tasks/11/subtasks", r.ErrorsByClass, r.ErrorExamples)
	}
	set("/users/2/tasks", `{"data":[{"name":"no id"}]}`)
	r = runOp(t, w, def, 1)
	if r.ErrorsByClass[ClassPayloadMismatch] != 1 || !strings.Contains(fmt.Sprint(r.ErrorExamples), "no integer id") {
		t.Errorf("an item without its id: got %v %v, want payload_mismatch", r.ErrorsByClass, r.ErrorExamples)
	}
}

func TestFollowAndPathProblems(t *testing.T) {
	f := func(d OperationDef, want ...string) {
		t.Helper()
		err := d.Validate(nil)
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("got %v, want %q", err, w)
			}
		}
	}
	f(OperationDef{GraphQL: &GraphQLDef{Document: "{ x }", Path: "graphql?x=1"}}, "graphql.path: must start with /")
	f(OperationDef{REST: &RESTDef{Method: "PUT", Path: "/a", Follow: []FollowDef{{Path: "/b/{id}", IDField: "id"}}}},
		"rest.follow: only a GET is followed")
	f(OperationDef{REST: &RESTDef{Path: "/a", Follow: []FollowDef{
		{Path: "/b", IDField: "id"},
		{Path: "/c/{id}/{{x}}", From: 2, IDField: ""},
	}}}, "rest.follow[0].path: must hold {id} once", "rest.follow[1].path: takes no {{placeholders}}",
		"rest.follow[1].from: must name an earlier call, 0 (rest.path) to 1, got 2", "rest.follow[1].id_field:")
	// Line breaks and NUL, as in rest.path: the client would send another request.
	f(OperationDef{REST: &RESTDef{Path: "/a", Follow: []FollowDef{
		{Path: "/b/{id}\r\nX-Injected:1", IDField: "id"},
		{Path: "/c/{id}\n", IDField: "id"},
		{Path: "/d/{id}\x00", IDField: "id"},
	}}}, `rest.follow[0].path: a path holds no line break or NUL (got "/b/{id}\r\nX-Injected:1")`,
		`rest.follow[1].path: a path holds no line break or NUL`, `rest.follow[2].path: a path holds no line break or NUL (got "/d/{id}\x00")`)
}

// TestOperationListCountsFamilies: a large family of operations sharing a
// first word is counted, the rest listed.
func TestOperationListCountsFamilies(t *testing.T) {
	ops := map[Operation]OperationDef{"add": {}, "rest-get": {}, "rest-put": {}}
	for i := range 6 {
		ops[Operation(fmt.Sprintf("rel-q%d", i))] = OperationDef{}
	}
	if got, want := operationList(ops), "add, rest-get, rest-put, 6 named rel-… (soakd config lists them)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestFollowIsBounded: followed lists that multiply stop at
// rest.max_follow_calls (two follows of a 2,000-item list made 4 M calls
// for one request, and a 2 s phase ran over 80 s).
func TestFollowIsBounded(t *testing.T) {
	items := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"data":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"id":%d}`, i+1)
		}
		b.WriteString(`]}`)
		return b.String()
	}
	list := items(50)
	w := newWire(t, func(recorded) (int, string) { return 200, list })
	def := OperationDef{
		REST: &RESTDef{Path: "/users", MaxFollowCalls: 100, Follow: []FollowDef{
			{Path: "/users/{id}/tasks", From: 0, IDField: "id"},
			{Path: "/tasks/{id}/subtasks", From: 1, IDField: "id"},
		}},
	}
	r := runOp(t, w, def, 1)
	if r.ErrorsByClass[ClassFollowLimit] != 1 || !strings.Contains(fmt.Sprint(r.ErrorExamples), "GET "+w.URL+"/users: the follow calls") || !strings.Contains(fmt.Sprint(r.ErrorExamples), "rest.max_follow_calls (100)") {
		t.Fatalf("got %v %v, want one follow_limit", r.ErrorsByClass, r.ErrorExamples)
	}
	if n := len(w.requests()); n != 1+100 {
		t.Errorf("%d calls, want the first and 100 follow calls (50 × 50 + 50 would have been %d)", n, 1+50+50*50)
	}
}

// TestFollowChainStopsWithThePhase: a phase stopped mid-chain sends no
// more follow calls: each user's next call checks the phase's stop, so the
// calls after it are at most the ones in flight (one per user), not the
// rest of a 2,000-item list; a chain cut short is neither a request nor an
// error.
func TestFollowChainStopsWithThePhase(t *testing.T) {
	const users, items, stopAfter = 2, 2000, 50
	var b strings.Builder
	b.WriteString(`{"data":[`)
	for i := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d}`, i+1)
	}
	b.WriteString(`]}`)
	list := b.String()

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var mu sync.Mutex
	follows, atStop := 0, -1
	w := newWire(t, func(r recorded) (int, string) {
		if r.path == "/users" {
			return 200, list
		}
		mu.Lock()
		defer mu.Unlock()
		if follows++; follows == stopAfter {
			atStop = follows
			cancel() // the run is stopped while both users are mid-chain
		}
		return 200, `{"data":{"id":1}}`
	})
	p := Phase{Name: "p", Arm: "rest", Run: "r", Seed: 1, RequestTimeout: time.Minute,
		Groups: []UserGroup{{Operation: "op", Users: users, Iterations: 1}},
		Operations: map[Operation]OperationDef{"op": {REST: &RESTDef{Path: "/users", Follow: []FollowDef{
			{Path: "/users/{id}", From: 0, IDField: "id"},
		}}}}}
	r, err := Run(ctx, w.URL, p, NewClient(users, time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	after := follows - atStop
	mu.Unlock()
	if atStop < 0 || after > users {
		t.Errorf("%d follow calls after the stop (at call %d), want at most %d (the ones in flight)", after, atStop, users)
	}
	if !r.Aborted || r.Requests != 0 || r.Errors != 0 {
		t.Errorf("got aborted %v, %d requests, %d errors %v; want an aborted phase with no request counted", r.Aborted, r.Requests, r.Errors, r.ErrorExamples)
	}
}
