// Package grafana generates soakd's Grafana dashboards from Go code (with
// github.com/grafana/grafana-foundation-sdk) and holds, next to this file,
// what a Grafana needs to show them: the provisioning of the Prometheus and
// Pyroscope datasources and of the dashboards, the generated JSON under
// dashboards/, and a compose stack (docker-compose.yml, prometheus.yml).
//
// Regenerate the JSON with `go run ./grafana/gen` after changing this
// package; a test fails while the committed JSON is stale.
//
// Every query follows the rules that keep soak graphs honest: counters
// through rate() over $__rate_interval, latency percentiles through
// histogram_quantile on sum by (le, ...) of bucket rates (never an average
// of percentiles), and the driver's own percentiles taken as the HDR
// histograms computed them. Every time series panel carries the phases as
// annotations, from soakd_phase_info.
package grafana

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/grafanapyroscope"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Datasource uids, as provisioning/datasources/datasources.yaml declares them.
// The dashboards do not hard-code them: their datasource and pyroscope
// variables default to them and list every datasource of the type, so the
// dashboards work in a Grafana whose datasources have other uids.
const (
	// PrometheusUID is the uid of the provisioned Prometheus datasource.
	PrometheusUID = "prometheus"
	// PyroscopeUID is the uid of the provisioned Pyroscope datasource.
	PyroscopeUID = "pyroscope"
)

// The dashboard variables every dashboard has. instance and run are
// multi-value regexes (All is ".*").
const (
	// VarDatasource picks the Prometheus datasource.
	VarDatasource = "datasource"
	// VarPyroscope picks the Pyroscope datasource (flame graphs).
	VarPyroscope = "pyroscope"
	// VarInstance picks the scraped soakd instances (the compose stack has
	// two: serve and run).
	VarInstance = "instance"
	// VarRun picks the runs whose phases are annotated (soakd_phase_info's
	// run label; the other series carry no run id, by design: cardinality).
	VarRun = "run"
)

// Job is the Prometheus job name every query selects: prometheus.yml
// scrapes soakd under it, so the Go and process series of Prometheus,
// Grafana or Pyroscope never mix in.
const Job = "soakd"

// PyroscopeService is the service_name soakd's profiles are pushed under
// (its Pyroscope application name), which the flame graphs select.
const PyroscopeService = "soakd"

// Dir is where the generated dashboards live, relative to this package.
const Dir = "dashboards"

// Dashboard is one generated dashboard and the file it is provisioned from.
type Dashboard struct {
	// File is the JSON file's name under Dir.
	File string
	// Dashboard is the dashboard model.
	Dashboard dashboard.Dashboard
}

// JSON renders the dashboard as provisioned: indented, with a final newline.
func (d Dashboard) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(d.Dashboard, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cannot render dashboard %s: %w", d.File, err)
	}
	return append(b, '\n'), nil
}

// Dashboards builds every dashboard, in a fixed order.
func Dashboards() ([]Dashboard, error) {
	builders := []struct {
		file  string
		build func() *dashboard.DashboardBuilder
	}{
		{"overview.json", overview},
		{"runtime.json", goRuntime},
		{"kpi.json", kpis},
		{"subscriptions.json", subscriptions},
		{"max-load.json", maxLoad},
		{"daemon.json", daemonDashboard},
	}
	out := make([]Dashboard, 0, len(builders))
	for _, b := range builders {
		d, err := b.build().Build()
		if err != nil {
			return nil, fmt.Errorf("cannot build dashboard %s: %w", b.file, err)
		}
		number(&d)
		out = append(out, Dashboard{File: b.file, Dashboard: d})
	}
	return out, nil
}

// Write renders every dashboard into dir (normally this package's Dir).
func Write(dir string) error {
	ds, err := Dashboards()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", dir, err)
	}
	for _, d := range ds {
		b, err := d.JSON()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, d.File), b, 0o644); err != nil {
			return fmt.Errorf("cannot write dashboard: %w", err)
		}
	}
	return nil
}

// number gives every panel (rows included) a unique id in layout order, and
// every query a RefId (A, B, ...) within its panel, so the JSON is stable.
func number(d *dashboard.Dashboard) {
	id := uint32(0)
	for _, p := range d.Panels {
		id++
		switch {
		case p.Panel != nil:
			p.Panel.Id = cog.ToPtr(id)
			refIDs(p.Panel)
		case p.RowPanel != nil:
			p.RowPanel.Id = id
			for i := range p.RowPanel.Panels {
				id++
				p.RowPanel.Panels[i].Id = cog.ToPtr(id)
				refIDs(&p.RowPanel.Panels[i])
			}
		}
	}
}

