// Package testkit holds the helpers the unit tests of several packages
// share: the embedded defaults (config.yaml at the module root), a
// configuration loaded on top of them, and a plain GET. Only tests import
// it.
package testkit

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/soakd/soakd/daemon/config"
)

// Root is the module's root directory, found from this file's path, so a
// test in any package can read config.yaml, docs/ and examples/.
func Root(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("testkit: cannot find the module root")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Defaults is config.yaml, the defaults soakd embeds.
func Defaults(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Root(t), "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Config is user decoded on top of the defaults, as soakd --config does.
func Config(t testing.TB, user string) *config.Config {
	t.Helper()
	cfg, err := config.Load(Defaults(t), []byte(user), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Get fetches url and returns its status and body.
func Get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
