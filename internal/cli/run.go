package cli

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/run"
	"github.com/soakd/soakd/daemon/serve"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/internal/report"
)

func (c *cli) runCmd() *cobra.Command {
	var configPath, profile, out, arms string
	var rounds int
	var sets []string
	var scale float64
	cmd := &cobra.Command{
		Use:                   "run [--config FILE] [--set KEY=VALUE]... [--profile NAME] [--rounds N] [--scale F] [--out DIR] [--arms A,B]",
		DisableFlagsInUseLine: true,
		Short:                 "Run a suite once on the target (built-in unless target.kind says otherwise); exit with its verdict",
		Args:                  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := run.ParseArms(arms)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("rounds") && (rounds < 1 || rounds > 100) {
				return exitcode.Usagef("--rounds %d: must be between 1 and 100 (the interleaved REST/GraphQL rounds; the profile's rounds: when not given)", rounds)
			}
			env, err := c.prepare(configPath, false)
			if err != nil {
				return err
			}
			defer env.close()
			if env.cfg, err = withSets(env.cfg, sets); err != nil {
				return err
			}
			if cmd.Flags().Changed("scale") {
				if env.cfg, err = env.cfg.WithScaled(profile, scale); err != nil {
					return exitcode.With(exitcode.Usage, err)
				}
			}
			rep, err := run.RunSuite(cmd.Context(), env.cfg, run.RunOptions{
				Profile:      profile,
				OutDir:       out,
				Executable:   env.exe,
				Arms:         a,
				Log:          env.log,
				Stdout:       c.stdout,
				Stderr:       c.stderr,
				View:         env.view,
				Colour:       env.colour,
				SummaryWidth: env.summaryWidth,
				Rounds:       rounds,
			})
			if rep != nil && rep.Verdict == kpi.OutcomeInconclusive {
				if n := rep.SettleRounds(); n > 0 {
					// Two lines, so the summary stays within 100 columns
					// and the command is one line to copy.
					fmt.Fprintf(c.stdout, "to settle it: %s\n  (the interval rule estimates about %d rounds in all; this run had %d)\n",
						settleCommand(configPath, sets, scale, rep.Profile, arms, n), n, max(len(rep.Rounds), 1))
				}
			}
			return err
		},
	}
	configFlag(cmd, &configPath)
	cmd.Flags().StringVar(&arms, "arms", "rest,graphql", "compared arms: rest,graphql; or rest,rest / graphql,graphql to measure the machine's noise floor")
	cmd.Flags().Float64Var(&scale, "scale", 1, "multiply every phase's length (closed iterations, durations) by F, keeping its users and rates: 0.25 is a quarter as long at the same load")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override KEY=VALUE on top of --config (repeatable; the key a dotted path as in config.yaml, the value YAML), e.g. --set kpis.cpu_increase_points=7")
	cmd.Flags().StringVar(&profile, "profile", "", "profile to run (default: the config's default_profile)")
	cmd.Flags().IntVar(&rounds, "rounds", 0, "interleaved REST/GraphQL rounds, 1 to 100, replacing the profile's rounds (an inconclusive run names the count that would settle it)")
	cmd.Flags().StringVar(&out, "out", "", "run directory for the reports (default: runs/<UTC timestamp>)")
	return cmd
}

// settleCommand is the `soakd run` command line that repeats a run with n
// rounds: its config, profile and arms as given, shell-quoted where needed.
func settleCommand(configPath string, sets []string, scale float64, profile, arms string, n int) string {
	args := []string{"soakd", "run"}
	if configPath != "" {
		args = append(args, "--config", shellQuote(configPath))
	}
	for _, kv := range sets {
		args = append(args, "--set", shellQuote(kv))
	}
	args = append(args, "--profile", shellQuote(profile))
	if scale != 1 && scale != 0 {
		args = append(args, "--scale", strconv.FormatFloat(scale, 'g', -1, 64))
	}
	if arms != "" && arms != "rest,graphql" {
		args = append(args, "--arms", shellQuote(arms))
	}
	return strings.Join(append(args, "--rounds", strconv.Itoa(n)), " ")
}

