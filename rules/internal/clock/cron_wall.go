package clock

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// wallSchedule runs a cron schedule by the wall clock of its zone across
// daylight-saving changes: a time the clock skips when it jumps forward
// runs once, at the first instant after the gap, and a time the clock
// repeats when it goes back runs once, at its first occurrence.
// robfig/cron walks absolute time, so it skipped the first for the day and
// ran the second twice; it is wrapped rather than patched.
//
// A schedule that runs every hour keeps robfig/cron's walk: it follows
// the clock through both the skipped and the repeated hour (every 10
// minutes stays every 10 minutes), as cron implementations do.
type wallSchedule struct {
	spec  *cron.SpecSchedule // as parsed: its Location, or the zone of the time asked
	naive cron.SpecSchedule  // the same fields read in UTC: wall-clock steps with no transitions
}

// allHours is a SpecSchedule's hour field when every hour matches.
const allHours = 1<<24 - 1

// wallClock wraps a parsed schedule (see wallSchedule).
func wallClock(s cron.Schedule) cron.Schedule {
	spec, ok := s.(*cron.SpecSchedule)
	if !ok || spec.Hour&allHours == allHours {
		return s
	}
	w := &wallSchedule{spec: spec, naive: *spec}
	w.naive.Location = time.UTC
	return w
}

// Next is the first instant after t the schedule runs at.
func (w *wallSchedule) Next(t time.Time) time.Time {
	loc := w.spec.Location
	if loc == time.Local {
		loc = t.Location() // as robfig/cron: the zone the cron runner asks in
	}
	// An instant's wall clock reads n only at or after the first instant
	// of n, and firstInstant never decreases as n grows: the first wall
	// time past t's whose first instant is after t is the next firing.
	n := wallOf(t.In(loc))
	for {
		if n = w.naive.Next(n); n.IsZero() {
			return n
		}
		if at := firstInstant(n, loc); at.After(t) {
			return at.In(t.Location())
		}
	}
}

// wallOf is t's wall clock as a UTC time (fields equal, no zone rules).
func wallOf(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// firstInstant is the first instant whose wall clock in loc reads n (a
// wall clock as wallOf gives it), or, when a spring-forward gap skips n,
// the instant the gap ends.
func firstInstant(n time.Time, loc *time.Location) time.Time {
	var first, past time.Time
	// The offsets in force around n: a transition lies between them.
	for _, probe := range [...]time.Duration{-26 * time.Hour, 0, 26 * time.Hour} {
		_, off := n.Add(probe).In(loc).Zone()
		c := n.Add(-time.Duration(off) * time.Second)
		switch w := wallOf(c.In(loc)); {
		case w.Equal(n):
			if first.IsZero() || c.Before(first) {
				first = c
			}
		case w.After(n):
			past = c
		}
	}
	if !first.IsZero() || past.IsZero() {
		return first
	}
	// n is in a gap: read with the offset before it, it lands in the zone
	// period that begins where the gap ends.
	start, _ := past.In(loc).ZoneBounds()
	return start
}

// dstNote says what daylight saving does to a schedule in loc, when the
// clock skips or repeats one of its times this year or next ("" when it
// never does).
func DSTNote(s cron.Schedule, loc *time.Location) string {
	w, ok := s.(*wallSchedule)
	if !ok || loc == nil {
		return ""
	}
	if w.spec.Location != time.Local {
		loc = w.spec.Location
	}
	skips, repeats := false, false
	t := time.Date(time.Now().Year(), time.January, 1, 0, 0, 0, 0, loc)
	for end := t.AddDate(2, 0, 0); ; {
		_, next := t.ZoneBounds()
		if next.IsZero() || next.After(end) {
			break
		}
		_, before := next.Add(-time.Second).Zone()
		_, after := next.Zone()
		from := wallOf(next.Add(-time.Second).In(loc)).Add(time.Second) // the wall clock the transition leaves
		d := time.Duration(after-before) * time.Second
		if d < 0 {
			from, d = from.Add(d), -d
		}
		if n := w.naive.Next(from.Add(-time.Second)); !n.IsZero() && n.Before(from.Add(d)) {
			skips, repeats = skips || after > before, repeats || after < before
		}
		t = next
	}
	switch {
	case skips && repeats:
		return "; on a daylight-saving change a skipped time runs once when the clock jumps forward, a repeated time once, the first time"
	case skips:
		return "; when daylight saving skips its time it runs once, as the clock jumps forward"
	case repeats:
		return "; when daylight saving repeats its time it runs once, the first time"
	}
	return ""
}

var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses a cron spec the way triggers do (seconds optional).
func ParseCron(spec string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("cron spec %q: %v", spec, r)
		}
	}()
	if err := checkEvery(spec); err != nil {
		return nil, err
	}
	s, err = cronParser.Parse(spec)
	if err != nil {
		return nil, err
	}
	// robfig/cron looks five years ahead: a spec with no date there
	// ("0 0 30 2 *", 30 February) would be armed and never fire.
	if s.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("cron spec %q never fires: no date in the next five years matches its day, month and weekday fields", spec)
	}
	return wallClock(s), nil
}

// checkEvery refuses an "@every" duration robfig/cron would not honour:
// it runs a schedule at most once a second and drops what is below a
// second, so "@every -1s" and "@every 1ns" fired every second.
func checkEvery(spec string) error {
	f := strings.Fields(spec)
	if len(f) > 0 && (strings.HasPrefix(f[0], "TZ=") || strings.HasPrefix(f[0], "CRON_TZ=")) {
		f = f[1:]
	}
	if len(f) != 2 || f[0] != "@every" {
		return nil
	}
	d, err := time.ParseDuration(f[1])
	if err != nil {
		return fmt.Errorf("@every takes a whole number of seconds, at least 1s (e.g. 90s, 5m, 1h30m): %v", err)
	}
	if d < time.Second || d%time.Second != 0 {
		return fmt.Errorf("@every %s: the schedule runs at most once a second and drops fractions of a second; @every takes a whole number of seconds, at least 1s (e.g. 90s, 5m, 1h30m)", f[1])
	}
	return nil
}
