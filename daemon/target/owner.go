package target

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	neturl "net/url"
	"slices"
	"strconv"
	"time"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/proctree"
	"github.com/soakd/soakd/internal/report"
)

// errNotLocal is a URL whose host is not an address of this machine: no
// process here can be checked against it.
var errNotLocal = errors.New("not an address of this machine")

// socketOf is the TCP endpoint of an http(s) or ws(s) URL: its host's
// addresses and its port.
type socketOf struct {
	what  string // "127.0.0.1:4000", for messages
	addrs []netip.Addr
	port  uint16
}

// socketFor resolves rawURL's host and port. It fails with errNotLocal
// when none of the host's addresses is one of this machine's.
func socketFor(ctx context.Context, rawURL string) (socketOf, error) {
	u, err := neturl.Parse(rawURL)
	if err != nil {
		return socketOf{}, err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "ws": "80", "https": "443", "wss": "443"}[u.Scheme]
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return socketOf{}, fmt.Errorf("port %q: %w", port, err)
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a.Unmap()}
	} else {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if addrs, err = net.DefaultResolver.LookupNetIP(rctx, "ip", host); err != nil {
			return socketOf{}, fmt.Errorf("cannot resolve %s: %w", host, err)
		}
	}
	s := socketOf{what: net.JoinHostPort(host, port), port: uint16(p)}
	local := localAddrs()
	for _, a := range addrs {
		if a = a.Unmap(); a.IsLoopback() || local[a] {
			s.addrs = append(s.addrs, a)
		}
	}
	if len(s.addrs) == 0 {
		return s, fmt.Errorf("%s: %w", s.what, errNotLocal)
	}
	return s, nil
}

// localAddrs are the addresses of this machine's interfaces.
func localAddrs() map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	ifaddrs, err := net.InterfaceAddrs()
	if err != nil {
		return out
	}
	for _, a := range ifaddrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out[p.Addr().Unmap()] = true
		}
	}
	return out
}

// holdersOf returns the processes holding a socket listening on s, and
// whether any listener was found at all (a listener whose holder cannot be
// seen, for lack of permission to read another user's descriptors, has no
// holder). denied counts the processes whose descriptors could not be read.
func holdersOf(root proctree.Root, s socketOf) (holders []int, listening bool, denied int, err error) {
	ls, err := root.Listeners(s.port, s.addrs)
	if err != nil || len(ls) == 0 {
		return nil, false, 0, err
	}
	inodes := make([]uint64, len(ls))
	for i, l := range ls {
		inodes[i] = l.Inode
	}
	byInode, denied, err := root.Holders(inodes)
	if err != nil {
		return nil, true, 0, err
	}
	seen := map[int]bool{}
	for _, in := range inodes {
		for _, pid := range byInode[in] {
			if !seen[pid] {
				seen[pid] = true
				holders = append(holders, pid)
			}
		}
	}
	return holders, true, denied, nil
}

// portInUse says what already serves s before a command target starts: ""
// when nothing listens there.
func portInUse(root proctree.Root, s socketOf) (string, error) {
	holders, listening, denied, err := holdersOf(root, s)
	// A listener without a holder may be a socket still being closed by a
	// process that just exited: look again for up to a second.
	for i := 0; err == nil && listening && len(holders) == 0 && denied == 0 && i < 20; i++ {
		time.Sleep(50 * time.Millisecond)
		holders, listening, denied, err = holdersOf(root, s)
	}
	if err != nil || !listening {
		return "", err
	}
	if len(holders) == 0 && denied > 0 {
		return fmt.Sprintf("a process soakd cannot see (%d processes' descriptors could not be read: another user's; run soakd as root to see which)", denied), nil
	}
	if len(holders) == 0 {
		return "a socket no process of this machine's process table holds (another PID namespace, such as a container's)", nil
	}
	tab, err := root.Snapshot()
	if err != nil {
		return "", err
	}
	msg := tab.DescribeAll(holders)
	if cmd := root.Cmdline(holders[0]); cmd != "" {
		msg += fmt.Sprintf(": %q", cmd)
	}
	return msg, nil
}

