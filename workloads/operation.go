package workloads

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
)

// Operation names one kind of request a virtual user sends: a key of
// Phase.Operations. Operations are low cardinality on purpose: they label
// histograms and error counts.
type Operation string

// GraphQL transports of a GraphQLDef.
const (
	// TransportPost sends {"query","operationName","variables"} as a JSON
	// POST body (the default).
	TransportPost = "post"
	// TransportGet sends query, operationName and variables as URL query
	// parameters of a GET.
	TransportGet = "get"
	// TransportGraphQL POSTs the document itself with Content-Type
	// application/graphql (seed 003's add); it carries no variables.
	TransportGraphQL = "graphql"
	// TransportPersisted sends Apollo's automatic persisted query: only the
	// document's SHA-256 in extensions.persistedQuery, and when the server
	// answers PersistedQueryNotFound, the same request again with the
	// document, as the APQ protocol defines. Both count as one request.
	TransportPersisted = "persisted"
)

// Built-in template variables of writers (OperationDef.Writes).
const (
	// VarWriterID is the writing user's own id, "w<index>": writers never
	// touch what another user writes or readers read.
	VarWriterID = "writer_id"
	// VarEvent is EventName(writer id, sequence, send time), the value a
	// subscription's Match path must carry back.
	VarEvent = "event"
)

// OperationDef is one named operation: exactly one of REST, GraphQL or
// Subscription, the data its templates draw from, and what a response must
// hold to count as a success. Strings of REST, GraphQL, Headers and Expect
// may hold "{{name}}" placeholders (see compileTemplate).
type OperationDef struct {
	// REST is an HTTP request to the REST base URL.
	REST *RESTDef `yaml:"rest,omitempty" json:"rest,omitempty"`
	// GraphQL is a query or mutation sent to the GraphQL endpoint.
	GraphQL *GraphQLDef `yaml:"graphql,omitempty" json:"graphql,omitempty"`
	// Subscription is a subscription opened by a phase's subscribers; it is
	// never an operation of a user group.
	Subscription *SubscriptionDef `yaml:"subscription,omitempty" json:"subscription,omitempty"`
	// Headers are sent with every request (values may be templates).
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
	// HeadersEnv maps a header to the environment variable holding its
	// value, so secrets (tokens) stay out of config files: the spec carries
	// the variable's name only and the driver reads its own environment.
	HeadersEnv map[string]string `yaml:"headers_env,omitempty" json:"headers_env,omitempty"`
	// Data are the operation's template variables, by name.
	Data map[string]DataDef `yaml:"data,omitempty" json:"data,omitempty"`
	// Expect is what a response must hold.
	Expect Expect `yaml:"expect,omitempty" json:"expect"`
	// Writes marks a writer: each user writes its own object, with the
	// built-in variables writer_id and event, and its successful requests
	// are the events a subscription raised by this operation must deliver.
	Writes bool `yaml:"writes,omitempty" json:"writes,omitempty"`
}

// RESTDef is an HTTP request to the REST twin.
type RESTDef struct {
	// Method is the HTTP method ("" means GET).
	Method string `yaml:"method,omitempty" json:"method,omitempty"`
	// Path is appended to the REST base URL; it starts with "/". Values
	// are path-escaped, and query-escaped after a '?'.
	Path string `yaml:"path,omitempty" json:"path"`
	// Body is sent as it is when a string (Content-Type text/plain unless
	// a header says otherwise), or as JSON when a mapping or list (values
	// JSON-escaped, Content-Type application/json).
	Body any `yaml:"body,omitempty" json:"body,omitempty"`
	// Follow makes the operation a chatty client's view: after the call
	// to Path, one GET per item an earlier call returned, all within one
	// request of the operation (timed from the first send to the last
	// body, failed by the first call that fails). Only a GET may follow.
	Follow []FollowDef `yaml:"follow,omitempty" json:"follow,omitempty"`
	// MaxFollowCalls caps the follow calls of one request (0:
	// DefaultMaxFollowCalls): two follows of a 2,000-item list made 4 M
	// calls for one request before. A request over the cap fails as
	// follow_limit; the whole chain must also finish within the phase's
	// request_timeout.
	MaxFollowCalls int `yaml:"max_follow_calls,omitempty" json:"max_follow_calls,omitempty"`
}

