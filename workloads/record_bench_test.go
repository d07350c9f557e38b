package workloads

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

// BenchmarkRecord measures what the engine adds to each request once its
// response is in (record: the group's histograms and counts under the
// group's lock, the phase counters, the steady window under the engine's
// lock), apart from the HTTP cost that dominates BenchmarkRequest:
// serial is one user, parallel one user per GOMAXPROCS sharing one group.
func BenchmarkRecord(b *testing.B) {
	newBench := func(b *testing.B) *engine {
		base, err := url.Parse("http://127.0.0.1:1")
		if err != nil {
			b.Fatal(err)
		}
		e, err := newEngine(testPhase(UserGroup{Operation: RESTGet, Users: 1, Iterations: 1}), HTTPClient(http.DefaultClient), base)
		if err != nil {
			b.Fatal(err)
		}
		e.steady = newSteadyCounter(1, 0, 0)
		e.start = time.Now()
		return e
	}
	b.Run("serial", func(b *testing.B) {
		e := newBench(b)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			e.record(0, outcome{}, time.Duration(100+i%5000)*time.Microsecond)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		e := newBench(b)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				i++
				e.record(0, outcome{}, time.Duration(100+i%5000)*time.Microsecond)
			}
		})
	})
}
