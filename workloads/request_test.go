package workloads

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// expectOf compiles the expectations of operation name of donutOps.
func expectOf(t testing.TB, name Operation) *compiledOp {
	t.Helper()
	op, err := compileOperation(name, donutOps(1000)[name], endpoints{rest: "http://h", graphql: "http://h/graphql"}, nil, &csvData{})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

// TestExpectDonutBodies checks config.yaml's Donut expectations (seed 002's
// assertions: the expected id and flavor, no GraphQL errors) on the bodies
// the built-in target writes and on every way one can be wrong, each
// failure counted by its class.
func TestExpectDonutBodies(t *testing.T) {
	read := `{"data":{"donut":{"id":"7","name":"donut-7","flavor":"STRAWBERRY"}}}`
	write := `{"data":{"addOrUpdateDonut":{"id":"w3","name":"w3#0000000001@0001764500000123456789","flavor":"VANILLA"}}}`
	cases := []struct {
		name   string
		body   string
		writes bool
		class  string
	}{
		{"read", read, false, ""},
		{"read with a trailing newline", read + "\n", false, ""},
		{"write", write, true, ""},
		{"read checked as a write", read, true, ClassPayloadMismatch},
		{"write checked as a read", write, false, ClassPayloadMismatch},
		{"other name", strings.Replace(read, "donut-7", "any name at all", 1), false, ""},
		{"escaped name", strings.Replace(read, "donut-7", `a\"b`, 1), false, ""},
		{"control character in the name", strings.Replace(read, "donut-7", "a\x01b", 1), false, ClassDecodeError},
		{"wrong id", strings.Replace(read, `"id":"7"`, `"id":"8"`, 1), false, ClassPayloadMismatch},
		{"id with a longer prefix", strings.Replace(read, `"id":"7"`, `"id":"77"`, 1), false, ClassPayloadMismatch},
		{"id as a number", strings.Replace(read, `"id":"7"`, `"id":7`, 1), false, ""},
		{"escaped id", strings.Replace(read, `"id":"7"`, `"id":"\u0037"`, 1), false, ""},
		{"wrong flavor", strings.Replace(read, "STRAWBERRY", "VANILLA", 1), false, ClassPayloadMismatch},
		{"flavor with a suffix", strings.Replace(read, "STRAWBERRY", "STRAWBERRYX", 1), false, ClassPayloadMismatch},
		{"errors after data", strings.TrimSuffix(read, "}") + `,"errors":[{"message":"boom"}]}`, false, ClassGraphQLError},
		{"errors before data", `{"errors":[{"message":"boom"}],` + read[1:], false, ClassGraphQLError},
		{"null errors", strings.TrimSuffix(read, "}") + `,"errors":null}`, false, ""},
		{"empty errors", strings.TrimSuffix(read, "}") + `,"errors":[ ]}`, false, ""},
		{"truncated", read[:len(read)-1], false, ClassDecodeError},
		{"truncated in the flavor", read[:len(read)-8], false, ClassDecodeError},
		{"empty", "", false, ClassDecodeError},
		{"trailing garbage", read + "x", false, ClassDecodeError},
		{"two values", read + read, false, ClassDecodeError},
		{"spaced", strings.ReplaceAll(read, ":", ": "), false, ""},
		{"reordered", `{"data":{"donut":{"flavor":"STRAWBERRY","id":"7","name":"donut-7"}}}`, false, ""},
		{"extra field", `{"data":{"donut":{"id":"7","name":"donut-7","flavor":"STRAWBERRY","x":[1,{"a":null}]}}}`, false, ""},
		{"null donut", `{"data":{"donut":null}}`, false, ClassPayloadMismatch},
		{"no data", `{}`, false, ClassPayloadMismatch},
	}
	reader, writer := expectOf(t, GraphQLQuery), expectOf(t, GraphQLMutation)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op, wants := reader, [][]byte{[]byte("STRAWBERRY"), []byte("7"), nil}
			if c.writes {
				op, wants = writer, [][]byte{[]byte("VANILLA"), []byte("w3"), nil}
			}
			found := make([]valueSpan, len(op.expect.paths))
			if class, msg := op.expect.check([]byte(c.body), wants, nil, found); class != c.class {
				t.Errorf("got %q (%s), want %q", class, msg, c.class)
			}
		})
	}
}