func refIDs(p *dashboard.Panel) {
	for i, t := range p.Targets {
		ref := cog.ToPtr(string(rune('A' + i)))
		switch q := t.(type) {
		case prometheus.Dataquery:
			q.RefId = ref
			p.Targets[i] = q
		case grafanapyroscope.Dataquery:
			q.RefId = ref
			p.Targets[i] = q
		}
	}
}

func promDS() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${" + VarDatasource + "}")}
}

func pyroDS() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("grafana-pyroscope-datasource"), Uid: cog.ToPtr("${" + VarPyroscope + "}")}
}

// sel is the label matcher every soakd query starts with: the job and the
// instances picked.
const sel = `job="` + Job + `", instance=~"$` + VarInstance + `"`

// variables are the variables every dashboard starts with: the two
// datasources (defaulting to the provisioned ones), the soakd instances
// and the runs whose phases are annotated.
func variables(b *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	return b.
		WithVariable(promVariable()).
		WithVariable(dashboard.NewDatasourceVariableBuilder(VarPyroscope).
			Label("Pyroscope").
			Type("grafana-pyroscope-datasource").
			Current(dashboard.VariableOption{Text: dashboard.StringOrArrayOfString{String: cog.ToPtr("Pyroscope")}, Value: dashboard.StringOrArrayOfString{String: cog.ToPtr(PyroscopeUID)}})).
		WithVariable(all(dashboard.NewQueryVariableBuilder(VarInstance)).
			Label("Instance").
			Description("The soakd targets scraped under job soakd (the compose stack: serve and run).").
			Query(dashboard.StringOrMap{String: cog.ToPtr(`label_values(soakd_run_verdict{job="` + Job + `"}, instance)`)})).
		WithVariable(all(dashboard.NewQueryVariableBuilder(VarRun)).
			Label("Run").
			Description("The runs whose phases are annotated (soakd_phase_info carries the run id; other series do not, to keep their number bounded).").
			Query(dashboard.StringOrMap{String: cog.ToPtr(`label_values(soakd_phase_info{` + sel + `}, run)`)}))
}

// promVariable picks the Prometheus datasource, the provisioned one by
// default.
func promVariable() *dashboard.DatasourceVariableBuilder {
	return dashboard.NewDatasourceVariableBuilder(VarDatasource).
		Label("Prometheus").
		Type("prometheus").
		Current(dashboard.VariableOption{Text: dashboard.StringOrArrayOfString{String: cog.ToPtr("Prometheus")}, Value: dashboard.StringOrArrayOfString{String: cog.ToPtr(PrometheusUID)}})
}

// all makes v a multi-value query variable of the Prometheus datasource,
// All (".*") picked, refreshed with the time range.
func all(v *dashboard.QueryVariableBuilder) *dashboard.QueryVariableBuilder {
	return v.Datasource(promDS()).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(".*").
		Current(dashboard.VariableOption{Text: dashboard.StringOrArrayOfString{String: cog.ToPtr("All")}, Value: dashboard.StringOrArrayOfString{String: cog.ToPtr("$__all")}})
}

// q is a range query of expr with a legend.
func q(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(promDS()).Expr(expr).LegendFormat(legend).Range()
}

// instant is an instant query of expr with a legend, for stats and tables.
func instant(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().Datasource(promDS()).Expr(expr).LegendFormat(legend).Instant()
}

// newDashboard starts a dashboard with the settings they all share: the
// soakd tag, links to the others, a 10 s refresh and the phase annotations,
// coloured by arm.
func newDashboard(uid, title, description string) *dashboard.DashboardBuilder {
	return settings(variables(dashboard.NewDashboardBuilder(title)), uid, description).
		Annotation(phaseAnnotation("REST phases", "rest", "#0969DA")).
		Annotation(phaseAnnotation("GraphQL phases", "graphql", "#BF3989"))
}

// settings are what every dashboard shares, the daemon's too: the soakd
// tag and links to the others, a 10 s refresh, the last 30 minutes.
func settings(b *dashboard.DashboardBuilder, uid, description string) *dashboard.DashboardBuilder {
	return b.
		Uid(uid).
		Description(description).
		Tags([]string{"soakd"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("10s").
		Time("now-30m", "now").
		Timezone(common.TimeZoneBrowser).
		Link(dashboard.NewDashboardLinkBuilder("soakd").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{"soakd"}).
			AsDropdown(true).
			KeepTime(true))
}

// phaseAnnotation is one arm's phase regions, in the arm's colour (the
// report's: REST blue, GraphQL pink; every phase runs one of the two
// arms). The series is 1 while the phase runs and absent otherwise.
func phaseAnnotation(name, arm, colour string) *dashboard.AnnotationQueryBuilder {
	return dashboard.NewAnnotationQueryBuilder().
		Name(name).
		Datasource(promDS()).
		Enable(true).
		IconColor(colour).
		Expr(`soakd_phase_info{` + sel + `, run=~"$` + VarRun + `", arm="` + arm + `"}`).
		Step("1s").
		TitleFormat("{{phase}}").
		TextFormat("run {{run}}, arm {{arm}}").
		TagKeys("arm,phase")
}

// ts is a time series panel.
func ts(title, description, unit string, queries ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(promDS()).
		Unit(unit).
		Span(12).
		Height(8).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true)).
		Tooltip(tooltip())
	for _, x := range queries {
		p.WithTarget(x)
	}
	return p
}