// DefaultMaxFollowCalls is the most follow calls one request of a chatty
// operation makes when rest.max_follow_calls is not set: seed 000's
// costliest chatty request (250 users, their completed tasks, the tasks'
// subtasks) makes about 1,500.
const DefaultMaxFollowCalls = 10000

// MaxMaxFollowCalls is the largest rest.max_follow_calls accepted.
const MaxMaxFollowCalls = 100000

// FollowDef is one round of a chatty operation's calls (RESTDef.Follow):
// Path, with {id} replaced by each item's IDField, is called once per item
// of the JSON answers of call From, one after the other. The answers are
// {"data": [items]} or {"data": {item}}; an item without a numeric IDField
// fails the request as payload_mismatch.
type FollowDef struct {
	// Path starts with "/", is appended to the REST base URL and holds
	// {id} once; it takes no {{placeholders}}.
	Path string `yaml:"path,omitempty" json:"path"`
	// From is the call whose items are followed: 0 the operation's own
	// (rest.path), k the k-th follow (1-based), which must come before.
	From int `yaml:"from,omitempty" json:"from"`
	// IDField is the item's numeric field put in place of {id}.
	IDField string `yaml:"id_field,omitempty" json:"id_field"`
}

// GraphQLDef is a GraphQL query or mutation.
type GraphQLDef struct {
	// Document is the GraphQL document. Transports get and persisted need
	// it constant (no placeholders): the URL and the hash are built once.
	Document string `yaml:"document,omitempty" json:"document"`
	// OperationName selects the operation of the document to run.
	OperationName string `yaml:"operation_name,omitempty" json:"operation_name,omitempty"`
	// Variables are the operation's variables; string values may be
	// templates ("{{id}}"), and "{{n|raw}}" writes a range variable as a number.
	Variables map[string]any `yaml:"variables,omitempty" json:"variables,omitempty"`
	// Transport is post (""), get, graphql or persisted.
	Transport string `yaml:"transport,omitempty" json:"transport,omitempty"`
	// Path, when set, replaces the path of the GraphQL endpoint's URL (same
	// scheme and host): a server serving several GraphQL endpoints, like
	// the built-in target's /graphql/naive, /graphql/batched and
	// /graphql/joined. It starts with "/" and takes no query.
	Path string `yaml:"path,omitempty" json:"path,omitempty"`
}

// SubscriptionDef is a GraphQL subscription whose events a writer raises.
type SubscriptionDef struct {
	// Document is the subscription document.
	Document string `yaml:"document,omitempty" json:"document"`
	// Variables may use {{writer_id}}: the id of the writer subscribed to.
	Variables map[string]any `yaml:"variables,omitempty" json:"variables,omitempty"`
	// RaisedBy names the writer operation whose successful requests each
	// raise one event on the writer's id.
	RaisedBy Operation `yaml:"raised_by,omitempty" json:"raised_by"`
	// Match is the JSON path, in an event's payload, of the {{event}} value
	// the writer sent: it tells which write an event carries, so lost,
	// duplicated and misrouted events and the latency are exact.
	Match string `yaml:"match,omitempty" json:"match"`
	// ConnectionParams is sent as connection_init's payload (a JSON
	// object; {} when unset): where servers such as Apollo's read a
	// websocket client's credentials. No templates. The operation's headers
	// and headers_env go on the websocket upgrade request.
	ConnectionParams map[string]any `yaml:"connection_params,omitempty" json:"connection_params,omitempty"`
}

// Expect is what a response must hold; a failure is counted by its class.
type Expect struct {
	// Status is the HTTP status wanted (0 means 200); another is http_<code>.
	Status int `yaml:"status,omitempty" json:"status,omitempty"`
	// NoGraphQLErrors fails (graphql_error) a body whose top-level errors is
	// anything but absent, null or [].
	NoGraphQLErrors bool `yaml:"no_graphql_errors,omitempty" json:"no_graphql_errors,omitempty"`
	// JSON maps dotted paths (data.donut.id; a number indexes an array) to
	// the value wanted, a template: a string is compared with its text,
	// another value with its JSON literal. Missing or different is
	// payload_mismatch; a body that is not JSON is decode_error.
	JSON map[string]string `yaml:"json,omitempty" json:"json,omitempty"`
	// Present lists paths that must hold a value other than null.
	Present []string `yaml:"present,omitempty" json:"present,omitempty"`
}

