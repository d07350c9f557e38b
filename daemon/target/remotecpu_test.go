package target

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	rpprof "runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/soakd/soakd/profiles"
)

// pprofServer serves this test process's net/http/pprof handlers, the
// real wire format of a Go target's target.pprof_url.
func pprofServer(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/debug/pprof/"
}

// spin burns CPU in this process until stop is set, so profiles have
// samples.
func spin(stop *atomic.Bool) {
	x := uint64(1)
	for !stop.Load() {
		for range 1 << 16 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
	}
	runtime.KeepAlive(x)
}

// TestChunkedCPUProfile: a CPU profile over a window of unknown length is
// fetched from a real pprof endpoint in back-to-back chunks; at Stop the
// chunk in flight is left out, so the written profile holds only the
// chunks that completed, each of which Chunks reports, none after Stop.
func TestChunkedCPUProfile(t *testing.T) {
	base := pprofServer(t)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() { defer close(done); spin(&stop) }()
	defer func() { stop.Store(true); <-done }()

	path := filepath.Join(t.TempDir(), "graphql-load.cpu.pb.gz")
	p := startChunkedCPU(context.Background(), base, path, time.Second)
	// Wait for two chunks to complete, then stop during the third.
	for len(p.Chunks()) < 2 {
		time.Sleep(50 * time.Millisecond)
	}
	stopAt := time.Now()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	chunks := p.Chunks()
	if len(chunks) < 2 {
		t.Fatalf("%d chunks, want at least 2", len(chunks))
	}
	for i, c := range chunks {
		if !c.To.After(c.From) || c.To.After(stopAt) || (i > 0 && c.From.Before(chunks[i-1].To)) {
			t.Errorf("chunk %d %v–%v: want ordered, disjoint spans before the stop at %v", i, c.From, c.To, stopAt)
		}
	}
	prof, err := profiles.ReadProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	var samples int64
	for _, s := range prof.Sample {
		samples += s.Value[0]
	}
	if samples == 0 {
		t.Errorf("the merged profile has no samples")
	}
}

// TestChunkedCPUProfileBusy: a target already being profiled (its
// profiler in use, as with a Pyroscope agent in the server) answers 500;
// Stop says so, naming the endpoint and the server's words, and writes
// nothing.
func TestChunkedCPUProfileBusy(t *testing.T) {
	base := pprofServer(t)
	f, err := os.CreateTemp(t.TempDir(), "busy")
	if err != nil {
		t.Fatal(err)
	}
	if err := rpprof.StartCPUProfile(f); err != nil {
		t.Skipf("cannot hold the CPU profiler: %v", err)
	}
	defer rpprof.StopCPUProfile()
	path := filepath.Join(t.TempDir(), "x.cpu.pb.gz")
	p := startChunkedCPU(context.Background(), base, path, time.Second)
	<-p.done // the first chunk's answer ends the fetching
	if err = p.Stop(); err == nil {
		t.Fatal("Stop succeeded with the profiler in use")
	}
	if !strings.Contains(err.Error(), "profile?seconds=1") || !strings.Contains(err.Error(), "HTTP 500") || !strings.Contains(err.Error(), "already in use") {
		t.Errorf("error %q: want the URL, HTTP 500 and the server's reason", err)
	}
	if _, statErr := os.Stat(path); statErr == nil {
		t.Errorf("a profile was written")
	}
}

// TestChunkSpan: a chunk spans what the profile says it ran, from when it
// was asked for; not the encoding and transfer after it.
func TestChunkSpan(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	to := t0.Add(1040 * time.Millisecond)
	if c := chunkSpan(t0, to, int64(time.Second)); !c.From.Equal(t0) || !c.To.Equal(t0.Add(time.Second)) {
		t.Errorf("a 1 s profile answered after 1.04 s: %v–%v, want 1 s from the request", c.From, c.To)
	}
	for _, d := range []int64{0, int64(2 * time.Second)} {
		if c := chunkSpan(t0, to, d); !c.To.Equal(to) {
			t.Errorf("duration %v: to %v, want the answer's arrival", time.Duration(d), c.To)
		}
	}
}
