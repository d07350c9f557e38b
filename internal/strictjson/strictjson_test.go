package strictjson

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

type body struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

func TestDecode(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		var b body
		err := Decode(strings.NewReader(in), &b, "the body takes only name and count")
		switch {
		case want == "" && err != nil:
			t.Errorf("Decode(%q) = %v, want no error", in, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("Decode(%q) = %v, want an error containing %q", in, err, want)
		}
	}
	f(`{"name":"x","count":2}`, "")
	f(" {\"name\":\"x\"} \n", "")
	f(``, "malformed JSON: empty body")
	f(`{"name":`, "the body ends mid-value")
	f(`{"name" "x"}`, "malformed JSON at byte")
	f(`{"name":"x"} {}`, "unexpected data after the object")
	f(`{"name":"x","id":9}`, `unknown field "id"; the body takes only name and count`)
	f(`{"count":"many"}`, `invalid field "count": want a int, got string`)
	f(`[1]`, "malformed body: want a JSON object, got array")
}

// TestDecodeKeepsMaxBytesError: a body cut by http.MaxBytesReader keeps
// the *http.MaxBytesError on the chain, so the caller answers 413.
func TestDecodeKeepsMaxBytesError(t *testing.T) {
	for _, in := range []string{`{"name":"` + strings.Repeat("x", 64) + `"}`, `{"name":"x"}` + strings.Repeat(" ", 64) + "x"} {
		r := http.MaxBytesReader(httptest.NewRecorder(), readCloser{strings.NewReader(in)}, 16)
		var b body
		err := Decode(r, &b, "")
		if _, ok := errors.AsType[*http.MaxBytesError](err); !ok {
			t.Errorf("Decode of %d bytes through a 16-byte limit = %v, want a *http.MaxBytesError on the chain", len(in), err)
		}
	}
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }
