package workloads

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawConn is a TCP connection whose reads and writes enter the kernel with
// syscall.RawSyscall rather than syscall.Syscall. A loopback write runs the
// whole TCP path, the receiver's included, and often takes longer than the
// 20 µs after which the Go runtime hands the P of a goroutine in a system call
// to another thread (woken to poll the network) and takes it back afterwards:
// that hand-off cost the driver more CPU than the write itself (measured with
// `make bench-driver`: 36–51 µs against 26–35 µs per GraphQL request). The
// socket is non-blocking, so no call blocks: on EAGAIN the goroutine parks in
// the network poller exactly as with net.Conn, deadlines included, and every
// other method is the TCP connection's.
type rawConn struct {
	*net.TCPConn
	rc syscall.RawConn

	// The calls' arguments and results, and the callbacks bound to them once
	// (a closure per call would allocate). fasthttp never reads, nor
	// writes, one connection from two goroutines at once.
	rbuf, wbuf    []byte
	rn, wn        int
	rerr, werr    syscall.Errno
	readFn, wrtFn func(fd uintptr) bool
}

// wrapConn returns c with raw reads and writes when it is a TCP connection.
func wrapConn(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	r := &rawConn{TCPConn: tc, rc: rc}
	r.readFn, r.wrtFn = r.read, r.write
	return r
}

// read is one attempt of Read on fd; false asks to wait until fd is readable.
func (c *rawConn) read(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rbuf[0])), uintptr(len(c.rbuf)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		c.rn, c.rerr = int(n), e
		return true
	}
}

// write is one attempt of Write on fd: it writes what it can; false asks to
// wait until fd is writable.
func (c *rawConn) write(fd uintptr) bool {
	for c.wn < len(c.wbuf) {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&c.wbuf[c.wn])), uintptr(len(c.wbuf)-c.wn))
		switch e {
		case 0:
			c.wn += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.werr = e
			return true
		}
	}
	return true
}

func (c *rawConn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.rbuf, c.rn, c.rerr = b, 0, 0
	err := c.rc.Read(c.readFn)
	c.rbuf = nil
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case c.rerr != 0:
		return 0, c.opError("read", os.NewSyscallError("read", c.rerr))
	case c.rn == 0:
		return 0, io.EOF
	}
	return c.rn, nil
}

func (c *rawConn) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.wbuf, c.wn, c.werr = b, 0, 0
	err := c.rc.Write(c.wrtFn)
	c.wbuf = nil
	switch {
	case err != nil:
		return c.wn, c.opError("write", err)
	case c.werr != 0:
		return c.wn, c.opError("write", os.NewSyscallError("write", c.werr))
	}
	return c.wn, nil
}

// opError wraps err as net.Conn's methods do.
func (c *rawConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
