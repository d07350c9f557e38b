package control

import (
	"encoding/json"
	"github.com/soakd/soakd/internal/echo"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/soakd/soakd/internal/donut"
	"github.com/soakd/soakd/internal/graph"
)

const limit = 128

// newServer mounts both arms on one mux, as the daemon does, so the REST
// routes are tested next to the GraphQL endpoint they must not disturb.
func newServer(t *testing.T) (*httptest.Server, *donut.Service) {
	t.Helper()
	svc := &donut.Service{Store: donut.NewStore(10), Broker: donut.NewBroker(0)}
	mux := http.NewServeMux()
	mux.Handle(Prefix, NewHandler(svc, Options{MaxBodyBytes: limit}))
	mux.Handle("/graphql", graph.NewHandler(svc, graph.Options{}))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts, svc
}

type response struct {
	status      int
	body        string
	allow       string
	contentType string
}

func do(t *testing.T, ts *httptest.Server, method, path, contentType string, body io.Reader) response {
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
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("cannot read body: %v", err)
	}
	return response{resp.StatusCode, string(b), resp.Header.Get("Allow"), resp.Header.Get("Content-Type")}
}

// onlyError returns the single error message of an error body, failing
// the test if the body is not exactly {"errors":[{"message":...}]}.
func onlyError(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || len(e.Errors) != 1 {
		t.Fatalf("body %s is not one JSON error: %v", body, err)
	}
	return e.Errors[0].Message
}

func TestGet(t *testing.T) {
	ts, _ := newServer(t)
	tests := []struct {
		path       string
		wantStatus int
		wantBody   string
	}{
		{"/api/donuts/1", 200, `{"data":{"donut":{"id":"1","name":"donut-1","flavor":"STRAWBERRY"}}}`},
		{"/api/donuts/9", 200, `{"data":{"donut":{"id":"9","name":"donut-9","flavor":"VANILLA"}}}`},
		{"/api/donuts/42", 404, `{"errors":[{"message":"donut \"42\" not found"}]}`},
		{"/api/donuts/", 404, `{"errors":[{"message":"no route for /api/donuts/"}]}`},
		{"/api/donuts/1/extra", 404, `{"errors":[{"message":"no route for /api/donuts/1/extra"}]}`},
	}
	for _, tt := range tests {
		got := do(t, ts, http.MethodGet, tt.path, "", nil)
		if got.status != tt.wantStatus || got.body != tt.wantBody {
			t.Errorf("GET %s = %d %s, want %d %s", tt.path, got.status, got.body, tt.wantStatus, tt.wantBody)
		}
		if got.contentType != "application/json" {
			t.Errorf("GET %s: Content-Type %q, want application/json", tt.path, got.contentType)
		}
	}
}

func TestPut(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		body        io.Reader
		wantStatus  int
		wantBody    string // exact body for successes
		wantMessage string // substring of the error message for failures
	}{
		{"valid", "application/json", strings.NewReader(`{"name":"glazed","flavor":"CHOCOLATE"}`),
			200, `{"data":{"addOrUpdateDonut":{"id":"3","name":"glazed","flavor":"CHOCOLATE"}}}`, ""},
		{"valid with charset and whitespace", "application/json; charset=utf-8", strings.NewReader(" {\"flavor\":\"VANILLA\",\"name\":\"x\"}\n"),
			200, `{"data":{"addOrUpdateDonut":{"id":"3","name":"x","flavor":"VANILLA"}}}`, ""},
		{"no content type", "", strings.NewReader(`{"name":"y","flavor":"VANILLA"}`),
			200, `{"data":{"addOrUpdateDonut":{"id":"3","name":"y","flavor":"VANILLA"}}}`, ""},
		{"malformed", "application/json", strings.NewReader(`{"name":`), 400, "", "malformed JSON"},
		{"syntax error", "application/json", strings.NewReader(`{"name" "x"}`), 400, "", "malformed JSON at byte"},
		{"empty", "application/json", strings.NewReader(``), 400, "", "empty body"},
		{"trailing data", "application/json", strings.NewReader(`{"name":"x","flavor":"VANILLA"} {}`), 400, "", "after the object"},
		{"unknown field", "application/json", strings.NewReader(`{"name":"x","flavor":"VANILLA","id":"9"}`), 400, "", `unknown field "id"`},
		{"wrong type", "application/json", strings.NewReader(`{"name":5,"flavor":"VANILLA"}`), 400, "", `invalid field "name"`},
		{"not an object", "application/json", strings.NewReader(`["x"]`), 400, "", "want a JSON object"},
		{"bad flavor", "application/json", strings.NewReader(`{"name":"x","flavor":"MINT"}`), 400, "", `invalid field "flavor"`},
		{"missing flavor", "application/json", strings.NewReader(`{"name":"x"}`), 400, "", `invalid field "flavor"`},
		{"empty name", "application/json", strings.NewReader(`{"name":"","flavor":"VANILLA"}`), 400, "", `invalid field "name"`},
		{"oversized", "application/json", strings.NewReader(`{"name":"` + strings.Repeat("x", 2*limit) + `","flavor":"VANILLA"}`),
			413, "", "too large"},
		{"oversized chunked", "application/json", struct{ io.Reader }{strings.NewReader(`{"name":"` + strings.Repeat("x", 2*limit) + `","flavor":"VANILLA"}`)},
			413, "", "too large"},
		{"wrong content type", "text/plain", strings.NewReader(`{"name":"x","flavor":"VANILLA"}`), 415, "", "not JSON"},
		{"unparsable content type", "application/", strings.NewReader(`{"name":"x","flavor":"VANILLA"}`), 415, "", "not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, svc := newServer(t)
			got := do(t, ts, http.MethodPut, "/api/donuts/3", tt.contentType, tt.body)
			if got.status != tt.wantStatus {
				t.Fatalf("status = %d (body %s), want %d", got.status, got.body, tt.wantStatus)
			}
			stored, _ := svc.Store.Get("3")
			if tt.wantStatus != 200 {
				if msg := onlyError(t, got.body); !strings.Contains(msg, tt.wantMessage) {
					t.Errorf("message = %q, want it to contain %q", msg, tt.wantMessage)
				}
				if stored != donut.SeedDonut(3) {
					t.Errorf("store changed to %+v by a failed PUT", stored)
				}
				if p := svc.Broker.Stats().Published; p != 0 {
					t.Errorf("Published = %d after a failed PUT, want 0", p)
				}
				return
			}
			if got.body != tt.wantBody {
				t.Errorf("body = %s, want %s", got.body, tt.wantBody)
			}
			var want struct {
				Data struct {
					AddOrUpdateDonut donut.Donut `json:"addOrUpdateDonut"`
				} `json:"data"`
			}
			if err := json.Unmarshal([]byte(tt.wantBody), &want); err != nil {
				t.Fatal(err)
			}
			if stored != want.Data.AddOrUpdateDonut {
				t.Errorf("store has %+v, want %+v", stored, want.Data.AddOrUpdateDonut)
			}
			if p := svc.Broker.Stats().Published; p != 1 {
				t.Errorf("Published = %d, want 1", p)
			}
		})
	}
}

