//go:build unix

package workloads

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes TestHelperTarget serve instead of skipping.
const helperEnv = "SOAKD_WORKLOADS_TARGET_HELPER"

// TestHelperTarget is not a test: BenchmarkRequest runs the test binary again
// with helperEnv set, so that the fake target runs in another process and the
// benchmark's rusage counts the driver's CPU only. It prints its address and
// serves until its stdin closes.
func TestHelperTarget(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process for BenchmarkRequest")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fake := newFakeTarget(1000)
	fake.arrivals = nil
	srv := &http.Server{Handler: fake.handler()}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Println(ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	srv.Close()
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("serve: %v", err)
	}
}

// startTarget runs TestHelperTarget in a child process and returns its URL.
func startTarget(b *testing.B) string {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperTarget$", "-test.count=1")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	drained := make(chan struct{})
	b.Cleanup(func() {
		stdin.Close() // the child stops serving and exits
		<-drained     // Wait must not run before reads from stdout are done
		_ = cmd.Wait()
	})
	line, err := out.ReadString('\n')
	go func() { // drains the child's "PASS" until it exits; the cleanup waits for it
		defer close(drained)
		_, _ = io.Copy(io.Discard, out)
	}()
	if err != nil {
		b.Fatalf("helper target: %v", err)
	}
	return "http://" + strings.TrimSpace(line)
}

// cpuTime returns this process's user+system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRequest measures the driver's cost per request: closed-model users
// with no think time against a fake target in another process on loopback.
// ns/op is wall time per request (both processes share the machine);
// driver-cpu-ns/req is the CPU this process (engine, HTTP client, validation,
// GC) spent per request, comparable with the load-tool figures in
// load-tool-lessons.md. With one user every request pays a full sleep/wake
// cycle of the net/http client's goroutines; 32 users amortise it as a loaded
// driver does.
func BenchmarkRequest(b *testing.B) {
	target := startTarget(b)
	for _, users := range []int{1, 32} {
		for _, op := range []Operation{RESTGet, RESTPut, GraphQLQuery, GraphQLMutation} {
			b.Run(fmt.Sprintf("%s/users=%d", op, users), func(b *testing.B) { benchmarkRequest(b, target, op, users) })
		}
	}
}

// benchmarkRequest runs about b.N requests of op spread over users users.
func benchmarkRequest(b *testing.B, target string, op Operation, users int) {
	iters := (b.N + users - 1) / users
	p := Phase{
		Name: "bench", Arm: "bench", Run: "bench",
		Groups:         []UserGroup{{Operation: op, Users: users, Iterations: iters}},
		RequestTimeout: 10 * time.Second,
		Operations:     donutOps(1000),
	}
	client := NewClient(users, p.RequestTimeout)
	defer client.CloseIdleConnections()
	warm := p
	warm.Groups = []UserGroup{{Operation: op, Users: users, Iterations: 10}}
	if _, err := Run(context.Background(), target, warm, client, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := cpuTime(b)
	b.ResetTimer()
	r, err := Run(context.Background(), target, p, client, nil)
	b.StopTimer()
	cpu = cpuTime(b) - cpu
	if want := int64(users * iters); err != nil || r.Requests != want || r.Errors != 0 {
		b.Fatalf("got %d requests %d errors (%v) err %v, want %d and 0", r.Requests, r.Errors, r.ErrorExamples, err, want)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(r.Requests), "driver-cpu-ns/req")
}
