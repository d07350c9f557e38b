package workloads

import (
	"fmt"
	"strconv"
	"time"
)

// Event names: writers put "<writer>#<seq>@<sent>" into the donut's name, with
// seq zero-padded to eventSeqDigits digits and sent as Unix nanoseconds
// zero-padded to eventTimeDigits digits, so that a subscriber can detect
// duplicates and measure latency without any state shared with the writer.
const (
	// eventSeqDigits is the width of the sequence number: 10 digits hold
	// MaxEventSeq, far more requests than one writer sends in a day.
	eventSeqDigits = 10
	// eventTimeDigits is the width of the send time in Unix nanoseconds: 19
	// digits hold every non-negative int64.
	eventTimeDigits = 19
	// eventSuffixLen is the length of "#<seq>@<sent>", the fixed-width tail
	// after the writer id.
	eventSuffixLen = 1 + eventSeqDigits + 1 + eventTimeDigits
)

// MaxEventSeq is the largest sequence number an event name can carry (ten
// decimal digits). Sequence number 0 is reserved for liveness probes, which
// subscribers never count.
const MaxEventSeq int64 = 9_999_999_999

// EventName encodes writer id, per-writer sequence number (1-based) and send
// time into a donut name. Fixed width so every body has the same size, e.g.
// "w12#0000000017@1764500000123456789": the sequence number is zero-padded to
// ten digits and the send time is written as Unix nanoseconds zero-padded to
// nineteen digits, so all of one writer's names have the same length and its
// request bodies the same size.
//
// seq must be in [0, MaxEventSeq] (0 marks a probe) and sent must not be before
// the Unix epoch; for other values the name is still built, but
// ParseEventName rejects it. The send time is a wall-clock reading, so the
// latency a subscriber derives from it assumes writer and subscriber read the
// same clock (soakd runs both in the driver process).
func EventName(writer string, seq int64, sent time.Time) string {
	return string(appendEventName(make([]byte, 0, len(writer)+eventSuffixLen+2), writer, seq, sent))
}

// appendEventName appends EventName(writer, seq, sent) to b.
func appendEventName(b []byte, writer string, seq int64, sent time.Time) []byte {
	b = append(b, writer...)
	b = append(b, '#')
	b = appendPadded(b, seq, eventSeqDigits)
	b = append(b, '@')
	return appendPadded(b, sent.UnixNano(), eventTimeDigits)
}

// appendPadded appends v in decimal, left-padded with zeros to width digits.
// A negative v or one wider than width is appended unpadded as it is, which
// ParseEventName rejects.
func appendPadded(b []byte, v int64, width int) []byte {
	if v >= 0 {
		for w := decimalWidth(v); w < width; w++ {
			b = append(b, '0')
		}
	}
	return strconv.AppendInt(b, v, 10)
}

// decimalWidth returns the number of decimal digits of v >= 0.
func decimalWidth(v int64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}

// ParseEventName decodes a name built by EventName: the writer id (everything
// before the fixed-width tail, non-empty), the sequence number and the send
// time (Unix nanoseconds, in the local time zone and without a monotonic
// clock reading). It returns an error for any name EventName could not have
// built from valid arguments: a wrong length or separator, a non-digit, or a
// send time that overflows int64 nanoseconds.
func ParseEventName(name string) (writer string, seq int64, sent time.Time, err error) {
	if len(name) <= eventSuffixLen {
		return "", 0, time.Time{}, fmt.Errorf("invalid event name %q: want \"<writer>#<%d-digit seq>@<%d-digit unix ns>\"",
			name, eventSeqDigits, eventTimeDigits)
	}
	writer, tail := name[:len(name)-eventSuffixLen], name[len(name)-eventSuffixLen:]
	if tail[0] != '#' || tail[1+eventSeqDigits] != '@' {
		return "", 0, time.Time{}, fmt.Errorf("invalid event name %q: want \"<writer>#<%d-digit seq>@<%d-digit unix ns>\"",
			name, eventSeqDigits, eventTimeDigits)
	}
	seq, err = parseDigits(tail[1 : 1+eventSeqDigits])
	if err != nil {
		return "", 0, time.Time{}, fmt.Errorf("invalid sequence number in event name %q: %w", name, err)
	}
	ns, err := parseDigits(tail[2+eventSeqDigits:])
	if err != nil {
		return "", 0, time.Time{}, fmt.Errorf("invalid send time in event name %q: %w", name, err)
	}
	return writer, seq, time.Unix(0, ns), nil
}

// parseDigits parses s, which must consist of ASCII digits only (no sign), as
// a non-negative int64.
func parseDigits(s string) (int64, error) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not all decimal digits", s)
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cannot parse %q: %w", s, err)
	}
	return v, nil
}
