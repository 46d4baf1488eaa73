package model

import (
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"

	"fmt"
	"slices"
	"strings"
	"time"
)

// condWindow is a time or sun condition's window in the run form, parsed
// once (see Window for what it means).
type condWindow struct {
	sun                 bool
	after, before       int32         // time: seconds into the day; -1 = unbounded
	days                uint8         // time: bit 1<<weekday per allowed day; 0 = every day
	sunAfter, sunBefore string        // sun: sunrise | sunset | "" (unbounded)
	afterOff, beforeOff time.Duration // sun
}

// lowerWindow lowers a time or sun condition's window (nil for the other
// kinds).
func lowerWindow(c *Condition) *condWindow {
	if c.Window == nil || (c.Kind != CondTime && c.Kind != CondSun) {
		return nil
	}
	w := c.Window
	if c.Kind == CondSun {
		return &condWindow{sun: true, sunAfter: w.After, sunBefore: w.Before, afterOff: w.AfterOffset, beforeOff: w.BeforeOffset}
	}
	cw := &condWindow{after: clockSeconds(w.After), before: clockSeconds(w.Before)}
	for _, d := range w.Weekdays {
		cw.days |= 1 << d
	}
	return cw
}

// clockSeconds reads "HH:MM[:SS]" as seconds into the day (-1 for "").
func clockSeconds(s string) int32 {
	if s == "" {
		return -1
	}
	var h, m, sec int32
	parts := strings.Split(s, ":")
	for i, p := range parts {
		var n int32
		for _, r := range p {
			n = n*10 + int32(r-'0')
		}
		switch i {
		case 0:
			h = n
		case 1:
			m = n
		case 2:
			sec = n
		}
	}
	return h*3600 + m*60 + sec
}

// inWindow reports whether x lies in [after, before), either bound
// optional; a window whose after is not before its before crosses the
// wrap-around (midnight).
func inWindow[T int32 | int64](x, after, before T, hasAfter, hasBefore bool) bool {
	switch {
	case hasAfter && hasBefore && after < before:
		return x >= after && x < before
	case hasAfter && hasBefore:
		return x >= after || x < before
	case hasAfter:
		return x >= after
	case hasBefore:
		return x < before
	}
	return true
}

// eval decides the window at now (in p's zone). in describes the decision
// for the trace: the local time, the bounds as they stood that day.
func (w *condWindow) Eval(now time.Time, p clock.Place) (ok bool, in map[string]any, err error) {
	now = now.In(p.Zone)
	in = map[string]any{"now": now.Format(time.RFC3339), "time_zone": ZoneName(p.Zone)}
	if w.sun {
		return w.evalSun(now, p, in)
	}
	sod := int32(now.Hour()*3600 + now.Minute()*60 + now.Second())
	ok = inWindow(sod, w.after, w.before, w.after >= 0, w.before >= 0)
	if w.after >= 0 {
		in["after"] = clockText(w.after)
	}
	if w.before >= 0 {
		in["before"] = clockText(w.before)
	}
	if w.days != 0 {
		in["weekday"] = w.dayNames()
		in["today"] = WeekdayNames[now.Weekday()]
		ok = ok && w.days&(1<<now.Weekday()) != 0
	}
	return ok, in, nil
}

func (w *condWindow) evalSun(now time.Time, p clock.Place, in map[string]any) (bool, map[string]any, error) {
	if p.Location == nil {
		return false, in, fmt.Errorf("a sun condition needs the server's location, which is not configured")
	}
	var t1, t2 time.Time
	for _, b := range []struct {
		key, event string
		off        time.Duration
		at         *time.Time
	}{{"after", w.sunAfter, w.afterOff, &t1}, {"before", w.sunBefore, w.beforeOff, &t2}} {
		if b.event == "" {
			continue
		}
		ev, ok := clock.SunEventOn(now, *p.Location, b.event, b.off)
		if !ok {
			in[b.key] = b.event + " does not happen today (polar day or night)"
			return w.bySunUp(now, *p.Location, in), in, nil
		}
		*b.at = ev
		in[b.key] = ev.Format(time.RFC3339) + " (" + SunText(b.event, b.off) + ")"
	}
	ok := inWindow(now.UnixNano(), t1.UnixNano(), t2.UnixNano(), w.sunAfter != "", w.sunBefore != "")
	return ok, in, nil
}

