package report

import (
	"html"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// mdEscaped is a backslash escape of CommonMark (any ASCII punctuation).
var mdEscaped = regexp.MustCompile("\\\\([!-/:-@\\[-`{-~])")

// mdPlain is the text a Markdown renderer shows for inline text mdText
// wrote: backslash escapes removed, then entities decoded.
func mdPlain(s string) string {
	return html.UnescapeString(mdEscaped.ReplaceAllString(s, "$1"))
}

func TestMDText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain words, 12.5 %", "plain words, 12.5 %"},
		{"<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;"},
		{"a|b", `a\|b`},
		{"a & b &amp;", "a &amp; b &amp;amp;"},
		{"line one\nline two\r\n\tthree\x00", "line one line two   three"},
		{"`code` **bold** _em_ [link](x) ~strike~ $x$ \\", "\\`code\\` \\*\\*bold\\*\\* \\_em\\_ \\[link\\](x) \\~strike\\~ \\$x\\$ \\\\"},
		{"snake_case_name", "snake_case_name"},
		{"# heading", `\# heading`},
		{"- item", `\- item`},
		{"+ item", `\+ item`},
		{"---", `\---`},
		{"-1.7 %", "-1.7 %"},
		{"1. first", `1\. first`},
		{"12) first", `12\) first`},
		{"34.00 %", "34.00 %"},
		{"    indented", "indented"},
		{"", ""},
	} {
		got := mdText(c.in)
		if got != c.want {
			t.Errorf("mdText(%q) = %q, want %q", c.in, got, c.want)
		}
		if plain, want := mdPlain(got), strings.Join(strings.Fields(spaceControls(c.in)), " "); strings.Join(strings.Fields(plain), " ") != want {
			t.Errorf("mdText(%q) renders as %q, want %q", c.in, plain, want)
		}
		if strings.ContainsAny(got, "<>\n\r") {
			t.Errorf("mdText(%q) = %q holds a raw <, > or line break", c.in, got)
		}
	}
}

func TestMDCode(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"main.(*T).Serve", "`main.(*T).Serve`"},
		{"a`b", "``a`b``"},
		{"a``b`c", "```a``b`c```"},
		{"`start", "`` `start ``"},
		{"end`", "`` end` ``"},
		{" padded ", "`  padded  `"},
		{"two\nlines", "`two lines`"},
		{"<script>", "`<script>`"},
		{"", ""},
	} {
		if got := mdCode(c.in); got != c.want {
			t.Errorf("mdCode(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := mdCodeCell("a|b`c"); got != "``a\\|b`c``" {
		t.Errorf("mdCodeCell(%q) = %q", "a|b`c", got)
	}
}

// hostileText is what a 500 body, a command's stderr or a phase name may
// hold: HTML, a table separator, emphasis, a code span, a link and line
// breaks that would start a heading, a list and a table row.
const hostileText = "<script>alert(1)</script> a|b ``x` *em* _u_ [l](http://e) &amp;\n# h\n- li\n| c |\r\n1. n"

// setStrings sets every plain string reachable from v (struct fields,
// slice and array elements, map values, through pointers) to s, and adds
// a key s to every map from string to int (error classes).
func setStrings(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			setStrings(v.Elem(), s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				setStrings(v.Field(i), s)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			setStrings(v.Index(i), s)
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			setStrings(e, s)
			v.SetMapIndex(k, e)
		}
		if v.Type().Key() == reflect.TypeFor[string]() && v.Type().Elem().Kind() == reflect.Int64 {
			v.SetMapIndex(reflect.ValueOf(s), reflect.ValueOf(int64(1)))
		}
	case reflect.String:
		if v.Type() == reflect.TypeFor[string]() && v.CanSet() {
			v.SetString(s)
		}
	}
}

