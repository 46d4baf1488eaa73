package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLoopIndexInWhile: a repeat's while and until read vars.index, as
// validate accepts and the steps guide documents: the iteration about to
// run (while) or just run (until).
func TestLoopIndexInWhile(t *testing.T) {
	_, c := ownerStack(t)
	for _, tc := range []struct{ name, repeat string }{
		{"while", `{"while": "vars.index <= 2", "max": 5}`},
		{"until", `{"until": "vars.index >= 2", "max": 5}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `{"name": "loop", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
			  "steps": [{"id": "loop", "repeat": ` + tc.repeat + `, "do": [{"id": "n", "set": {"i": "{{ vars.index }}"}}]}]}`
			if v := call(t, c, "pilotage_validate", map[string]any{"program": prog(t, src)}); v["valid"] != true {
				t.Fatalf("validate: %v", v)
			}
			oc, steps, _ := testRun(t, c, src, "")
			out, _ := json.Marshal(steps["loop"]["output"])
			if oc["status"] != "success" || string(out) != `{"iterations":2}` {
				t.Errorf("test run: %v, loop output %s", oc, out)
			}
		})
	}
}

// TestTestRunPredictsFiring: a test run ends as the installed rule would:
// a numeric trigger fires only when the value crosses into its range, and
// computed call arguments are checked against the action's input schema.
func TestTestRunPredictsFiring(t *testing.T) {
	_, c := ownerStack(t)
	const below = `{"name": "cool", "triggers": [{"id": "c", "state": "outdoor_weather.temperature", "below": 50}],
	  "steps": [{"id": "n", "set": {"x": 1}}]}`
	const dim = `{"name": "dim", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "set", "call": "hall_light.set", "args": {"state": "ON", "brightness": "{{ trigger.value }}"}}]}`
	for _, tc := range []struct {
		name, src, scenario, status, why string
	}{
		{"40 to 30 stays below 50", below, `{"from": 40, "value": 30}`, "not_triggered", "outdoor_weather.temperature was already inside the trigger's range before (40)"},
		{"60 to 30 crosses below 50", below, `{"from": 60, "value": 30}`, "success", ""},
		{"a computed brightness that is not a number", dim, `{"value": "toggle"}`, "failed", "brightness"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oc, _, _ := testRun(t, c, tc.src, tc.scenario)
			why, _ := oc["error"].(string)
			if oc["status"] != tc.status || !strings.Contains(why, tc.why) {
				t.Errorf("got %v, want %s with %q", oc, tc.status, tc.why)
			}
		})
	}
}

// TestTimelineEqualToLive: a timeline entry before the start that sets
// the value a state has now is still a change at its time: since() reads
// the scenario, not the live history.
func TestTimelineEqualToLive(t *testing.T) {
	s, c := ownerStack(t)
	l, _ := s.devs.Live("front_door.contact")
	now, _ := json.Marshal(l.Value)
	const src = `{"name": "since", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "n", "set": {"s": "{{ round(since('front_door.contact')) }}"}}]}`
	out := call(t, c, "pilotage_execute", map[string]any{"test_run": true, "program": prog(t, src),
		"input": map[string]any{"scenario": prog(t, `{"timeline": [{"at": "-5m", "state": {"front_door.contact": `+string(now)+`}}]}`)}})
	if b, _ := json.Marshal(out["output"]); !strings.Contains(string(b), `"vars":{"s":300}`) {
		t.Errorf("since() after a timeline entry equal to the live value %s: %s", now, b)
	}
}

// TestUnreachableComparison: comparing a state with a value its schema
// never reports is unreachable_value, as the same mistake in a trigger's
// to is.
func TestUnreachableComparison(t *testing.T) {
	_, c := ownerStack(t)
	for _, tc := range []struct {
		expr string
		bad  bool
	}{
		{`state('hall_light.state') == 'on'`, true},
		{`'on' != state('hall_light.state')`, true},
		{`state('front_door.contact') == 'open'`, true},
		{`state('hall_light.state') == 'ON'`, false},
		{`state('front_door.contact') == false`, false},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			src := `{"name": "cmp", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
			  "conditions": [{"id": "c", "expr": "` + tc.expr + `"}], "steps": [{"id": "n", "set": {"x": 1}}]}`
			v := call(t, c, "pilotage_validate", map[string]any{"program": prog(t, src)})
			b, _ := json.Marshal(v["diagnostics"])
			if got := strings.Contains(string(b), `"code":"unreachable_value"`); got != tc.bad || (tc.bad && v["valid"] != false) {
				t.Errorf("valid %v, diagnostics %s; want unreachable_value %v", v["valid"], b, tc.bad)
			}
		})
	}
}
