//go:build !linux

package workloads

import "net"

// wrapConn returns c: raw system calls are used on Linux only.
func wrapConn(c net.Conn) net.Conn { return c }