// withSets is cfg with every --set KEY=VALUE decoded on top, in order,
// and validated as a --config file would be (a key path as in
// config.yaml, the value YAML: --set kpis.cpu_increase_points=7). A local
// run may set any key; soakd start's daemon refuses some.
func withSets(cfg *config.Config, sets []string) (*config.Config, error) {
	if len(sets) == 0 {
		return cfg, nil
	}
	doc, err := config.MergeOverrides(nil, sets)
	if err != nil {
		return nil, err
	}
	return cfg.Overlay([]byte(doc), "--set")
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// letters, digits and -_./,=:@.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./,=:@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (c *cli) abCmd() *cobra.Command {
	var configPath, profile, out, oldFile, newFile, format string
	var duet bool
	var duetLayout, duetProcesses string
	cmd := &cobra.Command{
		Use:                   "ab [--config FILE] [--old FILE] [--new FILE] [--profile NAME] [--out DIR] [--duet] [--format text|json|junit|markdown]",
		DisableFlagsInUseLine: true,
		Short:                 "Compare two builds in one session, their phases interleaved; exit 0, 1 or 4",
		Long: `Measure two builds of the target in one session and compare them: exit 0
(pass), 1 (fail) or 4 (inconclusive), as soakd compare does.

Both targets are started: the old side from --config with --old decoded on
top, the new side from --config with --new on top (each a YAML file of the
keys that differ: target.argv and its URLs for two builds of your server,
inject: for a planted regression). Every phase of the profile then runs on
one build and at once on the other, alternating which goes first, so a
machine that drifts during the session drifts under both; the comparison
pairs the rounds (round k of old against round k of new). The session
directory holds old/ and new/ (complete run directories) and compare.json
and compare.md; --format sets what is printed (text, the default, json,
junit or markdown). With neither --old nor --new both sides are the same
build: an A/A session, whose verdict should pass.

With --duet (or compare.duet: true) both builds run every phase at the
same time, each target with its own driver, and the GraphQL phase's CPU
per request is judged from the two builds' simultaneous seconds. By
default both sides share every CPU (--duet-layout shared); with
--duet-layout halves each side has its half of the CPUs (CPU 0 and CPU 1
on a 2-core machine), the halves swapped between rounds. Before every
round after the first, both targets are started afresh, in the order
opposite to the round before (--duet-processes round; session keeps one
process per side), when soakd starts them (the built-in target, a
command). It needs at least 2 CPUs and no pinning: keys.`,
		Args: exactArgs(0, "no arguments (the sides are --old and --new files)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			env, err := c.prepare(configPath, false)
			if err != nil {
				return err
			}
			defer env.close()
			side := func(flag, path string) (*config.Config, error) {
				if path == "" {
					return env.cfg, nil
				}
				doc, err := config.ReadFile(flag, path)
				if err != nil {
					return nil, err
				}
				cfg, err := env.cfg.Overlay(doc, path)
				if err != nil {
					return nil, exitcode.With(exitcode.Usage, fmt.Errorf("%s: %w", flag, err))
				}
				return cfg, nil
			}
			oldCfg, err := side("--old", oldFile)
			if err != nil {
				return err
			}
			newCfg, err := side("--new", newFile)
			if err != nil {
				return err
			}
			res, err := run.RunAB(cmd.Context(), run.ABOptions{
				RunOptions: run.RunOptions{Profile: profile, OutDir: out, Executable: env.exe, Log: env.log, Stderr: c.stderr, View: env.view, Colour: env.colour},
				Old:        oldCfg, New: newCfg, Base: env.cfg, Duet: duet, DuetLayout: duetLayout, DuetProcesses: duetProcesses,
			})
			if res == nil || res.Old == nil || res.New == nil || res.Comparison.Verdict == "" {
				return err
			}
			if format == formatText {
				for _, rep := range []*report.Report{res.Old, res.New} {
					fmt.Fprintf(c.stdout, "%s side: %s, its own KPI verdict %s (%s)\n", rep.AB.Side, rep.Run, rep.Verdict, filepath.Join(res.Dir, rep.AB.Side))
				}
			}
			if werr := writeComparison(c.stdout, res.Comparison, format); werr != nil {
				return werr
			}
			if format == formatText {
				fmt.Fprintf(c.stdout, "session: %s (compare.json, compare.md, old/, new/)\n", res.Dir)
			}
			return err
		},
	}
	configFlag(cmd, &configPath)
	cmd.Flags().StringVar(&oldFile, "old", "", "YAML decoded on top of the config for the old side (the build compared against)")
	cmd.Flags().StringVar(&newFile, "new", "", "YAML decoded on top of the config for the new side (the candidate)")
	cmd.Flags().StringVar(&profile, "profile", "", "profile both sides run (default: the config's default_profile)")
	cmd.Flags().StringVar(&out, "out", "", "session directory (default: runs/<UTC timestamp>)")
	cmd.Flags().StringVar(&format, "format", formatText, "printed comparison: text (a table), json, junit (junit.xml) or markdown")
	cmd.Flags().BoolVar(&duet, "duet", false, "run both builds at the same time, under the same load (compare.duet; --duet-layout)")
	cmd.Flags().StringVar(&duetLayout, "duet-layout", "", "with --duet: shared (both sides on every CPU, the default) or halves (each side on half of the CPUs, swapped between rounds) (compare.duet_layout)")
	cmd.Flags().StringVar(&duetProcesses, "duet-processes", "", "with --duet: round (both targets started afresh before every round, the default) or session (one process per side) (compare.duet_processes)")
	return cmd
}

