package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/soakd/soakd/internal/kpi"
	"github.com/soakd/soakd/profiles"
)

// cpuProfile builds a CPU profile (10 ms period) from stacks written leaf
// first as "fn@file < fn < …" with their sample counts.
func cpuProfile(t *testing.T, stacks map[string]int64) *profile.Profile {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	for stack, n := range stacks {
		var locs []*profile.Location
		for _, fr := range strings.Split(stack, " < ") {
			name, file, ok := strings.Cut(fr, "@")
			if !ok {
				file = "/root/go/pkg/mod/dep@v1.0.0/x.go"
			}
			f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: name, Filename: file}
			p.Function = append(p.Function, f)
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

// TestAttributionFindsThePlantedBurn: two builds' CPU profiles of the
// compared GraphQL phase over two rounds, the new one with a CPU burn
// planted in the resolver path (graph.burn under the executor). The
// attribution, read from the run directories as soakd compare does, puts
// the change in execute with exact figures, names the burn as the function
// that grew, and the failing CPU row says so.
func TestAttributionFindsThePlantedBurn(t *testing.T) {
	const exec = "github.com/99designs/gqlgen/graphql/executor.(*Executor).DispatchOperation"
	const burn = "github.com/soakd/soakd/daemon/builtin.burn@/src/soakd/daemon/builtin/server.go"
	base := map[string]int64{
		"internal/runtime/syscall/linux.Syscall6 < syscall.write < net/http.(*response).finishRequest": 100,
		exec: 200,
		"runtime.mallocgc < encoding/json.Marshal": 50,
	}
	planted := map[string]int64{burn + " < " + exec: 150}
	for k, v := range base {
		planted[k] = v
	}
	dirs := [2]string{t.TempDir(), t.TempDir()}
	reps := [2]*Report{}
	for i, stacks := range []map[string]int64{base, planted} {
		r := &Report{Compare: Compare{GraphQL: "graphql-load", GraphQLPhases: []string{"graphql-load#1", "graphql-load#2"}},
			ProfileRequests: map[string]int64{}}
		for _, ph := range r.Compare.GraphQLPhases {
			file := filepath.Base(profiles.CapturePath("", ph, "cpu.pb.gz"))
			var buf bytes.Buffer
			if err := cpuProfile(t, stacks).Write(&buf); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dirs[i], file), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			r.ProfileRequests[file] = 1000 // a 10 ms sample is 10 µs a request
		}
		reps[i] = r
	}
	l, err := profiles.NewLayers(nil)
	if err != nil {
		t.Fatal(err)
	}
	a, why := LoadAttribution(dirs[0], dirs[1], reps[0], reps[1], l, 5)
	if why != "" {
		t.Fatal(why)
	}
	if a.Rounds != 2 || a.OldRequests != 2000 || a.NewRequests != 2000 || math.Abs(a.TotalChangeMicrosPerReq-1500) > 1e-9 {
		t.Fatalf("rounds %d, requests %d/%d, total change %v; want 2, 2000/2000, +1500 µs", a.Rounds, a.OldRequests, a.NewRequests, a.TotalChangeMicrosPerReq)
	}
	byLayer := map[string]LayerChange{}
	for _, c := range a.Layers {
		byLayer[c.Layer] = c
	}
	// The burn runs in soakd's own module, called by the executor: the
	// first frame from the leaf that a rule claims is the server's code.
	if c := byLayer[profiles.LayerServer]; math.Abs(c.ChangeMicros-1500) > 1e-9 || !c.Beyond || c.OldSamples != 0 || c.NewSamples != 300 {
		t.Errorf("server code: %+v; want +1500 µs beyond noise on 300 samples", c)
	}
	for _, name := range []string{profiles.LayerExecute, profiles.LayerTransport, profiles.LayerSerialise} {
		if c := byLayer[name]; c.ChangeMicros != 0 || c.Beyond {
			t.Errorf("%s: %+v; want no change", name, c)
		}
	}
	if len(a.Functions) == 0 || !strings.HasSuffix(a.Functions[0].Function, "builtin.burn") || a.Functions[0].WithinNoise {
		t.Fatalf("functions: %+v; want the burn first, beyond noise", a.Functions)
	}
	c := Comparison{Rows: []CompareRow{{Phase: "graphql-load", Metric: metricCPU, Gated: true, Outcome: kpi.OutcomeFail}}}
	c.Attach(a, "")
	if r := c.Rows[0].Reason; !strings.Contains(r, "where: server code +1500.0 µs [") || !strings.Contains(r, "builtin.burn +1500.0 µs") {
		t.Errorf("the failing row's reason %q does not say where", r)
	}
	var out bytes.Buffer
	if err := c.Table(&out); err != nil || !strings.Contains(out.String(), "Where graphql-load's CPU per request changed") || !strings.Contains(c.Markdown(), "builtin.burn") {
		t.Errorf("table (%v):\n%s\nmarkdown:\n%s", err, out.String(), c.Markdown())
	}
	// Without profiles: no attribution, and a CPU row that failed says why.
	reps[1].ProfileRequests = nil
	if a, why := LoadAttribution(dirs[0], dirs[1], reps[0], reps[1], l, 5); a != nil || !strings.Contains(why, "no round of graphql-load has a CPU profile") {
		t.Errorf("without request counts: %v, %q", a, why)
	}
	c = Comparison{Rows: []CompareRow{{Phase: "graphql-load", Metric: metricCPU, Gated: true, Outcome: kpi.OutcomeFail}}}
	c.Attach(nil, "no profiles")
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "No attribution of graphql-load's CPU change by layer: no profiles.") {
		t.Errorf("notes %v", c.Notes)
	}
	// Heap profiles but no CPU profiles: the allocation is attributed,
	// and the failing CPU row still gets the note saying why it is not.
	c = Comparison{Rows: []CompareRow{{Phase: "graphql-load", Metric: metricCPU, Gated: true, Outcome: kpi.OutcomeFail}}}
	c.Attach(&ChangeAttribution{Phase: "graphql-load", Alloc: &AllocChange{Rounds: 2}}, "no CPU profiles")
	if len(c.Notes) != 1 || !strings.Contains(c.Notes[0], "no CPU profiles") || c.Rows[0].Reason != "" {
		t.Errorf("allocation only: notes %v, reason %q", c.Notes, c.Rows[0].Reason)
	}
}
