package profiles

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// stackProfile builds a CPU profile (10 ms period) from stacks, each written leaf first as
// "fn@file < fn < …" (a missing @file means a module-cache file), with its sample count.
func stackProfile(t *testing.T, stacks map[string]int64) *profile.Profile {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	funcs := map[string]*profile.Function{}
	for stack, n := range stacks {
		var locs []*profile.Location
		for _, fr := range strings.Split(stack, " < ") {
			name, file, ok := strings.Cut(fr, "@")
			if !ok {
				file = "/root/go/pkg/mod/dep@v1.0.0/x.go"
			}
			f := funcs[fr]
			if f == nil {
				f = &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, Filename: file}
				funcs[fr] = f
				p.Function = append(p.Function, f)
			}
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
			p.Location = append(p.Location, loc)
			locs = append(locs, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{n, n * 10_000_000}})
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	return p
}

func frames(stack string) []Frame {
	var out []Frame
	for _, fr := range strings.Split(stack, " < ") {
		name, file, ok := strings.Cut(fr, "@")
		if !ok {
			file = "/root/go/pkg/mod/dep@v1.0.0/x.go"
		}
		out = append(out, Frame{Function: name, File: file})
	}
	return out
}

func TestClassifyWalksFromTheLeaf(t *testing.T) {
	l, err := NewLayers(nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		stack string
		layer string
		alloc bool
	}{
		// A syscall made by net/http's write is transport.
		{"internal/runtime/syscall/linux.Syscall6 < syscall.write < internal/poll.(*FD).Write < net.(*conn).Write < bufio.(*Writer).Flush < net/http.(*response).finishRequest < runtime.goexit", LayerTransport, false},
		// An allocation made by encoding/json is serialise, marked as allocation.
		{"runtime.memclrNoHeapPointers < runtime.mallocgc < runtime.newobject < encoding/json.Marshal < github.com/99designs/gqlgen/graphql/executor.(*Executor).DispatchOperation", LayerSerialise, true},
		// GC background workers and assists are GC and allocation, whoever assisted.
		{"runtime.scanobject < runtime.gcDrain < runtime.gcBgMarkWorker < runtime.goexit", LayerGC, false},
		{"runtime.scanobject < runtime.gcAssistAlloc < runtime.mallocgc < encoding/json.Marshal", LayerGC, false},
		// The scheduler alone is scheduling and syscalls.
		{"runtime.futex < runtime.notesleep < runtime.stopm < runtime.findRunnable < runtime.schedule < runtime.mcall", LayerScheduling, false},
		// An allocation nothing claims stays GC and allocation.
		{"runtime.mallocgc < runtime.newobject < bufio.NewReader < runtime.goexit", LayerGC, true},
		{"github.com/vektah/gqlparser/v2/parser.(*parser).parseField < github.com/99designs/gqlgen/graphql/executor.(*Executor).CreateOperationContext", LayerParse, false},
		{"github.com/vektah/gqlparser/v2/validator.Validate < github.com/99designs/gqlgen/graphql/executor.(*Executor).CreateOperationContext", LayerValidate, false},
		{"github.com/soakd/soakd/internal/graph.(*executionContext)._Donut@/src/soakd/internal/graph/generated.go < github.com/99designs/gqlgen/graphql/handler/transport.POST.Do", LayerExecute, false},
		{"github.com/99designs/gqlgen/graphql.MarshalString < github.com/soakd/soakd/internal/graph.(*executionContext)._Donut@/src/soakd/internal/graph/generated.go", LayerSerialise, false},
		{"github.com/soakd/soakd/internal/metrics.(*armMetrics).ServeHTTP@/src/soakd/internal/metrics/m.go < net/http.serverHandler.ServeHTTP", LayerInstrumentation, false},
		{"github.com/prometheus/client_golang/prometheus.(*histogram).Observe < github.com/soakd/soakd/internal/metrics.(*armMetrics).ServeHTTP@/src/soakd/internal/metrics/m.go", LayerInstrumentation, false},
		{"github.com/valyala/fasthttp.(*Server).serveConn < runtime.goexit", LayerTransport, false},
		{"github.com/graph-gophers/graphql-go/internal/exec.(*Request).execSelections < github.com/graph-gophers/graphql-go.(*Schema).Exec", LayerExecute, false},
		{"github.com/graphql-go/graphql/language/parser.parseDocument < github.com/graphql-go/graphql.Do", LayerParse, false},
		// The server's own code: a domain-named package whose file is not a dependency's, or main.
		{"github.com/acme/shop/store.(*Store).Get@/home/a/shop/store/store.go < net/http.HandlerFunc.ServeHTTP", LayerServer, false},
		{"github.com/acme/shop/store.(*Store).Get@github.com/acme/shop/store/store.go < net/http.HandlerFunc.ServeHTTP", LayerServer, false},
		{"main.handle@/home/a/shop/main.go < net/http.HandlerFunc.ServeHTTP", LayerServer, false},
		// A dependency (module cache, trimpath'd module@version, vendored) is not own code.
		{"github.com/acme/lib.F < github.com/acme/lib.G@github.com/acme/lib@v1.2.3/g.go < github.com/acme/lib.H@/home/a/shop/vendor/github.com/acme/lib/h.go", LayerOther, false},
		// Nothing claims the standard library's helpers alone: other, never dropped.
		{"strings.ToLower@/usr/lib/go/src/strings/strings.go < sort.Sort@/usr/lib/go/src/sort/sort.go < runtime.goexit", LayerOther, false},
		{"0x4a2b10", LayerOther, false},
	}
	for _, c := range cases {
		layer, alloc := l.Classify(frames(c.stack))
		if layer != c.layer || alloc != c.alloc {
			t.Errorf("%s:\n got %q alloc %v, want %q alloc %v", c.stack, layer, alloc, c.layer, c.alloc)
		}
	}
}

