package devices

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// testdata/z2m_rows.json holds real definitions (zigbee-herdsman-converters
// 26.112.0 as devices/testdata/gen/zhc.js serialises them; only the
// exposes the table rows need are kept), one device per row.
func rowsCatalog(t *testing.T) (*Catalog, *fakeConn) {
	t.Helper()
	b, err := os.ReadFile("testdata/z2m_rows.json")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := newTestCatalog()
	conn := newFakeConn()
	if err := c.Start(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	c.HandleMessage(msg("zigbee2mqtt/bridge/devices", string(b)))
	return c, conn
}

// TestZ2MRowsPublish sends what a rule would and checks the exact message
// Zigbee2MQTT receives, or that the call is refused (topic "").
func TestZ2MRowsPublish(t *testing.T) {
	c, conn := rowsCatalog(t)
	cases := []struct {
		row, action, args string
		topic, payload    string
	}{
		// numeric with presets: a name is sent as its value; values
		// outside the range are presets too.
		{"presets", "festavia.set", `{"color_temp":"warm"}`, "zigbee2mqtt/festavia/set", `{"color_temp":454}`},
		{"presets", "festavia.set", `{"color_temp":"warmest","transition":2}`, "zigbee2mqtt/festavia/set", `{"color_temp":1000,"transition":2}`},
		{"presets", "festavia.set", `{"color_temp_startup":"previous"}`, "zigbee2mqtt/festavia/set", `{"color_temp_startup":65535}`},
		{"presets", "festavia.set", `{"color_temp_startup":65535}`, "zigbee2mqtt/festavia/set", `{"color_temp_startup":65535}`},
		{"presets", "festavia.set", `{"color_temp":1001}`, "", ""},
		{"presets", "festavia.set", `{"color_temp":"hot"}`, "", ""},
		{"presets", "rotary_dimmer.set", `{"level_config":{"on_transition_time":"disabled","on_level":"previous"}}`,
			"zigbee2mqtt/rotary_dimmer/set", `{"level_config":{"on_level":"previous","on_transition_time":"disabled"}}`},
		{"presets", "line_thermostat.set", `{"eco_mode":"disabled"}`, "zigbee2mqtt/line_thermostat/set", `{"eco_mode":-12.8}`},
		{"presets", "line_thermostat.set", `{"eco_mode":-12.8}`, "zigbee2mqtt/line_thermostat/set", `{"eco_mode":-12.8}`},
		{"presets", "line_thermostat.set", `{"eco_mode":-11}`, "", ""},
		// composite with set-only features, published as a whole
		{"composite state", "wall_thermostat.set", `{"hysteresis":{"low":10,"high":50}}`, "zigbee2mqtt/wall_thermostat/set", `{"hysteresis":{"high":50,"low":10}}`},
		{"composite state", "wall_thermostat.set", `{"hysteresis":{"mid":10}}`, "", ""},
		// lists: item type and length limits
		{"list", "festavia.set", `{"gradient":["#ff0000","#00ff00"]}`, "zigbee2mqtt/festavia/set", `{"gradient":["#ff0000","#00ff00"]}`},
		{"list", "festavia.set", `{"gradient":[]}`, "", ""},
		{"list", "festavia.set", `{"gradient":["1","2","3","4","5","6","7","8","9","10"]}`, "", ""},
		{"list", "festavia.set", `{"gradient":[255]}`, "", ""},
		// value_step is a hint
		{"step", "trvzb.set", `{"local_temperature_calibration":-12.7}`, "zigbee2mqtt/trvzb/set", `{"local_temperature_calibration":-12.7}`},
		{"step", "line_thermostat.set", `{"eco_mode":0.3}`, "zigbee2mqtt/line_thermostat/set", `{"eco_mode":0.3}`},
		{"step", "trvzb.set", `{"local_temperature_calibration":12.8}`, "", ""},
		// composite inside composite; settable composite without features
		{"nested composite", "trv_zbt.set", `{"read_temperature_control_history":{"type":"day","time_range":{"start":"2026-01-01T00:00:00Z","end":"2026-01-02T00:00:00Z"}}}`,
			"zigbee2mqtt/trv_zbt/set", `{"read_temperature_control_history":{"time_range":{"end":"2026-01-02T00:00:00Z","start":"2026-01-01T00:00:00Z"},"type":"day"}}`},
		{"nested composite", "trv_zbt.set", `{"read_temperature_control_history":{"time_range":{"start":1}}}`, "", ""},
		{"composite without features", "door_lock.set", `{"ephemeral_clear_all_pin_code":{}}`, "zigbee2mqtt/door_lock/set", `{"ephemeral_clear_all_pin_code":{}}`},
		{"composite without features", "door_lock.set", `{"ephemeral_clear_all_pin_code":true}`, "", ""},
		// one property exposed twice with different shapes: both work
		{"duplicate", "cover_plug.set", `{"state":"STOP"}`, "zigbee2mqtt/cover_plug/set", `{"state":"STOP"}`},
		{"duplicate", "cover_plug.set", `{"state":"lock"}`, "zigbee2mqtt/cover_plug/set", `{"state":"lock"}`},
		{"duplicate", "cover_plug.set", `{"state":"ajar"}`, "", ""},
		{"duplicate", "curtain_robot.set", `{"position":40}`, "zigbee2mqtt/curtain_robot/set", `{"position":40}`},
		// get access
		{"get", "festavia.get", `{"brightness":""}`, "zigbee2mqtt/festavia/get", `{"brightness":""}`},
		{"get", "festavia.get", `{"state":"","color":""}`, "zigbee2mqtt/festavia/get", `{"color":"","state":""}`},
		{"get", "curtain_robot.get", `{"position":""}`, "zigbee2mqtt/curtain_robot/get", `{"position":""}`},
		{"get", "festavia.get", `{"brightness":"now"}`, "", ""},
		{"get", "festavia.get", `{"transition":""}`, "", ""},
		// keys Zigbee2MQTT documents beyond exposes: lights
		{"light keys", "festavia.set", `{"brightness":156,"transition":3}`, "zigbee2mqtt/festavia/set", `{"brightness":156,"transition":3}`},
		{"light keys", "festavia.set", `{"color":{"hex":"#547CFF"}}`, "zigbee2mqtt/festavia/set", `{"color":{"hex":"#547CFF"}}`},
		{"light keys", "festavia.set", `{"color":{"r":46,"g":102,"b":150}}`, "zigbee2mqtt/festavia/set", `{"color":{"b":150,"g":102,"r":46}}`},
		{"light keys", "festavia.set", `{"color":{"rgb":"46,102,150"}}`, "zigbee2mqtt/festavia/set", `{"color":{"rgb":"46,102,150"}}`},
		{"light keys", "festavia.set", `{"color":{"x":0.123,"y":0.123}}`, "zigbee2mqtt/festavia/set", `{"color":{"x":0.123,"y":0.123}}`},
		{"light keys", "festavia.set", `{"color":{"hue":360}}`, "zigbee2mqtt/festavia/set", `{"color":{"hue":360}}`},
		{"light keys", "festavia.set", `{"color":{"h":360,"s":100,"l":50}}`, "zigbee2mqtt/festavia/set", `{"color":{"h":360,"l":50,"s":100}}`},
		{"light keys", "festavia.set", `{"color":{"hsb":"360,100,100"}}`, "zigbee2mqtt/festavia/set", `{"color":{"hsb":"360,100,100"}}`},
		{"light keys", "festavia.set", `{"brightness_move":-40}`, "zigbee2mqtt/festavia/set", `{"brightness_move":-40}`},
		{"light keys", "festavia.set", `{"brightness_move":"stop"}`, "zigbee2mqtt/festavia/set", `{"brightness_move":"stop"}`},
		{"light keys", "festavia.set", `{"brightness_step_onoff":40}`, "zigbee2mqtt/festavia/set", `{"brightness_step_onoff":40}`},
		{"light keys", "festavia.set", `{"color_temp_move":"stop"}`, "zigbee2mqtt/festavia/set", `{"color_temp_move":"stop"}`},
		{"light keys", "festavia.set", `{"color_temp_step":99}`, "zigbee2mqtt/festavia/set", `{"color_temp_step":99}`},
		{"light keys", "festavia.set", `{"hue_step":-90,"saturation_move":-55}`, "zigbee2mqtt/festavia/set", `{"hue_step":-90,"saturation_move":-55}`},
		{"light keys", "festavia.set", `{"hue_step":-300}`, "", ""},
		{"light keys", "festavia.set", `{"color":{"hex":"#547CF"}}`, "", ""},
		{"light keys", "festavia.set", `{"color":{"x":0.1,"hue":20}}`, "", ""},
		{"light keys", "festavia.set", `{"transition":-1}`, "", ""},
		{"light keys", "rotary_dimmer.set", `{"color":{"hex":"#547CFF"}}`, "", ""}, // no colour
		// covers: what Zigbee2MQTT documents is all exposed
		{"cover keys", "blind.set", `{"state":"OPEN"}`, "zigbee2mqtt/blind/set", `{"state":"OPEN"}`},
		{"cover keys", "blind.set", `{"position":50}`, "zigbee2mqtt/blind/set", `{"position":50}`},
	}
	for _, tc := range cases {
		var args map[string]any
		if err := json.Unmarshal([]byte(tc.args), &args); err != nil {
			t.Fatal(err)
		}
		n := len(conn.published())
		err := c.Call(context.Background(), tc.action, args)
		pubs := conn.published()[n:]
		switch {
		case tc.topic == "" && err == nil:
			t.Errorf("%s: %s %s accepted, published %v", tc.row, tc.action, tc.args, pubs)
		case tc.topic == "":
		case err != nil:
			t.Errorf("%s: %s %s: %v", tc.row, tc.action, tc.args, err)
		case len(pubs) != 1 || pubs[0].Topic != tc.topic || pubs[0].Payload != tc.payload:
			t.Errorf("%s: %s %s published %v, want %s %s", tc.row, tc.action, tc.args, pubs, tc.topic, tc.payload)
		}
	}
}

// TestZ2MRowsStates checks the states the rows need: what Zigbee2MQTT
// publishes is a state whose schema admits it, and its live value.
func TestZ2MRowsStates(t *testing.T) {
	c, _ := rowsCatalog(t)
	p := &prober{tb: t, c: c, schemas: map[string]*jsonschema.Schema{}}
	cases := []struct {
		row, topic, payload, id string
		want                    any
	}{
		{"presets", "festavia", `{"color_temp_startup":65535}`, "festavia.color_temp_startup", 65535.0},
		{"presets", "rotary_dimmer", `{"level_config":{"on_level":"previous"}}`, "rotary_dimmer.level_config", map[string]any{"on_level": "previous"}},
		{"composite state", "wall_thermostat", `{"hysteresis":{"low":10,"high":50}}`, "wall_thermostat.hysteresis", map[string]any{"low": 10.0, "high": 50.0}},
		{"list", "festavia", `{"gradient":["#ff0000"]}`, "festavia.gradient", []any{"#ff0000"}},
		{"duplicate", "cover_plug", `{"state":"open"}`, "cover_plug.state", "open"},
		{"duplicate", "cover_plug", `{"state":"CLOSE"}`, "cover_plug.state", "CLOSE"},
		{"garage", "garage_opener", `{"garage_door_contact":false}`, "garage_opener.garage_door_contact", false},
	}
	for _, tc := range cases {
		c.HandleMessage(msg("zigbee2mqtt/"+tc.topic, tc.payload))
		e, ok := c.Snapshot().Get(tc.id)
		if !ok {
			t.Errorf("%s: no state %s", tc.row, tc.id)
			continue
		}
		l, _ := c.Live(tc.id)
		if !equalJSON(l.Value, tc.want) || !p.admits(e.OutputSchema, tc.want) {
			t.Errorf("%s: %s live %v (want %v), schema %s", tc.row, tc.id, l.Value, tc.want, e.OutputSchema)
		}
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestZ2MRowsRisk checks the risk row: what the device does decides.
func TestZ2MRowsRisk(t *testing.T) {
	c, _ := rowsCatalog(t)
	cases := []struct {
		dev, typ string
		risk     pilotage.Risk
	}{
		{"trvzb", "climate", pilotage.RiskControl}, // "thermostatic radiator valve": was valve, security
		{"trv_zbt", "climate", pilotage.RiskControl},
		{"garage_opener", "garage_door", pilotage.RiskSecurity}, // was binary_sensor, control
		{"water_valve", "valve", pilotage.RiskSecurity},
		{"hue_siren", "siren", pilotage.RiskSecurity},
		{"door_lock", "lock", pilotage.RiskSecurity}, // "Smart door lock" without a lock expose: was sensor, control
		{"blind", "cover", pilotage.RiskSecurity},
		{"cover_plug", "cover", pilotage.RiskSecurity},
		{"festavia", "light", pilotage.RiskControl},
		{"line_thermostat", "sensor", pilotage.RiskControl},
	}
	snap := c.Snapshot()
	for _, tc := range cases {
		d, ok := snap.Get(tc.dev)
		if !ok || !hasTag(d, "type:"+tc.typ) {
			t.Errorf("%s: tags %v, want type:%s", tc.dev, d.Tags, tc.typ)
			continue
		}
		a, ok := snap.Get(tc.dev + ".set")
		if !ok || a.Risk != tc.risk || a.RiskHints != pilotage.HintsOf(tc.risk) {
			t.Errorf("%s.set: risk %v, want %s", tc.dev, a.Risk, tc.risk)
		}
		if g, ok := snap.Get(tc.dev + ".get"); ok && g.Risk != pilotage.RiskRead {
			t.Errorf("%s.get: risk %s, want read", tc.dev, g.Risk)
		}
	}
}

// TestDeviceTypeOrder: the first row of pilotage.DeviceTypes that matches
// types the device, by its exposes or its description.
func TestDeviceTypeOrder(t *testing.T) {
	cases := []struct{ desc, exposes, typ string }{
		// A cover stays cover (deny_types: [cover] scopes keep hiding it).
		{"Garage door opener", `{"type":"cover","features":[{"type":"enum","name":"state","property":"state","access":3,"values":["OPEN","CLOSE","STOP"]}]}`, "cover"},
		{"Garage door opener", `{"type":"binary","name":"trigger","property":"trigger","access":3,"value_on":true,"value_off":false}`, "garage_door"},
		{"Roller blind", `{"type":"cover","features":[{"type":"enum","name":"state","property":"state","access":3,"values":["OPEN","CLOSE","STOP"]}]}`, "cover"},
		{"Thermostatic radiator valve", `{"type":"climate","features":[{"type":"numeric","name":"current_heating_setpoint","property":"current_heating_setpoint","access":7}]}`, "climate"},
		{"Smart water valve", `{"type":"switch","features":[{"type":"binary","name":"state","property":"state","access":7,"value_on":"ON","value_off":"OFF"}]}`, "valve"},
		{"Hose faucet water timer", `{"type":"switch","features":[{"type":"binary","name":"state","property":"state","access":7,"value_on":"ON","value_off":"OFF"}]}`, "valve"},
		{"Smart door lock", `{"type":"text","name":"unlock_door","property":"unlock_door","access":2}`, "lock"},
		{"Smart plug", `{"type":"switch","features":[{"type":"binary","name":"state","property":"state","access":7,"value_on":"ON","value_off":"OFF"}]}`, "switch"},
	}
	for _, tc := range cases {
		c, _ := newTestCatalog()
		c.HandleMessage(msg("zigbee2mqtt/bridge/devices", `[{"ieee_address":"0x01","friendly_name":"d","type":"Router","supported":true,
			"definition":{"vendor":"V","model":"M","description":"`+tc.desc+`","exposes":[`+tc.exposes+`]}}]`))
		d, _ := c.Snapshot().Get("d")
		a, _ := c.Snapshot().Get("d.set")
		if d == nil || a == nil || !hasTag(d, "type:"+tc.typ) || a.Risk != pilotage.DeviceTypeRisk(tc.typ) {
			t.Errorf("%s: %v %v", tc.desc, d, a)
		}
	}
}
