package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/progress"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/termtext"
)

// client is what a control API command needs: the API client and where the
// API is, for messages.
type client struct {
	*api.Client
}

// clientFlags adds --api and --config to cmd and returns a function that
// builds the control API client from them: --api (default: the config's
// api.listen) and the token in SOAKD_CONTROL_TOKEN or api.token.
func (c *cli) clientFlags(cmd *cobra.Command) func() (client, error) {
	var configPath, base string
	configFlagUsage(cmd, &configPath, "YAML file decoded on top of the embedded config.yaml (for api.listen and api.token)")
	apiFlag(cmd, &base)
	return func() (client, error) {
		cfg, err := c.loadConfig(configPath)
		if err != nil {
			return client{}, err
		}
		c.warn(nil, cfg.Warnings)
		return newClient(cfg, base)
	}
}

// apiFlag adds --api to cmd.
func apiFlag(cmd *cobra.Command, base *string) {
	cmd.Flags().StringVar(base, "api", "", "control API base URL (default: http://<api.listen>)")
}

// newClient builds the control API client at base (default: the config's
// api.listen) with the token in SOAKD_CONTROL_TOKEN or api.token.
func newClient(cfg *config.Config, base string) (client, error) {
	if base == "" {
		base = "http://" + cfg.API.Listen
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return client{}, exitcode.Usagef("--api must be an http:// or https:// URL such as http://127.0.0.1:7070 (got %q)", base)
	}
	token := cfg.API.Token
	if env := os.Getenv(config.TokenEnv); env != "" {
		token = env
	}
	return client{&api.Client{BaseURL: base, Token: token, HTTP: &http.Client{Timeout: clientTimeout}}}, nil
}

// clientCommand builds a control API client command: its --api and
// --config flags, and run called with the client they give.
func (c *cli) clientCommand(use, short string, args cobra.PositionalArgs, run func(ctx context.Context, cl client, args []string) error) *cobra.Command {
	cmd := &cobra.Command{Use: use, DisableFlagsInUseLine: true, Short: short, Args: args}
	newClient := c.clientFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		cl, err := newClient()
		if err != nil {
			return err
		}
		return run(cmd.Context(), cl, args)
	}
	return cmd
}

// clientTimeout bounds each control API call of the client commands: the
// API answers from memory and disk, so a daemon that takes longer is stuck
// or unreachable.
const clientTimeout = 30 * time.Second

// clientError gives a control API error the exit code of its kind
// (docs/operations.md, "Exit codes"): unreachable 5, refused token 6, unknown run 7, a run
// already in progress 8, the daemon unable to record runs now (503) 9, a
// request the daemon refused as invalid 2.
func (cl client) clientError(err error) error {
	if err == nil {
		return nil
	}
	if ae, ok := errors.AsType[*api.APIError](err); ok {
		switch {
		case ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden:
			return exitcode.With(exitcode.Unauthorized, fmt.Errorf("%w (set SOAKD_CONTROL_TOKEN or api.token to the daemon's token)", err))
		case ae.Status == http.StatusNotFound:
			return exitcode.With(exitcode.NotFound, err)
		case ae.RunningID != "":
			return exitcode.With(exitcode.Busy, err)
		case ae.Status == http.StatusServiceUnavailable:
			return exitcode.With(exitcode.Unavailable, err)
		case ae.Status == http.StatusBadRequest || ae.Status == http.StatusConflict:
			return exitcode.With(exitcode.Usage, err)
		}
		return err
	}
	if _, ok := errors.AsType[*url.Error](err); ok {
		return exitcode.With(exitcode.Unreachable, fmt.Errorf("%w (is soakd serve running there? set --api or api.listen)", err))
	}
	return err
}

