package ha

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

func onOffSchema(desc string) map[string]any {
	return map[string]any{"type": "string", "enum": []any{"ON", "OFF"}, "description": desc}
}

// matcher maps a rendered payload to one of several outputs, exactly or
// case-insensitively.
func matcher(pairs ...[2]string) func(any) (any, bool) {
	return func(v any) (any, bool) {
		s := strings.TrimSpace(model.Stringify(v))
		for _, p := range pairs {
			if s == p[0] {
				return p[1], true
			}
		}
		for _, p := range pairs {
			if strings.EqualFold(s, p[0]) {
				return p[1], true
			}
		}
		return nil, false
	}
}

func numberConv(v any) (any, bool) {
	f, ok := model.ToFloat(v)
	return f, ok
}

func scalarConv(v any) (any, bool) {
	switch v.(type) {
	case map[string]any, []any:
		return v, true
	}
	return model.Stringify(v), true
}

// cmdSend adds the message of one command value, rendered through the
// entity's command template (vars: the template's other variables, e.g. a
// cover's position), to the call's messages.
type cmdSend func(ctx context.Context, p model.Sender, v any, vars map[string]any) error

// command returns the cmdSend of topicKey through the command template
// tplKey; ok is false without a topic, or when the template cannot be
// rendered (the device then says so: the command is not offered).
func (x *ent) command(topicKey, tplKey string) (cmdSend, bool) {
	topic := x.str(topicKey, "")
	if topic == "" {
		return nil, false
	}
	x.readKey(topicKey)
	var t *model.Template
	if tplKey != "" {
		x.readKey(tplKey)
		t = model.CompileTemplate(x.str(tplKey, ""))
	}
	if t != nil && t.Unsupported != "" {
		x.b.gap(x.name + ": " + tplKey + " " + t.Unsupported + "; " + topicKey + " is not offered")
		return nil, false
	}
	return func(ctx context.Context, p model.Sender, v any, vars map[string]any) error {
		s, err := t.RenderCommand(v, vars)
		if err != nil {
			return fmt.Errorf("devices: %s: %s: %w", p.ID(), tplKey, err)
		}
		p.Add(topic, []byte(s))
		return nil
	}, true
}

func (x *ent) sensor() {
	x.expireAfter()
	unit := x.str("unit_of_measurement", "")
	schema := map[string]any{"type": "string", "description": x.unitDesc()}
	conv := scalarConv
	if unit != "" || x.has("state_class") || x.has("suggested_display_precision") {
		schema = map[string]any{"type": "number", "description": x.unitDesc()}
		if unit != "" {
			schema["x-unit"] = unit
		}
		conv = numberConv
	}
	x.addState(x.mainID(), x.name, x.unitDesc(), schema, x.str("state_topic", ""), x.str("value_template", ""), conv)
}

func (x *ent) binarySensor() {
	x.expireAfter()
	conv := matcher([2]string{x.str("payload_on", "ON"), "true"}, [2]string{x.str("payload_off", "OFF"), "false"})
	x.addState(x.mainID(), x.name, x.unitDesc(), map[string]any{"type": "boolean", "description": x.unitDesc()},
		x.str("state_topic", ""), x.str("value_template", ""), func(v any) (any, bool) {
			r, ok := conv(v)
			return r == "true", ok
		})
}

// expireAfter reads a sensor's expire_after (seconds, as Home Assistant
// takes it: a positive whole number; anything else is none), bounded
// at a day (more would never expire a live device anyway).
func (x *ent) expireAfter() {
	if v, ok := x.num("expire_after"); ok && v >= 1 {
		x.expire = time.Duration(min(v, maxExpireAfter)) * time.Second
	}
}

// maxExpireAfter bounds expire_after, in seconds.
const maxExpireAfter = 86400

func (x *ent) switchLike() {
	on, off := x.str("payload_on", "ON"), x.str("payload_off", "OFF")
	conv := matcher([2]string{x.str("state_on", on), "ON"}, [2]string{x.str("state_off", off), "OFF"})
	x.addState(x.mainID(), x.name, x.unitDesc(), onOffSchema(x.unitDesc()+"; ON or OFF"), x.str("state_topic", ""), x.str("value_template", ""), conv)
	send, ok := x.command("command_topic", "command_template")
	if !ok {
		return
	}
	a := x.newAction("set", "Turn "+x.name+" on or off.")
	a.Fields["state"] = model.EnumField("ON or OFF", []any{"ON", "OFF"})
	x.affect(a, "state", x.mainID(), "state_topic")
	a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
		pl := off
		if args["state"] == "ON" {
			pl = on
		}
		return send(ctx, p, pl, nil)
	}
}

