package e2e

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// grafanaDashboard is a committed Grafana dashboard (grafana/dashboards),
// its queries with Grafana's variables replaced as Grafana would replace
// them with every value picked.
type grafanaDashboard struct {
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Annotations struct {
		List []struct {
			Name string `json:"name"`
			Expr string `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
}

// variables are the daemon dashboard's variables, each with All picked,
// and Grafana's range variables at a 10-minute range.
var variables = strings.NewReplacer("$instance", ".+", "$profile", ".+", "$__range", "10m", "$__rate_interval", "1m")

// daemonDashboard reads grafana/dashboards/daemon.json.
func daemonDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	raw, err := os.ReadFile("grafana/dashboards/daemon.json")
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// annotation is the expression of the annotation named name.
func (d grafanaDashboard) annotation(t *testing.T, name string) string {
	t.Helper()
	for _, a := range d.Annotations.List {
		if a.Name == name {
			return variables.Replace(a.Expr)
		}
	}
	t.Fatalf("the dashboard has no annotation %q", name)
	return ""
}

// panelQuery is the first query of the panel titled title.
func (d grafanaDashboard) panelQuery(t *testing.T, title string) string {
	t.Helper()
	for _, p := range d.Panels {
		if p.Title == title && len(p.Targets) > 0 {
			return variables.Replace(p.Targets[0].Expr)
		}
	}
	t.Fatalf("the dashboard has no panel %q with a query", title)
	return ""
}

// queries are every panel's expression, and every annotation's over the
// last 10 minutes (Grafana asks annotations for a range: a run's region
// is in it after the run ended).
func (d grafanaDashboard) queries() []string {
	var out []string
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			out = append(out, variables.Replace(q.Expr))
		}
	}
	for _, a := range d.Annotations.List {
		out = append(out, "last_over_time(("+variables.Replace(a.Expr)+")[10m:1s])")
	}
	return out
}

// promSample is one series of an instant query's answer.
type promSample struct {
	labels map[string]string
	value  float64
}

// promVector polls Prometheus at base with the instant query until done
// accepts the finite samples, for at most a minute, and returns the last
// answer.
func promVector(t *testing.T, base, query string, done func([]promSample) bool) []promSample {
	t.Helper()
	var out []promSample
	for deadline := time.Now().Add(time.Minute); ; {
		out = out[:0]
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/api/v1/query?query="+url.QueryEscape(query), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Status string `json:"status"`
			Error  string `json:"error"`
			Data   struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  [2]any            `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil || r.Status != "success" {
			t.Fatalf("query %s: %v %s", query, err, r.Error)
		}
		for _, s := range r.Data.Result {
			text, _ := s.Value[1].(string)
			v, err := strconv.ParseFloat(text, 64)
			if err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) { // Grafana shows no data for these
				out = append(out, promSample{s.Metric, v})
			}
		}
		if done(out) || time.Now().After(deadline) {
			return out
		}
		time.Sleep(time.Second)
	}
}
