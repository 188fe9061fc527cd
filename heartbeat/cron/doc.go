// Package cron parses five-field cron expressions and finds when they next fire.
//
// An expression is the standard five fields, minute (0-59), hour (0-23),
// day of month (1-31), month (1-12 or JAN-DEC) and day of week (0-7 or
// SUN-SAT, 0 and 7 both Sunday), each a list of items separated by commas:
// "*", a value, a range "a-b", and any of those with a step "/n" ("a/n"
// means "a-max/n"). Names are case-insensitive and stand wherever a
// number may. The macros @yearly (@annually), @monthly, @weekly, @daily
// (@midnight) and @hourly stand for their usual expressions; @reboot, and
// a sixth field for seconds or years, are refused.
//
// Day of month and day of week combine as in Vixie cron: when either
// field starts with "*" a day must match both (the starred one matching
// as its values say), otherwise it must match either one. So
// "0 9 1 * MON" fires on the first of each month and on every Monday,
// while "0 9 */2 * MON" fires on Mondays with an odd date.
//
// Times are wall-clock times in the zone Next is given, and a wall time
// fires at most once:
//
//   - A wall time that a daylight-saving change skips (02:30 on the
//     spring-forward night in America/New_York) fires at the instant the
//     gap ends (03:00 local), once however many of the schedule's times
//     fall in the gap, and not again when 03:00 is itself one of them.
//   - A wall time that occurs twice (01:30 on the fall-back night) fires
//     at its first occurrence only, so a schedule that fires every few
//     minutes is quiet during the repeated hour.
//
// Next looks at most MaxYears ahead, day by day with constant work per
// day, so its cost is bounded whatever the expression; an expression whose
// next time lies further out (a 29 February that must also be a Sunday)
// reports none.
//
//	s, err := cron.Parse("30 2 * * *")
//	if err != nil {
//		return err // a *cron.Error naming the field
//	}
//	ny, _ := time.LoadLocation("America/New_York")
//	next, ok := s.Next(time.Now(), ny)
package cron
