package cron

import (
	"errors"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// MaxLen is the longest expression Parse reads, in bytes.
const MaxLen = 256

// MaxYears bounds how far ahead Next looks.
const MaxYears = 8

// ErrInvalid is matched (errors.Is) by every error of Parse.
var ErrInvalid = errors.New("cron: invalid expression")

// Error is an expression Parse refuses: Field names the field at fault
// ("" for the expression as a whole) and Msg what is wrong with it.
type Error struct {
	Field string
	Msg   string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "cron: " + e.Msg
	}
	return "cron: " + e.Field + ": " + e.Msg
}

// Is matches ErrInvalid.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Schedule is a parsed expression. Its zero value fires never; it is
// safe for concurrent use.
type Schedule struct {
	expr    string
	minute  uint64 // bit i: minute i
	hour    uint64 // bit i: hour i
	dom     uint64 // bit i: day i of the month (1-31)
	month   uint64 // bit i: month i (1-12)
	dow     uint64 // bit i: weekday i (0 Sunday - 6)
	domStar bool   // the day-of-month field starts with "*"
	dowStar bool   // the day-of-week field starts with "*"
}

// String is the expression as it was given (trimmed).
func (s *Schedule) String() string { return s.expr }

// field describes one of the five fields.
type field struct {
	name   string
	lo, hi int
	names  []string // names[i] stands for lo+i
}

var (
	fMinute = field{name: "minute", lo: 0, hi: 59}
	fHour   = field{name: "hour", lo: 0, hi: 23}
	fDom    = field{name: "day of month", lo: 1, hi: 31}
	fMonth  = field{name: "month", lo: 1, hi: 12,
		names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}}
	// Day of week takes 7 for Sunday too; it is folded onto 0.
	fDow = field{name: "day of week", lo: 0, hi: 7,
		names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}}
)

var macros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// Parse reads an expression (see the package doc). Its errors are
// *Error values naming the field at fault; they quote at most a short
// piece of the expression.
func Parse(expr string) (*Schedule, error) {
	if len(expr) > MaxLen {
		return nil, &Error{Msg: "longer than " + strconv.Itoa(MaxLen) + " bytes"}
	}
	expr = strings.TrimSpace(expr)
	if expr == "" {
		return nil, &Error{Msg: "empty expression"}
	}
	spec := expr
	if strings.HasPrefix(expr, "@") {
		m, ok := macros[strings.ToLower(expr)]
		if !ok {
			if strings.EqualFold(expr, "@reboot") {
				return nil, &Error{Msg: "@reboot is not supported: a schedule fires at times, not at starts"}
			}
			return nil, &Error{Msg: quote(expr) + " is not a macro (@yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)"}
		}
		spec = m
	}
	fields := strings.Fields(spec)
	switch n := len(fields); {
	case n == 6 || n == 7:
		return nil, &Error{Msg: "want 5 fields (minute hour day-of-month month day-of-week), got " + strconv.Itoa(n) +
			": fields for seconds or years are not supported"}
	case n != 5:
		return nil, &Error{Msg: "want 5 fields (minute hour day-of-month month day-of-week), got " + strconv.Itoa(n)}
	}
	s := &Schedule{expr: expr}
	var err error
	if s.minute, err = fMinute.parse(fields[0]); err != nil {
		return nil, err
	}
	if s.hour, err = fHour.parse(fields[1]); err != nil {
		return nil, err
	}
	if s.dom, err = fDom.parse(fields[2]); err != nil {
		return nil, err
	}
	if s.month, err = fMonth.parse(fields[3]); err != nil {
		return nil, err
	}
	if s.dow, err = fDow.parse(fields[4]); err != nil {
		return nil, err
	}
	if s.dow&(1<<7) != 0 {
		s.dow = s.dow&^(1<<7) | 1
	}
	s.domStar, s.dowStar = fields[2][0] == '*', fields[4][0] == '*'
	if (s.domStar || s.dowStar) && !s.domFitsMonth() {
		return nil, &Error{Field: fDom.name, Msg: "no day of the month given exists in the months given (such as 30 FEB)"}
	}
	return s, nil
}

// domFitsMonth reports whether some day of the month the schedule names
// exists in some month it names (29 February counts).
func (s *Schedule) domFitsMonth() bool {
	for m := 1; m <= 12; m++ {
		if s.month&(1<<m) != 0 && s.dom&(1<<(daysIn(2000, time.Month(m))+1)-1) != 0 {
			return true
		}
	}
	return false
}

