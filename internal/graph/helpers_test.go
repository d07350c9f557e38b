package graph

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/soakd/soakd/control"
	"github.com/soakd/soakd/internal/donut"
)

const seeded = 10

// testServer is a real HTTP server holding both arms, as the daemon mounts
// them: GraphQL at /graphql and the REST control group at /api/donuts/.
type testServer struct {
	*httptest.Server
	h   *Handler
	svc *donut.Service
}

func newTestServer(t *testing.T, opts Options, setup ...func(*Handler)) *testServer {
	t.Helper()
	svc := &donut.Service{Store: donut.NewStore(seeded), Broker: donut.NewBroker(0)}
	h := NewHandler(svc, opts)
	for _, f := range setup {
		f(h) // before serving, so no request races the change
	}
	mux := http.NewServeMux()
	mux.Handle("/graphql", h)
	mux.Handle(control.Prefix, control.NewHandler(svc, control.Options{MaxBodyBytes: opts.MaxBodyBytes}))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return &testServer{Server: ts, h: h, svc: svc}
}

// gqlResponse is a GraphQL response as a client sees it.
type gqlResponse struct {
	Data   json.RawMessage `json:"data"`
	Errors []struct {
		Message    string         `json:"message"`
		Extensions map[string]any `json:"extensions"`
	} `json:"errors"`
}

func (r gqlResponse) messages() []string {
	var m []string
	for _, e := range r.Errors {
		m = append(m, e.Message)
	}
	return m
}

// do sends a request and returns the status, the raw body and the body
// decoded as a GraphQL response (zero if it is not one).
func (ts *testServer) do(t *testing.T, method, path, contentType string, body io.Reader) (int, []byte, gqlResponse) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, body)
	if err != nil {
		t.Fatalf("cannot build request: %v", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("cannot read response: %v", err)
	}
	var gr gqlResponse
	_ = json.Unmarshal(raw, &gr)
	return resp.StatusCode, raw, gr
}

// post sends a GraphQL request as application/json.
func (ts *testServer) post(t *testing.T, query string, vars map[string]any) (int, []byte, gqlResponse) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		t.Fatalf("cannot encode request: %v", err)
	}
	return ts.do(t, http.MethodPost, "/graphql", "application/json", bytes.NewReader(body))
}

// mustData fails unless the response has no errors and data equals want
// (compared as JSON).
func mustData(t *testing.T, status int, gr gqlResponse, want string) {
	t.Helper()
	if status != http.StatusOK {
		t.Errorf("status = %d, want 200", status)
	}
	if len(gr.Errors) != 0 {
		t.Errorf("errors = %v, want none", gr.messages())
	}
	if !jsonEqual(t, gr.Data, []byte(want)) {
		t.Errorf("data = %s, want %s", gr.Data, want)
	}
}

// mustError fails unless the response carries an error containing substr.
func mustError(t *testing.T, gr gqlResponse, substr string) {
	t.Helper()
	for _, m := range gr.messages() {
		if strings.Contains(m, substr) {
			return
		}
	}
	t.Errorf("errors = %q, want one containing %q", gr.messages(), substr)
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		return false
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("bad want JSON %s: %v", b, err)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
