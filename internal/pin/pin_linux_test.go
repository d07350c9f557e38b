package pin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// helperEnv makes the test binary, re-executed, run TestPinHelperProcess: pinning changes every thread
// of the process, so it happens in a child and the rest of the package runs unpinned.
const helperEnv = "SOAKD_PIN_HELPER"

// readAllowed returns the kernel's own account of a thread's CPUs, the Cpus_allowed_list line of its
// status file, independent of this package's sched_getaffinity path.
func readAllowed(statusPath string) ([]int, error) {
	b, err := os.ReadFile(statusPath)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Cpus_allowed_list:"); ok {
			return Parse(v)
		}
	}
	return nil, fmt.Errorf("%s has no Cpus_allowed_list line", statusPath)
}

// onlineCPUs returns the machine's online CPUs.
func onlineCPUs(t *testing.T) []int {
	t.Helper()
	b, err := os.ReadFile(onlinePath)
	if err != nil {
		t.Skipf("cannot read %s: %v", onlinePath, err)
	}
	cpus, err := Parse(string(b))
	if err != nil {
		t.Fatalf("%s: %v", onlinePath, err)
	}
	return cpus
}

// threadMasks returns each thread's CPUs, by thread id, as the kernel reports them in its status file.
func threadMasks(t *testing.T) map[int][]int {
	t.Helper()
	entries, err := os.ReadDir(taskDir)
	if err != nil {
		t.Fatalf("list threads: %v", err)
	}
	out := make(map[int][]int, len(entries))
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cpus, err := readAllowed(fmt.Sprintf("%s/%d/status", taskDir, tid))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
			continue // the thread exited meanwhile
		}
		if err != nil {
			t.Fatalf("thread %d: %v", tid, err)
		}
		out[tid] = cpus
	}
	return out
}

func TestCurrentMatchesKernel(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	got, err := Current()
	if err != nil {
		t.Fatalf("Current: %v", err)
	}
	want, err := readAllowed("/proc/thread-self/status")
	if err != nil {
		t.Fatalf("kernel's view: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("got Current() = %v, want the kernel's Cpus_allowed_list %v", got, want)
	}
}

// TestAffinityMatchesKernel: the process's mask read back by Affinity is the kernel's
// Cpus_allowed_list, the same on every thread; Online is the machine's online list.
func TestAffinityMatchesKernel(t *testing.T) {
	got, uniform, err := Affinity()
	if err != nil {
		t.Fatalf("Affinity: %v", err)
	}
	want, err := readAllowed("/proc/self/status")
	if err != nil {
		t.Fatalf("kernel's view: %v", err)
	}
	if !uniform || !slices.Equal(got, want) {
		t.Errorf("got Affinity() = %v, uniform %v, want the kernel's Cpus_allowed_list %v, uniform", got, uniform, want)
	}
	if online, err := Online(); err != nil || !slices.Equal(online, onlineCPUs(t)) {
		t.Errorf("got Online() = %v, %v, want %v", online, err, onlineCPUs(t))
	}
}

func TestProcessRejectsOfflineCPU(t *testing.T) {
	before, err := Current()
	if err != nil {
		t.Fatalf("Current: %v", err)
	}
	online := onlineCPUs(t)
	beyond := online[len(online)-1] + 1 // past every online CPU, so at least runtime.NumCPU()
	if beyond > MaxCPU {
		t.Skipf("every cpu up to %d is online", MaxCPU)
	}
	err = Process([]int{0, beyond})
	want := fmt.Sprintf("cpu %d is not online on this machine (online cpus %s; runtime.NumCPU() = %d)",
		beyond, Format(online), runtime.NumCPU())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Process([0 %d]): got %v, want an error containing %q", beyond, err, want)
	}
	after, err := Current()
	if err != nil {
		t.Fatalf("Current: %v", err)
	}
	if !slices.Equal(after, before) {
		t.Errorf("got cpus %v after a rejected Process, want them unchanged at %v", after, before)
	}
}

func TestProcessPinsEveryThread(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary")
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestPinHelperProcess$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pinning child failed: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("--- PASS: TestPinHelperProcess")) {
		t.Fatalf("pinning child did not run its test:\n%s", out)
	}
	t.Logf("child:\n%s", out)
}

// TestPinHelperProcess runs only in the child started by TestProcessPinsEveryThread.
func TestPinHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("runs only as the child of TestProcessPinsEveryThread")
	}
	original, err := Current()
	if err != nil {
		t.Fatalf("Current: %v", err)
	}
	target := original[0] // CPU 0 unless this process was started outside it

	// Park goroutines on their own threads so the process has several threads to pin. Each parked
	// goroutine holds its thread until release, so the runtime must start new threads for more of them.
	release := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(release)
	park := func() int {
		tid := make(chan int)
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tid <- unix.Gettid()
			<-release
		})
		return <-tid
	}
	for range 4 {
		park()
	}

	if err := Process([]int{target}); err != nil {
		t.Fatalf("Process([%d]): %v", target, err)
	}
	check := func(when string, want []int) map[int][]int {
		t.Helper()
		masks := threadMasks(t)
		for tid, got := range masks {
			if !slices.Equal(got, want) {
				t.Errorf("%s: got thread %d on cpus %v, want %v", when, tid, got, want)
			}
			var s unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &s); err == nil && !slices.Equal(cpusOf(&s), want) {
				t.Errorf("%s: got sched_getaffinity(%d) = %v, want %v", when, tid, cpusOf(&s), want)
			}
		}
		if got, err := Current(); err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: got Current() = %v, %v, want %v", when, got, err, want)
		}
		if got, uniform, err := Affinity(); err != nil || !uniform || !slices.Equal(got, want) {
			t.Errorf("%s: got Affinity() = %v, %v, %v, want %v, true", when, got, uniform, err, want)
		}
		return masks
	}
	pinned := check("after Process", []int{target})
	if len(pinned) < 5 {
		t.Errorf("got %d threads, want at least 5 (4 parked goroutines and the rest)", len(pinned))
	}

	// Threads created after pinning inherit the mask: park goroutines until one lands on a new thread
	// (idle threads are reused first; each parked goroutine takes one away).
	newTID := 0
	for range 64 {
		if tid := park(); pinned[tid] == nil {
			newTID = tid
			break
		}
	}
	if newTID == 0 {
		t.Fatalf("no new thread after parking 64 goroutines")
	}
	if got := check("after new threads", []int{target}); got[newTID] == nil {
		t.Errorf("got no mask for the new thread %d, want it listed", newTID)
	}

	if err := Process(original); err != nil {
		t.Fatalf("Process(%v) to restore: %v", original, err)
	}
	check("after restoring", original)
}
