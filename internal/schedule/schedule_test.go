package schedule

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// zone loads an IANA zone or fails the test.
func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestNext follows each expression from a start through the slots it
// should give, in order: steps, lists, ranges, names, shorthands, the
// day-of-month/day-of-week OR rule (and the AND rule when one starts with
// *), February 29th, and the daylight saving changes of Europe/Berlin and
// America/New_York, where a wall time that does not exist is skipped and
// one that repeats fires once, at its first occurrence.
func TestNext(t *testing.T) {
	utc := time.UTC
	ber, ny := zone(t, "Europe/Berlin"), zone(t, "America/New_York")
	at := func(loc *time.Location, y int, mo time.Month, d, h, m int) time.Time {
		return time.Date(y, mo, d, h, m, 0, 0, loc)
	}
	// z is an instant in UTC, for the times a zone's wall clock reads twice.
	z := func(y int, mo time.Month, d, h, m int) time.Time { return at(utc, y, mo, d, h, m) }
	for _, tc := range []struct {
		name  string
		expr  string
		loc   *time.Location
		after time.Time
		want  []time.Time
	}{
		{"every 15 minutes", "*/15 * * * *", utc, at(utc, 2026, 5, 4, 10, 7),
			[]time.Time{at(utc, 2026, 5, 4, 10, 15), at(utc, 2026, 5, 4, 10, 30), at(utc, 2026, 5, 4, 10, 45), at(utc, 2026, 5, 4, 11, 0)}},
		{"strictly after a slot", "*/15 * * * *", utc, at(utc, 2026, 5, 4, 10, 15), []time.Time{at(utc, 2026, 5, 4, 10, 30)}},
		{"seconds into a slot's minute", "*/15 * * * *", utc, at(utc, 2026, 5, 4, 10, 15).Add(30 * time.Second), []time.Time{at(utc, 2026, 5, 4, 10, 30)}},
		{"a range with a step", "1-30/5 * * * *", utc, at(utc, 2026, 5, 4, 10, 26),
			[]time.Time{at(utc, 2026, 5, 4, 11, 1), at(utc, 2026, 5, 4, 11, 6)}},
		{"lists and ranges", "0,30 9-10 * * *", utc, at(utc, 2026, 5, 4, 10, 30),
			[]time.Time{at(utc, 2026, 5, 5, 9, 0), at(utc, 2026, 5, 5, 9, 30), at(utc, 2026, 5, 5, 10, 0)}},
		{"nightly, rolling over the year", "0 2 * * *", utc, at(utc, 2026, 12, 31, 3, 0), []time.Time{at(utc, 2027, 1, 1, 2, 0)}},
		{"names, any case", "0 9 * jan-Mar MON-fri", utc, at(utc, 2026, 3, 27, 10, 0),
			[]time.Time{at(utc, 2026, 3, 30, 9, 0), at(utc, 2026, 3, 31, 9, 0), at(utc, 2027, 1, 1, 9, 0)}},
		{"day-of-week 7 is Sunday", "0 0 * * 7", utc, at(utc, 2026, 5, 4, 0, 0), []time.Time{at(utc, 2026, 5, 10, 0, 0), at(utc, 2026, 5, 17, 0, 0)}},
		{"Friday to Sunday as 5-7", "0 0 * * 5-7", utc, at(utc, 2026, 5, 4, 0, 0),
			[]time.Time{at(utc, 2026, 5, 8, 0, 0), at(utc, 2026, 5, 9, 0, 0), at(utc, 2026, 5, 10, 0, 0), at(utc, 2026, 5, 15, 0, 0)}},
		{"@hourly", "@hourly", utc, at(utc, 2026, 5, 4, 10, 7), []time.Time{at(utc, 2026, 5, 4, 11, 0)}},
		{"@daily", "@daily", utc, at(utc, 2026, 5, 4, 10, 7), []time.Time{at(utc, 2026, 5, 5, 0, 0)}},
		{"@midnight", "@midnight", utc, at(utc, 2026, 5, 4, 10, 7), []time.Time{at(utc, 2026, 5, 5, 0, 0)}},
		{"@weekly: Sunday midnight", "@weekly", utc, at(utc, 2026, 5, 4, 10, 7), []time.Time{at(utc, 2026, 5, 10, 0, 0)}},
		{"@monthly", "@monthly", utc, at(utc, 2026, 5, 4, 10, 7), []time.Time{at(utc, 2026, 6, 1, 0, 0)}},
		{"@yearly", "@yearly", utc, at(utc, 2026, 5, 4, 10, 7), []time.Time{at(utc, 2027, 1, 1, 0, 0)}},
		{"day 31 skips the short months", "0 0 31 * *", utc, at(utc, 2026, 4, 1, 0, 0), []time.Time{at(utc, 2026, 5, 31, 0, 0), at(utc, 2026, 7, 31, 0, 0)}},
		{"February 29th: the next leap year", "0 0 29 2 *", utc, at(utc, 2025, 1, 1, 0, 0), []time.Time{at(utc, 2028, 2, 29, 0, 0), at(utc, 2032, 2, 29, 0, 0)}},
		{"February 29th: 2100 is no leap year", "0 0 29 2 *", utc, at(utc, 2096, 3, 1, 0, 0), []time.Time{at(utc, 2104, 2, 29, 0, 0)}},
		// 2026-02-01 is a Sunday: the 10th or any Monday.
		{"day-of-month OR day-of-week", "0 0 10 * 1", utc, at(utc, 2026, 2, 1, 0, 0),
			[]time.Time{at(utc, 2026, 2, 2, 0, 0), at(utc, 2026, 2, 9, 0, 0), at(utc, 2026, 2, 10, 0, 0), at(utc, 2026, 2, 16, 0, 0)}},
		// */10 starts with *: the 1st, 11th, 21st or 31st AND a Monday.
		{"a day-of-month starting with * is ANDed", "0 0 */10 * 1", utc, at(utc, 2026, 1, 1, 0, 0),
			[]time.Time{at(utc, 2026, 5, 11, 0, 0), at(utc, 2026, 6, 1, 0, 0), at(utc, 2026, 8, 31, 0, 0)}},
		{"a day-of-week starting with * is ANDed", "0 0 13 * */7", utc, at(utc, 2026, 1, 1, 0, 0), []time.Time{at(utc, 2026, 9, 13, 0, 0)}},
		{"in its zone", "0 2 * * *", ber, at(utc, 2026, 5, 4, 0, 30), []time.Time{at(utc, 2026, 5, 5, 0, 0)}},
		// Berlin: 2026-03-29 02:00 CET becomes 03:00 CEST.
		{"Berlin spring: 02:30 does not exist and is skipped", "30 2 * * *", ber, at(ber, 2026, 3, 28, 3, 0),
			[]time.Time{at(ber, 2026, 3, 30, 2, 30), at(ber, 2026, 3, 31, 2, 30)}},
		{"Berlin spring: every 30 minutes over the gap", "*/30 * * * *", ber, at(ber, 2026, 3, 29, 1, 0),
			[]time.Time{at(ber, 2026, 3, 29, 1, 30), at(ber, 2026, 3, 29, 3, 0), at(ber, 2026, 3, 29, 3, 30)}},
		// Berlin: 2026-10-25 03:00 CEST becomes 02:00 CET; 02:00-02:59 repeat.
		{"Berlin autumn: 02:30 repeats and fires once, first", "30 2 * * *", ber, at(ber, 2026, 10, 24, 12, 0),
			[]time.Time{z(2026, 10, 25, 0, 30), z(2026, 10, 26, 1, 30)}},
		{"Berlin autumn: every 30 minutes over the repeated hour", "*/30 * * * *", ber, at(ber, 2026, 10, 25, 1, 45),
			[]time.Time{z(2026, 10, 25, 0, 0), z(2026, 10, 25, 0, 30), z(2026, 10, 25, 2, 0), z(2026, 10, 25, 2, 30)}},
		{"Berlin autumn: from inside the repeat", "*/30 * * * *", ber, z(2026, 10, 25, 1, 10), []time.Time{z(2026, 10, 25, 2, 0)}},
		// New York: 2026-03-08 02:00 EST becomes 03:00 EDT.
		{"New York spring: 02:30 skipped", "30 2 * * *", ny, at(ny, 2026, 3, 7, 12, 0), []time.Time{at(ny, 2026, 3, 9, 2, 30)}},
		// New York: 2026-11-01 02:00 EDT becomes 01:00 EST; 01:00-01:59 repeat.
		{"New York autumn: 01:30 once", "30 1 * * *", ny, at(ny, 2026, 10, 31, 12, 0), []time.Time{z(2026, 11, 1, 5, 30), z(2026, 11, 2, 6, 30)}},
		{"New York autumn: hourly", "0 * * * *", ny, at(ny, 2026, 11, 1, 0, 30), []time.Time{z(2026, 11, 1, 5, 0), z(2026, 11, 1, 7, 0), z(2026, 11, 1, 8, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.expr, tc.loc)
			if err != nil {
				t.Fatal(err)
			}
			after := tc.after
			for i, want := range tc.want {
				got := s.Next(after)
				if !got.Equal(want) {
					t.Fatalf("%q in %s: slot %d after %s is %s, want %s", tc.expr, tc.loc, i+1, after.In(tc.loc), got, want.In(tc.loc))
				}
				if got.Location() != tc.loc {
					t.Errorf("slot %s is in %s, want the schedule's zone %s", got, got.Location(), tc.loc)
				}
				after = got
			}
		})
	}
}

