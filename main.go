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
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/soakd/soakd/api"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/pin"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/workloads"
)

// defaultConfig is config.yaml, the embedded defaults every user file is
// decoded on top of.
//
//go:embed config.yaml
var defaultConfig []byte

const usage = `soakd: GraphQL vs REST resource soak tests with a pass/fail verdict.

Usage:
  soakd run   [--config FILE] [--profile NAME] [--out DIR] [--arms A,B]  run a suite once; exit with its verdict
  soakd serve [--config FILE]                                serve the target, /metrics and the control API until SIGTERM
  soakd soak  [--config FILE] [--profile NAME] [--cycles N] [--duration D]  run cycles on one target; exit with the soak verdict
  soakd runs | status [ID] | stop [ID] | baseline ID  [--api URL]  talk to a running soakd serve
  soakd drive --target URL [--spec FILE | --phase NAME]      the load driver (started by run; usable by hand)
  soakd report DIR                                           re-render a run's reports; exit with its verdict
  soakd compare [--config FILE] OLD NEW                      compare two runs metric by metric; exit 0 or 1
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
	case "runs":
		err = runsCmd(ctx, rest, stdout, stderr)
	case "status":
		err = statusCmd(ctx, rest, stdout, stderr)
	case "stop":
		err = stopCmd(ctx, rest, stdout, stderr)
	case "baseline":
		err = baselineCmd(ctx, rest, stdout, stderr)
	case "soak":
		err = soakCmd(ctx, rest, stdout, stderr)
	case "drive":
		err = driveCmd(ctx, rest, stdout, stderr)
	case "config":
		err = configCmd(rest, stdout, stderr)
	case "report":
		err = reportCmd(rest, stdout, stderr)
	case "compare":
		err = compareCmd(rest, stdout, stderr)
	default:
		err = daemon.Usagef("unknown command %q; run soakd --help", cmd)
	}
	code := daemon.CodeOf(err)
	// A fail or inconclusive verdict has already printed its reasons.
	if err != nil && !errors.Is(err, flag.ErrHelp) && code != daemon.ExitFail && code != daemon.ExitInconclusive {
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

// runEnv is what the commands that run load share: a logger, the
// configuration and the path of this binary (started as the driver).
type runEnv struct {
	log *zap.Logger
	cfg *daemon.Config
	exe string
}

func (e runEnv) close() { _ = e.log.Sync() }

// prepare builds the logger, loads the configuration and finds the binary.
func prepare(c common, stderr io.Writer) (runEnv, error) {
	log, err := newLogger(c.logFormat, stderr)
	if err != nil {
		return runEnv{}, err
	}
	cfg, err := loadConfig(c.config)
	if err != nil {
		return runEnv{}, err
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

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	var profile, out, arms string
	fs := newFlags("run", "run [--config FILE] [--profile NAME] [--out DIR] [--arms A,B]", stderr, &c)
	fs.StringVar(&arms, "arms", "rest,graphql", "compared arms: rest,graphql; or rest,rest / graphql,graphql to measure the machine's noise floor")
	fs.StringVar(&c.config, "config", "", "YAML file decoded on top of the embedded config.yaml")
	fs.StringVar(&profile, "profile", "", "profile to run (default: the config's default_profile)")
	fs.StringVar(&out, "out", "", "run directory for the reports (default runs/<UTC timestamp>)")
	if err := parse(fs, args); err != nil {
		return err
	}
	a, err := daemon.ParseArms(arms)
	if err != nil {
		return err
	}
	env, err := prepare(c, stderr)
	if err != nil {
		return err
	}
	defer env.close()
	log, cfg, exe := env.log, env.cfg, env.exe
	_, err = daemon.RunSuite(ctx, cfg, daemon.RunOptions{
		Profile:    profile,
		OutDir:     out,
		Executable: exe,
		Arms:       a,
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
	env, err := prepare(c, stderr)
	if err != nil {
		return err
	}
	defer env.close()
	log, cfg, exe := env.log, env.cfg, env.exe
	return daemon.Serve(ctx, cfg, daemon.ServeOptions{Executable: exe, Log: log, Stderr: stderr})
}

// apiClient parses a client command's flags (--api, --config and the common
// ones) and builds a control API client from --api (default: the config's
// control.listen) and the token in SOAKD_CONTROL_TOKEN or control.token. It
// returns the flag set for the positional arguments.
func apiClient(name, synopsis string, args []string, stderr io.Writer) (*api.Client, *flag.FlagSet, error) {
	var c common
	var base string
	fs := newFlags(name, synopsis, stderr, &c)
	fs.StringVar(&c.config, "config", "", "YAML file decoded on top of the embedded config.yaml (for control.listen and control.token)")
	fs.StringVar(&base, "api", "", "control API base URL (default http://<control.listen>)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil, err
		}
		return nil, nil, daemon.WithCode(daemon.ExitUsage, err)
	}
	cfg, err := loadConfig(c.config)
	if err != nil {
		return nil, nil, err
	}
	if base == "" {
		base = "http://" + cfg.Control.Listen
	}
	token := cfg.Control.Token
	if env := os.Getenv(daemon.TokenEnv); env != "" {
		token = env
	}
	return &api.Client{BaseURL: base, Token: token}, fs, nil
}

func runsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cl, fs, err := apiClient("runs", "runs [--api URL]", args, stderr)
	if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return daemon.Usagef("unexpected argument %q", fs.Arg(0))
	}
	runs, err := cl.List(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
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
	readOnlyNote(ctx, cl, stdout)
	return nil
}

// readOnlyNote prints why the daemon's history is read-only, when it is.
// A daemon that cannot say (an older one, without /v1/history) gets no
// note: the command's own answer has already been printed.
func readOnlyNote(ctx context.Context, cl *api.Client, w io.Writer) {
	if h, err := cl.History(ctx); err == nil && h.ReadOnly {
		fmt.Fprintf(w, "history is read-only, no run can start: %s\n", h.Reason)
	}
}

// pickRun returns the id given, or else the running run (for stop) or the
// newest run (for status).
func pickRun(ctx context.Context, cl *api.Client, fs *flag.FlagSet, running bool) (string, error) {
	if fs.NArg() > 1 {
		return "", daemon.Usagef("at most one run id")
	}
	if fs.NArg() == 1 {
		return fs.Arg(0), nil
	}
	runs, err := cl.List(ctx)
	if err != nil {
		return "", err
	}
	for _, r := range runs {
		if !running || r.Status == "running" {
			return r.ID, nil
		}
	}
	if running {
		return "", daemon.Usagef("no run is in progress")
	}
	return "", daemon.Usagef("no run yet")
}

func statusCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cl, fs, err := apiClient("status", "status [--api URL] [ID]", args, stderr)
	if err != nil {
		return err
	}
	id, err := pickRun(ctx, cl, fs, false)
	if err != nil {
		return err
	}
	r, raw, err := cl.Get(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "run %s (%s): %s, verdict %q, started %s, dir %s\n", r.ID, r.Profile, r.Status, r.Verdict, r.StartedAt.Format(time.RFC3339), r.Dir)
	if r.Reason != "" {
		fmt.Fprintf(stdout, "  reason: %s\n", r.Reason)
	}
	var rep report.Report
	if raw != nil && json.Unmarshal(raw, &rep) == nil && len(rep.KPIs) > 0 {
		if err := rep.Table(stdout); err != nil { // the table ends with every reason
			return err
		}
	} else {
		for _, why := range r.Reasons {
			fmt.Fprintf(stdout, "  - %s\n", why)
		}
	}
	readOnlyNote(ctx, cl, stdout)
	return nil
}

func stopCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cl, fs, err := apiClient("stop", "stop [--api URL] [ID]", args, stderr)
	if err != nil {
		return err
	}
	id, err := pickRun(ctx, cl, fs, true)
	if err != nil {
		return err
	}
	if err := cl.Stop(ctx, id); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stopping run %s\n", id)
	return nil
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
	var cpus string
	fs.StringVar(&cpus, "cpus", "", "pin the driver to these CPUs, e.g. 1 or 2-3")
	if err := parse(fs, args); err != nil {
		return err
	}
	if target == "" {
		return daemon.Usagef("drive needs --target URL")
	}
	if cpus != "" {
		set, err := pin.Parse(cpus)
		if err != nil {
			return daemon.WithCode(daemon.ExitUsage, fmt.Errorf("--cpus: %w", err))
		}
		if err := pin.Process(set); err != nil {
			return fmt.Errorf("cannot pin the driver to CPUs %v: %w", set, err)
		}
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

func reportCmd(args []string, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("report", "report DIR", stderr, &c)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return daemon.WithCode(daemon.ExitUsage, err)
	}
	if fs.NArg() != 1 {
		return daemon.Usagef("report needs one run directory")
	}
	dir := fs.Arg(0)
	rep, err := report.Read(filepath.Join(dir, report.JSONFile))
	if err != nil {
		return daemon.WithCode(daemon.ExitUsage, err)
	}
	var samples *report.Samples
	if s, err := report.ReadSamples(filepath.Join(dir, report.SamplesFile)); err == nil {
		samples = s
	} else if !errors.Is(err, os.ErrNotExist) {
		return daemon.WithCode(daemon.ExitUsage, err)
	}
	if err := rep.Write(dir, samples); err != nil {
		return err
	}
	if err := rep.Table(stdout); err != nil {
		return err
	}
	return verdictError(rep.Verdict)
}

func compareCmd(args []string, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("compare", "compare [--config FILE] OLD NEW", stderr, &c)
	fs.StringVar(&c.config, "config", "", "YAML file decoded on top of the embedded config.yaml (for the compare: limits)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return daemon.WithCode(daemon.ExitUsage, err)
	}
	if fs.NArg() != 2 {
		return daemon.Usagef("compare needs two run directories (or report.json files): OLD NEW")
	}
	cfg, err := loadConfig(c.config)
	if err != nil {
		return err
	}
	var reps [2]*report.Report
	for i, arg := range fs.Args() {
		path := arg
		if st, err := os.Stat(arg); err == nil && st.IsDir() {
			path = filepath.Join(arg, report.JSONFile)
		}
		if reps[i], err = report.Read(path); err != nil {
			return daemon.WithCode(daemon.ExitUsage, err)
		}
	}
	lim := cfg.Compare.Limits()
	lim.Confidence = cfg.KPIs.Confidence
	cmp := report.CompareRuns(reps[0], reps[1], lim)
	if err := cmp.Table(stdout); err != nil {
		return err
	}
	return verdictError(cmp.Verdict)
}

// verdictError maps a verdict to the exit code: pass 0, fail 1,
// inconclusive 4, anything else (an aborted run, or a report still
// running) 3.
func verdictError(v string) error {
	switch v {
	case "pass":
		return nil
	case "fail":
		return daemon.WithCode(daemon.ExitFail, errors.New("the verdict is fail"))
	case "inconclusive":
		return daemon.WithCode(daemon.ExitInconclusive, errors.New("the verdict is inconclusive"))
	}
	return daemon.WithCode(daemon.ExitAborted, fmt.Errorf("the run's verdict is %q", v))
}

func soakCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var c common
	var profile string
	var cycles int
	var duration time.Duration
	fs := newFlags("soak", "soak [--config FILE] [--profile NAME] [--cycles N] [--duration D]", stderr, &c)
	fs.StringVar(&c.config, "config", "", "YAML file decoded on top of the embedded config.yaml")
	fs.StringVar(&profile, "profile", "", "profile each cycle runs (default: soak.profile, then default_profile)")
	fs.IntVar(&cycles, "cycles", -1, "cycles to run (default: soak.cycles)")
	fs.DurationVar(&duration, "duration", -1, "total soak length, e.g. 24h (default: soak.duration)")
	if err := parse(fs, args); err != nil {
		return err
	}
	env, err := prepare(c, stderr)
	if err != nil {
		return err
	}
	defer env.close()
	log, cfg, exe := env.log, env.cfg, env.exe
	if cycles < 0 {
		cycles = cfg.Soak.Cycles
	}
	if duration < 0 {
		duration = cfg.Soak.Duration
	}
	rep, err := daemon.Soak(ctx, cfg, daemon.SoakOptions{
		RunOptions: daemon.RunOptions{Profile: profile, Executable: exe, Log: log, Stderr: stderr, Terminal: isTerminal(stderr)},
		Cycles:     cycles, Duration: duration,
	})
	if rep != nil {
		rep.Table(stdout)
	}
	return err
}

func baselineCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cl, fs, err := apiClient("baseline", "baseline [--api URL] ID", args, stderr)
	if err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return daemon.Usagef("baseline needs one run id")
	}
	if err := cl.SetBaseline(ctx, fs.Arg(0)); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "run %s is the baseline\n", fs.Arg(0))
	return nil
}