// mdOutsideCode splits a Markdown line as CommonMark does into the text
// outside code spans (backslash escapes kept) and the code spans' contents.
func mdOutsideCode(line string) (text string, spans []string) {
	var b strings.Builder
	for i := 0; i < len(line); {
		switch {
		case line[i] == '\\' && i+1 < len(line):
			b.WriteString(line[i : i+2])
			i += 2
		case line[i] == '`':
			n := 0
			for i+n < len(line) && line[i+n] == '`' {
				n++
			}
			end := -1
			for j := i + n; j < len(line); {
				if line[j] != '`' {
					j++
					continue
				}
				m := 0
				for j+m < len(line) && line[j+m] == '`' {
					m++
				}
				if m == n {
					end = j
					break
				}
				j += m
			}
			if end < 0 {
				b.WriteString(line[i : i+n])
				i += n
				continue
			}
			spans = append(spans, line[i+n:end])
			i = end + n
		default:
			b.WriteByte(line[i])
			i++
		}
	}
	return b.String(), spans
}

// unescaped counts the characters of set in text that no backslash escapes.
func unescaped(text, set string) int {
	n := 0
	for i := 0; i < len(text); i++ {
		if text[i] == '\\' {
			i++
			continue
		}
		if strings.IndexByte(set, text[i]) >= 0 {
			n++
		}
	}
	return n
}

// mdShape is a rendering's block structure, one entry a line: blank,
// heading level, list item, table row with its cell count, or paragraph;
// and, outside code spans, the count of unescaped inline markup.
func mdShape(md string) (shape []string, markup int) {
	for _, line := range strings.Split(md, "\n") {
		text, _ := mdOutsideCode(line)
		markup += unescaped(text, "*_`[]~<>")
		switch {
		case line == "":
			shape = append(shape, "blank")
		case strings.HasPrefix(line, "#"):
			shape = append(shape, "h"+strconv.Itoa(strings.IndexByte(line, ' ')))
		case strings.HasPrefix(line, "- "):
			shape = append(shape, "li")
		case strings.HasPrefix(line, "|"):
			shape = append(shape, "row/"+strconv.Itoa(unescaped(line, "|")))
		default:
			shape = append(shape, "p")
		}
	}
	return shape, markup
}

// TestMarkdownEscapesHostileText: with every text of a report that has every
// section (phase names, error examples, the run's error, notes, check
// details, function names, target names and commands, max-load details)
// set to HTML, pipes, backticks, emphasis and line breaks, report.md has
// the block structure and the inline markup of the same report with plain
// text, no raw < outside a code span, and every table row keeps its
// column count.
func TestMarkdownEscapesHostileText(t *testing.T) {
	render := func(s string) string {
		r, _ := allSectionsFixture()
		setStrings(reflect.ValueOf(r), s)
		r.Error = s // the run's error (a command's stderr) is set even when the fixture has none
		r.Notes = append(r.Notes, s)
		return r.Markdown()
	}
	hostile, plain := render(hostileText), render("plain")
	if !strings.Contains(hostile, "alert(1)") {
		t.Fatalf("the hostile text does not reach report.md:\n%s", hostile)
	}
	for i, line := range strings.Split(hostile, "\n") {
		text, spans := mdOutsideCode(line)
		if strings.Contains(text, "<") {
			t.Errorf("line %d has a raw < outside a code span: %q", i+1, line)
		}
		for _, sp := range spans {
			if strings.Contains(sp, "<script") && strings.TrimSpace(strings.ReplaceAll(sp, `\|`, "|")) != strings.TrimSpace(spaceControls(hostileText)) {
				t.Errorf("line %d: code span %q is not the hostile text verbatim", i+1, sp)
			}
		}
	}
	hs, hm := mdShape(hostile)
	ps, pm := mdShape(plain)
	if !slices.Equal(hs, ps) {
		t.Errorf("the hostile text changed report.md's structure:\nhostile %v\nplain   %v\n%s", hs, ps, hostile)
	}
	if hm != pm {
		t.Errorf("the hostile text added inline markup: %d unescaped *_`[]~<> outside code spans, %d with plain text\n%s", hm, pm, hostile)
	}
	// Each table keeps its header's column count.
	lines := strings.Split(hostile, "\n")
	for i := 1; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|---") {
			continue
		}
		cols := unescaped(lines[i-1], "|")
		for j := i + 1; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
			if got := unescaped(lines[j], "|"); got != cols {
				t.Errorf("table row %d has %d separators, its header %d: %q", j+1, got, cols, lines[j])
			}
		}
	}
}
