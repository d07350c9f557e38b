package proctree

import (
	"bufio"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// listenEnv makes the test binary a server: it listens on 127.0.0.1:0,
// prints the port, and waits to be killed.
const listenEnv = "PROCTREE_TEST_LISTEN"

func TestMain(m *testing.M) {
	if os.Getenv(listenEnv) == "1" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:") + "\n")
		time.Sleep(time.Minute) // killed by the test first
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseStat(t *testing.T) {
	// A command name with spaces and parentheses, as a process may set it.
	line := "4242 (my (odd) srv) S 17 4242 4242 0 -1 4194560 120 0 0 0 250 37 5 6 20 0 9 0 123456 1000000 321 " +
		"18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	p, err := ParseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := Proc{PID: 4242, PPID: 17, PGID: 4242, Comm: "my (odd) srv", State: 'S', StartTicks: 123456,
		UTime: 250, STime: 37, CUTime: 5, CSTime: 6, Threads: 9, RSSPages: 321}
	if p != want {
		t.Fatalf("got %+v\nwant %+v", p, want)
	}
	if p.CPUTicks() != 298 {
		t.Fatalf("CPUTicks %d, want 298", p.CPUTicks())
	}
	for _, bad := range []string{"", "12 noparen S 1", "12 (x) S 1 2"} {
		if _, err := ParseStat([]byte(bad)); err == nil {
			t.Errorf("ParseStat(%q): no error", bad)
		}
	}
}

func TestParseHexAddrPort(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:0050":                         "0.0.0.0:80",
		"00000000000000000000000001000000:0FA0": "[::1]:4000",
		"00000000000000000000000000000000:0FA0": "[::]:4000",
	} {
		got, err := parseHexAddrPort(in)
		if err != nil || got.String() != want {
			t.Errorf("parseHexAddrPort(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
}

func TestReaches(t *testing.T) {
	lo4, lo6 := netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")
	for _, c := range []struct {
		bound string
		to    netip.Addr
		want  bool
	}{
		{"127.0.0.1", lo4, true}, {"0.0.0.0", lo4, true}, {"::", lo4, true}, {"::", lo6, true},
		{"127.0.0.2", lo4, false}, {"::1", lo4, false}, {"0.0.0.0", lo6, false}, {"::ffff:127.0.0.1", lo4, true},
	} {
		if got := reaches(netip.MustParseAddr(c.bound), []netip.Addr{c.to}); got != c.want {
			t.Errorf("reaches(%s, %s) = %v, want %v", c.bound, c.to, got, c.want)
		}
	}
}

func TestLocate(t *testing.T) {
	// 1 init; 10 npm → 11 sh → 12 node (holds the socket) → 13, 14 workers; 20 sleep.
	tab := Table{1: {PID: 1, Comm: "init"}, 10: {PID: 10, PPID: 1, Comm: "npm"}, 11: {PID: 11, PPID: 10, Comm: "sh"},
		12: {PID: 12, PPID: 11, Comm: "node"}, 13: {PID: 13, PPID: 12, Comm: "node"}, 14: {PID: 14, PPID: 12, Comm: "node"},
		20: {PID: 20, PPID: 1, Comm: "sleep"}}
	for _, c := range []struct {
		holders []int
		given   int
		root    int
		note    bool
		err     string
	}{
		{[]int{12}, 12, 12, false, ""},
		{[]int{12}, 10, 12, true, ""},                     // the launcher
		{[]int{12}, 14, 12, true, ""},                     // a worker
		{[]int{12, 13, 14}, 12, 12, false, ""},            // workers share the socket
		{[]int{13, 14}, 10, 12, true, ""},                 // SO_REUSEPORT workers: their parent
		{[]int{12}, 20, 0, false, "is not the server"},    // a sleep beside it
		{nil, 12, 0, false, "no process on this machine"}, // nothing listens
		{[]int{12, 20}, 12, 0, false, "unrelated"},        // two unrelated holders
	} {
		l, err := tab.Locate(c.holders, c.given, "127.0.0.1:4000", "target.pid")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Locate(%v, %d): err %v, want %q", c.holders, c.given, err, c.err)
			}
			continue
		}
		if err != nil || l.Root != c.root || (l.Note != "") != c.note {
			t.Errorf("Locate(%v, %d) = %+v, %v; want root %d, note %v", c.holders, c.given, l, err, c.root, c.note)
		}
	}
	if got := tab.Tree(12); len(got) != 3 || got[0] != 12 {
		t.Errorf("Tree(12) = %v", got)
	}
}

// TestRealServerBehindAShell starts the test binary as a server under a
// shell that does not exec it (as `sh -c "server; echo done"`, npm start and
// go run do): the shell holds no socket, the server under it does, and a
// sleep beside it is refused.
func TestRealServerBehindAShell(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("sh", "-c", `"$0"; echo done`, self)
	sh.Env = append(os.Environ(), listenEnv+"=1")
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sleep.Process.Kill()
		_ = sleep.Wait()
		tab, _ := DefaultRoot.Snapshot()
		for _, pid := range tab.Tree(sh.Process.Pid) {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
		_ = sh.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the server did not print its port: %v", err)
	}
	port, err := netip.ParseAddrPort("127.0.0.1:" + strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	ls, err := DefaultRoot.Listeners(port.Port(), []netip.Addr{netip.MustParseAddr("127.0.0.1")})
	if err != nil || len(ls) != 1 {
		t.Fatalf("Listeners = %v, %v; want the server's one socket", ls, err)
	}
	holders, _, err := DefaultRoot.Holders([]uint64{ls[0].Inode})
	if err != nil {
		t.Fatal(err)
	}
	tab, err := DefaultRoot.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	h := holders[ls[0].Inode]
	if len(h) != 1 || h[0] == sh.Process.Pid || tab[h[0]].PPID != sh.Process.Pid {
		t.Fatalf("holders %v: want the one child of the shell (pid %d)", h, sh.Process.Pid)
	}
	// Subtree reads the same tree without the rest of the table.
	sub, err := DefaultRoot.Subtree(sh.Process.Pid)
	if err != nil || len(sub) != len(tab.Tree(sh.Process.Pid)) || sub[h[0]].PID != h[0] {
		t.Errorf("Subtree(%d) = %v, %v; want the shell and its server %v", sh.Process.Pid, sub, err, tab.Tree(sh.Process.Pid))
	}
	if none, err := DefaultRoot.Subtree(1 << 30); err != nil || len(none) != 0 {
		t.Errorf("Subtree of no process: %v, %v", none, err)
	}
	l, err := tab.Locate(h, sh.Process.Pid, port.String(), "the target command")
	if err != nil || l.Root != h[0] || !strings.Contains(l.Note, "started") {
		t.Fatalf("Locate from the shell = %+v, %v; want root %d with a note", l, err, h[0])
	}
	if _, err := tab.Locate(h, sleep.Process.Pid, port.String(), "target.pid"); err == nil || !strings.Contains(err.Error(), "sleep") {
		t.Fatalf("Locate from a sleep beside it: %v; want it refused, naming the sleep", err)
	}
}