// TestExpectClasses checks each expectation's failure class and message.
func TestExpectClasses(t *testing.T) {
	def := OperationDef{
		REST: &RESTDef{Path: "/x"},
		Expect: Expect{Status: 201, NoGraphQLErrors: true, JSON: map[string]string{"a.0.b": "v-{{n}}", "c": "true"},
			Present: []string{"d"}},
		Data: map[string]DataDef{"n": {Range: []int64{5, 5}}},
	}
	op, err := compileOperation("x", def, endpoints{rest: "http://h"}, nil, &csvData{})
	if err != nil {
		t.Fatal(err)
	}
	ok := `{"a":[{"b":"v-5"}],"c":true,"d":0}`
	f := func(body, class, inMessage string) {
		t.Helper()
		u := &user{op: op, vals: [][]byte{[]byte("5")}, wants: make([][]byte, len(op.expect.paths)), found: make([]valueSpan, len(op.expect.paths))}
		u.fillWants()
		got, msg := op.expect.check([]byte(body), u.wants, u.drawn, u.found)
		if got != class || !strings.Contains(msg, inMessage) {
			t.Errorf("%s: got %q %q, want %q with %q", body, got, msg, class, inMessage)
		}
	}
	f(ok, "", "")
	f(`{"a":[{"b":"v-6"}],"c":true,"d":0}`, ClassPayloadMismatch, `a.0.b: got "v-6", want "v-5"`)
	f(`{"a":[{"b":"v-5"}],"c":"true","d":0}`, "", "") // a string is compared with its text
	f(`{"a":[{"b":"v-5"}],"c":false,"d":0}`, ClassPayloadMismatch, `c: got false, want "true"`)
	f(`{"a":[{"b":"v-5"}],"c":true}`, ClassPayloadMismatch, "response has no d")
	f(`{"a":[{"b":"v-5"}],"c":true,"d":null}`, ClassPayloadMismatch, "response has d null")
	f(`{"a":[],"c":true,"d":0}`, ClassPayloadMismatch, "response has no a.0.b")
	f(`{"a":[{"b":"v-5"}],"c":true,"d":0,"errors":[{"message":"no"}]}`, ClassGraphQLError, `response has errors: [{"message":"no"}]`)
	f(`<html>`, ClassDecodeError, "cannot decode response")

	// The status: another is http_<code>, through do.
	srv := func(status int, body string) sender {
		return senderFunc(func(*call) (int, []byte, error) { return status, []byte(body), nil })
	}
	u := newUser(op, Phase{Groups: []UserGroup{{Operation: "x"}}}, "b", 0, userSlot{})
	if o := u.do(t.Context(), srv(201, ok), 0, u.next(0)); o.class != "" {
		t.Errorf("status 201: got %q %s, want success", o.class, o.message)
	}
	if o := u.do(t.Context(), srv(200, ok), 0, u.next(0)); o.class != "http_200" || !strings.Contains(o.message, "HTTP 200 (want 201)") {
		t.Errorf("status 200 where 201 is expected: got %q %s, want http_200", o.class, o.message)
	}
}

// senderFunc is a sender answering from a function.
type senderFunc func(c *call) (int, []byte, error)

func (f senderFunc) send(c *call, _ time.Duration, buf []byte) (int, []byte, error) {
	status, body, err := f(c)
	return status, append(buf[:0], body...), err
}

