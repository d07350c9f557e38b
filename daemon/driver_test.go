package daemon

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"slices"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestLineLoggerKeepsJSONStreamJSON: whatever a driver prints on standard
// error (its own JSON log lines, a plain-text error, a panic's trace, a
// last line without a newline), the daemon's JSON log stream gets only JSON
// lines, each carrying the phase.
func TestLineLoggerKeepsJSONStreamJSON(t *testing.T) {
	var out bytes.Buffer
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&out), zap.InfoLevel)
	l := &LineLogger{log: zap.New(core).With(zap.String("phase", "graphql-load"))}
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

// TestLineLoggerBoundsALongLine: a child writing without newlines cannot
// make the relay buffer more than maxRelayedLine bytes.
func TestLineLoggerBoundsALongLine(t *testing.T) {
	var out bytes.Buffer
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&out), zap.InfoLevel)
	l := &LineLogger{log: zap.New(core)}
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

// TestDriverEnvHasNoSecrets checks that a driver process does not inherit
// the secrets soakd reads from its environment (the control token, the
// Pyroscope password), and does inherit the rest.
func TestDriverEnvHasNoSecrets(t *testing.T) {
	t.Setenv(TokenEnv, "control-secret")
	t.Setenv("SOAKD_TEST_PYROSCOPE_PASSWORD", "pyroscope-secret")
	t.Setenv("SOAKD_TEST_KEPT", "kept")
	cfg := testConfig(t, "profiling:\n  pyroscope:\n    basic_auth_password_env: SOAKD_TEST_PYROSCOPE_PASSWORD\n")
	cmd := driverCommand(t.Context(), "/bin/true", []string{"--target", "http://127.0.0.1:1"}, "1", DriverSecrets(cfg))
	if cmd.Env == nil {
		t.Fatal("cmd.Env is nil: the driver inherits the whole environment")
	}
	for _, kv := range cmd.Env {
		if strings.Contains(kv, "secret") {
			t.Errorf("the driver's environment holds %q", kv)
		}
	}
	if !slices.Contains(cmd.Env, "SOAKD_TEST_KEPT=kept") {
		t.Errorf("the driver's environment lost SOAKD_TEST_KEPT: %v", cmd.Env)
	}
	if want := []string{"/bin/true", "drive", "--target", "http://127.0.0.1:1", "--spec", "-", "--log-format", "json", "--cpus", "1"}; !slices.Equal(cmd.Args, want) {
		t.Errorf("args = %q, want %q", cmd.Args, want)
	}
}
