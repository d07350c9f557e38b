package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/soakd/soakd/kpi"
)

// value formats a metric value with its unit.
func value(v float64, unit string) string {
	switch unit {
	case "%":
		return fmt.Sprintf("%.2f %%", v)
	case "req/s":
		return fmt.Sprintf("%.0f req/s", v)
	case "µs":
		return fmt.Sprintf("%.1f µs", v)
	case "B":
		return fmt.Sprintf("%.0f B", v)
	case "ms":
		return fmt.Sprintf("%.3f ms", v)
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}

func variance(r kpi.Result) string {
	if r.Delta == nil {
		return "n/a (REST is 0)"
	}
	if r.DeltaUnit == "points" {
		return fmt.Sprintf("%+.2f points", *r.Delta)
	}
	return fmt.Sprintf("%+.1f %%", *r.Delta)
}

func limit(r kpi.Result) string {
	if !r.Gated {
		return "—"
	}
	t := *r.Threshold
	switch {
	case r.Name == "throughput_rps":
		return fmt.Sprintf("≥ %.0f %%", t)
	case r.DeltaUnit == "points":
		return fmt.Sprintf("≤ +%g points", t)
	default:
		return fmt.Sprintf("≤ +%g %%", t)
	}
}

func outcome(r kpi.Result) string {
	switch {
	case !r.Gated:
		return "info"
	case r.Pass:
		return "pass"
	default:
		return "FAIL"
	}
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// Markdown renders report.md: seed 002's table with each definition, the
// phases, errors and notes.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# soakd report %s\n\n", r.Run)
	fmt.Fprintf(&b, "Profile **%s**: %s.  \n", r.Profile, r.Description)
	fmt.Fprintf(&b, "Status: %s. **Verdict: %s**", r.Status, strings.ToUpper(r.Verdict))
	if r.Error != "" {
		fmt.Fprintf(&b, " (%s)", r.Error)
	}
	b.WriteString("\n\n")

	b.WriteString("## GraphQL compared with the REST control group\n\n")
	if len(r.KPIs) == 0 {
		b.WriteString("No KPIs were evaluated: the run did not reach the end of both arms.\n\n")
	} else {
		fmt.Fprintf(&b, "REST phase `%s`, GraphQL phase `%s`, each over its steady window. Variance is GraphQL − REST, in points for percentages and in percent of REST otherwise.\n\n", r.Compare.REST, r.Compare.GraphQL)
		b.WriteString("| Metric | REST | GraphQL | Variance | KPI | Result |\n|---|---:|---:|---:|---:|---|\n")
		for _, k := range r.KPIs {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", k.Title, value(k.REST, k.Unit), value(k.GraphQL, k.Unit), variance(k), limit(k), outcome(k))
		}
		b.WriteString("\nDefinitions:\n\n")
		for _, k := range r.KPIs {
			fmt.Fprintf(&b, "- **%s** (`%s`): %s.\n", k.Title, k.Name, k.Definition)
		}
		b.WriteString("\n")
	}

	b.WriteString("## Phases\n\n")
	b.WriteString("| Phase | Arm | Driver PID | Requests | Errors | Throughput | p50 | p90 | p99 | max | CPU (machine) | GC % | GC cycles | GC pause p99 | Heap live max | RSS max |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, p := range r.Phases {
		l := p.LatencyMs
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %.0f req/s | %.2f ms | %.2f ms | %.2f ms | %.2f ms |",
			p.Name, p.Arm, p.DriverPID, p.Requests, p.Errors, p.ThroughputRPS, l.P50, l.P90, l.P99, l.Max)
		if s := p.Resources; s != nil {
			fmt.Fprintf(&b, " %.2f %% | %.2f %% | %d | %.3f ms | %s | %s |\n", s.CPUMachinePercent, s.GCPercent, s.GCCycles, s.GCPauseP99Ms, mib(s.HeapLiveBytesMax), mib(s.RSSBytesMax))
		} else {
			b.WriteString(" — | — | — | — | — | — |\n")
		}
	}
	b.WriteString("\nPer request (steady window; target rate ÷ throughput):\n\n")
	b.WriteString("| Phase | CPU | Heap allocated | Objects allocated | GC cycles per 10k requests |\n|---|---:|---:|---:|---:|\n")
	for _, p := range r.Phases {
		pr := p.PerRequest
		fmt.Fprintf(&b, "| %s | %.1f µs | %.0f B | %.1f | %.2f |\n", p.Name, pr.CPUMicros, pr.AllocBytes, pr.AllocObjects, pr.GCCyclesPer10kReq)
	}
	b.WriteString("\n")
	for _, p := range r.Phases {
		if p.Errors == 0 && p.ResourcesError == "" && p.SteadyFallback == "" {
			continue
		}
		fmt.Fprintf(&b, "### %s: problems\n\n", p.Name)
		if p.ResourcesError != "" {
			fmt.Fprintf(&b, "- Resources could not be summarised: %s\n", p.ResourcesError)
		}
		if p.SteadyFallback != "" {
			fmt.Fprintf(&b, "- No steady window (%s); figures cover the whole phase.\n", p.SteadyFallback)
		}
		for _, class := range slices.Sorted(maps.Keys(p.ErrorsByClass)) {
			fmt.Fprintf(&b, "- %s: %d", class, p.ErrorsByClass[class])
			if ex := p.ErrorExamples[class]; len(ex) > 0 {
				fmt.Fprintf(&b, " (e.g. %q)", ex[0])
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
	if len(r.Notes) > 0 {
		b.WriteString("## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Target PID %d on %d cores (GOMAXPROCS %d), %s %s/%s, soakd %s. Sampler interval %gs.\n",
		r.TargetPID, r.Host.Cores, r.Host.GOMAXPROCS, r.Host.GoVersion, r.Host.OS, r.Host.Arch, r.Host.Soakd, r.SamplerIntervalSeconds)
	return b.String()
}

// Table writes the KPI table and the verdict for a terminal.
func (r *Report) Table(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Metric\tREST\tGraphQL\tVariance\tKPI\tResult")
	for _, k := range r.KPIs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.Title, value(k.REST, k.Unit), value(k.GraphQL, k.Unit), variance(k), limit(k), outcome(k))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("cannot write the table: %w", err)
	}
	verdict := fmt.Sprintf("verdict: %s", strings.ToUpper(r.Verdict))
	if r.Error != "" {
		verdict += " (" + r.Error + ")"
	}
	_, err := fmt.Fprintln(w, verdict)
	return err
}
