package devices

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
)

// groupHouse is the house of the group tests: two lamps, a lock, a plug
// and a water valve listed by Zigbee2MQTT, and its groups: the lamps, the
// lock with a lamp, the plug with the valve, a member Zigbee2MQTT does
// not list, and an empty group.
func groupHouse(t *testing.T) *house {
	t.Helper()
	h := runHouse(t, overTCP(Options{}))
	h.send(t, "zigbee2mqtt/bridge/devices", testutil.Z2MBridge(
		testutil.Z2MLight("0xa1", "lamp one"), testutil.Z2MLight("0xa2", "lamp two"), testutil.Z2MLock("0xa3", "frontlock"),
		testutil.Z2MPlug("0xa4", "plug"), testutil.Z2MValve("0xa5", "garden valve")), true)
	h.send(t, "zigbee2mqtt/bridge/groups", testutil.Z2MGroups(
		testutil.Z2MGroup(1, "living room lights", "0xa1", "0xa2"),
		testutil.Z2MGroup(2, "door and lamp", "0xa3", "0xa1"),
		testutil.Z2MGroup(3, "garden", "0xa4", "0xa5"),
		testutil.Z2MGroup(4, "ghost", "0xa1", "0xdead"),
		testutil.Z2MGroup(901, "default_bind_group")), true)
	waitEntry(t, h.c, "living_room_lights.set")
	return h
}

// TestZ2MGroupsInCatalog: each group with members is a catalog device
// whose entries are what all members share, at its riskiest member's
// risk; a group whose members are unknown or share nothing is listed
// without actions, saying why; the empty group is not listed.
func TestZ2MGroupsInCatalog(t *testing.T) {
	h := groupHouse(t)
	snap := h.c.Snapshot()
	cases := []struct {
		id      string
		present bool
		risk    pilotage.Risk // of the entry
		says    []string      // in its description
	}{
		{"living_room_lights", true, pilotage.RiskRead, []string{"Zigbee2MQTT group 1 of 2 members (lamp one, lamp two)"}},
		{"living_room_lights.set", true, pilotage.RiskControl, []string{"zigbee2mqtt/living room lights/set"}},
		{"living_room_lights.state", true, pilotage.RiskRead, nil},
		{"living_room_lights.brightness", true, pilotage.RiskRead, nil},
		{"door_and_lamp", true, pilotage.RiskRead, []string{"no actions: its members share no light",
			"A command to it is of risk security: its member frontlock has the action frontlock.set, of risk security"}},
		{"door_and_lamp.set", false, "", nil},
		{"garden.set", true, pilotage.RiskSecurity, []string{"Its risk is security: its member garden valve has the action garden_valve.set, of risk security"}},
		{"garden.state", true, pilotage.RiskRead, nil},
		{"ghost", true, pilotage.RiskRead, []string{"no actions: its member 0xdead is not in Zigbee2MQTT's device list"}},
		{"ghost.set", false, "", nil},
		{"default_bind_group", false, "", nil},
	}
	for _, tc := range cases {
		e, ok := snap.Get(tc.id)
		if ok != tc.present {
			t.Errorf("%s present %v, want %v", tc.id, ok, tc.present)
			continue
		}
		if !ok {
			continue
		}
		if e.Risk != tc.risk {
			t.Errorf("%s risk %s, want %s", tc.id, e.Risk, tc.risk)
		}
		for _, s := range tc.says {
			if !strings.Contains(e.Description, s) {
				t.Errorf("%s = %q, want it to say %q", tc.id, e.Description, s)
			}
		}
	}
	if e, _ := snap.Get("living_room_lights"); !hasTag(e, "type:light") || !hasTag(e, "group") {
		t.Errorf("the lamps' group tags %v, want type:light and group", e.Tags)
	}
	if e, _ := snap.Get("ghost"); !hasTag(e, "unmodelled") {
		t.Errorf("ghost tags %v, want unmodelled", e.Tags)
	}
	h.liveOf(t, "zigbee2mqtt/living room lights", `{"state":"ON","brightness":120}`, "living_room_lights.brightness", 120)
}

