package grafana

import (
	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// DaemonJob is the Prometheus job the daemon dashboard and the alert rules
// (alerts/soakd.rules.yml) select: the scrape of `soakd serve`'s control
// API /metrics, the daemon's own series (package daemonmetrics), apart
// from the target's job Job.
const DaemonJob = "soakd-daemon"

// VarProfile picks the profiles whose runs and change points the daemon
// dashboard shows (a multi-value regex, All is ".*").
const VarProfile = "profile"

// daemonSel is the label matcher every daemon query starts with.
const daemonSel = `job="` + DaemonJob + `", instance=~"$` + VarInstance + `"`

// profileSel narrows a daemon series that carries a profile label.
const profileSel = daemonSel + `, profile=~"$` + VarProfile + `"`

// daemonDashboard is the long-lived daemon at a glance: the run slot, the
// history's size and writability, the last runs' verdicts worded and
// coloured as everywhere else, the change points the history's series
// hold (also as annotations on every panel, at the first run at the new
// level), runs by outcome, their wall time, and the control API's traffic.
func daemonDashboard() *dashboard.DashboardBuilder {
	b := dashboard.NewDashboardBuilder("soakd: daemon").
		WithVariable(promVariable()).
		WithVariable(all(dashboard.NewQueryVariableBuilder(VarInstance)).
			Label("Daemon").
			Description("The soakd serve daemons scraped under job " + DaemonJob + ".").
			Query(dashboard.StringOrMap{String: cog.ToPtr(`label_values(soakd_build_info{job="` + DaemonJob + `"}, instance)`)})).
		WithVariable(all(dashboard.NewQueryVariableBuilder(VarProfile)).
			Label("Profile").
			Description("The profiles whose last runs and change points are shown.").
			Query(dashboard.StringOrMap{String: cog.ToPtr(`label_values(soakd_history_run_started_timestamp_seconds{` + daemonSel + `}, profile)`)}))
	return settings(b, "soakd-daemon",
		"The long-lived soakd serve: its run slot and history, the last runs' verdicts, the change points over the history's runs (annotated on every panel at the first run at the new level) and the control API's traffic. Its series come from the control API's /metrics, scraped as job "+DaemonJob+"; the target's figures are on the other dashboards.").
		Time("now-7d", "now").
		Refresh("1m").
		Annotation(dashboard.NewAnnotationQueryBuilder().
			Name("Change points").
			Datasource(promDS()).
			Enable(true).
			IconColor("#FB8C00").
			// The value is the time: each change point is one series whose
			// value, the start of its first run at the new level, is
			// constant, so Grafana draws one mark at that time.
			Expr(`soakd_history_change_point_timestamp_seconds{` + profileSel + `} * 1000`).
			UseValueForTime(true).
			Step("5m").
			TitleFormat("{{profile}}: {{metric}} changed").
			TextFormat("the first run at the new level: {{run}} (soakd history --profile {{profile}})").
			TagKeys("profile,metric")).
		Annotation(dashboard.NewAnnotationQueryBuilder().
			Name("Runs").
			Datasource(promDS()).
			Enable(true).
			IconColor("#8E8E8E").
			Expr(`soakd_run_in_progress_info{` + profileSel + `}`).
			Step("10s").
			TitleFormat("run of {{profile}}").
			TextFormat("the daemon's run slot held by a run (or soak cycle) of profile {{profile}}").
			TagKeys("profile")).
		WithPanel(stats("Run slot",
			"Whether a run (or a soak's cycle) holds the daemon's run slot now (soakd_run_in_progress): RUNNING in blue, or idle.",
			"none",
			instant(`max(soakd_run_in_progress{`+daemonSel+`})`, "")).
			Mappings(codeMappings([3]string{"0", "idle", "text"}, [3]string{"1", "RUNNING", "blue"})).
			Thresholds(thresholds("text")).
			ColorMode(common.BigValueColorModeBackground)).
		WithPanel(stats("History",
			"Runs the history holds (soakd_history_runs, every status, after retention) and those retention removed since the daemon started (soakd_retention_deletions_total).",
			"none",
			instant(`max(soakd_history_runs{`+daemonSel+`})`, "held"),
			instant(`max(soakd_retention_deletions_total{`+daemonSel+`})`, "removed by retention")).
			TextMode(common.BigValueTextModeValueAndName)).
		WithPanel(stats("History writes",
			"Whether the history takes writes (soakd_read_only): READ-ONLY in red means no run can start until data_dir takes writes and the daemon restarts.",
			"none",
			instant(`max(soakd_read_only{`+daemonSel+`})`, "")).
			Mappings(codeMappings([3]string{"0", "writable", "green"}, [3]string{"1", "READ-ONLY", "red"})).
			Thresholds(thresholds("text")).
			ColorMode(common.BigValueColorModeBackground)).
		WithPanel(stats("Build",
			"The soakd build serving (soakd_build_info): version, vcs commit and Go version.",
			"none",
			instant(`soakd_build_info{`+daemonSel+`}`, "{{version}} ({{commit}}, {{go}})")).
			TextMode(common.BigValueTextModeName)).
		WithPanel(tbl("Last runs",
			"The history's newest runs (at most 20; soakd_history_run_started_timestamp_seconds), newest first: start, id, profile, verdict worded and coloured as in every report (PASS green, FAIL red, INCONCLUSIVE orange, ABORTED dark red, RUNNING blue; UNREADABLE grey: no readable report.json) and whether it is the baseline. `soakd status ID` or the daemon's web page says why.",
			instant(`soakd_history_run_started_timestamp_seconds{`+profileSel+`} * 1000`, "")).
			Unit("none").
			WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
				"excludeByName": map[string]bool{"Time": true, "job": true, "instance": true, "__name__": true},
				"indexByName":   map[string]int{"Value": 0, "run": 1, "profile": 2, "verdict": 3, "baseline": 4},
				"renameByName":  map[string]string{"Value": "started"},
			}}).
			OverrideByName("started", []dashboard.DynamicConfigValue{{Id: "unit", Value: "dateTimeAsIso"}}).
			OverrideByName("verdict", []dashboard.DynamicConfigValue{
				{Id: "mappings", Value: verdictTextMappings()},
				{Id: "custom.cellOptions", Value: map[string]string{"type": "color-background"}},
			}).
			SortBy(newestFirst("started")).
			Span(14).
			Height(11)).
		WithPanel(bargauge.NewPanelBuilder().
			Title("Runs by outcome").
			Description("Runs (API runs and soak cycles) that finished in the time range, by outcome (increase of soakd_runs_total; the counter restarts with the daemon, which increase() copes with).").
			Datasource(promDS()).
			Unit("none").
			Decimals(0).
			WithTarget(instant(`sum by (outcome) (increase(soakd_runs_total{`+daemonSel+`}[$__range]))`, "{{outcome}}")).
			Orientation(common.VizOrientationHorizontal).
			DisplayMode(common.BarGaugeDisplayModeBasic).
			ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
			Thresholds(thresholds("blue")).
			OverrideByName("pass", colour("green")).
			OverrideByName("fail", colour("red")).
			OverrideByName("inconclusive", colour("orange")).
			OverrideByName("aborted", colour("dark-red")).
			Min(0).
			Span(10).
			Height(6)).
		WithPanel(stats("Run wall time",
			"The median and 90th percentile of the wall time of the runs that finished in the time range, start to end (soakd_run_duration_seconds' buckets: 1 s to 8 h).",
			"s",
			instant(`histogram_quantile(0.5, sum by (le) (increase(soakd_run_duration_seconds_bucket{`+daemonSel+`}[$__range])))`, "median"),
			instant(`histogram_quantile(0.9, sum by (le) (increase(soakd_run_duration_seconds_bucket{`+daemonSel+`}[$__range])))`, "p90")).
			TextMode(common.BigValueTextModeValueAndName).
			Span(10).
			Height(5)).
		WithPanel(tbl("Change points",
			"Every change point the daemon finds in a profile's series of a followed figure over the history's complete runs (E-Divisive means with a t-test, as GET /v1/history/changes and soakd history): the figure, the first run at the new level and its start, and the step over the mean before (absent when that mean is 0). The annotation of the same name marks each on every panel.",
			instant(`soakd_history_change_point_timestamp_seconds{`+profileSel+`} * 1000`, ""),
			instant(`soakd_history_change_point_relative{`+profileSel+`}`, "")).
			Unit("none").
			WithTransformation(dashboard.DataTransformerConfig{Id: "merge", Options: map[string]any{}}).
			WithTransformation(dashboard.DataTransformerConfig{Id: "organize", Options: map[string]any{
				"excludeByName": map[string]bool{"Time": true, "job": true, "instance": true, "__name__": true},
				"indexByName":   map[string]int{"Value #A": 0, "profile": 1, "metric": 2, "run": 3, "Value #B": 4},
				"renameByName":  map[string]string{"Value #A": "first run at the new level", "Value #B": "step", "run": "run"},
			}}).
			OverrideByName("first run at the new level", []dashboard.DynamicConfigValue{{Id: "unit", Value: "dateTimeAsIso"}}).
			OverrideByName("step", []dashboard.DynamicConfigValue{{Id: "unit", Value: "percentunit"}, {Id: "decimals", Value: 1}}).
			SortBy(newestFirst("first run at the new level")).
			Span(24).
			Height(8)).
		WithPanel(ts("Control API requests",
			"Control API requests per second by HTTP status code (soakd_api_requests_total): the CLI, the web page, schedules' callers and the Prometheus scrape itself.",
			"reqps",
			q(`sum by (code) (rate(soakd_api_requests_total{`+daemonSel+`}[$__rate_interval]))`, "{{code}}"))).
		WithPanel(ts("Control API refusals by route",
			"Control API answers of 4xx and 5xx per second, by route pattern and code: a 401 burst is a client with a wrong token, a 409 a run refused while another holds the slot, any 5xx a daemon fault worth its log.",
			"reqps",
			q(`sum by (route, code) (rate(soakd_api_requests_total{`+daemonSel+`, code=~"[45].."}[$__rate_interval]))`, "{{code}} {{route}}")))
}

