package workloads

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, ignoreConnsCleaner)
}

// ignoreConnsCleaner spares fasthttp's idle-connection cleaner: once a
// HostClient has had connections, one goroutine of it sleeps until the
// idle-connection timeout (90 s) after the last one closed, then ends. It
// holds no connection; the driver process exits long before.
var ignoreConnsCleaner = goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner")
