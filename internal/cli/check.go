package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/soakd/soakd/daemon/preflight"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/termtext"
)

func (c *cli) checkCmd() *cobra.Command {
	var configPath, profile, format string
	var sets []string
	cmd := &cobra.Command{
		Use:                   "check [--config FILE] [--set KEY=VALUE]... [--profile NAME] [--format text|json]",
		DisableFlagsInUseLine: true,
		Short:                 "Send each operation of a profile once (and raise one event on each subscription) before a long run",
		Long: `Open the target as soakd run would, send every operation the profile uses
once (one user, one request, with the phase's data and expectations), open
each subscription and raise one event on it, read the target's figures
once, then stop what it started: a typo in a path, an expectation or a
selector shows in seconds, not 20 minutes into a run.

Prints one line per operation (✓ or ✗, its arm, its latency and what was
seen: the error class and example, or that every expectation was met),
then which resource figures the target gives and which it does not, with
the reason. Exit code: 0 when every check passed, 1 when one failed, 2 for
a bad configuration or profile, 3 when the target cannot be opened.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "text" && format != "json" {
				return exitcode.Usagef("--format must be text or json (got %q)", format)
			}
			env, err := c.prepare(configPath, false)
			if err != nil {
				return err
			}
			defer env.close()
			if env.cfg, err = withSets(env.cfg, sets); err != nil {
				return err
			}
			res, err := preflight.Run(cmd.Context(), env.cfg, preflight.Options{Profile: profile, Executable: env.exe, Log: env.log})
			if res.Profile == "" {
				if exitcode.Of(err) == exitcode.Usage {
					return err
				}
				return exitcode.With(exitcode.Aborted, err)
			}
			if format == "json" {
				b, jerr := json.MarshalIndent(res, "", "  ")
				if jerr != nil {
					return jerr
				}
				fmt.Fprintln(c.stdout, string(b))
			} else {
				printCheck(c.stdout, res)
			}
			return err
		},
	}
	configFlag(cmd, &configPath)
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override KEY=VALUE on top of --config (repeatable), as soakd run has")
	cmd.Flags().StringVar(&profile, "profile", "", "profile whose operations are checked (default: the config's default_profile)")
	cmd.Flags().StringVar(&format, "format", "text", "text, or json (the result as one object)")
	return cmd
}

// printCheck prints a check's result for people: a line per check, the
// target's figures, the outcome.
func printCheck(w io.Writer, r preflight.Result) {
	fmt.Fprintf(w, "check of profile %s against the %s target (%s) in %.1f s\n", r.Profile, r.Target.Kind, r.Target.GraphQLURL, r.Seconds)
	for _, c := range r.Checks {
		mark := "✓"
		if !c.OK {
			mark = "✗"
		}
		name := c.Operation
		if c.RaisedBy != "" {
			name += " ← " + c.RaisedBy
		}
		lat := "—"
		if c.LatencyMs != nil {
			lat = termtext.Millis(*c.LatencyMs)
		}
		fmt.Fprintf(w, "  %s %-34s %-7s %9s  %s\n", mark, name, c.Arm, lat, c.Detail)
	}
	var measured, missing []string
	for _, f := range r.Target.Figures {
		if f.Measured {
			measured = append(measured, f.Name)
		} else {
			missing = append(missing, f.Name+" ("+f.Reason+")")
		}
	}
	switch {
	case len(r.Target.Figures) == 0:
		fmt.Fprintln(w, "figures: the built-in target measures every figure in its own process")
	default:
		fmt.Fprintf(w, "figures measured: %s\n", strings.Join(measured, ", "))
		for _, m := range missing {
			fmt.Fprintf(w, "  not measured: %s\n", m)
		}
	}
	if n := r.Failed(); n > 0 {
		fmt.Fprintf(w, "check: FAIL (%d of %d checks failed)\n", n, len(r.Checks))
	} else {
		fmt.Fprintf(w, "check: pass (%d checks)\n", len(r.Checks))
	}
}