func (c *cli) serveCmd() *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:                   "serve [--config FILE]",
		DisableFlagsInUseLine: true,
		Short:                 "Serve the target, /metrics and the control API until SIGTERM",
		Args:                  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := c.prepare(configPath, true)
			if err != nil {
				return err
			}
			defer env.close()
			return serve.Serve(cmd.Context(), env.cfg, serve.ServeOptions{Executable: env.exe, Log: env.log, Stderr: c.stderr})
		},
	}
	configFlag(cmd, &configPath)
	return cmd
}

func (c *cli) soakCmd() *cobra.Command {
	var configPath, profile string
	var cycles int
	var duration time.Duration
	cmd := &cobra.Command{
		Use:                   "soak [--config FILE] [--profile NAME] [--cycles N] [--duration D]",
		DisableFlagsInUseLine: true,
		Short:                 "Run a profile in cycles on one target; exit with the soak's verdict",
		Args:                  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cycles < 0 || duration < 0 {
				return exitcode.Usagef("--cycles and --duration must not be negative")
			}
			env, err := c.prepare(configPath, false)
			if err != nil {
				return err
			}
			defer env.close()
			if !cmd.Flags().Changed("cycles") {
				cycles = env.cfg.Soak.Cycles
			}
			if !cmd.Flags().Changed("duration") {
				duration = env.cfg.Soak.Duration
			}
			rep, err := run.Soak(cmd.Context(), env.cfg, run.SoakOptions{
				RunOptions: run.RunOptions{Profile: profile, Executable: env.exe, Log: env.log, Stderr: c.stderr, View: env.view, Colour: env.colour},
				Cycles:     cycles, Duration: duration,
			})
			if rep != nil {
				rep.Table(c.stdout)
			}
			return err
		},
	}
	configFlag(cmd, &configPath)
	cmd.Flags().StringVar(&profile, "profile", "", "profile each cycle runs (default: soak.profile, then default_profile)")
	cmd.Flags().IntVar(&cycles, "cycles", 0, "cycles to run; 0 means no cycle limit (default: soak.cycles)")
	cmd.Flags().DurationVar(&duration, "duration", 0, "total soak length, e.g. 24h; 0 means no time limit (default: soak.duration)")
	return cmd
}
