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

// BenchmarkDo measures the driver's own work per request apart from the
// network and the runtime's scheduling: building the request (user.next),
// handing it to a sender that answers from memory as the built-in target
// does (memTarget), checking the answer (user.do) and recording it
// (engine.record). BenchmarkRequest's driver-cpu-ns/req is this plus the
// HTTP client, the system calls and the Go scheduler.
func BenchmarkDo(b *testing.B) {
	for _, name := range []Operation{RESTGet, GraphQLQuery} {
		b.Run(string(name), func(b *testing.B) {
			e, err := newEngineAt(testPhase(UserGroup{Operation: name, Users: 1, Iterations: 1}), HTTPClient(http.DefaultClient),
				endpoints{rest: "http://h", graphql: "http://h/graphql"}, nil)
			if err != nil {
				b.Fatal(err)
			}
			e.steady = newSteadyCounter(1, 0, 0)
			e.start = time.Now()
			u := e.newUser(0, userSlot{})
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				o := u.do(b.Context(), memTarget{}, time.Second, u.next(i))
				if o.class != "" {
					b.Fatalf("request %d failed: %s: %s", i, o.class, o.message)
				}
				e.record(0, o, o.latency)
			}
		})
	}
}
