package graph

import (
	"strconv"
	"unicode/utf8"
)

// clip returns s when it is at most n bytes long, else its first n bytes
// (fewer, to end on a whole UTF-8 character) followed by "… (L bytes)", L
// being len(s): how error messages and close reasons quote client input
// without sending a large input back.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (" + strconv.Itoa(len(s)) + " bytes)"
}
