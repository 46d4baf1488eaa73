package web

import (
	"fmt"
	"html/template"
	"time"
)

// clock shows times in the house's time zone (the engine's time_zone,
// which schedules use too), always with the zone's abbreviation: a time
// without its zone is a guess.
type clock struct {
	loc *time.Location
}

func newClock(loc *time.Location) clock {
	if loc == nil {
		loc = time.Local
	}
	return clock{loc: loc}
}

// when is t as "2006-01-02 15:04:05 CEST", or "—" for no time.
func (c clock) when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.In(c.loc).Format("2006-01-02 15:04:05 MST")
}

// full is when with the zone's name, for tooltips.
func (c clock) full(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	s := c.when(t)
	if name := c.loc.String(); name != "Local" && name != "UTC" {
		s += " (" + name + ")"
	}
	return s
}

// tag is a <time> element: the local time with its zone, the full form in
// its tooltip; rel asks the page's script to show it relative to now ("3
// min ago", "in 2 h"), where people scan lists.
func (c clock) tag(t time.Time, rel bool) template.HTML {
	if t.IsZero() {
		return "—"
	}
	attrs := ` datetime="` + t.UTC().Format(time.RFC3339) + `" title="` + template.HTMLEscapeString(c.full(t)) + `"`
	if rel {
		attrs += " data-rel"
	}
	// Every part is a formatted time or escaped above.
	return template.HTML("<time" + attrs + ">" + template.HTMLEscapeString(c.when(t)) + "</time>")
}

// funcs are the template functions that show times.
func (c clock) funcs() template.FuncMap {
	return template.FuncMap{
		"when": c.when,
		"at":   func(t time.Time) template.HTML { return c.tag(t, false) },
		"ago":  func(t time.Time) template.HTML { return c.tag(t, true) },
	}
}

// when formats a time for the pages and the live stream.
func (s *server) when(t time.Time) string { return s.clock.when(t) }

// chartZone names tz for the charts (uPlot draws in an IANA zone): its
// name, or for a zone without one (the machine's, when its name could
// not be found) its offset at now as Etc/GMT±h, so that the charts agree
// with the page's text; "" (the browser's zone) when the offset is not
// whole hours.
func chartZone(tz *time.Location, now time.Time) string {
	if tz == nil {
		return ""
	}
	if n := tz.String(); n != "" && n != "Local" {
		return n
	}
	_, off := now.In(tz).Zone()
	switch {
	case off%3600 != 0:
		return ""
	case off == 0:
		return "UTC"
	}
	return fmt.Sprintf("Etc/GMT%+d", -off/3600)
}
