package engine

import (
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/rules"
)

func f(v float64) *float64 { return &v }

func TestMatchTrigger(t *testing.T) {
	to := func(v any) rules.Value { return rules.Value{Set: true, V: v} }
	cases := []struct {
		name          string
		trig          rules.Trigger
		prev, cur     any
		event         bool
		matched, hold bool
	}{
		{"state any change", rules.Trigger{Kind: rules.TriggerState}, false, true, false, true, false},
		{"state no change", rules.Trigger{Kind: rules.TriggerState}, true, true, false, false, false},
		{"state to matches", rules.Trigger{Kind: rules.TriggerState, To: to(true)}, false, true, false, true, true},
		{"state to other", rules.Trigger{Kind: rules.TriggerState, To: to(true)}, true, false, false, false, false},
		{"state from gate", rules.Trigger{Kind: rules.TriggerState, To: to("ON"), From: to("OFF")}, "TOGGLE", "ON", false, false, true},
		{"state from and to", rules.Trigger{Kind: rules.TriggerState, To: to("ON"), From: to("OFF")}, "OFF", "ON", false, true, true},
		{"state numbers by value", rules.Trigger{Kind: rules.TriggerState, To: to(1.0)}, 0, 1, false, true, true},
		{"state still holding", rules.Trigger{Kind: rules.TriggerState, To: to(true)}, true, true, false, false, true},
		{"numeric crosses above", rules.Trigger{Kind: rules.TriggerNumeric, TriggerMore: &rules.TriggerMore{Above: f(25)}}, 24.5, 25.5, false, true, true},
		{"numeric stays above", rules.Trigger{Kind: rules.TriggerNumeric, TriggerMore: &rules.TriggerMore{Above: f(25)}}, 26.0, 27.0, false, false, true},
		{"numeric leaves", rules.Trigger{Kind: rules.TriggerNumeric, TriggerMore: &rules.TriggerMore{Above: f(25)}}, 26.0, 24.0, false, false, false},
		{"numeric band", rules.Trigger{Kind: rules.TriggerNumeric, TriggerMore: &rules.TriggerMore{Above: f(10), Below: f(20)}}, 25.0, 15.0, false, true, true},
		{"numeric text value", rules.Trigger{Kind: rules.TriggerNumeric, TriggerMore: &rules.TriggerMore{Below: f(5)}}, "7", "3.5", false, true, true},
		{"numeric not a number", rules.Trigger{Kind: rules.TriggerNumeric, TriggerMore: &rules.TriggerMore{Below: f(5)}}, 7.0, "n/a", false, false, false},
		{"event any", rules.Trigger{Kind: rules.TriggerEvent}, nil, "single", true, true, false},
		{"event value", rules.Trigger{Kind: rules.TriggerEvent, To: to("on")}, nil, "on", true, true, false},
		{"event other value", rules.Trigger{Kind: rules.TriggerEvent, To: to("on")}, nil, "off", true, false, false},
		{"event needs an event", rules.Trigger{Kind: rules.TriggerEvent}, nil, "on", false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, h := matchTrigger(&tc.trig, tc.prev, tc.cur, tc.event)
			if m != tc.matched || h != tc.hold {
				t.Fatalf("matchTrigger = (%v, %v), want (%v, %v)", m, h, tc.matched, tc.hold)
			}
		})
	}
}

func TestTimeOfDaySpec(t *testing.T) {
	for in, want := range map[string]string{"07:30": "0 30 7 * * *", "00:00": "0 0 0 * * *", "23:05:09": "9 5 23 * * *", "18:00:00": "0 0 18 * * *"} {
		if got := timeOfDaySpec(in); got != want {
			t.Errorf("timeOfDaySpec(%q) = %q, want %q", in, got, want)
		}
		if _, err := rules.ParseCron(timeOfDaySpec(in)); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}

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