// FuzzScanJSON checks the scanner against encoding/json on any body: it
// accepts exactly the valid documents, and finds at a path the value a full
// decode finds there (the last of duplicate keys, as encoding/json).
func FuzzScanJSON(f *testing.F) {
	f.Add([]byte(`{"data":{"donut":{"id":"7","name":"donut-7","flavor":"STRAWBERRY"}}}`))
	f.Add([]byte(`{"data":{"donut":{"id":7,"id":"\u0038"}},"errors":[1,2.5e3,-0,true,false,null]}`))
	f.Add([]byte(` [{"data":1}] `))
	paths := []string{"data.donut.id", "errors.1", "data"}
	compiled := make([]jsonPath, len(paths))
	for i, p := range paths {
		compiled[i], _ = parseJSONPath(p)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		found := make([]valueSpan, len(paths))
		err := scanJSON(body, compiled, found)
		if valid := json.Valid(body); (err == nil) != valid {
			t.Fatalf("%q: scan error %v, json.Valid %v", body, err, valid)
		}
		if err != nil {
			return
		}
		// Numbers as json.Number: a valid document may hold one no float64
		// can (1e700), and the scanner does not convert numbers.
		doc, err := decodeNumbers(body)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range paths {
			want, ok := walk(doc, strings.Split(p, "."))
			sp := found[i]
			if (sp.start >= 0) != ok {
				t.Fatalf("%q at %s: found %v, decode found %v", body, p, sp.start >= 0, ok)
			}
			if !ok {
				continue
			}
			got, err := decodeNumbers(body[sp.start:sp.end])
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("%q at %s: scanned %s, decoded %v", body, p, body[sp.start:sp.end], want)
			}
		}
	})
}

