// Package termtext is text for a terminal of a given width: the width of a
// line as a terminal draws it, truncation and word wrapping to a width,
// the verdict's colours (honouring NO_COLOR), and numbers written for a
// person (thousands separators, binary units, milliseconds), so the live
// progress view and the end summary fit and read alike.
package termtext

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Width is the number of columns s takes on a terminal: one per rune (µ,
// box drawing, ✓ and … are one column each; soakd writes no wide
// characters), with ANSI escape sequences (colours, cursor moves) taking
// none.
func Width(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == 0x1b {
			i += escapeLen(s[i:])
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return n
}

// escapeLen is the length in bytes of the ANSI escape sequence at the start
// of s (ESC [ parameters final-byte), or 1 for a lone ESC.
func escapeLen(s string) int {
	if len(s) < 2 || s[1] != '[' {
		return 1
	}
	for i := 2; i < len(s); i++ {
		if c := s[i]; c >= 0x40 && c <= 0x7e {
			return i + 1
		}
	}
	return len(s)
}

// Truncate shortens s to at most width columns, ending it with … when
// anything was cut. A trailing round suffix ("#2" of a phase's round) is
// kept when it fills at most half the width, the cut made before it
// ("rest-cont…#2"), so the rounds of one phase stay told apart. It is
// meant for plain text (no escape sequences).
func Truncate(s string, width int) string {
	if width <= 0 {
		return ""
	}
	if Width(s) <= width {
		return s
	}
	runes := []rune(s)
	if i := strings.LastIndexByte(s, '#'); i > 0 && i < len(s)-1 && strings.Trim(s[i+1:], "0123456789") == "" {
		suffix := s[i:]
		if keep := width - 1 - len(suffix); keep > 0 && len(suffix) <= width/2 {
			return string([]rune(s[:i])[:min(keep, len([]rune(s[:i])))]) + "…" + suffix
		}
	}
	return string(runes[:width-1]) + "…"
}

// Pad is s followed by spaces up to width columns (s itself when wider).
func Pad(s string, width int) string {
	return s + strings.Repeat(" ", max(0, width-Width(s)))
}

// PadLeft is s preceded by spaces up to width columns (s itself when
// wider): right-aligned, as numbers are.
func PadLeft(s string, width int) string {
	return strings.Repeat(" ", max(0, width-Width(s))) + s
}

// Wrap breaks s at spaces into lines of at most width columns; every line
// after the first starts with indent (counted in the width), the first
// keeps s's leading spaces. A word longer than a line is truncated with …,
// so no line is ever wider than width.
func Wrap(s string, width int, indent string) []string {
	var lines []string
	lead := s[:len(s)-len(strings.TrimLeft(s, " "))]
	line := ""
	for _, word := range strings.Fields(s) {
		prefix := lead
		if len(lines) > 0 {
			prefix = indent
		}
		switch {
		case line == "":
			line = Truncate(word, width-Width(prefix))
		case Width(prefix)+Width(line)+1+Width(word) <= width:
			line += " " + word
		default:
			lines = append(lines, prefix+line)
			line = Truncate(word, width-Width(indent))
		}
	}
	if line != "" || len(lines) == 0 {
		prefix := lead
		if len(lines) > 0 {
			prefix = indent
		}
		lines = append(lines, prefix+line)
	}
	return lines
}

// Colour names the verdict colours.
type Colour int

// The colours of a verdict word.
const (
	Green Colour = iota
	Red
	Yellow
)

// sgr are the ANSI select-graphic-rendition codes of the colours, bold.
var sgr = map[Colour]string{Green: "1;32", Red: "1;31", Yellow: "1;33"}

// Paint wraps s in colour c when on, else returns s unchanged.
func Paint(s string, c Colour, on bool) string {
	if !on {
		return s
	}
	return "\x1b[" + sgr[c] + "m" + s + "\x1b[0m"
}

// UseColour reports whether output may be coloured: only on a terminal,
// and never when the NO_COLOR environment variable has any non-empty value
// (https://no-color.org); noColor is that variable's value.
func UseColour(terminal bool, noColor string) bool {
	return terminal && noColor == ""
}

// Count writes n with commas between groups of three digits: 12,345.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Rate writes a rate per second rounded to a whole number with thousands
// separators (1,650), or with one decimal below 10 (2.5).
func Rate(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	if math.Abs(v) < 10 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return Count(int64(math.Round(v)))
}

// Millis writes a latency given in milliseconds with its unit and about
// three significant digits: 812 µs, 3.10 ms, 31.2 ms, 312 ms, 1.23 s.
func Millis(ms float64) string {
	switch a := math.Abs(ms); {
	case math.IsNaN(ms) || math.IsInf(ms, 0):
		return "—"
	case a < 1:
		return fmt.Sprintf("%.0f µs", ms*1000)
	case a < 10:
		return fmt.Sprintf("%.2f ms", ms)
	case a < 100:
		return fmt.Sprintf("%.1f ms", ms)
	case a < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	default:
		return fmt.Sprintf("%.2f s", ms/1000)
	}
}

// Bytes writes a byte count in binary units with one decimal: 512 B,
// 11.7 KiB, 1.0 MiB, 2.3 GiB.
func Bytes(b float64) string {
	if math.IsNaN(b) || math.IsInf(b, 0) {
		return "—"
	}
	if math.Abs(b) < 1024 {
		return fmt.Sprintf("%.0f B", b)
	}
	v, unit := b, "B"
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if math.Abs(v) < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	return fmt.Sprintf("%.1f %s", v, unit)
}

// Duration writes d to the second for a person: 45s, 3m05s, 1h02m.
func Duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
}

// Layout says how Table lays out its rows.
type Layout struct {
	// Right marks the columns aligned right (numbers); the others align
	// left.
	Right []bool
	// Drop names the columns left out, in this order, while the table is
	// too wide with its first column at MinName.
	Drop []int
	// Gap is the number of spaces between two columns.
	Gap int
	// MinName is the narrowest the first column (the names) shrinks to
	// before a column is dropped; 0 means 12.
	MinName int
}

// Table lays rows out in columns, each as wide as its widest cell. When
// the table is wider than width, the first column (the names) shrinks,
// its cells truncated with …, to no less than l.MinName; then the columns
// in l.Drop are left out while it is still too wide; then the names
// shrink to 8 columns. Every line is then cut at width, so none is ever
// wider.
func Table(rows [][]string, l Layout, width int) []string {
	minName := l.MinName
	if minName <= 0 {
		minName = 12
	}
	keep := map[int]bool{}
	for _, row := range rows {
		for i := range row {
			keep[i] = true
		}
	}
	drop := l.Drop
	for {
		widths, total := columnWidths(rows, keep, l.Gap)
		if total-max(0, widths[0]-minName) <= width || len(drop) == 0 {
			if over := total - width; over > 0 {
				widths[0] = min(widths[0], max(8, widths[0]-over))
			}
			return layout(rows, l.Right, keep, widths, l.Gap, width)
		}
		delete(keep, drop[0])
		drop = drop[1:]
	}
}

// columnWidths are the widths of the kept columns (0 for the others) and
// the table's total width with its gaps.
func columnWidths(rows [][]string, keep map[int]bool, gap int) ([]int, int) {
	widths := []int{0}
	for _, row := range rows {
		for i, c := range row {
			for i >= len(widths) {
				widths = append(widths, 0)
			}
			if keep[i] {
				widths[i] = max(widths[i], Width(c))
			}
		}
	}
	total, n := 0, 0
	for i, w := range widths {
		if keep[i] {
			total, n = total+w, n+1
		}
	}
	return widths, total + gap*max(0, n-1)
}

func layout(rows [][]string, right []bool, keep map[int]bool, widths []int, gap, width int) []string {
	sep := strings.Repeat(" ", gap)
	lines := make([]string, 0, len(rows))
	for _, row := range rows {
		var cells []string
		for i, c := range row {
			if !keep[i] {
				continue
			}
			c = Truncate(c, widths[i])
			switch {
			case i < len(right) && right[i]:
				c = PadLeft(c, widths[i])
			default:
				c = Pad(c, widths[i])
			}
			cells = append(cells, c)
		}
		lines = append(lines, Truncate(strings.TrimRight(strings.Join(cells, sep), " "), width))
	}
	return lines
}
