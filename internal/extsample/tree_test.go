package extsample

import (
	"bufio"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestTreeCountsTheServerUnderAShell is the forking-argv case: a shell
// whose child does the work. Sampled alone, the shell used no CPU; sampled
// as a tree, the child's CPU (reaped into the shell's children's times) is
// there.
func TestTreeCountsTheServerUnderAShell(t *testing.T) {
	sh := exec.Command("sh", "-c", `(i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done); echo worked; sleep 60; true`)
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sh.Process.Kill(); _ = sh.Wait() })
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
	_ = sh.Process.Kill()
	_ = sh.Wait()
	if _, err := tree.Read(ctx); !errors.Is(err, ErrExited) {
		t.Fatalf("after the shell exited: %v, want ErrExited", err)
	}
}
