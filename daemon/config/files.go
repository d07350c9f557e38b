package config

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"go.yaml.in/yaml/v3"
	"golang.org/x/sys/unix"

	"github.com/soakd/soakd/internal/exitcode"
)

// MaxFileBytes bounds a YAML file soakd reads (--config, --old, --new,
// --overrides): a configuration is kilobytes, and reading /dev/zero or a
// wrong multi-gigabyte file whole would exhaust memory before the decoder
// could say what is wrong. CSV data is read from its own files.
const MaxFileBytes = 16 << 20

// MaxCSVBytes bounds a CSV file an operation's data reads, and
// MaxCSVLineBytes one line of it: `csv: /dev/zero` grew the daemon by
// 300 MB/s before, since its first line never ends and the row cap never
// fired.
const (
	MaxCSVBytes     = 256 << 20
	MaxCSVLineBytes = 1 << 20
)

// MaxSpecBytes bounds the phase spec `soakd drive --spec FILE` reads: a
// spec carries its operations' CSV values (each file at most MaxCSVBytes),
// so it has room for a few such files and no more.
const MaxSpecBytes = 1 << 30

// MaxPIDFileBytes bounds target.pid_file: it holds a process id and a
// newline.
const MaxPIDFileBytes = 4 << 10

// Filesystem magic numbers (statfs(2)) of the kernel's pseudo files: they
// claim to be regular files of size 0 and change as they are read.
const (
	procSuperMagic = 0x9fa0
	sysfsMagic     = 0x62656572
)

// OpenRegular opens path for reading, refusing what is not a regular file
// of a real file system: a device (/dev/zero), a FIFO (opened without
// blocking, so `--new FIFO` no longer hangs in open(2) for ever, deaf to
// SIGTERM), a socket, a directory, or a file of /proc or /sys
// (/proc/self/environ holds the daemon's secrets).
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s): soakd reads only files", path, fileKind(fi.Mode()))
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &fs); err == nil && (fs.Type == procSuperMagic || fs.Type == sysfsMagic) {
		f.Close()
		return nil, fmt.Errorf("%s is a kernel pseudo-file (/proc or /sys): soakd reads only files", path)
	}
	return f, nil
}

// OpenBounded opens path as OpenRegular does and returns a reader of it
// that fails, naming path and the bound, once more than max bytes were
// read: for a reader that streams (a JSON decoder) rather than reading the
// file whole. Close closes the file.
func OpenBounded(path string, max int64) (io.ReadCloser, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	return &boundedFile{f: f, path: path, max: max}, nil
}

// boundedFile is OpenBounded's reader.
type boundedFile struct {
	f         *os.File
	path      string
	max, read int64
}

func (b *boundedFile) Read(p []byte) (int, error) {
	n, err := b.f.Read(p)
	if b.read += int64(n); b.read > b.max {
		return 0, fmt.Errorf("%s is larger than %s, soakd's bound for it: is it the right file?", b.path, sizeText(b.max))
	}
	return n, err
}

func (b *boundedFile) Close() error { return b.f.Close() }

// ReadRegular reads the file at path whole: a regular file (OpenRegular) of
// at most max bytes; every error names path.
func ReadRegular(path string, max int64) ([]byte, error) {
	r, err := OpenBounded(path, max)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	return b, nil
}

// sizeText writes a bound in bytes as people read it: "4 KiB", "1024 MiB".
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// fileKind names what a non-regular file is.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// ReadFile reads the file flag names, refusing (exit 2) one that is not a
// regular file (OpenRegular) or is larger than MaxFileBytes.
func ReadFile(flag, path string) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("cannot read %s: %w", flag, err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, exitcode.With(exitcode.Usage, fmt.Errorf("cannot read %s: %w", flag, err))
	}
	if len(b) > MaxFileBytes {
		return nil, exitcode.Usagef("%s %s is larger than %d MiB: a configuration is a few kilobytes; is it the right file?", flag, path, MaxFileBytes>>20)
	}
	return b, nil
}

// MergeOverrides merges a YAML document of overrides (may be nil) and
// --set KEY=VALUE entries (applied on top, in order) into one YAML
// document. A key is a dotted path of mapping keys; a value is parsed as
// YAML, so 7 is a number, true a boolean and 2s a string the config turns
// into a duration.
func MergeOverrides(doc []byte, sets []string) (string, error) {
	root := map[string]any{}
	if len(bytes.TrimSpace(doc)) > 0 {
		if err := yaml.Unmarshal(doc, &root); err != nil {
			return "", exitcode.With(exitcode.Usage, fmt.Errorf("--overrides is not a YAML mapping: %w", err))
		}
	}
	for _, s := range sets {
		key, raw, ok := strings.Cut(s, "=")
		if !ok || key == "" {
			return "", exitcode.Usagef("--set %q: want KEY=VALUE, e.g. kpis.cpu_increase_points=7", s)
		}
		path := strings.Split(key, ".")
		if slices.Contains(path, "") {
			return "", exitcode.Usagef("--set %q: the key has an empty part", s)
		}
		var v any
		if err := yaml.Unmarshal([]byte(raw), &v); err != nil {
			return "", exitcode.Usagef("--set %q: the value is not YAML: %v", s, err)
		}
		m := root
		for i, k := range path[:len(path)-1] {
			next, exists := m[k]
			if !exists {
				nm := map[string]any{}
				m[k] = nm
				m = nm
				continue
			}
			nm, isMap := next.(map[string]any)
			if !isMap {
				return "", exitcode.Usagef("--set %q: %s is already set to a value, not a mapping", s, strings.Join(path[:i+1], "."))
			}
			m = nm
		}
		m[path[len(path)-1]] = v
	}
	if len(root) == 0 {
		return "", nil
	}
	out, err := yaml.Marshal(root)
	if err != nil {
		return "", fmt.Errorf("cannot encode the overrides: %w", err)
	}
	return string(out), nil
}

// boundedLines reads at most max bytes in all and lines of at most line
// bytes, failing with a message naming the bound once either is passed.
type boundedLines struct {
	r         io.Reader
	max, line int64
	read, cur int64 // bytes read in all, and since the last newline
}

func (b *boundedLines) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	for _, c := range p[:n] {
		b.cur++
		if c == '\n' {
			b.cur = 0
		}
		if b.cur > b.line {
			return 0, fmt.Errorf("a line is longer than %d KiB: is it a CSV file?", b.line>>10)
		}
	}
	b.read += int64(n)
	if b.read > b.max {
		return 0, fmt.Errorf("the file is larger than %d MiB, soakd's bound on CSV data", b.max>>20)
	}
	return n, err
}
