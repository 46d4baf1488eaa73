// Package clocktext writes the times a person reads (trace narration,
// trigger reasons, step notes, request errors): always in the house's
// zone (--tz), never in the zone a time happened to be stored in (UTC
// after a restart). Machine fields (next_fire, t_ms, RFC 3339 members)
// are not written here.
package clocktext

import "time"

// Layout is the form of a full time: "2026-12-07 10:08:09 CET".
const Layout = "2006-01-02 15:04:05 MST"

// Text is t in zone (nil: UTC) as Layout writes it.
func Text(t time.Time, zone *time.Location) string {
	return t.In(orUTC(zone)).Format(Layout)
}

// Since is t for "since …": its clock time ("09:02") when it falls on
// now's day in zone, else the full Text.
func Since(t, now time.Time, zone *time.Location) string {
	z := orUTC(zone)
	lt, ln := t.In(z), now.In(z)
	if y, m, d := lt.Date(); ln.Year() == y && ln.Month() == m && ln.Day() == d {
		return lt.Format("15:04")
	}
	return lt.Format(Layout)
}

func orUTC(z *time.Location) *time.Location {
	if z == nil {
		return time.UTC
	}
	return z
}