func TestWrongMethod(t *testing.T) {
	ts, _ := newServer(t)
	for _, m := range []string{http.MethodPost, http.MethodDelete, http.MethodPatch} {
		got := do(t, ts, m, "/api/donuts/1", "application/json", strings.NewReader(`{}`))
		if got.status != http.StatusMethodNotAllowed {
			t.Errorf("%s: status = %d, want 405", m, got.status)
		}
		if got.allow != "GET, PUT" {
			t.Errorf("%s: Allow = %q, want %q", m, got.allow, "GET, PUT")
		}
		if msg := onlyError(t, got.body); !strings.Contains(msg, m) {
			t.Errorf("%s: message = %q, want it to name the method", m, msg)
		}
	}
}

// TestGraphQLAlongside checks the GraphQL endpoint on the same mux still
// answers, and sees the REST arm's writes (one shared store).
func TestGraphQLAlongside(t *testing.T) {
	ts, _ := newServer(t)
	if got := do(t, ts, http.MethodPut, "/api/donuts/2", "application/json", strings.NewReader(`{"name":"z","flavor":"VANILLA"}`)); got.status != 200 {
		t.Fatalf("PUT status = %d, want 200", got.status)
	}
	got := do(t, ts, http.MethodPost, "/graphql", "application/json", strings.NewReader(`{"query":"{ donut(id: \"2\") { name flavor } }"}`))
	if want := `{"data":{"donut":{"name":"z","flavor":"VANILLA"}}}`; got.status != 200 || got.body != want {
		t.Errorf("GraphQL = %d %s, want 200 %s", got.status, got.body, want)
	}
}

// TestErrorsDoNotEchoLargeInput sends 900 KB bodies whose errors quote part
// of them (a flavour, a field name): each answer must stay small.
func TestErrorsDoNotEchoLargeInput(t *testing.T) {
	svc := &donut.Service{Store: donut.NewStore(10), Broker: donut.NewBroker(0)}
	h := NewHandler(svc, Options{MaxBodyBytes: 1 << 20})
	pad := strings.Repeat("7", 900_000)
	for name, body := range map[string]string{
		"flavor":        `{"name":"x","flavor":"` + pad + `"}`,
		"unknown field": `{"` + pad + `":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/api/donuts/1", strings.NewReader(body)))
			if rec.Code != http.StatusBadRequest {
				t.Errorf("status = %d, want 400", rec.Code)
			}
			if n := rec.Body.Len(); n > 1024 {
				t.Errorf("a %d-byte body got a %d-byte answer, want at most 1 KiB: %.200s", len(body), n, rec.Body)
			}
			if msg := onlyError(t, rec.Body.String()); !strings.Contains(msg, "… (") {
				t.Errorf("message %.200q does not say how much was cut", msg)
			}
		})
	}
}

// TestRepliesCapEchoedInput: a 404 or 405 quotes at most echo.MaxBytes of
// the path, the donut id or the method.
func TestRepliesCapEchoedInput(t *testing.T) {
	ts, _ := newServer(t)
	long := strings.Repeat("a", 5000)
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/api/donuts/" + long, http.StatusNotFound},
		{http.MethodGet, "/api/donuts/1/" + long, http.StatusNotFound},
		{http.MethodDelete, "/api/donuts/1", http.StatusMethodNotAllowed},
		{strings.Repeat("X", 5000), "/api/donuts/1", http.StatusMethodNotAllowed},
	} {
		got := do(t, ts, c.method, c.path, "", nil)
		msg := onlyError(t, got.body)
		if got.status != c.status || len(msg) > 2*echo.MaxBytes+100 || strings.Contains(msg, strings.Repeat("a", echo.MaxBytes+1)) || strings.Contains(msg, strings.Repeat("X", echo.MaxBytes+1)) {
			t.Errorf("%.10s %.20s…: got %d with a %d-byte message %.200q, want %d quoting at most %d bytes", c.method, c.path, got.status, len(msg), msg, c.status, echo.MaxBytes)
		}
	}
}
