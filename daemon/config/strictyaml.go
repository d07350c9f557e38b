package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// FieldError is one problem in a configuration document, located by its key
// path (for example "profiles.quick.phases[1].think.max") and, when known,
// the 1-based line of the YAML source it came from.
type FieldError struct {
	Path string
	Line int
	Msg  string
}

// Error formats the problem as "line N: path: message".
func (e FieldError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// checker walks a YAML node tree against a Go type and records every key the
// type does not have and every scalar that cannot become the field's type.
// It exists because yaml.v3's own strict mode stops short of key paths: its
// messages name a Go type, not the key the user wrote.
type checker struct {
	problems []FieldError
	lines    map[string]int // key path -> line, so later validation errors can name lines too
}

func (c *checker) add(path string, line int, format string, args ...any) {
	c.problems = append(c.problems, FieldError{Path: path, Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) check(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil {
		return
	}
	c.lines[path] = n.Line
	if t.Kind() == reflect.Pointer {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return
		}
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Interface:
		// Any YAML value (a request body, GraphQL variables): sent as JSON.
		return
	case reflect.Struct:
		c.checkStruct(n, t, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			c.add(path, n.Line, "must be a mapping of names to values, got %s", describe(n))
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			c.check(v, t.Elem(), join(path, k.Value))
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			c.add(path, n.Line, "must be a list, got %s", describe(n))
			return
		}
		for i, item := range n.Content {
			c.check(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	default:
		c.checkScalar(n, t, path)
	}
}

func (c *checker) checkStruct(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		c.add(path, n.Line, "must be a mapping with keys %s, got %s", strings.Join(yamlKeys(t), ", "), describe(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := join(path, k.Value)
		if seen[k.Value] {
			c.add(p, k.Line, "key given twice")
			continue
		}
		seen[k.Value] = true
		f, ok := fieldByKey(t, k.Value)
		if !ok {
			c.add(p, k.Line, "unknown key; allowed keys here: %s", strings.Join(yamlKeys(t), ", "))
			continue
		}
		c.check(v, f.Type, p)
	}
}

func (c *checker) checkScalar(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.ScalarNode {
		c.add(path, n.Line, "must be a single %s, got %s", kindName(t), describe(n))
		return
	}
	v := n.Value
	var err error
	switch {
	case t == reflect.TypeFor[time.Duration]():
		if n.Tag == "!!int" && v == "0" {
			return
		}
		_, err = time.ParseDuration(v)
		if err != nil {
			c.add(path, n.Line, "%q is not a duration; write it with a unit, like 500ms, 5s or 2m", v)
		}
		return
	case t.Kind() == reflect.Bool:
		if n.Tag != "!!bool" {
			c.add(path, n.Line, "%q is not a boolean; write true or false", v)
		}
		return
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		_, err = strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 0, t.Bits())
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		_, err = strconv.ParseUint(strings.ReplaceAll(v, "_", ""), 0, t.Bits())
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		if n.Tag != "!!int" && n.Tag != "!!float" {
			err = fmt.Errorf("not a number")
		}
	case t.Kind() == reflect.String:
		if n.Tag == "!!null" {
			c.add(path, n.Line, "must not be empty")
		}
		return
	}
	if err != nil {
		c.add(path, n.Line, "%q is not a valid %s", v, kindName(t))
	}
}

// fieldByKey finds the struct field whose yaml tag names key.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if name := yamlName(f); name != "" && name == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// yamlKeys lists the keys a struct accepts, in declaration order.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		if name := yamlName(f); name != "" {
			keys = append(keys, name)
		}
	}
	return slices.Clip(keys)
}

func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
}

func kindName(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[time.Duration]():
		return "duration"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		return "integer"
	case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
		return "non-negative integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "number"
	default:
		return t.Kind().String()
	}
}
