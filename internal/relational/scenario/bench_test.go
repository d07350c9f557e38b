package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/soakd/soakd/internal/relational"
	"github.com/soakd/soakd/internal/relational/relgraph"
	"github.com/soakd/soakd/internal/relational/relrest"
)

// handlerTransport serves a client's requests with a handler in the same
// goroutine, no network: the benchmark measures the server's work.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// BenchmarkOperations runs every seed 000 operation through the real
// handler, one request at a time, in every GraphQL strategy and both REST
// styles, on seed 000's full data (SQLite; PostgreSQL too when
// SOAKD_TEST_PG_DSN is set). Beside ns/op, B/op and allocs/op it reports
// queries/op, rows/op and db-ms/op (the tally's database time). A chatty
// op is one whole client view: all its calls.
//
//	go test -run '^$' -bench Operations -benchtime 20x ./relational/scenario/
func BenchmarkOperations(b *testing.B) {
	stores := []relational.Options{{Store: relational.StoreSQLite, Dir: b.TempDir()}}
	if dsn := os.Getenv("SOAKD_TEST_PG_DSN"); dsn != "" {
		stores = append(stores, relational.Options{Store: relational.StorePostgres, DSN: dsn, DSNSource: "$SOAKD_TEST_PG_DSN"})
	}
	for _, o := range stores {
		b.Run(o.Store, func(b *testing.B) {
			s := start(b, o, Options{})
			h := s.Config.Handler
			client := &http.Client{Transport: handlerTransport{h}}
			for _, op := range relational.Operations() {
				body, _ := json.Marshal(map[string]string{"query": op.GraphQL})
				for _, st := range relgraph.Strategies() {
					b.Run(op.Name+"/graphql-"+string(st), func(b *testing.B) {
						bench(b, s, GraphQLEndpoint(st), func() int {
							rec := httptest.NewRecorder()
							req := httptest.NewRequest(http.MethodPost, GraphQLPath(st), bytes.NewReader(body))
							req.Header.Set("Content-Type", "application/json")
							h.ServeHTTP(rec, req)
							return rec.Code
						})
					})
				}
				b.Run(op.Name+"/rest-embedded", func(b *testing.B) {
					bench(b, s, EndpointREST, func() int {
						rec := httptest.NewRecorder()
						h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, op.Embedded, nil))
						return rec.Code
					})
				})
				b.Run(op.Name+"/rest-chatty", func(b *testing.B) {
					bench(b, s, EndpointREST, func() int {
						if _, _, err := relrest.Chatty(context.Background(), client, "http://target", op.Chatty); err != nil {
							b.Fatal(err)
						}
						return http.StatusOK
					})
				})
			}
		})
	}
}

func bench(b *testing.B, s *server, endpoint string, do func() int) {
	b.ReportAllocs()
	q0, r0, t0 := s.figures(b, endpoint)
	for b.Loop() {
		if code := do(); code != http.StatusOK {
			b.Fatalf("HTTP %d", code)
		}
	}
	q1, r1, t1 := s.figures(b, endpoint)
	n := float64(b.N)
	b.ReportMetric((q1-q0)/n, "queries/op")
	b.ReportMetric((r1-r0)/n, "rows/op")
	b.ReportMetric((t1-t0)*1000/n, "db-ms/op")
}

// figures returns endpoint's queries, rows and database seconds so far.
func (s *server) figures(tb testing.TB, endpoint string) (queries, rows, seconds float64) {
	mfs, err := s.reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == 0 || m.GetLabel()[0].GetValue() != endpoint {
				continue
			}
			switch mf.GetName() {
			case "soakd_relational_db_queries_total":
				queries = m.GetCounter().GetValue()
			case "soakd_relational_db_rows_total":
				rows = m.GetCounter().GetValue()
			case "soakd_relational_db_seconds_total":
				seconds = m.GetCounter().GetValue()
			}
		}
	}
	return queries, rows, seconds
}
