package proctree

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Listener is a TCP socket in the LISTEN state.
type Listener struct {
	Addr netip.AddrPort
	// Inode names the socket: a process holds it when one of its file
	// descriptors links to "socket:[Inode]".
	Inode uint64
}

// tcpListen is the LISTEN state in /proc/net/tcp's st column.
const tcpListen = "0A"

// Listeners returns the TCP sockets listening on port that a connection to
// one of addrs would reach: those bound to one of addrs, or to the
// unspecified address (0.0.0.0, ::) of its family, and IPv6 listeners on ::
// for IPv4 addresses (a dual-stack socket takes both). It reads the network
// namespace of the calling process.
func (r Root) Listeners(port uint16, addrs []netip.Addr) ([]Listener, error) {
	var out []Listener
	for _, file := range []string{"/net/tcp", "/net/tcp6"} {
		ls, err := r.readListeners(file)
		if errors.Is(err, fs.ErrNotExist) && file == "/net/tcp6" {
			continue // no IPv6 in this kernel
		}
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			if l.Addr.Port() == port && reaches(l.Addr.Addr(), addrs) {
				out = append(out, l)
			}
		}
	}
	return out, nil
}

// reaches reports whether a socket bound to bound takes connections to one
// of addrs.
func reaches(bound netip.Addr, addrs []netip.Addr) bool {
	for _, a := range addrs {
		a = a.Unmap()
		switch {
		case bound.Unmap() == a:
			return true
		case bound.IsUnspecified() && bound.Is4() == a.Is4():
			return true
		case bound.IsUnspecified() && bound.Is6() && a.Is4():
			return true // a dual-stack socket on ::
		}
	}
	return false
}

// readListeners parses the LISTEN rows of /proc/net/tcp or tcp6.
func (r Root) readListeners(file string) ([]Listener, error) {
	f, err := os.Open(string(r) + file)
	if err != nil {
		return nil, fmt.Errorf("cannot read the listening sockets: %w", err)
	}
	defer f.Close()
	var out []Listener
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), 1<<20)
	for line := 0; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if line == 0 || len(fields) < 10 || fields[3] != tcpListen {
			continue
		}
		ap, err := parseHexAddrPort(fields[1])
		if err != nil {
			return nil, fmt.Errorf("%s%s line %d: %w", r, file, line+1, err)
		}
		inode, err := strconv.ParseUint(fields[9], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s%s line %d: inode: %w", r, file, line+1, err)
		}
		out = append(out, Listener{Addr: ap, Inode: inode})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s%s: %w", r, file, err)
	}
	return out, nil
}

// parseHexAddrPort parses "0100007F:1F90" (IPv4) or its 32-hex-digit IPv6
// form: the address as 32-bit words in the kernel's byte order, the port in
// hexadecimal.
func parseHexAddrPort(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("malformed address %q", s)
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("malformed port in %q", s)
	}
	raw, err := hex.DecodeString(a)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("malformed address %q", s)
	}
	// Each 32-bit word was printed as a number in host byte order.
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

// Holders returns, for each inode, the processes that hold it as an open
// file descriptor, by PID order. Processes whose descriptors cannot be read
// (another user's, without privileges) are counted in denied.
func (r Root) Holders(inodes []uint64) (holders map[uint64][]int, denied int, err error) {
	want := map[string]uint64{}
	for _, in := range inodes {
		want["socket:["+strconv.FormatUint(in, 10)+"]"] = in
	}
	ents, err := os.ReadDir(string(r))
	if err != nil {
		return nil, 0, fmt.Errorf("cannot read the process table: %w", err)
	}
	holders = map[uint64][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		dir := string(r) + "/" + e.Name() + "/fd"
		fds, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrPermission) {
			denied++
			continue
		}
		if err != nil {
			continue // it exited
		}
		for _, fd := range fds {
			link, err := os.Readlink(dir + "/" + fd.Name())
			if err != nil {
				continue
			}
			if in, ok := want[link]; ok && !slices.Contains(holders[in], pid) {
				holders[in] = append(holders[in], pid)
			}
		}
	}
	for _, h := range holders {
		slices.Sort(h)
	}
	return holders, denied, nil
}
