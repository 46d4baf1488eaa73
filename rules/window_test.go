package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/plan"

	"context"
	"strings"
	"testing"
	"time"
)

// validDemo validates src against the demo catalog, with a location and
// the zone when loc is true, and fails the test when it is invalid.
func validDemo(t *testing.T, src string, loc bool) *Compiled {
	t.Helper()
	res, err := Validate([]byte(src), demoCatalog(), ValidateOptions{Cache: itCache, HasLocation: loc, Zone: berlin(t)})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Valid {
		t.Fatalf("invalid: %+v", res.Diagnostics)
	}
	return res.Compiled
}

func berlin(t testing.TB) *time.Location {
	z, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no zone data:", err)
	}
	return z
}

var berlinLoc = Location{Latitude: 52.52, Longitude: 13.405}

func TestTimeConditionWindows(t *testing.T) {
	z := berlin(t)
	at := func(day int, hm string) time.Time { // January 2026: the 12th is a Monday
		p, _ := time.Parse("15:04", hm)
		return time.Date(2026, 1, day, p.Hour(), p.Minute(), 0, 0, z)
	}
	for _, c := range []struct {
		name, window string
		now          time.Time
		want         bool
	}{
		{"night late", `{"after": "22:00", "before": "06:00"}`, at(12, "23:30"), true},
		{"night early", `{"after": "22:00", "before": "06:00"}`, at(13, "05:59"), true},
		{"night ends at before", `{"after": "22:00", "before": "06:00"}`, at(13, "06:00"), false},
		{"night starts at after", `{"after": "22:00", "before": "06:00"}`, at(12, "22:00"), true},
		{"night noon", `{"after": "22:00", "before": "06:00"}`, at(12, "12:00"), false},
		{"day", `{"after": "08:00", "before": "17:30"}`, at(12, "17:29"), true},
		{"after only", `{"after": "18:00"}`, at(12, "17:59"), false},
		{"before only", `{"before": "07:00:30"}`, at(12, "07:00"), true},
		{"weekday monday", `{"weekday": ["mon", "tue", "wed", "thu", "fri"]}`, at(12, "10:00"), true},
		{"weekday saturday", `{"weekday": ["mon", "tue", "wed", "thu", "fri"]}`, at(17, "10:00"), false},
		{"one day as text", `{"weekday": "sat"}`, at(17, "10:00"), true},
		{"weekday is the day of now", `{"after": "22:00", "before": "06:00", "weekday": "fri"}`, at(17, "02:00"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := `{"name": "w", "triggers": [{"id": "t", "at": "07:00"}], "conditions": [{"id": "win", "time": ` + c.window + `}],
				"steps": [{"id": "s", "call": "hall_light.set", "args": {"state": "ON"}}]}`
			comp := validDemo(t, src, false)
			w := itSim(nil, Scenario{})
			w.SetPlace(Place{Zone: z})
			w.Clock = c.now
			res := itRun(t, comp, w, itFire("t", nil))
			got := res.Outcome.Status == StatusSuccess
			if got != c.want {
				t.Fatalf("at %v: status %s, want window %v", c.now, res.Outcome.Status, c.want)
			}
			e := itStep(t, res, "win")
			in, _ := e.Input.(map[string]any)
			if in["now"] != c.now.Format(time.RFC3339) || in["time_zone"] != "Europe/Berlin" {
				t.Errorf("input %v: want the local now and the zone", e.Input)
			}
		})
	}
}

func TestSunConditionWindows(t *testing.T) {
	z := berlin(t)
	// Berlin, 15 January 2026: sunrise about 08:10, sunset about 16:20.
	at := func(hm string) time.Time {
		p, _ := time.Parse("15:04", hm)
		return time.Date(2026, 1, 15, p.Hour(), p.Minute(), 0, 0, z)
	}
	for _, c := range []struct {
		name, window string
		now          time.Time
		want         bool
	}{
		{"after sunset", `{"after": "sunset"}`, at("16:40"), true},
		{"not yet sunset", `{"after": "sunset"}`, at("15:40"), false},
		{"offset moves it", `{"after": "sunset", "after_offset": "30m"}`, at("16:40"), false},
		{"negative offset", `{"after": "sunset", "after_offset": "-1h"}`, at("15:40"), true},
		{"night crosses midnight (evening)", `{"after": "sunset", "before": "sunrise"}`, at("23:00"), true},
		{"night crosses midnight (morning)", `{"after": "sunset", "before": "sunrise"}`, at("06:00"), true},
		{"night at noon", `{"after": "sunset", "before": "sunrise"}`, at("12:00"), false},
		{"daytime", `{"after": "sunrise", "before": "sunset"}`, at("12:00"), true},
		{"before sunrise", `{"before": "sunrise", "before_offset": "-30m"}`, at("07:50"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := `{"name": "s", "triggers": [{"id": "t", "at": "07:00"}], "conditions": [{"id": "dark", "sun": ` + c.window + `}],
				"steps": [{"id": "s", "call": "hall_light.set", "args": {"state": "ON"}}]}`
			comp := validDemo(t, src, true)
			w := itSim(nil, Scenario{Now: &c.now})
			w.SetPlace(Place{Zone: z, Location: &berlinLoc})
			res := itRun(t, comp, w, itFire("t", nil))
			if got := res.Outcome.Status == StatusSuccess; got != c.want {
				t.Fatalf("at %v: status %s (%v), want window %v", c.now, res.Outcome.Status, itStep(t, res, "dark").Input, c.want)
			}
			in, _ := itStep(t, res, "dark").Input.(map[string]any)
			for _, k := range []string{"after", "before"} {
				if v, ok := in[k].(string); ok && !strings.Contains(v, "+01:00 (sun") {
					t.Errorf("%s = %q: want the local time and the event", k, v)
				}
			}
		})
	}
}

