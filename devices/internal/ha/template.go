package ha

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// templateLight is a template-schema light (Shelly relays and dimmers
// through shellies-discovery): turning on renders command_on_template,
// off command_off_template, each with the state ("on"/"off") and the
// arguments given (brightness 0 … 255, color_temp, red/green/blue,
// transition, effect) as variables; the state is read through
// state_template and the brightness, colour temperature, colour and
// effect templates.
func (x *ent) templateLight() {
	x.templateLightStates()
	topic := x.str("command_topic", "")
	x.readKey("command_topic")
	onT, okOn := x.template("command_on_template", "")
	offT, okOff := x.template("command_off_template", "")
	if topic == "" || onT == nil || offT == nil || !okOn || !okOff {
		return
	}
	a := x.newAction("set", "Turn "+x.name+" on/off or change brightness/colour.")
	a.Fields["state"] = model.EnumField("ON or OFF", []any{"ON", "OFF"})
	a.Fields["transition"] = model.NumField("Transition time", model.Fnum(0), nil, 0, "s")
	if x.has("brightness_template") {
		a.Fields["brightness"] = model.NumField("Brightness", model.Fnum(0), model.Fnum(255), 0, "")
	}
	if x.has("color_temp_template") {
		a.Fields["color_temp"] = model.NumField("Colour temperature", model.Fnum(x.numOr("min_mireds", 153)), model.Fnum(x.numOr("max_mireds", 500)), 0, "mired")
	}
	if x.has("red_template") && x.has("green_template") && x.has("blue_template") {
		a.Fields["color"] = haColorModes[1].field()
	}
	if list := x.list("effect_list"); len(list) > 0 {
		a.Fields["effect"] = model.EnumField("Effect", list)
	}
	for _, k := range []string{"state", "brightness", "color_temp", "color", "effect"} {
		if _, ok := a.Fields[k]; ok && x.has(k+"_template") {
			a.Affects[k] = x.subIDOr(k)
		}
	}
	a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
		t, vars := onT, map[string]any{"state": "on"}
		if args["state"] == "OFF" {
			t, vars = offT, map[string]any{"state": "off"}
		}
		for k, v := range args {
			switch k {
			case "state":
			case "color":
				c, _ := v.(map[string]any)
				vars["red"], vars["green"], vars["blue"] = model.PyRoundInt(c["r"]), model.PyRoundInt(c["g"]), model.PyRoundInt(c["b"])
			case "brightness", "color_temp":
				vars[k] = model.PyRoundInt(v)
			default:
				vars[k] = model.PyNumber(v)
			}
		}
		s, err := t.RenderCommand(nil, vars)
		if err != nil {
			return fmt.Errorf("devices: %s: %w", p.ID(), err)
		}
		p.Add(topic, []byte(s))
		return nil
	}
}

// subIDOr is the state id of a template light's key (the main state for
// "state").
func (x *ent) subIDOr(k string) string {
	if k == "state" {
		return x.mainID()
	}
	return x.subID(k)
}

// templateLightStates declares the states a template light's templates
// read from its state topic.
func (x *ent) templateLightStates() {
	topic := x.str("state_topic", "")
	x.addState(x.mainID(), x.name, x.unitDesc(), onOffSchema(x.unitDesc()), topic, x.str("state_template", ""),
		matcher([2]string{"on", "ON"}, [2]string{"off", "OFF"}))
	if x.has("brightness_template") {
		x.addState(x.subID("brightness"), x.name+" brightness", "Brightness", map[string]any{"type": "number", "minimum": 0.0, "maximum": 255.0},
			topic, x.str("brightness_template", ""), numberConv)
	}
	if x.has("color_temp_template") {
		x.addState(x.subID("color_temp"), x.name+" colour temperature", "Colour temperature", map[string]any{"type": "number", "x-unit": "mired"},
			topic, x.str("color_temp_template", ""), numberConv)
	}
	if x.has("effect_template") {
		x.addState(x.subID("effect"), x.name+" effect", "Effect", map[string]any{"type": "string"}, topic, x.str("effect_template", ""), scalarConv)
	}
}

// scene publishes payload_on (default "ON") on command_topic to activate.
func (x *ent) scene() {
	x.oneShot("activate", "Activate the scene "+x.name+".", "", "payload_on", "ON")
}

