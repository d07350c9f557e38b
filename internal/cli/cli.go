// Package cli is soakd's command line: one file per command group (run,
// ab, soak and serve in run.go; the control API's clients in client.go;
// drive and target in drive.go; config, report and compare in
// inspect.go), over the packages that do the work. Run is the whole
// program; main only hands it the embedded defaults, the arguments and the
// standard streams, and exits with its code.
//
// The command line is built with cobra (github.com/spf13/cobra): it is
// what k6 and kubectl use, it returns errors instead of exiting (so Run
// stays testable and owns the exit code), writes --help to standard output,
// takes flags before or after positional arguments (pflag) and prints real
// defaults.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/buildinfo"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/progress"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/internal/termtext"
)

// Run executes one soakd command line (args, without the program name)
// over the embedded defaults (config.yaml) and returns its exit code. An error
// cobra meets before a command starts (an unknown command or flag, a wrong
// number of arguments) is bad usage, exit 2.
func Run(defaults []byte, args []string, stdout, stderr io.Writer) exitcode.Code {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	c := &cli{defaults: defaults, stdout: stdout, stderr: stderr}
	root := c.root()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	code := exitcode.Of(err)
	if err != nil && !c.started {
		code = exitcode.Usage
	}
	// A fail or inconclusive verdict has already printed its reasons.
	if err != nil && code != exitcode.Fail && code != exitcode.Inconclusive && !c.quiet {
		c.printError(err, code)
	}
	return code
}

// cli holds the flags every command shares and where output goes.
type cli struct {
	// defaults is config.yaml, embedded in the binary.
	defaults       []byte
	stdout, stderr io.Writer
	logFormat      string
	// verbose (-v) logs INFO lines on the console too.
	verbose bool
	// started is set once cobra has parsed a command line and handed it
	// to a command: an error before that is bad usage.
	started bool
	// quiet is set by a command whose error must not be printed (the
	// guard: its exit code is the target's).
	quiet bool
}

// warn reports the configuration's warnings: through log when the
// command has one (so --log-format json keeps every line JSON), else as
// "soakd: warning: ..." lines on standard error.
func (c *cli) warn(log *zap.Logger, warnings []string) {
	for _, w := range warnings {
		if log != nil {
			log.Warn(w)
		} else {
			fmt.Fprintf(c.stderr, "soakd: warning: %s\n", w)
		}
	}
}

// printError writes err on standard error: a JSON log entry under
// --log-format json (so that every line of that stream is JSON), a plain
// "soakd: ..." line otherwise, with a pointer to --help for bad usage.
func (c *cli) printError(err error, code exitcode.Code) {
	if c.logFormat == "json" {
		log, _ := newLogger("json", c.stderr, zapcore.InfoLevel)
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
`

func (c *cli) root() *cobra.Command {
	root := &cobra.Command{
		Use:           "soakd",
		Short:         "GraphQL vs REST resource soak tests with a pass/fail verdict",
		Long:          rootLong + exitcode.Help(),
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
	root.PersistentFlags().BoolVarP(&c.verbose, "verbose", "v", false, "console: log every INFO line of the orchestrator, target and drivers (default: warnings and errors, beside the progress view; json and serve log everything)")
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddGroup(&cobra.Group{ID: "run", Title: "Running suites:"}, &cobra.Group{ID: "client", Title: "Talking to a running soakd serve:"}, &cobra.Group{ID: "tools", Title: "Reports and tools:"})
	for _, cmd := range []*cobra.Command{c.runCmd(), c.checkCmd(), c.abCmd(), c.serveCmd(), c.soakCmd()} {
		cmd.GroupID = "run"
		root.AddCommand(cmd)
	}
	for _, cmd := range []*cobra.Command{c.startCmd(), c.runsCmd(), c.statusCmd(), c.stopCmd(), c.baselineCmd(), c.historyCmd()} {
		cmd.GroupID = "client"
		root.AddCommand(cmd)
	}
	for _, cmd := range []*cobra.Command{c.driveCmd(), c.targetCmd(), c.reportCmd(), c.compareCmd(), c.configCmd()} {
		cmd.GroupID = "tools"
		root.AddCommand(cmd)
	}
	root.AddCommand(c.guardCmd())
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

func (c *cli) loadConfig(path string) (*config.Config, error) {
	return c.loadWith(config.Load, path)
}

// loadWith loads the configuration at path (the embedded one when "") with
// load: config.Load, or config.LoadTarget for the measured process.
func (c *cli) loadWith(load func(defaults, user []byte, source string) (*config.Config, error), path string) (*config.Config, error) {
	if path == "" {
		return load(c.defaults, nil, "config.yaml (embedded)")
	}
	user, err := config.ReadFile("--config", path)
	if err != nil {
		return nil, err
	}
	return load(c.defaults, user, path)
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

// newLogger logs at level and above to stderr in format (console or json).
func newLogger(format string, stderr io.Writer, level zapcore.Level) (*zap.Logger, error) {
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
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(stderr), level)), nil
}

// runEnv is what the commands that run load share: a logger, the
// configuration and the path of this binary (started as the driver).
type runEnv struct {
	log *zap.Logger
	cfg *config.Config
	exe string
	// view shows a run's progress on standard error (nil under
	// --log-format json, where every line is a log entry); the logger
	// writes through it so log lines do not break its bars.
	view *progress.View
	// colour is true when the end summary, on standard output, may be
	// coloured: a terminal, and NO_COLOR unset or empty.
	colour bool
	// summaryWidth is the end summary's width: the terminal's when
	// standard output is one narrower than report.SummaryWidth, else 0
	// (the default).
	summaryWidth int
}

func (e runEnv) close() { _ = e.log.Sync() }

// logLevel is the least level logged: INFO for a daemon (serve), under
// --log-format json (machines read every line) and with -v; else WARN, so
// the console shows the progress view, the result and what went wrong,
// not the orchestrator's, target's and drivers' INFO lines between them.
func (c *cli) logLevel(daemon bool) zapcore.Level {
	if daemon || c.verbose || c.logFormat == "json" {
		return zapcore.InfoLevel
	}
	return zapcore.WarnLevel
}

// prepare builds the progress view (--log-format console) and the logger
// (logLevel; daemon for serve), loads the configuration (logging its
// warnings) and finds the binary.
func (c *cli) prepare(configPath string, daemon bool) (runEnv, error) {
	var view *progress.View
	logTo := c.stderr
	if c.logFormat == "console" {
		opts := progress.Options{Terminal: isTerminal(c.stderr)}
		if f, ok := c.stderr.(*os.File); ok && opts.Terminal {
			opts.Width = progress.TerminalWidth(f)
		}
		view = progress.New(c.stderr, opts)
		logTo = view
	}
	log, err := newLogger(c.logFormat, logTo, c.logLevel(daemon))
	if err != nil {
		return runEnv{}, err
	}
	cfg, err := c.loadConfig(configPath)
	if err != nil {
		return runEnv{}, err
	}
	c.warn(log, cfg.Warnings)
	exe, err := os.Executable()
	if err != nil {
		return runEnv{}, fmt.Errorf("cannot find the soakd binary to start the driver: %w", err)
	}
	env := runEnv{log: log, cfg: cfg, exe: exe, view: view, colour: termtext.UseColour(isTerminal(c.stdout), os.Getenv("NO_COLOR"))}
	if f, ok := c.stdout.(*os.File); ok && isTerminal(f) {
		if w := progress.TerminalWidth(f)(); w < report.SummaryWidth {
			env.summaryWidth = w
		}
	}
	return env, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
