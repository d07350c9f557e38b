package profiles

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/pprof/profile"
)

// synthSample is one sample of a synthetic CPU profile: its stack (leaf first; "a+b" is one location
// with the inlined function a inside b) and CPU nanoseconds, with optional labels.
type synthSample struct {
	stack  []string
	nanos  int64
	labels map[string][]string
}

// synthCPU builds a CPU profile shaped like runtime/pprof's: sample types samples/count and
// cpu/nanoseconds, one function per name, one location per stack entry.
func synthCPU(samples ...synthSample) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	funcs := make(map[string]*profile.Function)
	fn := func(name string) *profile.Function {
		if f, ok := funcs[name]; ok {
			return f
		}
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, SystemName: name, Filename: name + ".go"}
		funcs[name] = f
		p.Function = append(p.Function, f)
		return f
	}
	for _, s := range samples {
		ps := &profile.Sample{Value: []int64{s.nanos / 10_000_000, s.nanos}, Label: s.labels}
		for _, frame := range s.stack {
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Address: uint64(0x1000 + len(p.Location))}
			for _, name := range splitInlined(frame) {
				loc.Line = append(loc.Line, profile.Line{Function: fn(name), Line: 1})
			}
			p.Location = append(p.Location, loc)
			ps.Location = append(ps.Location, loc)
		}
		p.Sample = append(p.Sample, ps)
	}
	return p
}

func splitInlined(frame string) []string {
	var out []string
	start := 0
	for i := 0; i < len(frame); i++ {
		if frame[i] == '+' {
			out = append(out, frame[start:i])
			start = i + 1
		}
	}
	return append(out, frame[start:])
}

// endpointLabel is the label set Labeled puts on a request's samples.
func endpointLabel(v string) map[string][]string { return map[string][]string{LabelEndpoint: {v}} }

func nearlyEqual(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func checkCosts(t *testing.T, got, want []FunctionCost) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("costs: got %d %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Function != w.Function || !nearlyEqual(g.RESTMicrosPerReq, w.RESTMicrosPerReq) || !nearlyEqual(g.GraphQLMicrosPerReq, w.GraphQLMicrosPerReq) ||
			!nearlyEqual(g.ExtraMicrosPerReq, w.ExtraMicrosPerReq) || !nearlyEqual(g.SharePercent, w.SharePercent) {
			t.Errorf("cost %d: got %+v, want %+v", i, g, w)
		}
	}
}

func TestOverheadUnlabelled(t *testing.T) {
	// REST: 10 requests. GraphQL: 20 requests.
	rest := synthCPU(
		synthSample{stack: []string{"net/http.(*conn).serve"}, nanos: 10_000},                  // 1 µs/req
		synthSample{stack: []string{"encoding/json.Marshal", "control.get"}, nanos: 20_000},    // 2 µs/req
		synthSample{stack: []string{"control.only", "net/http.(*conn).serve"}, nanos: 50_000},  // 5 µs/req, not in GraphQL
		synthSample{stack: []string{"runtime.memmove+strings.Clone", "control.get"}, nanos: 0}, // no time
	)
	gql := synthCPU(
		synthSample{stack: []string{"net/http.(*conn).serve"}, nanos: 20_000},                                         // 1 µs/req: no extra
		synthSample{stack: []string{"encoding/json.Marshal", "graph.resolve"}, nanos: 60_000},                         // 3 µs/req
		synthSample{stack: []string{"encoding/json.Marshal", "gqlgen.exec"}, nanos: 20_000},                           // +1 µs/req
		synthSample{stack: []string{"gqlparser.lex+gqlparser.Parse", "gqlgen.exec"}, nanos: 60_000},                   // inlined leaf: 3 µs/req
		synthSample{stack: []string{"gqlgen.exec", "net/http.(*conn).serve"}, nanos: 20_000},                          // 1 µs/req flat
		synthSample{stack: []string{"runtime.mallocgc", "gqlgen.exec"}, nanos: 10_000, labels: endpointLabel("rest")}, // labels only in one arm: counted
	)
	// Extras: Marshal 4-2 = 2, lex 3, exec 1, mallocgc 0.5; total 6.5.
	got, err := Overhead(rest, gql, 10, 20, 3, true)
	if err != nil {
		t.Fatalf("Overhead: %v", err)
	}
	checkCosts(t, got, []FunctionCost{
		{Function: "gqlparser.lex", GraphQLMicrosPerReq: 3, ExtraMicrosPerReq: 3, SharePercent: 3 / 6.5 * 100},
		{Function: "encoding/json.Marshal", RESTMicrosPerReq: 2, GraphQLMicrosPerReq: 4, ExtraMicrosPerReq: 2, SharePercent: 2 / 6.5 * 100},
		{Function: "gqlgen.exec", GraphQLMicrosPerReq: 1, ExtraMicrosPerReq: 1, SharePercent: 1 / 6.5 * 100},
	})
	// A larger n lists only functions with positive extra.
	got, err = Overhead(rest, gql, 10, 20, 100, true)
	if err != nil {
		t.Fatalf("Overhead: %v", err)
	}
	if len(got) != 4 || got[3].Function != "runtime.mallocgc" || !nearlyEqual(got[3].ExtraMicrosPerReq, 0.5) {
		t.Errorf("Overhead n=100: got %+v, want the 3 above and runtime.mallocgc at 0.5 µs", got)
	}
	var sum float64
	for _, c := range got {
		sum += c.SharePercent
	}
	if !nearlyEqual(sum, 100) {
		t.Errorf("shares of all positive extras: got sum %v, want 100", sum)
	}
}

