package demo

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// observer records every message on the topics the simulator uses.
type observer struct {
	mu     sync.Mutex
	last   map[string]mqtt.Message
	all    []mqtt.Message
	client *mqtt.Client
}

func (o *observer) handle(m mqtt.Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last[m.Topic] = m
	o.all = append(o.all, m)
}

func (o *observer) get(topic string) (mqtt.Message, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m, ok := o.last[topic]
	return m, ok
}

// json returns the last payload on topic decoded into a map (nil if none).
func (o *observer) json(topic string) map[string]any {
	m, ok := o.get(topic)
	if !ok {
		return nil
	}
	var v map[string]any
	if json.Unmarshal(m.Payload, &v) != nil {
		return nil
	}
	return v
}

type rig struct {
	broker *mqtt.Broker
	sim    *Sim
	obs    *observer
}

func dial(t *testing.T, b *mqtt.Broker) *mqtt.Client {
	t.Helper()
	c, err := mqtt.Dial(ctxT(t), mqtt.Options{Broker: b.URL(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func newObserver(t *testing.T, b *mqtt.Broker) *observer {
	t.Helper()
	o := &observer{last: map[string]mqtt.Message{}, client: dial(t, b)}
	for _, f := range []string{"zigbee2mqtt/#", "homeassistant/#", "pilothouse-demo/#"} {
		if err := o.client.Subscribe(f, 1, o.handle); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// start runs a broker and a started simulator with spontaneous behaviour
// off, and an observer subscribed after the simulator announced itself (so
// it sees the retained messages).
func start(t *testing.T, o Options) *rig {
	t.Helper()
	b, err := mqtt.StartBroker("127.0.0.1:0", quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if o.Pace == 0 {
		o.Pace = -1
	}
	o.Logger = quiet()
	s := New(dial(t, b), o)
	if err := s.Start(ctxT(t)); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(s.Close)
	return &rig{broker: b, sim: s, obs: newObserver(t, b)}
}

func (r *rig) publish(t *testing.T, topic, payload string) {
	t.Helper()
	if err := r.obs.client.Publish(ctxT(t), topic, []byte(payload), 1, false); err != nil {
		t.Fatal(err)
	}
}

// waitState waits until the device's published state has key == want.
func (r *rig) waitState(t *testing.T, device, key string, want any) map[string]any {
	t.Helper()
	var st map[string]any
	testutil.Eventually(t, 3*time.Second, device+"."+key+" to be published as "+jsonString(want), func() bool {
		st = r.obs.json("zigbee2mqtt/" + device)
		return st != nil && st[key] == want
	})
	return st
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }

var z2mNames = []string{"hall_light", "porch_light", "hall_motion", "front_door", "front_lock",
	"garage_door", "living_plug", "living_thermostat", "bedroom_remote"}

func TestAnnouncesBridgeAndDevices(t *testing.T) {
	r := start(t, Options{})
	testutil.Eventually(t, 3*time.Second, "bridge/devices", func() bool { _, ok := r.obs.get("zigbee2mqtt/bridge/devices"); return ok })
	m, _ := r.obs.get("zigbee2mqtt/bridge/devices")
	if !m.Retained {
		t.Error("bridge/devices is not retained")
	}
	var list []struct {
		FriendlyName   string `json:"friendly_name"`
		IEEEAddress    string `json:"ieee_address"`
		Type           string `json:"type"`
		Supported      bool   `json:"supported"`
		InterviewState string `json:"interview_state"`
		Definition     *struct {
			Model, Vendor, Description string
			Exposes                    []map[string]any
		} `json:"definition"`
	}
	if err := json.Unmarshal(m.Payload, &list); err != nil {
		t.Fatalf("bridge/devices is not a JSON array of devices: %v", err)
	}
	var names []string
	for _, d := range list {
		names = append(names, d.FriendlyName)
		if d.Type == "Coordinator" {
			if d.Definition != nil {
				t.Error("the coordinator has a definition")
			}
			continue
		}
		if d.Definition == nil || len(d.Definition.Exposes) == 0 || d.Definition.Model == "" || d.Definition.Vendor == "" {
			t.Errorf("%s: incomplete definition", d.FriendlyName)
		}
		if !d.Supported || d.InterviewState != "SUCCESSFUL" || d.IEEEAddress == "" {
			t.Errorf("%s: supported=%v interview_state=%q ieee=%q", d.FriendlyName, d.Supported, d.InterviewState, d.IEEEAddress)
		}
	}
	want := append([]string{"Coordinator"}, z2mNames...)
	if !slices.Equal(names, want) {
		t.Errorf("bridge/devices names = %v, want %v", names, want)
	}
	if st := r.obs.json("zigbee2mqtt/bridge/state"); st["state"] != "online" {
		t.Errorf("bridge/state = %v", st)
	}
	for _, n := range z2mNames {
		testutil.Eventually(t, 3*time.Second, n+" availability and state", func() bool {
			a, okA := r.obs.get("zigbee2mqtt/" + n + "/availability")
			s, okS := r.obs.get("zigbee2mqtt/" + n)
			return okA && okS && a.Retained && s.Retained && string(a.Payload) == `{"state":"online"}`
		})
		if st := r.obs.json("zigbee2mqtt/" + n); st["last_seen"] == nil || st["linkquality"] == nil {
			t.Errorf("%s state lacks last_seen/linkquality: %v", n, st)
		}
	}
}

func TestExposesMirrorZigbee2MQTT(t *testing.T) {
	ds := demoDevices()
	byName := map[string]*device{}
	for _, d := range ds {
		byName[d.name] = d
	}
	light := byName["hall_light"].exposes[0]
	if light.Type != "light" || len(light.Features) != 2 || light.Features[1].Property != "brightness" ||
		*light.Features[1].ValueMax != 254 || light.Features[0].ValueToggle != "TOGGLE" {
		t.Errorf("hall_light composite = %+v", light)
	}
	contact := byName["front_door"].props["contact"]
	if contact.ValueOn != false || contact.ValueOff != true || contact.Access != accessPublished {
		t.Errorf("front_door contact = %+v, want Aqara style value_on=false", contact)
	}
	sp := byName["living_thermostat"].props["occupied_heating_setpoint"]
	if *sp.ValueMin != 5 || *sp.ValueMax != 30 || *sp.ValueStep != 0.5 || sp.Access != 7 {
		t.Errorf("setpoint = %+v", sp)
	}
	for _, d := range ds {
		for p, e := range d.props {
			if _, ok := d.state[p]; !ok && e.Access&accessPublished != 0 && p != "action" {
				t.Errorf("%s: published property %s has no initial state", d.name, p)
			}
		}
	}
}

func TestCommands(t *testing.T) {
	r := start(t, Options{})
	tests := []struct {
		name, topic, payload string
		device, key          string
		want                 any
	}{
		{"light on with brightness", "zigbee2mqtt/hall_light/set", `{"state":"ON","brightness":100}`, "hall_light", "brightness", 100.0},
		{"toggle", "zigbee2mqtt/porch_light/set", `{"state":"TOGGLE"}`, "porch_light", "state", "ON"},
		{"toggle back", "zigbee2mqtt/porch_light/set", `{"state":"TOGGLE"}`, "porch_light", "state", "OFF"},
		{"unlock", "zigbee2mqtt/front_lock/set", `{"state":"UNLOCK"}`, "front_lock", "lock_state", "unlocked"},
		{"lock", "zigbee2mqtt/front_lock/set", `{"state":"LOCK"}`, "front_lock", "lock_state", "locked"},
		{"cover open", "zigbee2mqtt/garage_door/set", `{"state":"OPEN"}`, "garage_door", "position", 100.0},
		{"cover position", "zigbee2mqtt/garage_door/set", `{"position":0}`, "garage_door", "state", "CLOSE"},
		{"plug off", "zigbee2mqtt/living_plug/set", `{"state":"OFF"}`, "living_plug", "power", 0.0},
		{"setpoint rounds to step", "zigbee2mqtt/living_thermostat/set", `{"occupied_heating_setpoint":22.3}`, "living_thermostat", "occupied_heating_setpoint", 22.5},
		{"system mode", "zigbee2mqtt/living_thermostat/set", `{"system_mode":"off"}`, "living_thermostat", "running_state", "idle"},
		{"property topic plain text", "zigbee2mqtt/hall_light/set/state", `OFF`, "hall_light", "state", "OFF"},
		{"brightness turns light on", "zigbee2mqtt/hall_light/set/brightness", `30`, "hall_light", "state", "ON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.publish(t, tt.topic, tt.payload)
			st := r.waitState(t, tt.device, tt.key, tt.want)
			if got := r.sim.State(tt.device)[tt.key]; got != tt.want {
				t.Errorf("State(%s)[%s] = %v, want %v", tt.device, tt.key, got, tt.want)
			}
			if m, _ := r.obs.get("zigbee2mqtt/" + tt.device); m.Retained {
				t.Errorf("live state delivered as retained") // the broker clears the flag for live delivery
			}
			_ = st
		})
	}
	st := r.waitState(t, "hall_light", "brightness", 30.0)
	if st["state"] != "ON" {
		t.Errorf("hall_light = %v", st)
	}
}

func TestInvalidCommandsIgnored(t *testing.T) {
	r := start(t, Options{})
	bad := []struct{ topic, payload string }{
		{"zigbee2mqtt/hall_light/set", `not json`},
		{"zigbee2mqtt/hall_light/set", `[1,2,3]`},
		{"zigbee2mqtt/hall_light/set", `null`},
		{"zigbee2mqtt/hall_light/set", ``},
		{"zigbee2mqtt/hall_light/set", `{"brightness":"bright"}`},
		{"zigbee2mqtt/hall_light/set", `{"brightness":300}`},
		{"zigbee2mqtt/hall_light/set", `{"brightness":1e400}`},
		{"zigbee2mqtt/hall_light/set", `{"state":{"nested":true}}`},
		{"zigbee2mqtt/hall_light/set", `{"colour":"red"}`},
		{"zigbee2mqtt/hall_motion/set", `{"occupancy":true}`}, // published only
		{"zigbee2mqtt/front_lock/set", `{"lock_state":"unlocked"}`},
		{"zigbee2mqtt/living_thermostat/set", `{"occupied_heating_setpoint":40}`},
		{"zigbee2mqtt/living_thermostat/set", `{"system_mode":"cool"}`},
		{"zigbee2mqtt/no_such_device/set", `{"state":"ON"}`},
		{"zigbee2mqtt/outdoor_weather/set", `{"temperature":3}`},
		{"zigbee2mqtt/bridge/set", `{"state":"ON"}`},
		{"zigbee2mqtt/hall_light/set/", `ON`},
	}
	for _, b := range bad {
		r.publish(t, b.topic, b.payload)
	}
	// The simulator is still alive and nothing changed.
	r.publish(t, "zigbee2mqtt/porch_light/set", `{"state":"ON"}`)
	r.waitState(t, "porch_light", "state", "ON")
	want := map[string]map[string]any{
		"hall_light":        {"state": "OFF", "brightness": 128.0},
		"hall_motion":       {"occupancy": false},
		"front_lock":        {"lock_state": "locked"},
		"living_thermostat": {"occupied_heating_setpoint": 21.0, "system_mode": "heat"},
	}
	for dev, kv := range want {
		st := r.sim.State(dev)
		for k, v := range kv {
			if st[k] != v {
				t.Errorf("%s.%s = %v after invalid commands, want %v", dev, k, st[k], v)
			}
		}
	}
}

func TestGetRepublishes(t *testing.T) {
	r := start(t, Options{})
	testutil.Eventually(t, 3*time.Second, "initial state", func() bool { _, ok := r.obs.get("zigbee2mqtt/front_door"); return ok })
	first, _ := r.obs.get("zigbee2mqtt/front_door")
	r.publish(t, "zigbee2mqtt/front_door/get", `{"contact":""}`)
	testutil.Eventually(t, 3*time.Second, "state republished on get", func() bool {
		m, _ := r.obs.get("zigbee2mqtt/front_door")
		return !m.Retained && string(m.Payload) != string(first.Payload)
	})
}

func TestHomeAssistantDiscovery(t *testing.T) {
	r := start(t, Options{})
	for _, key := range []string{"temperature", "humidity"} {
		topic := "homeassistant/sensor/outdoor_weather/" + key + "/config"
		testutil.Eventually(t, 3*time.Second, topic, func() bool { _, ok := r.obs.get(topic); return ok })
		cfg := r.obs.json(topic)
		if cfg["state_topic"] != "pilothouse-demo/outdoor_weather/state" ||
			cfg["value_template"] != "{{ value_json."+key+" }}" ||
			cfg["device_class"] != key || cfg["unit_of_measurement"] == nil ||
			cfg["availability_topic"] != "pilothouse-demo/outdoor_weather/availability" {
			t.Errorf("%s = %v", topic, cfg)
		}
		dev, _ := cfg["device"].(map[string]any)
		if dev["name"] != "outdoor_weather" || dev["identifiers"] == nil || dev["manufacturer"] == nil || dev["model"] == nil {
			t.Errorf("%s device = %v", topic, dev)
		}
	}
	testutil.Eventually(t, 3*time.Second, "weather state", func() bool {
		st := r.obs.json("pilothouse-demo/outdoor_weather/state")
		return st["temperature"] != nil && st["humidity"] != nil
	})
	if err := r.sim.Trigger(ctxT(t), "outdoor_weather", map[string]any{"temperature": -3.5}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 3*time.Second, "triggered weather", func() bool {
		return r.obs.json("pilothouse-demo/outdoor_weather/state")["temperature"] == -3.5
	})
	if _, ok := r.obs.get("zigbee2mqtt/outdoor_weather"); ok {
		t.Error("outdoor_weather must only be announced through Home Assistant discovery")
	}
}

func TestTriggerAndPress(t *testing.T) {
	r := start(t, Options{})
	if err := r.sim.Trigger(ctxT(t), "hall_motion", map[string]any{"occupancy": true, "illuminance": 12}); err != nil {
		t.Fatal(err)
	}
	st := r.waitState(t, "hall_motion", "occupancy", true)
	if st["illuminance"] != 12.0 {
		t.Errorf("hall_motion = %v", st)
	}
	// As the device would report it: an unlocked lock's lock_state says
	// so (the assistant judge had to set both); what is given stands.
	if err := r.sim.Trigger(ctxT(t), "front_lock", map[string]any{"state": "UNLOCK"}); err != nil {
		t.Fatal(err)
	}
	if st := r.waitState(t, "front_lock", "state", "UNLOCK"); st["lock_state"] != "unlocked" {
		t.Errorf("front_lock after an unlock: %v", st)
	}
	if err := r.sim.Trigger(ctxT(t), "front_lock", map[string]any{"state": "LOCK", "lock_state": "not_fully_locked"}); err != nil {
		t.Fatal(err)
	}
	if st := r.waitState(t, "front_lock", "state", "LOCK"); st["lock_state"] != "not_fully_locked" {
		t.Errorf("front_lock with lock_state given: %v", st)
	}
	// A refusal names what is allowed, so a person driving the demo by
	// hand can correct it.
	for _, bad := range []struct {
		dev   string
		patch map[string]any
		says  string
	}{
		{"nope", map[string]any{"state": "ON"}, "the demo devices: hall_light, porch_light, hall_motion"},
		{"hall_motion", map[string]any{"colour": 1}, "its properties: battery, illuminance, linkquality, occupancy"},
		{"hall_motion", map[string]any{"occupancy": "maybe"}, "want true or false"},
		{"hall_motion", map[string]any{}, "nothing to change"},
		{"outdoor_weather", map[string]any{"pressure": 1000.0}, "its properties: humidity, temperature"},
		{"bedroom_remote", map[string]any{"action": "explode"}, "toggle_double"},
	} {
		err := r.sim.Trigger(ctxT(t), bad.dev, bad.patch)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("Trigger(%s, %v) = %v, want ErrInvalid saying %q", bad.dev, bad.patch, err, bad.says)
		}
	}
	if err := r.sim.Press(ctxT(t), "double"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 3*time.Second, "a gesture alone presses the toggle button", func() bool {
		a, ok := r.obs.get("zigbee2mqtt/bedroom_remote/action")
		return ok && string(a.Payload) == "toggle_double"
	})
	if err := r.sim.Press(ctxT(t), "brightness_up"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 3*time.Second, "remote action", func() bool {
		a, ok := r.obs.get("zigbee2mqtt/bedroom_remote/action")
		return ok && string(a.Payload) == "brightness_up" && r.obs.json("zigbee2mqtt/bedroom_remote")["action"] == "brightness_up"
	})
	if err := r.sim.Press(ctxT(t), "explode"); err == nil {
		t.Error("Press(explode) succeeded")
	}
	// The press is an event: a new subscriber sees the retained state without it.
	late := newObserver(t, r.broker)
	testutil.Eventually(t, 3*time.Second, "retained remote state", func() bool { _, ok := late.get("zigbee2mqtt/bedroom_remote"); return ok })
	if st := late.json("zigbee2mqtt/bedroom_remote"); st["action"] != nil {
		t.Errorf("retained remote state carries an action: %v", st)
	}
}

func TestRemoveAndRename(t *testing.T) {
	r := start(t, Options{})
	if err := r.sim.Remove("porch_light"); err != nil {
		t.Fatal(err)
	}
	if err := r.sim.Rename("hall_light", "entry_light"); err != nil {
		t.Fatal(err)
	}
	if err := r.sim.Remove("outdoor_weather"); err != nil {
		t.Fatal(err)
	}
	if err := r.sim.Remove("porch_light"); err == nil {
		t.Error("removing twice succeeded")
	}
	if err := r.sim.Rename("front_door", "front_lock"); err == nil {
		t.Error("renaming onto an existing name succeeded")
	}
	late := newObserver(t, r.broker)
	testutil.Eventually(t, 3*time.Second, "bridge/devices", func() bool { _, ok := late.get("zigbee2mqtt/bridge/devices"); return ok })
	m, _ := late.get("zigbee2mqtt/bridge/devices")
	var list []struct {
		FriendlyName string `json:"friendly_name"`
	}
	if err := json.Unmarshal(m.Payload, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range list {
		names = append(names, d.FriendlyName)
	}
	if len(names) != 9 || slices.Contains(names, "porch_light") || slices.Contains(names, "hall_light") || !slices.Contains(names, "entry_light") {
		t.Errorf("bridge/devices after remove+rename = %v", names)
	}
	testutil.Eventually(t, 3*time.Second, "renamed device state", func() bool { _, ok := late.get("zigbee2mqtt/entry_light"); return ok })
	for _, gone := range []string{"zigbee2mqtt/porch_light", "zigbee2mqtt/hall_light", "homeassistant/sensor/outdoor_weather/temperature/config"} {
		if _, ok := late.get(gone); ok {
			t.Errorf("%s is still retained", gone)
		}
	}
	if r.sim.State("porch_light") != nil || r.sim.State("entry_light") == nil || r.sim.State("outdoor_weather") != nil {
		t.Error("State does not reflect remove/rename")
	}
}

func TestSpontaneousBehaviour(t *testing.T) {
	r := start(t, Options{Pace: 10 * time.Millisecond, Seed: 7})
	changed := func() map[string]bool {
		r.obs.mu.Lock()
		defer r.obs.mu.Unlock()
		seen := map[string]bool{}
		for _, m := range r.obs.all {
			if !m.Retained {
				seen[m.Topic] = true
			}
		}
		return seen
	}
	want := []string{"zigbee2mqtt/hall_motion", "zigbee2mqtt/living_plug", "zigbee2mqtt/living_thermostat",
		"pilothouse-demo/outdoor_weather/state", "zigbee2mqtt/bedroom_remote/action"}
	testutil.Eventually(t, 10*time.Second, "spontaneous changes on every simulated sensor", func() bool {
		seen := changed()
		for _, w := range want {
			if !seen[w] {
				return false
			}
		}
		return true
	})
	start := time.Now()
	r.sim.Close()
	r.sim.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %s", d)
	}
}

func TestNotifications(t *testing.T) {
	r := start(t, Options{NotifyTopic: "pilothouse/notify/phone"})
	r.publish(t, "pilothouse/notify/phone", `{"message":"Door open","title":""}`)
	testutil.Eventually(t, 3*time.Second, "phone notification", func() bool {
		ns := r.sim.Notifications()
		return len(ns) == 1 && ns[0].Payload == `{"message":"Door open","title":""}`
	})
}

func TestReannounceAfterBrokerRestart(t *testing.T) {
	r := start(t, Options{})
	addr := r.broker.Addr()
	if err := r.broker.Close(); err != nil {
		t.Fatal(err)
	}
	b2, err := mqtt.StartBroker(addr, quiet())
	if err != nil {
		t.Skipf("cannot restart the broker on %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = b2.Close() })
	late := newObserver(t, b2)
	// The client's reconnect backs off up to 10 s between attempts of up
	// to 5 s each; on a loaded CI machine one attempt may meet the old
	// listener as it closes. 45 s leaves room for a few.
	testutil.Eventually(t, 45*time.Second, "retained bridge/devices on the new broker", func() bool {
		_, ok := late.get("zigbee2mqtt/bridge/devices")
		return ok
	})
}

func TestStartTwice(t *testing.T) {
	r := start(t, Options{})
	if err := r.sim.Start(ctxT(t)); err == nil {
		t.Error("second Start succeeded")
	}
}

// TestPlugNoiseKeepsASetDraw: the plug's noise is a few percent around the
// draw it has, so a draw set by hand (a washing machine done at 3 W) stays
// below 5 W long enough for a "below 5 W for 3 minutes" rule to see it.
func TestPlugNoiseKeepsASetDraw(t *testing.T) {
	r := start(t, Options{})
	if err := r.sim.Trigger(ctxT(t), "living_plug", map[string]any{"state": "ON", "power": 3}); err != nil {
		t.Fatal(err)
	}
	r.waitState(t, "living_plug", "power", 3.0)
	for range 50 {
		r.sim.plugNoise()
	}
	if p, _ := r.sim.State("living_plug")["power"].(float64); p <= 0 || p >= 5 {
		t.Fatalf("power after 50 noise ticks from 3 W: %v", p)
	}
}