// TestZ2MGroupNarrowest: a group of two lamps of different ranges sets
// only within both, and a feature one lamp lacks is not the group's.
func TestZ2MGroupNarrowest(t *testing.T) {
	h := runHouse(t, overTCP(Options{}))
	wide := `{"ieee_address":"0xb1","type":"Router","friendly_name":"wide","definition":{"vendor":"V","model":"W","description":"Bulb","exposes":[
	  {"type":"light","features":[
	    {"type":"binary","name":"state","property":"state","access":7,"value_on":"ON","value_off":"OFF","value_toggle":"TOGGLE"},
	    {"type":"numeric","name":"brightness","property":"brightness","access":7,"value_min":0,"value_max":254},
	    {"type":"numeric","name":"color_temp","property":"color_temp","access":7,"value_min":150,"value_max":500,"unit":"mired"},
	    {"type":"enum","name":"effect","property":"effect","access":2,"values":["blink","breathe","okay"]}]}]}}`
	narrowLamp := `{"ieee_address":"0xb2","type":"Router","friendly_name":"narrow","definition":{"vendor":"V","model":"N","description":"Bulb","exposes":[
	  {"type":"light","endpoint":"l1","features":[
	    {"type":"binary","name":"state","property":"state_l1","endpoint":"l1","access":7,"value_on":"ON","value_off":"OFF"},
	    {"type":"numeric","name":"brightness","property":"brightness_l1","endpoint":"l1","access":7,"value_min":1,"value_max":200},
	    {"type":"enum","name":"effect","property":"effect_l1","endpoint":"l1","access":2,"values":["okay","blink"]}]}]}}`
	h.send(t, "zigbee2mqtt/bridge/devices", testutil.Z2MBridge(wide, narrowLamp), true)
	h.send(t, "zigbee2mqtt/bridge/groups", testutil.Z2MGroups(testutil.Z2MGroup(7, "pair", "0xb1", "0xb2")), true)
	waitEntry(t, h.c, "pair.set")
	e, _ := h.c.Snapshot().Get("pair.set")
	s := schemaOf(t, e.InputSchema)
	checks := []struct {
		path []string
		want any
	}{
		{[]string{"properties", "brightness", "minimum"}, 1.0},
		{[]string{"properties", "brightness", "maximum"}, 200.0},
		{[]string{"properties", "effect", "enum"}, []any{"blink", "okay"}},
		{[]string{"properties", "color_temp"}, nil}, // the narrow lamp has none
		{[]string{"properties", "state_l1"}, nil},   // a group's state carries no endpoint
	}
	for _, c := range checks {
		if got := prop(s, c.path...); !sameJSONValue(got, c.want) {
			t.Errorf("%v = %v, want %v (%s)", c.path, got, c.want, e.InputSchema)
		}
	}
	// No TOGGLE: one lamp lacks it.
	if st, _ := json.Marshal(prop(s, "properties", "state")); !strings.Contains(string(st), "OFF") || strings.Contains(string(st), "TOGGLE") {
		t.Errorf("state = %s, want ON/OFF without TOGGLE", st)
	}
}

