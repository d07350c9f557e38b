package procstat

import (
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestRunqueueWaitGrowsUnderContention: more busy goroutines than CPUs
// (GOMAXPROCS raised above them) make this process's threads wait for a
// CPU, and the wait shows.
func TestRunqueueWaitGrowsUnderContention(t *testing.T) {
	before, ok := RunqueueWait(0)
	if !ok {
		t.Skip("no /proc/self/task/*/schedstat here")
	}
	if other, ok := RunqueueWait(os.Getpid()); !ok || other < before {
		t.Fatalf("by pid: %s, %v", other, ok)
	}
	n := 4 * runtime.NumCPU()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
	var wg sync.WaitGroup
	deadline := time.Now().Add(300 * time.Millisecond)
	for range n {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for time.Now().Before(deadline) {
			}
		})
	}
	wg.Wait()
	after, ok := RunqueueWait(0)
	if !ok || after <= before {
		t.Errorf("run-queue wait %s → %s with %d busy threads on %d CPUs", before, after, n, runtime.NumCPU())
	}
	if _, ok := RunqueueWait(1 << 30); ok {
		t.Error("a process that does not exist was read")
	}
}
