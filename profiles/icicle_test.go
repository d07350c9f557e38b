package profiles

import "testing"

// TestIcicle: both arms' samples in one tree from the root down, per
// request, widest first; frames under minFrac of the wider arm dropped;
// at most maxNodes kept, cut from the bottom.
func TestIcicle(t *testing.T) {
	const ms = 1_000_000
	rest := synthCPU(synthSample{stack: []string{"json", "handler", "serve"}, nanos: 1000 * ms})
	gql := synthCPU(
		synthSample{stack: []string{"json", "exec", "serve"}, nanos: 1500 * ms},
		synthSample{stack: []string{"parse", "serve"}, nanos: 490 * ms},
		synthSample{stack: []string{"tiny", "serve"}, nanos: 10 * ms},
	)
	root, err := Icicle(rest, gql, 1000, 1000, 0.01, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !nearlyEqual(root.REST, 1000) || !nearlyEqual(root.GraphQL, 2000) || len(root.Children) != 1 {
		t.Fatalf("root %+v", root)
	}
	serve := root.Children[0]
	if serve.Name != "serve" || !nearlyEqual(serve.GraphQL, 2000) || len(serve.Children) != 3 {
		t.Fatalf("serve %+v: want exec, handler, parse (tiny, 0.5 %% of 2,000 µs, dropped)", serve)
	}
	names := []string{serve.Children[0].Name, serve.Children[1].Name, serve.Children[2].Name}
	if names[0] != "exec" || names[1] != "parse" || names[2] != "handler" {
		t.Errorf("children %v: want widest GraphQL first (exec, parse), then REST's handler", names)
	}
	if h := serve.Children[2]; !nearlyEqual(h.REST, 1000) || h.GraphQL != 0 || h.Children[0].Name != "json" {
		t.Errorf("handler %+v", h)
	}
	if root.Count() != 6 { // serve, exec, json, parse, handler, json
		t.Errorf("%d frames, want 6", root.Count())
	}
	// The widest frames are kept (frames as wide as the last one kept
	// stay too): at most 1 keeps serve alone.
	small, err := Icicle(rest, gql, 1000, 1000, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if small.Count() != 1 || small.Children[0].Name != "serve" {
		t.Errorf("at most 1 frame: got %d, %+v", small.Count(), small.Children)
	}
	if _, err := Icicle(rest, nil, 1, 1, 0, 1); err == nil {
		t.Errorf("a missing profile was accepted")
	}
}