// TestParseErrors: every refusal names the field, the text it holds and
// what the field allows.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		expr, field, value, msg string
	}{
		{"", "", "", "want 5 fields"},
		{"* * * *", "", "* * * *", "want 5 fields (minute hour day-of-month month day-of-week) or a shorthand such as @daily; got 4"},
		{"* * * * * *", "", "* * * * * *", "got 6"},
		{"@reboot", "", "@reboot", "unknown shorthand; use @hourly"},
		{"@every 5m", "", "@every 5m", "unknown shorthand"},
		{"60 * * * *", "minute", "60", "60 is out of range: minute is 0-59"},
		{"* 24 * * *", "hour", "24", "24 is out of range: hour is 0-23"},
		{"* * 0 * *", "day-of-month", "0", "0 is out of range: day-of-month is 1-31"},
		{"* * 32 * *", "day-of-month", "32", "day-of-month is 1-31"},
		{"* * * 13 *", "month", "13", "13 is out of range: month is 1-12 or JAN-DEC"},
		{"* * * * 8", "day-of-week", "8", "day-of-week is 0-7 or SUN-SAT"},
		{"* * * FOO *", "month", "FOO", `"FOO" is neither a number nor a name: month is 1-12 or JAN-DEC`},
		{"x * * * *", "minute", "x", `"x" is not a number: minute is 0-59`},
		{"-1 * * * *", "minute", "-1", "is not a number"},
		{"+5 * * * *", "minute", "+5", "is not a number"},
		{"99999999999999999999 * * * *", "minute", "99999999999999999999", "out of range"},
		{"1,,2 * * * *", "minute", "1,,2", "an empty list item"},
		{"1, * * * *", "minute", "1,", "an empty list item"},
		{"*/0 * * * *", "minute", "*/0", `step "0" is out of range: a step of the minute field is 1-59`},
		{"*/60 * * * *", "minute", "*/60", "a step of the minute field is 1-59"},
		{"* */x * * *", "hour", "*/x", "a step of the hour field is 1-23"},
		{"5/15 * * * *", "minute", "5/15", "a step needs * or a range before it: write 5-59/15 or */15"},
		{"30-5 * * * *", "minute", "30-5", "range 30-5 runs backwards"},
		{"* * * * SAT-SUN", "day-of-week", "SAT-SUN", "write 5-7 for Friday to Sunday"},
		{"* * * * 1-", "day-of-week", "1-", `"" is neither a number nor a name`},
		{"* * 30 2 *", "day-of-month", "30", `no month the month field "2" allows has such a day`},
		{"* * 31 4,6,9,11 *", "day-of-month", "31", "would never fire"},
	} {
		s, err := Parse(tc.expr, nil)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want an error", tc.expr, s)
			continue
		}
		e, ok := errors.AsType[*Error](err)
		if !ok {
			t.Errorf("Parse(%q): %T %v, want an *Error", tc.expr, err, err)
			continue
		}
		if e.Field != tc.field || e.Value != tc.value || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("Parse(%q): field %q value %q: %v\nwant field %q value %q saying %q", tc.expr, e.Field, e.Value, err, tc.field, tc.value, tc.msg)
		}
	}
	// A restricted day-of-week widens an impossible day-of-month (OR).
	if _, err := Parse("0 0 30 2 MON", nil); err != nil {
		t.Errorf("30 February or a Monday: %v, want accepted", err)
	}
}

