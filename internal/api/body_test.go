package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzDecodeStartRequest checks the start-request decoder never panics,
// accepts only a blank body or a JSON object of the two known keys, and that
// the handler answers 400 exactly when the decoder refuses.
func FuzzDecodeStartRequest(f *testing.F) {
	for _, s := range []string{
		``,
		` `,
		`{}`,
		`{"profile":"quick"}`,
		`{"profile":"quick","overrides":"soak:\n  cycles: 2\n"}`,
		`{"profile":"quick","x":1}`,
		`{"PROFILE":"q"}`,
		`{"profile":null}`,
		`{"profile":5}`,
		`{"profile":"a"} {}`,
		`[]`,
		`null`,
		`"x"`,
		`{`,
		`{"profile":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	srv := httptest.NewServer(NewHandler(newFakeRunner(), "", nil))
	defer srv.Close()
	client := srv.Client()

	f.Fuzz(func(t *testing.T, in []byte) {
		req, err := decodeStartRequest(bytes.NewReader(in))
		if err != nil {
			if req != (StartRequest{}) {
				t.Errorf("decode(%q): got %+v with error %v, want the zero request", in, req, err)
			}
		} else if len(bytes.TrimSpace(in)) > 0 {
			// Accepted: must be one JSON object with only known keys.
			var m map[string]json.RawMessage
			if uerr := json.Unmarshal(in, &m); uerr != nil || m == nil {
				t.Errorf("decode(%q): accepted, but it is not a JSON object (%v)", in, uerr)
			}
			for k := range m {
				if !strings.EqualFold(k, "profile") && !strings.EqualFold(k, "overrides") {
					t.Errorf("decode(%q): accepted unknown key %q", in, k)
				}
			}
		}

		// The real handler: 400 exactly when the decoder refuses. The fake
		// runner answers 202 or 409 (busy) to a valid request; the fixed
		// profiles "boom" and "nope" give 500 and 400.
		resp, herr := client.Post(srv.URL+"/v1/runs", "application/json", bytes.NewReader(in))
		if herr != nil {
			t.Fatalf("POST: %v", herr)
		}
		io.Copy(io.Discard, resp.Body) // drained, so the connection is reused
		resp.Body.Close()
		switch {
		case err != nil && resp.StatusCode != http.StatusBadRequest:
			t.Errorf("POST %q: got %d, want 400 (decoder: %v)", in, resp.StatusCode, err)
		case err == nil && req.Profile != "boom" && req.Profile != "nope" &&
			resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusConflict:
			t.Errorf("POST %q: got %d, want 202 or 409", in, resp.StatusCode)
		}
	})
}
