package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/clock"

	"testing"
	"time"
	_ "time/tzdata" // Europe/Oslo whatever the machine has installed
)

// tromso is Tromsø, 69.65°N: polar night from late November to mid
// January, midnight sun from late May to late July.
var tromso = Location{Latitude: 69.6492, Longitude: 18.9553}

// TestSunConditionPolar: on a day without sunrise or sunset, a sun
// condition reads the sun's elevation, so polar night is night and
// midnight sun is day. Both "after sunset" and "before sunrise" used to be
// false all through polar night (and the day windows all through the
// midnight sun).
func TestSunConditionPolar(t *testing.T) {
	oslo, err := time.LoadLocation("Europe/Oslo")
	if err != nil {
		t.Fatal(err)
	}
	polarNoon := time.Date(2026, 12, 15, 12, 0, 0, 0, oslo)
	midnightSun := time.Date(2026, 6, 21, 0, 30, 0, 0, oslo)
	equinoxNoon := time.Date(2026, 3, 15, 12, 0, 0, 0, oslo)
	for _, c := range []struct {
		name, window string
		now          time.Time
		want         bool
	}{
		{"polar night: after sunset", `{"after": "sunset"}`, polarNoon, true},
		{"polar night: before sunrise", `{"before": "sunrise"}`, polarNoon, true},
		{"polar night: the night", `{"after": "sunset", "before": "sunrise"}`, polarNoon, true},
		{"polar night: offsets have no event to move", `{"after": "sunset", "after_offset": "30m"}`, polarNoon, true},
		{"polar night: daytime", `{"after": "sunrise", "before": "sunset"}`, polarNoon, false},
		{"polar night: after sunrise", `{"after": "sunrise"}`, polarNoon, false},
		{"midnight sun: daytime", `{"after": "sunrise", "before": "sunset"}`, midnightSun, true},
		{"midnight sun: before sunset", `{"before": "sunset", "before_offset": "-1h"}`, midnightSun, true},
		{"midnight sun: the night", `{"after": "sunset", "before": "sunrise"}`, midnightSun, false},
		{"midnight sun: after sunset", `{"after": "sunset"}`, midnightSun, false},
		{"an ordinary day still reads the events", `{"after": "sunrise", "before": "sunset"}`, equinoxNoon, true},
		{"an ordinary day: not night at noon", `{"after": "sunset", "before": "sunrise"}`, equinoxNoon, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := `{"name": "s", "triggers": [{"id": "t", "at": "07:00"}], "conditions": [{"id": "sun", "sun": ` + c.window + `}],
				"steps": [{"id": "s", "call": "hall_light.set", "args": {"state": "ON"}}]}`
			comp := validDemo(t, src, true)
			w := itSim(nil, Scenario{Now: &c.now})
			w.SetPlace(Place{Zone: oslo, Location: &tromso})
			res := itRun(t, comp, w, itFire("t", nil))
			if got := res.Outcome.Status == StatusSuccess; got != c.want {
				t.Fatalf("at %v: status %s (%v), want the condition %v", c.now, res.Outcome.Status, itStep(t, res, "sun").Input, c.want)
			}
		})
	}
}

// TestNextSunEventThroughPolarNight: the next sunrise after a day in
// polar night is the first one after it (mid January), not none.
func TestNextSunEventThroughPolarNight(t *testing.T) {
	oslo, err := time.LoadLocation("Europe/Oslo")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		event  string
		now    time.Time
		within [2]time.Time
	}{
		{clock.Sunrise, time.Date(2026, 12, 1, 12, 0, 0, 0, oslo), [2]time.Time{time.Date(2027, 1, 10, 0, 0, 0, 0, oslo), time.Date(2027, 1, 20, 0, 0, 0, 0, oslo)}},
		{clock.Sunset, time.Date(2026, 6, 1, 12, 0, 0, 0, oslo), [2]time.Time{time.Date(2026, 7, 18, 0, 0, 0, 0, oslo), time.Date(2026, 7, 28, 0, 0, 0, 0, oslo)}},
	} {
		got := NextSunEvent(c.now, tromso, c.event, 0)
		if got.Before(c.within[0]) || got.After(c.within[1]) {
			t.Errorf("next %s after %v: %v, want between %v and %v", c.event, c.now, got, c.within[0], c.within[1])
		}
	}
}
