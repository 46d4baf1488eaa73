package devices

import (
	"reflect"
	"strings"
	"testing"
)

func TestHADiscoveryLifecycle(t *testing.T) {
	c, _ := newTestCatalog()
	dev := `{"dev":{"ids":"abc","name":"Bed Room","sa":"Upstairs","mf":"Acme"},"o":{"name":"x"},"stat_t":"bed/state","cmps":{
	  "t":{"p":"sensor","dev_cla":"temperature","unit_of_meas":"°C","val_tpl":"{{ value_json.temperature }}","uniq_id":"t1"},
	  "h":{"p":"sensor","dev_cla":"humidity","unit_of_meas":"%","val_tpl":"{{ value_json.humidity }}","uniq_id":"h1"}}}`
	c.HandleMessage(msg("homeassistant/device/abc/config", dev))
	s1 := c.Snapshot()
	for _, id := range []string{"bed_room", "bed_room.temperature", "bed_room.humidity"} {
		if _, ok := s1.Get(id); !ok {
			t.Fatalf("missing %s", id)
		}
	}
	if e, _ := s1.Get("bed_room"); !hasTag(e, "area:Upstairs") || !hasTag(e, "manufacturer:Acme") {
		t.Fatalf("device tags %v", e.Tags)
	}
	c.HandleMessage(msg("bed/state", `{"temperature":20.5,"humidity":"44"}`))
	if s := c.Snapshot(); s.Gen != s1.Gen {
		t.Fatal("state changed gen")
	}
	if l, _ := c.Live("bed_room.humidity"); l.Value != 44.0 {
		t.Fatalf("humidity %+v", l)
	}
	// A component reduced to its platform is removed; the rest is untouched.
	c.HandleMessage(msg("homeassistant/device/abc/config", strings.Replace(dev,
		`"h":{"p":"sensor","dev_cla":"humidity","unit_of_meas":"%","val_tpl":"{{ value_json.humidity }}","uniq_id":"h1"}`, `"h":{"p":"sensor"}`, 1)))
	s2 := c.Snapshot()
	if s2.Gen != s1.Gen+1 {
		t.Fatalf("gen %d -> %d", s1.Gen, s2.Gen)
	}
	if _, ok := s2.Get("bed_room.humidity"); ok {
		t.Fatal("humidity not removed")
	}
	if s2.Hash("bed_room.temperature") != s1.Hash("bed_room.temperature") || s2.Hash("bed_room") != s1.Hash("bed_room") {
		t.Fatal("untouched entries changed hash")
	}
	if l, _ := c.Live("bed_room.temperature"); l.Value != 20.5 {
		t.Fatalf("temperature live lost: %+v", l)
	}
	// Broken payloads leave the catalog alone.
	for _, p := range []string{`{"dev":{"ids":"abc"},"cmps":"x"}`, `{"cmps":{}}`, `{"dev":{"ids":"abc"},"cmps":{"a":{"stat_t":"x"}}}`, `{,}`} {
		c.HandleMessage(msg("homeassistant/device/abc/config", p))
		if c.Snapshot() != s2 {
			t.Fatalf("%s changed the catalog", p)
		}
	}
	// Empty payload removes the device.
	c.HandleMessage(msg("homeassistant/device/abc/config", ""))
	if s3 := c.Snapshot(); s3.Len() != 0 || s3.Gen != s2.Gen+1 {
		t.Fatalf("after removal: %d entries, gen %d", s3.Len(), s3.Gen)
	}
	// Removing something never discovered is a no-op.
	c.HandleMessage(msg("homeassistant/binary_sensor/nothing/config", ""))
	if c.Snapshot().Gen != s2.Gen+1 {
		t.Fatal("no-op removal bumped gen")
	}
}

