package devices

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// fakeConn is an in-memory mqtt.PubSub that records publishes and
// subscriptions.
type fakeConn struct {
	mu        sync.Mutex
	subs      []string
	pubs      []published
	err       error
	handlers  map[string]mqtt.Handler
	connected bool
}

type published struct {
	Topic   string
	Payload string
	QoS     byte
}

func newFakeConn() *fakeConn { return &fakeConn{handlers: map[string]mqtt.Handler{}, connected: true} }

func (f *fakeConn) Subscribe(filter string, qos byte, h mqtt.Handler) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, filter)
	f.handlers[filter] = h
	return nil
}

func (f *fakeConn) Publish(ctx context.Context, topic string, payload []byte, qos byte, retain bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.connected {
		return mqtt.ErrNotConnected
	}
	f.pubs = append(f.pubs, published{topic, string(payload), qos})
	return f.err
}

func (f *fakeConn) published() []published {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]published(nil), f.pubs...)
}

func (f *fakeConn) subscribed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.subs...)
}

// bridgeTwo is a Zigbee2MQTT bridge: a light named with a space and a motion sensor.
var bridgeTwo = testutil.Z2MBridge(testutil.Z2MLight("0x02", "Hall Light"), testutil.Z2MMotion("0x03", "hall_motion"))

func msg(topic, payload string) mqtt.Message {
	return mqtt.Message{Topic: topic, Payload: []byte(payload)}
}

func TestGenerationAndHashes(t *testing.T) {
	c, clk := newTestCatalog()
	var changes []Change
	cancel := c.Subscribe(func(ch Change) { changes = append(changes, ch) })
	defer cancel()
	c.HandleMessage(msg("zigbee2mqtt/bridge/devices", bridgeTwo))
	s1 := c.Snapshot()
	ids := []string{"hall_light", "hall_light.state", "hall_light.brightness", "hall_light.set", "hall_light.get", "hall_motion", "hall_motion.occupancy", "hall_motion.illuminance"}
	for _, id := range ids {
		if s1.Hash(id) == "" {
			t.Fatalf("missing %s", id)
		}
	}
	if s1.Len() != len(ids) {
		t.Fatalf("entries %d, want %d", s1.Len(), len(ids))
	}

	type step struct {
		name        string
		msgs        []mqtt.Message
		genDelta    uint64
		changed     []string // ids whose hash differs (added/removed included)
		wantChanges []Change
	}
	renamed := `[{"ieee_address":"0x03","type":"EndDevice","friendly_name":"landing_motion","supported":true,"definition":{"vendor":"Aqara","model":"M1","description":"Motion","exposes":[{"type":"binary","name":"occupancy","property":"occupancy","access":1,"value_on":true,"value_off":false},{"type":"numeric","name":"illuminance","property":"illuminance","access":1,"unit":"lx"}]}}`
	steps := []step{
		{name: "state update", msgs: []mqtt.Message{msg("zigbee2mqtt/hall_motion", `{"occupancy":true,"illuminance":"12"}`)},
			wantChanges: []Change{{Kind: ChangeState, ID: "hall_motion.illuminance", Value: 12.0}, {Kind: ChangeState, ID: "hall_motion.occupancy", Value: true}}},
		{name: "same state again", msgs: []mqtt.Message{msg("zigbee2mqtt/hall_motion", `{"occupancy":true}`)}},
		{name: "availability", msgs: []mqtt.Message{msg("zigbee2mqtt/hall_motion/availability", `OFFLINE`)},
			wantChanges: []Change{{Kind: ChangeAvailability, ID: "hall_motion", Value: false}}},
		{name: "identical bridge/devices", msgs: []mqtt.Message{msg("zigbee2mqtt/bridge/devices", bridgeTwo)}},
		{name: "malformed bridge/devices", msgs: []mqtt.Message{msg("zigbee2mqtt/bridge/devices", `[{"ieee_address":`)}},
		{name: "re-expose brightness range", genDelta: 1,
			msgs:    []mqtt.Message{msg("zigbee2mqtt/bridge/devices", replaceOnce(bridgeTwo, `"value_max":254`, `"value_max":100`))},
			changed: []string{"hall_light.brightness", "hall_light.set"}},
		{name: "rename", genDelta: 1,
			msgs: []mqtt.Message{msg("zigbee2mqtt/bridge/devices", replaceOnce(replaceOnce(bridgeTwo, `"value_max":254`, `"value_max":100`),
				`"friendly_name":"hall_motion"`, `"friendly_name":"landing_motion"`))},
			changed: []string{"hall_motion", "hall_motion.occupancy", "hall_motion.illuminance", "landing_motion", "landing_motion.occupancy", "landing_motion.illuminance"}},
		{name: "remove", genDelta: 1,
			msgs:    []mqtt.Message{msg("zigbee2mqtt/bridge/devices", renamed+"]")},
			changed: []string{"hall_light", "hall_light.state", "hall_light.brightness", "hall_light.set", "hall_light.get"}},
	}
	prev := s1
	for _, st := range steps {
		changes = nil
		for _, m := range st.msgs {
			clk.t = clk.t.Add(time.Second)
			c.HandleMessage(m)
		}
		cur := c.Snapshot()
		if cur.Gen-prev.Gen != st.genDelta {
			t.Errorf("%s: gen %d -> %d, want +%d", st.name, prev.Gen, cur.Gen, st.genDelta)
		}
		var diff []string
		seen := map[string]bool{}
		for _, e := range append(prev.Entries(), cur.Entries()...) {
			if !seen[e.ID] && prev.Hash(e.ID) != cur.Hash(e.ID) {
				diff = append(diff, e.ID)
			}
			seen[e.ID] = true
		}
		if !sameSet(diff, st.changed) {
			t.Errorf("%s: changed %v, want %v", st.name, diff, st.changed)
		}
		if st.wantChanges != nil {
			var got []Change
			for _, ch := range changes {
				got = append(got, Change{Kind: ch.Kind, ID: ch.ID, Value: ch.Value})
			}
			if !reflect.DeepEqual(got, st.wantChanges) {
				t.Errorf("%s: changes %+v, want %+v", st.name, got, st.wantChanges)
			}
		}
		if st.genDelta > 0 {
			var cat int
			for _, ch := range changes {
				if ch.Kind == ChangeCatalog {
					cat++
				}
			}
			if cat != len(st.changed) {
				t.Errorf("%s: %d catalog changes, want %d", st.name, cat, len(st.changed))
			}
		}
		prev = cur
	}
}

