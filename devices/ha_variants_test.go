package devices

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/mqtt"
)

// variantHouse is the house with what the devices received on the
// command topics.
type variantHouse struct {
	*house
	cmds *commandLog
}

func startVariantHouse(t *testing.T) *variantHouse {
	t.Helper()
	h := &variantHouse{house: runHouse(t, houseOptions{})}
	h.cmds = h.watchCommands(t, func(topic string) bool {
		return strings.HasSuffix(topic, "/set") || strings.HasPrefix(topic, "ems-esp/thermostat/") ||
			topic == "og/garage01/cmd" || topic == "hp/defrost" || strings.HasPrefix(topic, "paradox/control/")
	})
	return h
}

// call runs an action and checks that exactly the wanted payloads arrive
// on the command topics, in order.
func (h *variantHouse) call(t *testing.T, id string, args map[string]any, want ...published) {
	t.Helper()
	got, err := h.cmds.during(len(want), func() error { return h.c.Call(context.Background(), id, args) })
	if err != nil {
		t.Fatalf("%s %v: %v", id, args, err)
	}
	var gotP []published
	for _, m := range got {
		gotP = append(gotP, published{Topic: m.Topic, Payload: m.Payload})
	}
	if fmt.Sprint(gotP) != fmt.Sprint(want) {
		t.Errorf("%s %v published %v, want %v", id, args, gotP, want)
	}
}

func loadVariants(t *testing.T) []mqtt.Message {
	t.Helper()
	b, err := os.ReadFile("testdata/ha/variants.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []struct {
		Topic   string `json:"topic"`
		Payload any    `json:"payload"`
	}
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	out := make([]mqtt.Message, len(vs))
	for i, v := range vs {
		p, _ := json.Marshal(v.Payload)
		out[i] = mqtt.Message{Topic: v.Topic, Payload: p}
	}
	return out
}