// TestSunConditionWithoutPlace: a world that knows no location fails the
// condition (the server lost its location since the rule was deployed).
func TestSunConditionWithoutPlace(t *testing.T) {
	comp := validDemo(t, `{"name": "s", "triggers": [{"id": "t", "at": "07:00"}], "conditions": [{"id": "dark", "sun": {"after": "sunset"}}],
		"steps": [{"id": "s", "call": "hall_light.set", "args": {"state": "ON"}}]}`, true)
	res := Run(context.Background(), comp, itSim(nil, Scenario{}), itFire("t", nil))
	if res.Outcome.Status != StatusFailed || !strings.Contains(res.Outcome.Error, "location") {
		t.Fatalf("outcome %+v", res.Outcome)
	}
}

func TestConditionDiagnostics(t *testing.T) {
	for _, c := range []struct {
		name, cond string
		loc        bool
		want       []string // code@path
	}{
		{"no kind", `{"id": "c"}`, true, []string{"missing_field@/conditions/0"}},
		{"two kinds", `{"id": "c", "expr": "true", "time": {"after": "22:00"}}`, true, []string{"conflicting_fields@/conditions/0/time"}},
		{"bad clock", `{"id": "c", "time": {"after": "25:00", "before": "6"}}`, true, []string{"bad_time@/conditions/0/time/after", "bad_time@/conditions/0/time/before"}},
		{"empty time", `{"id": "c", "time": {}}`, true, []string{"missing_field@/conditions/0/time"}},
		{"empty window", `{"id": "c", "time": {"after": "22:00", "before": "22:00"}}`, true, []string{"constraint@/conditions/0/time/before"}},
		{"bad weekday", `{"id": "c", "time": {"weekday": ["monday", 3]}}`, true, []string{"constraint@/conditions/0/time/weekday/0", "type_mismatch@/conditions/0/time/weekday/1"}},
		{"unknown member", `{"id": "c", "time": {"after": "22:00", "days": ["mon"]}}`, true, []string{"unknown_field@/conditions/0/time/days"}},
		{"sun event", `{"id": "c", "sun": {"after": "dusk"}}`, true, []string{"constraint@/conditions/0/sun/after"}},
		{"offset alone", `{"id": "c", "sun": {"after_offset": "15m"}}`, true, []string{"missing_field@/conditions/0/sun", "missing_field@/conditions/0/sun"}},
		{"templated offset", `{"id": "c", "sun": {"after": "sunset", "after_offset": "{{ params.x }}"}}`, true, []string{"bad_duration@/conditions/0/sun/after_offset"}},
		{"no location", `{"id": "c", "sun": {"after": "sunset"}}`, false, []string{"missing_location@/conditions/0/sun"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := `{"name": "d", "triggers": [{"id": "t", "at": "07:00"}], "conditions": [` + c.cond + `],
				"steps": [{"id": "s", "call": "hall_light.set", "args": {"state": "ON"}}]}`
			res, err := Validate([]byte(src), demoCatalog(), ValidateOptions{Cache: itCache, HasLocation: c.loc})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range res.Diagnostics {
				got = append(got, d.Code+"@"+d.Path)
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("got %v, want %v (%+v)", got, c.want, res.Diagnostics)
			}
		})
	}
}

// TestConditionPlan: plans describe windows with their zone.
func TestConditionPlan(t *testing.T) {
	comp := validDemo(t, `{"name": "p", "triggers": [{"id": "t", "at": "07:00"}], "conditions": [
		{"id": "night", "time": {"after": "22:00", "before": "06:00", "weekday": ["fri", "mon"]}},
		{"id": "dark", "sun": {"after": "sunset", "after_offset": "15m", "before": "sunrise", "before_offset": "-1h30m"}}],
		"steps": [{"id": "s", "call": "hall_light.set", "args": {"state": "ON"}}]}`, true)
	want := map[string]string{
		"t":     "Every day at 07:00 (Europe/Berlin)",
		"night": "Only from 22:00 until 06:00 the next day, on Monday and Friday (Europe/Berlin)",
		"dark":  "Only between 15 minutes after sunset and 1 hour and 30 minutes before sunrise (the server's location)",
	}
	for _, s := range comp.Plan.Steps {
		if w, ok := want[s.ID]; ok {
			if s.Description != w || s.Kind != planKindOf(s.ID) {
				t.Errorf("%s: %q kind %s, want %q", s.ID, s.Description, s.Kind, w)
			}
		}
	}
}

func planKindOf(id string) string {
	if id == "t" {
		return plan.PlanKindTrigger + ":" + string(TriggerTime)
	}
	return plan.PlanKindCondition
}
