// Package schedule computes the slots of a standard 5-field cron
// expression in a time zone: when `soakd serve` starts a scheduled run
// (docs/operations.md, "Scheduled runs"). It is pure: no clock, no state;
// the daemon passes the times in.
//
// An expression is five fields separated by blanks, minute (0-59), hour
// (0-23), day of the month (1-31), month (1-12 or JAN-DEC) and day of the
// week (0-7 or SUN-SAT, 0 and 7 both Sunday), or one of the shorthands
// @hourly, @daily, @midnight, @weekly, @monthly, @yearly and @annually.
// A field is a list of items separated by commas; an item is *, a value, a
// range low-high, or * or a range followed by /step (every step-th value
// from its start). Names are three letters in any case.
//
// The day is matched as Vixie cron and cronie match it: when the
// day-of-month and the day-of-week fields are both restricted (neither
// starts with *), a day matching either one fires; when one of them starts
// with * (*/2 included), a day must match both.
//
// Slots are wall-clock minutes in the schedule's zone. Across a daylight
// saving change a wall time that does not exist that day (02:30 when the
// clocks go from 02:00 to 03:00) is skipped, and one that happens twice
// (02:30 when they go from 03:00 back to 02:00) fires once, at its first
// occurrence: a nightly run neither vanishes nor runs twice because of the
// clock, except on the day its own wall time does not exist.
package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// searchDays bounds how far ahead Next looks, in days: 30 years. Every
// expression Parse accepts fires within that span (its rarest day, a given
// weekday falling on February 1st, as "0 0 */30 2 MON" asks, comes round
// within the 28-year cycle of the calendar, and February 29th within 8
// years), so a search that finds nothing is a zone whose clocks skip the
// schedule's wall times every day. The longest search takes about 0.2 ms.
const searchDays = 30 * 366

// Schedule is a parsed cron expression and the zone its fields are read
// in. Its zero value is not usable: make one with Parse.
type Schedule struct {
	expr string
	loc  *time.Location
	// The allowed values of each field as bit sets: bit v is set when
	// value v is allowed (day-of-week's 7 folded into 0).
	minute, hour, dom, month, dow uint64
	// domStar and dowStar are true when the day-of-month or day-of-week
	// field starts with *: the day then has to match both fields (see the
	// package comment).
	domStar, dowStar bool
}

// Error is an expression Parse refuses: the field, the text it holds, and
// what is wrong with it.
type Error struct {
	// Field is minute, hour, day-of-month, month or day-of-week; empty
	// when the problem is the expression as a whole (its shape).
	Field string
	// Value is the field's text, or the whole expression's.
	Value string
	// Msg says what is wrong and what is allowed.
	Msg string
}

// Error names the field, its text and the problem.
func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%q: %s", e.Value, e.Msg)
	}
	return fmt.Sprintf("%s field %q: %s", e.Field, e.Value, e.Msg)
}

// fieldSpec is one field's name, its range of values and, for month and
// day-of-week, the names of its values from min on.
type fieldSpec struct {
	name     string
	min, max int
	names    []string
}

// allowed describes the field's values for messages: "0-59",
// "1-12 or JAN-DEC".
func (f fieldSpec) allowed() string {
	s := fmt.Sprintf("%d-%d", f.min, f.max)
	if len(f.names) > 0 {
		s += fmt.Sprintf(" or %s-%s", f.names[0], f.names[len(f.names)-1])
	}
	return s
}