func (x *ent) affect(a *model.Action, key, id, topicKey string) {
	if x.has(topicKey) {
		a.Affects[key] = id
	}
}

func (x *ent) lock() {
	pairs := [][2]string{
		{x.str("state_locked", "LOCKED"), "locked"}, {x.str("state_unlocked", "UNLOCKED"), "unlocked"},
		{x.str("state_locking", "LOCKING"), "locking"}, {x.str("state_unlocking", "UNLOCKING"), "unlocking"},
		{x.str("state_jammed", "JAMMED"), "jammed"}, {x.str("state_open", "OPEN"), "open"},
		{x.str("state_opening", "OPENING"), "opening"},
	}
	schema := map[string]any{"type": "string", "enum": []any{"locked", "unlocked", "locking", "unlocking", "jammed", "open", "opening"}, "description": x.unitDesc()}
	x.addState(x.mainID(), x.name, x.unitDesc(), schema, x.str("state_topic", ""), x.str("value_template", ""), matcher(pairs...))
	send, ok := x.command("command_topic", "command_template")
	if !ok {
		return
	}
	payloads := map[string]string{"LOCK": x.str("payload_lock", "LOCK"), "UNLOCK": x.str("payload_unlock", "UNLOCK")}
	values := []any{"LOCK", "UNLOCK"}
	if x.has("payload_open") {
		payloads["OPEN"] = x.str("payload_open", "OPEN")
		values = append(values, "OPEN")
	}
	a := x.newAction("set", "Lock or unlock "+x.name+".")
	a.Fields["state"] = model.EnumField("LOCK, UNLOCK (or OPEN to unlatch when supported)", values)
	if x.has("code_format") {
		a.Fields["code"] = model.StrField("Code, passed to the command template as code")
		a.Required = []string{"state"}
	}
	x.affect(a, "state", x.mainID(), "state_topic")
	a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
		return send(ctx, p, payloads[model.Stringify(args["state"])], map[string]any{"code": args["code"]})
	}
}

func (x *ent) button() {
	x.oneShot("press", "Press "+x.name+".", "command_template", "payload_press", "PRESS")
}

// oneShot is an action without arguments that publishes one payload
// (payloadKey, default def; through the template tmplKey when it has one)
// on command_topic: a button's press, a scene's activation.
func (x *ent) oneShot(verb, desc, tmplKey, payloadKey, def string) {
	send, ok := x.command("command_topic", tmplKey)
	if !ok {
		return
	}
	a := x.newAction(verb, desc)
	a.MinProps = 0
	pl := x.str(payloadKey, def)
	a.Send = func(ctx context.Context, p model.Sender, _ map[string]any) error { return send(ctx, p, pl, nil) }
}

// valueSpec is the state schema, set field and reading of a number,
// select or text entity.
func (x *ent) valueSpec() (schema map[string]any, f *model.Field, conv func(any) (any, bool), key string) {
	switch x.component {
	case "number":
		minV, maxV := x.numOr("min", 1), x.numOr("max", 100)
		step, _ := x.num("step")
		unit := x.str("unit_of_measurement", "")
		schema = map[string]any{"type": "number", "minimum": minV, "maximum": maxV}
		if unit != "" {
			schema["x-unit"] = unit
		}
		return schema, model.NumField(x.name, model.Fnum(minV), model.Fnum(maxV), step, unit), numberConv, "value"
	case "select":
		opts := x.list("options")
		return map[string]any{"type": "string", "enum": opts}, model.EnumField(x.name, opts), scalarConv, "option"
	}
	return map[string]any{"type": "string"}, model.StrField(x.name), scalarConv, "value"
}

// valueEntity is a number (sent as an int when integral, as Home
// Assistant does), select or text.
func (x *ent) valueEntity() {
	schema, f, conv, key := x.valueSpec()
	schema["description"] = x.unitDesc()
	x.addState(x.mainID(), x.name, x.unitDesc(), schema, x.str("state_topic", ""), x.str("value_template", ""), conv)
	send, ok := x.command("command_topic", "command_template")
	if !ok {
		return
	}
	a := x.newAction("set", "Set "+x.name+".")
	a.Fields[key] = f
	x.affect(a, key, x.mainID(), "state_topic")
	number := x.component == "number"
	a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
		v := args[key]
		if number {
			v = model.PyNumber(v)
		}
		return send(ctx, p, v, nil)
	}
}

