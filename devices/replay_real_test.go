package devices

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/pilotage"
)

var update = flag.Bool("update", false, "rewrite golden files")

func schemaOf(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("schema %s: %v", raw, err)
	}
	return m
}

// prop digs into a JSON Schema: prop(s, "properties", "brightness", "maximum").
func prop(s map[string]any, path ...string) any {
	var cur any = s
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func countKinds(s *Snapshot) map[pilotage.Kind]int {
	out := map[pilotage.Kind]int{}
	for _, e := range s.Entries() {
		out[e.Kind]++
	}
	return out
}

type entryCheck struct {
	id   string
	want func(t *testing.T, c *Catalog, e *pilotage.Entry)
}

func hasTag(e *pilotage.Entry, tag string) bool {
	for _, t := range e.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

func TestReplayRealData(t *testing.T) {
	msgs := loadReplay(t)
	absent := func(t *testing.T, c *Catalog, e *pilotage.Entry) {}
	cases := []struct {
		name     string
		until    int
		kinds    map[pilotage.Kind]int
		coverage *Coverage
		present  []entryCheck
		absent   []string
	}{
		{
			name: "zigbee2mqtt house before the leak sensor leaves", until: 30,
			kinds: map[pilotage.Kind]int{pilotage.KindDevice: 12, pilotage.KindState: 110, pilotage.KindEvent: 3, pilotage.KindAction: 17},
			// The interviewing device has no definition yet.
			coverage: &Coverage{Devices: 12, Unmodelled: 1},
			present: []entryCheck{
				{"front_door_lock.set", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					if e.Risk != pilotage.RiskSecurity || !e.RiskHints.Destructive || e.RiskHints.ReadOnly {
						t.Errorf("lock action risk = %s %+v, want security/destructive", e.Risk, e.RiskHints)
					}
					s := schemaOf(t, e.InputSchema)
					if got := prop(s, "properties", "state", "enum"); !reflect.DeepEqual(got, []any{"LOCK", "UNLOCK"}) {
						t.Errorf("lock state enum = %v", got)
					}
					if prop(s, "additionalProperties") != false || prop(s, "minProperties") != 1.0 {
						t.Errorf("input schema not closed: %s", e.InputSchema)
					}
				}},
				{"living_room_ceiling_light.set", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					s := schemaOf(t, e.InputSchema)
					if prop(s, "properties", "brightness", "minimum") != 0.0 || prop(s, "properties", "brightness", "maximum") != 254.0 {
						t.Errorf("brightness range: %v", prop(s, "properties", "brightness"))
					}
					if prop(s, "properties", "color_temp", "x-unit") != "mired" {
						t.Errorf("color_temp unit: %v", prop(s, "properties", "color_temp"))
					}
					// color exposed twice (xy and hs): every form Zigbee2MQTT
					// reads, {x, y} and {hue, saturation} among them.
					forms, _ := prop(s, "properties", "color", "anyOf").([]any)
					seen := map[string]bool{}
					for _, f := range forms {
						for k := range f.(map[string]any)["properties"].(map[string]any) {
							seen[k] = true
						}
					}
					for _, k := range []string{"x", "y", "hue", "saturation", "hex", "r", "h", "hsv"} {
						if !seen[k] {
							t.Errorf("color lacks %s: %v", k, prop(s, "properties", "color"))
						}
					}
					if prop(s, "properties", "transition", "minimum") != 0.0 || prop(s, "properties", "brightness_step") == nil {
						t.Errorf("light extras: %v", prop(s, "properties", "transition"))
					}
					if e.Risk != pilotage.RiskControl {
						t.Errorf("light risk %s", e.Risk)
					}
					want := map[string]string{"brightness": "living_room_ceiling_light.brightness", "state": "living_room_ceiling_light.state"}
					got := c.StateIDsForAction(e.ID)
					for k, v := range want {
						if got[k] != v {
							t.Errorf("StateIDsForAction[%s] = %q, want %q", k, got[k], v)
						}
					}
				}},
				{"back_door_contact.contact", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					s := schemaOf(t, e.OutputSchema)
					if s["type"] != "boolean" || s["x-active-value"] != false {
						t.Errorf("contact schema %s", e.OutputSchema)
					}
				}},
				{"living_room_remote.action", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					if e.Kind != pilotage.KindEvent {
						t.Fatalf("kind %s", e.Kind)
					}
					enum, _ := schemaOf(t, e.OutputSchema)["enum"].([]any)
					if len(enum) != 14 || enum[1] != "brightness_up_click" {
						t.Errorf("remote action enum %v", enum)
					}
				}},
				{"living_room_remote", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					if !hasTag(e, "type:remote") || !hasTag(e, "manufacturer:IKEA") || !hasTag(e, "model:E1524/E1810") {
						t.Errorf("remote tags %v", e.Tags)
					}
				}},
				{"washing_machine_plug.set", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					s := schemaOf(t, e.InputSchema)
					if e.Risk != pilotage.RiskControl || !reflect.DeepEqual(prop(s, "properties", "child_lock", "enum"), []any{"LOCK", "UNLOCK"}) {
						t.Errorf("plug: risk %s child_lock %v", e.Risk, prop(s, "properties", "child_lock"))
					}
					// value_step is a hint (x-step), never multipleOf.
					if prop(s, "properties", "countdown", "x-step") != 1.0 || prop(s, "properties", "countdown", "multipleOf") != nil {
						t.Errorf("countdown step: %v", prop(s, "properties", "countdown"))
					}
				}},
				{"kitchen_wall_switch.set", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					s := schemaOf(t, e.InputSchema)
					if prop(s, "properties", "state_left", "enum") == nil || prop(s, "properties", "state_right", "enum") == nil {
						t.Errorf("endpoint features missing: %s", e.InputSchema)
					}
				}},
				{"bedroom_blind.set", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					if e.Risk != pilotage.RiskSecurity {
						t.Errorf("cover risk %s", e.Risk)
					}
				}},
				{"office_radiator.occupied_heating_setpoint", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					s := schemaOf(t, e.OutputSchema)
					if s["minimum"] != 5.0 || s["maximum"] != 35.0 || s["x-unit"] != "°C" {
						t.Errorf("setpoint schema %s", e.OutputSchema)
					}
				}},
				{"0x84ba20fffe3c4d5e", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					if !hasTag(e, "supported:false") {
						t.Errorf("interviewing device tags %v", e.Tags)
					}
				}},
				{"hallway_motion.occupancy", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					l, ok := c.Live(e.ID)
					if !ok || l.Value != true || l.Available == nil || !*l.Available {
						t.Errorf("live %+v", l)
					}
				}},
				{"bathroom_leak.water_leak", absent},
			},
			absent: []string{"coordinator", "zigbee2mqtt_bridge"},
		},
		{
			name: "device_leave removes bathroom_leak", until: 31,
			absent: []string{"bathroom_leak", "bathroom_leak.water_leak"},
		},
		{
			name: "HA removal payloads are no-ops for the native house", until: 180,
			present: []entryCheck{{"living_room_ceiling_light.set", absent}},
			absent:  []string{"bathroom_leak", "bathroom_leak.battery_low"},
		},
		{
			name: "everything", until: -1,
			// One Home Assistant device has a tag entity (not modelled);
			// every template of the set renders. The capture's group
			// "hue lights" is a device; its empty default_bind_group is not.
			coverage: &Coverage{Devices: 47, Partial: 1},
			present: []entryCheck{
				{"hue_lights.set", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					// Three bulbs of one model: the group sets what each sets.
					s := schemaOf(t, e.InputSchema)
					for _, k := range []string{"state", "brightness", "color_temp", "transition"} {
						if prop(s, "properties", k) == nil {
							t.Errorf("group set lacks %s: %s", k, e.InputSchema)
						}
					}
					if e.Risk != pilotage.RiskControl || !strings.Contains(e.Description, "zigbee2mqtt/hue lights/set") {
						t.Errorf("group set = %s %q", e.Risk, e.Description)
					}
					// The capture's retained hue lights/availability says offline.
					if l, _ := c.Live("hue_lights.state"); l.Available == nil || *l.Available {
						t.Errorf("group availability %+v", l)
					}
				}},
				{"tasmota_energy_today.state", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					// '~' placed after the keys that use it; val_tpl value_json['ENERGY'].Today.
					l, _ := c.Live(e.ID)
					if l.Value != 0.087 || l.Available == nil || !*l.Available {
						t.Errorf("tasmota live %+v", l)
					}
					if prop(schemaOf(t, e.OutputSchema), "x-unit") != "kWh" {
						t.Errorf("unit: %s", e.OutputSchema)
					}
				}},
				{"relay02_01.set", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					if l, _ := c.Live("relay02_01.state"); l.Value != "ON" {
						t.Errorf("relay state %+v", l)
					}
				}},
				// Three devices named Kitchen: the first discovered (the
				// Pi-Somfy cover) keeps the name, the others get suffixes.
				{"kitchen_2.temperature", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					if l, _ := c.Live(e.ID); l.Value != 23.2 {
						t.Errorf("device-based temperature %+v", l)
					}
				}},
				{"kitchen_2.set", func(t *testing.T, c *Catalog, e *pilotage.Entry) {}},
				{"kitchen.set", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					if e.Risk != pilotage.RiskSecurity {
						t.Errorf("cover risk %s", e.Risk)
					}
				}},
				{"puerta_casa.set", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					if e.Risk != pilotage.RiskSecurity {
						t.Errorf("nuki risk %s", e.Risk)
					}
				}},
				{"vd.state", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					if l, _ := c.Live(e.ID); hasTag(e, "unsupported") || l.Value != "locked" {
						t.Errorf("jinja lock state: %v %+v", e.Tags, l)
					}
				}},
				{"c3_debug_7b55e0.pressure_voltage", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					if l, _ := c.Live(e.ID); l.Value != 1.874 {
						t.Errorf("plain-text state %+v", l)
					}
				}},
				{"rain_gauge.rain_total", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					// '%0.1f'|format(value_json.RainTotal) of 1022.4242…
					if l, _ := c.Live(e.ID); hasTag(e, "unsupported") || l.Value != 1022.4 {
						t.Errorf("format() template: %v %+v", e.Tags, l)
					}
				}},
				{"test_device", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					if !hasTag(e, model.TagPartial) || !strings.Contains(e.Description, "bla3: tag entities are not modelled") {
						t.Errorf("tag entity not marked: %v %q", e.Tags, e.Description)
					}
				}},
				{"test_device.button_short_press_button_1", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					if e.Kind != pilotage.KindEvent {
						t.Errorf("trigger kind %s", e.Kind)
					}
				}},
				{"livingroom_window.contact", func(t *testing.T, c *Catalog, e *pilotage.Entry) {}},
				{"back_door_contact.door", func(t *testing.T, c *Catalog, e *pilotage.Entry) {
					if !hasTag(e, "source:homeassistant") {
						t.Errorf("after the capture replaced bridge/devices, HA discovery owns it: %v", e.Tags)
					}
				}},
			},
			absent: []string{"kitchen_2.humidity", "bathroom_leak", "bathroom_leak.water_leak", "coordinator"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, clk := newTestCatalog()
			replayUntil(c, clk, msgs, tc.until)
			s := c.Snapshot()
			if tc.kinds != nil {
				if got := countKinds(s); !reflect.DeepEqual(got, tc.kinds) {
					t.Errorf("kinds = %v, want %v", got, tc.kinds)
				}
			}
			if tc.coverage != nil && c.Coverage() != *tc.coverage {
				t.Errorf("coverage %+v, want %+v", c.Coverage(), *tc.coverage)
			}
			for _, pc := range tc.present {
				e, ok := s.Get(pc.id)
				if !ok {
					if strings.HasPrefix(pc.id, "bathroom_leak") {
						continue
					}
					t.Errorf("missing %s", pc.id)
					continue
				}
				pc.want(t, c, e)
			}
			for _, id := range tc.absent {
				if _, ok := s.Get(id); ok {
					t.Errorf("%s should be absent", id)
				}
			}
		})
	}
}

