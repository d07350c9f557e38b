package report

import (
	"encoding/json"
	"encoding/xml"
	"html"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/kpi"
)

// armsFixture is fixture() as a run with arms and rounds would have
// written it: phases and compare under the names they ran.
func armsFixture(arms string, rounds int, a, b string) *Report {
	r := fixture()
	r.Arms = arms
	r.Compare = Compare{REST: a, GraphQL: b}
	var phases []Phase
	for i := 1; i <= rounds; i++ {
		na, nb := a, b
		if rounds > 1 {
			na, nb = a+"#"+string(rune('0'+i)), b+"#"+string(rune('0'+i))
		}
		r.Compare.RESTPhases = append(r.Compare.RESTPhases, na)
		r.Compare.GraphQLPhases = append(r.Compare.GraphQLPhases, nb)
		pa, pb := r.Phases[0], r.Phases[1]
		pa.Name, pb.Name = na, nb
		phases = append(phases, pa, pb)
		if rounds > 1 {
			r.Rounds = append(r.Rounds, Round{Round: i, REST: na, GraphQL: nb, KPIs: r.KPIs, Verdict: r.Verdict})
		}
	}
	r.Phases = phases
	if rounds > 1 {
		r.Gate = "median"
	}
	return r
}

func junitProperties(t *testing.T, r *Report) map[string]string {
	t.Helper()
	b, err := r.JUnit()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Properties []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil || len(doc.Suites) != 1 {
		t.Fatalf("junit.xml: %v, %d suites", err, len(doc.Suites))
	}
	props := map[string]string{}
	for _, p := range doc.Suites[0].Properties {
		props[p.Name] = p.Value
	}
	return props
}

// TestCompareNamesWhatRan checks that report.json's compare, report.md,
// report.html and junit.xml name the phases that ran, for each --arms,
// with one round and with several, and never a phase that did not run.
func TestCompareNamesWhatRan(t *testing.T) {
	for _, tc := range []struct {
		arms         string
		rounds       int
		a, b         string
		titleA       string
		titleB       string
		mdPhrase     string
		otherPhases  []string // compared phases of the profile that did not run
		selfCheckMsg bool
	}{
		{"rest,graphql", 1, "rest-control", "graphql-load", "REST", "GraphQL",
			"REST phase `rest-control`, GraphQL phase `graphql-load`, each", nil, false},
		{"rest,rest", 1, "rest-control", "rest-control-b", "REST", "REST (copy)",
			"REST phase `rest-control`, REST (copy) phase `rest-control-b`", []string{"graphql-load"}, true},
		{"graphql,graphql", 1, "graphql-load", "graphql-load-b", "GraphQL", "GraphQL (copy)",
			"GraphQL phase `graphql-load`, GraphQL (copy) phase `graphql-load-b`", []string{"rest-control"}, true},
		{"rest,rest", 2, "rest-control", "rest-control-b", "REST", "REST (copy)",
			"REST phases `rest-control#1`, `rest-control#2`; REST (copy) phases `rest-control-b#1`, `rest-control-b#2`; each", []string{"graphql-load"}, true},
		{"rest,graphql", 3, "rest-control", "graphql-load", "REST", "GraphQL",
			"REST phases `rest-control#1`, `rest-control#2`, `rest-control#3`; GraphQL phases `graphql-load#1`, `graphql-load#2`, `graphql-load#3`; each", nil, false},
	} {
		name := tc.arms + "/" + string(rune('0'+tc.rounds))
		t.Run(name, func(t *testing.T) {
			r := armsFixture(tc.arms, tc.rounds, tc.a, tc.b)
			ran := map[string]bool{}
			for _, p := range r.Phases {
				ran[p.Name] = true
			}

			// report.json
			js, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			var back Report
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatal(err)
			}
			ranA, ranB := back.Compare.Ran()
			for _, n := range slices.Concat(ranA, ranB) {
				if !ran[n] {
					t.Errorf("report.json compare names %q, which did not run", n)
				}
			}
			if len(ranA) != tc.rounds || len(ranB) != tc.rounds {
				t.Errorf("report.json compare lists %v and %v, want %d phases each", ranA, ranB, tc.rounds)
			}

			// report.md
			md := r.Markdown()
			if !strings.Contains(md, tc.mdPhrase) {
				t.Errorf("report.md lacks %q:\n%s", tc.mdPhrase, md)
			}
			if !strings.Contains(md, "| Metric | "+tc.titleA+" | "+tc.titleB+" |") {
				t.Errorf("report.md's KPI table is not headed %s, %s", tc.titleA, tc.titleB)
			}
			if tc.selfCheckMsg != strings.Contains(md, "## Self-check:") {
				t.Errorf("report.md self-check heading: want %v", tc.selfCheckMsg)
			}

			// report.html
			b, err := r.HTML(nil)
			if err != nil {
				t.Fatal(err)
			}
			page := html.UnescapeString(string(b))
			for _, n := range slices.Concat(ranA, ranB) {
				if !strings.Contains(page, "<code>"+n+"</code>") {
					t.Errorf("report.html does not name the compared phase %s", n)
				}
			}
			if !strings.Contains(page, "<th>"+tc.titleA+"</th><th>"+tc.titleB+"</th>") {
				t.Errorf("report.html's KPI table is not headed %s, %s", tc.titleA, tc.titleB)
			}

			// A phase the profile compares but that did not run is named nowhere.
			for _, other := range tc.otherPhases {
				for what, text := range map[string]string{"report.md": md, "report.html": page} {
					if strings.Contains(text, other) {
						t.Errorf("%s names %s, which did not run", what, other)
					}
				}
			}

			// junit.xml
			props := junitProperties(t, r)
			want := map[string]string{
				"rest_phase": tc.a, "graphql_phase": tc.b, "arms": tc.arms,
				"rest_phases": strings.Join(ranA, ","), "graphql_phases": strings.Join(ranB, ","),
			}
			for k, v := range want {
				if props[k] != v {
					t.Errorf("junit property %s = %q, want %q", k, props[k], v)
				}
			}
			for _, other := range tc.otherPhases {
				for _, v := range slices.Collect(maps.Values(props)) {
					if strings.Contains(v, other) {
						t.Errorf("junit properties name %s, which did not run: %v", other, props)
					}
				}
			}

			// The terminal table.
			var tb strings.Builder
			if err := r.Table(&tb); err != nil {
				t.Fatal(err)
			}
			if first := strings.SplitN(tb.String(), "\n", 2)[0]; !strings.Contains(first, tc.titleA) || !strings.Contains(first, tc.titleB) {
				t.Errorf("table header %q does not name %s and %s", first, tc.titleA, tc.titleB)
			}
		})
	}
}

