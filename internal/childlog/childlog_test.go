package childlog

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestLinesKeepsJSONStreamJSON: whatever a driver prints on standard
// error (its own JSON log lines, a plain-text error, a panic's trace, a
// last line without a newline), the daemon's JSON log stream gets only JSON
// lines, each carrying the phase.
func TestLinesKeepsJSONStreamJSON(t *testing.T) {
	var out bytes.Buffer
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&out), zap.InfoLevel)
	l := &Lines{Log: zap.New(core).With(zap.String("phase", "graphql-load"))}
	input := `{"level":"error","ts":1.5,"msg":"driver failed","why":"timeout"}` + "\n" +
		"soakd: interrupted\n" +
		"panic: boom\r\n\ngoroutine 1 [running]:\n" +
		"last line without newline"
	// Written in odd-sized pieces, as a pipe delivers it.
	for len(input) > 0 {
		n := min(7, len(input))
		if _, err := l.Write([]byte(input[:n])); err != nil {
			t.Fatal(err)
		}
		input = input[n:]
	}
	l.Flush()

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("got %d log lines, want 5:\n%s", len(lines), out.String())
	}
	for i, line := range lines {
		var e map[string]any
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %d is not JSON: %q", i, line)
		}
		if e["phase"] != "graphql-load" {
			t.Errorf("line %d lacks the phase: %q", i, line)
		}
	}
	var first map[string]any
	_ = json.Unmarshal([]byte(lines[0]), &first)
	if first["level"] != "error" || first["msg"] != "driver failed" || first["fields"].(map[string]any)["why"] != "timeout" {
		t.Errorf("a JSON entry lost its level, message or fields: %q", lines[0])
	}
	if !strings.Contains(lines[1], `"line":"soakd: interrupted"`) || !strings.Contains(lines[4], "last line without newline") {
		t.Errorf("plain lines not relayed as they were:\n%s", out.String())
	}
}

// TestLinesBoundsALongLine: a child writing without newlines cannot
// make the relay buffer more than maxRelayedLine bytes.
func TestLinesBoundsALongLine(t *testing.T) {
	var out bytes.Buffer
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&out), zap.InfoLevel)
	l := &Lines{Log: zap.New(core)}
	chunk := bytes.Repeat([]byte("x"), 4096)
	for range 3 * maxRelayedLine / len(chunk) {
		_, _ = l.Write(chunk)
		if len(l.buf) > maxRelayedLine {
			t.Fatalf("buffer holds %d bytes, more than %d", len(l.buf), maxRelayedLine)
		}
	}
	if n := strings.Count(out.String(), "\n"); n < 2 {
		t.Errorf("a long line was not relayed in pieces: %d entries", n)
	}
}

// TestTailKeepsTheEnd: Tail holds only the last Max bytes, and Context
// quotes them, or says nothing for a silent child.
func TestTailKeepsTheEnd(t *testing.T) {
	tl := &Tail{Max: 8}
	if got := tl.Context(); got != "" {
		t.Fatalf("Context of a silent child = %q, want empty", got)
	}
	_, _ = tl.Write([]byte("0123456789"))
	_, _ = tl.Write([]byte("ab\n"))
	if got, want := tl.Context(), "; its last output: 56789ab"; got != want {
		t.Fatalf("Context = %q, want %q", got, want)
	}
}
