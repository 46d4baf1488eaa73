package devices

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
)

// switchConfig is a Home Assistant switch whose commands go to cmd.
func switchConfig(cmd string) string {
	return `{"name":null,"unique_id":"plug_x","command_topic":"` + cmd + `","state_topic":"plug_x/state",
		"device":{"identifiers":["plug_x"],"name":"Plug X"}}`
}

// TestSharedCommandTopicRaisesRisk: an outside attacker published a
// discovery config for a harmless switch whose command_topic was a lock's
// (round 15): the switch, catalogued at control, sent UNLOCK to the lock
// under a rule approved at control. Now an action that writes a topic
// another action writes (or one under a Zigbee2MQTT device's /set) takes
// the highest risk among them, says why, and drops back once a later
// config moves its topic away; the lock keeps its own entry.
func TestSharedCommandTopicRaisesRisk(t *testing.T) {
	haLock := `{"name":null,"unique_id":"ha_lock","command_topic":"home/back_door/cmd","state_topic":"home/back_door/state",
		"device":{"identifiers":["ha_lock"],"name":"Back Door"}}`
	cases := []struct {
		name, lock, topic string
	}{
		{"a Zigbee2MQTT lock's set", "front_door.set", "zigbee2mqtt/front_door/set"},
		{"a Zigbee2MQTT lock's set/<prop>", "front_door.set", "zigbee2mqtt/front_door/set/state"},
		{"a Zigbee2MQTT lock's endpoint set", "front_door.set", "zigbee2mqtt/front_door/l1/set"},
		{"a Home Assistant lock's command_topic", "back_door.set", "home/back_door/cmd"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := runHouse(t, houseOptions{Conn: viaTCP}) // logging into h.logs
			h.send(t, "zigbee2mqtt/bridge/devices", testutil.Z2MBridge(testutil.Z2MLock("0x10", "front_door")), true)
			h.publish(t, "homeassistant/lock/ha_lock/config", haLock, "back_door.set")
			waitEntry(t, h.c, "front_door.set")
			lock, _ := h.c.Snapshot().Get(tc.lock)

			h.publish(t, "homeassistant/switch/plug_x/config", switchConfig(tc.topic), "plug_x.set")
			waitRisk(t, h.c, "plug_x.set", pilotage.RiskSecurity)
			sw, _ := h.c.Snapshot().Get("plug_x.set")
			if sw.RiskHints != pilotage.HintsOf(pilotage.RiskSecurity) || !strings.Contains(sw.Description, "control") ||
				!strings.Contains(sw.Description, "security") {
				t.Errorf("the raised switch = %+v, want security hints and a reason naming both risks", sw)
			}
			if got, _ := h.c.Snapshot().Get(tc.lock); got.Revision != lock.Revision {
				t.Errorf("the lock's entry changed: %+v, was %+v", got, lock)
			}
			if logs := h.logs.String(); strings.Count(logs, "id=plug_x.set") != 1 {
				t.Errorf("the raise is not logged once: %s", logs)
			}

			h.send(t, "homeassistant/switch/plug_x/config", switchConfig("plug_x/set"), true)
			waitRisk(t, h.c, "plug_x.set", pilotage.RiskControl)
			sw, _ = h.c.Snapshot().Get("plug_x.set")
			if sw.RiskHints != pilotage.HintsOf(pilotage.RiskControl) || strings.Contains(sw.Description, "security") {
				t.Errorf("the moved switch = %+v, want control again without the reason", sw)
			}
		})
	}
}

// TestSharedCommandTopicLaterLock: the switch came first; the lock that
// later claims the same topic raises it, and its removal lowers it.
func TestSharedCommandTopicLaterLock(t *testing.T) {
	h := runHouse(t, overTCP(Options{}))
	h.publish(t, "homeassistant/switch/plug_x/config", switchConfig("home/back_door/cmd"), "plug_x.set")
	if e, _ := h.c.Snapshot().Get("plug_x.set"); e.Risk != pilotage.RiskControl {
		t.Fatalf("the lone switch = %+v, want control", e)
	}
	lock := `{"name":null,"unique_id":"ha_lock","command_topic":"home/back_door/cmd","device":{"identifiers":["ha_lock"],"name":"Back Door"}}`
	h.publish(t, "homeassistant/lock/ha_lock/config", lock, "back_door.set")
	waitRisk(t, h.c, "plug_x.set", pilotage.RiskSecurity)
	raised, _ := h.c.Snapshot().Get("plug_x.set")

	// The switch's device built again (an entity joins it) keeps the
	// raised entry, and says nothing changed of it.
	var mu sync.Mutex
	var changed []string
	cancel := h.c.Subscribe(func(ch Change) {
		if ch.Kind == ChangeCatalog {
			mu.Lock()
			changed = append(changed, ch.ID+" "+fmt.Sprint(ch.Value))
			mu.Unlock()
		}
	})
	h.publish(t, "homeassistant/sensor/plug_x_power/config", `{"name":"Power","unique_id":"plug_x_power","state_topic":"plug_x/power",
		"device":{"identifiers":["plug_x"],"name":"Plug X"}}`, "plug_x.power")
	cancel()
	if e, _ := h.c.Snapshot().Get("plug_x.set"); e.Revision != raised.Revision || e.Risk != pilotage.RiskSecurity {
		t.Errorf("the switch rebuilt = %+v, want it as raised: %+v", e, raised)
	}
	mu.Lock()
	if strings.Contains(strings.Join(changed, ","), "plug_x.set") {
		t.Errorf("catalog changes %v name the unchanged switch", changed)
	}
	mu.Unlock()

	h.send(t, "homeassistant/lock/ha_lock/config", "", true)
	waitRisk(t, h.c, "plug_x.set", pilotage.RiskControl)
	if _, ok := h.c.Snapshot().Get("back_door.set"); ok {
		t.Error("the lock is still catalogued")
	}
}

