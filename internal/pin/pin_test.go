package pin

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	f := func(in string, want []int) {
		t.Helper()
		got, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): got error %v, want %v", in, err, want)
		}
		if !slices.Equal(got, want) {
			t.Errorf("Parse(%q): got %v, want %v", in, got, want)
		}
	}
	f("0", []int{0})
	f("0,1", []int{0, 1})
	f("0-3", []int{0, 1, 2, 3})
	f("3,1,2,1", []int{1, 2, 3})
	f(" 0 , 2-3 ", []int{0, 2, 3})
	f("1-1", []int{1})
	f("0-2,1-3", []int{0, 1, 2, 3})
	f("0-1\n", []int{0, 1}) // as /sys/devices/system/cpu/online reads
	f("1023", []int{MaxCPU})
	f("007", []int{7})
}

func TestParseErrors(t *testing.T) {
	f := func(in, wantErr string) {
		t.Helper()
		got, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("Parse(%q): got %v, %v, want an error containing %q", in, got, err, wantErr)
		}
	}
	f("", "it is empty")
	f("  ", "it is empty")
	f("0,,1", "an item is empty")
	f("0,", "an item is empty")
	f("a", `invalid cpu "a"`)
	f("0,x1", `invalid cpu "x1"`)
	f("0x1", `invalid cpu "0x1"`)
	f("+1", `invalid cpu "+1"`)
	f("-1", `invalid cpu "-1"`)
	f("1-", `invalid cpu range "1-"`)
	f("0-3-5", `invalid cpu range "0-3-5"`)
	f("3-1", `invalid cpu range "3-1" in "3-1": 3 is above 1`)
	f("1024", `invalid cpu "1024" in "1024": cpu numbers go up to 1023`)
	f("0-1024", `invalid cpu range "0-1024"`)
	f("99999999999999999999999", "cpu numbers go up to 1023")
	f("1.5", `invalid cpu "1.5"`)
}

func TestFormat(t *testing.T) {
	f := func(in []int, want string) {
		t.Helper()
		if got := Format(in); got != want {
			t.Errorf("Format(%v): got %q, want %q", in, got, want)
		}
		if want == "" {
			return
		}
		back, err := Parse(want)
		if err != nil {
			t.Fatalf("Parse(Format(%v)) = Parse(%q): %v", in, want, err)
		}
		sorted := slices.Compact(slices.Sorted(slices.Values(in)))
		if !slices.Equal(back, sorted) {
			t.Errorf("Parse(Format(%v)): got %v, want %v", in, back, sorted)
		}
	}
	f(nil, "")
	f([]int{0}, "0")
	f([]int{0, 1}, "0-1")
	f([]int{0, 1, 2, 3, 5, 7, 8}, "0-3,5,7-8")
	f([]int{8, 7, 0, 2, 2}, "0,2,7-8")
}

func TestProcessRejectsBadListsWithoutPinning(t *testing.T) {
	f := func(name string, cpus []int, wantErr string) {
		t.Helper()
		err := Process(cpus)
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("%s: Process(%v): got %v, want an error containing %q", name, cpus, err, wantErr)
		}
	}
	f("none", nil, "no cpus given")
	f("negative", []int{0, -1}, "cpu -1 out of range [0, 1023]")
	f("past the cpu set", []int{MaxCPU + 1}, "cpu 1024 out of range")
}