func TestHAAvailabilityModes(t *testing.T) {
	c, _ := newTestCatalog()
	c.HandleMessage(msg("homeassistant/switch/p/config", `{"name":"Plug","cmd_t":"p/set","stat_t":"p/state","dev":{"ids":"p","name":"Plug"},
	 "availability_mode":"all","availability":[{"topic":"bridge/state","value_template":"{{ value_json.state }}"},{"topic":"p/avail"}]}`))
	steps := []struct {
		topic, payload string
		want           *bool
	}{
		{"bridge/state", `{"state":"online"}`, ptr(false)}, // p/avail not reported yet: not online
		{"p/avail", `offline`, ptr(false)},
		{"p/avail", `ONLINE`, ptr(true)},
		{"bridge/state", `{"state":"offline"}`, ptr(false)},
		{"bridge/state", `garbage`, ptr(false)},
	}
	for _, st := range steps {
		c.HandleMessage(msg(st.topic, st.payload))
		l, _ := c.Live("plug.state")
		if !reflect.DeepEqual(l.Available, st.want) {
			t.Fatalf("after %s=%s: available %v", st.topic, st.payload, l.Available)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestIllegalAndUnknownDiscovery(t *testing.T) {
	c, _ := newTestCatalog()
	for _, m := range []struct{ topic, payload string }{
		{"homeassistant/binary_sensor/rörkrökare/config", `{"stat_t":"x"}`},
		{"homeassistant/sensor/a/b/c/config", `{"stat_t":"x"}`},
		{"homeassistant/sensor/x/config", `{"name":"no state topic"}`},
		{"homeassistant/alarm_control_panel/x/config", `{"stat_t":"a","cmd_t":"b","qos":"1"}`},
		{"homeassistant/frobnicator/x/config", `{"cmd_t":"b"}`},
		{"homeassistant/sensor/x/config", `[1,2]`},
		{"homeassistant/sensor/x/config", `null`},
	} {
		c.HandleMessage(msg(m.topic, m.payload))
	}
	if n := c.Snapshot().Len(); n != 0 {
		t.Fatalf("entries %d: %v", n, c.Snapshot().Entries()[0].ID)
	}
}

func TestSubscriberMayReadCatalog(t *testing.T) {
	c, _ := newTestCatalog()
	c.HandleMessage(msg("zigbee2mqtt/bridge/devices", bridgeTwo))
	var seen []any
	cancel := c.Subscribe(func(ch Change) {
		l, _ := c.Live(ch.ID) // must not deadlock
		seen = append(seen, l.Value)
		_ = c.Snapshot().Len()
	})
	c.HandleMessage(msg("zigbee2mqtt/hall_motion", `{"occupancy":true}`))
	cancel()
	c.HandleMessage(msg("zigbee2mqtt/hall_motion", `{"occupancy":false}`))
	if !reflect.DeepEqual(seen, []any{true}) {
		t.Fatalf("seen %v", seen)
	}
}

// TestHACommandTemplateAudit: a command template the model does not read
// must never let a command publish another payload than Home Assistant
// would (a siren's command_off_template was ignored: OFF sounded the
// alarm). One that shapes a topic the entity publishes to withdraws the
// entity's commands; one for a topic it does not use only loses that
// feature; both are named in the device's description.
func TestHACommandTemplateAudit(t *testing.T) {
	cases := []struct {
		name, topic, cfg, action string
		offered                  bool
		gap                      string
	}{
		{"off template on the command topic", "homeassistant/switch/a/config",
			`{"name":"A","command_topic":"a/set","command_off_template":"{{ value }}x"}`, "a.set", false, "command_off_template not modelled; its commands are not offered"},
		{"on template on the command topic", "homeassistant/lock/b/config",
			`{"name":"B","command_topic":"b/set","command_on_template":"{{ value }}"}`, "b.set", false, "command_on_template not modelled; its commands are not offered"},
		{"a feature's own topic", "homeassistant/climate/c/config",
			`{"name":"C","temperature_command_topic":"c/t","power_command_topic":"c/p","power_command_template":"{{ value }}"}`, "c.set", true, "power_command_template, power_command_topic not modelled"},
		{"the siren's pair is read", "homeassistant/siren/d/config",
			`{"name":"D","command_topic":"d/set","command_template":"on","command_off_template":"off"}`, "d.set", true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newTestCatalog()
			c.HandleMessage(msg(tc.topic, tc.cfg))
			s := c.Snapshot()
			if _, ok := s.Get(tc.action); ok != tc.offered {
				t.Errorf("%s offered %v, want %v", tc.action, ok, tc.offered)
			}
			dev, _ := s.Get(strings.Split(tc.action, ".")[0])
			if dev == nil || (tc.gap == "") != !strings.Contains(dev.Description, "Not fully modelled") || !strings.Contains(dev.Description, tc.gap) {
				t.Errorf("description %v, want the gap %q", dev, tc.gap)
			}
		})
	}
}
