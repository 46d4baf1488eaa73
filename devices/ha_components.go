package devices

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
)

func onOffSchema(desc string) map[string]any {
	return map[string]any{"type": "string", "enum": []any{"ON", "OFF"}, "description": desc}
}

// matcher maps a rendered payload to one of several outputs, exactly or
// case-insensitively.
func matcher(pairs ...[2]string) func(any) (any, bool) {
	return func(v any) (any, bool) {
		s := strings.TrimSpace(stringify(v))
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
	f, ok := toFloat(v)
	return f, ok
}

func scalarConv(v any) (any, bool) {
	switch v.(type) {
	case map[string]any, []any:
		return v, true
	}
	return stringify(v), true
}

// command returns a publisher of one value to topic through the optional
// command template tplKey; ok is false when the template is unsupported.
func (x *ent) command(topicKey, tplKey string) (func(ctx context.Context, p sender, v any) error, bool) {
	topic := x.str(topicKey, "")
	tpl := x.str(tplKey, "")
	if topic == "" || (tpl != "" && !commandTemplateOK(tpl)) {
		return nil, false
	}
	return func(ctx context.Context, p sender, v any) error {
		s, _ := renderCommand(tpl, v)
		return p.publish(ctx, topic, []byte(s))
	}, true
}

func (x *ent) sensor() {
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
	conv := matcher([2]string{x.str("payload_on", "ON"), "true"}, [2]string{x.str("payload_off", "OFF"), "false"})
	x.addState(x.mainID(), x.name, x.unitDesc(), map[string]any{"type": "boolean", "description": x.unitDesc()},
		x.str("state_topic", ""), x.str("value_template", ""), func(v any) (any, bool) {
			r, ok := conv(v)
			return r == "true", ok
		})
}

func (x *ent) switchLike() {
	on, off := x.str("payload_on", "ON"), x.str("payload_off", "OFF")
	conv := matcher([2]string{x.str("state_on", on), "ON"}, [2]string{x.str("state_off", off), "OFF"})
	x.addState(x.mainID(), x.name, x.unitDesc(), onOffSchema(x.unitDesc()+"; ON or OFF"), x.str("state_topic", ""), x.str("value_template", ""), conv)
	send, ok := x.command("command_topic", "command_template")
	if !ok {
		return
	}
	risk := pilotage.RiskControl
	if x.component == "siren" {
		risk = pilotage.RiskSecurity
	}
	a := x.newAction("set", "Turn "+x.name+" on or off.", risk)
	a.fields["state"] = enumField("ON or OFF", []any{"ON", "OFF"})
	x.affect(a, "state", x.mainID(), "state_topic")
	a.send = func(ctx context.Context, p sender, args map[string]any) error {
		pl := off
		if args["state"] == "ON" {
			pl = on
		}
		return send(ctx, p, pl)
	}
}

func (x *ent) affect(a *action, key, id, topicKey string) {
	if x.has(topicKey) {
		a.affects[key] = id
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
	a := x.newAction("set", "Lock or unlock "+x.name+".", pilotage.RiskSecurity)
	a.fields["state"] = enumField("LOCK, UNLOCK (or OPEN to unlatch when supported)", values)
	x.affect(a, "state", x.mainID(), "state_topic")
	a.send = func(ctx context.Context, p sender, args map[string]any) error {
		return send(ctx, p, payloads[stringify(args["state"])])
	}
}

func (x *ent) cover() {
	pairs := [][2]string{
		{x.str("state_open", "open"), "open"}, {x.str("state_opening", "opening"), "opening"},
		{x.str("state_closed", "closed"), "closed"}, {x.str("state_closing", "closing"), "closing"},
		{x.str("state_stopped", "stopped"), "stopped"},
	}
	schema := map[string]any{"type": "string", "enum": []any{"open", "opening", "closed", "closing", "stopped"}, "description": x.unitDesc()}
	x.addState(x.mainID(), x.name, x.unitDesc(), schema, x.str("state_topic", ""), x.str("value_template", ""), matcher(pairs...))
	open, okO := x.num("position_open")
	if !okO {
		open = 100
	}
	closed, _ := x.num("position_closed")
	span := open - closed
	if span == 0 {
		span = 100
	}
	posSchema := map[string]any{"type": "number", "minimum": 0.0, "maximum": 100.0, "x-unit": "%", "description": "Position, 0 closed … 100 open"}
	x.addState(x.subID("position"), x.name+" position", "Position in percent (100 = open)", posSchema,
		x.str("position_topic", ""), x.str("position_template", ""), func(v any) (any, bool) {
			f, ok := toFloat(v)
			return (f - closed) / span * 100, ok
		})
	a := newAction(x.actionID("set"), x.name+" set", "Open, close, stop or position "+x.name+".", pilotage.RiskSecurity)
	if send, ok := x.command("command_topic", ""); ok {
		payloads := map[string]string{}
		var values []any
		for _, c := range [][3]string{{"OPEN", "payload_open", "OPEN"}, {"CLOSE", "payload_close", "CLOSE"}, {"STOP", "payload_stop", "STOP"}} {
			if v, set := x.cfg[c[1]]; set && v == nil {
				continue
			}
			payloads[c[0]] = x.str(c[1], c[2])
			values = append(values, c[0])
		}
		if len(values) > 0 {
			a.fields["state"] = enumField("OPEN, CLOSE or STOP", values)
			x.affect(a, "state", x.mainID(), "state_topic")
			a.send = func(ctx context.Context, p sender, args map[string]any) error {
				return send(ctx, p, payloads[stringify(args["state"])])
			}
		}
	}
	if sendPos, ok := x.command("set_position_topic", "set_position_template"); ok {
		a.fields["position"] = numField("Target position, 0 closed … 100 open", fnum(0), fnum(100), 0, "%")
		x.affect(a, "position", x.subID("position"), "position_topic")
		stateSend := a.send
		a.send = func(ctx context.Context, p sender, args map[string]any) error {
			if s, ok := args["state"]; ok && stateSend != nil {
				if err := stateSend(ctx, p, map[string]any{"state": s}); err != nil {
					return err
				}
			}
			if pos, ok := args["position"].(float64); ok {
				return sendPos(ctx, p, closed+pos/100*span)
			}
			return nil
		}
	}
	if len(a.fields) > 0 {
		x.b.spec.actions = append(x.b.spec.actions, a)
	}
}

func tempUnit(u string) string {
	switch strings.ToUpper(u) {
	case "C":
		return "°C"
	case "F":
		return "°F"
	}
	return "°C"
}

func (x *ent) climate() {
	unit := tempUnit(x.str("temperature_unit", "C"))
	minT, ok := x.num("min_temp")
	if !ok {
		minT = 7
	}
	maxT, ok := x.num("max_temp")
	if !ok {
		maxT = 35
	}
	step, _ := x.num("temp_step")
	modes := x.list("modes")
	if modes == nil {
		modes = []any{"auto", "off", "cool", "heat", "dry", "fan_only"}
	}
	tSchema := func(d string) map[string]any {
		return map[string]any{"type": "number", "x-unit": unit, "description": d}
	}
	x.addState(x.subID("local_temperature"), x.name+" temperature", "Measured temperature", tSchema("Measured temperature"),
		x.str("current_temperature_topic", ""), x.str("current_temperature_template", ""), numberConv)
	sp := tSchema("Target temperature")
	sp["minimum"], sp["maximum"] = minT, maxT
	x.addState(x.subID("occupied_heating_setpoint"), x.name+" setpoint", "Target temperature", sp,
		x.str("temperature_state_topic", ""), x.str("temperature_state_template", ""), numberConv)
	x.addState(x.subID("system_mode"), x.name+" mode", "HVAC mode", map[string]any{"type": "string", "enum": modes},
		x.str("mode_state_topic", ""), x.str("mode_state_template", ""), scalarConv)
	x.addState(x.subID("running_state"), x.name+" running state", "Current HVAC action", map[string]any{"type": "string"},
		x.str("action_topic", ""), x.str("action_template", ""), scalarConv)
	a := newAction(x.actionID("set"), x.name+" set", "Set the target temperature or mode of "+x.name+".", pilotage.RiskControl)
	sendT, okT := x.command("temperature_command_topic", "temperature_command_template")
	if okT {
		a.fields["occupied_heating_setpoint"] = numField("Target temperature", fnum(minT), fnum(maxT), step, unit)
		x.affect(a, "occupied_heating_setpoint", x.subID("occupied_heating_setpoint"), "temperature_state_topic")
	}
	sendM, okM := x.command("mode_command_topic", "mode_command_template")
	if okM {
		a.fields["system_mode"] = enumField("HVAC mode", modes)
		x.affect(a, "system_mode", x.subID("system_mode"), "mode_state_topic")
	}
	if len(a.fields) == 0 {
		return
	}
	a.send = func(ctx context.Context, p sender, args map[string]any) error {
		if m, ok := args["system_mode"]; ok && okM {
			if err := sendM(ctx, p, m); err != nil {
				return err
			}
		}
		if t, ok := args["occupied_heating_setpoint"]; ok && okT {
			return sendT(ctx, p, t)
		}
		return nil
	}
	x.b.spec.actions = append(x.b.spec.actions, a)
}

func (x *ent) button() {
	send, ok := x.command("command_topic", "command_template")
	if !ok {
		return
	}
	a := x.newAction("press", "Press "+x.name+".", pilotage.RiskControl)
	a.minProps = 0
	pl := x.str("payload_press", "PRESS")
	a.send = func(ctx context.Context, p sender, _ map[string]any) error { return send(ctx, p, pl) }
}

func (x *ent) valueEntity() {
	var schema map[string]any
	var f *field
	var conv func(any) (any, bool)
	key := "value"
	switch x.component {
	case "number":
		minV, ok := x.num("min")
		if !ok {
			minV = 1
		}
		maxV, ok := x.num("max")
		if !ok {
			maxV = 100
		}
		step, _ := x.num("step")
		unit := x.str("unit_of_measurement", "")
		schema = map[string]any{"type": "number", "minimum": minV, "maximum": maxV}
		if unit != "" {
			schema["x-unit"] = unit
		}
		f = numField(x.name, fnum(minV), fnum(maxV), step, unit)
		conv = numberConv
	case "select":
		opts := x.list("options")
		schema = map[string]any{"type": "string", "enum": opts}
		f = enumField(x.name, opts)
		conv = scalarConv
		key = "option"
	default:
		schema = map[string]any{"type": "string"}
		f = strField(x.name)
		conv = scalarConv
	}
	schema["description"] = x.unitDesc()
	x.addState(x.mainID(), x.name, x.unitDesc(), schema, x.str("state_topic", ""), x.str("value_template", ""), conv)
	send, ok := x.command("command_topic", "command_template")
	if !ok {
		return
	}
	a := x.newAction("set", "Set "+x.name+".", pilotage.RiskControl)
	a.fields[key] = f
	x.affect(a, key, x.mainID(), "state_topic")
	a.send = func(ctx context.Context, p sender, args map[string]any) error { return send(ctx, p, args[key]) }
}

func (x *ent) fan() {
	on, off := x.str("payload_on", "ON"), x.str("payload_off", "OFF")
	x.addState(x.mainID(), x.name, x.unitDesc(), onOffSchema(x.unitDesc()), x.str("state_topic", ""), x.str("state_value_template", ""),
		matcher([2]string{on, "ON"}, [2]string{off, "OFF"}))
	x.addState(x.subID("percentage"), x.name+" speed", "Fan speed in percent",
		map[string]any{"type": "number", "minimum": 0.0, "maximum": 100.0, "x-unit": "%"},
		x.str("percentage_state_topic", ""), x.str("percentage_value_template", ""), numberConv)
	send, ok := x.command("command_topic", "command_template")
	if !ok {
		return
	}
	a := x.newAction("set", "Turn "+x.name+" on/off or set its speed.", pilotage.RiskControl)
	a.fields["state"] = enumField("ON or OFF", []any{"ON", "OFF"})
	x.affect(a, "state", x.mainID(), "state_topic")
	sendPct, okP := x.command("percentage_command_topic", "percentage_command_template")
	if okP {
		a.fields["percentage"] = numField("Speed", fnum(0), fnum(100), 0, "%")
		x.affect(a, "percentage", x.subID("percentage"), "percentage_state_topic")
	}
	a.send = func(ctx context.Context, p sender, args map[string]any) error {
		if s, ok := args["state"]; ok {
			pl := off
			if s == "ON" {
				pl = on
			}
			if err := send(ctx, p, pl); err != nil {
				return err
			}
		}
		if v, ok := args["percentage"]; ok && okP {
			return sendPct(ctx, p, v)
		}
		return nil
	}
}

func (x *ent) alarmPanel() {
	states := []any{"disarmed", "armed_home", "armed_away", "armed_night", "armed_vacation", "armed_custom_bypass", "pending", "triggered", "arming", "disarming"}
	x.addState(x.mainID(), x.name, x.unitDesc(), map[string]any{"type": "string", "enum": states},
		x.str("state_topic", ""), x.str("value_template", ""), scalarConv)
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
	a := x.newAction("set", "Arm, disarm or trigger "+x.name+".", pilotage.RiskSecurity)
	a.fields["state"] = enumField("Command", values)
	a.fields["code"] = strField("Optional code")
	a.required = []string{"state"}
	a.send = func(ctx context.Context, p sender, args map[string]any) error {
		return send(ctx, p, payloads[stringify(args["state"])])
	}
}

func (x *ent) event() {
	types := stringsOf(x.list("event_types"))
	ev := eventSpec{id: x.mainID(), name: x.name, desc: x.unitDesc(), values: types}
	t := compileTemplate(x.str("value_template", ""))
	if t != nil && t.unsupported != "" {
		ev.desc += ". Live events unsupported: " + t.unsupported + "."
		x.b.spec.events = append(x.b.spec.events, ev)
		return
	}
	x.b.spec.events = append(x.b.spec.events, ev)
	dev, id := x.b.spec.id, ev.id
	allowed := map[string]bool{}
	for _, s := range types {
		allowed[s] = true
	}
	x.b.spec.routes = append(x.b.spec.routes, topicRoute{x.str("state_topic", ""), func(tx *txn, p []byte) {
		v, err := t.render(p)
		if err != nil {
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			_ = json.Unmarshal([]byte(stringify(v)), &m)
		}
		et, _ := m["event_type"].(string)
		if allowed[et] {
			tx.fireEvent(dev, id, et)
		}
	}})
}

func (x *ent) trigger() {
	want := x.str("payload", "")
	ev := eventSpec{id: x.mainID(), name: x.name, desc: fmt.Sprintf("Device trigger %s %s", x.str("type", ""), x.str("subtype", ""))}
	if want != "" {
		ev.values = []string{want}
	}
	x.b.spec.events = append(x.b.spec.events, ev)
	dev, id := x.b.spec.id, ev.id
	x.b.spec.routes = append(x.b.spec.routes, topicRoute{x.str("topic", ""), func(tx *txn, p []byte) {
		s := strings.TrimSpace(string(p))
		if s == "" || (want != "" && s != want) {
			return
		}
		tx.fireEvent(dev, id, s)
	}})
}