// tooltip shows every series at the cursor, largest first.
func tooltip() *common.VizTooltipOptionsBuilder {
	return common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending)
}

// thresholds returns absolute thresholds: base colour, then value/colour pairs.
func thresholds(base string, steps ...any) *dashboard.ThresholdsConfigBuilder {
	list := []dashboard.Threshold{{Color: base}}
	for i := 0; i+1 < len(steps); i += 2 {
		list = append(list, dashboard.Threshold{Value: cog.ToPtr(steps[i].(float64)), Color: steps[i+1].(string)})
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(list)
}

// stats is a stat panel of instant queries.
func stats(title, description, unit string, queries ...*prometheus.DataqueryBuilder) *stat.PanelBuilder {
	p := stat.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(promDS()).
		Unit(unit).
		Span(6).
		Height(5).
		GraphMode(common.BigValueGraphModeNone).
		ColorMode(common.BigValueColorModeValue).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}))
	for _, x := range queries {
		p.WithTarget(x)
	}
	return p
}

// tbl is a table panel of instant queries in table format, with the
// footer (off) spelled out: Grafana requires its reducer list.
func tbl(title, description string, queries ...*prometheus.DataqueryBuilder) *table.PanelBuilder {
	p := table.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(promDS()).
		Footer(common.NewTableFooterOptionsBuilder().Show(false).Reducer([]string{"sum"}))
	for _, x := range queries {
		p.WithTarget(x.Format(prometheus.PromQueryFormatTable))
	}
	return p
}

// Outcome codes: the dashboards turn the one-hot outcome series
// (soakd_kpi_outcome, soakd_run_verdict: 1 for the outcome that holds, 0 for
// the others) into one number per KPI or run, which a value mapping turns
// into the word and colour every report uses. INCONCLUSIVE and NOT MEASURED
// are never painted as a red FAIL.
type outcomeCode struct {
	label, text, color string
	code               int
}

func outcomeCodes() []outcomeCode {
	return []outcomeCode{
		{"pass", "PASS", "green", 1},
		{"fail", "FAIL", "red", 2},
		{"inconclusive", "INCONCLUSIVE", "orange", 3},
		{"not_measured", "NOT MEASURED", "purple", 4},
		{"aborted", "ABORTED", "dark-red", 5},
		{"running", "RUNNING", "blue", 6},
	}
}

// outcomeExpr is a PromQL expression giving, per by label set, the code of
// the outcome whose series of metric (with the outcome in label) is 1.
func outcomeExpr(metric, selector, label, by string) string {
	var parts []string
	for _, o := range outcomeCodes() {
		parts = append(parts, fmt.Sprintf(`(last_over_time(%s{%s, %s="%s"}[$__range]) == 1) * %d`, metric, selector, label, o.label, o.code))
	}
	return "max by (" + by + ") (" + strings.Join(parts, " or ") + ")"
}

// outcomeMappings maps the outcome codes to their words and colours.
func outcomeMappings() []dashboard.ValueMapping {
	opts := map[string]dashboard.ValueMappingResult{}
	for i, o := range outcomeCodes() {
		opts[fmt.Sprint(o.code)] = dashboard.ValueMappingResult{Text: cog.ToPtr(o.text), Color: cog.ToPtr(o.color), Index: cog.ToPtr(int32(i))}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}}
}

// Reused expressions.
const (
	// targetRPS is the target's request rate per arm, websockets excluded.
	targetRPS = `sum by (arm) (rate(soakd_target_requests_total{` + sel + `, operation!="websocket"}[$__rate_interval]))`
	// cpuCores is the target's CPU use in cores (OS figure).
	cpuCores = `rate(process_cpu_seconds_total{` + sel + `}[$__rate_interval])`
)

// targetQuantile is the q quantile of the target's request duration from
// the histogram's bucket rates, grouped by by (besides le).
func targetQuantile(q, by string) string {
	return `histogram_quantile(` + q + `, sum by (le, ` + by + `) (rate(soakd_target_request_duration_seconds_bucket{` + sel + `}[$__rate_interval])))`
}