func (c *cli) runsCmd() *cobra.Command {
	return c.clientCommand("runs [--api URL]", "List the runs a soakd serve knows, newest first", exactArgs(0, "no arguments"), func(ctx context.Context, cl client, _ []string) error {
		runs, err := cl.List(ctx)
		if err != nil {
			return cl.clientError(err)
		}
		// A daemon older than GET /v1/schedules answers 404: it has none.
		schedules, err := cl.Schedules(ctx)
		if err != nil && !errors.Is(err, api.ErrNotFound) {
			return cl.clientError(err)
		}
		if err := printSchedules(c.stdout, schedules); err != nil {
			return err
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tPROFILE\tSTATUS\tVERDICT\tSTARTED\tBASELINE")
		for _, r := range runs {
			base := ""
			if r.Baseline {
				base = "baseline"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Profile, r.Status, r.Verdict, r.StartedAt.Format(time.RFC3339), base)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		cl.readOnlyNote(ctx, c.stdout)
		return nil
	})
}

// printSchedules prints, when there are any, a line per schedule (name,
// cron, profile, next slot, last outcome), then a line per missed or
// skipped slot among each one's recent ones, newest first, and a blank
// line before the runs.
func printSchedules(w io.Writer, schedules []api.Schedule) error {
	if len(schedules) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCHEDULE\tCRON\tPROFILE\tNEXT\tLAST")
	for _, s := range schedules {
		last := "none yet"
		if len(s.Recent) > 0 {
			last = slotLine(s.Recent[0])
		}
		if s.Pending {
			last += "; a slot is pending"
		}
		fmt.Fprintf(tw, "%s\t%s (%s)\t%s\t%s\t%s\n", s.Name, s.Cron, s.Timezone, s.Profile, s.Next.Format(time.RFC3339), last)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range schedules {
		for _, r := range s.Recent {
			if r.Outcome != api.SlotStarted {
				fmt.Fprintf(w, "schedule %s: %s\n", s.Name, slotLine(r))
			}
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// slotLine is one slot's outcome: "missed 2026-11-29T02:00:00+01:00:
// daemon not running", "started 2026-11-30T02:00:00+01:00 (run ID)".
func slotLine(r api.SlotOutcome) string {
	line := r.Outcome + " " + r.Slot.Format(time.RFC3339)
	if r.Run != "" {
		line += " (run " + r.Run + ")"
	}
	if r.Reason != "" {
		line += ": " + r.Reason
	}
	return line
}

// readOnlyNote prints why the daemon's history is read-only, when it is.
// A daemon that cannot say (an older one, without /v1/history) gets no
// note: the command's own answer has already been printed.
func (cl client) readOnlyNote(ctx context.Context, w io.Writer) {
	if h, err := cl.History(ctx); err == nil && h.ReadOnly {
		fmt.Fprintf(w, "history is read-only, no run can start: %s\n", h.Reason)
	}
}

// pickRun returns the id given, or else the running run (for stop) or the
// newest run (for status): none to show exits 7 (NotFound), none running
// to stop 2.
func (cl client) pickRun(ctx context.Context, args []string, running bool) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	runs, err := cl.List(ctx)
	if err != nil {
		return "", cl.clientError(err)
	}
	for _, r := range runs {
		if !running || r.Status == "running" {
			return r.ID, nil
		}
	}
	if running {
		return "", exitcode.Usagef("no run is in progress")
	}
	// Not bad usage (2): the command was right, the daemon simply has no
	// run to show, as a 404 for an id would say (7).
	return "", exitcode.With(exitcode.NotFound, errors.New("the daemon has no run yet: start one with `soakd start`"))
}

func (c *cli) statusCmd() *cobra.Command {
	return c.clientCommand("status [ID] [--api URL]", "Show a run (default: the newest) with its KPI table and reasons", maxArgs(1, "one run id"), func(ctx context.Context, cl client, args []string) error {
		id, err := cl.pickRun(ctx, args, false)
		if err != nil {
			return err
		}
		_, err = cl.show(ctx, c.stdout, id)
		return err
	})
}

// show prints run id's summary and, once it has one, its KPI table with
// every reason; it returns the summary.
func (cl client) show(ctx context.Context, w io.Writer, id string) (api.RunSummary, error) {
	r, raw, err := cl.Get(ctx, id)
	if err != nil {
		return api.RunSummary{}, cl.clientError(err)
	}
	fmt.Fprintf(w, "run %s (%s): %s, verdict %q, started %s, dir %s\n", r.ID, r.Profile, r.Status, r.Verdict, r.StartedAt.Format(time.RFC3339), r.Dir)
	if r.Reason != "" {
		fmt.Fprintf(w, "  reason: %s\n", r.Reason)
	}
	var rep report.Report
	if raw != nil && json.Unmarshal(raw, &rep) == nil && len(rep.KPIs) > 0 {
		if err := rep.Table(w); err != nil { // the table ends with every reason
			return r, err
		}
	} else {
		for _, why := range r.Reasons {
			fmt.Fprintf(w, "  - %s\n", why)
		}
	}
	cl.readOnlyNote(ctx, w)
	return r, nil
}

func (c *cli) stopCmd() *cobra.Command {
	return c.clientCommand("stop [ID] [--api URL]", "Stop a run gracefully (default: the one in progress)", maxArgs(1, "one run id"), func(ctx context.Context, cl client, args []string) error {
		id, err := cl.pickRun(ctx, args, true)
		if err != nil {
			return err
		}
		if err := cl.Stop(ctx, id); err != nil {
			return cl.clientError(err)
		}
		fmt.Fprintf(c.stdout, "stopping run %s\n", id)
		return nil
	})
}

func (c *cli) baselineCmd() *cobra.Command {
	return c.clientCommand("baseline ID [--api URL]", "Mark a run as the baseline retention keeps", exactArgs(1, "one run id"), func(ctx context.Context, cl client, args []string) error {
		if err := cl.SetBaseline(ctx, args[0]); err != nil {
			return cl.clientError(err)
		}
		fmt.Fprintf(c.stdout, "run %s is the baseline\n", args[0])
		return nil
	})
}

func (c *cli) startCmd() *cobra.Command {
	var profile, overridesFile string
	var sets []string
	var wait bool
	var poll time.Duration
	cmd := &cobra.Command{
		Use:                   "start [--profile NAME] [--set KEY=VALUE]... [--overrides FILE] [--wait] [--api URL]",
		DisableFlagsInUseLine: true,
		Short:                 "Start a run on a soakd serve; with --wait, exit with its verdict",
		Long: `Start a run on a running soakd serve and print its id.

--set KEY=VALUE overrides one configuration key for this run only, the key a
dotted path as in config.yaml and the value YAML (so numbers, booleans and
durations keep their types): --set kpis.cpu_increase_points=7. --overrides
FILE gives a YAML document of overrides; --set entries apply on top of it.
The daemon refuses keys a running target cannot honour, naming each.

--wait polls the run until it ends, prints its KPI table and exits with its
verdict's code, as soakd run does: a CI job can gate on a daemon.`,
		Args: exactArgs(0, "no arguments"),
	}
	newClient := c.clientFlags(cmd)
	cmd.Flags().StringVar(&profile, "profile", "", "profile to run (default: the daemon's default_profile)")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override KEY=VALUE for this run (repeatable), e.g. --set kpis.cpu_increase_points=7")
	cmd.Flags().StringVar(&overridesFile, "overrides", "", "YAML file of overrides for this run")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the run to end and exit with its verdict")
	cmd.Flags().DurationVar(&poll, "poll", 2*time.Second, "with --wait, how often to ask for the run's status")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		var doc []byte
		if overridesFile != "" {
			b, err := config.ReadFile("--overrides", overridesFile)
			if err != nil {
				return err
			}
			doc = b
		}
		overrides, err := config.MergeOverrides(doc, sets)
		if err != nil {
			return err
		}
		if poll <= 0 {
			return exitcode.Usagef("--poll must be positive (got %s)", poll)
		}
		cl, err := newClient()
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		sum, err := cl.Start(ctx, api.StartRequest{Profile: profile, Overrides: overrides})
		if err != nil {
			return cl.clientError(err)
		}
		fmt.Fprintf(c.stdout, "started run %s (profile %s)\n", sum.ID, sum.Profile)
		if !wait {
			return nil
		}
		return cl.wait(ctx, c.stdout, c.stderr, sum.ID, poll)
	}
	return cmd
}

// wait polls run id every poll until it is no longer running, then prints
// it and returns its verdict as an exit code. Meanwhile it writes to
// progress a line per phase the run finished since the last poll (the
// phases of its report.json, which the daemon rewrites after each), and
// at most every heartbeatEvery a line saying it still runs.
func (cl client) wait(ctx context.Context, w, progress io.Writer, id string, poll time.Duration) error {
	t := time.NewTicker(poll)
	defer t.Stop()
	shown, lastLine := 0, time.Now()
	for {
		r, rep, err := cl.Get(ctx, id)
		if err != nil {
			return cl.clientError(err)
		}
		done := finishedPhases(rep)
		for _, d := range done[min(shown, len(done)):] {
			fmt.Fprintln(progress, progressLine(d))
			lastLine = time.Now()
		}
		shown = max(shown, len(done))
		if r.Status != "running" {
			break
		}
		if time.Since(lastLine) >= heartbeatEvery {
			fmt.Fprintf(progress, "run %s: running, %d phases done, %s since it started\n", id, shown, termtext.Duration(time.Since(r.StartedAt)))
			lastLine = time.Now()
		}
		select {
		case <-ctx.Done():
			return exitcode.With(exitcode.Aborted, fmt.Errorf("stopped waiting for run %s (it goes on; soakd stop %s ends it): %w", id, id, ctx.Err()))
		case <-t.C:
		}
	}
	r, err := cl.show(ctx, w, id)
	if err != nil {
		return err
	}
	return verdictError(r.Verdict)
}

// heartbeatEvery is the longest `soakd start --wait` stays silent while a
// phase runs.
const heartbeatEvery = 30 * time.Second

// finishedPhases are the finished phases of a report.json (nil when there
// is none or it does not decode), as the progress view's lines.
func finishedPhases(rep json.RawMessage) []progress.Done {
	if len(rep) == 0 {
		return nil
	}
	var r struct {
		Phases []struct {
			Name            string  `json:"name"`
			Requests        int64   `json:"requests"`
			Errors          int64   `json:"errors"`
			ThroughputRPS   float64 `json:"throughput_rps"`
			DurationSeconds float64 `json:"duration_seconds"`
			Aborted         bool    `json:"aborted"`
			LatencyMs       struct {
				P99 float64 `json:"p99"`
			} `json:"latency_ms"`
		} `json:"phases"`
	}
	if json.Unmarshal(rep, &r) != nil {
		return nil
	}
	out := make([]progress.Done, len(r.Phases))
	for i, p := range r.Phases {
		out[i] = progress.Done{Name: p.Name, Requests: p.Requests, Errors: p.Errors, RPS: p.ThroughputRPS, P99Ms: p.LatencyMs.P99,
			Elapsed: time.Duration(p.DurationSeconds * float64(time.Second)), Interrupted: p.Aborted}
	}
	return out
}

// progressLine is a finished phase's line, as soakd run prints it without
// a terminal.
func progressLine(d progress.Done) string { return progress.DoneLine(d, 1<<20) }