// decodeNumbers decodes a JSON document keeping numbers as json.Number.
func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// walk follows keys (an integer key indexes an array) through a decoded document.
func walk(v any, keys []string) (any, bool) {
	for _, k := range keys {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func TestExpectAllocs(t *testing.T) {
	op := expectOf(t, GraphQLQuery)
	body := []byte(`{"data":{"donut":{"id":"7","name":"donut-7","flavor":"STRAWBERRY"}}}`)
	wants := [][]byte{[]byte("STRAWBERRY"), []byte("7"), nil}
	found := make([]valueSpan, len(op.expect.paths))
	if n := testing.AllocsPerRun(100, func() {
		if c, m := op.expect.check(body, wants, nil, found); c != "" {
			t.Fatal(m)
		}
	}); n != 0 {
		t.Errorf("checking a passing body: %v allocations, want 0", n)
	}
	// Building a request allocates nothing once the user's buffers have grown.
	for _, name := range []Operation{RESTGet, RESTPut, GraphQLQuery, GraphQLMutation} {
		op := expectOf(t, name)
		u := newUser(op, Phase{Groups: []UserGroup{{Operation: name}}}, "b", 3, userSlot{})
		u.next(0)
		if n := testing.AllocsPerRun(100, func() { u.next(1) }); n != 0 {
			t.Errorf("%s: building a request: %v allocations, want 0", name, n)
		}
	}
}

// TestDoAllocs: sending a request and checking an answer that passes
// allocates nothing in the driver once the user's buffers have grown. The
// call handed to the sender lives in the user: a local's address escapes
// through the sender interface and cost one 96 B allocation per request.
func TestDoAllocs(t *testing.T) {
	for _, name := range []Operation{RESTGet, GraphQLQuery} {
		u := newUser(expectOf(t, name), Phase{Groups: []UserGroup{{Operation: name}}}, "b", 3, userSlot{})
		i := 0
		do := func() {
			i++
			if o := u.do(t.Context(), memTarget{}, time.Second, u.next(i)); o.class != "" {
				t.Fatalf("%s: request %d failed: %s: %s", name, i, o.class, o.message)
			}
		}
		do()
		if n := testing.AllocsPerRun(100, do); n != 0 {
			t.Errorf("%s: sending and checking a request: %v allocations, want 0", name, n)
		}
	}
}

// memTarget answers a REST GET of /api/donuts/{id} or the GraphQL Donut
// query for {id} as the built-in target does (a seeded donut's flavor is its
// id mod 3), into buf, in memory.
type memTarget struct{}

func (memTarget) send(c *call, _ time.Duration, buf []byte) (int, []byte, error) {
	var id []byte
	if c.body == nil {
		id = c.url[bytes.LastIndexByte(c.url, '/')+1:]
	} else {
		const key = `"id":"`
		id = c.body[bytes.LastIndex(c.body, []byte(key))+len(key):]
		id = id[:bytes.IndexByte(id, '"')]
	}
	n := 0
	for _, d := range id {
		n = 10*n + int(d-'0')
	}
	flavors := [...]string{"VANILLA", "STRAWBERRY", "CHOCOLATE"}
	b := append(buf[:0], `{"data":{"donut":{"id":"`...)
	b = append(b, id...)
	b = append(b, `","name":"donut-`...)
	b = append(b, id...)
	b = append(b, `","flavor":"`...)
	b = append(b, flavors[n%3]...)
	return http.StatusOK, append(b, `"}}}`...), nil
}

// TestMismatchNamesTheCSVRowNotItsValue: a wanted value read from a CSV
// file is never quoted in a payload_mismatch message (the file may be
// anything the daemon can read, and the examples reach the control API and
// the reports): the message names its row, column and the file's base name.
// A wanted value from a list: or a literal is still quoted.
func TestMismatchNamesTheCSVRowNotItsValue(t *testing.T) {
	secret := []string{"SECRET_TOKEN=s3cr3t", "PGPASSWORD=hunter2"}
	f := writeCSV(t, "sku\n"+strings.Join(secret, "\n")+"\n", "sku")
	def := OperationDef{
		REST:   &RESTDef{Path: "/x"},
		Expect: Expect{JSON: map[string]string{"sku": "{{sku}}", "label": "item-{{sku}}", "color": "{{color}}", "fixed": "yes"}},
		Data: map[string]DataDef{
			"sku":   {CSV: f.path, Column: "sku", Pick: PickRoundRobin},
			"color": {List: []string{"red", "blue"}, Pick: PickRoundRobin},
		},
	}
	op := compileResolvedCSV(t, def)
	respond := func(body string) sender {
		return senderFunc(func(*call) (int, []byte, error) { return 200, []byte(body), nil })
	}
	for _, c := range []struct {
		i          int
		body, want string
	}{
		{0, `{"sku":"other","label":"item-SECRET_TOKEN=s3cr3t","color":"red","fixed":"yes"}`, "sku: got \"other\", want the value of row 1 of column sku in items.csv"},
		{1, `{"sku":"PGPASSWORD=hunter2","label":"item-x","color":"blue","fixed":"yes"}`, "label: got \"item-x\", want a value built from the value of row 2 of column sku in items.csv"},
		{0, `{"sku":"SECRET_TOKEN=s3cr3t","label":"item-SECRET_TOKEN=s3cr3t","color":"green","fixed":"yes"}`, `color: got "green", want "red"`},
		{0, `{"sku":"SECRET_TOKEN=s3cr3t","label":"item-SECRET_TOKEN=s3cr3t","color":"red","fixed":"no"}`, `fixed: got "no", want "yes"`},
	} {
		u := newUser(op, Phase{Groups: []UserGroup{{Operation: "x"}}}, "b", 0, userSlot{})
		for j := range c.i { // round robin: request i reads row i+1
			u.next(j)
		}
		o := u.do(t.Context(), respond(c.body), 0, u.next(c.i))
		if o.class != ClassPayloadMismatch || o.message != "GET http://h/x: "+c.want {
			t.Errorf("request %d: got %q %q, want payload_mismatch %q", c.i, o.class, o.message, c.want)
		}
		for _, s := range secret {
			if strings.Contains(o.message, "want") && strings.Contains(o.message[strings.Index(o.message, "want"):], s) {
				t.Errorf("request %d: the message quotes the CSV value %q: %s", c.i, s, o.message)
			}
		}
	}
}
