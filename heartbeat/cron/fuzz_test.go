package cron

import (
	"errors"
	"testing"
	"time"
)

// FuzzParse: no expression panics or is refused with anything but an
// *Error; an accepted one fires, in UTC, exactly when a minute-by-minute
// scan says it should, and in a zone with daylight saving strictly later
// each time.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"* * * * *", "*/5 * * * *", "0 9 * * MON-FRI", "30 2 * * *", "0 0 29 2 *", "0 9 13 * FRI", "0 9 */2 * 1",
		"50/5 1-3,7 * jan,JUL sun-tue", "@hourly", "@weekly", "@reboot", "0 0 30 2 *", "1-2-3 * * * *", "*/0 * * * *",
		"* * * * 7", "0 0 31 4 *", "5-1 * * * *", "0,,1 * * * *",
	} {
		f.Add(s, int64(1767225600)) // 2026-01-01
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, expr string, unix int64) {
		s, err := Parse(expr)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) = %v, not a *cron.Error", expr, err)
			}
			return
		}
		// Keep the start within a few centuries of now.
		at := time.Unix(1767225600+unix%(200*365*86400), 0).UTC()
		next, ok := s.Next(at, time.UTC)
		want, found := scan(s, at, 3*24*60)
		switch {
		case found && (!ok || !next.Equal(want)):
			t.Fatalf("%q after %s: Next = %s %v, scan = %s", expr, at, next, ok, want)
		case !found && ok && !next.After(at.Add(3*24*time.Hour)):
			t.Fatalf("%q after %s: Next = %s, scan found nothing before it", expr, at, next)
		}
		prev := at
		for range 5 {
			n, ok := s.Next(prev, ny)
			if !ok {
				break
			}
			if !n.After(prev) {
				t.Fatalf("%q in New York: Next(%s) = %s, not after it", expr, prev, n)
			}
			prev = n
		}
	})
}

// scan is the first whole minute after at, within limit minutes, whose UTC
// wall time the schedule names.
func scan(s *Schedule, at time.Time, limit int) (time.Time, bool) {
	t := at.Truncate(time.Minute)
	for range limit {
		t = t.Add(time.Minute)
		if s.minute&(1<<t.Minute()) != 0 && s.hour&(1<<t.Hour()) != 0 && s.dayMatches(t.Month(), t.Day(), int(t.Weekday())) {
			return t, true
		}
	}
	return time.Time{}, false
}
