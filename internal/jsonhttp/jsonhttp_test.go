package jsonhttp

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestDo(t *testing.T) {
	var gotAuth, gotType, gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotType = r.Header.Get("Authorization"), r.Header.Get("Content-Type")
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		switch r.URL.Path {
		case "/ok":
			_, _ = io.WriteString(w, `{"n":3}`)
		case "/big":
			_, _ = io.WriteString(w, `{"n":"`+strings.Repeat("x", 100)+`"}`)
		default:
			http.Error(w, "no such thing", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL + "/", Token: "s3cret", MaxResponseBytes: 64}

	var out struct{ N int }
	if err := c.Do(t.Context(), http.MethodPost, "/ok", map[string]string{"a": "b"}, &out); err != nil || out.N != 3 {
		t.Fatalf("Do /ok = %v, out %+v; want n 3", err, out)
	}
	if gotAuth != "Bearer s3cret" || gotType != "application/json" || gotBody != `{"a":"b"}` {
		t.Errorf("request: auth %q, type %q, body %q", gotAuth, gotType, gotBody)
	}
	if err := c.Do(t.Context(), http.MethodGet, "/ok", nil, nil); err != nil || gotType != "" || gotBody != "" {
		t.Errorf("a request without a body: err %v, content type %q, body %q", err, gotType, gotBody)
	}
	err := c.Do(t.Context(), http.MethodGet, "/nope", nil, &out)
	se, ok := errors.AsType[*StatusError](err)
	if !ok || se.Status != http.StatusNotFound || err.Error() != "HTTP 404: no such thing" {
		t.Errorf("a 404 gave %v, want a *StatusError saying HTTP 404: no such thing", err)
	}
	if err := c.Do(t.Context(), http.MethodGet, "/big", nil, &out); err == nil || !strings.Contains(err.Error(), "larger than 64 bytes") {
		t.Errorf("an answer over the bound gave %v", err)
	}
}
