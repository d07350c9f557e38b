// Command soakd proves, or disproves, that a GraphQL release costs no more
// CPU, GC and throughput than it should, measured against a REST control
// group over the same data. See README.md.
//
// main is the only place that reads flags, installs signal handling and calls
// os.Exit; everything else lives in the packages it wires together. The
// command line is built with cobra (github.com/spf13/cobra): it is what k6
// and kubectl use, it returns errors instead of exiting (so run stays
// testable and owns the exit code), writes --help to standard output, takes
// flags before or after positional arguments (pflag) and prints real
// defaults.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.yaml.in/yaml/v3"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/buildinfo"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/pin"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/workloads"
)

// defaultConfig is config.yaml, the embedded defaults every user file is
// decoded on top of.
//
//go:embed config.yaml
var defaultConfig []byte

func main() {
	os.Exit(int(run(os.Args[1:], os.Stdout, os.Stderr)))
}

// run executes one soakd command line and returns its exit code. An error
// cobra meets before a command starts (an unknown command or flag, a wrong
// number of arguments) is bad usage, exit 2.
func run(args []string, stdout, stderr io.Writer) exitcode.Code {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c := &cli{stdout: stdout, stderr: stderr}
	root := c.root()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	code := exitcode.Of(err)
	if err != nil && !c.started {
		code = exitcode.Usage
	}
	// A fail or inconclusive verdict has already printed its reasons.
	if err != nil && code != exitcode.Fail && code != exitcode.Inconclusive {
		c.printError(err, code)
	}
	return code
}

// cli holds the flags every command shares and where output goes.
type cli struct {
	stdout, stderr io.Writer
	logFormat      string
	// started is set once cobra has parsed a command line and handed it
	// to a command: an error before that is bad usage.
	started bool
}

// printError writes err on standard error: a JSON log entry under
// --log-format json (so that every line of that stream is JSON), a plain
// "soakd: ..." line otherwise, with a pointer to --help for bad usage.
func (c *cli) printError(err error, code exitcode.Code) {
	if c.logFormat == "json" {
		log, _ := newLogger("json", c.stderr)
		log.Error("soakd: command failed", zap.Error(err), zap.Int("exit_code", int(code)))
		_ = log.Sync()
		return
	}
	fmt.Fprintf(c.stderr, "soakd: %v\n", err)
	if code == exitcode.Usage && !c.started {
		fmt.Fprintln(c.stderr, "Run 'soakd --help' for usage.")
	}
}

const rootLong = `soakd: GraphQL vs REST resource soak tests with a pass/fail verdict.

It hosts a GraphQL server and a REST control group over the same data, drives
seed 002's workloads at both, samples the target's CPU, GC and heap, and judges
how much more GraphQL costs than REST against the KPIs in config.yaml.

Exit codes:
  0  pass: every gated KPI and check passed
  1  fail: a KPI or check failed
  2  bad usage or configuration; nothing ran
  3  aborted: the run could not complete (partial results are written)
  4  inconclusive: nothing failed, but a gated figure's interval straddles
     its limit or was not measured
  5  client commands: the control API could not be reached
  6  client commands: the control API refused the token (401/403)
  7  client commands: no run of that id (404)
  8  start: another run is in progress (409)`

