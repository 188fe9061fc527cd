package cron

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// layout shows a fire time with its zone, so a test names the offset the
// instant has as well as its wall time.
const layout = "2006-01-02 15:04 MST"

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

// fires returns the first n fire times of expr in loc after from.
func fires(t *testing.T, expr string, loc *time.Location, from time.Time, n int) []string {
	t.Helper()
	s, err := Parse(expr)
	if err != nil {
		t.Fatalf("Parse(%q): %v", expr, err)
	}
	var out []string
	at := from
	for range n {
		next, ok := s.Next(at, loc)
		if !ok {
			out = append(out, "none")
			break
		}
		if !next.After(at) {
			t.Fatalf("Next(%s) = %s, not after it", at.Format(layout), next.Format(layout))
		}
		out = append(out, next.Format(layout))
		at = next
	}
	return out
}

func TestNext(t *testing.T) {
	ny, berlin := zone(t, "America/New_York"), zone(t, "Europe/Berlin")
	tests := []struct {
		name string
		expr string
		loc  *time.Location
		from time.Time
		want []string
	}{
		{"every minute", "* * * * *", time.UTC, time.Date(2026, 5, 1, 10, 0, 30, 0, time.UTC),
			[]string{"2026-05-01 10:01 UTC", "2026-05-01 10:02 UTC", "2026-05-01 10:03 UTC"}},
		{"exactly on a fire time is not after it", "0 * * * *", time.UTC, time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC),
			[]string{"2026-05-01 11:00 UTC", "2026-05-01 12:00 UTC"}},
		{"steps and ranges", "10-40/15 8-9 * * *", time.UTC, time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC),
			[]string{"2026-05-01 08:10 UTC", "2026-05-01 08:25 UTC", "2026-05-01 08:40 UTC", "2026-05-01 09:10 UTC"}},
		{"a/n runs to the field's end", "50/5 * * * *", time.UTC, time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC),
			[]string{"2026-05-01 00:50 UTC", "2026-05-01 00:55 UTC", "2026-05-01 01:50 UTC"}},
		{"lists", "0 6,18 * * *", time.UTC, time.Date(2026, 5, 1, 7, 0, 0, 0, time.UTC),
			[]string{"2026-05-01 18:00 UTC", "2026-05-02 06:00 UTC"}},
		{"names", "0 12 * jan,Jul MON-wed", time.UTC, time.Date(2026, 6, 30, 0, 0, 0, 0, time.UTC),
			[]string{"2026-07-01 12:00 UTC", "2026-07-06 12:00 UTC", "2026-07-07 12:00 UTC"}},
		{"Sunday as 7", "0 0 * * 7", time.UTC, time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC),
			[]string{"2026-05-03 00:00 UTC", "2026-05-10 00:00 UTC"}},
		{"Friday to Sunday as 5-7", "0 0 * * 5-7", time.UTC, time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC),
			[]string{"2026-05-02 00:00 UTC", "2026-05-03 00:00 UTC", "2026-05-08 00:00 UTC"}},
		{"day of month OR day of week when both are given", "0 9 13 * FRI", time.UTC, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC),
			[]string{"2026-02-06 09:00 UTC", "2026-02-13 09:00 UTC", "2026-02-20 09:00 UTC", "2026-02-27 09:00 UTC", "2026-03-06 09:00 UTC", "2026-03-13 09:00 UTC"}},
		{"a starred day of month ANDs (Vixie)", "0 9 */2 * MON", time.UTC, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC),
			// Mondays with an odd date: 1, 15, 29 June.
			[]string{"2026-06-01 09:00 UTC", "2026-06-15 09:00 UTC", "2026-06-29 09:00 UTC"}},
		{"a starred day of week ANDs", "0 9 1 * */1", time.UTC, time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC),
			[]string{"2026-07-01 09:00 UTC", "2026-08-01 09:00 UTC"}},
		{"31st skips short months", "0 0 31 * *", time.UTC, time.Date(2026, 1, 31, 1, 0, 0, 0, time.UTC),
			[]string{"2026-03-31 00:00 UTC", "2026-05-31 00:00 UTC"}},
		{"29 February waits for a leap year", "0 0 29 2 *", time.UTC, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			[]string{"2028-02-29 00:00 UTC", "2032-02-29 00:00 UTC"}},
		{"29 February across 2100", "0 0 29 2 *", time.UTC, time.Date(2097, 1, 1, 0, 0, 0, 0, time.UTC),
			[]string{"2104-02-29 00:00 UTC"}},
		{"@hourly", "@hourly", time.UTC, time.Date(2026, 5, 1, 10, 59, 0, 0, time.UTC), []string{"2026-05-01 11:00 UTC"}},
		{"@daily", "@DAILY", time.UTC, time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), []string{"2026-05-02 00:00 UTC"}},
		{"@weekly", "@weekly", time.UTC, time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), []string{"2026-05-03 00:00 UTC"}},
		{"@monthly", "@monthly", time.UTC, time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), []string{"2026-06-01 00:00 UTC"}},
		{"@yearly", "@yearly", time.UTC, time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), []string{"2027-01-01 00:00 UTC"}},
		{"@annually", "@annually", time.UTC, time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), []string{"2027-01-01 00:00 UTC"}},
		{"@midnight", "@midnight", time.UTC, time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), []string{"2026-05-02 00:00 UTC"}},
		{"a zone's wall time", "0 9 * * *", berlin, time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC),
			[]string{"2026-07-01 09:00 CEST", "2026-07-02 09:00 CEST"}},
		{"both day fields restricted OR", "0 0 29 2 SUN", time.UTC, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
			// Every Sunday of February, and 29 February.
			[]string{"2026-02-01 00:00 UTC", "2026-02-08 00:00 UTC"}},
		{"29 February that is a Sunday lies past the bound", "0 0 29 2 */7", time.UTC, time.Date(2037, 1, 1, 0, 0, 0, 0, time.UTC),
			[]string{"none"}},

		// America/New_York, 2026: clocks go from 02:00 EST to 03:00 EDT on
		// 8 March and from 02:00 EDT back to 01:00 EST on 1 November.
		{"NY spring forward: a skipped time fires when the gap ends", "30 2 * * *", ny, time.Date(2026, 3, 7, 12, 0, 0, 0, ny),
			[]string{"2026-03-08 03:00 EDT", "2026-03-09 02:30 EDT"}},
		{"NY spring forward: skipped times and 03:00 fire once", "0,30 2-3 * * *", ny, time.Date(2026, 3, 8, 1, 0, 0, 0, ny),
			[]string{"2026-03-08 03:00 EDT", "2026-03-08 03:30 EDT", "2026-03-09 02:00 EDT"}},
		{"NY spring forward: hourly", "0 * * * *", ny, time.Date(2026, 3, 8, 0, 30, 0, 0, ny),
			[]string{"2026-03-08 01:00 EST", "2026-03-08 03:00 EDT", "2026-03-08 04:00 EDT"}},
		{"NY spring forward: every 20 minutes", "*/20 * * * *", ny, time.Date(2026, 3, 8, 1, 30, 0, 0, ny),
			[]string{"2026-03-08 01:40 EST", "2026-03-08 03:00 EDT", "2026-03-08 03:20 EDT"}},
		{"NY fall back: a repeated time fires once, at its first occurrence", "30 1 * * *", ny, time.Date(2026, 10, 31, 12, 0, 0, 0, ny),
			[]string{"2026-11-01 01:30 EDT", "2026-11-02 01:30 EST"}},
		{"NY fall back: hourly skips the repeated hour", "0 * * * *", ny, time.Date(2026, 11, 1, 0, 30, 0, 0, ny),
			[]string{"2026-11-01 01:00 EDT", "2026-11-01 02:00 EST", "2026-11-01 03:00 EST"}},
		{"NY fall back: every 30 minutes is quiet in the repeat", "*/30 * * * *", ny, time.Date(2026, 11, 1, 1, 10, 0, 0, ny),
			[]string{"2026-11-01 01:30 EDT", "2026-11-01 02:00 EST"}},
		{"NY fall back: from inside the repeated hour", "45 1 * * *", ny,
			time.Date(2026, 11, 1, 6, 20, 0, 0, time.UTC), // 01:20 EST, the second pass
			[]string{"2026-11-02 01:45 EST"}},

		// Europe/Berlin, 2026: 02:00 CET to 03:00 CEST on 29 March, 03:00
		// CEST back to 02:00 CET on 25 October.
		{"Berlin spring forward", "15 2 * * *", berlin, time.Date(2026, 3, 28, 12, 0, 0, 0, berlin),
			[]string{"2026-03-29 03:00 CEST", "2026-03-30 02:15 CEST"}},
		{"Berlin fall back", "15 2 * * *", berlin, time.Date(2026, 10, 24, 12, 0, 0, 0, berlin),
			[]string{"2026-10-25 02:15 CEST", "2026-10-26 02:15 CET"}},
		{"Berlin fall back: every 15 minutes", "*/15 2 * * *", berlin, time.Date(2026, 10, 25, 1, 50, 0, 0, berlin),
			[]string{"2026-10-25 02:00 CEST", "2026-10-25 02:15 CEST", "2026-10-25 02:30 CEST", "2026-10-25 02:45 CEST", "2026-10-26 02:00 CET"}},
		{"Berlin spring forward: every 15 minutes in the gap fire once", "*/15 2 * * *", berlin, time.Date(2026, 3, 29, 0, 0, 0, 0, berlin),
			[]string{"2026-03-29 03:00 CEST", "2026-03-30 02:00 CEST"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := fires(t, tc.expr, tc.loc, tc.from, len(tc.want))
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("fires of %q (-want +got):\n%s", tc.expr, d)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		expr, field, msg string
	}{
		{"", "", "empty"},
		{"   ", "", "empty"},
		{"* * * *", "", "want 5 fields"},
		{"0 * * * * *", "", "seconds or years are not supported"},
		{"@reboot", "", "@reboot is not supported"},
		{"@every 5m", "", "is not a macro"},
		{"60 * * * *", "minute", `"60" is out of range 0-59`},
		{"* 24 * * *", "hour", "out of range 0-23"},
		{"* * 0 * *", "day of month", "out of range 1-31"},
		{"* * * 13 *", "month", "out of range 1-12"},
		{"* * * * 8", "day of week", "out of range 0-7"},
		{"* * * FOO *", "month", `"FOO" is neither`},
		{"* * * * MONDAY", "day of week", "neither"},
		{"5-1 * * * *", "minute", "runs backwards"},
		{"*/0 * * * *", "minute", "step"},
		{"*/61 * * * *", "minute", "step"},
		{"1,,2 * * * *", "minute", "empty item"},
		{"1- * * * *", "minute", "not a number"},
		{"-1 * * * *", "minute", "not a number"},
		{"99999999999999999999 * * * *", "minute", "not a number"},
		{"*/x * * * *", "minute", "step"},
		{"1-2-3 * * * *", "minute", "not a number"},
		{"0 0 30 2 *", "day of month", "30 FEB"},
		{"0 0 31 4,6,9,11 *", "day of month", "exist"},
		{strings.Repeat("1,", 200) + "1 * * * *", "", "longer than 256 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			_, err := Parse(tc.expr)
			var ce *Error
			if !errors.As(err, &ce) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Parse(%q) = %v, want a *cron.Error matching ErrInvalid", tc.expr, err)
			}
			if ce.Field != tc.field || !strings.Contains(ce.Msg, tc.msg) {
				t.Errorf("Parse(%q) = field %q msg %q; want field %q, msg containing %q", tc.expr, ce.Field, ce.Msg, tc.field, tc.msg)
			}
		})
	}
}

