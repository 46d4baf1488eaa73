package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"

	"encoding/json"
	"strings"
	"testing"
	"time"
)

// honestRun is the test-run path the engine takes, in Berlin at the
// demo's example location: parse the scenario, fire, run.
func honestRun(t *testing.T, comp *Compiled, scenario string) (*RunResult, *SimWorld) {
	t.Helper()
	var in map[string]any
	if err := json.Unmarshal([]byte(`{"scenario": `+scenario+`}`), &in); err != nil {
		t.Fatal(err)
	}
	_, sc, diags := ParseScenario(in)
	if diags = append(diags, CheckScenario(comp, sc)...); len(diags) > 0 {
		t.Fatalf("scenario: %+v", diags)
	}
	w := NewSimWorld(func(id string) (any, bool) { v, ok := honestBase[id]; return v, ok }, itStart, sc, nil)
	w.SetPlace(Place{Zone: berlin(t), Location: &Location{Latitude: 51.4779, Longitude: -0.0015}})
	fire, err := FireFor(comp, sc, w)
	if err != nil {
		t.Fatal(err)
	}
	return itRun(t, comp, w, RunInput{Trigger: fire, Cache: itCache, Throttle: w.Throttle(comp.Throttle())}), w
}

var honestBase = map[string]any{"front_door.contact": true, "garage_door.position": 100.0, "hall_motion.occupancy": false,
	"hall_light.state": "OFF", "hall_motion.illuminance": 10.0}

func callTimes(w *SimWorld) []string {
	var out []string
	for _, c := range w.Calls() {
		out = append(out, c.At.Format("15:04:05")+" "+c.ID)
	}
	return out
}

// TestHeldTriggers: a trigger's for holds on the virtual clock, through
// the timeline.
func TestHeldTriggers(t *testing.T) {
	comp := validDemo(t, `{"name": "door", "triggers": [{"id": "open", "state": "front_door.contact", "to": false, "for": "5m"}],
		"steps": [{"id": "read", "set": {"open_for": "{{ since('front_door.contact') }}", "at": "{{ trigger.time }}"}},
		          {"id": "warn", "call": "notify.phone", "args": {"message": "door open"}}]}`, false)
	for _, c := range []struct {
		name, scenario, status, at string
		openFor                    float64
	}{
		{"held", `{"now": "2026-01-15T22:00:00+01:00"}`, StatusSuccess, "22:05:00", 300},
		{"closed too soon", `{"now": "2026-01-15T22:00:00+01:00", "timeline": [{"at": "3m", "state": {"front_door.contact": true}}]}`, StatusNotTriggered, "", 0},
		{"reopened and held", `{"now": "2026-01-15T22:00:00+01:00", "timeline": [{"at": "3m", "state": {"front_door.contact": true}},
			{"at": "4m", "state": {"front_door.contact": false}}]}`, StatusSuccess, "22:09:00", 300},
		// The scenario fires it at the start though the door was open
		// already: since() still counts from the real change.
		{"open for an hour already", `{"now": "2026-01-15T22:00:00+01:00", "value": false,
			"timeline": [{"at": "-1h", "state": {"front_door.contact": false}}]}`, StatusSuccess, "22:05:00", 3900},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, w := honestRun(t, comp, c.scenario)
			if res.Outcome.Status != c.status {
				t.Fatalf("%+v", res.Outcome)
			}
			open := itStep(t, res, "open")
			if c.status == StatusNotTriggered {
				if !strings.Contains(res.Outcome.Error, "front_door.contact changed to true at +3m, before 5m had passed") || open.Outcome.Status != StepNotMet || len(w.Calls()) != 0 {
					t.Errorf("%+v %+v", res.Outcome, open.Outcome)
				}
				return
			}
			if got := callTimes(w); len(got) != 1 || got[0] != c.at+" notify.phone" {
				t.Errorf("calls %v, want one at %s", got, c.at)
			}
			in := open.Input.(map[string]any)
			if in["for"] != "5m" || !strings.HasSuffix(in["fired_at"].(string), c.at+"+01:00") {
				t.Errorf("trigger input %v", in)
			}
			if res.Vars["open_for"] != c.openFor {
				t.Errorf("since %v, want %v", res.Vars["open_for"], c.openFor)
			}
		})
	}
}

