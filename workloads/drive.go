package workloads

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Message types on the driver's output.
const (
	// MessageProgress carries a Progress, about once per second.
	MessageProgress = "progress"
	// MessageWindow carries a SecondWindow, once per second of the phase,
	// from a sharded driver only (soakd drive --shard i/N with N > 1).
	MessageWindow = "window"
	// MessageResult carries the final Result; it is the last line of a run.
	MessageResult = "result"
	// MessageError carries the reason a run failed; it is the last line of a run.
	MessageError = "error"
)

// MessageVersion is the version of the driver protocol's messages
// (schemas/driver.schema.json); it changes only when a field changes meaning
// or disappears. ReadMessages refuses a message of another version; one
// without a version (0) is read as this one, as drivers built before the
// field wrote it.
const MessageVersion = 1

// Message is one JSON line written by Drive and read by ReadMessages. Exactly
// one of Progress, Window, Result and Error is set, as Type says.
type Message struct {
	// Version is MessageVersion; Drive sets it on every line.
	Version int `json:"version"`
	// Type is MessageProgress, MessageResult or MessageError.
	Type string `json:"type"`
	// Progress is set when Type is MessageProgress.
	Progress *Progress `json:"progress,omitempty"`
	// Window is set when Type is MessageWindow.
	Window *SecondWindow `json:"window,omitempty"`
	// Result is set when Type is MessageResult.
	Result *Result `json:"result,omitempty"`
	// Error is set when Type is MessageError.
	Error string `json:"error,omitempty"`
}

// Drive reads one Phase as JSON from in, runs it against target, and writes
// JSON lines to out: {"type":"progress","progress":{...}} about once per second,
// as a shard (Phase.Shard) {"type":"window","window":{...}} for every second
// of the phase (SecondWindow), and finally {"type":"result","result":{...}}, or {"type":"error","error":"..."}
// on failure. It returns the run error too: an invalid spec or target, a
// failed write to out (which also aborts the run, since nobody is listening),
// or, after writing the partial result, an error wrapping the cause when ctx
// was cancelled before the phase completed.
//
// Drive is the body of `soakd drive`, the separate driver process; it reads
// only the first JSON value from in and does not wait for in to close.
func Drive(ctx context.Context, in io.Reader, out io.Writer, target string) error {
	return driveEndpoints(ctx, in, out, DriveOptions{}, func() (Endpoints, error) { return BaseEndpoints(target) })
}

// DriveAt is Drive against endpoints that need not share one base URL.
func DriveAt(ctx context.Context, in io.Reader, out io.Writer, target Endpoints) error {
	return DriveWith(ctx, in, out, target, DriveOptions{})
}

// DriveOptions adjusts the phase Drive reads.
type DriveOptions struct {
	// Shard, when not nil, replaces the spec's shard (soakd drive --shard).
	Shard *Shard
}

// DriveWith is DriveAt with options.
func DriveWith(ctx context.Context, in io.Reader, out io.Writer, target Endpoints, o DriveOptions) error {
	return driveEndpoints(ctx, in, out, o, func() (Endpoints, error) { return target, target.Validate() })
}

func driveEndpoints(ctx context.Context, in io.Reader, out io.Writer, o DriveOptions, endpoints func() (Endpoints, error)) error {
	w := &lineWriter{enc: json.NewEncoder(out)}
	dec := json.NewDecoder(in)
	dec.DisallowUnknownFields()
	var p Phase
	if err := dec.Decode(&p); err != nil {
		return w.fail(fmt.Errorf("cannot read phase: %w", err))
	}
	if o.Shard != nil {
		p.Shard = *o.Shard
	}
	if err := p.Validate(); err != nil {
		return w.fail(fmt.Errorf("invalid phase: %w", err))
	}

	target, err := endpoints()
	if err != nil {
		return w.fail(err)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	client := NewClient(p.Connections(), p.RequestTimeout)
	defer client.CloseIdleConnections()
	var windows func(SecondWindow)
	if p.Shard.Sharded() {
		windows = func(sw SecondWindow) {
			if err := w.write(Message{Type: MessageWindow, Window: &sw}); err != nil {
				cancel(err)
			}
		}
	}
	res, err := RunWindows(ctx, target, p, client, func(pr Progress) {
		if err := w.write(Message{Type: MessageProgress, Progress: &pr}); err != nil {
			cancel(err)
		}
	}, windows)
	if err != nil {
		return w.fail(err)
	}
	if err := w.write(Message{Type: MessageResult, Result: &res}); err != nil {
		return err
	}
	if res.Aborted {
		return fmt.Errorf("phase %q aborted: %w", p.Name, context.Cause(ctx))
	}
	return nil
}

// lineWriter writes whole JSON lines under a mutex (json.Encoder writes each
// value and its newline in one Write) and remembers the first write error, after
// which it writes nothing more.
type lineWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
	err error
}

