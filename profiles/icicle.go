package profiles

import (
	"cmp"
	"errors"
	"slices"

	"github.com/google/pprof/profile"
)

// IcicleNode is one frame of an icicle (a flame graph drawn from the top):
// a function called along one path from the root, with the CPU per
// request (µs) of each arm's samples whose stacks pass through it there.
// A child's values are at most its parent's; what is left is the parent's
// own time and the children too small to draw.
type IcicleNode struct {
	Name     string        `json:"name"`
	REST     float64       `json:"rest_us_per_request"`
	GraphQL  float64       `json:"graphql_us_per_request"`
	Children []*IcicleNode `json:"children,omitempty"`
}

// Icicle merges two arms' CPU profiles (one merged profile each, requests
// completed while they ran) into one call tree from the root (the
// outermost frame) down, each node carrying both arms' CPU per request,
// so that the same tree draws each arm (widths from its values) and the
// difference (GraphQL's widths coloured by GraphQL − REST). Nodes under
// minFrac of the larger arm's total are left out (their time stays in
// their parent), and at most maxNodes nodes are kept, the widest first,
// so the page stays small. Inlined frames are frames of their own.
func Icicle(rest, gql *profile.Profile, restRequests, gqlRequests int64, minFrac float64, maxNodes int) (*IcicleNode, error) {
	if rest == nil || gql == nil {
		return nil, errors.New("cannot draw an icicle: a profile is missing")
	}
	if restRequests <= 0 || gqlRequests <= 0 {
		return nil, errors.New("cannot draw an icicle: request counts must be positive")
	}
	root := &IcicleNode{Name: "all"}
	for i, p := range []*profile.Profile{rest, gql} {
		vi := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool {
			return t != nil && t.Type == "cpu" && t.Unit == "nanoseconds"
		})
		if vi < 0 {
			return nil, errors.New("cannot draw an icicle: not a cpu profile")
		}
		per := 1 / 1e3 / float64(restRequests)
		if i == 1 {
			per = 1 / 1e3 / float64(gqlRequests)
		}
		var stack []Frame
		for _, s := range p.Sample {
			if vi >= len(s.Value) {
				continue
			}
			v := float64(s.Value[vi]) * per
			stack = stackFrames(s, stack[:0])
			n := root
			add(n, i, v)
			for j := len(stack) - 1; j >= 0; j-- {
				n = child(n, stack[j].Function)
				add(n, i, v)
			}
		}
	}
	limit := minFrac * max(root.REST, root.GraphQL)
	prune(root, limit)
	keepWidest(root, maxNodes)
	sortTree(root)
	return root, nil
}

func add(n *IcicleNode, arm int, v float64) {
	if arm == 0 {
		n.REST += v
	} else {
		n.GraphQL += v
	}
}

func child(n *IcicleNode, name string) *IcicleNode {
	for _, c := range n.Children {
		if c.Name == name {
			return c
		}
	}
	c := &IcicleNode{Name: name}
	n.Children = append(n.Children, c)
	return c
}

// prune drops the subtrees narrower than limit in both arms.
func prune(n *IcicleNode, limit float64) {
	kept := n.Children[:0]
	for _, c := range n.Children {
		if max(c.REST, c.GraphQL) >= limit {
			prune(c, limit)
			kept = append(kept, c)
		}
	}
	n.Children = kept
}

// keepWidest keeps the widest maxNodes nodes (by the larger arm): a node
// is kept only with its parent, so the tree is cut from the bottom.
func keepWidest(root *IcicleNode, maxNodes int) {
	var all []*IcicleNode
	var walk func(*IcicleNode)
	walk = func(n *IcicleNode) {
		for _, c := range n.Children {
			all = append(all, c)
			walk(c)
		}
	}
	walk(root)
	if len(all) <= maxNodes {
		return
	}
	slices.SortStableFunc(all, func(a, b *IcicleNode) int { return cmp.Compare(max(b.REST, b.GraphQL), max(a.REST, a.GraphQL)) })
	limit := max(all[maxNodes-1].REST, all[maxNodes-1].GraphQL)
	// A child is never wider than its parent, so cutting at the
	// maxNodes-th width keeps whole paths from the root.
	var cut func(*IcicleNode)
	cut = func(n *IcicleNode) {
		kept := n.Children[:0]
		for _, c := range n.Children {
			if max(c.REST, c.GraphQL) >= limit {
				cut(c)
				kept = append(kept, c)
			}
		}
		n.Children = kept
	}
	cut(root)
}

// sortTree orders children widest first (GraphQL, then REST, then name),
// so the drawing is the same for the same profiles.
func sortTree(n *IcicleNode) {
	slices.SortFunc(n.Children, func(a, b *IcicleNode) int {
		return cmp.Or(cmp.Compare(b.GraphQL, a.GraphQL), cmp.Compare(b.REST, a.REST), cmp.Compare(a.Name, b.Name))
	})
	for _, c := range n.Children {
		sortTree(c)
	}
}

// Count is the number of frames in the tree under n (n excluded).
func (n *IcicleNode) Count() int {
	c := len(n.Children)
	for _, ch := range n.Children {
		c += ch.Count()
	}
	return c
}
