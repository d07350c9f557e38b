package gqlws

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: the client
// is meant to start none of its own.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
