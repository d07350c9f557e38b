package workloads

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// followedID is what goes where {id} was: a decimal integer.
var followedID = regexp.MustCompile(`^-?[0-9]+$`)

// FuzzFollowChain sends a chatty operation whose every call answers the
// fuzzed body, with a fuzzed follow path and call cap: the chain never
// panics, makes at most the cap's follow calls, and every follow URL is the
// step's path with a decimal integer (an id the body's items hold as a JSON
// integer) where {id} was, and no line break, NUL or space; a path the
// compiler accepts holds none either.
func FuzzFollowChain(f *testing.F) {
	f.Add([]byte(`{"data":[{"id":1},{"id":2}]}`), "/users/{id}/tasks", uint8(5))
	f.Add([]byte(`{"data":{"id":-7,"x":[1,2]}}`), "/t/{id}?a=b", uint8(1))
	f.Add([]byte(`{"data":[{"id":1.5},{"id":"3"},{"id":1e3}]}`), "/x/{id}", uint8(3))
	f.Add([]byte(`{"data":[{"id":9223372036854775807},{"id":9223372036854775808}]}`), "/{id}", uint8(2))
	f.Add([]byte(`{"data":null}`), "/a/{id}\r\nX:y", uint8(0))
	f.Add([]byte(`{"data":[{"id":1}]}`), "/a/{id}\x00", uint8(0))
	f.Add([]byte(`{"data":[{"id":1}],"data":[{"id":2}]}`), "/a/{id}/{id}", uint8(9))
	f.Fuzz(func(t *testing.T, body []byte, path string, limit uint8) {
		maxFollow := 1 + int(limit%20)
		def := OperationDef{REST: &RESTDef{Path: "/users", MaxFollowCalls: maxFollow, Follow: []FollowDef{
			{Path: path, From: 0, IDField: "id"},
			{Path: "/tasks/{id}", From: 1, IDField: "id"},
		}}}
		op, err := compileOperation("chatty", def, endpoints{rest: "http://h"}, nil, &csvData{})
		if err != nil {
			return // refused at validation: never sent
		}
		if strings.ContainsAny(path, "\r\n\x00") {
			t.Fatalf("follow path %q with a line break or NUL was accepted", path)
		}
		var urls []string
		s := senderFunc(func(c *call) (int, []byte, error) {
			urls = append(urls, string(c.url))
			return 200, body, nil
		})
		u := newUser(op, Phase{Groups: []UserGroup{{Operation: "chatty"}}}, "b", 0, userSlot{})
		o := u.do(t.Context(), s, 0, u.next(0))
		if len(urls) == 0 || urls[0] != "http://h/users" {
			t.Fatalf("first call %q, want http://h/users", urls)
		}
		follows := urls[1:]
		if len(follows) > maxFollow {
			t.Fatalf("%d follow calls, cap %d (outcome %s %s)", len(follows), maxFollow, o.class, o.message)
		}
		for _, got := range follows {
			if !followURL(op.follow, got) {
				t.Fatalf("follow call %q is no step's path with an integer id (steps %+v)", got, op.follow)
			}
		}
		if o.class == "" && len(follows) == 0 {
			// A chain that passed without a follow call had no items to follow.
			ids, _, err := appendIDs(nil, body, "id")
			if err == nil && len(ids) > 0 {
				t.Fatalf("ids %v to follow, but no follow call was made", ids)
			}
		}
	})
}

// followURL reports whether got is one of steps' URLs with a decimal
// integer where {id} was, and no control character or space.
func followURL(steps []followStep, got string) bool {
	if strings.ContainsAny(got, "\r\n\x00 ") {
		return false
	}
	for _, st := range steps {
		b := []byte(got)
		if !bytes.HasPrefix(b, st.prefix) || !bytes.HasSuffix(b[len(st.prefix):], st.suffix) {
			continue
		}
		id := string(b[len(st.prefix) : len(b)-len(st.suffix)])
		if _, err := strconv.ParseInt(id, 10, 64); err == nil && followedID.MatchString(id) {
			return true
		}
	}
	return false
}