func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	panic("replaceOnce: " + old + " not found")
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}

func TestLiveDeviceObjectAndEvents(t *testing.T) {
	c, _ := newTestCatalog()
	c.HandleMessage(msg("zigbee2mqtt/bridge/devices", `[{"ieee_address":"0x9","type":"EndDevice","friendly_name":"remote","definition":{"vendor":"IKEA","model":"E1524/E1810","description":"Remote","exposes":[{"type":"enum","name":"action","property":"action","access":1,"values":["toggle","on"]},{"type":"numeric","name":"battery","property":"battery","access":1}]}}]`))
	var evs []Change
	c.Subscribe(func(ch Change) {
		if ch.Kind == ChangeEvent {
			evs = append(evs, ch)
		}
	})
	c.HandleMessage(msg("zigbee2mqtt/remote", `{"action":"toggle","battery":90,"linkquality":20}`))
	c.HandleMessage(msg("zigbee2mqtt/remote/action", `toggle`)) // same press, other topic: deduped
	c.HandleMessage(msg("zigbee2mqtt/remote", `{"action":""}`))
	c.HandleMessage(msg("zigbee2mqtt/remote/action", `on`))
	if len(evs) != 2 || evs[0].Value != "toggle" || evs[1].Value != "on" || evs[0].ID != "remote.action" {
		t.Fatalf("events %+v", evs)
	}
	// A genuine double press within the window is two events, reported
	// as pairs or on one topic only.
	evs = nil
	for i := 0; i < 2; i++ {
		c.HandleMessage(msg("zigbee2mqtt/remote", `{"action":"toggle"}`))
		c.HandleMessage(msg("zigbee2mqtt/remote/action", `toggle`))
	}
	c.HandleMessage(msg("zigbee2mqtt/remote", `{"action":"on"}`))
	c.HandleMessage(msg("zigbee2mqtt/remote", `{"action":"on"}`))
	if len(evs) != 4 {
		t.Fatalf("double presses: %d events %+v, want 4", len(evs), evs)
	}
	l, ok := c.Live("remote")
	obj, _ := l.Value.(map[string]any)
	if !ok || obj["battery"] != 90.0 || obj["linkquality"] != 20.0 {
		t.Fatalf("device live %+v", l)
	}
	if _, ok := c.Live("nope"); ok {
		t.Fatal("unknown id has live value")
	}
}

