package echo

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestInputIsBounded(t *testing.T) {
	long := strings.Repeat("é", 2500) // 5,000 bytes
	got := Input(long)
	if len(got) > MaxBytes+32 || !strings.Contains(got, "(5000 bytes)") || !utf8.ValidString(got) {
		t.Errorf("Input of a 5,000-byte string: %d bytes %q", len(got), got)
	}
	if Input("20261202T101010Z") != "20261202T101010Z" {
		t.Error("a short input must be quoted as it is")
	}
	if exact := strings.Repeat("a", MaxBytes); Input(exact) != exact {
		t.Errorf("an input of exactly %d bytes must be quoted whole", MaxBytes)
	}
}