// bySunUp decides a sun window on a day one of its events does not
// happen (polar night or midnight sun) by where the sun is, so polar night
// is night and midnight sun is day: "after sunset" and "before sunrise"
// hold while the sun is down, "after sunrise" and "before sunset" while it
// is up (offsets have no event to move), and a window of both bounds holds
// when both do — either, for a window across midnight such as the night.
func (w *condWindow) bySunUp(now time.Time, loc clock.Location, in map[string]any) bool {
	elev := clock.SunElevation(now, loc)
	up := elev > clock.HorizonElevation
	in["sun"] = fmt.Sprintf("down (elevation %.1f°)", elev)
	if up {
		in["sun"] = fmt.Sprintf("up (elevation %.1f°)", elev)
	}
	after, before := (w.sunAfter == clock.Sunrise) == up, (w.sunBefore == clock.Sunset) == up
	switch {
	case w.sunAfter == "":
		return before
	case w.sunBefore == "":
		return after
	case w.sunAfter == clock.Sunset && w.sunBefore == clock.Sunrise, w.sunAfter == w.sunBefore && w.afterOff >= w.beforeOff:
		return after || before
	}
	return after && before
}

func (w *condWindow) dayNames() []any {
	var out []any
	for d := time.Sunday; d <= time.Saturday; d++ {
		if w.days&(1<<d) != 0 {
			out = append(out, WeekdayNames[d])
		}
	}
	return out
}

// describe is the window in a plan ("Only from 22:00 until 06:00 the
// next day, on Monday and Friday (Europe/Berlin)"); zone names the time
// zone ("" = the server's).
func (w *condWindow) Describe(zone string) string {
	var s string
	if w.sun {
		switch {
		case w.sunAfter != "" && w.sunBefore != "":
			s = "between " + clock.SunPhrase(w.sunAfter, w.afterOff) + " and " + clock.SunPhrase(w.sunBefore, w.beforeOff)
		case w.sunAfter != "":
			s = "after " + clock.SunPhrase(w.sunAfter, w.afterOff)
		default:
			s = "before " + clock.SunPhrase(w.sunBefore, w.beforeOff)
		}
		return "Only " + s + " (the server's location)"
	}
	switch {
	case w.after >= 0 && w.before >= 0 && w.after > w.before:
		s = "from " + clockText(w.after) + " until " + clockText(w.before) + " the next day"
	case w.after >= 0 && w.before >= 0:
		s = "between " + clockText(w.after) + " and " + clockText(w.before)
	case w.after >= 0:
		s = "after " + clockText(w.after)
	case w.before >= 0:
		s = "before " + clockText(w.before)
	}
	if w.days != 0 {
		on := "on " + core.JoinList(DayNamesLong(w.dayNames()), "and")
		if s != "" {
			on = ", " + on
		}
		s += on
	}
	if zone == "" {
		zone = "server time"
	}
	return "Only " + s + " (" + zone + ")"
}

func clockText(sec int32) string {
	if sec%60 != 0 {
		return fmt.Sprintf("%02d:%02d:%02d", sec/3600, sec%3600/60, sec%60)
	}
	return fmt.Sprintf("%02d:%02d", sec/3600, sec%3600/60)
}

// sunText is "sunset", "sunset +15m" or "sunrise -1h30m".
func SunText(event string, off time.Duration) string {
	if off == 0 {
		return event
	}
	sign := "+"
	if off < 0 {
		sign, off = "-", -off
	}
	return event + " " + sign + ShortDuration(off)
}

// shortDuration is d without trailing zero units ("15m", "1h30m").
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// zoneName names a time zone for traces and plans ("Local" is the
// system's zone, named by what it is now).
func ZoneName(z *time.Location) string {
	if z == nil {
		return "UTC"
	}
	if n := z.String(); n != "Local" {
		return n
	}
	name, _ := time.Now().In(z).Zone()
	return name
}

// dayNamesLong spells weekday names out ("mon" → "Monday").
func DayNamesLong(short []any) []string {
	out := make([]string, 0, len(short))
	for _, d := range short {
		if i := slices.Index(WeekdayNames, d.(string)); i >= 0 {
			out = append(out, time.Weekday(i).String())
		}
	}
	return out
}

// weekdayNames are the weekday names a time condition takes, as Home
// Assistant spells them, by time.Weekday.
var WeekdayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