func overview() *dashboard.DashboardBuilder {
	return newDashboard("soakd-overview", "soakd: overview",
		"Which phase runs, and how each arm's throughput, latency and errors compare, seen from the target and from the driver.").
		WithRow(dashboard.NewRowBuilder("Phases")).
		WithPanel(statetimeline.NewPanelBuilder().
			Title("Phase timeline").
			Description("Which phase (and arm) runs when: soakd_phase_info is 1 while a phase runs. Settle periods between phases are gaps.").
			Datasource(promDS()).
			WithTarget(q(`max by (arm, phase) (soakd_phase_info{`+sel+`, run=~"$`+VarRun+`"})`, "{{arm}}: {{phase}}")).
			Mappings([]dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
				Type:    dashboard.MappingTypeValueToText,
				Options: map[string]dashboard.ValueMappingResult{"1": {Text: cog.ToPtr("running"), Color: cog.ToPtr("blue"), Index: cog.ToPtr(int32(0))}},
			}}}).
			ShowValue(common.VisibilityModeNever).
			Unit("none").
			Tooltip(tooltip()).
			Span(24).
			Height(5)).
		WithRow(dashboard.NewRowBuilder("Throughput")).
		WithPanel(ts("Target throughput by arm",
			"Requests the target served per second, by arm, from its own counters (websocket connections excluded).",
			"reqps", q(targetRPS, "{{arm}}"))).
		WithPanel(ts("Driver throughput and users",
			"Requests the driver completed per second, by phase, and its active virtual users (right axis). The driver is a separate process: its view includes the network and its own queueing.",
			"reqps",
			q(`sum by (arm, phase) (rate(soakd_driver_requests_total{`+sel+`}[$__rate_interval]))`, "{{phase}} req/s"),
			q(`sum by (arm, phase) (soakd_driver_active_users{`+sel+`})`, "{{phase}} users")).
			OverrideByRegexp(".* users", []dashboard.DynamicConfigValue{
				{Id: "custom.axisPlacement", Value: "right"},
				{Id: "unit", Value: "short"},
			})).
		WithRow(dashboard.NewRowBuilder("Latency")).
		WithPanel(ts("Target latency by arm (p50, p99)",
			"Time the target took per request, from its duration histogram: histogram_quantile over the rate of every bucket, summed by arm. Percentiles are never averaged.",
			"s",
			q(targetQuantile("0.5", "arm"), "{{arm}} p50"),
			q(targetQuantile("0.99", "arm"), "{{arm}} p99"))).
		WithPanel(ts("Target p99 latency by operation",
			"99th percentile per GraphQL operation name or REST route template.",
			"s",
			q(targetQuantile("0.99", "arm, operation"), "{{arm}} {{operation}}"))).
		WithPanel(tbl("Driver latency per finished phase (HDR)",
			"The driver's latency of each finished phase's successful requests, as its HDR histograms computed it over the whole phase (closed model: service time; open model: from the intended send time). quantile 1 is the maximum.",
			instant(`last_over_time(soakd_driver_latency_seconds{`+sel+`}[$__range])`, "")).
			Unit("s").
			WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
				"excludeByName": map[string]bool{"Time": true, "job": true, "instance": true, "__name__": true},
				"renameByName":  map[string]string{"Value": "latency"},
			}}).
			Span(24).
			Height(8)).
		WithRow(dashboard.NewRowBuilder("Errors")).
		WithPanel(ts("Target error responses by arm and status",
			"Responses other than 2xx (and websocket upgrades) per second, by arm and HTTP status. GraphQL errors travel in 200 responses: see the driver's classes.",
			"reqps",
			q(`sum by (arm, code) (rate(soakd_target_requests_total{`+sel+`, code!~"2..|101"}[$__rate_interval]))`, "{{arm}} {{code}}"))).
		WithPanel(ts("Driver errors by arm and class",
			"Failed requests per second as the driver classed them: timeouts, connection errors, GraphQL errors in a 200, payload mismatches, http_<status>.",
			"reqps",
			q(`sum by (arm, class) (rate(soakd_driver_errors_total{`+sel+`}[$__rate_interval]))`, "{{arm}} {{class}}"))).
		WithPanel(ts("Driver error ratio by arm",
			"Share of the driver's requests that failed.",
			"percentunit",
			q(`sum by (arm) (rate(soakd_driver_errors_total{`+sel+`}[$__rate_interval])) / sum by (arm) (rate(soakd_driver_requests_total{`+sel+`}[$__rate_interval]))`, "{{arm}}")).
			Min(0))
}