// kind reports which of REST, GraphQL and Subscription d is.
func (d OperationDef) kind() string {
	switch {
	case d.REST != nil:
		return "rest"
	case d.GraphQL != nil:
		return "graphql"
	case d.Subscription != nil:
		return "subscription"
	}
	return ""
}

// IsSubscription reports whether d is a subscription.
func (d OperationDef) IsSubscription() bool { return d.Subscription != nil }

// Endpoint is "rest" or "graphql": the base URL d's requests go to, which
// is also the arm of the experiment it belongs to; "" for a subscription.
func (d OperationDef) Endpoint() string {
	if k := d.kind(); k != "subscription" {
		return k
	}
	return ""
}

// Validate reports every problem of d at once (joined with errors.Join),
// each naming its key; ops are the other operations (for raised_by).
// Environment variables of HeadersEnv are not looked up.
func (d OperationDef) Validate(ops map[Operation]OperationDef) error {
	if d.Subscription != nil {
		_, err := compileSubscription(d, ops, func(string) (string, bool) { return "", true })
		return err
	}
	_, err := compileOperation("", d, endpoints{graphql: "http://h/graphql", rest: "http://h"}, func(string) (string, bool) { return "", true }, nil)
	return err
}

// compiledOp is an operation ready to fill: its templates compiled against
// the phase's endpoints, its variables numbered.
type compiledOp struct {
	name      Operation
	endpoint  string // "rest" or "graphql"
	writes    bool
	method    string
	nvars     int
	sources   []varSource // by variable index (writer_id and event excluded)
	pickers   []pickerDef
	writerVar int // -1 unless writes
	eventVar  int
	rangeVars int // variables written into the value buffer
	url       template
	follow    []followStep // RESTDef.Follow: the chatty calls after the first
	maxFollow int          // RESTDef.MaxFollowCalls, defaulted
	getVars   template     // TransportGet: the variables JSON, query-escaped
	headers   []headerTemplate
	body      template
	retryBody template // TransportPersisted: the body with the document
	expect    compiledExpect
}

// followStep is one compiled FollowDef: the URL around {id}.
type followStep struct {
	prefix, suffix []byte // the absolute URL before and after {id}
	from           int
	idField        string
}

// varSource is how one data variable gets its value from the pickers.
type varSource struct {
	picker int      // the picker drawn (lookup: its by variable's picker)
	values [][]byte // list or lookup; nil for a range or a CSV column
	lookup bool
	column int       // a CSV column: its index in its picker's file's row; -1 otherwise
	csv    csvOrigin // the file and column of a CSV variable; zero otherwise
}

// csvOrigin names where a value read from a CSV file came from: its
// picker's draw is the row. Messages name it rather than quote the value,
// which may be any file's content (see issue 23: /proc/self/environ).
type csvOrigin struct {
	file, column string // the file's base name, the column's name
	picker       int
}

// pickerDef is one picker of an operation: a range, a list, or a CSV
// file's rows (shared by its columns).
type pickerDef struct {
	lo, n  int64
	random bool
	file   *csvFile // a CSV file's rows: the file read
}

// headerTemplate is one header: its name and its value's template.
type headerTemplate struct {
	key   string
	value template
}

// compiledExpect is Expect compiled.
type compiledExpect struct {
	status   int
	needJSON bool
	errors   int // index of the top-level "errors" path, -1 unless checked
	paths    []jsonPath
	keys     []string   // the paths as written, for messages
	want     []template // nil for a presence check
	// wantCSV is, by path, the CSV column the wanted value is built from
	// (file "" when none): a mismatch names the row, never quotes it.
	wantCSV []csvOrigin
}

