package workloads

import (
	"testing"
	"time"
)

func TestEventName(t *testing.T) {
	f := func(writer string, seq int64, sent time.Time, want string) {
		t.Helper()
		if got := EventName(writer, seq, sent); got != want {
			t.Errorf("EventName(%q, %d, %v) = %q, want %q", writer, seq, sent, got, want)
		}
	}
	f("w12", 17, time.Unix(0, 1764500000123456789), "w12#0000000017@1764500000123456789")
	f("w0", 0, time.Unix(0, 0), "w0#0000000000@0000000000000000000")
	f("w99", MaxEventSeq, time.Unix(0, 1), "w99#9999999999@0000000000000000001")
	f("a#b@c", 1, time.Unix(1, 0), "a#b@c#0000000001@0000000001000000000")

	// Every name of one writer has the same length, so its bodies have the same size.
	a := EventName("w7", 1, time.Unix(0, 5))
	b := EventName("w7", 123456789, time.Now())
	if len(a) != len(b) {
		t.Errorf("len(%q) = %d, len(%q) = %d, want equal", a, len(a), b, len(b))
	}
}

func TestParseEventName(t *testing.T) {
	f := func(name, wantWriter string, wantSeq, wantNanos int64) {
		t.Helper()
		w, seq, sent, err := ParseEventName(name)
		if err != nil {
			t.Fatalf("ParseEventName(%q): got error %v, want none", name, err)
		}
		if w != wantWriter || seq != wantSeq || sent.UnixNano() != wantNanos {
			t.Errorf("ParseEventName(%q) = %q, %d, %d ns, want %q, %d, %d ns",
				name, w, seq, sent.UnixNano(), wantWriter, wantSeq, wantNanos)
		}
	}
	f("w12#0000000017@1764500000123456789", "w12", 17, 1764500000123456789)
	f("x#0000000000@0000000000000000000", "x", 0, 0)
	f("a#b@c#0000000001@0000000001000000000", "a#b@c", 1, 1_000_000_000)
	f("w1#9999999999@9223372036854775807", "w1", MaxEventSeq, 9223372036854775807)
}

func TestParseEventNameRejects(t *testing.T) {
	for _, name := range []string{
		"",
		"donut-w12",
		"#0000000017@1764500000123456789",          // empty writer
		"w12#000000017@1764500000123456789",        // seq one digit short
		"w12#00000000017@1764500000123456789",      // seq one digit long
		"w12#0000000017@176450000012345678",        // time one digit short
		"w12#0000000017-1764500000123456789",       // wrong separator
		"w12-0000000017@1764500000123456789",       // wrong separator
		"w12#00000000x7@1764500000123456789",       // not a digit
		"w12#+000000017@1764500000123456789",       // a sign is not a digit
		"w12#0000000017@-764500000123456789",       // negative time
		"w12#0000000017@9999999999999999999",       // time overflows int64
		"w12#0000000017@1764500000123456789 ",      // trailing space
		"w12#0000000017@17645000001234567８9",       // non-ASCII digit
		EventName("w1", -1, time.Unix(0, 5)),       // negative seq
		EventName("w1", MaxEventSeq+1, time.Now()), // seq too wide
		EventName("w1", 1, time.Unix(-1, 0)),       // before the epoch
	} {
		if w, seq, sent, err := ParseEventName(name); err == nil {
			t.Errorf("ParseEventName(%q) = %q, %d, %v, want an error", name, w, seq, sent)
		}
	}
}

// FuzzEventName checks the round trip for valid arguments and that
// ParseEventName never accepts a name it would not build again identically.
func FuzzEventName(f *testing.F) {
	f.Add("w12", int64(17), int64(1764500000123456789))
	f.Add("w0", int64(0), int64(0))
	f.Add("a#b@c", MaxEventSeq, int64(1<<62))
	f.Add("", int64(-1), int64(-5))
	f.Fuzz(func(t *testing.T, writer string, seq, nanos int64) {
		name := EventName(writer, seq, time.Unix(0, nanos))
		w, s, sent, err := ParseEventName(name)
		valid := writer != "" && seq >= 0 && seq <= MaxEventSeq && nanos >= 0
		if valid != (err == nil) {
			t.Fatalf("ParseEventName(EventName(%q, %d, %d)) = %q, %d, %v, error %v; want an error: %v",
				writer, seq, nanos, w, s, sent, err, !valid)
		}
		if valid && (w != writer || s != seq || sent.UnixNano() != nanos) {
			t.Fatalf("ParseEventName(%q) = %q, %d, %d ns, want %q, %d, %d ns", name, w, s, sent.UnixNano(), writer, seq, nanos)
		}
		// Any name that parses must be rebuilt identically: the format has one spelling.
		if w, s, sent, err := ParseEventName(writer); err == nil {
			if got := EventName(w, s, sent); got != writer {
				t.Fatalf("EventName(ParseEventName(%q)) = %q, want the input back", writer, got)
			}
		}
		if valid && len(name) != len(writer)+eventSuffixLen {
			t.Fatalf("len(%q) = %d, want %d", name, len(name), len(writer)+eventSuffixLen)
		}
	})
}
