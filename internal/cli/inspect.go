package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/run"
	"github.com/soakd/soakd/internal/buildinfo"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
)

func (c *cli) configCmd() *cobra.Command {
	var configPath string
	var all bool
	cmd := &cobra.Command{
		Use:                   "config [--config FILE] [--all]",
		DisableFlagsInUseLine: true,
		Short:                 "Validate the configuration and print what it sets",
		Long: `Validate the configuration and print, as YAML on standard output, what --config
sets that differs from the embedded config.yaml (a profile or an operation it
changes, whole), or with --all the whole effective configuration: either is a
document soakd accepts as --config and reads back as the same configuration.
api.token is printed as <redacted>.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			cfg, err := c.loadConfig(configPath)
			if err != nil {
				return err
			}
			c.warn(nil, cfg.Warnings)
			source := "the embedded config.yaml"
			if configPath != "" {
				source += " with " + configPath + " on top"
			}
			var out []byte
			what := "effective configuration"
			if all {
				out, err = config.EffectiveYAML(cfg)
			} else {
				var base *config.Config
				if base, err = c.loadConfig(""); err != nil {
					return err
				}
				out, err = config.ChangedYAML(base, cfg)
				what = "what differs from the embedded config.yaml (--all prints everything)"
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "# soakd %s: %s (%s); valid; default profile %q\n", buildinfo.Version(), what, source, cfg.DefaultProfile)
			_, err = c.stdout.Write(out)
			return err
		},
	}
	configFlag(cmd, &configPath)
	cmd.Flags().BoolVar(&all, "all", false, "print the whole effective configuration, defaults included")
	return cmd
}

func (c *cli) reportCmd() *cobra.Command {
	return &cobra.Command{
		Use:                   "report DIR|FILE|-",
		DisableFlagsInUseLine: true,
		Short:                 "Re-render a run's reports from report.json (exit with its verdict), or render a driver's output",
		Long: `Given a run directory, re-render its reports from report.json, print its KPI
table and exit with its verdict. Given a file of a driver's JSON lines (soakd
drive's output), or - for standard input, print its result for people:
requests, errors, throughput, latency percentiles, per operation, errors by
class, subscriptions; exit 0 with a result, 3 without one.`,
		Args: exactArgs(1, "one run directory, or a driver's output file (- for standard input)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if st, err := os.Stat(dir); dir == "-" || err == nil && !st.IsDir() {
				return c.driverReport(cmd.Context(), dir)
			}
			rep, err := report.Read(filepath.Join(dir, report.JSONFile))
			if err != nil {
				return exitcode.With(exitcode.Usage, err)
			}
			var samples *report.Samples
			if s, err := report.ReadSamples(filepath.Join(dir, report.SamplesFile)); err == nil {
				samples = s
			} else if !errors.Is(err, os.ErrNotExist) {
				return exitcode.With(exitcode.Usage, err)
			}
			if err := rep.Write(dir, samples); err != nil {
				return err
			}
			if err := rep.Table(c.stdout); err != nil {
				return err
			}
			return verdictError(rep.Verdict)
		},
	}
}

// driverReport prints the driver output in path (- for standard input):
// exit 0 with a result, 3 (aborted) without one, 2 when it is not a
// driver's output.
func (c *cli) driverReport(ctx context.Context, path string) error {
	var in io.Reader = os.Stdin // as soakd drive --spec - reads it
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return exitcode.With(exitcode.Usage, err)
		}
		defer f.Close()
		in = f
	}
	out, err := report.ReadDriverOutput(ctx, in)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("%s is not a driver's output (soakd drive's JSON lines): %w", path, err))
	}
	if err := report.WriteDriverText(c.stdout, out); err != nil {
		return err
	}
	if out.Result == nil {
		return exitcode.With(exitcode.Aborted, errors.New("the driver's output holds no result"))
	}
	return nil
}

// Output formats of soakd compare.
const (
	formatText     = "text"
	formatJSON     = "json"
	formatJUnit    = "junit"
	formatMarkdown = "markdown"
)

func (c *cli) compareCmd() *cobra.Command {
	var configPath, base, format string
	cmd := &cobra.Command{
		Use:                   "compare [--config FILE] [--format text|json|junit|markdown] [--api URL] OLD NEW",
		DisableFlagsInUseLine: true,
		Short:                 "Compare two runs metric by metric; exit 0, 1 or 4",
		Long: `Compare two runs metric by metric and exit 0 (pass), 1 (fail) or 4
(inconclusive).

OLD and NEW are each a run directory, a report.json file, or the id of a run
of a soakd serve, fetched from its control API (--api, default
http://<api.listen>); "baseline" names the run the daemon keeps as its
baseline (soakd baseline ID marks it). An argument that names a file or a
directory is read from disk.

--format text (the default) prints the table for a terminal; json one
document (schemas/compare.schema.json); junit a junit.xml for CI servers;
markdown a section for a pull request.`,
		Args: exactArgs(2, "two runs: OLD NEW (run directories, report.json files, run ids of a soakd serve, or baseline)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			cfg, err := c.loadConfig(configPath)
			if err != nil {
				return err
			}
			c.warn(nil, cfg.Warnings)
			var reps [2]*report.Report
			for i, arg := range args {
				if reps[i], err = c.compareInput(cmd.Context(), cfg, base, arg); err != nil {
					return err
				}
			}
			lim := cfg.Compare.Limits()
			lim.Confidence = cfg.KPIs.Confidence
			cmp := report.CompareRuns(reps[0], reps[1], lim)
			if report.DuetRuns(reps[0], reps[1]) {
				// The sides of one duet session: its simultaneous
				// seconds are in the session's directory, beside both.
				secs, ok, err := duetSecondsBeside(args[0], args[1], reps[1].AB.Session)
				if err != nil {
					return exitcode.With(exitcode.Usage, err)
				}
				if ok {
					cmp = report.CompareDuet(reps[0], reps[1], lim, secs)
				} else {
					cmp.Notes = append(cmp.Notes, fmt.Sprintf("Duet session %s's simultaneous seconds (%s in the session's directory, beside old/ and new/) were not found: GraphQL CPU per request is judged from its rounds only, not as the session judged it.", reps[1].AB.Session, report.DuetSecondsFile))
				}
			}
			if dirs, ok := runDirs(args[0], args[1]); ok {
				cmp.Attach(run.Attribution(cfg, dirs[0], dirs[1], reps[0], reps[1]))
			}
			if err := writeComparison(c.stdout, cmp, format); err != nil {
				return err
			}
			return verdictError(cmp.Verdict)
		},
	}
	configFlagUsage(cmd, &configPath, "YAML file decoded on top of the embedded config.yaml (for the compare: limits, and api.listen and api.token for run ids)")
	apiFlag(cmd, &base)
	cmd.Flags().StringVar(&format, "format", formatText, "output: text (a table), json, junit (junit.xml) or markdown")
	return cmd
}

// runDirs are the run directories of two compare arguments given on disk
// (a run directory, or its report.json); ok is false when either is not.
func runDirs(old, new string) (dirs [2]string, ok bool) {
	for i, arg := range []string{old, new} {
		st, err := os.Stat(arg)
		if err != nil {
			return dirs, false
		}
		dirs[i] = arg
		if !st.IsDir() {
			dirs[i] = filepath.Dir(arg)
		}
	}
	return dirs, true
}

// duetSecondsBeside reads a duet session's seconds from the directory
// that holds both sides' run directories (old and new given as run
// directories or their report.json files); ok is false when the sides are
// not on disk in one directory or it has no seconds of session.
func duetSecondsBeside(old, new, session string) (report.DuetSeconds, bool, error) {
	dirs, ok := runDirs(old, new)
	if !ok {
		return nil, false, nil
	}
	var parents [2]string
	for i, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, false, nil
		}
		parents[i] = filepath.Dir(abs)
	}
	if parents[0] != parents[1] {
		return nil, false, nil
	}
	return report.ReadDuetSeconds(parents[0], session)
}

// baselineArg is the compare argument that names the daemon's baseline run.
const baselineArg = "baseline"

// compareInput reads one side of a comparison: a report.json file, a run
// directory, or else a run id (or "baseline") fetched from the control API
// at base.
func (c *cli) compareInput(ctx context.Context, cfg *config.Config, base, arg string) (*report.Report, error) {
	if st, err := os.Stat(arg); err == nil {
		path := arg
		if st.IsDir() {
			path = filepath.Join(arg, report.JSONFile)
		}
		rep, err := report.ReadStrict(path)
		if err != nil {
			return nil, exitcode.With(exitcode.Usage, err)
		}
		return rep, nil
	}
	if strings.ContainsRune(arg, os.PathSeparator) || strings.HasSuffix(arg, ".json") {
		return nil, exitcode.Usagef("%s: no such file or directory (give a run directory, a report.json, or the id of a run of a soakd serve)", arg)
	}
	cl, err := newClient(cfg, base)
	if err != nil {
		return nil, err
	}
	id := arg
	if arg == baselineArg {
		runs, err := cl.List(ctx)
		if err != nil {
			return nil, cl.clientError(err)
		}
		id = ""
		for _, r := range runs {
			if r.Baseline {
				id = r.ID
				break
			}
		}
		if id == "" {
			return nil, exitcode.With(exitcode.NotFound, fmt.Errorf("the soakd serve at %s has no baseline run: mark one with soakd baseline ID", cl.BaseURL))
		}
	}
	sum, raw, err := cl.Get(ctx, id)
	if err != nil {
		return nil, cl.clientError(err)
	}
	if raw == nil {
		return nil, exitcode.With(exitcode.NotFound, fmt.Errorf("run %s (status %s) has no report yet", sum.ID, sum.Status))
	}
	rep, err := report.Decode(raw, fmt.Sprintf("the report of run %s from %s", id, cl.BaseURL))
	if err != nil {
		return nil, exitcode.With(exitcode.Usage, err)
	}
	return rep, nil
}

// checkFormat refuses a --format of soakd compare and soakd ab other than
// the four they print.
func checkFormat(format string) error {
	switch format {
	case formatText, formatJSON, formatJUnit, formatMarkdown:
		return nil
	}
	return exitcode.Usagef("--format must be text, json, junit or markdown (got %q)", format)
}

// writeComparison writes cmp to w in format.
func writeComparison(w io.Writer, cmp report.Comparison, format string) error {
	var out []byte
	var err error
	switch format {
	case formatJSON:
		out, err = cmp.JSON()
	case formatJUnit:
		out, err = cmp.JUnit()
	case formatMarkdown:
		out = []byte(cmp.Markdown())
	default:
		return cmp.Table(w)
	}
	if err != nil {
		return err
	}
	if _, err := w.Write(out); err != nil {
		return fmt.Errorf("cannot write the comparison: %w", err)
	}
	return nil
}

// verdictError maps a verdict to the exit code: pass 0, fail 1,
// inconclusive 4, anything else (an aborted run, or a report still
// running) 3.
func verdictError(v kpi.Outcome) error {
	switch code := v.ExitCode(); code {
	case exitcode.Pass:
		return nil
	case exitcode.Aborted:
		return exitcode.With(code, fmt.Errorf("the run's verdict is %q", v))
	default:
		return exitcode.With(code, fmt.Errorf("the verdict is %s", v))
	}
}
