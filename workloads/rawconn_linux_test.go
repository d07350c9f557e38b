package workloads

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// rawPair returns a raw client connection and the server's end of it.
func rawPair(t *testing.T) (*rawConn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}
	rc, ok := wrapConn(c).(*rawConn)
	if !ok {
		t.Fatalf("wrapConn(%T) is not raw", c)
	}
	t.Cleanup(func() { rc.Close(); s.Close() })
	return rc, s.(*net.TCPConn)
}

func TestRawConnRoundTrip(t *testing.T) {
	c, s := rawPair(t)
	go func() { _, _ = io.Copy(s, s) }() // echo
	// Far more than the socket buffers hold, so writes meet EAGAIN and wait.
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	wrote := make(chan error, 1)
	go func() {
		n, err := c.Write(want)
		if err == nil && n != len(want) {
			err = io.ErrShortWrite
		}
		wrote <- err
	}()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := <-wrote; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("echo differs from what was written")
	}
	// On a socket with data waiting, neither Read nor Write allocates.
	buf := make([]byte, 16)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("write and read: %v allocations, want 0", n)
	}
}

func TestRawConnEOF(t *testing.T) {
	c, s := rawPair(t)
	_, _ = s.Write([]byte("last"))
	s.Close()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "last" {
		t.Fatalf("got %q, %v; want \"last\" then EOF", b, err)
	}
	if n, err := c.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("after EOF: got %d, %v; want 0, io.EOF", n, err)
	}
}

func TestRawConnDeadline(t *testing.T) {
	c, _ := rawPair(t)
	if err := c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("got %v, want a timeout", err)
	}
	if d := time.Since(start); d < 15*time.Millisecond {
		t.Errorf("read gave up after %s, before its deadline", d)
	}
	if got := classifyTransport(err); got != ClassTimeout {
		t.Errorf("class: got %q, want %q", got, ClassTimeout)
	}
}

func TestRawConnReset(t *testing.T) {
	c, s := rawPair(t)
	_ = s.SetLinger(0)
	s.Close() // RST
	time.Sleep(10 * time.Millisecond)
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read: got %v, want ECONNRESET", err)
	}
	if got := classifyTransport(err); got != ClassConnectionReset {
		t.Errorf("class: got %q, want %q", got, ClassConnectionReset)
	}
	c.Close()
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after close: got %v, want net.ErrClosed", err)
	}
}
