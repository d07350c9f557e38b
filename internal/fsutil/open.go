package fsutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

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

// ReadNoFollow's errors for what it does not read.
var (
	// ErrLink: a symbolic link.
	ErrLink = errors.New("is a symbolic link, which soakd does not follow in its data directory")
	// ErrNotRegular: a directory, a FIFO, a socket or a device.
	ErrNotRegular = errors.New("is not a regular file")
)

// ReadNoFollow reads path as os.ReadFile does, but only a regular file, and
// never through a symbolic link as its last element (O_NOFOLLOW; the file
// opened is the one checked). It is for the files soakd wrote into its own
// data directory (report.json, soak.json), which the daemon serves: a link
// planted in place of one would have it serve any file of the machine. A
// link's error wraps ErrLink, anything else not a regular file's
// ErrNotRegular; a FIFO does not block the open.
func ReadNoFollow(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s %w", path, ErrLink)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s %w (%s)", path, ErrNotRegular, fileKind(fi.Mode()))
	}
	return io.ReadAll(f)
}
