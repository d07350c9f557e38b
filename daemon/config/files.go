package config

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/fsutil"
)

// MaxFileBytes bounds a YAML file soakd reads (--config, --old, --new,
// --overrides): a configuration is kilobytes, and reading /dev/zero or a
// wrong multi-gigabyte file whole would exhaust memory before the decoder
// could say what is wrong. CSV data is read from its own files.
const MaxFileBytes = 16 << 20

// MaxSpecBytes bounds the phase spec `soakd drive --spec FILE` reads: its
// operations, groups and lists (CSV data stays in its own files, which the
// driver reads itself), so 64 MiB is ample and a wrong file is refused.
const MaxSpecBytes = 64 << 20

// MaxPIDFileBytes bounds target.pid_file: it holds a process id and a
// newline.
const MaxPIDFileBytes = 4 << 10

// OpenBounded opens path as fsutil.OpenRegular does and returns a reader
// of it that fails, naming path and the bound, once more than max bytes
// were read: for a reader that streams (a JSON decoder) rather than
// reading the file whole. Close closes the file.
func OpenBounded(path string, max int64) (io.ReadCloser, error) {
	f, err := fsutil.OpenRegular(path)
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

// ReadRegular reads the file at path whole: a regular file
// (fsutil.OpenRegular) of at most max bytes; every error names path.
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

// sizeText writes a bound in bytes as people read it: "4 KiB", "64 MiB".
func sizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ReadFile reads the file flag names, refusing (exit 2) one that is not a
// regular file (fsutil.OpenRegular) or is larger than MaxFileBytes.
func ReadFile(flag, path string) ([]byte, error) {
	f, err := fsutil.OpenRegular(path)
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