// TestHADiscoveryVariants: discovery as real integrations write it, over
// MQTT: device-based discovery with full key names and a node id, Homie
// topics with "$" levels and ready/lost availability, availability lists
// in mode all, climate with whitespace control, if/elif and dict lookups;
// the states they read and the exact payloads their commands publish.
func TestHADiscoveryVariants(t *testing.T) {
	h := startVariantHouse(t)
	for _, m := range loadVariants(t) {
		if err := h.pub.Publish(context.Background(), m.Topic, m.Payload, 1, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"garage.set", "boiler.pump.set", "kitchen_dimmer.set", "thermostat.hc1.set", "office_trv.set",
		"front_door.set", "heat_pump.fan.set", "paradox_panel.partition_1.set"} {
		h.waitID(t, id)
	}
	checkVariantStates(t, h)
	checkVariantCommands(t, h)
	checkVariantRefusals(t, h)
}

func checkVariantStates(t *testing.T, h *variantHouse) {
	t.Helper()
	h.liveOf(t, "og/garage01/state", `{"door":"open","pos":128,"dist":"123.456","vehicle":1}`, "garage.state", "open")
	for id, want := range map[string]any{"garage.position": 50.0, "garage.distance": 123.5, "garage.vehicle": true} {
		if l, _ := h.c.Live(id); l.Value != want {
			t.Errorf("%s = %#v, want %v", id, l.Value, want)
		}
	}
	h.availOf(t, "og/garage01/status", "ready", "garage.state", true)
	h.liveOf(t, "homie/boiler/$stats/temperature", "55.2", "boiler.temperature", 55.2)
	h.liveOf(t, "homie/boiler/pump/$value", "true", "boiler.pump", "ON")
	h.availOf(t, "homie/boiler/$state", "ready", "boiler.pump", true)
	h.availOf(t, "homie/boiler/$state", "lost", "boiler.pump", false)
	h.liveOf(t, "zwave/kitchen/switch_multilevel/currentValue", `{"value":42}`, "kitchen_dimmer.brightness", 42.0)
	h.liveOf(t, "zwave/kitchen/switch_multilevel/currentValue", `{"value":42}`, "kitchen_dimmer.state", "ON")
	// Mode all: a topic not reported yet is not online (Home Assistant's
	// "unavailable until").
	h.availOf(t, "zwave/_CLIENTS/ZWAVE_GATEWAY-zwavejs/status", `{"value":true}`, "kitchen_dimmer.state", false)
	h.availOf(t, "zwave/kitchen/status", `{"value":"Dead"}`, "kitchen_dimmer.state", false) // mode all: one down is down
	h.availOf(t, "zwave/kitchen/status", `{"value":"Alive"}`, "kitchen_dimmer.state", true)
	h.liveOf(t, "ems-esp/thermostat_data", `{"hc1":{"mode":"manual","seltemp":21.5,"currtemp":20.04,"heating":1}}`, "thermostat.hc1_system_mode", "heat")
	for id, want := range map[string]any{"thermostat.hc1_occupied_heating_setpoint": 21.5, "thermostat.hc1_local_temperature": 20.0,
		"thermostat.hc1_running_state": "heating"} {
		if l, _ := h.c.Live(id); l.Value != want {
			t.Errorf("%s = %#v, want %v", id, l.Value, want)
		}
	}
	h.liveOf(t, "hp/state", `{"flow":35.5,"profile":"eco","fan":"ON","speed":2}`, "heat_pump.flow_temperature", 35.5)
	// A template that fails on a payload (round of "x") leaves its state
	// as it was, and says so once.
	h.liveOf(t, "ems-esp/thermostat_data", `{"hc1":{"mode":"off","seltemp":19,"currtemp":"x","heating":0}}`, "thermostat.hc1_system_mode", "off")
	h.liveOf(t, "ems-esp/thermostat_data", `{"hc1":{"mode":"auto","seltemp":19,"currtemp":"y","heating":0}}`, "thermostat.hc1_system_mode", "auto")
	if l, _ := h.c.Live("thermostat.hc1_local_temperature"); l.Value != 20.0 {
		t.Errorf("local temperature after a failed template: %v", l.Value)
	}
	if n := strings.Count(h.logs.String(), "home assistant template failed"); n != 1 {
		t.Errorf("template failure logged %d times, want once", n)
	}
}

func checkVariantCommands(t *testing.T, h *variantHouse) {
	t.Helper()
	p := func(topic, payload string) published { return published{Topic: topic, Payload: payload} }
	h.call(t, "garage.set", map[string]any{"position": 50}, p("og/garage01/pos/set", `{"position": 50, "raw": 128}`))
	h.call(t, "garage.set", map[string]any{"state": "OPEN"}, p("og/garage01/cmd", "OPEN"))
	h.call(t, "boiler.pump.set", map[string]any{"state": "ON"}, p("homie/boiler/pump/$value/set", "true"))
	h.call(t, "kitchen_dimmer.set", map[string]any{"state": "ON", "brightness": 50}, p("zwave/kitchen/switch_multilevel/targetValue/set", "50"))
	// on_command_type brightness: ON restores the last reported level (42).
	h.call(t, "kitchen_dimmer.set", map[string]any{"state": "ON"}, p("zwave/kitchen/switch_multilevel/targetValue/set", "42"))
	h.call(t, "kitchen_dimmer.set", map[string]any{"state": "OFF"}, p("zwave/kitchen/switch_multilevel/targetValue/set", "0"))
	h.call(t, "thermostat.hc1.set", map[string]any{"system_mode": "heat", "occupied_heating_setpoint": 21},
		p("ems-esp/thermostat/hc1/mode", "manual"), p("ems-esp/thermostat/hc1/seltemp", "21.0"))
	h.call(t, "thermostat.hc1.set", map[string]any{"occupied_heating_setpoint": 21.5}, p("ems-esp/thermostat/hc1/seltemp", "21.5"))
	h.call(t, "office_trv.set", map[string]any{"occupied_heating_setpoint": 20.25}, p("trv/office/set", `{"target": 20.2}`))
	h.call(t, "office_trv.set", map[string]any{"system_mode": "off"}, p("trv/office/mode/set", "off"))
	h.call(t, "front_door.set", map[string]any{"state": "UNLOCK", "code": "1234"}, p("lock/front/set", `{"action": "UNLOCK", "code": "1234"}`))
	h.call(t, "heat_pump.flow_temperature.set", map[string]any{"value": 35}, p("hp/flow/set", `{"flow": 35}`))
	h.call(t, "heat_pump.flow_temperature.set", map[string]any{"value": 35.5}, p("hp/flow/set", `{"flow": 35.5}`))
	h.call(t, "heat_pump.profile.set", map[string]any{"option": "boost"}, p("hp/profile/set", "boost"))
	h.call(t, "heat_pump.fan.set", map[string]any{"state": "ON", "percentage": 50}, p("hp/fan/set", "ON"), p("hp/fan/speed/set", "2"))
	h.call(t, "heat_pump.defrost.press", map[string]any{}, p("hp/defrost", "GO"))
	h.call(t, "heat_pump.dhw_valve.set", map[string]any{"position": 40}, p("hp/valve/set", "40"))
	h.call(t, "paradox_panel.partition_1.set", map[string]any{"state": "ARM_AWAY", "code": "1234"},
		p("paradox/control/partitions/Area_1", `{"state": "arm", "code": "1234"}`))
}

func checkVariantRefusals(t *testing.T, h *variantHouse) {
	t.Helper()
	s := h.c.Snapshot()
	hp, _ := s.Get("heat_pump")
	if !hasTag(hp, model.TagPartial) || !strings.Contains(hp.Description, "Filter robot: lawn_mower entities are not modelled") {
		t.Errorf("heat_pump: %v %q", hp.Tags, hp.Description)
	}
	for _, id := range []string{"no_origin", "extra", "foo"} {
		if _, ok := s.Get(id); ok {
			t.Errorf("%s should have been refused", id)
		}
	}
	logs := h.logs.String()
	for _, want := range []string{"origin (o) with a name is required", "extra key not allowed in device discovery: name",
		"discovery component not supported by Home Assistant", "home assistant device not fully modelled"} {
		if !strings.Contains(logs, want) {
			t.Errorf("no log line %q in:\n%s", want, logs)
		}
	}
	if cv := h.c.Coverage(); cv != (Coverage{Devices: 8, Partial: 1}) {
		t.Errorf("coverage %+v", cv)
	}
	for id, want := range map[string]string{"garage.set": "security", "front_door.set": "security", "thermostat.hc1.set": "control",
		"kitchen_dimmer.set": "control", "heat_pump.fan.set": "control", "heat_pump.dhw_valve.set": "security", "paradox_panel.partition_1.set": "security"} {
		if e, _ := s.Get(id); e == nil || string(e.Risk) != want {
			t.Errorf("%s risk %v, want %s", id, e, want)
		}
	}
}

// TestHAIncrementalGroups: a discovery message changes the devices of
// its entity and nothing else: the catalog changes it announces are
// exactly those ids.
func TestHAIncrementalGroups(t *testing.T) {
	c, _ := newTestCatalog()
	var mu sync.Mutex
	var seen []string
	c.Subscribe(func(ch Change) {
		if ch.Kind == ChangeCatalog {
			mu.Lock()
			seen = append(seen, ch.ID+"="+fmt.Sprint(ch.Value))
			mu.Unlock()
		}
	})
	step := func(topic, payload string, want ...string) {
		t.Helper()
		mu.Lock()
		seen = nil
		mu.Unlock()
		c.HandleMessage(msg(topic, payload))
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Errorf("%s %.60s: changes %v, want %v", topic, payload, seen, want)
		}
		checkSnapshot(t, c)
	}
	sensor := func(uid, name, dev string) string {
		return fmt.Sprintf(`{"name":%q,"unique_id":%q,"state_topic":"s/%s","device":{"identifiers":[%q],"name":%q}}`, name, uid, uid, dev, "Dev "+dev)
	}
	step("homeassistant/sensor/a/t/config", sensor("a_t", "T", "a"), "dev_a=added", "dev_a.t=added")
	step("homeassistant/sensor/b/t/config", sensor("b_t", "T", "b"), "dev_b=added", "dev_b.t=added")
	step("homeassistant/sensor/a/h/config", sensor("a_h", "H", "a"), "dev_a.h=added")
	step("homeassistant/sensor/a/h/config", sensor("a_h", "H", "a")) // the same config again: nothing
	// h moves to device b: a loses it, b gains it.
	step("homeassistant/sensor/a/h/config", sensor("a_h", "H", "b"), "dev_a.h=removed", "dev_b.h=added")
	// Another topic with a_t's unique_id is ignored while a_t exists…
	step("homeassistant/sensor/z/t2/config", sensor("a_t", "T2", "z"))
	// …and takes over when a_t leaves: device a is gone, z appears.
	step("homeassistant/sensor/a/t/config", "", "dev_a=removed", "dev_a.t=removed", "dev_z=added", "dev_z.t2=added")
	step("homeassistant/sensor/z/t2/config", `{"migrate_discovery":true}`, "dev_z=removed", "dev_z.t2=removed")
	step("homeassistant/device/b/config", `{"dev":{"ids":"b","name":"Dev b"},"o":{"name":"x"},"cmps":{"p":{"p":"sensor","name":"P","stat_t":"s/p","uniq_id":"b_p"}}}`,
		"dev_b=modified", "dev_b.p=added") // the device's description names the origin now
	step("homeassistant/device/b/config", `{"migr_discvry":true}`, "dev_b=modified", "dev_b.p=removed")
	if got := deviceIDs(c); fmt.Sprint(got) != "[dev_b]" {
		t.Errorf("devices %v", got)
	}
}
