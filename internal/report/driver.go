package report

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/soakd/soakd/internal/termtext"
	"github.com/soakd/soakd/workloads"
)

// DriverOutput is what `soakd report` reads from a driver's JSON lines
// (`soakd drive` output): its result, or its error, and how many lines of
// each kind it sent.
type DriverOutput struct {
	Result   *workloads.Result
	Error    string
	Progress int
	Windows  int
}

// ReadDriverOutput reads a driver's JSON lines from r (every message
// checked as soakd checks a driver's); the last result or error wins.
func ReadDriverOutput(ctx context.Context, r io.Reader) (DriverOutput, error) {
	var out DriverOutput
	err := workloads.ReadMessages(ctx, r, func(m workloads.Message) error {
		switch m.Type {
		case workloads.MessageProgress:
			out.Progress++
		case workloads.MessageWindow:
			out.Windows++
		case workloads.MessageResult:
			out.Result = m.Result
		case workloads.MessageError:
			out.Error = m.Error
		}
		return nil
	})
	return out, err
}

// WriteDriverText renders a driver's output for people, as `vegeta report`
// renders its results: the phase, its span, requests, errors, throughput
// and latency percentiles, per operation, the errors by class with an
// example, and the subscription account.
func WriteDriverText(w io.Writer, d DriverOutput) error {
	if d.Result == nil {
		if d.Error != "" {
			_, err := fmt.Fprintf(w, "the driver failed: %s\n", d.Error)
			return err
		}
		_, err := fmt.Fprintf(w, "no result: the driver's output ends after %d progress and %d window lines (it was stopped, or the output is cut)\n", d.Progress, d.Windows)
		return err
	}
	r := d.Result
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s (%s arm, %s model), driver pid %d", r.Phase, r.Arm, r.Model, r.DriverPID)
	if r.Shard.Sharded() {
		fmt.Fprintf(&b, ", shard %s", r.Shard)
	}
	if r.Aborted {
		b.WriteString(", ABORTED (a partial result)")
	}
	fmt.Fprintf(&b, "\n  %s → %s, %.1f s\n", r.Start.Format("2006-01-02T15:04:05.000Z07:00"), r.End.Format("15:04:05.000"), r.DurationSeconds)
	fmt.Fprintf(&b, "  requests %s, errors %s, throughput %s req/s over the steady window", termtext.Count(r.Requests), termtext.Count(r.Errors), termtext.Rate(r.ThroughputRPS))
	if r.SteadyFallback {
		fmt.Fprintf(&b, " (none: the whole phase, %s)", r.SteadyFallbackReason)
	}
	b.WriteString("\n")
	l := r.LatencyMs
	fmt.Fprintf(&b, "  latency (successful requests) p50 %s, p90 %s, p99 %s, p99.9 %s, max %s, mean %s\n",
		termtext.Millis(l.P50), termtext.Millis(l.P90), termtext.Millis(l.P99), termtext.Millis(l.P999), termtext.Millis(l.Max), termtext.Millis(l.Mean))
	if r.LoadCPUSeconds != nil && r.DurationSeconds > 0 {
		fmt.Fprintf(&b, "  driver CPU %.2f s over the load (%.1f %% of one core)\n", *r.LoadCPUSeconds, *r.LoadCPUSeconds/r.DurationSeconds*100)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  operation\tusers\trequests\terrors\tp50\tp99\tmax\t")
	for _, op := range r.Operations {
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", op.Operation, op.Users, termtext.Count(op.Requests), termtext.Count(op.Errors),
			termtext.Millis(op.LatencyMs.P50), termtext.Millis(op.LatencyMs.P99), termtext.Millis(op.LatencyMs.Max))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.Reset()
	for _, class := range slices.Sorted(maps.Keys(r.ErrorsByClass)) {
		fmt.Fprintf(&b, "  errors %s: %s", class, termtext.Count(r.ErrorsByClass[class]))
		if ex := r.ErrorExamples[class]; len(ex) > 0 {
			fmt.Fprintf(&b, " (e.g. %q)", ex[0])
		}
		b.WriteString("\n")
	}
	if s := r.Subscriptions; s != nil {
		fmt.Fprintf(&b, "  subscriptions %d: %s of %s events received, %s lost, %s duplicated\n", s.Subscriptions,
			termtext.Count(s.Received), termtext.Count(s.Expected), termtext.Count(s.Lost), termtext.Count(s.Duplicated))
	}
	if ml := r.MaxLoad; ml != nil {
		fmt.Fprintf(&b, "  max load: %s (%s); peak %s req/s with %d users\n", ml.Reason, ml.Detail, termtext.Rate(ml.PeakThroughputRPS), ml.PeakUsers)
	}
	fmt.Fprintf(&b, "  (%d progress and %d window lines)\n", d.Progress, d.Windows)
	_, err := io.WriteString(w, b.String())
	return err
}
