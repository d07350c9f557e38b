package run

import (
	"os"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/daemon/target"
	"github.com/soakd/soakd/internal/pin"
	"github.com/soakd/soakd/internal/report"
)

// allowedCPUs is the kernel's own account of this process's CPUs: the
// Cpus_allowed_list line of /proc/self/status.
func allowedCPUs(t *testing.T) []int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			cpus, err := pin.Parse(v)
			if err != nil {
				t.Fatal(err)
			}
			return cpus
		}
	}
	t.Fatal("/proc/self/status has no Cpus_allowed_list")
	return nil
}

// pinnedRun is a run with pinning pc and an empty report, enough for
// run.pin.
func pinnedRun(pc config.PinningConfig) *run {
	return &run{cfg: &config.Config{Pinning: pc}, log: zap.NewNop(), rep: &report.Report{}}
}

// TestRunReportsAffinityInForce reproduces issue 10 item 6: a run's report
// must state the CPUs the target (this process) may really run on, read
// back from the kernel, not what its config asked for. An affinity left by
// an earlier pin (or by taskset) is reported even when the run's config
// does not pin; a configured pin is reported as read back; a process on
// every CPU reads "Not pinned".
func TestRunReportsAffinityInForce(t *testing.T) {
	all := allowedCPUs(t)
	if len(all) < 2 || all[0] != 0 || all[1] != 1 {
		t.Skipf("needs CPUs 0 and 1 (this process may use %v)", all)
	}
	t.Cleanup(func() {
		if err := pin.Process(all); err != nil {
			t.Errorf("cannot restore the test's affinity %v: %v", all, err)
		}
	})
	notPinned := func(r *run) bool {
		return slices.ContainsFunc(r.rep.Notes, func(n string) bool { return strings.HasPrefix(n, "Not pinned:") })
	}

	// Left on CPU 0 by an earlier pin; this run's config pins nothing.
	if err := pin.Process([]int{0}); err != nil {
		t.Fatal(err)
	}
	r := pinnedRun(config.PinningConfig{})
	if err := r.pin(target.InProcess(nil).(target.Pinnable)); err != nil {
		t.Fatal(err)
	}
	if p := r.rep.Pinning; p == nil || !slices.Equal(p.TargetCPUs, allowedCPUs(t)) || !slices.Equal(p.TargetCPUs, []int{0}) {
		t.Errorf("unpinned run on a process left on CPU 0: report pinning %+v, want target_cpus [0] (the kernel says %v)", p, allowedCPUs(t))
	}
	if notPinned(r) {
		t.Errorf("unpinned run on a process left on CPU 0: the report says %q", r.rep.Notes)
	}

	// Pinned by the run's config: target 1, driver 0.
	r = pinnedRun(config.PinningConfig{Target: "1", Driver: "0"})
	if err := r.pin(target.InProcess(nil).(target.Pinnable)); err != nil {
		t.Fatal(err)
	}
	if p := r.rep.Pinning; p == nil || !slices.Equal(p.TargetCPUs, allowedCPUs(t)) || !slices.Equal(p.TargetCPUs, []int{1}) || !slices.Equal(p.DriverCPUs, []int{0}) {
		t.Errorf("run pinned to target 1, driver 0: report pinning %+v, want target_cpus [1] (the kernel says %v) and driver_cpus [0]", p, allowedCPUs(t))
	}

	// Every CPU again: not pinned.
	if err := pin.Process(all); err != nil {
		t.Fatal(err)
	}
	r = pinnedRun(config.PinningConfig{})
	if err := r.pin(target.InProcess(nil).(target.Pinnable)); err != nil {
		t.Fatal(err)
	}
	if r.rep.Pinning != nil || !notPinned(r) {
		t.Errorf("unpinned run on every CPU: report pinning %+v, notes %q; want no pinning and a \"Not pinned:\" note", r.rep.Pinning, r.rep.Notes)
	}
}