// Both restricted day fields OR even when the month rules out the day of
// month, as Vixie cron does: 30 February never comes, Mondays do.
func TestParseDayOfMonthWithWeekday(t *testing.T) {
	got := fires(t, "0 0 30 2 MON", time.UTC, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 2)
	if d := cmp.Diff([]string{"2026-02-02 00:00 UTC", "2026-02-09 00:00 UTC"}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestString(t *testing.T) {
	s, err := Parse("  0 9 * * MON-FRI ")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "0 9 * * MON-FRI" {
		t.Errorf("String() = %q", got)
	}
	var zero Schedule
	if _, ok := zero.Next(time.Now(), nil); ok {
		t.Error("the zero Schedule fires")
	}
}

// Every zone the system knows fires every schedule at most once per
// instant and strictly later each time, across both changes of a year.
func TestNextAcrossZones(t *testing.T) {
	zones := []string{"UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "America/St_Johns",
		"Asia/Kolkata", "Pacific/Chatham", "America/Santiago", "Africa/Casablanca", "Antarctica/Troll"}
	exprs := []string{"*/7 * * * *", "30 2 * * *", "0 1-3 * * *", "45 0,1,2,3 * * SUN"}
	for _, name := range zones {
		loc := zone(t, name)
		for _, expr := range exprs {
			s, err := Parse(expr)
			if err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
			end := at.AddDate(1, 0, 0)
			for at.Before(end) {
				next, ok := s.Next(at, loc)
				if !ok || !next.After(at) {
					t.Fatalf("%s %q: Next(%s) = %s, %v", name, expr, at.Format(layout), next.Format(layout), ok)
				}
				at = next
			}
		}
	}
}

func BenchmarkNext(b *testing.B) {
	ny, _ := time.LoadLocation("America/New_York")
	for _, expr := range []string{"*/5 * * * *", "0 9 * * MON-FRI", "0 0 29 2 *"} {
		s, err := Parse(expr)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(expr, func(b *testing.B) {
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, ny)
			for b.Loop() {
				_, _ = s.Next(at, ny)
			}
		})
	}
}
