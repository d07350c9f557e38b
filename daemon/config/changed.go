package config

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// isWhole reports whether the mapping at path holds entries a file
// replaces whole.
func isWhole(path string) bool { return path == "profiles" || path == "operations" }

// ChangedYAML is the effective configuration c (as EffectiveYAML) less
// every key whose value equals the one in base (the embedded defaults'
// configuration): what the user's files set, in the defaults' key order,
// as a document soakd accepts as --config and reads back as c. A profile
// or an operation that differs is printed whole, since a file replaces
// them whole. Nothing changed gives "{}\n".
func ChangedYAML(base, c *Config) ([]byte, error) {
	var a, b yaml.Node
	for _, x := range []struct {
		cfg *Config
		n   *yaml.Node
	}{{base, &a}, {c, &b}} {
		out, err := EffectiveYAML(x.cfg)
		if err != nil {
			return nil, err
		}
		if err := yaml.Unmarshal(out, x.n); err != nil {
			return nil, fmt.Errorf("cannot read the rendered configuration back: %w", err)
		}
	}
	diff := changed(a.Content[0], b.Content[0], "")
	if diff == nil {
		return []byte("{}\n"), nil
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(diff); err != nil {
		return nil, fmt.Errorf("cannot render the configuration: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("cannot render the configuration: %w", err)
	}
	return buf.Bytes(), nil
}

// changed is the part of node b that differs from a (nil: none). Two
// mappings are compared key by key; anything else, and the entries of a
// whole map (isWhole), is kept whole when it differs at all.
func changed(a, b *yaml.Node, path string) *yaml.Node {
	if a == nil || a.Kind != yaml.MappingNode || b.Kind != yaml.MappingNode {
		if a != nil && equalNodes(a, b) {
			return nil
		}
		return b
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(b.Content); i += 2 {
		key, val := b.Content[i], b.Content[i+1]
		old := lookup(a, key.Value)
		var d *yaml.Node
		switch {
		case isWhole(path):
			if old == nil || !equalNodes(old, val) {
				d = val
			}
		default:
			d = changed(old, val, keyPath(path, key.Value))
		}
		if d != nil {
			out.Content = append(out.Content, key, d)
		}
	}
	if len(out.Content) == 0 {
		return nil
	}
	return out
}

func keyPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// lookup is mapping m's value for key, nil without one.
func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// equalNodes compares two nodes by kind, tag, value and content.
func equalNodes(a, b *yaml.Node) bool {
	if a.Kind != b.Kind || a.Value != b.Value || a.ShortTag() != b.ShortTag() || len(a.Content) != len(b.Content) {
		return false
	}
	for i := range a.Content {
		if !equalNodes(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}
