package ha

import (
	"context"
	"math"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// modeFeature is one enumerated setting of a climate or fan entity that
// has its own command and state topics (preset, fan and swing modes,
// direction).
type modeFeature struct {
	arg, desc        string
	list             string // the config key listing the values ("" = fixed)
	fixed            []any  // the values when list is ""
	none             bool   // Home Assistant adds "none" first (a climate's presets)
	cmdTopic, cmdTpl string
	stTopic, stTpl   string
}

// addMode declares the feature's state and offers it on a: Home Assistant
// renders the command template with the chosen value.
func (x *ent) addMode(a *model.Action, m modeFeature) {
	vals := m.fixed
	if m.list != "" {
		vals = x.list(m.list)
	}
	if len(vals) == 0 {
		return
	}
	if m.none {
		vals = append([]any{"none"}, vals...)
	}
	id := x.subID(m.arg)
	x.addState(id, x.name+" "+m.desc, m.desc, map[string]any{"type": "string", "enum": vals}, x.str(m.stTopic, ""), x.str(m.stTpl, ""), scalarConv)
	send, ok := x.command(m.cmdTopic, m.cmdTpl)
	if !ok {
		return
	}
	a.Fields[m.arg] = model.EnumField(m.desc, vals)
	x.affect(a, m.arg, id, m.stTopic)
	x.chain(a, func(ctx context.Context, p model.Sender, args map[string]any) error {
		if v, ok := args[m.arg]; ok {
			return send(ctx, p, v, nil)
		}
		return nil
	})
}

// chain makes a send next after what a already sends.
func (x *ent) chain(a *model.Action, next func(ctx context.Context, p model.Sender, args map[string]any) error) {
	prev := a.Send
	a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
		if prev != nil {
			if err := prev(ctx, p, args); err != nil {
				return err
			}
		}
		return next(ctx, p, args)
	}
}

// climateModes offers a climate's presets, fan modes and swing modes.
func (x *ent) climateModes(a *model.Action) {
	x.addMode(a, modeFeature{arg: "preset", desc: "Preset", list: "preset_modes", none: true,
		cmdTopic: "preset_mode_command_topic", cmdTpl: "preset_mode_command_template", stTopic: "preset_mode_state_topic", stTpl: "preset_mode_value_template"})
	fanModes := modeFeature{arg: "fan_mode", desc: "Fan mode", list: "fan_modes",
		cmdTopic: "fan_mode_command_topic", cmdTpl: "fan_mode_command_template", stTopic: "fan_mode_state_topic", stTpl: "fan_mode_state_template"}
	if x.list("fan_modes") == nil {
		fanModes.list, fanModes.fixed = "", []any{"auto", "low", "medium", "high"}
	}
	x.addMode(a, fanModes)
	swing := modeFeature{arg: "swing_mode", desc: "Swing mode", list: "swing_modes",
		cmdTopic: "swing_mode_command_topic", cmdTpl: "swing_mode_command_template", stTopic: "swing_mode_state_topic", stTpl: "swing_mode_state_template"}
	if x.list("swing_modes") == nil {
		swing.list, swing.fixed = "", []any{"on", "off"}
	}
	x.addMode(a, swing)
}

