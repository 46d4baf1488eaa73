package ha

import (
	"context"
	"math"
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// coverRange is a cover's or valve's position range: position_closed ..
// position_open in the device's scale, 0 … 100 percent in the catalog.
type coverRange struct{ closed, open float64 }

func (x *ent) coverRange() coverRange {
	r := coverRange{closed: 0, open: 100}
	if v, ok := x.num("position_open"); ok {
		r.open = v
	}
	if v, ok := x.num("position_closed"); ok {
		r.closed = v
	}
	if r.open == r.closed {
		r.open = r.closed + 100
	}
	return r
}

// percent is Home Assistant's reading of a reported position: rounded, at
// most 100 (and here at least 0).
func (r coverRange) percent(v float64) float64 {
	p := math.RoundToEven((v - r.closed) * 100 / (r.open - r.closed))
	return math.Min(math.Max(p, 0), 100)
}

// device is the value Home Assistant sends for a percentage:
// round(percentage_to_ranged_value((closed+1, open), pct)).
func (r coverRange) device(pct int) int {
	return int(math.RoundToEven((r.open - r.closed) * float64(pct) / 100))
}

func (x *ent) cover() {
	pairs := [][2]string{
		{x.str("state_open", "open"), "open"}, {x.str("state_opening", "opening"), "opening"},
		{x.str("state_closed", "closed"), "closed"}, {x.str("state_closing", "closing"), "closing"},
		{x.str("state_stopped", "stopped"), "stopped"},
	}
	schema := map[string]any{"type": "string", "enum": []any{"open", "opening", "closed", "closing", "stopped"}, "description": x.unitDesc()}
	x.addState(x.mainID(), x.name, x.unitDesc(), schema, x.str("state_topic", ""), x.str("value_template", ""), matcher(pairs...))
	r := x.coverRange()
	posTopic, posTpl := "position_topic", "position_template"
	if x.component == "valve" { // a valve reports its position on state_topic, as a number
		posTopic, posTpl = "", ""
	}
	posSchema := map[string]any{"type": "number", "minimum": 0.0, "maximum": 100.0, "x-unit": "%", "description": "Position, 0 closed … 100 open"}
	x.addState(x.subID("position"), x.name+" position", "Position in percent (100 = open)", posSchema,
		x.str(posTopic, ""), x.str(posTpl, ""), func(v any) (any, bool) {
			f, ok := model.ToFloat(v)
			return r.percent(f), ok
		})
	a := x.newAction("set", "Open, close, stop or position "+x.name+".")
	if x.component == "valve" {
		x.valveFields(a, r)
	} else {
		x.coverStateField(a)
		x.coverPositionField(a, r)
		x.coverTilt(a, r)
	}
	if len(a.Fields) == 0 {
		x.b.spec.Actions = x.b.spec.Actions[:len(x.b.spec.Actions)-1]
	}
}

// coverStateField offers OPEN/CLOSE/STOP: the payloads not set to null.
func (x *ent) coverStateField(a *model.Action) {
	send, ok := x.command("command_topic", "")
	if !ok {
		return
	}
	payloads := map[string]string{}
	var values []any
	for _, c := range [][3]string{{"OPEN", "payload_open", "OPEN"}, {"CLOSE", "payload_close", "CLOSE"}, {"STOP", "payload_stop", "STOP"}} {
		if v, set := x.cfg[c[1]]; set && v == nil {
			continue
		}
		payloads[c[0]] = x.str(c[1], c[2])
		values = append(values, c[0])
	}
	if len(values) == 0 {
		return
	}
	a.Fields["state"] = model.EnumField("OPEN, CLOSE or STOP", values)
	x.affect(a, "state", x.mainID(), "state_topic")
	a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
		if s, ok := args["state"]; ok {
			return send(ctx, p, payloads[model.Stringify(s)], nil)
		}
		return nil
	}
}