func TestCallPublishes(t *testing.T) {
	msgs := loadReplay(t)
	hook := make(chan map[string]any, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &m)
		hook <- m
	}))
	defer srv.Close()
	c, clk := newTestCatalog(func(o *Options) {
		o.Notify = []NotifyChannel{{ID: "notify.phone", Name: "Phone", Topic: "notify/phone"}, {ID: "notify.hook", URL: srv.URL}}
	})
	replayUntil(c, clk, msgs, 30)
	ctx := context.Background()
	if err := c.Call(ctx, "living_room_ceiling_light.set", map[string]any{"state": "ON"}); !errors.Is(err, mqtt.ErrNotConnected) {
		t.Fatalf("before Start: %v, want ErrNotConnected", err)
	}
	conn := newFakeConn()
	startCtx, stop := context.WithCancel(ctx)
	defer stop()
	if err := c.Start(startCtx, conn); err != nil {
		t.Fatal(err)
	}
	replayUntil(c, clk, msgs[31:], -1)
	cases := []struct {
		id      string
		args    map[string]any
		want    []published
		wantErr string
	}{
		{"living_room_ceiling_light.set", map[string]any{"state": "ON", "brightness": 128}, []published{{"zigbee2mqtt/living_room/ceiling_light/set", `{"brightness":128,"state":"ON"}`, 1}}, ""},
		{"living_room_ceiling_light.set", map[string]any{"brightness": 300}, nil, "living_room_ceiling_light.set: brightness: 300 is above the maximum 254"},
		{"living_room_ceiling_light.set", map[string]any{"colour": 1}, nil, "living_room_ceiling_light.set: colour: unknown argument"},
		{"living_room_ceiling_light.set", map[string]any{}, nil, "living_room_ceiling_light.set: at least 1 argument(s) required"},
		{"front_door_lock.set", map[string]any{"state": "UNLOCK"}, []published{{"zigbee2mqtt/front_door_lock/set", "UNLOCK", 1}}, ""},
		{"bedroom_blind.set", map[string]any{"position": 30}, []published{{"zigbee2mqtt/bedroom/blind/set", `{ "position": 30 }`, 1}}, ""},
		{"office_radiator.set", map[string]any{"occupied_heating_setpoint": 21.5}, []published{{"zigbee2mqtt/office_radiator/set/occupied_heating_setpoint", "21.5", 1}}, ""},
		{"relay02_01.set", map[string]any{"state": "OFF"}, []published{{"XefilHome/GARDEN02/cmnd/POWER1", "OFF", 1}}, ""},
		{"kitchen.set", map[string]any{"position": 40}, []published{{"somfy/0x279621/level/cmd", "40", 1}}, ""},
		{"vd.set", map[string]any{"state": "UNLOCK"}, []published{{"nuki/2FFF94F4/lockAction", "1", 1}}, ""},
		{"led1.set", map[string]any{"state": "ON", "brightness": 50}, []published{{"cmnd/led1/Dimmer", "50", 1}}, ""},
		{"kitchen_2.set", map[string]any{"brightness": 10}, nil, "kitchen_2.set: brightness: unknown argument"},
		{"kitchen_2.set", map[string]any{"state": "ON"}, []published{{"homeassistant/light/kitchen/set", `{"state":"ON"}`, 1}}, ""},
		{"pi_touchscreen.current_brightness.set", map[string]any{"value": 200}, []published{{"pi_ts_control/brightness/set", "200", 1}}, ""},
		{"notify.phone", map[string]any{"message": "hi"}, []published{{"notify/phone", `{"message":"hi"}`, 1}}, ""},
		{"notify.phone", map[string]any{"title": "x"}, nil, "notify.phone: argument message is required"},
		{"hallway_motion.occupancy", map[string]any{"x": 1}, nil, `devices: unknown action "hallway_motion.occupancy"`},
	}
	for _, tc := range cases {
		t.Run(tc.id, func(t *testing.T) {
			before := len(conn.published())
			err := c.Call(ctx, tc.id, tc.args)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := conn.published()[before:]
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("published %+v, want %+v", got, tc.want)
			}
		})
	}
	if err := c.Call(ctx, "notify.hook", map[string]any{"message": "m", "title": "t"}); err != nil {
		t.Fatal(err)
	}
	if got := <-hook; got["message"] != "m" || got["title"] != "t" {
		t.Fatalf("webhook body %v", got)
	}
	if e, _ := c.Snapshot().Get("notify.phone"); e == nil || e.Risk != "external" || !e.RiskHints.OpenWorld {
		t.Fatalf("notify entry %+v", e)
	}
	conn.mu.Lock()
	conn.connected = false
	conn.mu.Unlock()
	if err := c.Call(ctx, "relay02_01.set", map[string]any{"state": "ON"}); !errors.Is(err, mqtt.ErrNotConnected) {
		t.Fatalf("disconnected: %v", err)
	}
	// Start subscribed the static filters and, on its goroutine, the state
	// topics discovery pointed outside them.
	testutil.Eventually(t, waitTime, "the static filters and the state topics subscribed", func() bool {
		return containsAll(fmt.Sprint(conn.subscribed()), "zigbee2mqtt/+ ", "zigbee2mqtt/bridge/devices", "homeassistant/+/+/config",
			"tasmota01/tele/SENSOR", "nuki/2FFF94F4/connected")
	})
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		found := false
		for i := 0; i+len(p) <= len(s); i++ {
			if s[i:i+len(p)] == p {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func TestStateIDsForActionUnknown(t *testing.T) {
	c, _ := newTestCatalog()
	if m := c.StateIDsForAction("nope.set"); m != nil {
		t.Fatalf("got %v", m)
	}
}

func TestCallZ2MNative(t *testing.T) {
	c, _ := newTestCatalog()
	c.HandleMessage(msg("zigbee2mqtt/bridge/devices", bridgeTwo))
	conn := newFakeConn()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	if err := c.Start(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, "hall_light.set", map[string]any{"state": "TOGGLE", "brightness": 254}); err != nil {
		t.Fatal(err)
	}
	want := []published{{"zigbee2mqtt/Hall Light/set", `{"brightness":254,"state":"TOGGLE"}`, 1}}
	if got := conn.published(); !reflect.DeepEqual(got, want) {
		t.Fatalf("published %+v", got)
	}
	if got := c.StateIDsForAction("hall_light.set"); !reflect.DeepEqual(got, map[string]string{"state": "hall_light.state", "brightness": "hall_light.brightness"}) {
		t.Fatalf("StateIDsForAction %v", got)
	}
}

// TestCommandTopicsAreNotKeptAsPendingState: the catalog's filters match
// no Zigbee2MQTT command (TestCommandsDoNotComeBack), but a command handed
// to HandleMessage is never state either, so it is not kept for a device
// discovered later, while a state message that arrives before discovery
// still is.
func TestCommandTopicsAreNotKeptAsPendingState(t *testing.T) {
	c := NewCatalog(Options{})
	for _, topic := range []string{"zigbee2mqtt/lamp/set", "zigbee2mqtt/lamp/get", "zigbee2mqtt/lamp/set/brightness", "zigbee2mqtt/living/lamp/get/state"} {
		c.HandleMessage(mqtt.Message{Topic: topic, Payload: []byte(`{"state":"ON"}`)})
	}
	c.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bench_sensor_0", Payload: []byte(`{"count3":7}`)})
	c.mu.Lock()
	pending := len(c.pending)
	c.mu.Unlock()
	if pending != 1 {
		t.Fatalf("%d pending topics, want only the early state message", pending)
	}
	c.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: SyntheticZ2MHouse(1, 4)})
	if v, ok := c.Live("bench_sensor_0.count3"); !ok || v.Value != 7.0 {
		t.Fatalf("early state not replayed after discovery: %+v %v", v, ok)
	}
}
