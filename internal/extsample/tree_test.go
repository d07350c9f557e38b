package extsample

import (
	"bufio"
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestTreeCountsTheServerUnderAShell is the forking-argv case: a shell
// whose child does the work. Sampled alone, the shell used no CPU; sampled
// as a tree, the child's CPU (reaped into the shell's children's times) is
// there.
func TestTreeCountsTheServerUnderAShell(t *testing.T) {
	sh := exec.Command("sh", "-c", `(i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done); sleep 60 & echo worked; wait`)
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its sleep goes with it
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-sh.Process.Pid, syscall.SIGKILL); _ = sh.Wait() })
	ctx := context.Background()
	pid := int32(sh.Process.Pid)
	tree, err := OpenTree(pid)
	if err != nil {
		t.Fatal(err)
	}
	single, err := OpenProc(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.TrimSpace(line) != "worked" {
		t.Fatalf("the shell said %q, %v", line, err)
	}
	tf, err := tree.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sf, err := single.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	treeCPU := tf.UserCPUSeconds.Value + tf.SystemCPUSeconds.Value
	singleCPU := sf.UserCPUSeconds.Value + sf.SystemCPUSeconds.Value
	t.Logf("CPU: tree %.2f s, the shell alone %.2f s; tree members %v", treeCPU, singleCPU, tree.Members)
	if treeCPU < 0.05 || treeCPU <= singleCPU {
		t.Fatalf("tree CPU %.3f s, shell alone %.3f s: want the child's work counted in the tree", treeCPU, singleCPU)
	}
	// The sleep is a live member of the tree.
	if len(tree.Members) != 2 || tf.Threads.Value < 2 {
		t.Fatalf("members %v, threads %v: want the shell and its sleep", tree.Members, tf.Threads.Value)
	}
	_ = syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
	_ = sh.Wait()
	if _, err := tree.Read(ctx); !errors.Is(err, ErrExited) {
		t.Fatalf("after the shell exited: %v, want ErrExited", err)
	}
}

func TestCPUCrossCheck(t *testing.T) {
	at := func(self float64, ok bool) Sample {
		f := Figure{Name: selfCPUFigure, Value: self, Measured: ok}
		return Sample{Runtime: RuntimeFigures{Extra: []Figure{f}}}
	}
	osCPU := func(v float64) Figure { return Figure{Name: "cpu_seconds", Value: v, Measured: true} }
	for _, c := range []struct {
		name      string
		a, b      Sample
		os        Figure
		disagrees string
	}{
		{"agree", at(10, true), at(12, true), osCPU(2.1), ""},
		{"within the floor", at(0, true), at(0.02, true), osCPU(0.06), ""},
		{"workers the counter does not see", at(10, true), at(11, true), osCPU(4), "do more than the process"},
		{"a wrong process sampled", at(10, true), at(14, true), osCPU(0.2), "may not be the one"},
		{"no counter", Sample{}, Sample{}, osCPU(4), ""},
		{"counter reset", at(10, true), at(1, true), osCPU(4), ""},
		{"OS not measured", at(10, true), at(11, true), Figure{}, ""},
	} {
		got := CPUCrossCheck(c.a, c.b, c.os)
		if (c.disagrees == "") != (got == "") || !strings.Contains(got, c.disagrees) {
			t.Errorf("%s: %q, want %q", c.name, got, c.disagrees)
		}
	}
}