// parse reads one field into a bit set.
func (f *field) parse(src string) (uint64, error) {
	var set uint64
	for item := range strings.SplitSeq(src, ",") {
		if item == "" {
			return 0, f.err("an empty item in a list")
		}
		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, ok := number(stepText)
			if !ok || n < 1 || n > f.hi-f.lo+1 {
				return 0, f.err("step " + quote(stepText) + " is not a number from 1 to " + strconv.Itoa(f.hi-f.lo+1))
			}
			step = n
		}
		var a, b int
		switch {
		case rng == "*":
			a, b = f.lo, f.hi
		default:
			first, last, isRange := strings.Cut(rng, "-")
			var err error
			if a, err = f.value(first); err != nil {
				return 0, err
			}
			switch {
			case isRange:
				if b, err = f.value(last); err != nil {
					return 0, err
				}
				if a > b {
					return 0, f.err("range " + quote(rng) + " runs backwards")
				}
			case hasStep:
				b = f.hi // "a/n" is "a-max/n"
			default:
				b = a
			}
		}
		for v := a; v <= b; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

// value reads a number or a name of the field.
func (f *field) value(s string) (int, error) {
	if n, ok := number(s); ok {
		if n < f.lo || n > f.hi {
			return 0, f.err(quote(s) + " is out of range " + strconv.Itoa(f.lo) + "-" + strconv.Itoa(f.hi))
		}
		return n, nil
	}
	for i, name := range f.names {
		if strings.EqualFold(s, name) {
			return f.lo + i, nil
		}
	}
	if f.names != nil {
		return 0, f.err(quote(s) + " is neither a number from " + strconv.Itoa(f.lo) + " to " + strconv.Itoa(f.hi) +
			" nor a name (" + f.names[0] + "-" + f.names[len(f.names)-1] + ")")
	}
	return 0, f.err(quote(s) + " is not a number from " + strconv.Itoa(f.lo) + " to " + strconv.Itoa(f.hi))
}

func (f *field) err(msg string) error { return &Error{Field: f.name, Msg: msg} }

// number reads a decimal of at most four digits, so no input overflows.
func number(s string) (int, bool) {
	if s == "" || len(s) > 4 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// quote shows a piece of an expression in a message, bounded.
func quote(s string) string {
	const most = 24
	if len(s) > most {
		s = s[:most] + "…"
	}
	return strconv.Quote(s)
}

// Next returns the first time after after at which the schedule fires in
// loc (nil means UTC), in loc; false when there is none within MaxYears.
func (s *Schedule) Next(after time.Time, loc *time.Location) (time.Time, bool) {
	if loc == nil {
		loc = time.UTC
	}
	if s.minute == 0 || s.hour == 0 || s.month == 0 {
		return time.Time{}, false
	}
	a := after.In(loc)
	y, mo, d := a.Date()
	h0, m0 := a.Hour(), a.Minute()
	wd := int(a.Weekday())
	for i := 0; i < MaxYears*366; i++ {
		if s.dayMatches(mo, d, wd) {
			for h := s.nextHour(h0); h < 24; h = s.nextHour(h + 1) {
				from := 0
				if h == h0 {
					from = m0
				}
				for m := s.nextMinute(from); m < 60; m = s.nextMinute(m + 1) {
					// Candidates come in wall-clock order and resolve to
					// instants that never go back, so the first one
					// after after is the answer. Past the first day that
					// is the first candidate; on the first day at most a
					// repeated hour's worth are passed over.
					if t := resolve(y, mo, d, h, m, loc); t.After(after) {
						return t, true
					}
				}
			}
		}
		h0, m0 = 0, 0
		wd = (wd + 1) % 7
		if d++; d > daysIn(y, mo) {
			d = 1
			if mo++; mo > time.December {
				mo, y = time.January, y+1
			}
		}
	}
	return time.Time{}, false
}

// dayMatches applies the Vixie rule to a date.
func (s *Schedule) dayMatches(mo time.Month, d, wd int) bool {
	if s.month&(1<<mo) == 0 {
		return false
	}
	domOK, dowOK := s.dom&(1<<d) != 0, s.dow&(1<<wd) != 0
	if s.domStar || s.dowStar {
		return domOK && dowOK
	}
	return domOK || dowOK
}

// nextHour is the first hour of the schedule at or after h, 24 if none.
func (s *Schedule) nextHour(h int) int { return nextBit(s.hour, h, 24) }

// nextMinute is the first minute of the schedule at or after m, 60 if
// none.
func (s *Schedule) nextMinute(m int) int { return nextBit(s.minute, m, 60) }

func nextBit(set uint64, from, end int) int {
	if from >= end {
		return end
	}
	rest := set >> from
	if rest == 0 {
		return end
	}
	return min(from+bits.TrailingZeros64(rest), end)
}

// resolve is the instant a wall-clock time of loc fires at: itself; the
// end of the gap when a daylight-saving change skips it; its first
// occurrence when it occurs twice.
func resolve(y int, mo time.Month, d, h, m int, loc *time.Location) time.Time {
	want := time.Date(y, mo, d, h, m, 0, 0, time.UTC)
	t := time.Date(y, mo, d, h, m, 0, 0, loc)
	if got := wall(t); !got.Equal(want) {
		// In a gap time.Date uses the offset of one side of it; either
		// way the zone t landed in has the gap at its boundary.
		start, end := t.ZoneBounds()
		if got.After(want) && !start.IsZero() {
			return start
		}
		if got.Before(want) && !end.IsZero() {
			return end
		}
		return t
	}
	// A wall time that occurs twice: time.Date may pick either. The other
	// occurrence, if any, has the offset of a neighbouring zone.
	best := t
	start, end := t.ZoneBounds()
	for _, edge := range []time.Time{start.Add(-time.Nanosecond), end} {
		if edge.IsZero() || edge.Year() < 1 {
			continue
		}
		_, off := edge.Zone()
		if c := want.Add(-time.Duration(off) * time.Second).In(loc); wall(c).Equal(want) && c.Before(best) {
			best = c
		}
	}
	return best
}

// wall is t's wall-clock reading, to the minute, as a UTC time.
func wall(t time.Time) time.Time {
	y, mo, d := t.Date()
	return time.Date(y, mo, d, t.Hour(), t.Minute(), 0, 0, time.UTC)
}

// daysIn is the number of days of month mo of year y.
func daysIn(y int, mo time.Month) int {
	switch mo {
	case time.February:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case time.April, time.June, time.September, time.November:
		return 30
	}
	return 31
}