// compileOperation compiles d (a REST or GraphQL operation) against ep;
// getenv resolves HeadersEnv. Every problem is returned at once, each
// naming its key. data, the phase's CSV files opened by the driver, is nil
// when only checking (CSV data then needs no File).
func compileOperation(name Operation, d OperationDef, ep endpoints, getenv func(string) (string, bool), data *csvData) (*compiledOp, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	n := 0
	for _, set := range []bool{d.REST != nil, d.GraphQL != nil, d.Subscription != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, errors.New("needs exactly one of rest, graphql or subscription")
	}
	op := &compiledOp{name: name, endpoint: d.kind(), writes: d.Writes, writerVar: -1, eventVar: -1}

	// Variables: data entries in name order, then the writers' own.
	names := map[string]int{}
	dataNames := slices.Sorted(maps.Keys(d.Data))
	for _, v := range dataNames {
		switch {
		case !isIdentifier(v):
			bad("data.%s: a variable name is letters, digits and _, not starting with a digit", v)
		case v == VarWriterID || v == VarEvent:
			bad("data.%s: %s is a built-in variable of writers; choose another name", v, v)
		}
		errs = append(errs, prefixed("data.", d.Data[v].validate(v, data != nil, d.Data))...)
		if dd := d.Data[v]; data != nil && dd.CSV != "" && dd.File != nil {
			if f, _ := data.column(dd.CSV, dd.Column); f == nil {
				bad("data.%s.csv: %s was not opened by the driver", v, dd.CSV)
			}
		}
		names[v] = len(names)
	}
	if d.Writes {
		op.writerVar, op.eventVar = len(names), len(names)+1
		names[VarWriterID], names[VarEvent] = op.writerVar, op.eventVar
	}
	op.nvars = len(names)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	op.compileSources(d.Data, dataNames, data)

	compile := func(key, text string, esc escaping) template {
		t, raw, err := compileTemplate(text, esc, names)
		if err != nil {
			bad("%s: %v", key, err)
			return nil
		}
		for _, r := range raw {
			if dd, ok := d.Data[r]; !ok || dd.Range == nil {
				bad("%s: {{%s|raw}} writes a number: only a range variable may be raw", key, r)
			}
		}
		return t
	}

	contentType := ""
	switch {
	case d.REST != nil:
		r := d.REST
		op.method = r.Method
		if op.method == "" {
			op.method = http.MethodGet
		}
		if !isToken(op.method) || strings.ToUpper(op.method) != op.method {
			bad("rest.method: %q is not an HTTP method; write it in capitals, like GET or PUT", r.Method)
		}
		if !strings.HasPrefix(r.Path, "/") {
			bad("rest.path: must start with / (it is appended to the REST base URL), got %q", r.Path)
		}
		if strings.ContainsAny(r.Path, "\r\n\x00") {
			// As for headers: the HTTP client would turn them into spaces
			// and send another request than the one written.
			bad("rest.path: a path holds no line break or NUL (got %q)", r.Path)
		}
		op.url = compile("rest.path", ep.rest+r.Path, escPath)
		switch b := r.Body.(type) {
		case nil:
		case string:
			op.body, contentType = compile("rest.body", b, escRaw), "text/plain; charset=utf-8"
		default:
			text, err := marshalJSON(b)
			if err != nil {
				bad("rest.body: %v", err)
				break
			}
			op.body, contentType = compile("rest.body", text, escJSON), "application/json"
		}
		if op.body != nil && (op.method == http.MethodGet || op.method == http.MethodHead) {
			bad("rest.body: a %s request carries no body", op.method)
		}
		if len(r.Follow) > 0 && op.method != http.MethodGet {
			bad("rest.follow: only a GET is followed by chatty calls, not %s", op.method)
		}
		op.follow = compileFollow(r.Follow, ep.rest, bad)
		switch {
		case r.MaxFollowCalls < 0 || r.MaxFollowCalls > MaxMaxFollowCalls:
			bad("rest.max_follow_calls: must be between 1 and %d (0: %d), got %d", MaxMaxFollowCalls, DefaultMaxFollowCalls, r.MaxFollowCalls)
		case r.MaxFollowCalls > 0 && len(r.Follow) == 0:
			bad("rest.max_follow_calls: only an operation with rest.follow makes follow calls")
		}
		op.maxFollow = r.MaxFollowCalls
		if op.maxFollow == 0 {
			op.maxFollow = DefaultMaxFollowCalls
		}
	case d.GraphQL != nil:
		contentType = op.compileGraphQL(d.GraphQL, ep, names, compile, bad)
	case d.Subscription != nil:
		return nil, errors.New("a subscription is opened by a phase's subscriptions, not sent by users")
	}

	// Headers: Baggage is added by the user; the content type unless given.
	hasCT := false
	for _, k := range slices.Sorted(maps.Keys(d.Headers)) {
		if !isToken(k) {
			bad("headers.%s: not a valid header name", k)
		}
		hasCT = hasCT || strings.EqualFold(k, "Content-Type")
		t := compile("headers."+k, d.Headers[k], escRaw)
		if c, ok := t.constant(); ok && strings.ContainsAny(c, "\r\n\x00") {
			bad("headers.%s: a header value holds no line break or NUL", k)
		}
		op.headers = append(op.headers, headerTemplate{key: k, value: t})
	}
	for _, k := range slices.Sorted(maps.Keys(d.HeadersEnv)) {
		hasCT = hasCT || strings.EqualFold(k, "Content-Type")
		v := envHeader(d, k, getenv, bad)
		op.headers = append(op.headers, headerTemplate{key: k, value: template{{lit: []byte(v), v: -1}}})
	}
	if contentType != "" && !hasCT {
		op.headers = append(op.headers, headerTemplate{key: "Content-Type", value: template{{lit: []byte(contentType), v: -1}}})
	}

	// Expectations.
	x := &op.expect
	x.status, x.errors = d.Expect.Status, -1
	if x.status == 0 {
		x.status = http.StatusOK
	}
	if x.status < 100 || x.status > 599 {
		bad("expect.status: must be an HTTP status between 100 and 599, got %d", d.Expect.Status)
	}
	addPath := func(key, path string, want template) {
		p, err := parseJSONPath(path)
		if err != nil {
			bad("%s: %v", key, err)
			return
		}
		x.paths, x.keys, x.want = append(x.paths, p), append(x.keys, path), append(x.want, want)
		x.wantCSV = append(x.wantCSV, op.csvOriginOf(want))
	}
	for _, path := range slices.Sorted(maps.Keys(d.Expect.JSON)) {
		addPath("expect.json."+path, path, compile("expect.json."+path, d.Expect.JSON[path], escRaw))
	}
	for i, path := range d.Expect.Present {
		addPath(fmt.Sprintf("expect.present[%d]", i), path, nil)
	}
	if d.Expect.NoGraphQLErrors {
		x.errors = len(x.paths)
		x.paths, x.keys, x.want = append(x.paths, jsonPath{keys: [][]byte{[]byte("errors")}, idx: []int{-1}}), append(x.keys, "errors"), append(x.want, nil)
		x.wantCSV = append(x.wantCSV, csvOrigin{})
	}
	if len(x.paths) > maxExpectPaths {
		bad("expect: %d paths, at most %d allowed", len(x.paths), maxExpectPaths)
	}
	x.needJSON = len(x.paths) > 0
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return op, nil
}

