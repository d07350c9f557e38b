package profiles

import (
	"math"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// heapProfile builds a heap profile whose alloc_space per stack (written
// leaf first as "fn < fn < …", the allocating function first, as the
// runtime records it) is given in bytes.
func heapProfile(t *testing.T, stacks map[string]int64) *profile.Profile {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_objects", Unit: "count"}, {Type: "alloc_space", Unit: "bytes"},
			{Type: "inuse_objects", Unit: "count"}, {Type: "inuse_space", Unit: "bytes"}},
		PeriodType: &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:     512 * 1024,
	}
	for stack, bytes := range stacks {
		var locs []*profile.Location
		for _, fn := range strings.Split(stack, " < ") {
			f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: fn, Filename: "/root/go/pkg/mod/dep@v1.0.0/x.go"}
			p.Function = append(p.Function, f)
			loc := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
			p.Location = append(p.Location, loc)
			locs = append(locs, loc)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{bytes / 64, bytes, 0, 0}})
	}
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAllocLayerRoundsExactFigures: what each phase allocated is its heap
// profile after minus before, attributed to the allocating stack's layer
// and divided by the arm's requests; an allocation nothing claims is
// other, not the collector's.
func TestAllocLayerRoundsExactFigures(t *testing.T) {
	l, err := NewLayers(nil)
	if err != nil {
		t.Fatal(err)
	}
	const exec = "github.com/99designs/gqlgen/graphql/executor.(*Executor).DispatchOperation"
	rest := []HeapPair{{
		Before: heapProfile(t, map[string]int64{"github.com/soakd/soakd/control.(*Handler).get": 1000}),
		After:  heapProfile(t, map[string]int64{"github.com/soakd/soakd/control.(*Handler).get": 3000}),
	}}
	gql := []HeapPair{
		{
			Before: heapProfile(t, map[string]int64{"encoding/json.Marshal": 1000}),
			After:  heapProfile(t, map[string]int64{"encoding/json.Marshal": 5000, exec: 8000, "strings.Repeat": 500}),
		},
		{
			Before: heapProfile(t, map[string]int64{exec: 8000}),
			After:  heapProfile(t, map[string]int64{exec: 12000}),
		},
	}
	b, err := AllocLayerRounds(rest, gql, 10, 20, l)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]float64{ // REST, GraphQL bytes per request
		LayerTransport: {200, 0},
		LayerExecute:   {0, 600}, // (8000 + 4000) / 20
		LayerSerialise: {0, 200}, // 4000 / 20
		LayerOther:     {0, 25},  // strings.Repeat: claimed by nothing
	}
	if len(b.Layers) != len(want) {
		t.Fatalf("layers %+v, want %d rows", b.Layers, len(want))
	}
	for _, c := range b.Layers {
		w, ok := want[c.Layer]
		if !ok || math.Abs(c.RESTBytesPerReq-w[0]) > 1e-9 || math.Abs(c.GraphQLBytesPerReq-w[1]) > 1e-9 || math.Abs(c.ExtraBytesPerReq-(w[1]-w[0])) > 1e-9 {
			t.Errorf("%s: %+v, want REST %v GraphQL %v", c.Layer, c, w[0], w[1])
		}
	}
	if b.Layers[len(b.Layers)-1].Layer != LayerOther {
		t.Errorf("other is not last: %+v", b.Layers)
	}
	if math.Abs(b.TotalExtraBytesPerReq-625) > 1e-9 || math.Abs(b.ExplainedPercent-(100-25.0/625*100)) > 1e-9 || b.RESTBytes != 2000 || b.GraphQLBytes != 16500 {
		t.Errorf("total %v explained %v bytes %v/%v; want 625, %v, 2000/16500", b.TotalExtraBytesPerReq, b.ExplainedPercent, b.RESTBytes, b.GraphQLBytes, 100-25.0/625*100)
	}
	if _, err := AllocLayerRounds(rest, []HeapPair{{Before: gql[0].Before}}, 10, 20, l); err == nil {
		t.Errorf("a missing heap profile was accepted")
	}
	cpu := stackProfile(t, map[string]int64{"encoding/json.Marshal": 1})
	if _, err := AllocLayerRounds(rest, []HeapPair{{Before: cpu, After: cpu}}, 10, 20, l); err == nil || !strings.Contains(err.Error(), "not a heap profile") {
		t.Errorf("a CPU profile taken for a heap profile: %v", err)
	}
}