// fanFeatures offers a fan's presets, oscillation and direction.
func (x *ent) fanFeatures(a *model.Action) {
	x.addMode(a, modeFeature{arg: "preset_mode", desc: "Preset mode", list: "preset_modes",
		cmdTopic: "preset_mode_command_topic", cmdTpl: "preset_mode_command_template", stTopic: "preset_mode_state_topic", stTpl: "preset_mode_value_template"})
	x.addMode(a, modeFeature{arg: "direction", desc: "Direction", fixed: []any{"forward", "reverse"},
		cmdTopic: "direction_command_topic", cmdTpl: "direction_command_template", stTopic: "direction_state_topic", stTpl: "direction_value_template"})
	on, off := x.str("payload_oscillation_on", "oscillate_on"), x.str("payload_oscillation_off", "oscillate_off")
	m := matcher([2]string{on, "true"}, [2]string{off, "false"})
	x.addState(x.subID("oscillating"), x.name+" oscillating", "Oscillating", map[string]any{"type": "boolean"},
		x.str("oscillation_state_topic", ""), x.str("oscillation_value_template", ""), func(v any) (any, bool) {
			r, ok := m(v)
			return r == "true", ok
		})
	send, ok := x.command("oscillation_command_topic", "oscillation_command_template")
	if !ok {
		return
	}
	a.Fields["oscillating"] = &model.Field{Schema: map[string]any{"type": "boolean", "description": "Oscillate"}, Kind: "boolean"}
	x.affect(a, "oscillating", x.subID("oscillating"), "oscillation_state_topic")
	x.chain(a, func(ctx context.Context, p model.Sender, args map[string]any) error {
		if v, ok := args["oscillating"]; ok {
			pl := off
			if v == true {
				pl = on
			}
			return send(ctx, p, pl, nil)
		}
		return nil
	})
}

// tiltRange is a cover's tilt_min … tilt_max, 0 … 100 percent in the
// catalog.
type tiltRange struct{ min, max float64 }

// percent is find_percentage_in_range for a reported tilt.
func (r tiltRange) percent(v any) (any, bool) {
	f, ok := model.ToFloat(v)
	if !ok || r.max == r.min {
		return nil, false
	}
	p := math.RoundToEven((f - r.min) * 100 / (r.max - r.min))
	return math.Min(math.Max(p, 0), 100), true
}

// device is find_in_range_from_percent: round(range * pct / 100) + min.
func (r tiltRange) device(pct float64) int {
	return int(math.RoundToEven((r.max-r.min)*pct/100) + r.min)
}

// coverTilt offers a cover's tilt position, 0 … 100 percent, sent as Home
// Assistant's set_cover_tilt_position sends it (tilt_command_template with
// the ranged value and tilt_position, the percentage).
func (x *ent) coverTilt(a *model.Action, r coverRange) {
	tr := tiltRange{min: x.numOr("tilt_min", 0), max: x.numOr("tilt_max", 100)}
	id := x.subID("tilt")
	x.addState(id, x.name+" tilt", "Tilt position in percent (100 = open)",
		map[string]any{"type": "number", "minimum": 0.0, "maximum": 100.0, "x-unit": "%"},
		x.str("tilt_status_topic", ""), x.str("tilt_status_template", ""), tr.percent)
	send, ok := x.command("tilt_command_topic", "tilt_command_template")
	if !ok {
		return
	}
	a.Fields["tilt"] = model.NumField("Tilt position, 0 closed … 100 open", model.Fnum(0), model.Fnum(100), 0, "%")
	x.affect(a, "tilt", id, "tilt_status_topic")
	vars := map[string]any{"position_open": model.PyNumber(r.open), "position_closed": model.PyNumber(r.closed),
		"tilt_min": model.PyNumber(tr.min), "tilt_max": model.PyNumber(tr.max), "entity_id": x.entityID()}
	x.chain(a, func(ctx context.Context, p model.Sender, args map[string]any) error {
		pct, ok := args["tilt"].(float64)
		if !ok {
			return nil
		}
		v := make(map[string]any, len(vars)+1)
		for k, x := range vars {
			v[k] = x
		}
		v["tilt_position"] = int(pct)
		return send(ctx, p, tr.device(pct), v)
	})
}

// updateLatest declares an update entity's latest version, read from
// latest_version_topic when it has one.
func (x *ent) updateLatest() {
	x.addState(x.subID("latest_version"), x.name+" latest version", "Latest available version",
		map[string]any{"type": "string"}, x.str("latest_version_topic", ""), x.str("latest_version_template", ""), scalarConv)
}
