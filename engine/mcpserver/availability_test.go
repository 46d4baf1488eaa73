package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

// weatherAvail is the demo weather station's Home Assistant availability
// topic.
const weatherAvail = "pilothouse-demo/outdoor_weather/availability"

// TestAvailabilityThroughMCP: a device's availability, as its MQTT
// availability topic reports it, is visible to rules: lookup finds the
// entries for "offline", an available trigger fires when the device goes
// offline (and, with for, once it stayed offline), available() reads it,
// the state of an offline device reads null, and a condition (or an if)
// on it is not met with the reason in the trace, in a test run as in a
// firing.
func TestAvailabilityThroughMCP(t *testing.T) {
	s, c := ownerStack(t)
	ctx := context.Background()
	pub, err := mqtt.Dial(ctx, mqtt.Options{Broker: s.mqtt, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	const temp = "outdoor_weather.temperature"
	testutil.Eventually(t, 5*time.Second, "the weather station online", func() bool {
		l, _ := s.devs.Live(temp)
		return l.Available != nil && *l.Available && l.Value != nil
	})

	found := call(t, c, "pilotage_lookup", map[string]any{"verb": "list", "q": "offline"})
	if b, _ := json.Marshal(found); !strings.Contains(string(b), temp) {
		t.Errorf("lookup q=offline does not list %s: %s", temp, b)
	}
	bad, _, _ := testRun(t, c, `{"name": "bad", "triggers": [{"id": "g", "available": "`+temp+`", "to": "offline"}],
	  "steps": [{"id": "n", "set": {"x": 1}}]}`, "")
	if b, _ := json.Marshal(bad); bad["status"] != "validation_error" || !strings.Contains(string(b), "unreachable_value") {
		t.Errorf("to \"offline\": %s", b)
	}

	deployed(t, c, `{"name": "weather-gone", "triggers": [{"id": "gone", "available": "`+temp+`", "to": false}],
	  "steps": [{"id": "n", "set": {"v": "{{ trigger.value }}"}}]}`)
	deployed(t, c, `{"name": "weather-gone-held", "triggers": [{"id": "gone", "available": "`+temp+`", "to": false, "for": "1s"}],
	  "steps": [{"id": "n", "set": {"v": "{{ trigger.value }}"}}]}`)
	const cold = `{"name": "cold-press", "mode": "parallel", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "conditions": [{"id": "cold", "expr": "state('` + temp + `') > -100"}],
	  "steps": [{"id": "n", "set": {"v": 1}}]}`
	deployed(t, c, cold)

	if err := pub.Publish(ctx, weatherAvail, []byte("offline"), 1, true); err != nil {
		t.Fatal(err)
	}
	for _, rule := range []string{"weather-gone", "weather-gone-held"} {
		testutil.Eventually(t, 5*time.Second, rule+" fires", func() bool { return len(firings(t, s, rule)) > 0 })
		if env := firings(t, s, rule)[0].Envelope; !strings.Contains(string(env), temp+"'s device went offline") {
			t.Errorf("%s: %s", rule, env)
		}
	}

	read := call(t, c, "pilotage_execute", map[string]any{"test_run": true, "input": map[string]any{}, "program": prog(t, `{"name": "read",
	  "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "n", "set": {"up": "{{ available('`+temp+`') }}", "t": "{{ state('`+temp+`') }}"}}]}`)})
	if b, _ := json.Marshal(read["output"]); !strings.Contains(string(b), `"vars":{"t":null,"up":false}`) {
		t.Errorf("available() and state() of an offline device: %s", b)
	}
	oc, steps, _ := testRun(t, c, cold, "")
	if oc["status"] != "conditions_not_met" || !strings.Contains(steps["cold"]["outcome"].(map[string]any)["error"].(string), temp+" is unavailable") {
		t.Errorf("test run of a condition on an offline device: %v %v", oc, steps["cold"])
	}
	_, steps, _ = testRun(t, c, `{"name": "if-cold", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "check", "if": "state('`+temp+`') > -100", "then": [{"id": "n", "set": {"v": 1}}]}]}`, "")
	if b, _ := json.Marshal(steps["check"]["decisions"]); !strings.Contains(string(b), `"took":"else"`) || !strings.Contains(string(b), temp+" is unavailable") {
		t.Errorf("an if on an offline device's state: %s", b)
	}
	if err := s.sim.Press(ctx, "toggle"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "cold-press fires", func() bool { return len(firings(t, s, "cold-press")) > 0 })
	if env := string(firings(t, s, "cold-press")[0].Envelope); !strings.Contains(env, `"status":"conditions_not_met"`) || !strings.Contains(env, temp+" is unavailable") {
		t.Errorf("firing of a condition on an offline device: %s", env)
	}
}

// firings lists a rule's stored firings, newest first.
func firings(t *testing.T, s *httpStack, rule string) []storage.Run {
	t.Helper()
	s.eng.Flush()
	runs, err := s.store.ListRuns(context.Background(), storage.RunFilter{Rule: rule, Kind: "firing", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestAvailableHeldTestRunNarration: a test run of a held available
// trigger says the device was offline for the window, not that the
// entity's own value was false.
func TestAvailableHeldTestRunNarration(t *testing.T) {
	_, c := ownerStack(t)
	for _, tc := range []struct{ to, want string }{
		{"false", "hall_motion.occupancy's device was offline from the start and held for 10m"},
		{"true", "hall_motion.occupancy's device was online from the start and held for 10m"},
	} {
		src := `{"name": "hall-gone", "triggers": [{"id": "gone", "available": "hall_motion.occupancy", "to": ` + tc.to + `, "for": "10m"}],
		  "steps": [{"id": "n", "set": {"v": "{{ trigger.value }}"}}]}`
		out := call(t, c, "pilotage_execute", map[string]any{"test_run": true, "program": prog(t, src), "input": map[string]any{}})
		b, _ := json.Marshal(out)
		if status(out) != "success" || !strings.Contains(string(b), tc.want) || strings.Contains(string(b), "occupancy was") {
			t.Errorf("to %s: want %q in the trace: %s", tc.to, tc.want, b)
		}
	}
}

// TestTimelineAvailability: a test run's timeline sets a device's
// availability as its availability topic would, for every entry of the
// device: a device back online before an offline trigger's for has
// passed fires nothing, one that stays offline fires, and a device going
// offline breaks a held state trigger's window (its states read null).
func TestTimelineAvailability(t *testing.T) {
	_, c := ownerStack(t)
	const gone = `{"name": "hall-gone", "triggers": [{"id": "gone", "available": "hall_motion.occupancy", "to": false, "for": "10m"}],
	  "steps": [{"id": "n", "call": "hall_light.set", "args": {"state": "ON"}}]}`
	const held = `{"name": "hall-held", "triggers": [{"id": "held", "state": "hall_motion.occupancy", "to": true, "for": "10m"}],
	  "steps": [{"id": "n", "call": "hall_light.set", "args": {"state": "ON"}}]}`
	for _, tc := range []struct {
		name, src, timeline, status, want string
		calls                             int
	}{
		{"back online", gone, `[{"at": "5m", "available": {"hall_motion.occupancy": true}}]`,
			"not_triggered", "hall_motion.occupancy's device came back online at +5m, before 10m had passed", 0},
		{"back online through another entry", gone, `[{"at": "5m", "available": {"hall_motion.illuminance": true}}]`,
			"not_triggered", "came back online at +5m", 0},
		{"stays offline", gone, `[{"at": "5m", "available": {"hall_light.state": false}}]`,
			"success", "hall_motion.occupancy's device was offline from the start and held for 10m", 1},
		{"back after the window", gone, `[{"at": "11m", "available": {"hall_motion.occupancy": true}}]`,
			"success", "held for 10m", 1},
		{"offline breaks a held state", held, `[{"at": "3m", "available": {"hall_motion.occupancy": false}}]`,
			"not_triggered", "hall_motion.occupancy changed to null at +3m", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oc, _, calls := testRun(t, c, tc.src, `{"timeline": `+tc.timeline+`}`)
			b, _ := json.Marshal(oc)
			if oc["status"] != tc.status || len(calls) != tc.calls {
				t.Fatalf("status %v with %d calls, want %s with %d: %s", oc["status"], len(calls), tc.status, tc.calls, b)
			}
			out := call(t, c, "pilotage_execute", map[string]any{"test_run": true, "program": prog(t, tc.src),
				"input": map[string]any{"scenario": prog(t, `{"timeline": `+tc.timeline+`}`)}})
			if all, _ := json.Marshal(out); !strings.Contains(string(all), tc.want) {
				t.Errorf("want %q in the answer: %s", tc.want, all)
			}
		})
	}
	bad, _, _ := testRun(t, c, gone, `{"timeline": [{"at": "5m", "available": {"hall_motion.occupancy": "online", "nope.x": true}}]}`)
	if b, _ := json.Marshal(bad); bad["status"] != "validation_error" || !strings.Contains(string(b), "/scenario/timeline/0/available/hall_motion.occupancy") {
		t.Errorf("a bad available entry: %s", b)
	}
}