// TestSameSchedule: spellings of one schedule parse to the same sets.
func TestSameSchedule(t *testing.T) {
	for _, pair := range [][2]string{
		{"0 0 * * 0", "0 0 * * 7"},
		{"0 0 * * 0", "@weekly"},
		{"0 0 * * *", "@midnight"},
		{"0 * * * *", "@HOURLY"},
		{"0 9 * JAN,feb * ", "  0\t9 * 1,2 *"},
		{"0 0 * * 1-5", "0 0 * * MON-FRI"},
		{"*/20 * * * *", "0,20,40 * * * *"},
	} {
		a, err := Parse(pair[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Parse(pair[1], nil)
		if err != nil {
			t.Fatal(err)
		}
		a.expr, b.expr = "", ""
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%q and %q differ: %+v, %+v", pair[0], pair[1], a, b)
		}
	}
}

// TestMissed: the slots strictly between the last one handled and now,
// the newest limit of them with the rest counted.
func TestMissed(t *testing.T) {
	every5, err := Parse("*/5 * * * *", nil)
	if err != nil {
		t.Fatal(err)
	}
	at := func(h, m int) time.Time { return time.Date(2026, 5, 4, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name      string
		last, now time.Time
		limit     int
		want      []time.Time
		older     int
	}{
		{"three slots gone", at(10, 0), at(10, 16), 100, []time.Time{at(10, 5), at(10, 10), at(10, 15)}, 0},
		{"a slot at now is due, not missed", at(10, 0), at(10, 15), 100, []time.Time{at(10, 5), at(10, 10)}, 0},
		{"none", at(10, 0), at(10, 4), 100, nil, 0},
		{"now before last (the clock went back)", at(10, 0), at(9, 0), 100, nil, 0},
		{"capped to the newest", at(10, 0), at(11, 1), 3, []time.Time{at(10, 50), at(10, 55), at(11, 0)}, 9},
		{"no limit: only counted", at(10, 0), at(11, 1), 0, nil, 12},
		{"nothing handled yet", time.Time{}, at(11, 1), 100, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := every5.Missed(tc.last, tc.now, tc.limit)
			if !slicesEqual(got.Slots, tc.want) || got.Older != tc.older {
				t.Errorf("Missed(%s, %s, %d) = %v and %d older, want %v and %d", tc.last, tc.now, tc.limit, got.Slots, got.Older, tc.want, tc.older)
			}
		})
	}
	// Over a week of every minute, with the default cap.
	every, err := Parse("* * * * *", nil)
	if err != nil {
		t.Fatal(err)
	}
	m := every.Missed(at(0, 0), at(0, 0).Add(7*24*time.Hour), MaxMissed)
	if len(m.Slots) != MaxMissed || m.Older != 7*24*60-1-MaxMissed || !m.Slots[MaxMissed-1].Equal(at(0, 0).Add(7*24*time.Hour-time.Minute)) {
		t.Errorf("a week of minutes: %d slots, %d older, last %v; want %d, %d, the minute before now", len(m.Slots), m.Older, m.Slots[len(m.Slots)-1], MaxMissed, 7*24*60-1-MaxMissed)
	}
	// Over the night Berlin's clocks go back, hourly: 02:00 once.
	ber := zone(t, "Europe/Berlin")
	hourly, err := Parse("@hourly", ber)
	if err != nil {
		t.Fatal(err)
	}
	m = hourly.Missed(time.Date(2026, 10, 25, 0, 0, 0, 0, ber), time.Date(2026, 10, 25, 5, 30, 0, 0, ber), MaxMissed)
	if len(m.Slots) != 5 || m.Older != 0 {
		t.Errorf("hourly over the repeated hour: %v, want 01:00 to 05:00 once each", m.Slots)
	}
}

func slicesEqual(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// matches reports whether t's wall clock in s's zone is one of s's
// minutes and days.
func (s *Schedule) matches(t time.Time) bool {
	t = t.In(s.loc)
	_, m, d := t.Date()
	return t.Second() == 0 && t.Nanosecond() == 0 && s.minute&(1<<t.Minute()) != 0 && s.hour&(1<<t.Hour()) != 0 && s.dayMatches(m, d, t.Weekday())
}

// FuzzParse: Parse never panics; what it refuses is an *Error with a
// message; what it accepts parses again from its String to the same
// schedule, whose slots are strictly increasing and match its fields.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"*/15 * * * *", "0 2 * * *", "1-30/5 0-23/2 1,15 JAN-DEC/3 MON-FRI", "0 0 29 2 *", "0 0 10 * 1",
		"@weekly", "@daily", "* * * * 7", "5/15 * * * *", "60 * * * *", "* * 31 4 *", "*/0 * * * *", "1,,2 * * * *", "", "@", "\t0 0\t* * *"} {
		f.Add(s, "Europe/Berlin")
		f.Add(s, "UTC")
	}
	f.Add("30 1 * * *", "America/New_York")
	f.Fuzz(func(t *testing.T, expr, tz string) {
		loc := time.UTC
		if l, err := time.LoadLocation(tz); err == nil && tz != "" && tz != "Local" {
			loc = l
		}
		s, err := Parse(expr, loc)
		if err != nil {
			if e, ok := errors.AsType[*Error](err); !ok || e.Msg == "" || err.Error() == "" {
				t.Fatalf("Parse(%q): %T %v, want an *Error with a message", expr, err, err)
			}
			return
		}
		again, err := Parse(s.String(), loc)
		if err != nil {
			t.Fatalf("Parse(%q) gave %q, which does not parse: %v", expr, s, err)
		}
		if !reflect.DeepEqual(s, again) {
			t.Fatalf("Parse(%q) = %+v, Parse of its String %q = %+v", expr, s, s.String(), again)
		}
		after := time.Date(2026, 10, 24, 23, 17, 30, 0, time.UTC)
		for range 5 {
			next := s.Next(after)
			if next.IsZero() {
				return
			}
			if !next.After(after) || !s.matches(next) {
				t.Fatalf("%q in %s: Next(%s) = %s: not after it, or not a slot of the schedule", expr, loc, after, next)
			}
			after = next
		}
	})
}