func (c *cli) root() *cobra.Command {
	root := &cobra.Command{
		Use:           "soakd",
		Short:         "GraphQL vs REST resource soak tests with a pass/fail verdict",
		Long:          rootLong,
		Version:       buildinfo.Version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return exitcode.Usagef("unknown command %q", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			// soakd alone: the help, on standard error, and exit 2.
			cmd.SetOut(c.stderr)
			_ = cmd.Help()
			return exitcode.Usagef("no command given")
		},
		PersistentPreRunE: func(*cobra.Command, []string) error {
			c.started = true
			if c.logFormat != "console" && c.logFormat != "json" {
				return exitcode.Usagef("--log-format must be console or json (got %q)", c.logFormat)
			}
			return nil
		},
	}
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetVersionTemplate("soakd {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return exitcode.With(exitcode.Usage, err)
	})
	root.PersistentFlags().StringVar(&c.logFormat, "log-format", "console", "log format on standard error: console (for humans) or json (every line one JSON object)")
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddGroup(&cobra.Group{ID: "run", Title: "Running suites:"}, &cobra.Group{ID: "client", Title: "Talking to a running soakd serve:"}, &cobra.Group{ID: "tools", Title: "Reports and tools:"})
	for _, cmd := range []*cobra.Command{c.runCmd(), c.abCmd(), c.serveCmd(), c.soakCmd()} {
		cmd.GroupID = "run"
		root.AddCommand(cmd)
	}
	for _, cmd := range []*cobra.Command{c.startCmd(), c.runsCmd(), c.statusCmd(), c.stopCmd(), c.baselineCmd()} {
		cmd.GroupID = "client"
		root.AddCommand(cmd)
	}
	for _, cmd := range []*cobra.Command{c.driveCmd(), c.targetCmd(), c.reportCmd(), c.compareCmd(), c.configCmd()} {
		cmd.GroupID = "tools"
		root.AddCommand(cmd)
	}
	root.SetHelpCommandGroupID("tools")
	return root
}

// exactArgs is cobra.ExactArgs with a message that says what is wanted and
// exit code 2.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return exitcode.Usagef("%s needs %s (got %d arguments); see soakd %s --help", cmd.Name(), what, len(args), cmd.Name())
		}
		return nil
	}
}

// maxArgs is cobra.MaximumNArgs with exit code 2.
func maxArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return exitcode.Usagef("%s takes at most %s (got %q); see soakd %s --help", cmd.Name(), what, args, cmd.Name())
		}
		return nil
	}
}

func loadConfig(path string) (*daemon.Config, error) {
	if path == "" {
		return daemon.LoadConfig(defaultConfig, nil, "config.yaml (embedded)")
	}
	user, err := readYAMLFile("--config", path)
	if err != nil {
		return nil, err
	}
	return daemon.LoadConfig(defaultConfig, user, path)
}

// maxYAMLFileBytes bounds a YAML file soakd reads (--config, --old, --new,
// --overrides): a configuration is kilobytes, and reading /dev/zero or a
// wrong multi-gigabyte file whole would exhaust memory before the decoder
// could say what is wrong. CSV data is read from its own files.
const maxYAMLFileBytes = 16 << 20

// readYAMLFile reads the file flag names, refusing (exit 2) one larger than
// maxYAMLFileBytes.
func readYAMLFile(flag, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("cannot read %s: %w", flag, err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxYAMLFileBytes+1))
	if err != nil {
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("cannot read %s: %w", flag, err))
	}
	if len(b) > maxYAMLFileBytes {
		return nil, exitcode.Usagef("%s %s is larger than %d MiB: a configuration is a few kilobytes; is it the right file?", flag, path, maxYAMLFileBytes>>20)
	}
	return b, nil
}

// configFlag adds --config to cmd.
func configFlag(cmd *cobra.Command, path *string) {
	configFlagUsage(cmd, path, "YAML file decoded on top of the embedded config.yaml (it needs only the keys it changes)")
}

// configFlagUsage adds a --config that may be given once: a second file
// would silently replace the first (they are not layered), so it is refused.
func configFlagUsage(cmd *cobra.Command, path *string, usage string) {
	cmd.Flags().Var((*onceString)(path), "config", usage)
}

// onceString is a string flag that refuses a second value.
type onceString string

func (o *onceString) String() string { return string(*o) }
func (o *onceString) Type() string   { return "string" }
func (o *onceString) Set(v string) error {
	if *o != "" {
		return fmt.Errorf("given twice (%q, then %q): files are not layered on each other, so put every key in one file", string(*o), v)
	}
	*o = onceString(v)
	return nil
}

func newLogger(format string, stderr io.Writer) (*zap.Logger, error) {
	var enc zapcore.Encoder
	switch format {
	case "console":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		enc = zapcore.NewConsoleEncoder(ec)
	case "json":
		enc = zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	default:
		return nil, exitcode.Usagef("--log-format must be console or json (got %q)", format)
	}
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(stderr), zap.InfoLevel)), nil
}