func (x *ent) fan() {
	on, off := x.str("payload_on", "ON"), x.str("payload_off", "OFF")
	x.addState(x.mainID(), x.name, x.unitDesc(), onOffSchema(x.unitDesc()), x.str("state_topic", ""), x.str("state_value_template", ""),
		matcher([2]string{on, "ON"}, [2]string{off, "OFF"}))
	sr := speedRange{lo: x.numOr("speed_range_min", 1), hi: x.numOr("speed_range_max", 100)}
	x.addState(x.subID("percentage"), x.name+" speed", "Fan speed in percent",
		map[string]any{"type": "number", "minimum": 0.0, "maximum": 100.0, "x-unit": "%"},
		x.str("percentage_state_topic", ""), x.str("percentage_value_template", ""), sr.percent)
	send, ok := x.command("command_topic", "command_template")
	if !ok {
		return
	}
	a := x.newAction("set", "Turn "+x.name+" on/off or set its speed, preset, oscillation or direction.")
	a.Fields["state"] = model.EnumField("ON or OFF", []any{"ON", "OFF"})
	x.affect(a, "state", x.mainID(), "state_topic")
	sendPct, okP := x.command("percentage_command_topic", "percentage_command_template")
	if okP {
		a.Fields["percentage"] = model.NumField("Speed", model.Fnum(0), model.Fnum(100), 0, "%")
		x.affect(a, "percentage", x.subID("percentage"), "percentage_state_topic")
	}
	a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
		if s, ok := args["state"]; ok {
			pl := off
			if s == "ON" {
				pl = on
			}
			if err := send(ctx, p, pl, nil); err != nil {
				return err
			}
		}
		if v, ok := args["percentage"].(float64); ok && okP {
			return sendPct(ctx, p, sr.device(v), nil)
		}
		return nil
	}
	x.fanFeatures(a)
}

// speedRange is a fan's speed_range_min … speed_range_max: the device's
// speed steps, 0 … 100 percent in the catalog, both ways as Home
// Assistant converts them.
type speedRange struct{ lo, hi float64 }

// percent is ranged_value_to_percentage of a reported step (a rendered
// number, truncated to an int); a value outside 0 … 100 percent is not a
// reading.
func (r speedRange) percent(v any) (any, bool) {
	f, ok := model.ToFloat(v)
	if !ok || r.hi < r.lo {
		return nil, false
	}
	p := math.Floor((math.Trunc(f) - (r.lo - 1)) * 100 / (r.hi - r.lo + 1))
	if p < 0 || p > 100 {
		return nil, false
	}
	return p, true
}

// device is math.ceil(percentage_to_ranged_value(range, pct)).
func (r speedRange) device(pct float64) int {
	return int(math.Ceil((r.hi-r.lo+1)*pct/100 + r.lo - 1))
}

// alarmPanel: Home Assistant renders command_template (default
// "{{action}}") with action and code.
func (x *ent) alarmPanel() {
	states := []any{"disarmed", "armed_home", "armed_away", "armed_night", "armed_vacation", "armed_custom_bypass", "pending", "triggered", "arming", "disarming"}
	x.addState(x.mainID(), x.name, x.unitDesc(), map[string]any{"type": "string", "enum": states},
		x.str("state_topic", ""), x.str("value_template", ""), scalarConv)
	if !x.has("command_template") {
		x.cfg["command_template"] = "{{action}}"
	}
	send, ok := x.command("command_topic", "command_template")
	if !ok {
		return
	}
	cmds := [][2]string{{"DISARM", "payload_disarm"}, {"ARM_HOME", "payload_arm_home"}, {"ARM_AWAY", "payload_arm_away"},
		{"ARM_NIGHT", "payload_arm_night"}, {"ARM_VACATION", "payload_arm_vacation"}, {"ARM_CUSTOM_BYPASS", "payload_arm_custom_bypass"}, {"TRIGGER", "payload_trigger"}}
	payloads := map[string]string{}
	var values []any
	for _, c := range cmds {
		payloads[c[0]] = x.str(c[1], c[0])
		values = append(values, c[0])
	}
	a := x.newAction("set", "Arm, disarm or trigger "+x.name+".")
	a.Fields["state"] = model.EnumField("Command", values)
	a.Fields["code"] = model.StrField("Optional code")
	a.Required = []string{"state"}
	a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
		code, _ := args["code"].(string)
		return send(ctx, p, nil, map[string]any{"action": payloads[model.Stringify(args["state"])], "code": code})
	}
}

