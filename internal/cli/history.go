package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/soakd/soakd/internal/api"
)

// historyCmd is `soakd history`: one profile's series of one figure across
// the daemon's runs, with its change points marked.
func (c *cli) historyCmd() *cobra.Command {
	var profile, metric string
	cmd := c.clientCommand("history [--profile P] [--metric M] [--api URL]",
		"Show a profile's figure across the daemon's runs with its change points", exactArgs(0, "no arguments"),
		func(ctx context.Context, cl client, _ []string) error {
			h, err := cl.Changes(ctx, profile, metric)
			if err != nil {
				return cl.clientError(err)
			}
			return printHistory(c.stdout, h)
		})
	cmd.Flags().StringVar(&profile, "profile", "", "the profile whose runs make the series (default: the daemon's default_profile)")
	cmd.Flags().StringVar(&metric, "metric", "", "the figure: a KPI name, then .graphql (the default), .rest or .delta (default: "+api.DefaultChangesMetric+")")
	return cmd
}

// printHistory writes h as a table, oldest run first, with a CHANGE column
// on each run where a change point puts the new level.
func printHistory(w io.Writer, h api.HistoryChanges) error {
	fmt.Fprintf(w, "profile %s, %s (%s): %d complete runs, %d change points (at least %d runs a side, level %g)\n",
		h.Profile, h.Metric, h.Unit, len(h.Runs), len(h.Changes), h.MinRuns, h.Level)
	at := map[int]api.ChangePoint{}
	for _, cp := range h.Changes {
		at[cp.Index] = cp
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTARTED\tVERDICT\tVALUE\tCHANGE")
	for i, r := range h.Runs {
		value := "not measured"
		if r.Value != nil {
			value = strconv.FormatFloat(*r.Value, 'g', 4, 64)
		}
		change := ""
		if cp, ok := at[i]; ok {
			change = changeText(cp, h.Unit)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.StartedAt.Format(time.RFC3339), r.Verdict, value, change)
	}
	return tw.Flush()
}

// changeText words one change point: its direction, relative and absolute
// step, the levels either side and its p-value.
func changeText(cp api.ChangePoint, unit string) string {
	arrow := "▲"
	if cp.Step < 0 {
		arrow = "▼"
	}
	rel := "n/a (from 0)"
	if cp.Relative != nil {
		rel = fmt.Sprintf("%+.1f %%", 100**cp.Relative)
	}
	return fmt.Sprintf("%s %s (%+.4g %s: %.4g → %.4g), p = %.2g", arrow, rel, cp.Step, unit, cp.Before, cp.After, cp.PValue)
}
