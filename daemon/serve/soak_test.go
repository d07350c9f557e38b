package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/run"
	"github.com/soakd/soakd/internal/api"
	"github.com/soakd/soakd/internal/history"
)

// TestSoakFileNoLinks: GET /v1/soak serves data_dir's soak.json only as
// a regular file. A symbolic link in its place, to a JSON file elsewhere
// on the machine or to a file of the data directory, and a FIFO (which
// must not block the reader) are no soak: 404, and /v1/history says
// soak false, so the web page does not ask.
func TestSoakFileNoLinks(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"token":"s3cret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := history.Open(dir, history.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	d := &daemon{cfg: &config.Config{DataDir: dir}, store: store}
	path := filepath.Join(dir, run.SoakFile)
	for name, plant := range map[string]func() error{
		"a link out of data_dir":    func() error { return os.Symlink(secret, path) },
		"a link inside data_dir":    func() error { return os.Symlink("other.json", path) },
		"a FIFO":                    func() error { return syscall.Mkfifo(path, 0o600) },
		"a directory":               func() error { return os.Mkdir(path, 0o700) },
		"nothing (no soak has run)": func() error { return nil },
	} {
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		if err := plant(); err != nil {
			t.Fatal(err)
		}
		b, err := d.Soak(context.Background())
		if !errors.Is(err, api.ErrNotFound) {
			t.Errorf("%s: GET /v1/soak gave %q, %v; want not found", name, b, err)
		}
		if d.History(context.Background()).Soak {
			t.Errorf("%s: /v1/history says there is a soak", name)
		}
	}
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"cycles":[]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := d.Soak(context.Background()); err != nil || string(b) != `{"cycles":[]}` {
		t.Errorf("a regular soak.json: %q, %v", b, err)
	}
	if !d.History(context.Background()).Soak {
		t.Error("a regular soak.json: /v1/history says there is no soak")
	}
}