func (x *ent) event() {
	types := model.StringsOf(x.list("event_types"))
	ev := model.EventSpec{ID: x.mainID(), Name: x.name, Desc: x.unitDesc(), Values: types}
	t, live := x.addEvent(ev)
	if !live {
		return
	}
	dev, id := x.b.spec.ID, ev.ID
	allowed := map[string]bool{}
	for _, s := range types {
		allowed[s] = true
	}
	x.b.spec.Routes = append(x.b.spec.Routes, model.TopicRoute{Topic: x.str("state_topic", ""), Fn: func(tx *model.Rec, p []byte) {
		v, err := t.RenderMsg(tx, id, p)
		if err != nil {
			return
		}
		var m map[string]any
		if json.Unmarshal([]byte(model.Stringify(v)), &m) != nil {
			return
		}
		et, _ := m["event_type"].(string)
		if allowed[et] {
			tx.FireEvent(dev, id, et)
		}
	}})
}

// addEvent lists ev and compiles its value_template; live is false when
// the template is unsupported (the event is listed, saying so, without
// live events).
func (x *ent) addEvent(ev model.EventSpec) (t *model.Template, live bool) {
	t = model.CompileTemplate(x.str("value_template", ""))
	if t != nil && t.Unsupported != "" {
		ev.Desc += ". Live events unsupported: " + t.Unsupported + "."
		x.b.gap(x.name + ": value_template " + t.Unsupported)
		x.b.spec.Events = append(x.b.spec.Events, ev)
		return nil, false
	}
	x.b.spec.Events = append(x.b.spec.Events, ev)
	return t, true
}

// trigger is a device trigger: it fires when the (templated) payload is
// its payload, or on any payload when it has none.
func (x *ent) trigger() {
	want := x.str("payload", "")
	ev := model.EventSpec{ID: x.mainID(), Name: x.name, Desc: fmt.Sprintf("Device trigger %s %s", x.str("type", ""), x.str("subtype", ""))}
	if want != "" {
		ev.Values = []string{want}
	}
	t, live := x.addEvent(ev)
	if !live {
		return
	}
	dev, id := x.b.spec.ID, ev.ID
	x.b.spec.Routes = append(x.b.spec.Routes, model.TopicRoute{Topic: x.str("topic", ""), Fn: func(tx *model.Rec, p []byte) {
		v, err := t.RenderMsg(tx, id, p)
		if err != nil {
			return
		}
		s := strings.TrimSpace(model.Stringify(v))
		if s == "" || (want != "" && s != want) {
			return
		}
		tx.FireEvent(dev, id, s)
	}})
}

// update is a firmware update entity: its state is the object Home
// Assistant reads (installed_version, latest_version, in_progress, …; a
// plain payload is the installed version), and install publishes
// payload_install.
func (x *ent) update() {
	schema := map[string]any{"type": "object", "description": x.unitDesc() + "; installed_version, latest_version, in_progress, update_percentage",
		"properties": map[string]any{"installed_version": map[string]any{"type": []any{"string", "null"}},
			"latest_version": map[string]any{"type": []any{"string", "null"}}, "in_progress": map[string]any{"type": "boolean"}}}
	x.addState(x.mainID(), x.name, x.unitDesc(), schema, x.str("state_topic", ""), x.str("value_template", ""), func(v any) (any, bool) {
		s := strings.TrimSpace(model.Stringify(v))
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) == nil && m != nil {
			return m, true
		}
		return map[string]any{"installed_version": s}, s != ""
	})
	x.updateLatest()
	send, ok := x.command("command_topic", "")
	if !ok {
		return
	}
	a := x.newAction("install", "Install the firmware update of "+x.name+".")
	a.MinProps = 0
	pl := x.str("payload_install", "install")
	a.Send = func(ctx context.Context, p model.Sender, _ map[string]any) error { return send(ctx, p, pl, nil) }
}
