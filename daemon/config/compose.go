package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// How a config file is composed of others: include: reads operation
// libraries shared between configs; a profile's extends: starts from
// another profile and changes only what it names.
const (
	// includeKey is the top-level key listing the files a config includes.
	includeKey = "include"
	// extendsKey is a profile's key naming the profile it starts from.
	extendsKey = "extends"
	// maxIncludeDepth bounds nested includes (a file that includes one
	// that includes another…): a cycle is refused before it, by name.
	maxIncludeDepth = 8
	// maxIncludeBytes caps one included file.
	maxIncludeBytes = 4 << 20
)

// includes takes the include: list off body and decodes each file onto cfg
// first, in order, so that body's own keys decide over them: paths are
// relative to source's directory; an included file may hold operations:
// and include: only (an operation library). seen holds the files being
// included, to refuse a cycle. A document that is not a file (--set, an
// API run's overrides) may not include.
func includes(body *yaml.Node, cfg *Config, source string, seen []string) error {
	if body.Kind != yaml.MappingNode {
		return nil
	}
	i := slices.IndexFunc(pairs(body), func(p [2]*yaml.Node) bool { return p[0].Value == includeKey })
	if i < 0 {
		return nil
	}
	key, list := body.Content[2*i], body.Content[2*i+1]
	body.Content = slices.Delete(body.Content, 2*i, 2*i+2)
	bad := func(line int, format string, args ...any) error {
		return &ConfigError{Source: source, Problems: []FieldError{{Path: includeKey, Line: line, Msg: fmt.Sprintf(format, args...)}}}
	}
	st, err := os.Stat(source)
	if err != nil || !st.Mode().IsRegular() {
		return bad(key.Line, "is read only in a config file (its paths are relative to the file); %s is not one", source)
	}
	if list.Kind != yaml.SequenceNode {
		return bad(list.Line, "must be a list of files, e.g. include: [ops/books.yaml]")
	}
	if len(seen) >= maxIncludeDepth {
		return bad(key.Line, "includes nest deeper than %d files (%s)", maxIncludeDepth, strings.Join(seen, " → "))
	}
	for _, n := range list.Content {
		if n.Kind != yaml.ScalarNode || n.Value == "" {
			return bad(n.Line, "must list file paths (got a %s)", nodeKind(n))
		}
		path := n.Value
		if !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(source), path)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return bad(n.Line, "%s: %v", n.Value, err)
		}
		if slices.Contains(seen, abs) {
			return bad(n.Line, "%s includes itself (%s)", n.Value, strings.Join(append(slices.Clone(seen), abs), " → "))
		}
		doc, err := ReadRegular(abs, maxIncludeBytes)
		if err != nil {
			return bad(n.Line, "cannot read %s: %v", n.Value, err)
		}
		inc, err := parseDoc(doc, abs)
		if err != nil {
			return err
		}
		for _, p := range pairs(inc) {
			if k := p[0].Value; k != "operations" && k != includeKey {
				return &ConfigError{Source: abs, Problems: []FieldError{{Path: k, Line: p[0].Line,
					Msg: "an included file is an operation library: it may hold operations: (and include:) only; put " + k + ": in the config that includes it"}}}
			}
		}
		if _, err := decodeNode(inc, cfg, abs, append(slices.Clone(seen), abs)); err != nil {
			return err
		}
	}
	return nil
}

// extends expands every profile of body that names extends: BASE into
// BASE's keys with its own on top (a key it gives replaces BASE's whole:
// phases is one list), BASE being a profile of the same document
// (expanded first) or one defined before it (the embedded ones, an
// included file's). The key itself is removed: the result is an ordinary
// profile.
func extends(body *yaml.Node, cfg *Config, source string) error {
	if body.Kind != yaml.MappingNode {
		return nil
	}
	var profiles *yaml.Node
	for _, p := range pairs(body) {
		if p[0].Value == "profiles" && p[1].Kind == yaml.MappingNode {
			profiles = p[1]
		}
	}
	if profiles == nil {
		return nil
	}
	byName := map[string]*yaml.Node{}
	for _, p := range pairs(profiles) {
		byName[p[0].Value] = p[1]
	}
	done := map[string]bool{}
	var expand func(name string, chain []string) error
	expand = func(name string, chain []string) error {
		node := byName[name]
		if done[name] || node.Kind != yaml.MappingNode {
			return nil
		}
		i := slices.IndexFunc(pairs(node), func(p [2]*yaml.Node) bool { return p[0].Value == extendsKey })
		if i < 0 {
			done[name] = true
			return nil
		}
		val := node.Content[2*i+1]
		path := "profiles." + name + "." + extendsKey
		bad := func(format string, args ...any) error {
			return &ConfigError{Source: source, Problems: []FieldError{{Path: path, Line: val.Line, Msg: fmt.Sprintf(format, args...)}}}
		}
		if val.Kind != yaml.ScalarNode || val.Value == "" {
			return bad("must name the profile this one starts from (got a %s)", nodeKind(val))
		}
		base := val.Value
		if slices.Contains(chain, base) || base == name {
			return bad("profiles extend each other in a cycle (%s)", strings.Join(append(append(slices.Clone(chain), name), base), " → "))
		}
		var baseNode *yaml.Node
		if b, ok := byName[base]; ok {
			if err := expand(base, append(chain, name)); err != nil {
				return err
			}
			baseNode = b
		} else if p, ok := cfg.Profiles[base]; ok {
			baseNode = &yaml.Node{}
			if err := baseNode.Encode(p); err != nil {
				return bad("cannot read profile %s: %v", base, err)
			}
		} else {
			names := slices.Sorted(func(yield func(string) bool) {
				for n := range cfg.Profiles {
					if !yield(n) {
						return
					}
				}
			})
			for n := range byName {
				if !slices.Contains(names, n) && n != name {
					names = append(names, n)
				}
			}
			slices.Sort(names)
			return bad("names no profile (got %q; profiles: %s)", base, strings.Join(names, ", "))
		}
		own := slices.Delete(slices.Clone(node.Content), 2*i, 2*i+2)
		merged := make([]*yaml.Node, 0, len(baseNode.Content)+len(own))
		for _, p := range pairs(baseNode) {
			if p[0].Value == extendsKey || slices.ContainsFunc(pairsOf(own), func(q [2]*yaml.Node) bool { return q[0].Value == p[0].Value }) {
				continue
			}
			merged = append(merged, p[0], p[1])
		}
		node.Content = append(merged, own...)
		done[name] = true
		return nil
	}
	for _, p := range pairs(profiles) {
		if err := expand(p[0].Value, nil); err != nil {
			return err
		}
	}
	return nil
}

// pairs are a mapping node's key/value pairs.
func pairs(m *yaml.Node) [][2]*yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	return pairsOf(m.Content)
}

func pairsOf(content []*yaml.Node) [][2]*yaml.Node {
	out := make([][2]*yaml.Node, 0, len(content)/2)
	for i := 0; i+1 < len(content); i += 2 {
		out = append(out, [2]*yaml.Node{content[i], content[i+1]})
	}
	return out
}

// nodeKind names a node's kind for a message.
func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		if n.Value == "" {
			return "empty value"
		}
		return "value"
	}
	return "node"
}