// runEnv is what the commands that run load share: a logger, the
// configuration and the path of this binary (started as the driver).
type runEnv struct {
	log *zap.Logger
	cfg *daemon.Config
	exe string
}

func (e runEnv) close() { _ = e.log.Sync() }

// prepare builds the logger, loads the configuration (logging its
// warnings) and finds the binary.
func (c *cli) prepare(config string) (runEnv, error) {
	log, err := newLogger(c.logFormat, c.stderr)
	if err != nil {
		return runEnv{}, err
	}
	cfg, err := loadConfig(config)
	if err != nil {
		return runEnv{}, err
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	exe, err := os.Executable()
	if err != nil {
		return runEnv{}, fmt.Errorf("cannot find the soakd binary to start the driver: %w", err)
	}
	return runEnv{log: log, cfg: cfg, exe: exe}, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (c *cli) runCmd() *cobra.Command {
	var config, profile, out, arms string
	cmd := &cobra.Command{
		Use:                   "run [--config FILE] [--profile NAME] [--out DIR] [--arms A,B]",
		DisableFlagsInUseLine: true,
		Short:                 "Run a suite once on the target (built-in unless target.kind says otherwise); exit with its verdict",
		Args:                  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := daemon.ParseArms(arms)
			if err != nil {
				return err
			}
			env, err := c.prepare(config)
			if err != nil {
				return err
			}
			defer env.close()
			_, err = daemon.RunSuite(cmd.Context(), env.cfg, daemon.RunOptions{
				Profile:    profile,
				OutDir:     out,
				Executable: env.exe,
				Arms:       a,
				Log:        env.log,
				Stdout:     c.stdout,
				Stderr:     c.stderr,
				Terminal:   isTerminal(c.stderr),
			})
			return err
		},
	}
	configFlag(cmd, &config)
	cmd.Flags().StringVar(&arms, "arms", "rest,graphql", "compared arms: rest,graphql; or rest,rest / graphql,graphql to measure the machine's noise floor")
	cmd.Flags().StringVar(&profile, "profile", "", "profile to run (default: the config's default_profile)")
	cmd.Flags().StringVar(&out, "out", "", "run directory for the reports (default: runs/<UTC timestamp>)")
	return cmd
}

func (c *cli) abCmd() *cobra.Command {
	var config, profile, out, oldFile, newFile, format string
	cmd := &cobra.Command{
		Use:                   "ab [--config FILE] [--old FILE] [--new FILE] [--profile NAME] [--out DIR] [--format text|json|junit|markdown]",
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
build: an A/A session, whose verdict should pass.`,
		Args: exactArgs(0, "no arguments (the sides are --old and --new files)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			env, err := c.prepare(config)
			if err != nil {
				return err
			}
			defer env.close()
			side := func(flag, path string) (*daemon.Config, error) {
				if path == "" {
					return env.cfg, nil
				}
				doc, err := readYAMLFile(flag, path)
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
			res, err := daemon.RunAB(cmd.Context(), daemon.ABOptions{
				RunOptions: daemon.RunOptions{Profile: profile, OutDir: out, Executable: env.exe, Log: env.log, Stderr: c.stderr, Terminal: isTerminal(c.stderr)},
				Old:        oldCfg, New: newCfg,
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
	configFlag(cmd, &config)
	cmd.Flags().StringVar(&oldFile, "old", "", "YAML decoded on top of the config for the old side (the build compared against)")
	cmd.Flags().StringVar(&newFile, "new", "", "YAML decoded on top of the config for the new side (the candidate)")
	cmd.Flags().StringVar(&profile, "profile", "", "profile both sides run (default: the config's default_profile)")
	cmd.Flags().StringVar(&out, "out", "", "session directory (default: runs/<UTC timestamp>)")
	cmd.Flags().StringVar(&format, "format", formatText, "printed comparison: text (a table), json, junit (junit.xml) or markdown")
	return cmd
}

func (c *cli) serveCmd() *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:                   "serve [--config FILE]",
		DisableFlagsInUseLine: true,
		Short:                 "Serve the target, /metrics and the control API until SIGTERM",
		Args:                  exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			env, err := c.prepare(config)
			if err != nil {
				return err
			}
			defer env.close()
			return daemon.Serve(cmd.Context(), env.cfg, daemon.ServeOptions{Executable: env.exe, Log: env.log, Stderr: c.stderr})
		},
	}
	configFlag(cmd, &config)
	return cmd
}

func (c *cli) soakCmd() *cobra.Command {
	var config, profile string
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
			env, err := c.prepare(config)
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
			rep, err := daemon.Soak(cmd.Context(), env.cfg, daemon.SoakOptions{
				RunOptions: daemon.RunOptions{Profile: profile, Executable: env.exe, Log: env.log, Stderr: c.stderr, Terminal: isTerminal(c.stderr)},
				Cycles:     cycles, Duration: duration,
			})
			if rep != nil {
				rep.Table(c.stdout)
			}
			return err
		},
	}
	configFlag(cmd, &config)
	cmd.Flags().StringVar(&profile, "profile", "", "profile each cycle runs (default: soak.profile, then default_profile)")
	cmd.Flags().IntVar(&cycles, "cycles", 0, "cycles to run; 0 means no cycle limit (default: soak.cycles)")
	cmd.Flags().DurationVar(&duration, "duration", 0, "total soak length, e.g. 24h; 0 means no time limit (default: soak.duration)")
	return cmd
}

// client is what a control API command needs: the API client and where the
// API is, for messages.
type client struct {
	*api.Client
}

// clientFlags adds --api and --config to cmd and returns a function that
// builds the control API client from them: --api (default: the config's
// api.listen) and the token in SOAKD_CONTROL_TOKEN or api.token.
func (c *cli) clientFlags(cmd *cobra.Command) func() (client, error) {
	var config, base string
	configFlagUsage(cmd, &config, "YAML file decoded on top of the embedded config.yaml (for api.listen and api.token)")
	apiFlag(cmd, &base)
	return func() (client, error) {
		cfg, err := loadConfig(config)
		if err != nil {
			return client{}, err
		}
		for _, w := range cfg.Warnings {
			fmt.Fprintf(c.stderr, "soakd: warning: %s\n", w)
		}
		return newClient(cfg, base)
	}
}

// apiFlag adds --api to cmd.
func apiFlag(cmd *cobra.Command, base *string) {
	cmd.Flags().StringVar(base, "api", "", "control API base URL (default: http://<api.listen>)")
}

// newClient builds the control API client at base (default: the config's
// api.listen) with the token in SOAKD_CONTROL_TOKEN or api.token.
func newClient(cfg *daemon.Config, base string) (client, error) {
	if base == "" {
		base = "http://" + cfg.API.Listen
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return client{}, exitcode.Usagef("--api must be an http:// or https:// URL such as http://127.0.0.1:7070 (got %q)", base)
	}
	token := cfg.API.Token
	if env := os.Getenv(daemon.TokenEnv); env != "" {
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

// readOnlyNote prints why the daemon's history is read-only, when it is.
// A daemon that cannot say (an older one, without /v1/history) gets no
// note: the command's own answer has already been printed.
func (cl client) readOnlyNote(ctx context.Context, w io.Writer) {
	if h, err := cl.History(ctx); err == nil && h.ReadOnly {
		fmt.Fprintf(w, "history is read-only, no run can start: %s\n", h.Reason)
	}
}

// pickRun returns the id given, or else the running run (for stop) or the
// newest run (for status).
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
	return "", exitcode.Usagef("no run yet")
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
			b, err := readYAMLFile("--overrides", overridesFile)
			if err != nil {
				return err
			}
			doc = b
		}
		overrides, err := buildOverrides(doc, sets)
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
		return cl.wait(ctx, c.stdout, sum.ID, poll)
	}
	return cmd
}

// wait polls run id every poll until it is no longer running, then prints
// it and returns its verdict as an exit code.
func (cl client) wait(ctx context.Context, w io.Writer, id string, poll time.Duration) error {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		r, _, err := cl.Get(ctx, id)
		if err != nil {
			return cl.clientError(err)
		}
		if r.Status != "running" {
			break
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

// buildOverrides merges a YAML document of overrides (may be nil) and
// --set KEY=VALUE entries (applied on top, in order) into one YAML
// document. A key is a dotted path of mapping keys; a value is parsed as
// YAML, so 7 is a number, true a boolean and 2s a string the config turns
// into a duration.
func buildOverrides(doc []byte, sets []string) (string, error) {
	root := map[string]any{}
	if len(bytes.TrimSpace(doc)) > 0 {
		if err := yaml.Unmarshal(doc, &root); err != nil {
			return "", exitcode.With(exitcode.Usage, fmt.Errorf("--overrides is not a YAML mapping: %w", err))
		}
	}
	for _, s := range sets {
		key, raw, ok := strings.Cut(s, "=")
		if !ok || key == "" {
			return "", exitcode.Usagef("--set %q: want KEY=VALUE, e.g. kpis.cpu_increase_points=7", s)
		}
		path := strings.Split(key, ".")
		if slices.Contains(path, "") {
			return "", exitcode.Usagef("--set %q: the key has an empty part", s)
		}
		var v any
		if err := yaml.Unmarshal([]byte(raw), &v); err != nil {
			return "", exitcode.Usagef("--set %q: the value is not YAML: %v", s, err)
		}
		m := root
		for i, k := range path[:len(path)-1] {
			next, exists := m[k]
			if !exists {
				nm := map[string]any{}
				m[k] = nm
				m = nm
				continue
			}
			nm, isMap := next.(map[string]any)
			if !isMap {
				return "", exitcode.Usagef("--set %q: %s is already set to a value, not a mapping", s, strings.Join(path[:i+1], "."))
			}
			m = nm
		}
		m[path[len(path)-1]] = v
	}
	if len(root) == 0 {
		return "", nil
	}
	out, err := yaml.Marshal(root)
	if err != nil {
		return "", fmt.Errorf("cannot encode the overrides: %w", err)
	}
	return string(out), nil
}

func (c *cli) driveCmd() *cobra.Command {
	var config, target, spec, profile, phase, cpus, graphqlURL, graphqlWSURL, restURL string
	cmd := &cobra.Command{
		Use:                   "drive (--target URL | --graphql-url URL --rest-url URL [--graphql-ws-url URL]) (--spec FILE | --phase NAME [--profile NAME] [--config FILE]) [--cpus LIST]",
		DisableFlagsInUseLine: true,
		Short:                 "The load driver: run one phase against a target, JSON lines on stdout",
		Long: `The load driver. soakd run starts it for every phase; it can also be run by
hand against a soakd serve elsewhere. It reads a phase spec (JSON, from --spec
FILE or "--spec -" for standard input, or built from the config with --phase)
and writes JSON lines to standard output: progress about once a second, then
the result (or an error).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ep, err := driveEndpoints(target, graphqlURL, graphqlWSURL, restURL)
			if err != nil {
				return err
			}
			switch {
			case phase == "" && spec == "":
				return exitcode.Usagef("drive needs --phase NAME (a phase of the config's profile) or --spec FILE (a phase spec as JSON; - reads standard input)")
			case phase != "" && spec != "":
				return exitcode.Usagef("drive takes --phase or --spec, not both")
			}
			if cpus != "" {
				set, err := pin.Parse(cpus)
				if err != nil {
					return exitcode.With(exitcode.Usage, fmt.Errorf("--cpus: %w", err))
				}
				if err := pin.Process(set); err != nil {
					return fmt.Errorf("cannot pin the driver to CPUs %v: %w", set, err)
				}
			}
			var in io.Reader = os.Stdin
			switch {
			case phase != "":
				cfg, err := loadConfig(config)
				if err != nil {
					return err
				}
				b, err := daemon.PhaseSpec(cfg, profile, phase)
				if err != nil {
					return err
				}
				in = bytes.NewReader(b)
			case spec != "-":
				f, err := os.Open(spec)
				if err != nil {
					return exitcode.With(exitcode.Usage, fmt.Errorf("cannot open --spec: %w", err))
				}
				defer f.Close()
				in = f
			}
			return workloads.DriveAt(cmd.Context(), in, c.stdout, ep)
		},
	}
	cmd.Flags().StringVar(&target, "target", "", "base URL of a target serving /graphql and /api/donuts/{id}, e.g. http://127.0.0.1:8080")
	cmd.Flags().StringVar(&graphqlURL, "graphql-url", "", "the GraphQL endpoint, e.g. http://127.0.0.1:4000/graphql (instead of, or overriding, --target's)")
	cmd.Flags().StringVar(&graphqlWSURL, "graphql-ws-url", "", "the GraphQL websocket URL for subscriptions (default: --graphql-url with a ws scheme)")
	cmd.Flags().StringVar(&restURL, "rest-url", "", "base URL of the REST twin, serving /api/donuts/{id} (instead of, or overriding, --target)")
	cmd.Flags().StringVar(&spec, "spec", "", "phase spec as JSON from this file; - reads standard input")
	configFlagUsage(cmd, &config, "with --phase: YAML file decoded on top of the embedded config.yaml")
	cmd.Flags().StringVar(&profile, "profile", "", "with --phase: profile holding the phase (default: the config's default_profile)")
	cmd.Flags().StringVar(&phase, "phase", "", "run this phase of the profile instead of reading --spec")
	cmd.Flags().StringVar(&cpus, "cpus", "", "pin the driver to these CPUs, e.g. 1 or 2-3")
	return cmd
}