// compileGraphQL compiles g's URL and bodies into op and returns the
// content type its requests need.
func (op *compiledOp) compileGraphQL(g *GraphQLDef, ep endpoints, names map[string]int,
	compile func(key, text string, esc escaping) template, bad func(string, ...any)) string {
	op.method = http.MethodPost
	if g.Path != "" {
		u, err := url.Parse(ep.graphql)
		switch {
		case !strings.HasPrefix(g.Path, "/") || strings.ContainsAny(g.Path, "?#") || strings.Contains(g.Path, "{{"):
			bad("graphql.path: must start with / and hold no query, fragment or {{placeholder}} (it replaces the GraphQL URL's path), got %q", g.Path)
		case err != nil:
			bad("graphql.path: cannot apply it to the GraphQL URL %q: %v", ep.graphql, err)
		default:
			u.Path, u.RawPath = g.Path, ""
			ep.graphql = u.String()
		}
	}
	op.url = template{{lit: []byte(ep.graphql), v: -1}}
	if strings.TrimSpace(g.Document) == "" {
		bad("graphql.document: must not be empty")
	}
	docConst := !strings.Contains(g.Document, "{{")
	vars := ""
	if g.Variables != nil {
		text, err := marshalJSON(g.Variables)
		if err != nil {
			bad("graphql.variables: %v", err)
			return ""
		}
		vars = text
	}
	switch g.Transport {
	case "", TransportPost:
		body := `{"query":` + quoteJSON(g.Document)
		if g.OperationName != "" {
			body += `,"operationName":` + quoteJSON(g.OperationName)
		}
		if vars != "" {
			body += `,"variables":` + vars
		}
		op.body = compile("graphql", body+"}", escJSON)
		return "application/json"
	case TransportGraphQL:
		if g.Variables != nil {
			bad("graphql.variables: the graphql transport (application/graphql) carries the document only; write values into the document or use transport post")
		}
		if g.OperationName != "" {
			bad("graphql.operation_name: the graphql transport (application/graphql) cannot send it; leave one operation in the document")
		}
		op.body = compile("graphql.document", g.Document, escRaw)
		return "application/graphql"
	case TransportGet:
		if !docConst {
			bad("graphql.document: the get transport needs a constant document (no {{placeholders}}); use variables")
		}
		op.method = http.MethodGet
		u := ep.graphql + "?query=" + url.QueryEscape(g.Document)
		if g.OperationName != "" {
			u += "&operationName=" + url.QueryEscape(g.OperationName)
		}
		if vars != "" {
			u += "&variables="
			t := compile("graphql.variables", vars, escJSON)
			for i := range t {
				t[i].lit = []byte(url.QueryEscape(string(t[i].lit)))
				if t[i].esc == escJSON {
					t[i].esc = escJSONQuery
				} else if t[i].v >= 0 {
					t[i].esc = escQuery
				}
			}
			op.getVars = t
		}
		op.url = template{{lit: []byte(u), v: -1}}
		return ""
	case TransportPersisted:
		if !docConst {
			bad("graphql.document: the persisted transport needs a constant document (its hash is computed once); use variables")
		}
		sum := sha256.Sum256([]byte(g.Document))
		ext := `"extensions":{"persistedQuery":{"version":1,"sha256Hash":"` + hex.EncodeToString(sum[:]) + `"}}`
		body := "{"
		if g.OperationName != "" {
			body += `"operationName":` + quoteJSON(g.OperationName) + ","
		}
		if vars != "" {
			body += `"variables":` + vars + ","
		}
		op.body = compile("graphql", body+ext+"}", escJSON)
		op.retryBody = compile("graphql", body+`"query":`+quoteJSON(g.Document)+","+ext+"}", escJSON)
		return "application/json"
	default:
		bad("graphql.transport: must be post, get, graphql or persisted, got %q", g.Transport)
	}
	return ""
}

