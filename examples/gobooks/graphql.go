package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/validator"
)

// schemaSDL is the books schema. Book.title carries whatever a writer sent,
// so a subscriber can tell which write an event is.
const schemaSDL = `
type Query {
  "The book id, or null."
  book(id: ID!): Book
  "The author id, or null."
  author(id: ID!): Author
}

type Mutation {
  "Creates or replaces book id; raises bookUpdated(id)."
  updateBook(id: ID!, input: BookInput!): Book!
}

type Subscription {
  "Every later update of book id."
  bookUpdated(id: ID!): Book!
}

input BookInput {
  title: String!
  pages: Int!
  "Keeps the book's author when omitted."
  authorId: ID
}

type Book {
  id: ID!
  title: String!
  pages: Int!
  author: Author!
}

type Author {
  id: ID!
  name: String!
}
`

// request is a GraphQL request, as POSTed or sent over a websocket.
type request struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
}

// prepared is a request ready to execute: its validated document, the
// operation chosen and the variables coerced.
type prepared struct {
	doc  *ast.QueryDocument
	op   *ast.OperationDefinition
	vars map[string]any
}

// executor runs requests against the store. It is a small interpreter over
// gqlparser's validated AST: the schema is tiny, so each field resolves in
// one switch (resolve) and results are written straight to JSON in
// selection order.
type executor struct {
	schema *ast.Schema
	store  *store

	mu   sync.RWMutex
	docs map[string]*ast.QueryDocument // validated documents by text
}

// maxCachedDocs bounds the document cache: a client sending ever new
// documents costs parsing, never memory.
const maxCachedDocs = 256

func newExecutor(st *store) (*executor, error) {
	schema, err := gqlparser.LoadSchema(&ast.Source{Name: "books.graphqls", Input: schemaSDL})
	if err != nil {
		return nil, fmt.Errorf("cannot load the schema: %w", err)
	}
	return &executor{schema: schema, store: st, docs: make(map[string]*ast.QueryDocument)}, nil
}

// prepare parses and validates req's document (cached by its text), picks
// its operation and coerces its variables.
func (e *executor) prepare(req request) (prepared, gqlerror.List) {
	e.mu.RLock()
	doc := e.docs[req.Query]
	e.mu.RUnlock()
	if doc == nil {
		var errs gqlerror.List
		if doc, errs = gqlparser.LoadQuery(e.schema, req.Query); len(errs) > 0 {
			return prepared{}, errs
		}
		e.mu.Lock()
		if len(e.docs) < maxCachedDocs {
			e.docs[req.Query] = doc
		}
		e.mu.Unlock()
	}
	op := doc.Operations.ForName(req.OperationName)
	if op == nil {
		return prepared{}, gqlerror.List{gqlerror.Errorf("no operation %q in the document", req.OperationName)}
	}
	vars, err := validator.VariableValues(e.schema, op, req.Variables)
	if err != nil {
		return prepared{}, gqlerror.List{gqlerror.WrapIfUnwrapped(err)}
	}
	return prepared{doc: doc, op: op, vars: vars}, nil
}

// execute runs a prepared query or mutation and returns its response body.
func (e *executor) execute(p prepared) []byte {
	root := "Query"
	if p.op.Operation == ast.Mutation {
		root = "Mutation"
	}
	return e.response(p, root, nil, p.op.SelectionSet)
}

// response writes {"data":…} for the selection set on obj of type typ, or
// {"errors":[…],"data":null} when a field failed (every field of this
// schema that can fail is non-null, so an error nulls the whole result).
// gqlparser's argument coercion panics on a value validation let through:
// that too becomes an error response.
func (e *executor) response(p prepared, typ string, obj any, set ast.SelectionSet) (body []byte) {
	defer func() {
		if r := recover(); r != nil {
			body = errorBody(gqlerror.List{gqlerror.Errorf("cannot execute: %v", r)})
		}
	}()
	var buf bytes.Buffer
	buf.WriteString(`{"data":`)
	x := execution{e: e, p: p, buf: &buf}
	if err := x.object(typ, obj, set); err != nil {
		return errorBody(gqlerror.List{gqlerror.WrapIfUnwrapped(err)})
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// errorBody is a response carrying errs and no data.
func errorBody(errs gqlerror.List) []byte {
	b, err := json.Marshal(struct {
		Errors gqlerror.List `json:"errors"`
		Data   any           `json:"data"`
	}{errs, nil})
	if err != nil { // gqlerror.List always encodes
		return []byte(`{"errors":[{"message":"cannot encode the errors"}],"data":null}`)
	}
	return b
}

// execution is one request's walk over its selection sets.
type execution struct {
	e   *executor
	p   prepared
	buf *bytes.Buffer
}

// object writes obj, of object type typ, as the JSON object set selects.
func (x execution) object(typ string, obj any, set ast.SelectionSet) error {
	fields, err := x.collect(typ, set)
	if err != nil {
		return err
	}
	x.buf.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			x.buf.WriteByte(',')
		}
		writeString(x.buf, f.Alias)
		x.buf.WriteByte(':')
		if f.Name == "__typename" {
			writeString(x.buf, typ)
			continue
		}
		v, err := x.resolve(typ, obj, f)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", typ, f.Name, err)
		}
		if err := x.value(f.Definition.Type, v, f.SelectionSet); err != nil {
			return err
		}
	}
	x.buf.WriteByte('}')
	return nil
}