// phaseVariable is a multi-value variable over soakd_phase_info's label
// (phase or arm), All being ".*", which also matches samples without it.
func phaseVariable(label string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(label).
		Label(strings.ToUpper(label[:1]) + label[1:]).
		Description("Filters the flame graph by the pprof label " + label + " of the requests whose CPU samples it shows.").
		Datasource(promDS()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(`label_values(soakd_phase_info{` + sel + `}, ` + label + `)`)}).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Multi(true).
		IncludeAll(true).
		AllValue(".*").
		Current(dashboard.VariableOption{Text: dashboard.StringOrArrayOfString{String: cog.ToPtr("All")}, Value: dashboard.StringOrArrayOfString{String: cog.ToPtr("$__all")}})
}

func goRuntime() *dashboard.DashboardBuilder {
	return newDashboard("soakd-runtime", "soakd: Go runtime",
		"The target process's GC, heap, allocation, scheduler, CPU and memory, from client_golang's Go collector (runtime/metrics) and process collector, plus its CPU flame graph from Pyroscope. The driver is another process and is not in these figures.").
		WithVariable(phaseVariable("phase")).
		WithVariable(phaseVariable("arm")).
		WithRow(dashboard.NewRowBuilder("Garbage collector")).
		WithPanel(ts("GC % of CPU",
			"The GC's share of the CPU the Go runtime accounted: Δ/cpu/classes/gc/total ÷ Δ/cpu/classes/total × 100, the GC KPI's definition. These runtime estimates compare only with each other.",
			"percent",
			q(`100 * rate(go_cpu_classes_gc_total_cpu_seconds_total{`+sel+`}[$__rate_interval]) / rate(go_cpu_classes_total_cpu_seconds_total{`+sel+`}[$__rate_interval])`, "GC %")).
			Min(0)).
		WithPanel(ts("GC stop-the-world pauses (p50, p99, max bucket)",
			"Stop-the-world pause percentiles from /sched/pauses/total/gc:seconds: histogram_quantile over the rate of every bucket (bucket upper bounds).",
			"s",
			q(`histogram_quantile(0.5, sum by (le) (rate(go_sched_pauses_total_gc_seconds_bucket{`+sel+`}[$__rate_interval])))`, "p50"),
			q(`histogram_quantile(0.99, sum by (le) (rate(go_sched_pauses_total_gc_seconds_bucket{`+sel+`}[$__rate_interval])))`, "p99"),
			q(`histogram_quantile(1, sum by (le) (rate(go_sched_pauses_total_gc_seconds_bucket{`+sel+`}[$__rate_interval])))`, "max"))).
		WithPanel(ts("Heap: live and goal",
			"Live heap after the last GC (what survives: it must not trend up in a soak) and the heap size the next GC is triggered at.",
			"bytes",
			q(`go_gc_heap_live_bytes{`+sel+`}`, "live"),
			q(`go_gc_heap_goal_bytes{`+sel+`}`, "goal"))).
		WithPanel(ts("GC cycles per second",
			"Completed GC cycles per second; forced cycles are soakd's own between phases.",
			"short",
			q(`rate(go_gc_cycles_total_gc_cycles_total{`+sel+`}[$__rate_interval])`, "all"),
			q(`rate(go_gc_cycles_forced_gc_cycles_total{`+sel+`}[$__rate_interval])`, "forced"))).
		WithRow(dashboard.NewRowBuilder("Allocation")).
		WithPanel(ts("Allocation rate",
			"Heap bytes allocated per second (what .NET calls Gen0 allocation), and objects per second on the right axis.",
			"Bps",
			q(`rate(go_gc_heap_allocs_bytes_total{`+sel+`}[$__rate_interval])`, "bytes/s"),
			q(`rate(go_gc_heap_allocs_objects_total{`+sel+`}[$__rate_interval])`, "objects/s")).
			OverrideByName("objects/s", []dashboard.DynamicConfigValue{
				{Id: "custom.axisPlacement", Value: "right"},
				{Id: "unit", Value: "short"},
			})).
		WithPanel(ts("Cost per request (all arms)",
			"Target CPU µs and heap bytes allocated per request served. Phases run one arm at a time, so within a phase's annotation this is that arm's cost.",
			"µs",
			q(`1e6 * sum by (instance) (`+cpuCores+`) / sum by (instance) (rate(soakd_target_requests_total{`+sel+`, operation!="websocket"}[$__rate_interval]))`, "CPU µs/request"),
			q(`sum by (instance) (rate(go_gc_heap_allocs_bytes_total{`+sel+`}[$__rate_interval])) / sum by (instance) (rate(soakd_target_requests_total{`+sel+`, operation!="websocket"}[$__rate_interval]))`, "bytes/request")).
			OverrideByName("bytes/request", []dashboard.DynamicConfigValue{
				{Id: "custom.axisPlacement", Value: "right"},
				{Id: "unit", Value: "bytes"},
			})).
		WithRow(dashboard.NewRowBuilder("Process")).
		WithPanel(ts("CPU (cores)",
			"Target process CPU, user + system, in cores (1 = one core busy), and the GC's part of it as the runtime estimates it.",
			"short",
			q(cpuCores, "process"),
			q(`rate(go_cpu_classes_gc_total_cpu_seconds_total{`+sel+`}[$__rate_interval])`, "GC (runtime estimate)")).
			Min(0)).
		WithPanel(ts("Resident memory",
			"Resident set size (OS) next to the memory the Go runtime holds from the OS.",
			"bytes",
			q(`process_resident_memory_bytes{`+sel+`}`, "RSS"),
			q(`go_memstats_sys_bytes{`+sel+`}`, "Go runtime total"))).
		WithPanel(ts("Goroutines",
			"Live goroutines: must come back to the baseline after each phase (no leak).",
			"short",
			q(`go_sched_goroutines_goroutines{`+sel+`}`, "goroutines"))).
		WithPanel(ts("Scheduler latency (p99)",
			"Time goroutines waited runnable before running (/sched/latencies:seconds), 99th percentile: a saturated target shows it here first.",
			"s",
			q(`histogram_quantile(0.99, sum by (le) (rate(go_sched_latencies_seconds_bucket{`+sel+`}[$__rate_interval])))`, "p99"))).
		WithRow(dashboard.NewRowBuilder("Profiles")).
		WithPanel(dashboard.NewPanelBuilder().
			Type("flamegraph").
			Title("CPU flame graph (Pyroscope)").
			Description("Where the target spent CPU over the selected time range, pushed to Pyroscope by the target process (service_name " + PyroscopeService + "), for the phases and arms picked above: each request's CPU samples carry the pprof labels endpoint, run, phase and arm.").
			Datasource(pyroDS()).
			WithTarget(grafanapyroscope.NewDataqueryBuilder().
				Datasource(pyroDS()).
				QueryType("profile").
				ProfileTypeId("process_cpu:cpu:nanoseconds:cpu:nanoseconds").
				LabelSelector(`{service_name="` + PyroscopeService + `", phase=~"$phase", arm=~"$arm"}`).
				GroupBy([]string{})).
			Span(24).
			Height(14))
}