// compileFollow checks and compiles a chatty operation's follow calls
// against the REST base URL rest.
func compileFollow(fs []FollowDef, rest string, bad func(string, ...any)) []followStep {
	var out []followStep
	for i, f := range fs {
		key := fmt.Sprintf("rest.follow[%d]", i)
		before, after, ok := strings.Cut(f.Path, "{id}")
		switch {
		case !strings.HasPrefix(f.Path, "/"):
			bad("%s.path: must start with / (it is appended to the REST base URL), got %q", key, f.Path)
		case !ok || strings.Contains(after, "{id}"):
			bad("%s.path: must hold {id} once, where each followed item's id goes, got %q", key, f.Path)
		case strings.Contains(f.Path, "{{") || strings.ContainsAny(f.Path, " #"):
			bad("%s.path: takes no {{placeholders}}, spaces or fragment, got %q", key, f.Path)
		}
		if strings.ContainsAny(f.Path, "\r\n\x00") {
			// As for rest.path: the HTTP client would turn them into
			// spaces and send another request than the one written.
			bad("%s.path: a path holds no line break or NUL (got %q)", key, f.Path)
		}
		if f.From < 0 || f.From > i {
			bad("%s.from: must name an earlier call, 0 (rest.path) to %d, got %d", key, i, f.From)
		}
		if !isIdentifier(f.IDField) {
			bad("%s.id_field: name the followed items' numeric field (letters, digits and _), got %q", key, f.IDField)
		}
		out = append(out, followStep{prefix: []byte(rest + before), suffix: []byte(after), from: f.From, idField: f.IDField})
	}
	return out
}

