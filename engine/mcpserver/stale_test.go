package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// publisher is a client publishing as the bus on s's broker.
func publisher(t *testing.T, s *httpStack) *mqtt.Client {
	t.Helper()
	pub, err := mqtt.Dial(context.Background(), mqtt.Options{Broker: s.mqtt, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	return pub
}

func publish(t *testing.T, pub *mqtt.Client, topic, payload string, retain bool) {
	t.Helper()
	if err := pub.Publish(context.Background(), topic, []byte(payload), 1, retain); err != nil {
		t.Fatal(err)
	}
}

// availableOf is what reads see of id's device: nil while nothing said.
func availableOf(s *httpStack, id string) (avail *bool, value any, known bool) {
	l, ok := s.devs.Live(id)
	return l.Available, l.Value, ok
}

// TestExpireAfterThroughMCP: a Home Assistant sensor with expire_after
// reads offline until its first message, online after it, and offline
// again expire_after after its last one: an available trigger fires
// ("went offline"), a condition on its state is not met ("is
// unavailable") in a firing, and the next message brings it back.
func TestExpireAfterThroughMCP(t *testing.T) {
	for _, tc := range []struct {
		comp, extra, payload, cond string
		value                      any
	}{
		{"binary_sensor", `"payload_on":"ON","payload_off":"OFF"`, "ON", "== true", true},
		{"sensor", `"unit_of_measurement":"W"`, "12", "> 0", 12.0},
	} {
		t.Run(tc.comp, func(t *testing.T) {
			s, c := ownerStack(t)
			pub := publisher(t, s)
			const id = "stale_porch.state"
			publish(t, pub, "homeassistant/"+tc.comp+"/stale_porch/config", `{"name":null,"unique_id":"stale_porch_1","state_topic":"stale/porch",
			  "expire_after":1,"device":{"identifiers":"stale_porch","name":"Stale Porch"},`+tc.extra+`}`, true)
			testutil.Eventually(t, 5*time.Second, id+" discovered, offline until it reports", func() bool {
				a, _, ok := availableOf(s, id)
				return ok && a != nil && !*a
			})
			deployed(t, c, `{"name": "porch-stale", "triggers": [{"id": "gone", "available": "`+id+`", "to": false}],
			  "steps": [{"id": "n", "set": {"v": "{{ trigger.value }}"}}]}`)
			deployed(t, c, `{"name": "porch-press", "mode": "parallel", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
			  "conditions": [{"id": "fresh", "expr": "state('`+id+`') `+tc.cond+`"}], "steps": [{"id": "n", "set": {"v": 1}}]}`)

			publish(t, pub, "stale/porch", tc.payload, false)
			testutil.Eventually(t, 3*time.Second, id+" reported", func() bool {
				a, v, _ := availableOf(s, id)
				return (a == nil || *a) && v == tc.value
			})
			testutil.Eventually(t, 5*time.Second, "porch-stale fires once expire_after ran out", func() bool { return len(firings(t, s, "porch-stale")) > 0 })
			if env := string(firings(t, s, "porch-stale")[0].Envelope); !strings.Contains(env, id+"'s device went offline") {
				t.Errorf("porch-stale: %s", env)
			}
			if a, _, _ := availableOf(s, id); a == nil || *a {
				t.Fatalf("%s after expire_after: available %v", id, a)
			}
			if err := s.sim.Press(context.Background(), "toggle"); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, 5*time.Second, "porch-press fires", func() bool { return len(firings(t, s, "porch-press")) > 0 })
			if env := string(firings(t, s, "porch-press")[0].Envelope); !strings.Contains(env, `"status":"conditions_not_met"`) || !strings.Contains(env, id+" is unavailable") {
				t.Errorf("a condition on an expired state: %s", env)
			}

			publish(t, pub, "stale/porch", tc.payload, false)
			testutil.Eventually(t, 3*time.Second, id+" back", func() bool {
				a, _, _ := availableOf(s, id)
				return a != nil && *a
			})
		})
	}
}

// TestNeverReportedAvailability: a Home Assistant entity whose
// availability topics never reported reads unavailable (its state
// null, available() false) until they say online, as Home Assistant
// shows it; in mode all, until every one did. A retained online read
// at the start counts, and the demo devices come up available.
func TestNeverReportedAvailability(t *testing.T) {
	for _, tc := range []struct {
		name, avail string
		reports     [][2]string // topic, payload; the last makes it available
	}{
		{"availability_topic", `"availability_topic":"nr/avail"`, [][2]string{{"nr/avail", "online"}}},
		{"list, mode all", `"availability_mode":"all","availability":[{"topic":"nr/bridge"},{"topic":"nr/avail"}]`,
			[][2]string{{"nr/bridge", "online"}, {"nr/avail", "online"}}},
		{"list, mode any", `"availability_mode":"any","availability":[{"topic":"nr/bridge"},{"topic":"nr/avail"}]`,
			[][2]string{{"nr/avail", "online"}}},
		// Retained before the discovery, as a start reads it: it counts.
		{"retained before discovery", `"availability_topic":"nr/avail"`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, c := ownerStack(t)
			pub := publisher(t, s)
			const id = "never_reported.state"
			for _, dev := range []string{"hall_light.state", "outdoor_weather.temperature"} {
				if a, _, _ := availableOf(s, dev); a == nil || !*a {
					t.Errorf("demo %s: available %v", dev, a)
				}
			}
			if tc.reports == nil {
				publish(t, pub, "nr/avail", "online", true)
			}
			publish(t, pub, "homeassistant/binary_sensor/never_reported/config", `{"name":null,"unique_id":"nr_1","state_topic":"nr/state",
			  "device":{"identifiers":"nr","name":"Never Reported"},`+tc.avail+`}`, true)
			publish(t, pub, "nr/state", "ON", true)
			if tc.reports == nil {
				testutil.Eventually(t, 5*time.Second, id+" read, available", func() bool {
					a, v, _ := availableOf(s, id)
					return v == true && a != nil && *a
				})
				return
			}
			testutil.Eventually(t, 5*time.Second, id+" read, unavailable", func() bool {
				a, v, ok := availableOf(s, id)
				return ok && v == true && a != nil && !*a
			})
			read := `{"name": "read", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
			  "steps": [{"id": "n", "set": {"up": "{{ available('` + id + `') }}", "v": "{{ state('` + id + `') }}"}}]}`
			out := call(t, c, "pilotage_execute", map[string]any{"test_run": true, "input": map[string]any{}, "program": prog(t, read)})
			if b, _ := json.Marshal(out["output"]); !strings.Contains(string(b), `"vars":{"up":false,"v":null}`) {
				t.Errorf("available() and state() before any availability: %s", b)
			}
			for i, r := range tc.reports {
				publish(t, pub, r[0], r[1], true)
				if i < len(tc.reports)-1 {
					testutil.Eventually(t, 3*time.Second, r[0]+" read", func() bool {
						l, _ := s.devs.Live(id)
						return l.Available != nil && !*l.Available
					})
				}
			}
			testutil.Eventually(t, 3*time.Second, id+" available", func() bool {
				a, _, _ := availableOf(s, id)
				return a != nil && *a
			})
		})
	}
}