func kpis() *dashboard.DashboardBuilder {
	last := func(metric, match string) string {
		return `last_over_time(` + metric + `{` + sel + match + `}[$__range])`
	}
	const pick = `, kpi=~"$kpi"`
	// figures is a bar gauge of one base-unit family of KPI values, both arms.
	figures := func(family, unit, title, description string) *bargauge.PanelBuilder {
		return bargauge.NewPanelBuilder().
			Title(title).
			Description(description + " REST and GraphQL per KPI, the last run's values.").
			Datasource(promDS()).
			Unit(unit).
			WithTarget(instant(last("soakd_kpi_value_"+family, pick), "{{kpi}} {{arm}}")).
			Orientation(common.VizOrientationHorizontal).
			DisplayMode(common.BarGaugeDisplayModeBasic).
			ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
			Thresholds(thresholds("blue")).
			Min(0).
			Span(12).
			Height(6)
	}
	return newDashboard("soakd-kpi", "soakd: KPIs",
		"The last run's release gate, GraphQL against REST, KPI by KPI: the figures per arm in base units, the variance, its limit and whether it passed. Values are the last ones in the selected time range.").
		WithVariable(dashboard.NewQueryVariableBuilder("kpi").
			Label("KPI").
			Datasource(promDS()).
			Query(dashboard.StringOrMap{String: cog.ToPtr(`label_values({__name__=~"soakd_kpi_value_.+", ` + sel + `}, kpi)`)}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Multi(true).
			IncludeAll(true).
			AllValue(".*")).
		WithRow(dashboard.NewRowBuilder("Gate")).
		WithPanel(stats("Run verdict",
			"The last run's verdict (soakd_run_verdict), worded and coloured as in every report: PASS green, FAIL red, INCONCLUSIVE orange (an interval straddles a limit, or a gated figure was not measured), ABORTED dark red, RUNNING blue.",
			"none",
			instant(outcomeExpr("soakd_run_verdict", sel, "verdict", "job"), "verdict")).
			Mappings(outcomeMappings()).
			ColorMode(common.BigValueColorModeBackground).
			TextMode(common.BigValueTextModeValue).
			Thresholds(thresholds("text")).
			Span(24).
			Height(4)).
		WithPanel(stats("Verdict per KPI",
			"Each gated KPI's outcome in the last run (soakd_kpi_outcome): PASS (green) when its whole confidence interval lay inside its limit, FAIL (red) when wholly beyond, INCONCLUSIVE (orange) when it straddles the limit, NOT MEASURED (purple) when a figure was missing; informational KPIs are not shown.",
			"none",
			instant(outcomeExpr("soakd_kpi_outcome", sel+pick, "outcome", "kpi"), "{{kpi}}")).
			Mappings(outcomeMappings()).
			Thresholds(thresholds("text")).
			ColorMode(common.BigValueColorModeBackground).
			TextMode(common.BigValueTextModeValueAndName).
			Span(24).
			Height(6)).
		WithPanel(tbl("Variance and limit per KPI",
			"Per KPI: GraphQL's variance from REST and the limit on it, as percentages (kind difference: GraphQL - REST of two shares, in points; kind relative: the change relative to REST), and the verdict, as in report.md. Informational KPIs have no limit and no verdict.",
			instant(last("soakd_kpi_delta_ratio", pick), ""),
			instant(last("soakd_kpi_threshold_ratio", pick), ""),
			instant(outcomeExpr("soakd_kpi_outcome", sel+pick, "outcome", "kpi"), "")).
			Unit("percentunit").
			WithTransformation(dashboard.DataTransformerConfig{Id: "joinByField", Options: map[string]any{"byField": "kpi", "mode": "outer"}}).
			WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
				"excludeByName": map[string]bool{"Time 1": true, "Time 2": true, "Time 3": true, "kind 2": true,
					"job 1": true, "job 2": true, "job 3": true, "instance 1": true, "instance 2": true, "instance 3": true},
				"renameByName": map[string]string{"Value #A": "variance", "Value #B": "limit", "Value #C": "verdict", "kind 1": "kind"},
			}}).
			OverrideByName("verdict", []dashboard.DynamicConfigValue{
				{Id: "unit", Value: "none"},
				{Id: "mappings", Value: outcomeMappings()},
				{Id: "custom.cellOptions", Value: map[string]string{"type": "color-background"}},
			}).
			Span(24).
			Height(9)).
		WithRow(dashboard.NewRowBuilder("Figures per arm")).
		WithPanel(figures("ratio", "percentunit", "Shares: CPU and GC time",
			"CPU as a share of the machine and of one core, and GC time as a share of CPU time (soakd_kpi_value_ratio).")).
		WithPanel(figures("requests_per_second", "reqps", "Throughput",
			"Requests completed per second over the steady window (soakd_kpi_value_requests_per_second).")).
		WithPanel(figures("seconds", "s", "Durations: CPU per request and GC pause p99",
			"CPU time per request and the 99th-percentile GC stop-the-world pause (soakd_kpi_value_seconds).")).
		WithPanel(figures("bytes", "bytes", "Heap allocated per request",
			"Heap bytes allocated per request (soakd_kpi_value_bytes)."))
}