func sameJSONValue(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestZ2MGroupIDPinned: a group keeps its id when renamed (its topics
// follow the name), and gets it back when it returns to the list; a
// device that took the name meanwhile gets a suffix.
func TestZ2MGroupIDPinned(t *testing.T) {
	h := runHouse(t, overTCP(Options{}))
	lamps := []string{testutil.Z2MLight("0xa1", "lamp one"), testutil.Z2MLight("0xa2", "lamp two")}
	h.send(t, "zigbee2mqtt/bridge/devices", testutil.Z2MBridge(lamps...), true)
	h.send(t, "zigbee2mqtt/bridge/groups", testutil.Z2MGroups(testutil.Z2MGroup(1, "lights", "0xa1", "0xa2")), true)
	waitEntry(t, h.c, "lights.set")
	h.send(t, "zigbee2mqtt/bridge/groups", testutil.Z2MGroups(testutil.Z2MGroup(1, "lounge", "0xa1", "0xa2")), true)
	testutil.Eventually(t, waitTime, "the renamed group under its id", func() bool {
		e, ok := h.c.Snapshot().Get("lights.set")
		return ok && strings.Contains(e.Description, "zigbee2mqtt/lounge/set")
	})
	if _, ok := h.c.Snapshot().Get("lounge.set"); ok {
		t.Error("the renamed group got a new id")
	}
	h.send(t, "zigbee2mqtt/bridge/groups", testutil.Z2MGroups(), true)
	testutil.Eventually(t, waitTime, "the group gone", func() bool { _, ok := h.c.Snapshot().Get("lights"); return !ok })
	h.send(t, "zigbee2mqtt/bridge/devices", testutil.Z2MBridge(append(lamps, testutil.Z2MPlug("0xa4", "lights"))...), true)
	waitEntry(t, h.c, "lights_2.set") // the group's id stays reserved for it
	h.send(t, "zigbee2mqtt/bridge/groups", testutil.Z2MGroups(testutil.Z2MGroup(1, "lights", "0xa1", "0xa2")), true)
	testutil.Eventually(t, waitTime, "the group back under its id", func() bool {
		e, ok := h.c.Snapshot().Get("lights.set")
		return ok && strings.Contains(e.Description, "group lights")
	})
}

// TestZ2MGroupTopicRisk: an action from discovery writing to a group's
// command topic is shown at the group's risk, its riskiest member's
// (security when a member is not known), saying which member; a name
// that is no group nor device stays security.
func TestZ2MGroupTopicRisk(t *testing.T) {
	cases := []struct {
		name, topic string
		risk        pilotage.Risk
		reason      string // in the description ("" for none raised)
	}{
		{"the lamps' group", "zigbee2mqtt/living room lights/set", pilotage.RiskControl, ""},
		{"a property of the lamps' group", "zigbee2mqtt/living room lights/set/state", pilotage.RiskControl, ""},
		{"a group holding the lock", "zigbee2mqtt/door and lamp/set", pilotage.RiskSecurity,
			"reaches every member of Zigbee2MQTT group door and lamp: its member frontlock has the action frontlock.set, of risk security"},
		{"an endpoint of a group holding the lock", "zigbee2mqtt/door and lamp/l1/set", pilotage.RiskSecurity, "its member frontlock"},
		{"a group holding the valve", "zigbee2mqtt/garden/set/state", pilotage.RiskSecurity, "its member garden valve"},
		{"a group with an unknown member", "zigbee2mqtt/ghost/set", pilotage.RiskSecurity, "its member 0xdead is not in Zigbee2MQTT's device list"},
		{"a name that is no group", "zigbee2mqtt/attic/set", pilotage.RiskSecurity, "names no device Pilothouse knows"},
		{"the empty group", "zigbee2mqtt/default_bind_group/set", pilotage.RiskSecurity, "names no device Pilothouse knows"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := groupHouse(t)
			h.publish(t, "homeassistant/switch/plug_x/config", switchConfig(tc.topic), "plug_x.set")
			waitRisk(t, h.c, "plug_x.set", tc.risk)
			sw, _ := h.c.Snapshot().Get("plug_x.set")
			if tc.reason == "" && strings.Contains(sw.Description, "Risk raised") {
				t.Errorf("the switch = %q, want no raise", sw.Description)
			}
			if !strings.Contains(sw.Description, tc.reason) {
				t.Errorf("the switch = %q, want it to say %q", sw.Description, tc.reason)
			}
		})
	}
}

// TestZ2MGroupTopicRiskFollowsMembers: the lock leaving the group lowers
// the switch aimed at it to control; it joining again raises it.
func TestZ2MGroupTopicRiskFollowsMembers(t *testing.T) {
	h := groupHouse(t)
	h.publish(t, "homeassistant/switch/plug_x/config", switchConfig("zigbee2mqtt/door and lamp/set"), "plug_x.set")
	waitRisk(t, h.c, "plug_x.set", pilotage.RiskSecurity)
	h.send(t, "zigbee2mqtt/bridge/groups", testutil.Z2MGroups(testutil.Z2MGroup(2, "door and lamp", "0xa1")), true)
	waitRisk(t, h.c, "plug_x.set", pilotage.RiskControl)
	waitEntry(t, h.c, "door_and_lamp.set")
	h.send(t, "zigbee2mqtt/bridge/groups", testutil.Z2MGroups(testutil.Z2MGroup(2, "door and lamp", "0xa1", "0xa3")), true)
	waitRisk(t, h.c, "plug_x.set", pilotage.RiskSecurity)
	testutil.Eventually(t, waitTime, "the group without its action", func() bool { _, ok := h.c.Snapshot().Get("door_and_lamp.set"); return !ok })
}

// TestZ2MGroupsRefused: a group list that is malformed or over its
// bounds is refused whole, saying where, counted on /healthz; the groups
// the catalog had stay.
func TestZ2MGroupsRefused(t *testing.T) {
	many := make([]string, 1025)
	for i := range many {
		many[i] = testutil.Z2MGroup(i+1, "g"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+strings.Repeat("y", i/26), "0xa1")
	}
	cases := []struct{ name, payload, where string }{
		{"not json", `[{"id":1,`, "where=bridge/groups why=\"not a JSON array"},
		{"an object", `{"id":1}`, "where=bridge/groups "},
		{"no id", `[{"friendly_name":"x","members":[]}]`, "where=bridge/groups[0] why=\"id: missing"},
		{"an id not a number", `[{"id":"1","friendly_name":"x","members":[]}]`, "where=bridge/groups[0] why=\"not a group"},
		{"an id out of range", `[{"id":70000,"friendly_name":"x","members":[]}]`, "not a Zigbee group id"},
		{"no name", `[{"id":1,"members":[]}]`, "friendly_name: missing"},
		{"a wildcard name", `[{"id":1,"friendly_name":"a/+","members":[]}]`, "MQTT wildcard"},
		{"an id twice", `[{"id":1,"friendly_name":"x","members":[]},{"id":1,"friendly_name":"y","members":[]}]`, "where=bridge/groups[1].id"},
		{"a name twice", `[{"id":1,"friendly_name":"x","members":[]},{"id":2,"friendly_name":"x","members":[]}]`, "where=bridge/groups[1].friendly_name"},
		{"a member without address", `[{"id":1,"friendly_name":"x","members":[{"endpoint":1}]}]`, "members[0].ieee_address: missing"},
		{"members not a list", `[{"id":1,"friendly_name":"x","members":"0xa1"}]`, "where=bridge/groups[0]"},
		{"too many groups", testutil.Z2MGroups(many...), "lists 1025 groups"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := runHouse(t, houseOptions{})
			h.send(t, "zigbee2mqtt/bridge/devices", testutil.Z2MBridge(testutil.Z2MLight("0xa1", "lamp one"), testutil.Z2MLight("0xa2", "lamp two")), true)
			h.send(t, "zigbee2mqtt/bridge/groups", testutil.Z2MGroups(testutil.Z2MGroup(1, "lights", "0xa1", "0xa2")), true)
			waitEntry(t, h.c, "lights.set")
			before := h.c.Snapshot()
			h.send(t, "zigbee2mqtt/bridge/groups", tc.payload, true)
			testutil.Eventually(t, waitTime, "the list refused", func() bool { return h.c.Refusals().Z2MGroupListsRefused == 1 })
			if after := h.c.Snapshot(); after.Gen != before.Gen {
				t.Errorf("the refused list changed the catalog: gen %d -> %d", before.Gen, after.Gen)
			}
			if log := h.logs.String(); !strings.Contains(log, "zigbee2mqtt bridge/groups refused") || !strings.Contains(log, tc.where) {
				t.Errorf("log lacks %q:\n%s", tc.where, log)
			}
		})
	}
}