// compileSources numbers the pickers: one per range or list variable, one
// per CSV file (its columns share a row), none for a lookup.
func (op *compiledOp) compileSources(data map[string]DataDef, order []string, files *csvData) {
	op.sources = make([]varSource, len(order))
	byCSV := map[string]int{}
	index := map[string]int{}
	for i, name := range order {
		index[name] = i
	}
	for i, name := range order {
		d := data[name]
		random := d.Pick != PickRoundRobin
		op.sources[i].column = -1
		switch {
		case d.Range != nil:
			op.sources[i] = varSource{picker: len(op.pickers), column: -1}
			op.pickers = append(op.pickers, pickerDef{lo: d.Range[0], n: d.Range[1] - d.Range[0] + 1, random: random})
			op.rangeVars++
		case d.CSV != "":
			f, col := files.column(d.CSV, d.Column)
			if f == nil { // only checking: no values to pick
				continue
			}
			p, ok := byCSV[d.CSV]
			if !ok {
				p = len(op.pickers)
				byCSV[d.CSV] = p
				op.pickers = append(op.pickers, pickerDef{n: int64(f.want.Rows), random: random, file: f})
			}
			op.sources[i] = varSource{picker: p, column: col, csv: csvOrigin{file: filepath.Base(d.CSV), column: d.Column, picker: p}}
		case d.List != nil:
			op.sources[i] = varSource{picker: len(op.pickers), values: toBytes(d.List), column: -1}
			op.pickers = append(op.pickers, pickerDef{n: int64(len(d.List)), random: random})
		}
	}
	for i, name := range order { // lookups last: their by variable has its picker
		if d := data[name]; d.Lookup != nil {
			op.sources[i] = varSource{picker: op.sources[index[d.By]].picker, values: toBytes(d.Lookup), lookup: true, column: -1}
		}
	}
}

// csvOriginOf returns the CSV column the first of t's variables read from
// a CSV file comes from; zero when t uses none.
func (op *compiledOp) csvOriginOf(t template) csvOrigin {
	for _, s := range t {
		if s.v >= 0 && s.v < len(op.sources) && op.sources[s.v].csv.file != "" {
			return op.sources[s.v].csv
		}
	}
	return csvOrigin{}
}

// envHeader checks header k of d.HeadersEnv and returns its value from
// getenv, reporting each problem through bad with the key it concerns.
func envHeader(d OperationDef, k string, getenv func(string) (string, bool), bad func(format string, args ...any)) string {
	env := d.HeadersEnv[k]
	if !isToken(k) {
		bad("headers_env.%s: not a valid header name", k)
	}
	if _, dup := d.Headers[k]; dup {
		bad("headers_env.%s: also given in headers; keep one", k)
	}
	v, ok := getenv(env)
	switch {
	case env == "":
		bad("headers_env.%s: name the environment variable holding the value", k)
	case !ok:
		bad("headers_env.%s: the environment variable %s is not set", k, env)
	case strings.ContainsAny(v, "\r\n\x00"):
		bad("headers_env.%s: the environment variable %s holds a line break or NUL", k, env)
	}
	return v
}

// compileSubscription checks d, a subscription, against ops and returns its
// variables' template (over writer_id), its match path, and the upgrade
// headers and connection_init payload (getenv resolves headers_env).
func compileSubscription(d OperationDef, ops map[Operation]OperationDef, getenv func(string) (string, bool)) (*compiledSubscription, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if d.REST != nil || d.GraphQL != nil {
		return nil, errors.New("needs exactly one of rest, graphql or subscription")
	}
	s := d.Subscription
	if d.Data != nil || d.Writes || !isZeroExpect(d.Expect) {
		bad("subscription: takes no data, writes or expect; its events are checked by match")
	}
	if strings.TrimSpace(s.Document) == "" {
		bad("subscription.document: must not be empty")
	}
	cs := &compiledSubscription{document: s.Document, raisedBy: s.RaisedBy}
	// Headers: constant values (a subscription has no data to expand).
	for _, k := range slices.Sorted(maps.Keys(d.Headers)) {
		v := d.Headers[k]
		switch {
		case !isToken(k):
			bad("headers.%s: not a valid header name", k)
		case strings.Contains(v, "{{"):
			bad("headers.%s: a subscription's headers take no templates (it has no data)", k)
		case strings.ContainsAny(v, "\r\n\x00"):
			bad("headers.%s: a header value holds no line break or NUL", k)
		}
		if cs.header == nil {
			cs.header = http.Header{}
		}
		cs.header.Set(k, v)
	}
	for _, k := range slices.Sorted(maps.Keys(d.HeadersEnv)) {
		v := envHeader(d, k, getenv, bad)
		if cs.header == nil {
			cs.header = http.Header{}
		}
		cs.header.Set(k, v)
	}
	if s.ConnectionParams != nil {
		if text, err := marshalJSON(s.ConnectionParams); err != nil {
			bad("subscription.connection_params: %v", err)
		} else {
			cs.initPayload = json.RawMessage(text)
		}
	}
	names := map[string]int{VarWriterID: 0}
	text := "{}"
	if s.Variables != nil {
		var err error
		if text, err = marshalJSON(s.Variables); err != nil {
			bad("subscription.variables: %v", err)
		}
	}
	t, raw, err := compileTemplate(text, escJSON, names)
	if err != nil {
		bad("subscription.variables: %v", err)
	} else if len(raw) > 0 {
		bad("subscription.variables: {{writer_id}} is text; it cannot be raw")
	}
	cs.variables = t
	switch w, ok := ops[s.RaisedBy]; {
	case s.RaisedBy == "":
		bad("subscription.raised_by: name the writer operation whose writes raise the events")
	case ops != nil && !ok:
		bad("subscription.raised_by: %q is not a defined operation; defined: %s", s.RaisedBy, operationList(ops))
	case ops != nil && !w.Writes:
		bad("subscription.raised_by: %s is not a writer (writes: true), so it sends no {{event}}", s.RaisedBy)
	}
	if cs.match, err = parseJSONPath(s.Match); err != nil || s.Match == "" {
		bad("subscription.match: name the JSON path of the event's payload holding the writer's {{event}}, like data.onDonutUpdated.name")
	}
	cs.matchKey = s.Match
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return cs, nil
}

