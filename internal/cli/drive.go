package cli

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap/zapcore"

	"github.com/soakd/soakd/daemon/builtin"
	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/guard"
	"github.com/soakd/soakd/internal/pin"
	"github.com/soakd/soakd/internal/report"
	"github.com/soakd/soakd/workloads"
)

func (c *cli) driveCmd() *cobra.Command {
	var configPath, target, spec, profile, phase, cpus, graphqlURL, graphqlWSURL, restURL, shard string
	cmd := &cobra.Command{
		Use:                   "drive (--target URL | --graphql-url URL --rest-url URL [--graphql-ws-url URL]) (--spec FILE | --phase NAME [--profile NAME] [--config FILE]) [--cpus LIST] [--shard I/N]",
		DisableFlagsInUseLine: true,
		Short:                 "The load driver: run one phase against a target, JSON lines on stdout",
		Long: `The load driver. soakd run starts it for every phase; it can also be run by
hand against a soakd serve elsewhere. It reads a phase spec (JSON, from --spec
FILE or "--spec -" for standard input, or built from the configPath with --phase)
and writes JSON lines to standard output: progress about once a second, then
the result (or an error). With --shard I/N it is shard I of N drivers that
together offer the phase's load, and offers its share.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ep, err := driveEndpoints(target, graphqlURL, graphqlWSURL, restURL)
			if err != nil {
				return err
			}
			var opts workloads.DriveOptions
			if cmd.Flags().Changed("shard") {
				sh, err := workloads.ParseShard(shard)
				if err != nil {
					return exitcode.With(exitcode.Usage, fmt.Errorf("--shard: %w", err))
				}
				opts.Shard = &sh
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
				cfg, err := c.loadConfig(configPath)
				if err != nil {
					return err
				}
				b, err := config.PhaseSpec(cfg, profile, phase)
				if err != nil {
					return err
				}
				in = bytes.NewReader(b)
			case spec != "-":
				// A regular file of at most MaxSpecBytes: a FIFO blocked in
				// open(2) for ever, /dev/zero read without end.
				f, err := config.OpenBounded(spec, config.MaxSpecBytes)
				if err != nil {
					return exitcode.With(exitcode.Usage, fmt.Errorf("cannot open --spec: %w", err))
				}
				defer f.Close()
				in = f
			}
			return workloads.DriveWith(cmd.Context(), in, c.stdout, ep, opts)
		},
	}
	cmd.Flags().StringVar(&target, "target", "", "base URL of a target serving /graphql and /api/donuts/{id}, e.g. http://127.0.0.1:8080")
	cmd.Flags().StringVar(&graphqlURL, "graphql-url", "", "the GraphQL endpoint, e.g. http://127.0.0.1:4000/graphql (instead of, or overriding, --target's)")
	cmd.Flags().StringVar(&graphqlWSURL, "graphql-ws-url", "", "the GraphQL websocket URL for subscriptions (default: --graphql-url with a ws scheme)")
	cmd.Flags().StringVar(&restURL, "rest-url", "", "base URL of the REST twin, serving /api/donuts/{id} (instead of, or overriding, --target)")
	cmd.Flags().StringVar(&spec, "spec", "", "phase spec as JSON from this file; - reads standard input")
	configFlagUsage(cmd, &configPath, "with --phase: YAML file decoded on top of the embedded config.yaml")
	cmd.Flags().StringVar(&profile, "profile", "", "with --phase: profile holding the phase (default: the config's default_profile)")
	cmd.Flags().StringVar(&phase, "phase", "", "run this phase of the profile instead of reading --spec")
	cmd.Flags().StringVar(&cpus, "cpus", "", "pin the driver to these CPUs, e.g. 1 or 2-3")
	cmd.Flags().StringVar(&shard, "shard", "", "offer shard I of N of the phase's load, e.g. 1/3 (overrides the spec's shard)")
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
	var configPath string
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
` + config.TargetTokenEnv + `. It stops on SIGTERM or Ctrl-C (exit 0).`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := newLogger(c.logFormat, c.stderr, zapcore.InfoLevel)
			if err != nil {
				return err
			}
			defer func() { _ = log.Sync() }()
			// The measured process reads no operation data: it serves.
			cfg, err := c.loadWith(config.LoadTarget, configPath)
			if err != nil {
				return err
			}
			c.warn(log, cfg.Warnings)
			if k := cfg.Target.Kind; k != "" && k != report.TargetBuiltin {
				return exitcode.Usagef("soakd target serves the built-in target; the config's target.kind is %s", k)
			}
			token := os.Getenv(config.TargetTokenEnv)
			_ = os.Unsetenv(config.TargetTokenEnv)
			return builtin.ServeTarget(cmd.Context(), cfg, builtin.TargetOptions{Log: log, Stdout: c.stdout, Token: token})
		},
	}
	configFlag(cmd, &configPath)
	return cmd
}

// guardCmd is `soakd guard`, the process soakd starts for a command
// target: it runs target.argv under it and ends the whole tree when soakd
// stops it or dies (package guard). It is not for people to run, so it is
// hidden from the help.
func (c *cli) guardCmd() *cobra.Command {
	var (
		parent int
		grace  time.Duration
	)
	cmd := &cobra.Command{
		Use:    guard.Command + " --parent PID --grace D -- ARGV...",
		Short:  "Run a command target's process tree so that none of it outlives soakd (started by soakd)",
		Hidden: true,
		Args:   cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			c.quiet = true // the exit is the target's, and its stderr is the target's log
			code, sig := guard.Run(cmd.Context(), argv, parent, grace, c.stderr)
			if sig != 0 {
				// End as argv's process did, so soakd reports "signal: killed".
				signal.Reset(sig)
				_ = syscall.Kill(os.Getpid(), sig)
				time.Sleep(time.Second)
			}
			if code == 0 {
				return nil
			}
			return exitcode.With(exitcode.Code(code), fmt.Errorf("the target exited with code %d", code))
		},
	}
	cmd.Flags().IntVar(&parent, "parent", 0, "pid of the soakd that started the guard")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL when the tree is ended")
	return cmd
}
