package workloads

import (
	"fmt"
	"slices"
	"strings"
)

// Templates: an operation's path, headers, bodies and expected values may
// hold placeholders "{{name}}" naming a variable of the operation (its data
// entries, and for writers writer_id and event). A template is compiled once,
// when the phase starts, into byte segments, so that filling it for a request
// is a few appends into a buffer the user reuses: no text/template, no
// reflection, no map look-up and no allocation per request.

// escaping says how a variable's value is written into the text around it.
type escaping uint8

const (
	// escRaw writes the value as it is (headers, text bodies, expected values).
	escRaw escaping = iota
	// escJSON writes the value as the inside of a JSON string.
	escJSON
	// escPath writes the value as one URL path segment (url.PathEscape).
	escPath
	// escQuery writes the value as a URL query component (url.QueryEscape).
	escQuery
	// escJSONQuery writes the value as the inside of a JSON string, itself
	// a URL query component (GraphQL's GET variables).
	escJSONQuery
)

// segment is a literal followed by a variable's value (v is the variable's
// index, or -1 when the segment is only a literal).
type segment struct {
	lit []byte
	v   int
	esc escaping
}

// template is compiled text: its segments in order.
type template []segment

// constant reports whether t has no variable, and its text.
func (t template) constant() (string, bool) {
	var b []byte
	for _, s := range t {
		if s.v >= 0 {
			return "", false
		}
		b = append(b, s.lit...)
	}
	return string(b), true
}

// single returns the variable t consists of when t is exactly one
// placeholder with nothing around it, written raw: its value needs no copy.
func (t template) single() (int, bool) {
	if len(t) == 1 && len(t[0].lit) == 0 && t[0].v >= 0 && t[0].esc == escRaw {
		return t[0].v, true
	}
	return -1, false
}

// uses reports whether t refers to variable v.
func (t template) uses(v int) bool {
	return slices.ContainsFunc(t, func(s segment) bool { return s.v == v })
}

// expand appends t filled with vals (indexed like the names t was compiled
// with) to dst.
func (t template) expand(dst []byte, vals [][]byte) []byte {
	for _, s := range t {
		dst = append(dst, s.lit...)
		if s.v < 0 {
			continue
		}
		switch v := vals[s.v]; s.esc {
		case escJSON:
			dst = appendJSONString(dst, v)
		case escPath:
			dst = appendURLEscaped(dst, v, false)
		case escQuery:
			dst = appendURLEscaped(dst, v, true)
		case escJSONQuery:
			for i := range v {
				var tmp [6]byte
				dst = appendURLEscaped(dst, appendJSONString(tmp[:0], v[i:i+1]), true)
			}
		default:
			dst = append(dst, v...)
		}
	}
	return dst
}

// compileTemplate compiles text into a template whose variables are looked
// up in names (name -> index) and written with esc. A placeholder is
// "{{name}}", spaces allowed inside the braces; "{{" without a closing "}}",
// an empty name or one not in names is an error naming the placeholder.
//
// With esc escJSON, a placeholder "{{name|raw}}" standing alone as a JSON
// string ("\"{{name|raw}}\"") drops the quotes and writes the value as it
// is: a number. raw reports the variables so used, for the caller to check
// that they only ever hold numbers. With escPath, the text after the first
// literal '?' is a query: its values are written with escQuery.
func compileTemplate(text string, esc escaping, names map[string]int) (t template, raw []string, err error) {
	var lit []byte
	rest := text
	for {
		i := strings.Index(rest, "{{")
		if i < 0 {
			lit = append(lit, rest...)
			break
		}
		lit = append(lit, rest[:i]...)
		if esc == escPath && strings.Contains(string(lit), "?") {
			esc = escQuery
		}
		end := strings.Index(rest[i+2:], "}}")
		if end < 0 {
			return nil, nil, fmt.Errorf("%q has %q without a closing }}", text, rest[i:min(len(rest), i+20)])
		}
		inner := strings.TrimSpace(rest[i+2 : i+2+end])
		rest = rest[i+2+end+2:]
		name, mod, hasMod := strings.Cut(inner, "|")
		name, mod = strings.TrimSpace(name), strings.TrimSpace(mod)
		v, ok := names[name]
		switch {
		case name == "":
			return nil, nil, fmt.Errorf("%q has an empty placeholder {{}}", text)
		case !ok:
			return nil, nil, fmt.Errorf("%q uses {{%s}}, which is not a variable of the operation; its variables: %s", text, name, nameList(names))
		}
		segEsc := esc
		if hasMod {
			if mod != "raw" || esc != escJSON {
				return nil, nil, fmt.Errorf("%q: {{%s}} has an unknown modifier; only {{name|raw}} in a JSON body or variables (a number) is known", text, inner)
			}
			// The placeholder must be a whole JSON string: drop its quotes.
			if len(lit) == 0 || lit[len(lit)-1] != '"' || !strings.HasPrefix(rest, `"`) {
				return nil, nil, fmt.Errorf("%q: {{%s|raw}} must be a whole value, like x: \"{{%s|raw}}\"", text, name, name)
			}
			lit, rest, segEsc = lit[:len(lit)-1], rest[1:], escRaw
			raw = append(raw, name)
		}
		t = append(t, segment{lit: lit, v: v, esc: segEsc})
		lit = nil
	}
	if len(lit) > 0 || len(t) == 0 {
		t = append(t, segment{lit: lit, v: -1})
	}
	return t, raw, nil
}

// nameList lists names sorted, for messages.
func nameList(names map[string]int) string {
	if len(names) == 0 {
		return "none"
	}
	s := make([]string, 0, len(names))
	for n := range names {
		s = append(s, n)
	}
	slices.Sort(s)
	return strings.Join(s, ", ")
}

// appendJSONString appends s as the inside of a JSON string: quote,
// backslash and control characters escaped, everything else as it is.
func appendJSONString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// appendURLEscaped appends s escaped as url.PathEscape (query false) or
// url.QueryEscape (query true) would, without allocating.
func appendURLEscaped(dst, s []byte, query bool) []byte {
	const hex = "0123456789ABCDEF"
	for _, c := range s {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '_', c == '.', c == '~':
			dst = append(dst, c)
		case query && c == ' ':
			dst = append(dst, '+')
		case !query && (c == '$' || c == '&' || c == '+' || c == ':' || c == '=' || c == '@'):
			// Left unescaped in a path segment, as url.PathEscape does.
			dst = append(dst, c)
		default:
			dst = append(dst, '%', hex[c>>4], hex[c&0xF])
		}
	}
	return dst
}