// locateServer finds the process tree serving s and checks it against
// given: see proctree.Table.Locate. check says how (report.TargetInfo's
// ListenerCheck). When the socket's holder cannot be seen (no permission
// to read another user's descriptors) l.Holders is empty, check says so,
// and the run samples given.
func locateServer(root proctree.Root, s socketOf, given int, who string) (l proctree.Located, tree []report.ProcessInfo, check string, err error) {
	holders, listening, denied, err := holdersOf(root, s)
	if err != nil {
		return proctree.Located{}, nil, "", err
	}
	tab, err := root.Snapshot()
	if err != nil {
		return proctree.Located{}, nil, "", err
	}
	if listening && len(holders) == 0 {
		l = proctree.Located{Root: given, Note: fmt.Sprintf(
			"not verified that %s (%s) is the server listening on %s: the socket's holder is not visible to soakd "+
				"(%d processes' descriptors could not be read: run soakd as the server's user or as root)",
			who, tab.Describe(given), s.what, denied)}
		return l, processTree(root, tab, l, given), l.Note, nil
	}
	l, err = tab.Locate(holders, given, s.what, who)
	if err != nil {
		return l, nil, "", err
	}
	check = cmp.Or(l.Note, "verified: "+tab.Describe(l.Root)+" holds the socket listening on "+s.what)
	return l, processTree(root, tab, l, given), check, nil
}

// processTree describes the target's processes for the report: the tree
// under the process given, when that is above the sampled one (a
// launcher), else the sampled tree.
func processTree(root proctree.Root, tab proctree.Table, l proctree.Located, given int) []report.ProcessInfo {
	top := l.Root
	if tab.IsUnder(l.Root, given) {
		top = given
	}
	var out []report.ProcessInfo
	for _, pid := range tab.Tree(top) {
		p := tab[pid]
		out = append(out, report.ProcessInfo{PID: pid, PPID: p.PPID, Comm: p.Comm, Cmdline: root.Cmdline(pid),
			HoldsListener: slices.Contains(l.Holders, pid), Sampled: tab.IsUnder(pid, l.Root)})
	}
	return out
}

// awaitAttached waits until an attached target answers: target.ready_url
// with HTTP 200 when it is set, else a TCP connection to the GraphQL URL's
// host:port, within target.ready_timeout; it fails at once when the
// process given is gone. Without it the first sample, taken while the
// server was still starting, lost its baseline to "connection refused".
func awaitAttached(ctx context.Context, tc config.TargetConfig, gql socketOf, pid int) error {
	url := tc.ReadyURL
	if url == "" {
		u, err := neturl.Parse(tc.GraphQLURL)
		if err != nil {
			return exitcode.With(exitcode.Usage, fmt.Errorf("target.graphql_url: %w", err))
		}
		port := u.Port()
		if port == "" {
			port = strconv.Itoa(int(gql.port))
		}
		url = "tcp://" + net.JoinHostPort(u.Hostname(), port)
	}
	start, err := proctree.DefaultRoot.Stat(pid)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("target.pid: cannot attach: process %d: %w", pid, err))
	}
	return awaitAnswer(ctx, url, tc.ReadyTimeout, func() error {
		p, err := proctree.DefaultRoot.Stat(pid)
		switch {
		case err != nil:
			return err
		case p.StartTicks != start.StartTicks:
			return fmt.Errorf("process %d exited (the pid now belongs to a process started later)", pid)
		case p.State == 'Z':
			return fmt.Errorf("process %d exited (zombie)", pid)
		}
		return nil
	}, fmt.Sprintf("the attached process %d", pid), nil)
}

// listenerStillOurs checks, at a phase's start, that the socket listening on
// what is still held by the sampled process pid or a process under it.
func listenerStillOurs(tab proctree.Table, holders []int, pid int, what string) error {
	if len(holders) == 0 {
		return fmt.Errorf("nothing listens on %s any more: the sampled %s no longer serves it", what, tab.Describe(pid))
	}
	for _, h := range holders {
		if !tab.IsUnder(h, pid) {
			return fmt.Errorf("the socket listening on %s is now held by %s, which is not the sampled %s nor under it: "+
				"the server was restarted or replaced by something else, so the figures would be of the wrong process",
				what, tab.DescribeAll(holders), tab.Describe(pid))
		}
	}
	return nil
}