// TestScheduleTriggers: a schedule fires in a test run only at a time it
// fires; the trigger's entry lists the next firings.
func TestScheduleTriggers(t *testing.T) {
	comp := validDemo(t, `{"name": "wake", "triggers": [{"id": "weekday", "cron": "0 30 6 * * 1-5"}, {"id": "night", "at": "23:00"},
		{"id": "dusk", "sun": "sunset", "offset": "15m"}],
		"steps": [{"id": "heat", "call": "living_thermostat.set", "args": {"occupied_heating_setpoint": 21}}]}`, true)
	for _, c := range []struct {
		name, scenario, status, msg string
	}{
		{"weekday cron on a Saturday", `{"trigger": "weekday", "now": "2026-01-17T06:30:00+01:00"}`, StatusNotTriggered,
			"cron 0 30 6 * * 1-5 does not fire at Sat 2026-01-17 06:30:00 (Europe/Berlin, +01:00); it fires next at 2026-01-19T06:30:00+01:00, 2026-01-20T06:30:00+01:00, 2026-01-21T06:30:00+01:00"},
		{"weekday cron on a Monday", `{"trigger": "weekday", "now": "2026-01-19T06:30:20+01:00"}`, StatusSuccess, ""},
		{"time of day, given in UTC", `{"trigger": "night", "now": "2026-01-15T22:00:00Z"}`, StatusSuccess, ""},
		{"time of day, wrong hour", `{"trigger": "night", "now": "2026-01-15T22:00:00+01:00"}`, StatusNotTriggered, "every day at 23:00 does not fire"},
		{"no now: the next firing", `{"trigger": "weekday"}`, StatusSuccess, ""},
		{"sun at noon", `{"trigger": "dusk", "now": "2026-01-15T12:00:00+01:00"}`, StatusNotTriggered, "sunset +15m does not fire at Thu 2026-01-15 12:00:00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, w := honestRun(t, comp, c.scenario)
			if res.Outcome.Status != c.status || !strings.Contains(res.Outcome.Error, c.msg) {
				t.Fatalf("%+v, want %s %q", res.Outcome, c.status, c.msg)
			}
			id := itStep(t, res, "triggers").Decisions[0].Took
			in := itStep(t, res, id).Input.(map[string]any)
			if in["time_zone"] != "Europe/Berlin" || len(in["next"].([]string)) != 3 {
				t.Errorf("trigger input %v", in)
			}
			if c.status == StatusSuccess && len(w.Calls()) != 1 {
				t.Errorf("calls %v", w.Calls())
			}
		})
	}
	// Sunset +15m on 15 January 2026 at the example location, to the
	// minute: fires.
	res, _ := honestRun(t, comp, `{"trigger": "dusk", "now": "2026-01-15T16:30:00+01:00"}`)
	in := itStep(t, res, "dusk").Input.(map[string]any)
	next := in["next"].([]string)[0]
	at, _ := time.Parse(time.RFC3339, next)
	res, _ = honestRun(t, comp, `{"trigger": "dusk", "now": "`+at.Add(30*time.Second).Format(time.RFC3339)+`"}`)
	if res.Outcome.Status != StatusSuccess {
		t.Errorf("at sunset +15m: %+v", res.Outcome)
	}
}

// TestWaitsFromTheTimeline: delays pass through the timeline and waits
// resolve from it; a wait the timeline does not satisfy times out; the
// garage program that used to close 96 times closes once.
func TestWaitsFromTheTimeline(t *testing.T) {
	comp := validDemo(t, `{"name": "garage", "triggers": [{"id": "press", "event": "bedroom_remote.action", "value": "off_hold"}],
		"steps": [{"id": "close", "repeat": {"until": "state('garage_door.position') == 0", "max": 100}, "do": [
		    {"id": "cmd", "call": "garage_door.set", "args": {"state": "CLOSE"}},
		    {"id": "closed", "wait": {"state": "garage_door.position", "to": 0}, "timeout": "30s", "continue_on_timeout": true}]},
		  {"id": "pause", "delay": "1m"},
		  {"id": "tell", "call": "notify.phone", "args": {"message": "closed after {{ round(since('garage_door.position') ?? -1) }} s"}}]}`, false)
	res, w := honestRun(t, comp, `{"now": "2026-01-15T22:00:00+01:00", "timeline": [{"at": "20s", "state": {"garage_door.position": 40}}, {"at": "45s", "state": {"garage_door.position": 0}}]}`)
	if res.Outcome.Status != StatusSuccess || strings.Join(callTimes(w), ", ") != "22:00:00 garage_door.set, 22:00:30 garage_door.set, 22:01:45 notify.phone" {
		t.Fatalf("%+v calls %v", res.Outcome, callTimes(w))
	}
	if msg := w.Calls()[2].Args["message"]; msg != "closed after 60 s" {
		t.Errorf("message %v", msg)
	}
	if o := itStep(t, res, "closed#1").Outcome; o.Status != core.StepTimeout {
		t.Errorf("first wait: %+v", o)
	}
	// Without a timeline the garage never closes: every wait times out
	// and the loop ends at its max, honestly.
	res, w = honestRun(t, comp, `{}`)
	if res.Outcome.Status != StatusSuccess || len(w.Calls()) != 101 || itStep(t, res, "closed#100").Outcome.Status != core.StepTimeout {
		t.Errorf("no timeline: %+v, %d calls", res.Outcome, len(w.Calls()))
	}
}

