// Package echo bounds the request input an error reply quotes back: a run
// id, a path, a method, a query parameter. A client may send a megabyte of
// path (Go's default header limit); a reply that repeated it whole was a
// free amplifier and filled logs (issue 23: a 5,000-character run id was
// echoed whole). Every server soakd runs — the control API, the built-in
// donut target and the relational target — quotes input through Input.
package echo

import (
	"fmt"
	"unicode/utf8"
)

// MaxBytes is the most bytes of one input a reply quotes: ids soakd makes
// are about 20 bytes and its routes' paths under 50.
const MaxBytes = 64

// Input returns s as a reply may quote it: s itself up to MaxBytes bytes,
// else its first MaxBytes bytes (cut at a character boundary) then an
// ellipsis with the full length, e.g. "aaaa… (5000 bytes)".
func Input(s string) string {
	if len(s) <= MaxBytes {
		return s
	}
	cut := MaxBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}
