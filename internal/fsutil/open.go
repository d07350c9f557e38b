package fsutil

import (
	"fmt"
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