func TestOverheadLabelled(t *testing.T) {
	// Both arms labelled: unlabelled samples (GC workers, the sampler) are left out.
	rest := synthCPU(
		synthSample{stack: []string{"encoding/json.Marshal"}, nanos: 40_000, labels: endpointLabel("rest")},
		synthSample{stack: []string{"runtime.gcBgMarkWorker"}, nanos: 1_000_000},
	)
	gql := synthCPU(
		synthSample{stack: []string{"encoding/json.Marshal"}, nanos: 120_000, labels: endpointLabel("graphql")},
		synthSample{stack: []string{"gqlparser.Parse"}, nanos: 40_000, labels: endpointLabel("graphql")},
		synthSample{stack: []string{"runtime.gcBgMarkWorker"}, nanos: 9_000_000},
		synthSample{stack: []string{"profiles.(*Sampler).Run"}, nanos: 500_000},
	)
	got, err := Overhead(rest, gql, 20, 40, 5, true)
	if err != nil {
		t.Fatalf("Overhead: %v", err)
	}
	// Marshal: 2 µs REST, 3 µs GraphQL; Parse: 1 µs. Total extra 2.
	checkCosts(t, got, []FunctionCost{
		{Function: "encoding/json.Marshal", RESTMicrosPerReq: 2, GraphQLMicrosPerReq: 3, ExtraMicrosPerReq: 1, SharePercent: 50},
		{Function: "gqlparser.Parse", GraphQLMicrosPerReq: 1, ExtraMicrosPerReq: 1, SharePercent: 50},
	})

	// Whole process: the GC workers' and the sampler's time counts too.
	// GC: 50 µs REST, 225 µs GraphQL (+175); sampler +12.5; Marshal +1; Parse +1.
	all, err := Overhead(rest, gql, 20, 40, 5, false)
	if err != nil {
		t.Fatalf("Overhead: %v", err)
	}
	if len(all) != 4 || all[0].Function != "runtime.gcBgMarkWorker" || !nearlyEqual(all[0].ExtraMicrosPerReq, 175) || all[1].Function != "profiles.(*Sampler).Run" {
		t.Errorf("whole-process overhead: got %+v, want the GC workers first with +175 µs, then the sampler", all)
	}
}

func TestOverheadNoExtra(t *testing.T) {
	p := synthCPU(synthSample{stack: []string{"f"}, nanos: 1000})
	got, err := Overhead(p, p, 1, 1, 5, true)
	if err != nil || len(got) != 0 {
		t.Errorf("Overhead of a profile with itself: got %+v, %v; want no functions, nil", got, err)
	}
}

