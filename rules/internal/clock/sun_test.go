package clock

import (
	"testing"
	"time"
)

// TestSunTimes checks the solar approximation against published times
// (Berlin, 21 June 2026: sunrise 02:43 UTC, sunset 19:33 UTC; Sydney, 21 June
// 2026: sunrise 20:59 UTC the day before, sunset 06:53 UTC) within 5 minutes,
// and polar day (Tromsø in June) as no event.
func TestSunTimes(t *testing.T) {
	near := func(got, want time.Time) bool { d := got.Sub(want); return d > -5*time.Minute && d < 5*time.Minute }
	berlin := Location{Latitude: 52.52, Longitude: 13.405}
	day := time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC)
	r, s, ok := SunTimes(day, berlin)
	if !ok || !near(r, time.Date(2026, 6, 21, 2, 43, 0, 0, time.UTC)) || !near(s, time.Date(2026, 6, 21, 19, 33, 0, 0, time.UTC)) {
		t.Errorf("Berlin: sunrise %v sunset %v ok=%v", r, s, ok)
	}
	next := NextSunEvent(time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC), Location{Latitude: -33.87, Longitude: 151.21}, Sunset, 0)
	if !near(next, time.Date(2026, 6, 22, 6, 53, 0, 0, time.UTC)) {
		t.Errorf("Sydney next sunset after 10:00 UTC: %v", next)
	}
	if _, _, ok := SunTimes(day, Location{Latitude: 69.65, Longitude: 18.96}); ok {
		t.Error("Tromsø has no sunset at midsummer")
	}
	// Offsets shift the event; the next event is always in the future.
	now := time.Date(2026, 6, 21, 3, 0, 0, 0, time.UTC)
	if ev := NextSunEvent(now, berlin, Sunrise, -30*time.Minute); !ev.After(now) || !near(ev, time.Date(2026, 6, 22, 2, 13, 0, 0, time.UTC)) {
		t.Errorf("next sunrise-30m after 03:00: %v", ev)
	}
}

// TestSunTimesLocalDay: the events are those of the calendar day in the
// time's own zone, returned in that zone, also far from Greenwich (Sydney's
// sunrise is the previous UTC day; Los Angeles' sunset the next UTC day).
func TestSunTimesLocalDay(t *testing.T) {
	near := func(got, want time.Time) bool { d := got.Sub(want); return d > -5*time.Minute && d < 5*time.Minute }
	for _, c := range []struct {
		zone      string
		loc       Location
		rise, set string // local wall clock, 21 June 2026
	}{
		{"Australia/Sydney", Location{Latitude: -33.87, Longitude: 151.21}, "06:59", "16:54"},
		{"America/Los_Angeles", Location{Latitude: 34.05, Longitude: -118.24}, "05:42", "20:08"},
		{"Europe/Berlin", Location{Latitude: 52.52, Longitude: 13.405}, "04:43", "21:33"},
	} {
		zone, err := time.LoadLocation(c.zone)
		if err != nil {
			t.Skip("no zone data:", err)
		}
		noon := time.Date(2026, 6, 21, 12, 0, 0, 0, zone)
		r, s, ok := SunTimes(noon, c.loc)
		at := func(hm string) time.Time {
			p, _ := time.ParseInLocation("15:04", hm, zone)
			return time.Date(2026, 6, 21, p.Hour(), p.Minute(), 0, 0, zone)
		}
		if !ok || !near(r, at(c.rise)) || !near(s, at(c.set)) || r.Location() != zone {
			t.Errorf("%s: sunrise %v sunset %v ok=%v; want about %s and %s local", c.zone, r, s, ok, c.rise, c.set)
		}
	}
}