// newestFirst sorts a table by field, descending.
func newestFirst(field string) []cog.Builder[common.TableSortByFieldState] {
	return []cog.Builder[common.TableSortByFieldState]{common.NewTableSortByFieldStateBuilder().DisplayName(field).Desc(true)}
}

// colour is a field override giving a fixed colour.
func colour(c string) []dashboard.DynamicConfigValue {
	return []dashboard.DynamicConfigValue{{Id: "color", Value: map[string]string{"mode": "fixed", "fixedColor": c}}}
}

// codeMappings maps values (as text) to a word and a colour: pairs of
// value and "word/colour", in the order Grafana's editor lists them.
func codeMappings(pairs ...[3]string) []dashboard.ValueMapping {
	opts := map[string]dashboard.ValueMappingResult{}
	for i, p := range pairs {
		opts[p[0]] = dashboard.ValueMappingResult{Text: cog.ToPtr(p[1]), Color: cog.ToPtr(p[2]), Index: cog.ToPtr(int32(i))}
	}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}}
}

// verdictTextMappings maps the history's verdict words (the label of
// soakd_history_run_started_timestamp_seconds) to the words and colours
// of the outcome codes, and unreadable to a grey UNREADABLE.
func verdictTextMappings() []dashboard.ValueMapping {
	opts := map[string]dashboard.ValueMappingResult{}
	for i, o := range outcomeCodes() {
		opts[o.label] = dashboard.ValueMappingResult{Text: cog.ToPtr(o.text), Color: cog.ToPtr(o.color), Index: cog.ToPtr(int32(i))}
	}
	opts["unreadable"] = dashboard.ValueMappingResult{Text: cog.ToPtr("UNREADABLE"), Color: cog.ToPtr("#8E8E8E"), Index: cog.ToPtr(int32(len(opts)))}
	return []dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}}
}
