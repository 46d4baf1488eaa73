package ha

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/pilotage"
)

// lightCaps are the capabilities a light config announces.
type lightCaps struct {
	brightness, colorTemp bool
	xy, hs, rgb           bool
	white, cold           bool // rgbw / rgbww: w, and c (cold white)
	scale, minM, maxM     float64
	effects               []any
}

func (x *ent) lightCaps() lightCaps {
	c := lightCaps{scale: 255, minM: 153, maxM: 500}
	if v, ok := x.num("brightness_scale"); ok && v > 0 {
		c.scale = v
	}
	if v, ok := x.num("min_mireds"); ok {
		c.minM = v
	}
	if v, ok := x.num("max_mireds"); ok {
		c.maxM = v
	}
	flag := func(k string) bool { b, _ := x.cfg[k].(bool); return b }
	c.brightness, c.colorTemp = flag("brightness"), flag("color_temp")
	c.xy, c.hs, c.rgb = flag("xy"), flag("hs"), flag("rgb")
	for _, m := range model.StringsOf(x.list("supported_color_modes")) {
		switch m {
		case "onoff":
			continue
		case "color_temp":
			c.colorTemp = true
		case "xy":
			c.xy = true
		case "hs":
			c.hs = true
		case "rgb":
			c.rgb = true
		case "rgbw":
			c.rgb, c.white = true, true
		case "rgbww":
			c.rgb, c.white, c.cold = true, true, true
		}
		c.brightness = true
	}
	if flag("effect") {
		c.effects = x.list("effect_list")
	}
	return c
}

func (c lightCaps) colorField() *model.Field {
	props := map[string]*model.Field{}
	if c.xy {
		props["x"] = model.NumField("CIE x", model.Fnum(0), model.Fnum(1), 0, "")
		props["y"] = model.NumField("CIE y", model.Fnum(0), model.Fnum(1), 0, "")
	}
	if c.hs {
		props["h"] = model.NumField("Hue", model.Fnum(0), model.Fnum(360), 0, "°")
		props["s"] = model.NumField("Saturation", model.Fnum(0), model.Fnum(100), 0, "%")
	}
	if c.rgb {
		for _, k := range []string{"r", "g", "b"} {
			props[k] = model.NumField(strings.ToUpper(k), model.Fnum(0), model.Fnum(255), 0, "")
		}
	}
	if c.white {
		props["w"] = model.NumField("White (warm white in rgbww)", model.Fnum(0), model.Fnum(255), 0, "")
	}
	if c.cold {
		props["c"] = model.NumField("Cold white", model.Fnum(0), model.Fnum(255), 0, "")
	}
	if len(props) == 0 {
		return nil
	}
	return model.ObjField("Colour (x/y, h/s or r/g/b as supported)", props)
}

func (x *ent) light() {
	switch x.str("schema", "default") {
	case "json":
		x.jsonLight()
	case "template":
		x.templateLight()
	default:
		x.defaultLight()
	}
}

func (x *ent) lightAction(c lightCaps) *model.Action {
	a := x.newAction("set", "Turn "+x.name+" on/off or change brightness/colour.")
	a.Fields["state"] = model.EnumField("ON or OFF", []any{"ON", "OFF"})
	if c.brightness {
		a.Fields["brightness"] = model.NumField("Brightness", model.Fnum(0), model.Fnum(c.scale), 0, "")
	}
	if c.colorTemp {
		a.Fields["color_temp"] = model.NumField("Colour temperature", model.Fnum(c.minM), model.Fnum(c.maxM), 0, "mired")
	}
	return a
}

// jsonSub is one key of a JSON-schema light's state object.
type jsonSub struct {
	key, id string
	schema  map[string]any
}

func (x *ent) jsonLight() {
	c := x.lightCaps()
	subs := []jsonSub{{"state", x.mainID(), onOffSchema(x.unitDesc())}}
	if c.brightness {
		subs = append(subs, jsonSub{"brightness", x.subID("brightness"), map[string]any{"type": "number", "minimum": 0.0, "maximum": c.scale}})
	}
	if c.colorTemp {
		subs = append(subs, jsonSub{"color_temp", x.subID("color_temp"), map[string]any{"type": "number", "minimum": c.minM, "maximum": c.maxM, "x-unit": "mired"}})
	}
	if cf := c.colorField(); cf != nil {
		subs = append(subs, jsonSub{"color", x.subID("color"), map[string]any{"type": "object"}})
	}
	if len(c.effects) > 0 {
		subs = append(subs, jsonSub{"effect", x.subID("effect"), map[string]any{"type": "string"}})
	}
	topic := x.str("state_topic", "")
	if topic != "" {
		x.jsonLightStates(topic, subs)
	}
	a := x.lightAction(c)
	if cf := c.colorField(); cf != nil {
		a.Fields["color"] = cf
	}
	if len(c.effects) > 0 {
		a.Fields["effect"] = model.EnumField("Effect", c.effects)
	}
	a.Fields["transition"] = model.NumField("Transition time", model.Fnum(0), nil, 0, "s")
	if topic != "" {
		for _, s := range subs {
			if _, ok := a.Fields[s.key]; ok {
				a.Affects[s.key] = s.id
			}
		}
	}
	cmd := x.str("command_topic", "")
	x.readKey("command_topic")
	a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
		msg := make(map[string]any, len(args)+1)
		for k, v := range args {
			msg[k] = v
		}
		if _, ok := msg["state"]; !ok {
			msg["state"] = "ON"
		}
		return p.AddJSON(cmd, msg)
	}
}