// TestCompareRanFallback reads a compare written before the phase lists
// existed.
func TestCompareRanFallback(t *testing.T) {
	a, b := Compare{REST: "r", GraphQL: "g"}.Ran()
	if !slices.Equal(a, []string{"r"}) || !slices.Equal(b, []string{"g"}) {
		t.Errorf("Ran() = %v, %v, want [r] [g]", a, b)
	}
	if a, b := (Compare{}).Ran(); a != nil || b != nil {
		t.Errorf("Ran() of an empty compare = %v, %v, want nil", a, b)
	}
}

// TestRunningReport checks that a partial report of a run in progress
// reads running, never aborted, and that its junit.xml cannot pass.
func TestRunningReport(t *testing.T) {
	r := &Report{Run: "r1", Profile: "quick", Status: StatusRunning, Verdict: kpi.OutcomeRunning,
		Arms: "rest,graphql", StartedAt: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
	if md := r.Markdown(); !strings.Contains(md, "**Verdict: RUNNING**") || strings.Contains(strings.ToLower(md), "aborted") {
		t.Errorf("report.md of a running run:\n%s", md)
	}
	b, err := r.HTML(nil)
	if err != nil {
		t.Fatal(err)
	}
	if page := string(b); !strings.Contains(page, `class="verdict running"`) || !strings.Contains(page, "Verdict: RUNNING") {
		t.Errorf("report.html of a running run lacks the running verdict")
	}
	p := parseJUnit(t, r)
	s := p.Suites[0]
	if s.Errors != 1 || s.Failures != 0 || len(s.Cases) != 1 || s.Cases[0].Name != "run" || s.Cases[0].Error == nil {
		t.Fatalf("junit.xml of a running run: %+v, want one case \"run\" in error", s)
	}
	if e := s.Cases[0].Error; !strings.Contains(e.Message, "in progress") || strings.Contains(e.Message, "abort") || e.Type != "running" {
		t.Errorf("junit error %+v, want type running saying the run is in progress", e)
	}
	if props := junitProperties(t, r); props["verdict"] != string(kpi.OutcomeRunning) {
		t.Errorf("junit verdict property %q, want running", props["verdict"])
	}
}