func TestOverheadErrors(t *testing.T) {
	cpu := synthCPU(synthSample{stack: []string{"f"}, nanos: 1000})
	heap := &profile.Profile{SampleType: []*profile.ValueType{{Type: "inuse_space", Unit: "bytes"}}}
	f := func(name string, rest, gql *profile.Profile, rr, gr int64, n int) {
		t.Helper()
		if got, err := Overhead(rest, gql, rr, gr, n, true); err == nil {
			t.Errorf("%s: got %+v and nil error, want an error", name, got)
		}
	}
	f("rest not a cpu profile", heap, cpu, 1, 1, 1)
	f("graphql not a cpu profile", cpu, heap, 1, 1, 1)
	f("nil rest", nil, cpu, 1, 1, 1)
	f("nil graphql", cpu, nil, 1, 1, 1)
	f("no rest requests", cpu, cpu, 0, 1, 1)
	f("negative graphql requests", cpu, cpu, 1, -1, 1)
	f("n zero", cpu, cpu, 1, 1, 0)
}

func TestReadProfile(t *testing.T) {
	dir := t.TempDir()
	want := synthCPU(synthSample{stack: []string{"a", "b"}, nanos: 30_000_000, labels: endpointLabel("graphql")})
	path := filepath.Join(dir, "x.cpu.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := want.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadProfile(path)
	if err != nil {
		t.Fatalf("ReadProfile: %v", err)
	}
	if len(got.Sample) != 1 || got.Sample[0].Value[1] != 30_000_000 || got.Sample[0].Label[LabelEndpoint][0] != "graphql" {
		t.Errorf("ReadProfile: got samples %v, want the one written", got.Sample)
	}

	if _, err := ReadProfile(filepath.Join(dir, "missing")); err == nil {
		t.Error("ReadProfile of a missing file: got nil error, want one")
	}
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not a profile\x00\x01"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadProfile(garbage); err == nil {
		t.Error("ReadProfile of garbage: got nil error, want one")
	}
}

