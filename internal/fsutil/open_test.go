package fsutil

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpenRegularRefusesWhatIsNotAFile: a FIFO is refused at once (open(2)
// blocked for ever on one, deaf to SIGTERM), and so are devices, /proc
// files, directories.
func TestOpenRegularRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:                 "not a regular file (a FIFO)",
		"/dev/zero":          "not a regular file (a device)",
		"/proc/self/environ": "kernel pseudo-file",
		dir:                  "not a regular file (a directory)",
	} {
		f, err := OpenRegular(path)
		if err == nil {
			f.Close()
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("OpenRegular(%s): %v, want %q", path, err, want)
		}
	}
}