// specs are the five fields in expression order.
func specs() [5]fieldSpec {
	return [5]fieldSpec{
		{name: "minute", min: 0, max: 59},
		{name: "hour", min: 0, max: 23},
		{name: "day-of-month", min: 1, max: 31},
		{name: "month", min: 1, max: 12, names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
		// SUN is 0; 7 is Sunday too, and has no name of its own.
		{name: "day-of-week", min: 0, max: 7, names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
	}
}

// shorthand returns the five fields an @ shorthand stands for.
func shorthand(s string) (string, bool) {
	switch strings.ToLower(s) {
	case "@hourly":
		return "0 * * * *", true
	case "@daily", "@midnight":
		return "0 0 * * *", true
	case "@weekly":
		return "0 0 * * 0", true
	case "@monthly":
		return "0 0 1 * *", true
	case "@yearly", "@annually":
		return "0 0 1 1 *", true
	}
	return "", false
}

// Parse reads expr in zone loc (nil: UTC). The error is an *Error naming
// the field, its text and the values it allows.
func Parse(expr string, loc *time.Location) (*Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	text := strings.Join(strings.Fields(expr), " ")
	body := text
	if strings.HasPrefix(text, "@") {
		fields, ok := shorthand(text)
		if !ok {
			return nil, &Error{Value: expr, Msg: "unknown shorthand; use @hourly, @daily, @midnight, @weekly, @monthly, @yearly or @annually, or five fields"}
		}
		body = fields
	}
	parts := strings.Fields(body)
	if len(parts) != 5 {
		return nil, &Error{Value: expr, Msg: fmt.Sprintf("want 5 fields (minute hour day-of-month month day-of-week) or a shorthand such as @daily; got %d", len(parts))}
	}
	s := &Schedule{expr: text, loc: loc}
	sets := [5]*uint64{&s.minute, &s.hour, &s.dom, &s.month, &s.dow}
	for i, f := range specs() {
		set, err := parseField(parts[i], f)
		if err != nil {
			return nil, err
		}
		*sets[i] = set
	}
	if s.dow&(1<<7) != 0 {
		s.dow = s.dow&^(1<<7) | 1
	}
	s.domStar = strings.HasPrefix(parts[2], "*")
	s.dowStar = strings.HasPrefix(parts[4], "*")
	if err := s.checkDays(parts[2], parts[3]); err != nil {
		return nil, err
	}
	return s, nil
}

// checkDays refuses a day-of-month that falls in none of the months
// allowed (30 2 or 31 4,6) when the day-of-week does not widen it: such a
// schedule would never fire.
func (s *Schedule) checkDays(domText, monthText string) error {
	if !s.dowStar || s.domStar {
		return nil // every day, or any day of the week, can fire
	}
	for m := 1; m <= 12; m++ {
		if s.month&(1<<m) == 0 {
			continue
		}
		for d := 1; d <= daysIn(time.Month(m)); d++ {
			if s.dom&(1<<d) != 0 {
				return nil
			}
		}
	}
	return &Error{Field: "day-of-month", Value: domText,
		Msg: fmt.Sprintf("no month the month field %q allows has such a day, so the schedule would never fire", monthText)}
}

// daysIn is the most days month m has (February: 29, in leap years).
func daysIn(m time.Month) int {
	switch m {
	case time.February:
		return 29
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}

// parseField returns the set of values text allows in field f.
func parseField(text string, f fieldSpec) (uint64, error) {
	fail := func(format string, args ...any) error {
		return &Error{Field: f.name, Value: text, Msg: fmt.Sprintf(format, args...)}
	}
	var set uint64
	for item := range strings.SplitSeq(text, ",") {
		if item == "" {
			return 0, fail("an empty list item; separate values with single commas, like 1,15")
		}
		rng, stepText, hasStep := strings.Cut(item, "/")
		lo, hi := f.min, f.max
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			loText, hiText, _ := strings.Cut(rng, "-")
			var err error
			if lo, err = value(loText, f); err != nil {
				return 0, fail("%v", err)
			}
			if hi, err = value(hiText, f); err != nil {
				return 0, fail("%v", err)
			}
			if lo > hi {
				hint := ""
				if f.name == "day-of-week" {
					hint = " (Sunday is 0, and 7 too: write 5-7 for Friday to Sunday)"
				}
				return 0, fail("range %s runs backwards: write its low end first%s", rng, hint)
			}
		default:
			v, err := value(rng, f)
			if err != nil {
				return 0, fail("%v", err)
			}
			if hasStep {
				return 0, fail("a step needs * or a range before it: write %s-%d/%s or */%s", rng, f.max, stepText, stepText)
			}
			lo, hi = v, v
		}
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || !digits(stepText) || n < 1 || n > f.max-f.min {
				return 0, fail("step %q is out of range: a step of the %s field is 1-%d", stepText, f.name, f.max-f.min)
			}
			step = n
		}
		for v := lo; v <= hi; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

// value reads one value of field f: a number in its range or, for month
// and day-of-week, a three-letter name in any case.
func value(text string, f fieldSpec) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(text, n) {
			return f.min + i, nil
		}
	}
	if !digits(text) {
		if len(f.names) > 0 {
			return 0, fmt.Errorf("%q is neither a number nor a name: %s is %s", text, f.name, f.allowed())
		}
		return 0, fmt.Errorf("%q is not a number: %s is %s", text, f.name, f.allowed())
	}
	v, err := strconv.Atoi(text)
	if err != nil || v < f.min || v > f.max {
		return 0, fmt.Errorf("%s is out of range: %s is %s", text, f.name, f.allowed())
	}
	return v, nil
}

// digits reports whether s is one or more ASCII digits (strconv.Atoi also
// takes a sign).
func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// String is the expression as parsed, blanks collapsed to single spaces:
// Parse of it gives the same schedule.
func (s *Schedule) String() string { return s.expr }

// Location is the zone the fields are read in.
func (s *Schedule) Location() *time.Location { return s.loc }

// dayMatches reports whether the civil date y-m-d, a weekday wd, is a day
// of the schedule (the OR rule of the package comment).
func (s *Schedule) dayMatches(m time.Month, d int, wd time.Weekday) bool {
	if s.month&(1<<m) == 0 {
		return false
	}
	domOK, dowOK := s.dom&(1<<d) != 0, s.dow&(1<<wd) != 0
	if s.domStar || s.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// Next returns the first slot strictly after after, in the schedule's
// zone, to the minute (seconds zero). It returns the zero Time when none
// comes within searchDays (see there).
func (s *Schedule) Next(after time.Time) time.Time {
	a := after.In(s.loc)
	y, mo, d := a.Date()
	h0, m0 := a.Hour(), a.Minute()
	for day := range searchDays {
		// The civil date, counted in UTC where every day exists (a zone
		// may skip a whole day, as Pacific/Apia skipped 2011-12-30).
		civil := time.Date(y, mo, d+day, 0, 0, 0, 0, time.UTC)
		cy, cm, cd := civil.Date()
		if !s.dayMatches(cm, cd, civil.Weekday()) {
			h0, m0 = 0, 0
			continue
		}
		for h := h0; h < 24; h++ {
			if s.hour&(1<<h) == 0 {
				m0 = 0
				continue
			}
			for m := m0; m < 60; m++ {
				if s.minute&(1<<m) == 0 {
					continue
				}
				t := time.Date(cy, cm, cd, h, m, 0, 0, s.loc)
				if ty, tm, td := t.Date(); ty != cy || tm != cm || td != cd || t.Hour() != h || t.Minute() != m {
					continue // this wall time does not exist that day (clocks moved forward)
				}
				if t = first(t); t.After(after) {
					return t
				}
			}
			m0 = 0
		}
		h0, m0 = 0, 0
	}
	return time.Time{}
}

// first returns the earliest instant whose wall clock reads as t's does:
// t itself, or the hour before when the clocks went back over t (t in the
// second 02:30 of the night the clocks go from 03:00 back to 02:00). It
// makes a repeated wall time one slot, fired at its first occurrence.
func first(t time.Time) time.Time {
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return t
	}
	_, off := t.Zone()
	_, prevOff := start.Add(-time.Nanosecond).Zone()
	back := time.Duration(prevOff-off) * time.Second // how far the clocks went back at start
	if back <= 0 {
		return t
	}
	if e := t.Add(-back); e.Before(start) && sameWall(e, t) {
		return e
	}
	return t
}

// sameWall reports whether a and b read the same wall clock minute in
// their (shared) zone.
func sameWall(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd && a.Hour() == b.Hour() && a.Minute() == b.Minute()
}

// MaxMissed is how many missed slots the daemon lists per schedule: the
// newest ones. A schedule of every minute left for a week would otherwise
// log ten thousand lines; the rest are counted (Missed.Older).
const MaxMissed = 100

// Missed is the slots of a schedule that came and went unhandled.
type Missed struct {
	// Slots are the newest missed slots, oldest first, at most the limit
	// asked for.
	Slots []time.Time
	// Older counts the missed slots before Slots[0] left out of Slots.
	Older int
}

// Missed returns the slots strictly after last (the last slot handled)
// and strictly before now: those a daemon that was not running in between
// did not handle. A slot at now itself is not missed but due. Slots lists
// the newest limit of them (limit < 1: none, all counted in Older). A zero
// last (nothing handled yet) has no missed slots: there is no start to
// count them from.
func (s *Schedule) Missed(last, now time.Time, limit int) Missed {
	var m Missed
	if last.IsZero() {
		return m
	}
	for t := s.Next(last); !t.IsZero() && t.Before(now); t = s.Next(t) {
		switch {
		case limit < 1:
			m.Older++
		case len(m.Slots) < limit:
			m.Slots = append(m.Slots, t)
		default:
			copy(m.Slots, m.Slots[1:])
			m.Slots[limit-1] = t
			m.Older++
		}
	}
	return m
}
