package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/soakd/soakd/internal/exitcode"
)

// TestConfigFileBounded: a --config that never ends (/dev/zero) is refused
// with exit 2 before a byte is read, as a device; a regular file over
// 16 MiB is refused after 16 MiB, instead of being read whole.
func TestConfigFileBounded(t *testing.T) {
	_, err := (&cli{defaults: mustRead(t, "config.yaml")}).loadConfig("/dev/zero")
	if exitcode.Of(err) != exitcode.Usage || err == nil || !strings.Contains(err.Error(), "not a regular file (a device)") {
		t.Fatalf("loadConfig(/dev/zero) = %v (code %d), want exit 2 saying it is a device", err, exitcode.Of(err))
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, make([]byte, 16<<20+1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = (&cli{defaults: mustRead(t, "config.yaml")}).loadConfig(big)
	if exitcode.Of(err) != exitcode.Usage || err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Fatalf("loadConfig(17 MiB) = %v (code %d), want exit 2 saying it is too large", err, exitcode.Of(err))
	}
}
