package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// TestZ2MGroupThroughMCP: Zigbee2MQTT lists two lamps, a motion sensor
// and two locks, and its groups: the lamps, the locks, a lock with a
// lamp. An assistant finds the lamps' group over MCP as one light, deploys
// a rule that turns it on when the hall sees motion, and the command goes
// to the group's topic; the locks' group is security (a rule calling it
// waits for a person's approval); the lock with the lamp is listed
// without actions, saying why, at its lock's risk.
func TestZ2MGroupThroughMCP(t *testing.T) {
	h := testhouse.RunHouse(t, testhouse.Options{NoDemo: true})
	ctx := context.Background()
	var mu sync.Mutex
	var sets []string
	if err := h.Conn.Subscribe("zigbee2mqtt/living room lights/set", 1, func(m mqtt.Message) {
		mu.Lock()
		sets = append(sets, string(m.Payload))
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	publish := func(topic, payload string, retain bool) {
		if err := h.Conn.Publish(ctx, topic, []byte(payload), 1, retain); err != nil {
			t.Fatal(err)
		}
	}
	publish("zigbee2mqtt/bridge/devices", testutil.Z2MBridge(testutil.Z2MLight("0xa1", "lamp one"), testutil.Z2MLight("0xa2", "lamp two"),
		testutil.Z2MMotion("0xa3", "hall motion"), testutil.Z2MLock("0xa4", "front lock"), testutil.Z2MLock("0xa5", "back lock")), true)
	publish("zigbee2mqtt/bridge/groups", testutil.Z2MGroups(testutil.Z2MGroup(1, "living room lights", "0xa1", "0xa2"),
		testutil.Z2MGroup(2, "locks", "0xa4", "0xa5"), testutil.Z2MGroup(3, "door and lamp", "0xa4", "0xa1")), true)
	testutil.Eventually(t, 10*time.Second, "the groups in the catalog", func() bool {
		_, ok := h.Devices.Snapshot().Get("locks.set")
		return ok
	})
	c := h.InProcess()

	cases := []struct {
		id, risk string
		says     []string
	}{
		{"living_room_lights.set", "control", []string{"zigbee2mqtt/living room lights/set"}},
		{"living_room_lights", "read", []string{`"type:light"`, `"group"`, "lamp one, lamp two"}},
		{"locks.set", "security", []string{"zigbee2mqtt/locks/set"}},
		{"door_and_lamp", "read", []string{"It has no actions", "A command to it is of risk security: its member front lock has the action front_lock.set"}},
	}
	for _, tc := range cases {
		out := call(t, c, "pilotage_lookup", map[string]any{"verb": "get", "id": tc.id})
		b, _ := json.Marshal(out)
		if !strings.Contains(string(b), `"risk":"`+tc.risk+`"`) {
			t.Errorf("%s: want risk %s: %s", tc.id, tc.risk, b)
		}
		for _, s := range tc.says {
			if !strings.Contains(string(b), s) {
				t.Errorf("%s: want %q in %s", tc.id, s, b)
			}
		}
	}

	deployed(t, c, `{"name": "hall-lights", "triggers": [{"id": "seen", "state": "hall_motion.occupancy", "to": true}],
	  "steps": [{"id": "on", "call": "living_room_lights.set", "args": {"state": "ON", "brightness": 200}}]}`)
	publish("zigbee2mqtt/hall motion", `{"occupancy":true,"illuminance":3}`, false)
	testutil.Eventually(t, 10*time.Second, "the group's command", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(sets) > 0
	})
	mu.Lock()
	if len(sets) != 1 || sets[0] != `{"brightness":200,"state":"ON"}` {
		t.Errorf("the group got %q, want one {\"brightness\":200,\"state\":\"ON\"}", sets)
	}
	mu.Unlock()

	out := call(t, c, "pilotage_execute", map[string]any{"program": prog(t, `{"name": "lock-all", "triggers": [{"id": "t", "at": "23:00"}],
	  "steps": [{"id": "lock", "call": "locks.set", "args": {"state": "LOCK"}}]}`)})
	if oc, _ := out["outcome"].(map[string]any); oc["status"] != "approval_pending" {
		t.Errorf("a rule locking the locks' group: want approval_pending, got %v", out)
	}
}
