package daemonmetrics

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/soakd/soakd/internal/kpi"
)

// TestDocumented: every family the daemon's /metrics can export has a row
// in docs/operations.md's table of the daemon's own metrics, so that a new
// series cannot ship undocumented.
func TestDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	rel := 0.1
	m := New(func() State {
		return State{Running: true, Profile: "p", Changes: []ChangeSeries{{Profile: "p", Metric: "m", Points: []Point{{Run: "r", At: time.Now(), Relative: &rel}}}},
			Recent: []Run{{ID: "r", Profile: "p", Verdict: kpi.OutcomePass}}}
	})
	srv := httptest.NewServer(m.Instrument(m.Handler()))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fams {
		names = append(names, f.GetName())
	}
	// Describe lists every family, those with no series right now too.
	ch := make(chan *prometheus.Desc, 64)
	go func() { m.reg.Describe(ch); close(ch) }()
	described := 0
	for range ch {
		described++
	}
	if len(names) != described {
		t.Errorf("%d families gathered, %d described: the state above leaves a family without series (%v)", len(names), described, names)
	}
	for _, n := range names {
		if !strings.Contains(string(doc), "| `"+n+"` |") {
			t.Errorf("%s is not in docs/operations.md's table of the daemon's own metrics", n)
		}
	}
}
