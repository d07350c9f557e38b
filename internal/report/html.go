package report

import (
	"bytes"
	_ "embed" // the page template, the chart script and the vendored uPlot
	"encoding/json"
	"fmt"
	"html/template"
	"time"

	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/termtext"
)

// The page's template and chart script, and uPlot (report/uplot/VERSION
// says which release and how to upgrade it), all embedded in every
// report.html so that it opens offline.
var (
	//go:embed html.tmpl
	htmlTemplate string
	//go:embed html.js
	chartScript string
	//go:embed uplot/uPlot.iife.min.js
	uplotJS string
	//go:embed uplot/uPlot.min.css
	uplotCSS string
)

// HTML renders report.html: one self-contained page (nothing fetched from
// anywhere) with every section report.md has, in the same order under the
// same headings, and charts drawn in the browser by the embedded uPlot from
// one JSON blob: the target's CPU, GC %, live heap and allocation rate over
// time, the driver's throughput, active users and errors over time (phases
// shaded), latency and GC pause percentiles per phase, and each max-load
// phase's knee. s holds the target's samples; without two of them the
// target charts say "no samples". Text goes through html/template's
// escaping; the JSON is encoded with <, > and & escaped, so no string in it
// can close its <script> element.
func (r *Report) HTML(s *Samples) ([]byte, error) {
	page, err := r.htmlPage(s)
	if err != nil {
		return nil, err
	}
	t, err := template.New("report").Parse(htmlTemplate)
	if err != nil {
		return nil, fmt.Errorf("cannot parse the html template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, page); err != nil {
		return nil, fmt.Errorf("cannot render report.html: %w", err)
	}
	return b.Bytes(), nil
}

// htmlPage is everything the template shows, already formatted; R gives
// the template the report's plain fields.
type htmlPage struct {
	R                            *Report
	Verdict, VerdictClass        string
	Failed                       []string
	Started, Finished            string
	Heading, ArmA, ArmB, ArmSep  string
	PhasesA, PhasesB             []string
	KPIs                         []htmlKPI
	GateWords                    string
	Phases                       []htmlPhase
	NotMeasured                  string
	Problems                     []htmlList
	CheckGroups                  []htmlCheckGroup
	Overhead                     []htmlOverhead
	Cumulative                   []htmlOverhead
	CumulativeIntro              string
	Layers                       []htmlLayer
	LayersIntro, LayersExplained string
	// LayersNotMeasured is why there is no CPU table by layer.
	LayersNotMeasured                      string
	AllocLayers                            []htmlAllocLayer
	AllocLayersIntro, AllocLayersExplained string
	OverheadBasis, OverheadRule            string
	Subscriptions                          []htmlSubscriptions
	SubscriptionColumns                    []string
	MaxLoads                               []htmlMaxLoad
	Opens                                  []htmlList
	AfterIntro                             string
	Afters                                 []htmlRow
	RoundVerdictNote                       string
	Seed000                                []seed000Table
	HarnessIntro                           string
	HarnessHead                            []string
	HarnessRows                            [][]string
	FigureSourcesHeading                   string
	FigureSourcesIntro                     string
	Footer                                 []string
	Bands                                  []chartPhase
	TargetCharts, DriverCharts             []htmlChart
	PhaseCharts                            []htmlChart
	Data, Script, UPlot                    template.JS
	// FlameData is the icicle's tree as JSON (profiles.IcicleNode), ""
	// without one.
	FlameData  template.JS
	FlameIntro string
	UPlotCSS   template.CSS
}

type htmlKPI struct {
	Title, Name, REST, GraphQL, Variance, Limit, Outcome, Class, Definition, Reason string
	Rounds                                                                          []string
}

type htmlPhase struct {
	Name, Arm, Model, DriverPID, Requests, Errors, ErrorClass, Throughput string
	P50, P90, P99, P999, Max                                              string
	Resources, PerRequest                                                 []string
}

// htmlList is a titled list of sentences (a phase's problems, an open
// model's figures).
type htmlList struct {
	Heading string
	Lines   []string
}

// htmlRow is a table row: its first cell, the others, and a class for the
// last one.
type htmlRow struct {
	Name      string
	Cells     []string
	LastClass string
}

type htmlCheckGroup struct {
	Title, Intro string
	Rows         []htmlCheck
	Definitions  []Check
}

type htmlCheck struct {
	Phase, Title, Value, Limit, Outcome, Class, Detail, Definition string
}

// htmlOverheadRow is one function row of the flat or cumulative table.
func htmlOverheadRow(o OverheadRow) htmlOverhead {
	ho := htmlOverhead{Function: o.Function,
		REST: fmt.Sprintf("%.2f µs", o.RESTMicrosPerReq), GraphQL: fmt.Sprintf("%.2f µs", o.GraphQLMicrosPerReq),
		Samples: termtext.Count(o.RESTSamples) + " / " + termtext.Count(o.GraphQLSamples)}
	ho.Extra, ho.Share = overheadExtra(o)
	if o.WithinNoise {
		ho.Class = "info"
	}
	return ho
}

// htmlAllocLayer is one row of the allocation-by-layer table.
type htmlAllocLayer struct {
	Layer                       string
	REST, GraphQL, Extra, Share string
}

type htmlLayer struct {
	Layer string
	layerCells
}

// HTML cell accessors for the template (layerCells' fields are unexported).
func (l htmlLayer) REST() string    { return l.rest }
func (l htmlLayer) GraphQL() string { return l.gql }
func (l htmlLayer) Extra() string   { return l.extra }
func (l htmlLayer) Share() string   { return l.share }
func (l htmlLayer) Alloc() string   { return l.alloc }
func (l htmlLayer) Samples() string { return l.samples }

type htmlOverhead struct {
	Function, REST, GraphQL, Extra, Share, Samples, Class string
}

type htmlSubscriptions struct {
	Heading, Note string
	Cells         []string
}

type htmlMaxLoad struct {
	Heading string
	Lines   []string
	Charts  []htmlChart
}

// htmlChart is one chart's frame: a title, the definition of what it
// draws, and either a place for the script to draw in (its data is the
// chartSpec with the same ID) or why there is nothing to draw.
type htmlChart struct {
	ID, Title, Caption, Empty string
}

// outcomeClass maps a result to the class that colours it.
var outcomeClass = map[string]string{"info": "info", "pass": "pass", "FAIL": "fail", "INCONCLUSIVE": "open", "NOT MEASURED": "open",
	"inconclusive": "open", "not measured": "open"}

func (r *Report) htmlPage(s *Samples) (htmlPage, error) {
	p := htmlPage{R: r, Verdict: r.Verdict.Word(), Heading: r.comparisonHeading(), GateWords: gateWords(r.Gate), RoundVerdictNote: roundVerdictNote,
		Failed: r.Reasons(), Footer: r.footerLines(), SubscriptionColumns: subscriptionColumns,
		FigureSourcesHeading: figureSourcesHeading,
		Script:               template.JS(chartScript), UPlot: template.JS(uplotJS), UPlotCSS: template.CSS(uplotCSS)}
	p.ArmA, p.ArmB = r.ArmTitles()
	p.PhasesA, p.PhasesB = r.Compare.Ran()
	p.ArmSep = armSeparator(p.PhasesA, p.PhasesB)
	p.VerdictClass = map[kpi.Outcome]string{kpi.OutcomePass: "pass", kpi.OutcomeFail: "fail", kpi.OutcomeAborted: "aborted", kpi.OutcomeRunning: "running", kpi.OutcomeInconclusive: "inconclusive"}[r.Verdict]
	if p.VerdictClass == "" {
		p.VerdictClass = "other"
	}
	if p.Verdict == "" {
		p.Verdict = "NONE YET"
	}
	if !r.StartedAt.IsZero() {
		p.Started = r.StartedAt.UTC().Format(time.RFC3339)
	}
	if !r.FinishedAt.IsZero() {
		p.Finished = r.FinishedAt.UTC().Format(time.RFC3339)
	}
	for _, k := range r.KPIs {
		hk := htmlKPI{Title: k.Title, Name: k.Name, REST: restValue(k), GraphQL: gqlValue(k),
			Variance: variance(k), Limit: limit(k), Outcome: outcome(k), Definition: k.Definition, Rounds: roundCells(k)}
		if k.Gated {
			hk.Reason = k.Reason // why a gated row is inconclusive or not measured
		}
		hk.Class = outcomeClass[hk.Outcome]
		p.KPIs = append(p.KPIs, hk)
	}
	for _, ph := range r.Phases {
		l := ph.LatencyMs
		ms := func(v float64) string { return fmt.Sprintf("%.2f ms", v) }
		hp := htmlPhase{Name: ph.Name, Arm: ph.Arm, Model: ph.Model, DriverPID: ph.DriverPIDs(),
			Requests: fmt.Sprint(ph.Requests), Errors: fmt.Sprint(ph.Errors), Throughput: fmt.Sprintf("%.0f req/s", ph.ThroughputRPS),
			P50: ms(l.P50), P90: ms(l.P90), P99: ms(l.P99), P999: ms(l.P999), Max: ms(l.Max),
			Resources: resourceCells(ph.Resources), PerRequest: perRequestCells(ph)}
		if ph.Errors > 0 {
			hp.ErrorClass = "fail"
		}
		p.Phases = append(p.Phases, hp)
		if probs := problems(ph); len(probs) > 0 || ph.Aborted {
			if ph.Aborted {
				probs = append(probs, "The phase was aborted before it ended on its own.")
			}
			p.Problems = append(p.Problems, htmlList{Heading: problemsHeading(ph), Lines: probs})
		}
		if sr := ph.Subscriptions; sr != nil {
			p.Subscriptions = append(p.Subscriptions, htmlSubscriptions{Heading: subscriptionsHeading(ph), Cells: subscriptionCells(sr), Note: subscriptionNote(sr)})
		}
		if ph.Open != nil {
			plain := func(s string) string { return s }
			p.Opens = append(p.Opens, htmlList{Heading: openHeading(ph), Lines: []string{openText(ph, plain)}})
		}
		if a := ph.After; a != nil {
			if p.AfterIntro == "" {
				p.AfterIntro = afterIntro(a)
			}
			row := htmlRow{Name: ph.Name, Cells: afterCells(a)}
			if !a.Returned && a.ReturnedNotMeasured == "" {
				row.LastClass = "fail"
			}
			p.Afters = append(p.Afters, row)
		}
	}
	if r.hasNotMeasured() {
		p.NotMeasured = notMeasuredLegend
	}
	for _, g := range r.checkGroups() {
		hg := htmlCheckGroup{Title: g.Title, Intro: g.Intro, Definitions: checkDefinitions(g.Rows)}
		for _, c := range g.Rows {
			res := checkResult(c)
			v, l := c.cells()
			hg.Rows = append(hg.Rows, htmlCheck{Phase: c.Phase, Title: c.Title, Value: v, Limit: l,
				Outcome: res, Class: outcomeClass[res], Detail: c.Detail, Definition: c.Definition})
		}
		p.CheckGroups = append(p.CheckGroups, hg)
	}
	if ol := r.OverheadLayers; ol != nil {
		p.LayersIntro, p.LayersExplained = overheadLayersIntro, ol.explained()
		for _, l := range ol.Layers {
			p.Layers = append(p.Layers, htmlLayer{Layer: l.Layer, layerCells: l.cells()})
		}
	}
	if r.OverheadLayers == nil {
		p.LayersNotMeasured = r.OverheadNotMeasured
	}
	if al := r.AllocLayers; al != nil {
		p.AllocLayersIntro, p.AllocLayersExplained = allocLayersIntro, al.explained()
		for _, l := range al.Layers {
			c := l.cells()
			p.AllocLayers = append(p.AllocLayers, htmlAllocLayer{Layer: l.Layer, REST: c[0], GraphQL: c[1], Extra: c[2], Share: c[3]})
		}
	}
	for _, o := range r.OverheadCumulative {
		p.Cumulative = append(p.Cumulative, htmlOverheadRow(o))
		p.CumulativeIntro = cumulativeIntro + " " + overheadNoiseRule
	}
	for _, o := range r.Overhead {
		p.Overhead = append(p.Overhead, htmlOverheadRow(o))
	}
	if len(r.Overhead) > 0 {
		p.OverheadBasis, p.OverheadRule = r.overheadBasis(), overheadNoiseRule
	}
	p.Seed000 = r.seed000Tables()
	if intro, head, rows, ok := r.harnessCostTable(); ok {
		p.HarnessIntro, p.HarnessHead, p.HarnessRows = intro, head, rows
	}
	if t := r.Target; t.External() && len(t.Figures) > 0 {
		p.FigureSourcesIntro = figureSourcesIntro(t)
	}

	cd := r.chartData(s)
	p.Bands = cd.Phases
	p.TargetCharts, p.DriverCharts, p.PhaseCharts = cd.target, cd.driver, cd.perPhase
	for i, ph := range r.Phases {
		if ph.MaxLoad != nil {
			p.MaxLoads = append(p.MaxLoads, htmlMaxLoad{Heading: maxLoadHeading(ph), Lines: maxLoadLines(ph.MaxLoad, plainMarkup()), Charts: cd.knees[i]})
		}
	}
	data, err := json.Marshal(cd) // escapes <, > and &: no "</script>" can appear
	if err != nil {
		return p, fmt.Errorf("cannot encode the chart data: %w", err)
	}
	p.Data = template.JS(data)
	if r.Flame != nil {
		fd, err := json.Marshal(r.Flame) // escapes <, > and &
		if err != nil {
			return p, fmt.Errorf("cannot encode the flame graph: %w", err)
		}
		p.FlameData, p.FlameIntro = template.JS(fd), flameIntro
	}
	return p, nil
}