// value writes v, of type t; objects are written as sel selects.
func (x execution) value(t *ast.Type, v any, sel ast.SelectionSet) error {
	switch v := v.(type) {
	case nil:
		if t.NonNull {
			return errors.New("a non-null field resolved to null")
		}
		x.buf.WriteString("null")
	case string:
		writeString(x.buf, v)
	case int:
		x.buf.WriteString(strconv.Itoa(v))
	case Book:
		return x.object("Book", v, sel)
	case Author:
		return x.object("Author", v, sel)
	default:
		return fmt.Errorf("cannot write a %T", v)
	}
	return nil
}

// resolve returns field f of obj, of object type typ: a string, an int, a
// Book, an Author, or nil for null.
func (x execution) resolve(typ string, obj any, f *ast.Field) (any, error) {
	st := x.e.store
	args := f.ArgumentMap(x.p.vars)
	switch typ + "." + f.Name {
	case "Query.book":
		if b, ok := st.book(argString(args, "id")); ok {
			return b, nil
		}
		return nil, nil
	case "Query.author":
		if a, ok := st.author(argString(args, "id")); ok {
			return a, nil
		}
		return nil, nil
	case "Mutation.updateBook":
		in, _ := args["input"].(map[string]any)
		pages, err := argInt(in, "pages")
		if err != nil {
			return nil, err
		}
		return st.update(argString(args, "id"), argString(in, "title"), pages, argString(in, "authorId"))
	case "Subscription.bookUpdated":
		return obj, nil // the event's book
	case "Book.id":
		return obj.(Book).ID, nil
	case "Book.title":
		return obj.(Book).Title, nil
	case "Book.pages":
		return obj.(Book).Pages, nil
	case "Book.author":
		a, ok := st.author(obj.(Book).AuthorID)
		if !ok {
			return nil, fmt.Errorf("book %s names the unknown author %s", obj.(Book).ID, obj.(Book).AuthorID)
		}
		return a, nil
	case "Author.id":
		return obj.(Author).ID, nil
	case "Author.name":
		return obj.(Author).Name, nil
	}
	return nil, fmt.Errorf("no resolver for %s.%s", typ, f.Name)
}

// collect flattens set's fields for an object of type typ: fragments
// expanded, @skip and @include applied, fields of one response key merged.
func (x execution) collect(typ string, set ast.SelectionSet) ([]*ast.Field, error) {
	var out []*ast.Field
	byKey := map[string]*ast.Field{}
	var walk func(set ast.SelectionSet) error
	walk = func(set ast.SelectionSet) error {
		for _, sel := range set {
			var dirs ast.DirectiveList
			switch s := sel.(type) {
			case *ast.Field:
				dirs = s.Directives
			case *ast.FragmentSpread:
				dirs = s.Directives
			case *ast.InlineFragment:
				dirs = s.Directives
			}
			if skip, err := x.skipped(dirs); err != nil || skip {
				if err != nil {
					return err
				}
				continue
			}
			switch s := sel.(type) {
			case *ast.Field:
				if prev := byKey[s.Alias]; prev != nil {
					merged := *prev
					merged.SelectionSet = append(append(ast.SelectionSet{}, prev.SelectionSet...), s.SelectionSet...)
					*prev = merged
					continue
				}
				cp := *s
				byKey[s.Alias] = &cp
				out = append(out, &cp)
			case *ast.FragmentSpread:
				if s.Definition == nil || (s.Definition.TypeCondition != "" && s.Definition.TypeCondition != typ) {
					continue
				}
				if err := walk(s.Definition.SelectionSet); err != nil {
					return err
				}
			case *ast.InlineFragment:
				if s.TypeCondition != "" && s.TypeCondition != typ {
					continue
				}
				if err := walk(s.SelectionSet); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(set)
}

// skipped reports whether @skip(if: true) or @include(if: false) drops a
// selection.
func (x execution) skipped(dirs ast.DirectiveList) (bool, error) {
	cond := func(name string) (bool, bool, error) {
		d := dirs.ForName(name)
		if d == nil {
			return false, false, nil
		}
		arg := d.Arguments.ForName("if")
		if arg == nil {
			return false, false, fmt.Errorf("@%s needs an if argument", name)
		}
		v, err := arg.Value.Value(x.p.vars)
		if err != nil {
			return false, false, fmt.Errorf("@%s: %w", name, err)
		}
		b, ok := v.(bool)
		if !ok {
			return false, false, fmt.Errorf("@%s(if:) must be a Boolean", name)
		}
		return b, true, nil
	}
	skip, hasSkip, err := cond("skip")
	if err != nil || (hasSkip && skip) {
		return hasSkip && skip, err
	}
	include, hasInclude, err := cond("include")
	return hasInclude && !include, err
}

// argString returns args[name] as a string ("" when absent or null).
func argString(args map[string]any, name string) string {
	s, _ := args[name].(string)
	return s
}

// argInt returns args[name], an Int argument or input field, as an int: a
// literal is an int64, a JSON variable a float64 (whole, as validated).
func argInt(args map[string]any, name string) (int, error) {
	switch v := args[name].(type) {
	case int64:
		return int(v), nil
	case int:
		return v, nil
	case float64:
		if v == math.Trunc(v) && math.Abs(v) <= math.MaxInt32 {
			return int(v), nil
		}
	case json.Number:
		n, err := v.Int64()
		if err == nil && n >= math.MinInt32 && n <= math.MaxInt32 {
			return int(n), nil
		}
	case string:
		n, err := strconv.ParseInt(v, 10, 32)
		if err == nil {
			return int(n), nil
		}
	}
	return 0, fmt.Errorf("%s: want an Int, got %v", name, args[name])
}

// writeString writes s as a JSON string.
func writeString(buf *bytes.Buffer, s string) {
	b, _ := json.Marshal(s) // a string always encodes
	buf.Write(b)
}