func TestFunctionCostJSON(t *testing.T) {
	b, err := json.Marshal(FunctionCost{Function: "f", RESTMicrosPerReq: 1, GraphQLMicrosPerReq: 2, ExtraMicrosPerReq: 1, SharePercent: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"function":"f","rest_us_per_request":1,"graphql_us_per_request":2,"extra_us_per_request":1,"share_percent":100,"rest_samples":0,"graphql_samples":0,"within_noise":false}`
	if string(b) != want {
		t.Errorf("FunctionCost JSON: got %s, want %s", b, want)
	}
}

// samplesOf is a synthSample of n profiling periods (10 ms each) in function fn.
func samplesOf(fn string, n int64) synthSample {
	return synthSample{stack: []string{fn, "net/http.(*conn).serve"}, nanos: n * 10_000_000}
}

func TestOverheadRoundsMergesAndMarksNoise(t *testing.T) {
	// Two rounds per arm, each profile built on its own (its own function and location IDs).
	rest := []*profile.Profile{
		synthCPU(samplesOf("encoding/json.Marshal", 100), samplesOf("runtime.scanobject", 200)),
		synthCPU(samplesOf("encoding/json.Marshal", 100), samplesOf("runtime.scanobject", 200)),
	}
	gql := []*profile.Profile{
		synthCPU(samplesOf("gqlgen.exec", 200), samplesOf("encoding/json.Marshal", 150), samplesOf("runtime.scanobject", 225),
			samplesOf("gqlparser.lex", 25), samplesOf("rare", 1)),
		synthCPU(samplesOf("gqlgen.exec", 200), samplesOf("encoding/json.Marshal", 150), samplesOf("runtime.scanobject", 225)),
	}
	// Requests: REST 800 + 1200, GraphQL 1000 + 1000. A sample is 10 ms = 10,000 µs, so a function's
	// µs per request over 2,000 requests is 5 × its samples.
	b, err := OverheadRounds(rest, gql, 2000, 2000, 10, false)
	if err != nil {
		t.Fatalf("OverheadRounds: %v", err)
	}
	if b.RESTProfiles != 2 || b.GraphQLProfiles != 2 || b.RESTRequests != 2000 || b.GraphQLRequests != 2000 {
		t.Errorf("breakdown basis: got %+v, want 2 profiles and 2000 requests per arm", b)
	}
	if b.RESTSamples != 600 || b.GraphQLSamples != 1176 || !nearlyEqual(b.SampleRateHz, 100) {
		t.Errorf("breakdown totals: got rest %d, graphql %d samples at %v Hz, want 600, 1176 at 100 Hz", b.RESTSamples, b.GraphQLSamples, b.SampleRateHz)
	}
	// Extras: exec 2000 (400 vs 0 samples: evidence), Marshal 500 (300 vs 200: 100 > 2·sqrt(500) ≈ 44.7),
	// lex 125 (25 vs 0: 25 > 2·sqrt(25) = 10), scanobject 250 (450 vs 400: 50 < 2·sqrt(850) ≈ 58.3, noise),
	// rare 5 (1 sample: fewer than 20, noise). Total 2880. Noise sorts after evidence despite a larger extra.
	const total = 2880.0
	want := []FunctionCost{
		{Function: "gqlgen.exec", GraphQLMicrosPerReq: 2000, ExtraMicrosPerReq: 2000, SharePercent: 2000 / total * 100, GraphQLSamples: 400},
		{Function: "encoding/json.Marshal", RESTMicrosPerReq: 1000, GraphQLMicrosPerReq: 1500, ExtraMicrosPerReq: 500, SharePercent: 500 / total * 100, RESTSamples: 200, GraphQLSamples: 300},
		{Function: "gqlparser.lex", GraphQLMicrosPerReq: 125, ExtraMicrosPerReq: 125, SharePercent: 125 / total * 100, GraphQLSamples: 25},
		{Function: "runtime.scanobject", RESTMicrosPerReq: 2000, GraphQLMicrosPerReq: 2250, ExtraMicrosPerReq: 250, SharePercent: 250 / total * 100, RESTSamples: 400, GraphQLSamples: 450, WithinNoise: true},
		{Function: "rare", GraphQLMicrosPerReq: 5, ExtraMicrosPerReq: 5, SharePercent: 5 / total * 100, GraphQLSamples: 1, WithinNoise: true},
	}
	checkCosts(t, b.Functions, want)
	for i, w := range want {
		if i < len(b.Functions) {
			g := b.Functions[i]
			if g.RESTSamples != w.RESTSamples || g.GraphQLSamples != w.GraphQLSamples || g.WithinNoise != w.WithinNoise {
				t.Errorf("row %s: got samples %d/%d within noise %v, want %d/%d %v", g.Function, g.RESTSamples, g.GraphQLSamples, g.WithinNoise,
					w.RESTSamples, w.GraphQLSamples, w.WithinNoise)
			}
		}
	}
	// n full of rows with evidence: the rows within noise are left out.
	b, err = OverheadRounds(rest, gql, 2000, 2000, 3, false)
	if err != nil {
		t.Fatalf("OverheadRounds n=3: %v", err)
	}
	checkCosts(t, b.Functions, want[:3])

	// The inputs are not changed by the merge: round 1 alone still reads as before.
	one, err := Overhead(rest[0], gql[0], 800, 1000, 10, false)
	if err != nil {
		t.Fatalf("Overhead round 1: %v", err)
	}
	if len(one) == 0 || one[len(one)-1].Function != "rare" || one[len(one)-1].GraphQLSamples != 1 || !one[len(one)-1].WithinNoise {
		t.Errorf("round 1 alone: got %+v, want rare last with 1 sample, within noise", one)
	}
}

func TestOverheadRoundsErrors(t *testing.T) {
	cpu := synthCPU(synthSample{stack: []string{"f"}, nanos: 1000})
	other := synthCPU(synthSample{stack: []string{"f"}, nanos: 1000})
	other.SampleType = other.SampleType[1:] // cpu/nanoseconds only: cannot merge with cpu
	for name, c := range map[string]struct{ rest, gql []*profile.Profile }{
		"no rest profiles":      {nil, []*profile.Profile{cpu}},
		"nil graphql profile":   {[]*profile.Profile{cpu}, []*profile.Profile{cpu, nil}},
		"incompatible profiles": {[]*profile.Profile{cpu, other}, []*profile.Profile{cpu}},
	} {
		if b, err := OverheadRounds(c.rest, c.gql, 1, 1, 1, false); err == nil {
			t.Errorf("%s: got %+v and nil error, want an error", name, b)
		}
	}
}

func TestWithinNoise(t *testing.T) {
	for _, c := range []struct {
		rest, gql, restReq, gqlReq int64
		want                       bool
	}{
		{0, 1, 100, 100, true},          // one sample
		{0, 19, 100, 100, true},         // larger arm below 20
		{0, 20, 100, 100, false},        // 20 > 2·sqrt(20) ≈ 8.9
		{100, 120, 100, 100, true},      // 20 < 2·sqrt(220) ≈ 29.7
		{100, 200, 100, 100, false},     // 100 > 2·sqrt(300) ≈ 34.6
		{300, 100, 100, 100, false},     // the sign does not matter
		{100, 200, 1000, 2000, true},    // the same per request
		{100, 300, 1000, 2000, false},   // 0.05 > 2·sqrt(300/2000² + 100/1000²) ≈ 0.026 per request
		{1000, 1000, 0, 100, true},      // no requests
		{5000, 9000, 100_000, 1, false}, // huge per-request difference
	} {
		if got := WithinNoise(c.rest, c.gql, c.restReq, c.gqlReq); got != c.want {
			t.Errorf("WithinNoise(%d, %d, %d, %d) = %v, want %v", c.rest, c.gql, c.restReq, c.gqlReq, got, c.want)
		}
	}
}

// TestCumulativeRounds: inclusive time goes to every distinct function on
// a sample's stack once (a recursive frame is not counted twice), so a
// caller's row holds its callees', and shares are of GraphQL's whole
// extra, overlapping.
func TestCumulativeRounds(t *testing.T) {
	const ms = 1_000_000
	rest := synthCPU(
		synthSample{stack: []string{"encoding/json.Marshal", "handler", "serve"}, nanos: 1000 * ms},
	)
	gql := synthCPU(
		synthSample{stack: []string{"encoding/json.Marshal", "exec", "exec", "serve"}, nanos: 1500 * ms},
		synthSample{stack: []string{"parse", "serve"}, nanos: 500 * ms},
	)
	b, err := CumulativeRounds([]*profile.Profile{rest}, []*profile.Profile{gql}, 1000, 1000, 10)
	if err != nil {
		t.Fatal(err)
	}
	// 1,000 requests: 1 s of CPU is 1,000 µs a request. GraphQL's whole
	// extra is 2,000 − 1,000 = 1,000 µs.
	want := map[string][3]float64{ // REST, GraphQL, share %
		"serve":                 {1000, 2000, 100},
		"exec":                  {0, 1500, 150}, // counted once although it recurses
		"parse":                 {0, 500, 50},
		"encoding/json.Marshal": {1000, 1500, 50},
	}
	if len(b.Functions) != len(want) {
		t.Fatalf("rows %+v, want %d", b.Functions, len(want))
	}
	for _, c := range b.Functions {
		w, ok := want[c.Function]
		if !ok || !nearlyEqual(c.RESTMicrosPerReq, w[0]) || !nearlyEqual(c.GraphQLMicrosPerReq, w[1]) || !nearlyEqual(c.SharePercent, w[2]) {
			t.Errorf("%s: %+v, want REST %v GraphQL %v share %v", c.Function, c, w[0], w[1], w[2])
		}
	}
	if b.Functions[0].Function != "exec" || b.RESTSamples != 100 || b.GraphQLSamples != 200 {
		t.Errorf("first row %s (want exec, the largest extra), samples %d/%d (want 100/200)", b.Functions[0].Function, b.RESTSamples, b.GraphQLSamples)
	}
}

// TestReadProfileRefusesAFIFO: a FIFO named like a profile in a run
// directory given to soakd compare is refused at once, not read for ever.
func TestReadProfileRefusesAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "graphql-load_1.cpu.pb.gz")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadProfile(path); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO: %v, want refused as not a regular file", err)
	}
}

// TestParseBoundedRefusesABomb: a small gzip'd file that inflates beyond
// the bound is refused instead of filling memory; a real profile within
// it parses.
func TestParseBoundedRefusesABomb(t *testing.T) {
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	if _, err := zw.Write(make([]byte, 2<<20)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := parseBounded(bomb.Bytes(), 1<<20); err == nil || !strings.Contains(err.Error(), "inflates beyond 1 MiB") {
		t.Errorf("a %d-byte file inflating to 2 MiB: %v", bomb.Len(), err)
	}
	var real bytes.Buffer
	if err := synthCPU(synthSample{stack: []string{"f"}, nanos: 1e7}).Write(&real); err != nil {
		t.Fatal(err)
	}
	if p, err := parseBounded(real.Bytes(), 1<<20); err != nil || len(p.Sample) != 1 {
		t.Errorf("a real profile: %v", err)
	}
}