// write encodes m as one line.
func (w *lineWriter) write(m Message) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	m.Version = MessageVersion
	if err := w.enc.Encode(m); err != nil {
		w.err = fmt.Errorf("cannot write %s message: %w", m.Type, err)
	}
	return w.err
}

// fail writes err as an error message and returns it, joined with any write error.
func (w *lineWriter) fail(err error) error {
	if werr := w.write(Message{Type: MessageError, Error: err.Error()}); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// ReadMessages decodes the driver's JSON lines from r and calls fn for each
// until r ends (io.EOF gives a nil error), fn returns an error, a line is
// malformed, or ctx is cancelled. It checks every message's shape (a progress
// message carries Progress, a result carries a Result whose histograms are
// valid) so fn can trust it; an error message is passed to fn like any other.
// ctx is checked between messages: to interrupt a blocked read, close r.
func ReadMessages(ctx context.Context, r io.Reader, fn func(Message) error) error {
	dec := json.NewDecoder(r)
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stopped reading driver messages: %w", err)
		}
		var m Message
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("cannot decode driver message: %w", err)
		}
		if err := m.check(); err != nil {
			return fmt.Errorf("invalid driver message: %w", err)
		}
		if err := fn(m); err != nil {
			return err
		}
	}
}

// CheckMessage reports whether m, decoded from a driver's output, is well
// formed (ReadMessages checks every message it reads with it).
func CheckMessage(m Message) error { return m.check() }

// check reports whether m is well formed.
func (m Message) check() error {
	if m.Version != MessageVersion && m.Version != 0 {
		return fmt.Errorf("message version %d, this soakd reads version %d (is the driver another soakd build?)", m.Version, MessageVersion)
	}
	switch m.Type {
	case MessageProgress:
		if m.Progress == nil {
			return errors.New("progress message without progress")
		}
		if l := m.Progress.IntervalLatency; l != nil {
			if l.Count <= 0 {
				return fmt.Errorf("progress interval_latency has count %d: a driver leaves the field out when no request succeeded", l.Count)
			}
			if !(0 <= l.P50Ms && l.P50Ms <= l.P90Ms && l.P90Ms <= l.P99Ms && l.P99Ms <= l.MaxMs) {
				return fmt.Errorf("progress interval_latency is not ordered 0 <= p50 <= p90 <= p99 <= max: %+v", *l)
			}
		}
	case MessageWindow:
		if m.Window == nil {
			return errors.New("window message without window")
		}
		if err := m.Window.check(); err != nil {
			return err
		}
	case MessageResult:
		if m.Result == nil {
			return errors.New("result message without result")
		}
		if o := m.Result.Open; o != nil && o.ServiceHistogram != nil {
			if err := o.ServiceHistogram.Validate(); err != nil {
				return fmt.Errorf("open service histogram is invalid: %w", err)
			}
		}
		for _, op := range m.Result.Operations {
			if op.Histogram == nil {
				return fmt.Errorf("operation %s has no histogram", op.Operation)
			}
			if err := op.Histogram.Validate(); err != nil {
				return fmt.Errorf("operation %s has an invalid histogram: %w", op.Operation, err)
			}
		}
	case MessageError:
		if m.Error == "" {
			return errors.New("error message without error")
		}
	default:
		return fmt.Errorf("unknown message type %q", m.Type)
	}
	return nil
}
