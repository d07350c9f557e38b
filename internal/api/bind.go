package api

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// CheckBind refuses a non-loopback listen address without a token: it
// returns an error saying why ("control API on 0.0.0.0:9000 is reachable
// from other hosts: set api.token or SOAKD_CONTROL_TOKEN, or bind to
// 127.0.0.1"). Loopback is 127.0.0.0/8, ::1 (also as ::ffff:127.x.y.z) and
// the name "localhost"; any other name counts as reachable, since it is not
// resolved here. An empty host (":9000") listens on all interfaces. addr is
// a host:port as net.Listen takes it. A token made only of whitespace is
// refused everywhere, since no client could send it in a header.
func CheckBind(addr, token string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid control API listen address %q: %w", addr, err)
	}
	if token != "" && strings.TrimSpace(token) == "" {
		return fmt.Errorf("the control API token is blank: set a real api.token or SOAKD_CONTROL_TOKEN, or leave it empty")
	}
	if token != "" || IsLoopback(host) {
		return nil
	}
	return fmt.Errorf("control API on %s is reachable from other hosts: set api.token or SOAKD_CONTROL_TOKEN, or bind to 127.0.0.1", addr)
}

// IsLoopback reports whether a listen host only accepts connections from
// this machine: 127.0.0.0/8, ::1 (also as ::ffff:127.x.y.z) or the name
// "localhost". An empty host (all interfaces) and any other name are not.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host) // accepts a zone, as in "::1%lo"
	if err != nil {
		return false // "" (all interfaces) or a host name
	}
	return ip.Unmap().IsLoopback()
}