// TestAssumedWaits: scenario.waits still forces a result, but the entry
// and the run say it was assumed.
func TestAssumedWaits(t *testing.T) {
	comp := validDemo(t, `{"name": "lock", "triggers": [{"id": "night", "event": "bedroom_remote.action"}],
		"steps": [{"id": "lock", "call": "front_lock.set", "args": {"state": "LOCK"}},
		  {"id": "engaged", "wait": {"state": "front_lock.lock_state", "to": "locked"}, "timeout": "1m"}]}`, false)
	res, _ := honestRun(t, comp, `{"waits": {"engaged": "met"}}`)
	e := itStep(t, res, "engaged")
	if res.Outcome.Status != core.StatusAssumed || !res.Outcome.OK || e.Outcome.Status != core.StepAssumed || e.Output.(map[string]any)["assumed"] != "scenario.waits: met" {
		t.Fatalf("%+v %+v %v", res.Outcome, e.Outcome, e.Output)
	}
	res, _ = honestRun(t, comp, `{"timeline": [{"at": "5s", "state": {"front_lock.lock_state": "locked"}}]}`)
	if res.Outcome.Status != StatusSuccess {
		t.Errorf("simulated: %+v", res.Outcome)
	}
}

// TestScenarioValueMustPass: a scenario value the trigger would not fire
// on is reported, not run.
func TestScenarioValueMustPass(t *testing.T) {
	comp := validDemo(t, `{"name": "v", "throttle": "1h", "triggers": [{"id": "press", "event": "bedroom_remote.action", "value": ["on_double", "on_triple"]},
		{"id": "dark", "state": "hall_motion.illuminance", "below": 20}],
		"steps": [{"id": "s", "call": "hall_light.set", "args": {"state": "ON"}}]}`, false)
	for scenario, want := range map[string]string{
		`{"value": "on"}`:                             StatusNotTriggered,
		`{"value": "on_triple"}`:                      StatusSuccess,
		`{"trigger": "dark", "value": 25}`:            StatusNotTriggered,
		`{"trigger": "dark", "value": 5, "from": 30}`: StatusSuccess,
		// The current illuminance (10) is already below 20: no crossing.
		`{"trigger": "dark", "value": 5}`:      StatusNotTriggered,
		`{"last_run": "-20m"}`:                 StatusThrottled,
		`{"last_run": "-61m"}`:                 StatusSuccess,
		`{"last_run": "2026-01-15T21:30:00Z"}`: StatusThrottled,
	} {
		if res, _ := honestRun(t, comp, scenario); res.Outcome.Status != want {
			t.Errorf("%s: %+v, want %s", scenario, res.Outcome, want)
		}
	}
}

func TestParseTimeline(t *testing.T) {
	_, sc, diags := ParseScenario(simInput(t, `{"scenario": {"timeline": [{"at": "2m", "state": {"a.b": 1}}, {"at": "-1h", "event": {"r.action": "on"}}], "last_run": "-5m"}}`))
	if len(diags) > 0 || len(sc.Timeline) != 2 || sc.Timeline[0].At != -time.Hour || sc.Timeline[0].Index != 1 || sc.LastRun.Offset != -5*time.Minute {
		t.Fatalf("%+v %+v", sc, diags)
	}
	for input, path := range map[string]string{
		`{"scenario": {"timeline": {"at": "2m"}}}`:                        "/scenario/timeline",
		`{"scenario": {"timeline": [{"state": {"a.b": 1}}]}}`:             "/scenario/timeline/0",
		`{"scenario": {"timeline": [{"at": "soon", "state": {"a": 1}}]}}`: "/scenario/timeline/0/at",
		`{"scenario": {"timeline": [{"at": "1m"}]}}`:                      "/scenario/timeline/0",
		`{"scenario": {"timeline": [{"at": "1m", "state": 3}]}}`:          "/scenario/timeline/0/state",
		`{"scenario": {"timeline": [{"at": "1m", "when": 3}]}}`:           "/scenario/timeline/0/when",
		`{"scenario": {"last_run": "yesterday"}}`:                         "/scenario/last_run",
	} {
		_, _, diags := ParseScenario(simInput(t, input))
		if len(diags) != 1 || diags[0].Path != path {
			t.Errorf("%s: %+v, want one at %s", input, diags, path)
		}
	}
}
