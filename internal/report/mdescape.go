package report

import (
	"strings"
	"unicode"
)

// Escaping for report.md. Phase names, target names, operation names,
// function names, server error bodies and a command's stderr reach the
// report; an IDE preview or a CI "publish Markdown" step renders it, so
// none of that text may become HTML, a table cell, a list or emphasis.
// Every untrusted string goes through mdText (inline text: paragraphs, list
// items, headings and table cells alike) or mdCode / mdCodeCell (a code
// span); report.html and junit.xml escape on their own.

// mdText escapes s as Markdown inline text that renders as itself: line
// breaks and other control characters become spaces (a table row or list
// item stays one line), the ends are trimmed (leading spaces would start
// an indented code block), <, > and & become entities (no HTML, no
// entity), the punctuation that marks up inline text (\ ` * _ [ ] | ~ $)
// is backslash-escaped, | also in a table cell, and a block marker at the
// start ("#", "- ", "+ ", "---", "1. " or "1) ") is escaped so the text
// cannot open a heading, a rule or a list. An underscore between two letters or digits is left
// as is: it cannot emphasise (snake_case names stay readable).
func mdText(s string) string {
	s = strings.TrimSpace(spaceControls(s))
	if s == "" {
		return ""
	}
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i, c := range rs {
		switch c {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\\', '`', '*', '[', ']', '|', '~', '$':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '_':
			if i == 0 || i == len(rs)-1 || !alnum(rs[i-1]) || !alnum(rs[i+1]) {
				b.WriteByte('\\')
			}
			b.WriteRune(c)
		case '#':
			if i == 0 {
				b.WriteByte('\\')
			}
			b.WriteRune(c)
		case '-', '+':
			// "- x", "+ x" open a list item, "---" is a rule.
			if i == 0 && (len(rs) == 1 || rs[1] == ' ' || (c == '-' && rs[1] == '-')) {
				b.WriteByte('\\')
			}
			b.WriteRune(c)
		case '.', ')':
			// "1. x" and "1) x" open an ordered list item.
			if leadingDigits(rs[:i]) && (i == len(rs)-1 || rs[i+1] == ' ') {
				b.WriteByte('\\')
			}
			b.WriteRune(c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// mdCode writes s as a code span, which renders its text literally (no
// HTML, no emphasis): the fence is one backtick longer than the longest run
// of backticks in s, and a space pads each end when s begins or ends with
// a backtick or a space (Markdown strips one space from each end). Line
// breaks become spaces. Outside a table only: in a cell use mdCodeCell.
func mdCode(s string) string {
	s = spaceControls(s)
	if strings.TrimSpace(s) == "" {
		return mdText(s)
	}
	run, longest := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// mdCodeCell is mdCode for a table cell: a | inside is escaped as \| too,
// which a table reads as part of the cell (and shows as |), even in a code
// span.
func mdCodeCell(s string) string {
	return strings.ReplaceAll(mdCode(s), "|", `\|`)
}

// mdRow writes one table row of cells that are already Markdown (escaped
// with mdText, or built from escaped parts).
func mdRow(cells ...string) string {
	return "| " + strings.Join(cells, " | ") + " |\n"
}

// mdTexts escapes each of ss with mdText.
func mdTexts(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = mdText(s)
	}
	return out
}

// spaceControls replaces every control character (line breaks, tabs, NUL,
// escape sequences) with a space.
func spaceControls(s string) string {
	return strings.Map(func(c rune) rune {
		if unicode.IsControl(c) || c == '\u2028' || c == '\u2029' {
			return ' '
		}
		return c
	}, s)
}

func alnum(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }

// leadingDigits reports whether rs is one to nine ASCII digits: what opens
// an ordered list when a '.' or ')' follows.
func leadingDigits(rs []rune) bool {
	if len(rs) == 0 || len(rs) > 9 {
		return false
	}
	for _, c := range rs {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
