package workloads

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
)

// The expectations' JSON reader: one pass over a response body that checks
// it is well-formed JSON and notes where the values at a few paths are,
// without decoding anything and without allocating.

// maxJSONDepth bounds the nesting the scanner follows (it recurses once per
// level); deeper bodies are a decode error.
const maxJSONDepth = 256

// maxExpectPaths caps an operation's JSON paths (expected and present,
// plus the errors check): the scanner tracks them in one 64-bit mask.
const maxExpectPaths = 64

// jsonPath is a compiled dotted path such as data.donut.id: its keys, each
// also read as an array index when it is a non-negative integer.
type jsonPath struct {
	keys [][]byte
	idx  []int // -1 when the key is not an index
}

// parseJSONPath compiles a dotted path; empty keys are an error.
func parseJSONPath(s string) (jsonPath, error) {
	var p jsonPath
	for k := range bytes.SplitSeq([]byte(s), []byte(".")) {
		if len(k) == 0 {
			return jsonPath{}, fmt.Errorf("%q has an empty key; write keys joined by dots, like data.donut.id", s)
		}
		i, err := strconv.Atoi(string(k))
		if err != nil || i < 0 {
			i = -1
		}
		p.keys = append(p.keys, k)
		p.idx = append(p.idx, i)
	}
	return p, nil
}

// valueSpan is where a path's value lies in a body: body[start:end], the
// whole JSON value (a string with its quotes); start < 0 when absent.
type valueSpan struct{ start, end int }

// errJSON is any syntax error; the caller quotes the body.
var errJSON = errors.New("not valid JSON")

// jsonScanner walks one body.
type jsonScanner struct {
	b     []byte
	i     int
	paths []jsonPath
	found []valueSpan
}

// scanJSON checks that body is one JSON value (whitespace around it
// allowed) and sets found[k] to the span of paths[k]'s value, or {-1, -1}.
// len(found) must be len(paths) <= maxExpectPaths.
func scanJSON(body []byte, paths []jsonPath, found []valueSpan) error {
	for k := range found {
		found[k] = valueSpan{-1, -1}
	}
	s := jsonScanner{b: body, paths: paths, found: found}
	var mask uint64
	for k := range paths {
		mask |= 1 << k
	}
	s.space()
	if err := s.value(0, mask); err != nil {
		return err
	}
	s.space()
	if s.i != len(s.b) {
		return fmt.Errorf("%w: data after the value at byte %d", errJSON, s.i)
	}
	return nil
}

func (s *jsonScanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// value scans one value at depth; mask holds the paths whose first depth
// keys led here.
func (s *jsonScanner) value(depth int, mask uint64) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("%w: nested deeper than %d levels", errJSON, maxJSONDepth)
	}
	start := s.i
	if s.i >= len(s.b) {
		return fmt.Errorf("%w: unexpected end", errJSON)
	}
	var err error
	switch c := s.b[s.i]; {
	case c == '{':
		err = s.object(depth, mask)
	case c == '[':
		err = s.array(depth, mask)
	case c == '"':
		_, err = s.str()
	case c == '-' || (c >= '0' && c <= '9'):
		err = s.number()
	default:
		err = s.literal()
	}
	if err != nil {
		return err
	}
	for m := mask; m != 0; m &= m - 1 {
		k := bits.TrailingZeros64(m)
		if len(s.paths[k].keys) == depth {
			s.found[k] = valueSpan{start, s.i}
		}
	}
	return nil
}

func (s *jsonScanner) object(depth int, mask uint64) error {
	s.i++ // {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != '"' {
			return fmt.Errorf("%w: want a key at byte %d", errJSON, s.i)
		}
		key, err := s.str()
		if err != nil {
			return err
		}
		s.space()
		if s.i >= len(s.b) || s.b[s.i] != ':' {
			return fmt.Errorf("%w: want ':' at byte %d", errJSON, s.i)
		}
		s.i++
		s.space()
		var sub uint64
		for m := mask; m != 0; m &= m - 1 {
			k := bits.TrailingZeros64(m)
			if p := s.paths[k]; len(p.keys) > depth && bytes.Equal(p.keys[depth], key) {
				sub |= 1 << k
			}
		}
		if err := s.value(depth+1, sub); err != nil {
			return err
		}
		if done, err := s.next('}'); done || err != nil {
			return err
		}
	}
}

func (s *jsonScanner) array(depth int, mask uint64) error {
	s.i++ // [
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		s.space()
		var sub uint64
		for m := mask; m != 0; m &= m - 1 {
			k := bits.TrailingZeros64(m)
			if p := s.paths[k]; len(p.keys) > depth && p.idx[depth] == n {
				sub |= 1 << k
			}
		}
		if err := s.value(depth+1, sub); err != nil {
			return err
		}
		if done, err := s.next(']'); done || err != nil {
			return err
		}
	}
}

// next scans what follows a member or element: a ',' (more to come) or
// closing, the container's end (done).
func (s *jsonScanner) next(closing byte) (done bool, err error) {
	s.space()
	if s.i >= len(s.b) {
		return false, fmt.Errorf("%w: unexpected end", errJSON)
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return false, nil
	case closing:
		s.i++
		return true, nil
	}
	return false, fmt.Errorf("%w: want ',' or '%c' at byte %d", errJSON, closing, s.i)
}

// str scans a string and returns its raw inside (escapes not undone).
func (s *jsonScanner) str() ([]byte, error) {
	s.i++ // "
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], nil
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return nil, fmt.Errorf("%w: unexpected end", errJSON)
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) || !isHex4(s.b[s.i+2:s.i+6]) {
					return nil, fmt.Errorf("%w: bad \\u escape at byte %d", errJSON, s.i)
				}
				s.i += 6
			default:
				return nil, fmt.Errorf("%w: bad escape at byte %d", errJSON, s.i)
			}
		case c < 0x20:
			return nil, fmt.Errorf("%w: control character in a string at byte %d", errJSON, s.i)
		default:
			s.i++
		}
	}
	return nil, fmt.Errorf("%w: unterminated string", errJSON)
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// number scans a number by JSON's grammar.
func (s *jsonScanner) number() error {
	start := s.i
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if digits() == 0 {
		return fmt.Errorf("%w: bad number at byte %d", errJSON, start)
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return fmt.Errorf("%w: bad number at byte %d", errJSON, start)
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return fmt.Errorf("%w: bad number at byte %d", errJSON, start)
		}
	}
	return nil
}

// literal scans true, false or null.
func (s *jsonScanner) literal() error {
	for _, lit := range []string{"true", "false", "null"} {
		if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
			s.i += len(lit)
			return nil
		}
	}
	return fmt.Errorf("%w: unexpected %q at byte %d", errJSON, s.b[s.i], s.i)
}