func subscriptions() *dashboard.DashboardBuilder {
	last := func(metric string) string {
		return `last_over_time(` + metric + `{` + sel + `}[$__range])`
	}
	return newDashboard("soakd-subscriptions", "soakd: subscriptions",
		"GraphQL subscriptions: websocket connections, the target broker's fan-out (published, delivered, dropped on a full subscriber buffer) and, per finished phase, the driver's exact delivery check.").
		WithRow(dashboard.NewRowBuilder("Live")).
		WithPanel(ts("Websocket connections and subscriptions",
			"Open websocket connections on the target and subscriptions registered on its broker.",
			"short",
			q(`sum by (arm) (soakd_target_websocket_connections{`+sel+`})`, "{{arm}} websockets"),
			q(`soakd_broker_subscribers{`+sel+`}`, "subscriptions"))).
		WithPanel(ts("Broker events per second",
			"Events published (one per mutation), delivered into subscriber buffers and dropped because a buffer was full (a slow subscriber). Drops must stay at 0.",
			"short",
			q(`rate(soakd_broker_published_events_total{`+sel+`}[$__rate_interval])`, "published"),
			q(`rate(soakd_broker_delivered_events_total{`+sel+`}[$__rate_interval])`, "delivered"),
			q(`rate(soakd_broker_dropped_events_total{`+sel+`}[$__rate_interval])`, "dropped")).
			OverrideByName("dropped", []dashboard.DynamicConfigValue{{Id: "color", Value: map[string]string{"mode": "fixed", "fixedColor": "red"}}})).
		WithPanel(ts("Broker drop ratio",
			"Share of the events offered to subscribers that were dropped.",
			"percentunit",
			q(`rate(soakd_broker_dropped_events_total{`+sel+`}[$__rate_interval]) / (rate(soakd_broker_delivered_events_total{`+sel+`}[$__rate_interval]) + rate(soakd_broker_dropped_events_total{`+sel+`}[$__rate_interval]))`, "dropped")).
			Min(0)).
		WithRow(dashboard.NewRowBuilder("Delivery per finished phase")).
		WithPanel(tbl("Events expected and received",
			"For each finished phase with subscriptions: events its subscriptions should have received (from the mutations the driver sent) and received, duplicates included.",
			instant(last("soakd_subscription_expected_events"), ""),
			instant(last("soakd_subscription_received_events"), "")).
			WithTransformation(dashboard.DataTransformerConfig{Id: "joinByField", Options: map[string]any{"byField": "phase", "mode": "outer"}}).
			WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
				"excludeByName": map[string]bool{"Time 1": true, "Time 2": true, "job 1": true, "job 2": true, "instance 1": true, "instance 2": true},
				"renameByName":  map[string]string{"Value #A": "expected", "Value #B": "received"},
			}}).
			Unit("short").
			Span(12).
			Height(8)).
		WithPanel(stats("Lost and duplicated events",
			"Events a finished phase expected and never received, and events received twice or out of order. Both must be 0: red otherwise.",
			"short",
			instant(last("soakd_subscription_lost_events"), "{{phase}} lost"),
			instant(last("soakd_subscription_duplicated_events"), "{{phase}} duplicated")).
			Thresholds(thresholds("green", 1.0, "red")).
			ColorMode(common.BigValueColorModeBackground).
			TextMode(common.BigValueTextModeValueAndName).
			Span(12).
			Height(8))
}