// compiledSubscription is a SubscriptionDef ready to subscribe with.
type compiledSubscription struct {
	header      http.Header     // sent on the websocket upgrade; nil for none
	initPayload json.RawMessage // connection_init's payload; nil for {}
	document    string
	variables   template // JSON over writer_id
	raisedBy    Operation
	match       jsonPath
	matchKey    string
}

// variablesFor returns the subscription's variables for writer id.
func (s *compiledSubscription) variablesFor(id string) (map[string]any, error) {
	b := s.variables.expand(nil, [][]byte{[]byte(id)})
	var vars map[string]any
	if err := json.Unmarshal(b, &vars); err != nil {
		return nil, fmt.Errorf("cannot build the subscription's variables %s: %w", b, err)
	}
	return vars, nil
}

// operationList lists the operation names, sorted, for messages. A family
// of more than listedFamily names sharing their first word (the 75 rel-…
// operations of seed 000) is counted rather than listed, so the message
// stays readable; soakd config lists them all.
func operationList(ops map[Operation]OperationDef) string {
	if len(ops) == 0 {
		return "none"
	}
	const listedFamily = 5
	family := func(n string) string {
		if i := strings.IndexByte(n, '-'); i > 0 {
			return n[:i+1]
		}
		return n
	}
	count := map[string]int{}
	for n := range ops {
		count[family(string(n))]++
	}
	var names, families []string
	for n := range ops {
		if f := family(string(n)); count[f] > listedFamily {
			if !slices.Contains(families, f) {
				families = append(families, f)
			}
			continue
		}
		names = append(names, string(n))
	}
	slices.Sort(names)
	slices.Sort(families)
	for _, f := range families {
		names = append(names, fmt.Sprintf("%d named %s… (soakd config lists them)", count[f], f))
	}
	return strings.Join(names, ", ")
}

func isZeroExpect(e Expect) bool {
	return e.Status == 0 && !e.NoGraphQLErrors && e.JSON == nil && e.Present == nil
}

// marshalJSON encodes v (decoded from YAML or JSON) as compact JSON with
// map keys sorted and without HTML escaping.
func marshalJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("cannot encode as JSON: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// quoteJSON returns s as a JSON string literal, without HTML escaping.
func quoteJSON(s string) string {
	text, _ := marshalJSON(s) // a string always encodes
	return text
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func prefixed(prefix string, errs []error) []error {
	for i, e := range errs {
		errs[i] = fmt.Errorf("%s%w", prefix, e)
	}
	return errs
}

// isIdentifier reports whether s is a variable name: letters, digits and
// '_', not starting with a digit.
func isIdentifier(s string) bool {
	for i, c := range s {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// isToken reports whether s is an HTTP token (a method or header name).
func isToken(s string) bool {
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return s != ""
}
