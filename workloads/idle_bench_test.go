package workloads

import (
	"context"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// memSample returns the live heap objects' bytes and the goroutine stacks'
// bytes after a full GC.
func memSample() (heap, stacks uint64) {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// BenchmarkIdleUser measures the driver's memory per idle closed-model user:
// 10,000 users (half readers, half writers) all waiting in a one-hour think
// time, so no request is sent. bytes/user is the growth of the live heap
// plus the goroutine stacks from before Run to when every user waits, divided
// by the users; heap-bytes/user and stack-bytes/user split it.
func BenchmarkIdleUser(b *testing.B) {
	const users = 10_000
	p := Phase{
		Name: "idle", Arm: "bench", Run: "bench",
		Groups:         []UserGroup{{Operation: RESTGet, Users: users / 2, Iterations: 1}, {Operation: GraphQLMutation, Users: users / 2, Iterations: 1}},
		Think:          Think{Min: time.Hour, Max: time.Hour},
		RequestTimeout: time.Second,
		Operations:     donutOps(1000),
	}
	client := NewClient(1, time.Second) // never used: no user gets past its think time
	defer client.CloseIdleConnections()
	var heapPer, stackPer float64
	for b.Loop() {
		heap0, stacks0 := memSample()
		g0 := runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan Result, 1)
		go func() {
			r, err := Run(ctx, "http://127.0.0.1:1", p, client, nil)
			if err != nil {
				b.Error(err)
			}
			done <- r
		}()
		for runtime.NumGoroutine() < g0+users {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // let every user reach its timer
		heap1, stacks1 := memSample()
		cancel()
		if r := <-done; r.Requests != 0 || !r.Aborted {
			b.Fatalf("got %d requests aborted %v, want 0 and true", r.Requests, r.Aborted)
		}
		heapPer = (float64(heap1) - float64(heap0)) / users
		stackPer = (float64(stacks1) - float64(stacks0)) / users
	}
	b.ReportMetric(heapPer+stackPer, "bytes/user")
	b.ReportMetric(heapPer, "heap-bytes/user")
	b.ReportMetric(stackPer, "stack-bytes/user")
}
