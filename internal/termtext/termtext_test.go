package termtext

import (
	"strings"
	"testing"
	"time"
)

func TestWidthCountsRunesNotBytesNorEscapes(t *testing.T) {
	for s, want := range map[string]int{
		"":                         0,
		"abc":                      3,
		"3.1 µs":                   6,
		"━━━━──":                   6,
		"✓ ✗ ? …":                  7,
		Paint("PASS", Green, true): 4,
		"\x1b[2K\x1b[1Aab":         2,
		Paint("FAIL", Red, false):  4,
	} {
		if got := Width(s); got != want {
			t.Errorf("Width(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestTruncateAndWrapNeverExceedTheWidth(t *testing.T) {
	if got := Truncate("graphql-subscriptions-load", 10); got != "graphql-s…" {
		t.Errorf("Truncate: %q", got)
	}
	for in, want := range map[string]string{
		"rest-control#12": "rest-c…#12", "graphql-load#3": "graphql…#3", "load#123456": "load#1234…", "x#1": "x#1", "a-b-c-d-e-f#": "a-b-c-d-e…",
	} {
		if got := Truncate(in, 10); got != want || Width(got) > 10 {
			t.Errorf("Truncate(%q, 10) = %q, want %q (a round suffix kept)", in, got, want)
		}
	}
	if got := Truncate("short", 10); got != "short" {
		t.Errorf("Truncate: %q", got)
	}
	text := "FAIL: KPI CPU (share of machine), GraphQL − REST +13.00 points, interval [+9.1, +15.0] points, limit ≤ +5 points averyveryveryveryverylongwordthatcannotfitanywhere"
	for _, w := range []int{20, 40, 80} {
		lines := Wrap(text, w, "    ")
		for _, l := range lines {
			if Width(l) > w {
				t.Errorf("width %d: %q is %d wide", w, l, Width(l))
			}
		}
		if !strings.HasPrefix(lines[0], "FAIL:") || len(lines) < 2 || !strings.HasPrefix(lines[1], "    ") {
			t.Errorf("width %d: %q", w, lines)
		}
	}
}

func TestUseColourHonoursNoColor(t *testing.T) {
	for _, tc := range []struct {
		tty     bool
		noColor string
		want    bool
	}{{true, "", true}, {true, "1", false}, {true, "0", false}, {false, "", false}} {
		if got := UseColour(tc.tty, tc.noColor); got != tc.want {
			t.Errorf("UseColour(%v, %q) = %v", tc.tty, tc.noColor, got)
		}
	}
	if got := Paint("FAIL", Red, true); got != "\x1b[1;31mFAIL\x1b[0m" {
		t.Errorf("Paint: %q", got)
	}
}

func TestHumanisedNumbers(t *testing.T) {
	for got, want := range map[string]string{
		Count(0): "0", Count(12345): "12,345", Count(-1234567): "-1,234,567",
		Rate(1649.6): "1,650", Rate(2.46): "2.5",
		Millis(0.8123): "812 µs", Millis(3.1): "3.10 ms", Millis(31.24): "31.2 ms", Millis(312.4): "312 ms", Millis(1234): "1.23 s",
		Bytes(512): "512 B", Bytes(1048576): "1.0 MiB", Bytes(12000): "11.7 KiB", Bytes(2.5 * (1 << 30)): "2.5 GiB",
		Duration(45 * time.Second): "45s", Duration(185 * time.Second): "3m05s", Duration(3720 * time.Second): "1h02m",
	} {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestTableShrinksTheNameColumnToFit(t *testing.T) {
	rows := [][]string{{"Phase", "requests"}, {"a-very-long-phase-name-indeed", "12,345"}, {"short", "7"}}
	got := Table(rows, Layout{Right: []bool{false, true}, Gap: 2}, 24)
	want := []string{
		"Phase           requests",
		"a-very-long-p…    12,345",
		"short                  7",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("24 columns:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := Table(rows, Layout{Right: []bool{false, true}, Gap: 2}, 80); got[1] != "a-very-long-phase-name-indeed    12,345" {
		t.Errorf("wide enough: %q", got[1])
	}
}

func TestWrapKeepsTheFirstLinesLeadingSpaces(t *testing.T) {
	got := Wrap("  - one two three", 10, "    ")
	if strings.Join(got, "|") != "  - one|    two|    three" {
		t.Errorf("%q", got)
	}
}

// Too wide even with the names at 12 columns: the droppable columns go,
// in order, before the names shrink further.
func TestTableDropsColumnsBeforeShrinkingNamesFurther(t *testing.T) {
	rows := [][]string{{"Phase", "a", "b", "c"}, {"max-load-graphql", "1,000", "2,000", "3,000"}}
	got := strings.Join(Table(rows, Layout{Right: []bool{false, true, true, true}, Drop: []int{2, 1}, Gap: 1}, 24), "\n")
	want := "Phase            a     c\nmax-load-gr… 1,000 3,000"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
