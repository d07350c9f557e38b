// Package procstat reads what the Linux scheduler says about a process: how
// long its threads waited, ready to run, for a CPU. A process's CPU time
// says how much it ran; its run-queue wait says how much more it wanted. A
// driver or target whose CPUs are also busy with other work (softirqs of
// loopback networking, another process) can use 85 % of a CPU and still
// get no more: use plus wait is its CPU demand.
package procstat

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// RunqueueWait returns the time the threads of process pid (0: this
// process) have spent waiting on a run queue, summed over its threads from
// /proc/<pid>/task/*/schedstat (the second field, in nanoseconds). The sum
// only covers live threads, so it can go back when a thread exits; callers
// treat a decrease as not measured. ok is false off Linux, without
// schedstats, or when the process is gone.
func RunqueueWait(pid int) (time.Duration, bool) {
	dir := "/proc/self/task"
	if pid > 0 {
		dir = "/proc/" + strconv.Itoa(pid) + "/task"
	}
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	var total int64
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, false
		}
		total += ns
	}
	return time.Duration(total), true
}
