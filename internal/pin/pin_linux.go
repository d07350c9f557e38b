package pin

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	// maxPasses bounds how often Process walks the thread list: a pass that changes no thread ends it, and
	// new threads stop appearing once every creator is pinned (they inherit its mask), so two or three
	// passes are the norm.
	maxPasses = 10
	// onlinePath lists the machine's online CPUs in the kernel's CPU list notation.
	onlinePath = "/sys/devices/system/cpu/online"
	// taskDir holds one directory per thread of the calling process, named by its thread id.
	taskDir = "/proc/self/task"
)

// Compile-time guard: MaxCPU must fit in a unix.CPUSet (a negative constant does not convert to uint).
const _ = uint(unsafe.Sizeof(unix.CPUSet{})*8 - MaxCPU - 1)

// Process pins every thread of the calling process to exactly cpus: sched_setaffinity on each thread id
// in /proc/self/task, repeated until a pass finds every thread already pinned (threads created later
// inherit the mask from their creator, so once all are pinned the process stays pinned). Each thread's
// mask is read back, so on success the CPUs set are exactly cpus, sorted and without duplicates. It fails
// without changing anything when cpus is empty, holds a CPU outside [0, MaxCPU] or one that is not online
// (/sys/devices/system/cpu/online; the error names it and runtime.NumCPU), and fails naming the thread
// when the kernel refuses a mask or narrows it (a cgroup cpuset excluding some of cpus); some threads may
// already be pinned then, and calling Process with the mask from Current taken beforehand restores them.
//
// The Go runtime notices the new mask and, unless GOMAXPROCS was set explicitly, adjusts GOMAXPROCS to
// its size within about a second; /cpu/classes/total:cpu-seconds then counts the new GOMAXPROCS.
func Process(cpus []int) error {
	cs, err := validate(cpus)
	if err != nil {
		return fmt.Errorf("cannot pin process: %w", err)
	}
	if err := checkOnline(cs); err != nil {
		return fmt.Errorf("cannot pin process to cpus %s: %w", Format(cs), err)
	}
	var want unix.CPUSet
	for _, c := range cs {
		want.Set(c)
	}
	for range maxPasses {
		changed, err := pinThreads(&want)
		if err != nil {
			return fmt.Errorf("cannot pin process to cpus %s: %w", Format(cs), err)
		}
		if !changed {
			return nil
		}
	}
	return fmt.Errorf("cannot pin process to cpus %s: threads with another mask kept appearing after %d passes",
		Format(cs), maxPasses)
}

// Online returns the machine's online CPUs (/sys/devices/system/cpu/online), sorted.
func Online() ([]int, error) {
	b, err := os.ReadFile(onlinePath)
	if err != nil {
		return nil, fmt.Errorf("cannot read the online cpus: %w", err)
	}
	online, err := Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("cannot read the online cpus: %w", err)
	}
	return online, nil
}

// checkOnline verifies that every CPU in cs is online. When the online list cannot be read it returns nil
// and leaves the check to the read-back in pinThreads.
func checkOnline(cs []int) error {
	online, err := Online()
	if err != nil {
		return nil
	}
	for _, c := range cs {
		if _, found := slices.BinarySearch(online, c); !found {
			return fmt.Errorf("cpu %d is not online on this machine (online cpus %s; runtime.NumCPU() = %d)",
				c, Format(online), runtime.NumCPU())
		}
	}
	return nil
}

// pinThreads sets want on every thread of the process whose mask differs and reports whether it changed
// any. Threads that exit meanwhile (ESRCH) are skipped.
func pinThreads(want *unix.CPUSet) (changed bool, err error) {
	entries, err := os.ReadDir(taskDir)
	if err != nil {
		return false, fmt.Errorf("cannot list threads: %w", err)
	}
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var cur unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &cur); err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue
			}
			return changed, fmt.Errorf("cannot read the cpu mask of thread %d: %w", tid, err)
		}
		if cur == *want {
			continue
		}
		if err := unix.SchedSetaffinity(tid, want); err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue
			}
			return changed, fmt.Errorf("cannot set the cpu mask of thread %d: %w", tid, err)
		}
		changed = true
		if err := unix.SchedGetaffinity(tid, &cur); err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue
			}
			return changed, fmt.Errorf("cannot read back the cpu mask of thread %d: %w", tid, err)
		}
		if cur != *want {
			return changed, fmt.Errorf("thread %d got cpus %s instead of %s: the others are offline or "+
				"outside the cgroup's cpuset", tid, Format(cpusOf(&cur)), Format(cpusOf(want)))
		}
	}
	return changed, nil
}

// Affinity returns the CPUs the calling process may run on, read back from the kernel: the union of the
// masks of all its threads (sched_getaffinity on each thread id in /proc/self/task), sorted, and whether
// every thread has that same mask (after Process they do). Threads that exit meanwhile are skipped.
func Affinity() (cpus []int, uniform bool, err error) {
	entries, err := os.ReadDir(taskDir)
	if err != nil {
		return nil, false, fmt.Errorf("cannot list threads: %w", err)
	}
	var union, first unix.CPUSet
	uniform, seen := true, false
	for _, e := range entries {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var cur unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &cur); err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue
			}
			return nil, false, fmt.Errorf("cannot read the cpu mask of thread %d: %w", tid, err)
		}
		if !seen {
			first, seen = cur, true
		}
		uniform = uniform && cur == first
		for i := range union {
			union[i] |= cur[i]
		}
	}
	if !seen {
		return nil, false, fmt.Errorf("cannot read the cpu mask: no thread found in %s", taskDir)
	}
	return cpusOf(&union), uniform, nil
}

// Current returns the CPUs the calling thread may run on, sorted. After Process every thread has the same
// mask, so this is the process's.
func Current() ([]int, error) {
	var s unix.CPUSet
	if err := unix.SchedGetaffinity(0, &s); err != nil {
		return nil, fmt.Errorf("cannot read the cpu mask: %w", err)
	}
	return cpusOf(&s), nil
}

// cpusOf lists the CPUs in s, sorted.
func cpusOf(s *unix.CPUSet) []int {
	var cpus []int
	for c := 0; c <= MaxCPU; c++ {
		if s.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}
