package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/exitcode"
	"github.com/soakd/soakd/internal/testkit"
)

// TestABConflicts: two sides that would meet on one server are refused
// (exit 2) naming every shared key with its host:port, and sides of their
// own pass: the gobooks example's side files on top of its command config,
// built-in targets on free ports.
func TestABConflicts(t *testing.T) {
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	base, err := config.Load(testkit.Defaults(t), read("gobooks-command.yaml"), "gobooks-command.yaml")
	if err != nil {
		t.Fatal(err)
	}
	side := func(doc []byte) *config.Config {
		t.Helper()
		if doc == nil {
			return base
		}
		cfg, err := base.Overlay(doc, "side.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	f := func(name string, old, new []byte, want ...string) {
		t.Helper()
		err := abConflicts(side(old), side(new))
		if len(want) == 0 {
			if err != nil {
				t.Errorf("%s: %v, want no conflict", name, err)
			}
			return
		}
		if err == nil || exitcode.Of(err) != exitcode.Usage {
			t.Fatalf("%s: %v, want a usage error naming %q", name, err, want)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %q", name, err, w)
			}
		}
	}
	f("the example's side files", read("gobooks-ab-old.yaml"), read("gobooks-ab-new.yaml"))
	f("A/A on one command config", nil, nil,
		"target.graphql_url (127.0.0.1:4000)", "target.rest_url (127.0.0.1:4000)", "target.metrics_url (127.0.0.1:4000)",
		"target.pprof_url (127.0.0.1:4000)", "target.ready_url (127.0.0.1:4000)", "keeps --config's value")
	f("a side file that left out metrics_url and pprof_url", nil, []byte(`
target:
  argv: [/tmp/gobooks, -port, "4002"]
  ready_url: http://127.0.0.1:4002/healthz
  graphql_url: http://127.0.0.1:4002/graphql
  rest_url: http://127.0.0.1:4002
`), "target.metrics_url (127.0.0.1:4000), target.pprof_url (127.0.0.1:4000):")
	f("one websocket URL given apart", []byte("target:\n  graphql_ws_url: ws://127.0.0.1:4009/graphql\n  graphql_url: http://127.0.0.1:4001/graphql\n  rest_url: http://127.0.0.1:4001\n  metrics_url: http://127.0.0.1:4001/metrics\n  pprof_url: http://127.0.0.1:4001/debug/pprof/\n  ready_url: http://127.0.0.1:4001/healthz\n"),
		[]byte("target:\n  graphql_ws_url: ws://127.0.0.1:4009/graphql\n"), "target.graphql_ws_url (127.0.0.1:4009)")
	f("one PID file", []byte("target:\n  kind: attach\n  argv: []\n  ready_url: \"\"\n  pid_file: /run/a.pid\n  graphql_url: http://127.0.0.1:4001/graphql\n  rest_url: http://127.0.0.1:4001\n  metrics_url: http://127.0.0.1:4001/metrics\n  pprof_url: http://127.0.0.1:4001/debug/pprof/\n"),
		[]byte("target:\n  kind: attach\n  argv: []\n  ready_url: \"\"\n  pid_file: /run/a.pid\n"), "target.pid_file (/run/a.pid)")

	builtin := func(listen string) *config.Config {
		t.Helper()
		cfg, err := config.Load(testkit.Defaults(t), []byte("server:\n  listen: "+listen+"\n"), "builtin.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if err := abConflicts(builtin("127.0.0.1:0"), builtin("127.0.0.1:0")); err != nil {
		t.Errorf("built-in targets on free ports: %v, want no conflict", err)
	}
	if err := abConflicts(builtin("127.0.0.1:18765"), builtin("127.0.0.1:18765")); err == nil || !strings.Contains(err.Error(), "server.listen 127.0.0.1:18765") {
		t.Errorf("built-in targets on one fixed address: %v, want refused naming server.listen", err)
	}
}