func TestReplayBathroomLeakPresentBeforeLeave(t *testing.T) {
	msgs := loadReplay(t)
	c, clk := newTestCatalog()
	replayUntil(c, clk, msgs, 30)
	if _, ok := c.Snapshot().Get("bathroom_leak.water_leak"); !ok {
		t.Fatal("bathroom_leak.water_leak missing before device_leave")
	}
}

func TestReplayMalformedKeepsCatalog(t *testing.T) {
	msgs := loadReplay(t)
	c, clk := newTestCatalog()
	replayUntil(c, clk, msgs, 263)
	before := c.Snapshot()
	var malformed int
	for _, m := range msgs {
		if m.Seq < 264 || m.Seq > 274 {
			continue
		}
		if len(m.Malformed) == 0 {
			t.Fatalf("seq %d expected malformed", m.Seq)
		}
		malformed++
		clk.t = clk.t.Add(1)
		c.HandleMessage(m.msg)
	}
	after := c.Snapshot()
	if malformed != 11 {
		t.Fatalf("replayed %d malformed messages, want 11", malformed)
	}
	if after.Gen != before.Gen || after != before {
		t.Fatalf("malformed payloads changed the catalog: gen %d -> %d", before.Gen, after.Gen)
	}
	// The earlier good tiltbridge config survives its broken re-publication.
	if _, ok := after.Get("tilt_temperature_black.state"); !ok {
		t.Fatal("tiltbridge sensor lost")
	}
}

func TestReplayGolden(t *testing.T) {
	msgs := loadReplay(t)
	c, clk := newTestCatalog()
	replayUntil(c, clk, msgs, -1)
	got, err := json.MarshalIndent(c.Snapshot().Entries(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "catalog.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if string(got) != string(want) {
		t.Fatalf("catalog differs from %s; rerun with -update and review the diff", path)
	}
	// Replaying twice is deterministic, including revisions.
	c2, clk2 := newTestCatalog()
	replayUntil(c2, clk2, msgs, -1)
	for _, e := range c.Snapshot().Entries() {
		if c2.Snapshot().Hash(e.ID) != e.Revision {
			t.Fatalf("%s: non-deterministic revision", e.ID)
		}
	}
}