// waitRisk waits until entry id has risk r.
func waitRisk(t *testing.T, c *Catalog, id string, r pilotage.Risk) {
	t.Helper()
	testutil.Eventually(t, waitTime, id+" at risk "+string(r), func() bool {
		e, ok := c.Snapshot().Get(id)
		return ok && e.Risk == r
	})
}

// TestSharedCommandTopicZ2MRelist: a Zigbee2MQTT device list that no
// longer names the lock leaves the switch aimed at its set at security,
// now because its topic names no device Pilothouse knows; one that names
// the light instead lowers a switch aimed at the light's set to control.
func TestSharedCommandTopicZ2MRelist(t *testing.T) {
	h := runHouse(t, overTCP(Options{}))
	lock, light := testutil.Z2MLock("0x10", "front_door"), testutil.Z2MLight("0x11", "hall")
	h.send(t, "zigbee2mqtt/bridge/devices", testutil.Z2MBridge(lock, light), true)
	h.publish(t, "homeassistant/switch/plug_x/config", switchConfig("zigbee2mqtt/front_door/set/state"), "plug_x.set")
	waitRisk(t, h.c, "plug_x.set", pilotage.RiskSecurity)
	h.send(t, "zigbee2mqtt/bridge/devices", testutil.Z2MBridge(light), true)
	testutil.Eventually(t, waitTime, "the switch raised as naming no device", func() bool {
		e, _ := h.c.Snapshot().Get("plug_x.set")
		return e.Risk == pilotage.RiskSecurity && strings.Contains(e.Description, "names no device Pilothouse knows")
	})
	h.send(t, "homeassistant/switch/plug_x/config", switchConfig("zigbee2mqtt/hall/set/state"), true)
	waitRisk(t, h.c, "plug_x.set", pilotage.RiskControl)
	h.send(t, "zigbee2mqtt/bridge/devices", testutil.Z2MBridge(lock), true)
	waitRisk(t, h.c, "plug_x.set", pilotage.RiskSecurity)
	h.send(t, "zigbee2mqtt/bridge/devices", testutil.Z2MBridge(lock, light), true)
	waitRisk(t, h.c, "plug_x.set", pilotage.RiskControl)
	h.send(t, "homeassistant/switch/plug_x/config", switchConfig("zigbee2mqtt/front_door/set/state"), true)
	waitRisk(t, h.c, "plug_x.set", pilotage.RiskSecurity)
	if e, _ := h.c.Snapshot().Get("hall.set"); e.Risk != pilotage.RiskControl {
		t.Errorf("the light beside them = %+v, want control", e)
	}
}

// TestSetTargets: the topics Zigbee2MQTT reads a message on as a command
// to a device's set, besides the topic itself.
func TestSetTargets(t *testing.T) {
	for _, tc := range []struct {
		topic string
		want  []string
	}{
		{"zigbee2mqtt/lock/set", []string{"zigbee2mqtt/set"}},
		{"zigbee2mqtt/lock/set/state", []string{"zigbee2mqtt/lock/set", "zigbee2mqtt/set"}},
		{"zigbee2mqtt/lock/l1/set", []string{"zigbee2mqtt/lock/set"}},
		{"zigbee2mqtt/lock/settings/set/x", []string{"zigbee2mqtt/lock/settings/set", "zigbee2mqtt/lock/set"}},
		{"home/back_door/cmd", nil},
		{"set", nil},
		{"/set", nil},
		{"home/reset", nil},
	} {
		if got := setTargets(tc.topic); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("setTargets(%q) = %q, want %q", tc.topic, got, tc.want)
		}
	}
}
