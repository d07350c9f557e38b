// Package childlog handles the output of a child process soakd starts (a
// driver, the built-in target's process, a command target): its standard
// error relayed line by line through soakd's logger, and its last bytes
// kept to be quoted when it dies.
package childlog

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"

	"go.uber.org/zap"
)

// Lines relays a child process's standard error through the daemon's
// logger, one entry per line, so that under --log-format json every line on
// the daemon's standard error is JSON, whatever the child printed (a Go
// panic's trace, say). A line that is itself a JSON log entry keeps its
// level and message; its other fields come along as one "fields" object.
type Lines struct {
	Log *zap.Logger
	// What names a line that is not a JSON log entry ("driver output"
	// when empty).
	What string
	mu   sync.Mutex
	buf  []byte
}

// maxRelayedLine bounds one relayed line in bytes; a longer line is cut, so
// a child writing without newlines cannot make the daemon buffer without end.
const maxRelayedLine = 16 << 10

func (l *Lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			if len(l.buf) > maxRelayedLine {
				l.emit(l.buf[:maxRelayedLine])
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

// Flush relays a last line that had no newline.
func (l *Lines) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = nil
	}
}

func (l *Lines) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	var entry map[string]any
	if json.Unmarshal(line, &entry) == nil {
		if msg, ok := entry["msg"].(string); ok {
			level, _ := entry["level"].(string)
			for _, k := range []string{"msg", "level", "ts", "caller"} {
				delete(entry, k)
			}
			fields := []zap.Field{}
			if len(entry) > 0 {
				fields = append(fields, zap.Any("fields", entry))
			}
			switch level {
			case "error", "dpanic", "panic", "fatal":
				l.Log.Error(msg, fields...)
			case "warn":
				l.Log.Warn(msg, fields...)
			default:
				l.Log.Info(msg, fields...)
			}
			return
		}
	}
	what := l.What
	if what == "" {
		what = "driver output"
	}
	l.Log.Warn(what, zap.ByteString("line", line))
}

// Tail keeps the last Max bytes written to it: the end of a child's
// stderr, quoted when it dies.
type Tail struct {
	Max int
	mu  sync.Mutex
	buf []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// Context is "; its last output: …" for an error message, or "" when the
// child printed nothing.
func (t *Tail) Context() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return "; its last output: " + s
}