// coverPositionField offers position 0…100: Home Assistant sends the
// ranged value through set_position_template, with the percentage as
// position.
func (x *ent) coverPositionField(a *model.Action, r coverRange) {
	sendPos, ok := x.command("set_position_topic", "set_position_template")
	if !ok {
		return
	}
	a.Fields["position"] = model.NumField("Target position, 0 closed … 100 open", model.Fnum(0), model.Fnum(100), 0, "%")
	x.affect(a, "position", x.subID("position"), "position_topic")
	stateSend := a.Send
	vars := map[string]any{"position_open": model.PyNumber(r.open), "position_closed": model.PyNumber(r.closed),
		"tilt_min": model.PyNumber(x.numOr("tilt_min", 0)), "tilt_max": model.PyNumber(x.numOr("tilt_max", 100)), "entity_id": x.entityID()}
	a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
		if s, ok := args["state"]; ok && stateSend != nil {
			if err := stateSend(ctx, p, map[string]any{"state": s}); err != nil {
				return err
			}
		}
		if pos, ok := args["position"].(float64); ok {
			return sendPos(ctx, p, r.device(int(pos)), positionVars(vars, int(pos)))
		}
		return nil
	}
}

// positionVars adds position (the percentage, as the service coerces it:
// an int) to a position template's variables.
func positionVars(vars map[string]any, pct int) map[string]any {
	v := make(map[string]any, len(vars)+1)
	for k, x := range vars {
		v[k] = x
	}
	v["position"] = pct
	return v
}

// valveFields: a valve takes payload_open/payload_close (payload_stop when
// set) on command_topic, or, when it reports its position, the ranged
// position; both through command_template.
func (x *ent) valveFields(a *model.Action, r coverRange) {
	send, ok := x.command("command_topic", "command_template")
	if !ok {
		return
	}
	if b, _ := x.cfg["reports_position"].(bool); b {
		a.Fields["position"] = model.NumField("Target position, 0 closed … 100 open", model.Fnum(0), model.Fnum(100), 0, "%")
		vars := map[string]any{"position_open": model.PyNumber(r.open), "position_closed": model.PyNumber(r.closed)}
		a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
			pos, _ := args["position"].(float64)
			return send(ctx, p, r.device(int(pos)), positionVars(vars, int(pos)))
		}
		return
	}
	payloads := map[string]string{"OPEN": x.str("payload_open", "OPEN"), "CLOSE": x.str("payload_close", "CLOSE")}
	values := []any{"OPEN", "CLOSE"}
	if x.has("payload_stop") {
		payloads["STOP"], values = x.str("payload_stop", ""), append(values, "STOP")
	}
	a.Fields["state"] = model.EnumField("OPEN or CLOSE", values)
	x.affect(a, "state", x.mainID(), "state_topic")
	a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
		return send(ctx, p, payloads[model.Stringify(args["state"])], nil)
	}
}

func (x *ent) numOr(k string, def float64) float64 {
	if v, ok := x.num(k); ok {
		return v
	}
	return def
}

// entityID is the Home Assistant entity id the entity would have (the
// entity_id template variable): <component>.<object_id or slug of name>.
func (x *ent) entityID() string {
	obj := x.str("object_id", "")
	if obj == "" {
		obj = x.name
	}
	return x.component + "." + model.Slug(strings.ReplaceAll(obj, "/", "_"))
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
	minT, maxT := x.numOr("min_temp", 7), x.numOr("max_temp", 35)
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
	x.climateAction(unit, minT, maxT, modes)
}

// climateAction sets the mode, then the temperature, as Home Assistant's
// set_temperature with hvac_mode does; the temperature is a float
// ("21.0").
func (x *ent) climateAction(unit string, minT, maxT float64, modes []any) {
	a := x.newAction("set", "Set the target temperature or mode of "+x.name+".")
	sendT, okT := x.command("temperature_command_topic", "temperature_command_template")
	if okT {
		step := x.numOr("temp_step", 0)
		a.Fields["occupied_heating_setpoint"] = model.NumField("Target temperature", model.Fnum(minT), model.Fnum(maxT), step, unit)
		x.affect(a, "occupied_heating_setpoint", x.subID("occupied_heating_setpoint"), "temperature_state_topic")
	}
	sendM, okM := x.command("mode_command_topic", "mode_command_template")
	if okM {
		a.Fields["system_mode"] = model.EnumField("HVAC mode", modes)
		x.affect(a, "system_mode", x.subID("system_mode"), "mode_state_topic")
	}
	a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
		if m, ok := args["system_mode"]; ok && okM {
			if err := sendM(ctx, p, m, nil); err != nil {
				return err
			}
		}
		if t, ok := args["occupied_heating_setpoint"]; ok && okT {
			return sendT(ctx, p, model.PyFloatValue(t), nil)
		}
		return nil
	}
	x.climateModes(a)
	if len(a.Fields) == 0 {
		x.b.spec.Actions = x.b.spec.Actions[:len(x.b.spec.Actions)-1]
	}
}
