// Command soakd proves, or disproves, that a GraphQL release costs no more
// CPU, GC and throughput than it should, measured against a REST control
// group over the same data. See README.md.
//
// main is the only place that reads flags, installs signal handling and calls
// os.Exit; everything else lives in the packages it wires together.
package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/workloads"
)

// defaultConfig is config.yaml, the embedded defaults every user file is
// decoded on top of.
//
//go:embed config.yaml
var defaultConfig []byte

const usage = `soakd: GraphQL vs REST resource soak tests with a pass/fail verdict.

Usage:
  soakd run   [--config FILE] [--profile NAME] [--out DIR]   run a suite once; exit with its verdict
  soakd serve [--config FILE]                                serve the target and /metrics until SIGTERM
  soakd drive --target URL [--spec FILE | --phase NAME]      the load driver (started by run; usable by hand)
  soakd config [--config FILE]                               print the effective configuration's profiles

Every command takes --log-format console|json and --help.
Exit codes: 0 all KPIs passed, 1 a KPI failed, 2 bad usage or config, 3 aborted.
`

func main() {
	os.Exit(int(run(os.Args[1:], os.Stdout, os.Stderr)))
}

func run(args []string, stdout, stderr io.Writer) daemon.ExitCode {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return daemon.ExitUsage
		}
		return daemon.ExitPass
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "run":
		err = runCmd(ctx, rest, stdout, stderr)
	case "serve":
		err = serveCmd(ctx, rest, stderr)
	case "drive":
		err = driveCmd(ctx, rest, stdout, stderr)
	case "config":
		err = configCmd(rest, stdout, stderr)
	default:
		err = daemon.Usagef("unknown command %q; run soakd --help", cmd)
	}
	code := daemon.CodeOf(err)
	if err != nil && !errors.Is(err, flag.ErrHelp) && code != daemon.ExitFail {
		fmt.Fprintf(stderr, "soakd: %v\n", err)
	}
	if errors.Is(err, flag.ErrHelp) {
		return daemon.ExitPass
	}
	return code
}

// common holds the flags every command shares.
type common struct {
	config    string
	logFormat string
}

func newFlags(name, synopsis string, stderr io.Writer, c *common) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.logFormat, "log-format", "console", "log format: console (human) or json")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: soakd %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return daemon.WithCode(daemon.ExitUsage, err)
	}
	if fs.NArg() > 0 {
		return daemon.Usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

func loadConfig(path string) (*daemon.Config, error) {
	if path == "" {
		return daemon.LoadConfig(defaultConfig, nil, "config.yaml (embedded)")
	}
	user, err := os.ReadFile(path)
	if err != nil {
		return nil, daemon.WithCode(daemon.ExitUsage, fmt.Errorf("cannot read --config: %w", err))
	}
	return daemon.LoadConfig(defaultConfig, user, path)
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
		return nil, daemon.Usagef("--log-format must be console or json (got %q)", format)
	}
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(stderr), zap.InfoLevel)), nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	var profile, out string
	fs := newFlags("run", "run [--config FILE] [--profile NAME] [--out DIR]", stderr, &c)
	fs.StringVar(&c.config, "config", "", "YAML file decoded on top of the embedded config.yaml")
	fs.StringVar(&profile, "profile", "", "profile to run (default: the config's default_profile)")
	fs.StringVar(&out, "out", "", "run directory for the reports (default runs/<UTC timestamp>)")
	if err := parse(fs, args); err != nil {
		return err
	}
	log, err := newLogger(c.logFormat, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	cfg, err := loadConfig(c.config)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find the soakd binary to start the driver: %w", err)
	}
	_, err = daemon.RunSuite(ctx, cfg, daemon.RunOptions{
		Profile:    profile,
		OutDir:     out,
		Executable: exe,
		Log:        log,
		Stdout:     stdout,
		Stderr:     stderr,
		Terminal:   isTerminal(stderr),
	})
	return err
}

func serveCmd(ctx context.Context, args []string, stderr io.Writer) error {
	var c common
	fs := newFlags("serve", "serve [--config FILE]", stderr, &c)
	fs.StringVar(&c.config, "config", "", "YAML file decoded on top of the embedded config.yaml")
	if err := parse(fs, args); err != nil {
		return err
	}
	log, err := newLogger(c.logFormat, stderr)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	cfg, err := loadConfig(c.config)
	if err != nil {
		return err
	}
	return daemon.Serve(ctx, cfg, log)
}

func driveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	var target, spec, profile, phase string
	fs := newFlags("drive", "drive --target URL (--spec FILE | --phase NAME [--profile NAME] [--config FILE])", stderr, &c)
	fs.StringVar(&target, "target", "", "base URL of the target, e.g. http://127.0.0.1:8080 (required)")
	fs.StringVar(&spec, "spec", "-", "phase spec as JSON; - reads standard input")
	fs.StringVar(&c.config, "config", "", "with --phase: YAML file decoded on top of the embedded config.yaml")
	fs.StringVar(&profile, "profile", "", "with --phase: profile holding the phase (default: the config's default_profile)")
	fs.StringVar(&phase, "phase", "", "run this phase of the profile instead of reading --spec")
	if err := parse(fs, args); err != nil {
		return err
	}
	if target == "" {
		return daemon.Usagef("drive needs --target URL")
	}
	if _, err := newLogger(c.logFormat, stderr); err != nil {
		return err
	}
	var in io.Reader = os.Stdin
	switch {
	case phase != "":
		cfg, err := loadConfig(c.config)
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
			return daemon.WithCode(daemon.ExitUsage, fmt.Errorf("cannot open --spec: %w", err))
		}
		defer f.Close()
		in = f
	}
	return workloads.Drive(ctx, in, stdout, target)
}

func configCmd(args []string, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("config", "config [--config FILE]", stderr, &c)
	fs.StringVar(&c.config, "config", "", "YAML file decoded on top of the embedded config.yaml")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(c.config)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "configuration is valid; default profile %q\n", cfg.DefaultProfile)
	for _, name := range cfg.ProfileNames() {
		p := cfg.Profiles[name]
		fmt.Fprintf(stdout, "  %-10s %d phases  %s\n", name, len(p.Phases), p.Description)
	}
	return nil
}
