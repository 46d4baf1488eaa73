package mcpserver_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// toggle is a body that toggles the plug.
const toggle = `"steps":[{"id":"flip","call":"living_plug.set","args":{"state":"TOGGLE"}}]}`

// TestRulesThatFireThemselvesAreStopped: rules that fire themselves or
// each other without end (the attacker judge's 253,690 commands in 9.5 s
// from one rule toggling the plug on its own state; 15,300 a second from
// two rules feeding each other; a Home Assistant mirror of the plug) are
// stopped after a bounded number of commands: the rule whose firing would
// be 20 rule-caused hops deep is disabled, stored, and says so. A rule a
// busy sensor fires, commanding another device, is untouched.
func TestRulesThatFireThemselvesAreStopped(t *testing.T) {
	mirror := discovery{"homeassistant/sensor/plugmirror/config", "plug_mirror.state",
		`{"name":"Plug mirror","state_topic":"zigbee2mqtt/living_plug","value_template":"{{ value_json.state }}","unique_id":"plugmirror"}`}
	// A switch on the plug that commands it per attribute, as Zigbee2MQTT
	// also takes (<base>/<device>/set/<attribute>).
	// A switch whose command topic is a door sensor's availability topic.
	availSwitch := discovery{"homeassistant/switch/atka/config", "atka.set",
		`{"name":"atka","state_topic":"atk/a","command_topic":"atk/avail","payload_on":"online","payload_off":"offline","unique_id":"atka"}`}
	availSensor := discovery{"homeassistant/binary_sensor/atkb/config", "atkb.state",
		`{"name":"atkb","state_topic":"atk/b","availability_topic":"atk/avail","device_class":"door","unique_id":"atkb"}`}
	attrSwitch := discovery{"homeassistant/switch/mirrorsw/config", "mirror.set",
		`{"name":"Mirror","state_topic":"zigbee2mqtt/living_plug","value_template":"{{ value_json.state }}","command_topic":"zigbee2mqtt/living_plug/set/state","payload_on":"ON","payload_off":"OFF","state_on":"ON","state_off":"OFF","unique_id":"mirrorsw"}`}
	cases := []struct {
		name     string
		config   []discovery // published first
		programs []string
		kick     func(h *testhouse.House) error
		stopped  []string // one of these is disabled
	}{
		{"a plug toggled on its own state", nil, []string{`{"name":"loop",` + `"triggers":[{"id":"t","state":"living_plug.state"}],` + toggle}, kickPlug, []string{"loop"}},
		{"held for 50 ms", nil, []string{`{"name":"loop",` + `"triggers":[{"id":"t","state":"living_plug.state","for":"50ms"}],` + toggle}, kickPlug, []string{"loop"}},
		{"a helper toggled on its own state, queued", nil, []string{`{"name":"loop","mode":"queued","triggers":[{"id":"t","state":"ping.state"}],"steps":[{"id":"flip","call":"ping.toggle"}]}`},
			func(h *testhouse.House) error { return h.Devices.Call(context.Background(), "ping.toggle", nil) }, []string{"loop"}},
		{"two rules feeding each other", nil, []string{
			`{"name":"plug-to-porch","triggers":[{"id":"t","state":"living_plug.state"}],"steps":[{"id":"flip","call":"porch_light.set","args":{"state":"TOGGLE"}}]}`,
			`{"name":"porch-to-plug","triggers":[{"id":"t","state":"porch_light.state"}],` + toggle}, kickPlug, []string{"plug-to-porch", "porch-to-plug"}},
		{"a mirror entity on the plug's topic", []discovery{mirror}, []string{`{"name":"loop","mode":"queued","triggers":[{"id":"t","state":"plug_mirror.state"}],` + toggle}, kickPlug, []string{"loop"}},
		{"a switch commanding the plug per attribute", []discovery{attrSwitch}, []string{
			`{"name":"on-to-off","triggers":[{"id":"t","state":"living_plug.state","to":"ON"}],"steps":[{"id":"off","call":"mirror.set","args":{"state":"OFF"}}]}`,
			`{"name":"off-to-on","triggers":[{"id":"t","state":"living_plug.state","to":"OFF"}],"steps":[{"id":"on","call":"mirror.set","args":{"state":"ON"}}]}`},
			kickPlug, []string{"on-to-off", "off-to-on"}},
		{"a command on another device's availability topic", []discovery{availSwitch, availSensor}, []string{
			`{"name":"gone","triggers":[{"id":"t","available":"atkb.state","to":false}],"steps":[{"id":"on","call":"atka.set","args":{"state":"ON"}}]}`,
			`{"name":"back","triggers":[{"id":"t","available":"atkb.state","to":true}],"steps":[{"id":"off","call":"atka.set","args":{"state":"OFF"}}]}`},
			func(h *testhouse.House) error { // a first report is a baseline; then a change
				if err := h.Conn.Publish(context.Background(), "atk/avail", []byte("online"), 0, false); err != nil {
					return err
				}
				return h.Conn.Publish(context.Background(), "atk/avail", []byte("offline"), 0, false)
			}, []string{"gone", "back"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, c, sets := loopHouse(t, tc.config)
			for _, p := range tc.programs {
				deployed(t, c, p)
			}
			deployed(t, c, `{"name":"motion-light","mode":"queued","triggers":[{"id":"m","state":"hall_motion.occupancy"}],
			  "steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)
			for i := range 30 { // a sensor busy on its own: not a loop
				if err := h.Sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": i%2 == 0}); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.kick(h); err != nil {
				t.Fatal(err)
			}
			stopped := func() string {
				for _, name := range tc.stopped {
					if ruleStatus(t, h, name) == "disabled" {
						return name
					}
				}
				return ""
			}
			testutil.Eventually(t, 20*time.Second, "a looping rule disabled", func() bool { return stopped() != "" })
			n := settled(t, sets)
			if n > 60 {
				t.Errorf("%d commands to the plug before the loop stopped, want about 20", n)
			}
			if got := ruleStatus(t, h, "motion-light"); got != "enabled" {
				t.Errorf("motion-light: %s, want enabled", got)
			}
			checkLoopSaid(t, h, stopped())
		})
	}
}

// discovery is a Home Assistant discovery config and the entry it makes.
type discovery struct{ topic, entry, config string }

// loopHouse starts a house with a flag helper "ping" and a counter of the
// commands to the plug (any topic under zigbee2mqtt/living_plug/set);
// configs are published first.
func loopHouse(t *testing.T, configs []discovery) (*testhouse.House, *client.Client, *atomic.Int64) {
	h := testhouse.RunHouse(t, testhouse.Options{})
	var sets atomic.Int64
	if err := h.Conn.Subscribe("zigbee2mqtt/living_plug/set/#", 0, func(mqtt.Message) { sets.Add(1) }); err != nil {
		t.Fatal(err)
	}
	c := h.InProcess()
	if out, isErr := callTool(t, c, "pilothouse_helpers", map[string]any{"verb": "create", "helper": map[string]any{"id": "ping", "kind": "flag"}}); isErr {
		t.Fatalf("create ping: %v", out)
	}
	for _, config := range configs {
		if err := h.Conn.Publish(context.Background(), config.topic, []byte(config.config), 1, true); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, config.entry+" in the catalog", func() bool {
			_, ok := h.Devices.Snapshot().Get(config.entry)
			return ok
		})
	}
	return h, c, &sets
}

func kickPlug(h *testhouse.House) error {
	return h.Conn.Publish(context.Background(), "zigbee2mqtt/living_plug/set", []byte(`{"state":"TOGGLE"}`), 0, false)
}

func ruleStatus(t *testing.T, h *testhouse.House, name string) string {
	ri, err := h.Engine.GetRule(context.Background(), name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return ri.Status
}

// settled waits until no command arrives for 300 ms and returns the count.
func settled(t *testing.T, sets *atomic.Int64) int64 {
	var n int64
	testutil.Eventually(t, 15*time.Second, "the commands to stop", func() bool {
		before := sets.Load()
		time.Sleep(300 * time.Millisecond) // a window to see none arrive, not a sync
		n = sets.Load()
		return n == before
	})
	return n
}

// checkLoopSaid: the stopped rule is stored disabled, counted on
// /healthz's runs.loops_stopped, and the logbook says why.
func checkLoopSaid(t *testing.T, h *testhouse.House, name string) {
	ctx := context.Background()
	if got := h.Engine.RunStats().LoopsStopped; got != 1 {
		t.Errorf("loops_stopped %d, want 1", got)
	}
	if r, err := h.Store.GetRule(ctx, name); err != nil || r.Enabled {
		t.Errorf("stored rule %s: enabled %v (%v), want disabled across a restart", name, r.Enabled, err)
	}
	h.Engine.FlushLogbook()
	page, err := h.Engine.Logbook(ctx, engine.LogQuery{Rule: name})
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range page.Entries {
		if strings.Contains(en.Text, "rule "+name+" disabled") && strings.Contains(en.Text, "20th time in a row because of a rule's command") {
			return
		}
	}
	t.Errorf("no logbook line says why %s stopped: %+v", name, page.Entries)
}
