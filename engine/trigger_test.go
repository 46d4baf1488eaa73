package engine

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
	day := time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC)
	r, s, ok := sunTimes(day, Location{Latitude: 52.52, Longitude: 13.405})
	if !ok || !near(r, time.Date(2026, 6, 21, 2, 43, 0, 0, time.UTC)) || !near(s, time.Date(2026, 6, 21, 19, 33, 0, 0, time.UTC)) {
		t.Errorf("Berlin: sunrise %v sunset %v ok=%v", r, s, ok)
	}
	next := nextSunEvent(time.Date(2026, 6, 21, 10, 0, 0, 0, time.UTC), Location{Latitude: -33.87, Longitude: 151.21}, "sunset", 0)
	if !near(next, time.Date(2026, 6, 22, 6, 53, 0, 0, time.UTC)) && !near(next, time.Date(2026, 6, 21, 6, 53, 0, 0, time.UTC).Add(24*time.Hour)) {
		t.Errorf("Sydney next sunset after 10:00 UTC: %v", next)
	}
	if _, _, ok := sunTimes(day, Location{Latitude: 69.65, Longitude: 18.96}); ok {
		t.Error("Tromsø has no sunset at midsummer")
	}
	// Offsets shift the event; the next event is always in the future.
	now := time.Date(2026, 6, 21, 3, 0, 0, 0, time.UTC)
	if ev := nextSunEvent(now, Location{Latitude: 52.52, Longitude: 13.405}, "sunrise", -30*time.Minute); !ev.After(now) || !near(ev, time.Date(2026, 6, 22, 2, 13, 0, 0, time.UTC)) {
		t.Errorf("next sunrise-30m after 03:00: %v", ev)
	}
}