// driveEndpoints builds the driver's endpoints from --target (everything
// under one base URL) and the per-endpoint flags, which override it; without
// --target --graphql-url is needed, and --rest-url for a phase with REST
// operations (a target without a REST twin runs GraphQL phases only).
func driveEndpoints(target, graphqlURL, graphqlWSURL, restURL string) (workloads.Endpoints, error) {
	var ep workloads.Endpoints
	switch {
	case target != "":
		if err := checkTargetURL(target); err != nil {
			return ep, err
		}
		var err error
		if ep, err = workloads.BaseEndpoints(target); err != nil {
			return ep, exitcode.With(exitcode.Usage, fmt.Errorf("--target: %w", err))
		}
	case graphqlURL == "":
		return ep, exitcode.Usagef("drive needs --target URL, e.g. --target http://127.0.0.1:8080, or --graphql-url (with --rest-url for a phase with REST operations)")
	}
	if graphqlURL != "" {
		ep.GraphQL = graphqlURL
	}
	if restURL != "" {
		ep.REST = restURL
	}
	ep.GraphQLWS = graphqlWSURL
	if err := ep.Validate(); err != nil {
		return ep, exitcode.With(exitcode.Usage, err)
	}
	return ep, nil
}

// checkTargetURL refuses a --target that is not an absolute http(s) URL,
// saying what one looks like (Go's parser alone says "first path segment
// in URL cannot contain colon" for 127.0.0.1:8080).
func checkTargetURL(target string) error {
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return exitcode.Usagef("--target must be a URL with a scheme and host, such as http://127.0.0.1:8080 (got %q)", target)
	}
	return nil
}