func TestUserLayerTakesPrecedence(t *testing.T) {
	l, err := NewLayers([]LayerRule{{Layer: "my-cache", Patterns: []string{"github.com/acme/cache.*"}}, {Layer: LayerExecute, Patterns: []string{"github.com/acme/shop/resolvers*"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := l.Order(); got[0] != "my-cache" || got[1] != LayerTransport || got[len(got)-1] != LayerOther {
		t.Errorf("order: got %q, want my-cache first, the built-in layers after, other last", got)
	}
	for stack, want := range map[string]string{
		// The user's rule claims its frame before the built-in rules see the frames above it.
		"runtime.mallocgc < github.com/acme/cache.(*LRU).Put < encoding/json.Marshal": "my-cache",
		// A user rule naming a built-in layer extends it, before the own-code heuristic.
		"github.com/acme/shop/resolvers.(*Query).Book@/home/a/shop/resolvers/q.go < net/http.HandlerFunc.ServeHTTP": LayerExecute,
		// The glob matches the whole name: the cache's subpackage is not claimed.
		"github.com/acme/cache/shard.Get < net/http.HandlerFunc.ServeHTTP": LayerTransport,
	} {
		if got, _ := l.Classify(frames(stack)); got != want {
			t.Errorf("%s: got %q, want %q", stack, got, want)
		}
	}
}

func TestNewLayersRefusesBadRules(t *testing.T) {
	for _, c := range []struct {
		rule LayerRule
		want string
	}{
		{LayerRule{Layer: " ", Patterns: []string{"a.*"}}, "name is empty"},
		{LayerRule{Layer: "other", Patterns: []string{"a.*"}}, "what no rule claims"},
		{LayerRule{Layer: "x"}, "no functions"},
		{LayerRule{Layer: "x", Patterns: []string{""}}, "non-empty"},
		{LayerRule{Layer: "x", Patterns: []string{"github.com/a b.*"}}, "without spaces"},
	} {
		_, err := NewLayers([]LayerRule{c.rule})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error saying %q", c.rule, err, c.want)
		}
	}
}

func TestLayerRoundsExactFigures(t *testing.T) {
	l, err := NewLayers(nil)
	if err != nil {
		t.Fatal(err)
	}
	rest := stackProfile(t, map[string]int64{
		"internal/runtime/syscall/linux.Syscall6 < syscall.write < net/http.(*response).finishRequest": 100,
		"runtime.mallocgc < encoding/json.Marshal":                                                     20,
		"encoding/json.Marshal": 20,
	})
	gqlA := stackProfile(t, map[string]int64{
		"internal/runtime/syscall/linux.Syscall6 < syscall.write < net/http.(*response).finishRequest": 50,
		"github.com/99designs/gqlgen/graphql/executor.(*Executor).DispatchOperation":                   100,
		"runtime.scanobject < runtime.gcDrain < runtime.gcBgMarkWorker":                                40,
		"strings.ToLower@/usr/lib/go/src/strings/strings.go":                                           10,
	})
	gqlB := stackProfile(t, map[string]int64{
		"internal/runtime/syscall/linux.Syscall6 < syscall.write < net/http.(*response).finishRequest": 50,
		"runtime.mallocgc < encoding/json.Marshal":                                                     60,
	})
	// 1,000 requests per arm: a 10 ms sample is 10 µs per request.
	b, err := LayerRounds([]*profile.Profile{rest}, []*profile.Profile{gqlA, gqlB}, 1000, 1000, l)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		layer             string
		rest, gql, extra  float64
		restAlloc, gAlloc float64
		rs, gs            int64
	}
	want := []row{
		{LayerTransport, 1000, 1000, 0, 0, 0, 100, 100},
		{LayerExecute, 0, 1000, 1000, 0, 0, 0, 100},
		{LayerSerialise, 400, 600, 200, 200, 600, 40, 60},
		{LayerGC, 0, 400, 400, 0, 0, 0, 40},
		{LayerOther, 0, 100, 100, 0, 0, 0, 10},
	}
	if len(b.Layers) != len(want) {
		t.Fatalf("layers: got %+v, want %d rows", b.Layers, len(want))
	}
	const eps = 1e-9
	for i, w := range want {
		g := b.Layers[i]
		if g.Layer != w.layer || math.Abs(g.RESTMicrosPerReq-w.rest) > eps || math.Abs(g.GraphQLMicrosPerReq-w.gql) > eps ||
			math.Abs(g.ExtraMicrosPerReq-w.extra) > eps || math.Abs(g.RESTAllocMicrosPerReq-w.restAlloc) > eps ||
			math.Abs(g.GraphQLAllocMicrosPerReq-w.gAlloc) > eps || g.RESTSamples != w.rs || g.GraphQLSamples != w.gs {
			t.Errorf("row %d: got %+v, want %+v", i, g, w)
		}
		if math.Abs(g.SharePercent-w.extra/1700*100) > eps {
			t.Errorf("%s share: got %v, want %v", w.layer, g.SharePercent, w.extra/1700*100)
		}
	}
	if math.Abs(b.TotalExtraMicrosPerReq-1700) > eps || math.Abs(b.ExplainedPercent-1600.0/1700*100) > eps {
		t.Errorf("total %v explained %v, want 1700 µs and %v %%", b.TotalExtraMicrosPerReq, b.ExplainedPercent, 1600.0/1700*100)
	}
	// Serialise: 60 GraphQL samples of 10 µs; the extra's interval is 200 ± 2·sqrt(40·10² + 60·10²).
	s := b.Layers[2]
	if sd := math.Sqrt(40*100 + 60*100); math.Abs(s.Extra.Low-(200-2*sd)) > eps || math.Abs(s.Extra.High-(200+2*sd)) > eps {
		t.Errorf("serialise extra interval: got %+v, want 200 ± %v", s.Extra, 2*sd)
	}
	if pi := PoissonInterval(60); math.Abs(s.GraphQL.Low-pi.Low*10) > eps || math.Abs(s.GraphQL.High-pi.High*10) > eps {
		t.Errorf("serialise graphql interval: got %+v, want %+v × 10 µs", s.GraphQL, pi)
	}
	// "other" is listed even when neither arm has a sample of it.
	b, err = LayerRounds([]*profile.Profile{rest}, []*profile.Profile{rest}, 1000, 1000, l)
	if err != nil {
		t.Fatal(err)
	}
	if last := b.Layers[len(b.Layers)-1]; last.Layer != LayerOther || last.GraphQLSamples != 0 || !math.IsNaN(b.ExplainedPercent) {
		t.Errorf("equal arms: got last row %+v, explained %v; want an empty other row and NaN explained (no extra)", last, b.ExplainedPercent)
	}
}

func TestPoissonIntervalKnownValues(t *testing.T) {
	// Garwood at 95.45 %: k = 0 gives [0, −ln(α/2)] = [0, 4.3614...]; intervals widen like sqrt(k).
	alpha := 1 - math.Erf(2/math.Sqrt2)
	if got := PoissonInterval(0); got.Low != 0 || math.Abs(got.High+math.Log(alpha/2)) > 1e-6 {
		t.Errorf("k=0: got %+v, want [0, %v]", got, -math.Log(alpha/2))
	}
	got := PoissonInterval(10_000)
	if math.Abs(got.Low-(10_000-2*100)) > 3 || math.Abs(got.High-(10_000+2*100)) > 3 {
		t.Errorf("k=10000: got %+v, want about 10000 ± 200", got)
	}
}

// TestIntervalsCoverSimulatedCounts draws Poisson sample counts of known means and checks that the
// per-arm and the difference intervals cover the true value about 95.45 % of the time.
func TestIntervalsCoverSimulatedCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 26))
	const trials = 4000
	for _, mean := range []float64{3, 30, 300} {
		armHits, diffHits := 0, 0
		for range trials {
			r, g := poisson(rng, mean), poisson(rng, 2*mean)
			if iv := PoissonInterval(g); iv.Low <= 2*mean && 2*mean <= iv.High {
				armHits++
			}
			if iv := DifferenceInterval(float64(g-r), r, g, 1, 1); iv.Low <= mean && mean <= iv.High {
				diffHits++
			}
		}
		// Garwood's interval is conservative (≥ its level); the normal one is close at large means.
		if c := float64(armHits) / trials; c < 0.95 {
			t.Errorf("mean %v: the Poisson interval covered %.3f, want at least 0.95", mean, c)
		}
		if c := float64(diffHits) / trials; mean >= 30 && math.Abs(c-0.9545) > 0.015 {
			t.Errorf("mean %v: the difference interval covered %.3f, want 0.9545 ± 0.015", mean, c)
		}
	}
}

// poisson draws a Poisson count of the given mean (Knuth's method, fine for small means; a sum of
// draws of mean ≤ 30 for larger ones).
func poisson(rng *rand.Rand, mean float64) int64 {
	var n int64
	for mean > 0 {
		m := min(mean, 30)
		mean -= m
		limit, p := math.Exp(-m), 1.0
		for {
			p *= rng.Float64()
			if p <= limit {
				break
			}
			n++
		}
	}
	return n
}