// haVacuumCommands are a vacuum's commands: the supported feature that
// offers each and its payload key and default.
var haVacuumCommands = [][4]string{
	{"start", "start", "payload_start", "start"}, {"pause", "pause", "payload_pause", "pause"},
	{"stop", "stop", "payload_stop", "stop"}, {"return_to_base", "return_home", "payload_return_to_base", "return_to_base"},
	{"locate", "locate", "payload_locate", "locate"}, {"clean_spot", "clean_spot", "payload_clean_spot", "clean_spot"},
}

// vacuum is Home Assistant's state-schema vacuum: its JSON state (state,
// battery_level, fan_speed), its commands on command_topic (those its
// supported_features list), fan speeds on set_fan_speed_topic and raw
// commands on send_command_topic.
func (x *ent) vacuum() {
	feats := map[string]bool{"start": true, "stop": true, "return_home": true, "status": true, "clean_spot": true}
	if l := x.list("supported_features"); l != nil {
		feats = map[string]bool{}
		for _, f := range model.StringsOf(l) {
			feats[f] = true
		}
	}
	x.vacuumStates()
	a := x.newAction("set", "Start, pause, stop, send home or locate "+x.name+", or set its fan speed.")
	if send, ok := x.command("command_topic", ""); ok {
		payloads := map[string]string{}
		var values []any
		for _, c := range haVacuumCommands {
			if feats[c[1]] {
				payloads[c[0]] = x.str(c[2], c[3])
				values = append(values, c[0])
			}
		}
		if len(values) > 0 {
			a.Fields["command"] = model.EnumField("Command", values)
			x.chain(a, func(ctx context.Context, p model.Sender, args map[string]any) error {
				if c, ok := args["command"]; ok {
					return send(ctx, p, payloads[model.Stringify(c)], nil)
				}
				return nil
			})
		}
	}
	x.vacuumExtras(a, feats)
	if len(a.Fields) == 0 {
		x.b.spec.Actions = x.b.spec.Actions[:len(x.b.spec.Actions)-1]
	}
}

// vacuumExtras offers fan speeds and raw commands.
func (x *ent) vacuumExtras(a *model.Action, feats map[string]bool) {
	if speeds := x.list("fan_speed_list"); feats["fan_speed"] && len(speeds) > 0 {
		if send, ok := x.command("set_fan_speed_topic", ""); ok {
			a.Fields["fan_speed"] = model.EnumField("Fan speed", speeds)
			x.affect(a, "fan_speed", x.subID("fan_speed"), "state_topic")
			x.chain(a, func(ctx context.Context, p model.Sender, args map[string]any) error {
				if v, ok := args["fan_speed"]; ok {
					return send(ctx, p, v, nil)
				}
				return nil
			})
		}
	}
	if feats["send_command"] {
		if send, ok := x.command("send_command_topic", ""); ok {
			a.Fields["send_command"] = model.StrField("A raw command, published as it is")
			x.chain(a, func(ctx context.Context, p model.Sender, args map[string]any) error {
				if v, ok := args["send_command"]; ok {
					return send(ctx, p, v, nil)
				}
				return nil
			})
		}
	}
}

// vacuumStates routes the JSON state into state, battery and fan speed.
func (x *ent) vacuumStates() {
	topic := x.str("state_topic", "")
	states := []any{"cleaning", "docked", "paused", "idle", "returning", "error"}
	field := func(k string) func(any) (any, bool) {
		return func(v any) (any, bool) {
			var m map[string]any
			if json.Unmarshal([]byte(strings.TrimSpace(model.Stringify(v))), &m) != nil || m[k] == nil {
				return nil, false
			}
			if k == "battery_level" {
				return model.ToFloat(m[k])
			}
			return model.Stringify(m[k]), true
		}
	}
	x.addState(x.mainID(), x.name, x.unitDesc(), map[string]any{"type": "string", "enum": states}, topic, "", field("state"))
	x.addState(x.subID("battery"), x.name+" battery", "Battery level", map[string]any{"type": "number", "minimum": 0.0, "maximum": 100.0, "x-unit": "%"},
		topic, "", field("battery_level"))
	if len(x.list("fan_speed_list")) > 0 {
		x.addState(x.subID("fan_speed"), x.name+" fan speed", "Fan speed", map[string]any{"type": "string", "enum": x.list("fan_speed_list")},
			topic, "", field("fan_speed"))
	}
}