func maxLoad() *dashboard.DashboardBuilder {
	last := func(metric string) string {
		return `last_over_time(` + metric + `{` + sel + `}[$__range])`
	}
	return newDashboard("soakd-max-load", "soakd: max load",
		"Ramping (maximum-load) phases: users added step by step until a failure rule trips (error ratio, p99 latency, connection errors). Where throughput stops growing with users is the knee.").
		WithRow(dashboard.NewRowBuilder("Ramp")).
		WithPanel(ts("Users and throughput",
			"Active virtual users (right axis) against the requests per second the driver completed: throughput flattening while users grow is saturation.",
			"reqps",
			q(`sum by (arm, phase) (rate(soakd_driver_requests_total{`+sel+`}[$__rate_interval]))`, "{{phase}} req/s"),
			q(`sum by (arm, phase) (soakd_driver_active_users{`+sel+`})`, "{{phase}} users")).
			OverrideByRegexp(".* users", []dashboard.DynamicConfigValue{
				{Id: "custom.axisPlacement", Value: "right"},
				{Id: "unit", Value: "short"},
			})).
		WithPanel(ts("Target p99 latency and CPU",
			"The target's 99th-percentile request time by arm and its CPU in cores (right axis).",
			"s",
			q(targetQuantile("0.99", "arm"), "{{arm}} p99"),
			q(cpuCores, "CPU cores")).
			OverrideByName("CPU cores", []dashboard.DynamicConfigValue{
				{Id: "custom.axisPlacement", Value: "right"},
				{Id: "unit", Value: "short"},
			})).
		WithPanel(ts("Driver error ratio",
			"Share of failed requests per phase; a max-load phase stops when its error-ratio rule trips.",
			"percentunit",
			q(`sum by (arm, phase) (rate(soakd_driver_errors_total{`+sel+`}[$__rate_interval])) / sum by (arm, phase) (rate(soakd_driver_requests_total{`+sel+`}[$__rate_interval]))`, "{{phase}}")).
			Min(0)).
		WithRow(dashboard.NewRowBuilder("Outcome per finished phase")).
		WithPanel(stats("Peak sustained throughput",
			"The best sliding window's throughput that broke no rule: the most the target sustained.",
			"reqps",
			instant(last("soakd_max_load_peak_requests_per_second"), "{{phase}}"))).
		WithPanel(stats("Users at the peak",
			"Active users at the end of the peak window.",
			"short",
			instant(last("soakd_max_load_peak_users"), "{{phase}}"))).
		WithPanel(stats("Users at failure",
			"Active users when a failure rule tripped (0: none tripped).",
			"short",
			instant(last("soakd_max_load_users_at_failure"), "{{phase}}"))).
		WithPanel(stats("Failure rule tripped",
			"Whether the phase ended because a failure rule tripped (red) rather than at max users or its duration (green).",
			"none",
			instant(last("soakd_max_load_failed"), "{{phase}}")).
			Mappings([]dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
				Type: dashboard.MappingTypeValueToText,
				Options: map[string]dashboard.ValueMappingResult{
					"0": {Text: cog.ToPtr("no"), Color: cog.ToPtr("green"), Index: cog.ToPtr(int32(0))},
					"1": {Text: cog.ToPtr("tripped"), Color: cog.ToPtr("red"), Index: cog.ToPtr(int32(1))},
				},
			}}}).
			ColorMode(common.BigValueColorModeBackground))
}