func (c *cli) targetCmd() *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:                   "target [--config FILE]",
		DisableFlagsInUseLine: true,
		Short:                 "The built-in target alone, as soakd run, soak and serve start it: the process they measure",
		Long: `The built-in target alone: GraphQL and the REST control group on server.listen,
with /metrics, /debug/pprof/ and the in-process sampler, and nothing else of
soakd. soakd run, soak and serve start it as their child, so the process they
measure holds the server only. Once it serves it prints one JSON line on
standard output, {"url": ..., "control_url": ..., "pid": ...}; the control
surface (loopback only) answers only requests carrying the token given in
` + daemon.TargetTokenEnv + `. It stops on SIGTERM or Ctrl-C (exit 0).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(c.logFormat, c.stderr)
			if err != nil {
				return err
			}
			defer func() { _ = log.Sync() }()
			cfg, err := loadConfig(config)
			if err != nil {
				return err
			}
			for _, w := range cfg.Warnings {
				log.Warn(w)
			}
			if k := cfg.Target.Kind; k != "" && k != report.TargetBuiltin {
				return exitcode.Usagef("soakd target serves the built-in target; the config's target.kind is %s", k)
			}
			token := os.Getenv(daemon.TargetTokenEnv)
			_ = os.Unsetenv(daemon.TargetTokenEnv)
			return daemon.ServeTarget(cmd.Context(), cfg, daemon.TargetOptions{Log: log, Stdout: c.stdout, Token: token})
		},
	}
	configFlag(cmd, &config)
	return cmd
}

func (c *cli) configCmd() *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:                   "config [--config FILE]",
		DisableFlagsInUseLine: true,
		Short:                 "Validate the configuration and print the effective YAML",
		Long: `Validate the configuration and print the effective configuration (the
embedded config.yaml with --config decoded on top) as YAML on standard output:
a document soakd accepts as --config. api.token is printed as <redacted>.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			cfg, err := loadConfig(config)
			if err != nil {
				return err
			}
			for _, w := range cfg.Warnings {
				fmt.Fprintf(c.stderr, "soakd: warning: %s\n", w)
			}
			out, err := daemon.EffectiveYAML(cfg)
			if err != nil {
				return err
			}
			source := "the embedded config.yaml"
			if config != "" {
				source += " with " + config + " on top"
			}
			fmt.Fprintf(c.stdout, "# soakd %s: effective configuration (%s); valid; default profile %q\n", buildinfo.Version(), source, cfg.DefaultProfile)
			_, err = c.stdout.Write(out)
			return err
		},
	}
	configFlag(cmd, &config)
	return cmd
}

