package run

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/pprof/profile"
	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon/config"
	"github.com/soakd/soakd/internal/report"
)

// writeCPUProfile writes a CPU profile with the given samples (10 ms
// periods) per leaf function to dir/name and returns a stopped capture of
// it that saw requests.
func writeCPUProfile(t *testing.T, dir, name string, requests int64, samples map[string]int64) *capture {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	for fn, n := range samples {
		f := &profile.Function{ID: uint64(len(p.Function) + 1), Name: fn}
		loc := &profile.Location{ID: f.ID, Line: []profile.Line{{Function: f}}}
		p.Function, p.Location = append(p.Function, f), append(p.Location, loc)
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{loc}, Value: []int64{n, n * 10_000_000}})
	}
	path := filepath.Join(dir, name)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return &capture{phase: name, stopped: true, cpuFile: path, stopReq: requests}
}

func TestOverheadMergesRounds(t *testing.T) {
	dir := t.TempDir()
	caps := map[string]*capture{
		"rest-control#1": writeCPUProfile(t, dir, "rest-control#1", 1000, map[string]int64{"encoding/json.Marshal": 100}),
		"graphql-load#1": writeCPUProfile(t, dir, "graphql-load#1", 1000, map[string]int64{"encoding/json.Marshal": 150, "gqlgen.exec": 200, "rare": 1}),
		"graphql-load#2": writeCPUProfile(t, dir, "graphql-load#2", 1000, map[string]int64{"encoding/json.Marshal": 150, "gqlgen.exec": 200}),
		"rest-control#2": writeCPUProfile(t, dir, "rest-control#2", 1000, map[string]int64{"encoding/json.Marshal": 100}),
		// Round 3's GraphQL profile was not taken (the profiler was busy).
		"rest-control#3": writeCPUProfile(t, dir, "rest-control#3", 1000, map[string]int64{"encoding/json.Marshal": 100}),
		"graphql-load#3": {phase: "graphql-load#3", stopped: true},
	}
	restBy := map[int]report.Phase{1: {Name: "rest-control#1"}, 2: {Name: "rest-control#2"}, 3: {Name: "rest-control#3"}}
	gqlBy := map[int]report.Phase{1: {Name: "graphql-load#1"}, 2: {Name: "graphql-load#2"}, 3: {Name: "graphql-load#3"}}
	cfg := &config.Config{}
	cfg.Profiling.OverheadTop = 10
	r := &run{cfg: cfg, log: zap.NewNop(), rep: &report.Report{}, dir: t.TempDir()}
	rows, basis, layers := r.overhead(overheadCaptures(restBy, gqlBy, caps))
	if basis == nil || basis.Rounds != 2 || basis.RESTRequests != 2000 || basis.GraphQLRequests != 2000 ||
		basis.RESTSamples != 200 || basis.GraphQLSamples != 701 || basis.SampleRateHz != 100 {
		t.Fatalf("basis: got %+v, want 2 rounds, 2000 requests, 200 and 701 samples at 100 Hz", basis)
	}
	if len(r.rep.Notes) != 1 {
		t.Errorf("notes: got %q, want one about the round left out", r.rep.Notes)
	}
	want := []report.OverheadRow{
		{Function: "gqlgen.exec", GraphQLSamples: 400},
		{Function: "encoding/json.Marshal", RESTSamples: 200, GraphQLSamples: 300},
		{Function: "rare", GraphQLSamples: 1, WithinNoise: true},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows: got %+v, want %d", rows, len(want))
	}
	for i, w := range want {
		g := rows[i]
		if g.Function != w.Function || g.RESTSamples != w.RESTSamples || g.GraphQLSamples != w.GraphQLSamples || g.WithinNoise != w.WithinNoise {
			t.Errorf("row %d: got %+v, want %+v", i, g, w)
		}
	}
	// gqlgen.exec: 400 samples × 10 ms over 2000 requests = 2000 µs per request.
	if rows[0].GraphQLMicrosPerReq != 2000 {
		t.Errorf("gqlgen.exec: got %v µs per request, want 2000", rows[0].GraphQLMicrosPerReq)
	}
	// By layer, on the same two rounds: encoding/json is serialise (+500 µs),
	// the rest (gqlgen.exec, rare: no rule claims them) is other (+2005 µs).
	if layers == nil || len(layers.Layers) != 2 || layers.Layers[0].Layer != "serialise" || layers.Layers[1].Layer != "other" ||
		layers.Layers[0].ExtraMicrosPerReq != 500 || layers.Layers[1].ExtraMicrosPerReq != 2005 || layers.ExplainedPercent == nil ||
		math.Abs(*layers.ExplainedPercent-500.0/2505*100) > 1e-9 {
		t.Errorf("layers: got %+v, want serialise +500 and other +2005 µs, explained %v %%", layers, 500.0/2505*100)
	}
}
