// Command target is the external process the extsample tests sample: a Go program serving client_golang's
// default registry on 127.0.0.1 at a free port, which it prints on stdout as "port N". It exits when its
// standard input closes, so a test that dies leaves no process behind.
//
//	GET /metrics         the default registry; with -runtime-metrics (the default) its Go collector also
//	                     publishes every runtime/metrics series, otherwise it is client_golang's default one
//	GET /burn?ms=N       burns N ms of this process's own CPU time (user+system, from getrusage), then answers
//	GET /alloc?mb=N      allocates N MiB in 64 KiB blocks it drops at once, then answers
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// sink keeps allocations from being optimised away.
var sink []byte

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func intParam(r *http.Request, name string) (int, error) {
	n, err := strconv.Atoi(r.URL.Query().Get(name))
	if err != nil || n < 0 || n > 10000 {
		return 0, fmt.Errorf("%s must be an integer in [0, 10000]", name)
	}
	return n, nil
}

func main() {
	rm := flag.Bool("runtime-metrics", true, "publish every runtime/metrics series from the Go collector")
	flag.Parse()
	if *rm {
		prometheus.Unregister(collectors.NewGoCollector())
		prometheus.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)))
	}

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.Handler())
	mux.HandleFunc("GET /burn", func(w http.ResponseWriter, r *http.Request) {
		ms, err := intParam(r, "ms")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		end := cpuTime() + time.Duration(ms)*time.Millisecond
		x := 1.0
		for cpuTime() < end {
			for range 100000 {
				x = x*1.0000001 + 1e-9
			}
		}
		fmt.Fprintln(w, "burnt", x > 0)
	})
	mux.HandleFunc("GET /alloc", func(w http.ResponseWriter, r *http.Request) {
		mb, err := intParam(r, "mb")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for range mb * 16 {
			sink = make([]byte, 64<<10)
		}
		sink = nil
		fmt.Fprintln(w, "allocated", mb, "MiB; goroutines", runtime.NumGoroutine())
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("port %d\n", ln.Addr().(*net.TCPAddr).Port)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	log.Fatal(http.Serve(ln, mux))
}
