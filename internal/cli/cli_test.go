package cli

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/internal/exitcode"
)

// TestConfigFileBounded: a --config that never ends (/dev/zero) is refused
// with exit 2 after 16 MiB, instead of being read whole until memory runs
// out.
func TestConfigFileBounded(t *testing.T) {
	_, err := (&cli{defaults: mustRead(t, "config.yaml")}).loadConfig("/dev/zero")
	if exitcode.Of(err) != exitcode.Usage || err == nil || !strings.Contains(err.Error(), "larger than 16 MiB") {
		t.Fatalf("loadConfig(/dev/zero) = %v (code %d), want exit 2 saying it is too large", err, exitcode.Of(err))
	}
}