func (c *cli) reportCmd() *cobra.Command {
	return &cobra.Command{
		Use:                   "report DIR",
		DisableFlagsInUseLine: true,
		Short:                 "Re-render a run's reports from report.json; exit with its verdict",
		Args:                  exactArgs(1, "one run directory"),
		RunE: func(_ *cobra.Command, args []string) error {
			dir := args[0]
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

// Output formats of soakd compare.
const (
	formatText     = "text"
	formatJSON     = "json"
	formatJUnit    = "junit"
	formatMarkdown = "markdown"
)

func (c *cli) compareCmd() *cobra.Command {
	var config, base, format string
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
			cfg, err := loadConfig(config)
			if err != nil {
				return err
			}
			for _, w := range cfg.Warnings {
				fmt.Fprintf(c.stderr, "soakd: warning: %s\n", w)
			}
			var reps [2]*report.Report
			for i, arg := range args {
				if reps[i], err = c.compareInput(cmd.Context(), cfg, base, arg); err != nil {
					return err
				}
			}
			lim := cfg.Compare.Limits()
			lim.Confidence = cfg.KPIs.Confidence
			cmp := report.CompareRuns(reps[0], reps[1], lim)
			if err := writeComparison(c.stdout, cmp, format); err != nil {
				return err
			}
			return verdictError(cmp.Verdict)
		},
	}
	configFlagUsage(cmd, &config, "YAML file decoded on top of the embedded config.yaml (for the compare: limits, and api.listen and api.token for run ids)")
	apiFlag(cmd, &base)
	cmd.Flags().StringVar(&format, "format", formatText, "output: text (a table), json, junit (junit.xml) or markdown")
	return cmd
}

// baselineArg is the compare argument that names the daemon's baseline run.
const baselineArg = "baseline"

// compareInput reads one side of a comparison: a report.json file, a run
// directory, or else a run id (or "baseline") fetched from the control API
// at base.
func (c *cli) compareInput(ctx context.Context, cfg *daemon.Config, base, arg string) (*report.Report, error) {
	if st, err := os.Stat(arg); err == nil {
		path := arg
		if st.IsDir() {
			path = filepath.Join(arg, report.JSONFile)
		}
		rep, err := report.Read(path)
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
	var rep report.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		return nil, fmt.Errorf("cannot decode the report of run %s from %s: %w", id, cl.BaseURL, err)
	}
	return &rep, nil
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
func verdictError(v string) error {
	switch v {
	case "pass":
		return nil
	case "fail":
		return exitcode.With(exitcode.Fail, errors.New("the verdict is fail"))
	case "inconclusive":
		return exitcode.With(exitcode.Inconclusive, errors.New("the verdict is inconclusive"))
	}
	return exitcode.With(exitcode.Aborted, fmt.Errorf("the run's verdict is %q", v))
}
