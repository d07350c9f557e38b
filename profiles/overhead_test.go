package profiles

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
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
	want := `{"function":"f","rest_us_per_request":1,"graphql_us_per_request":2,"extra_us_per_request":1,"share_percent":100}`
	if string(b) != want {
		t.Errorf("FunctionCost JSON: got %s, want %s", b, want)
	}
}
