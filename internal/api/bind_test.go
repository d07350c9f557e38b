package api

import (
	"strings"
	"testing"
)

func TestCheckBind(t *testing.T) {
	f := func(addr, token string, wantOK bool) {
		t.Helper()
		err := CheckBind(addr, token)
		if (err == nil) != wantOK {
			t.Errorf("CheckBind(%q, token %v): got %v, want ok %v", addr, token != "", err, wantOK)
		}
		if err != nil && token != "" && strings.Contains(err.Error(), token) {
			t.Errorf("CheckBind(%q): error %q contains the token", addr, err)
		}
	}
	// Loopback needs no token.
	for _, addr := range []string{"127.0.0.1:0", "127.1.2.3:9000", "[::1]:1", "localhost:1", "LOCALHOST:1", "[::ffff:127.0.0.1]:1", "[::1%lo]:1"} {
		f(addr, "", true)
		f(addr, "tok", true)
	}
	// Anything else does.
	for _, addr := range []string{"0.0.0.0:1", ":1", "10.1.2.3:1", "[::]:1", "192.168.0.1:9000", "[2001:db8::1]:1", "example.com:1", "localhost.example.com:1"} {
		f(addr, "", false)
		f(addr, "tok", true)
	}
	// Not a host:port, or a blank token.
	f("127.0.0.1", "", false)
	f("", "tok", false)
	f("127.0.0.1:0", "   ", false)
	f("0.0.0.0:1", "\t", false)
}

func TestCheckBindMessage(t *testing.T) {
	err := CheckBind("0.0.0.0:9000", "")
	want := "control API on 0.0.0.0:9000 is reachable from other hosts: set api.token or SOAKD_CONTROL_TOKEN, or bind to 127.0.0.1"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}