// TestZ2MGroupNamedAsEndpoint: a group whose name reads as a device's
// endpoint (frontlock/l1: zigbee2mqtt/frontlock/l1/set is a command to
// the lock's endpoint l1) has its action shown at the lock's risk,
// whatever its members.
func TestZ2MGroupNamedAsEndpoint(t *testing.T) {
	h := runHouse(t, overTCP(Options{}))
	h.send(t, "zigbee2mqtt/bridge/devices", testutil.Z2MBridge(testutil.Z2MLock("0xa3", "frontlock"), testutil.Z2MLight("0xa1", "lamp")), true)
	h.send(t, "zigbee2mqtt/bridge/groups", testutil.Z2MGroups(testutil.Z2MGroup(1, "frontlock/l1", "0xa1")), true)
	waitEntry(t, h.c, "frontlock_l1.set")
	waitRisk(t, h.c, "frontlock_l1.set", pilotage.RiskSecurity)
	if e, _ := h.c.Snapshot().Get("frontlock_l1.set"); !strings.Contains(e.Description, "reaches zigbee2mqtt/frontlock/set") {
		t.Errorf("the group's action = %q, want it to say it reaches the lock", e.Description)
	}
}

// TestZ2MGroupOwnDiscoveryShared: Zigbee2MQTT's own Home Assistant
// discovery of a group (device identifier zigbee2mqtt_<base topic's
// character codes>_<group id>) names the native group: it is left to it,
// not a second device, even without an origin (older Zigbee2MQTT) and
// under another name (a stale config from before a rename).
func TestZ2MGroupOwnDiscoveryShared(t *testing.T) {
	h := groupHouse(t)
	h.send(t, "homeassistant/light/1/light/config", `{"name":null,"unique_id":"1_light_zigbee2mqtt","schema":"json",
	  "command_topic":"zigbee2mqtt/living room lights/set","state_topic":"zigbee2mqtt/living room lights","brightness":true,
	  "device":{"identifiers":["zigbee2mqtt_1221051039810110150109113116116_1"],"name":"lounge","model":"Group","manufacturer":"Zigbee2MQTT"}}`, true)
	h.publish(t, "homeassistant/switch/plug_x/config", switchConfig("plug_x/set"), "plug_x.set") // read after it, in order
	for _, e := range h.c.Snapshot().Entries() {
		if strings.HasPrefix(e.ID, "living_room_lights_") || strings.HasPrefix(e.ID, "lounge") {
			t.Errorf("Zigbee2MQTT's discovery of the group made %s", e.ID)
		}
	}
}