// jsonLightStates declares the state keys of a JSON-schema light and
// routes its JSON state into them (a partial state keeps the others).
func (x *ent) jsonLightStates(topic string, subs []jsonSub) {
	dev := x.b.spec.ID
	for _, s := range subs {
		x.b.spec.States = append(x.b.spec.States, model.StateSpec{ID: s.id, Name: x.name + " " + s.key, Desc: x.unitDesc(), Schema: s.schema})
	}
	x.b.spec.Routes = append(x.b.spec.Routes, model.TopicRoute{Topic: topic, Entity: true, Guards: pilotage.HintsOf(haEntityRisk(x.component)), Fn: func(tx *model.Rec, p []byte) {
		var obj map[string]any
		if json.Unmarshal(p, &obj) != nil {
			return
		}
		tx.Touch(dev)
		for _, s := range subs {
			v, ok := obj[s.key]
			if !ok || v == nil {
				continue
			}
			if s.key == "state" {
				if v, ok = matcher([2]string{"ON", "ON"}, [2]string{"OFF", "OFF"})(v); !ok {
					continue
				}
			}
			tx.SetState(dev, s.id, strings.TrimPrefix(s.id, dev+"."), v)
		}
	}})
}

func (x *ent) defaultLight() {
	c := x.lightCaps()
	on, off := x.str("payload_on", "ON"), x.str("payload_off", "OFF")
	x.defaultLightStates(&c, on, off)
	send, ok := x.command("command_topic", "")
	if !ok {
		return
	}
	a := x.lightAction(c)
	x.affect(a, "state", x.mainID(), "state_topic")
	sendB, okB, sendCT, okCT := x.defaultLightLevels(a, c)
	colors, sendFx := x.defaultColor(a), x.defaultEffect(a)
	onType, full, bID := x.str("on_command_type", "last"), model.PyRoundInt(c.scale), x.subID("brightness")
	// As Home Assistant's turn_on: "first" sends payload_on first, "last"
	// (the default) after the brightness and colour temperature,
	// "brightness" never, sending the brightness instead: the last one
	// reported, else full.
	a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
		if args["state"] == "OFF" {
			return send(ctx, p, off, nil)
		}
		if onType == "first" {
			if err := send(ctx, p, on, nil); err != nil {
				return err
			}
		}
		if c, ok := args["color"].(map[string]any); ok {
			if err := colors.send(ctx, p, c); err != nil {
				return err
			}
		}
		b, hasB := args["brightness"]
		if !hasB && onType == "brightness" {
			b, hasB = full, true
			if last, ok := model.ToFloat(p.Value(bID)); ok && last > 0 {
				b = last
			}
		}
		if hasB && okB {
			if err := sendB(ctx, p, model.PyRoundInt(b), nil); err != nil {
				return err
			}
		}
		if v, ok := args["color_temp"]; ok && okCT {
			if err := sendCT(ctx, p, model.PyRoundInt(v), nil); err != nil {
				return err
			}
		}
		if v, ok := args["effect"]; ok && sendFx != nil {
			if err := sendFx(ctx, p, v, nil); err != nil {
				return err
			}
		}
		if onType == "last" {
			return send(ctx, p, on, nil)
		}
		return nil
	}
}

// defaultLightLevels offers brightness and colour temperature when the
// light has their command topics.
func (x *ent) defaultLightLevels(a *model.Action, c lightCaps) (sendB cmdSend, okB bool, sendCT cmdSend, okCT bool) {
	sendB, okB = x.command("brightness_command_topic", "brightness_command_template")
	if okB && c.brightness {
		x.affect(a, "brightness", x.subID("brightness"), "brightness_state_topic")
	} else {
		delete(a.Fields, "brightness")
	}
	sendCT, okCT = x.command("color_temp_command_topic", "color_temp_command_template")
	if okCT && c.colorTemp {
		x.affect(a, "color_temp", x.subID("color_temp"), "color_temp_state_topic")
	} else {
		delete(a.Fields, "color_temp")
	}
	return sendB, okB, sendCT, okCT
}

// defaultLightStates declares the on/off, brightness and colour
// temperature states of a default-schema light.
func (x *ent) defaultLightStates(c *lightCaps, on, off string) {
	tpl := x.str("state_value_template", x.str("value_template", ""))
	x.addState(x.mainID(), x.name, x.unitDesc(), onOffSchema(x.unitDesc()), x.str("state_topic", ""), tpl,
		matcher([2]string{on, "ON"}, [2]string{off, "OFF"}))
	if x.has("brightness_command_topic") || x.has("brightness_state_topic") {
		c.brightness = true
	}
	if x.has("color_temp_command_topic") || x.has("color_temp_state_topic") {
		c.colorTemp = true
	}
	if c.brightness {
		x.addState(x.subID("brightness"), x.name+" brightness", "Brightness", map[string]any{"type": "number", "minimum": 0.0, "maximum": c.scale},
			x.str("brightness_state_topic", ""), x.str("brightness_value_template", ""), numberConv)
	}
	if c.colorTemp {
		x.addState(x.subID("color_temp"), x.name+" colour temperature", "Colour temperature",
			map[string]any{"type": "number", "minimum": c.minM, "maximum": c.maxM, "x-unit": "mired"},
			x.str("color_temp_state_topic", ""), x.str("color_temp_value_template", ""), numberConv)
	}
}
