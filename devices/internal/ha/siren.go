package ha

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// siren is Home Assistant's MQTT siren: turning on renders command_template
// with value payload_on and the turn-on parameters (tone, duration,
// volume_level) it supports; turning off renders command_off_template
// (command_template when unset) with value payload_off. Without a
// template the payload is the JSON of those variables ({"state": "ON",
// …}). The state is payload_on/payload_off (state_on/state_off), plain or
// as the "state" of a JSON object.
func (x *ent) siren() {
	on, off := x.str("payload_on", "ON"), x.str("payload_off", "OFF")
	m := matcher([2]string{x.str("state_on", on), "ON"}, [2]string{x.str("state_off", off), "OFF"})
	x.addState(x.mainID(), x.name, x.unitDesc(), onOffSchema(x.unitDesc()+"; ON or OFF"), x.str("state_topic", ""), x.str("value_template", ""),
		func(v any) (any, bool) {
			if r, ok := m(v); ok {
				return r, true
			}
			var obj map[string]any
			if json.Unmarshal([]byte(model.Stringify(v)), &obj) == nil && obj["state"] != nil {
				return m(obj["state"])
			}
			return nil, false
		})
	topic := x.str("command_topic", "")
	x.readKey("command_topic")
	onT, okOn := x.template("command_template", "")
	offT, okOff := x.template("command_off_template", "command_template")
	if topic == "" || !okOn || !okOff {
		return
	}
	a := x.newAction("set", "Turn "+x.name+" on or off.")
	a.Fields["state"] = model.EnumField("ON or OFF", []any{"ON", "OFF"})
	params := x.sirenFields(a)
	x.affect(a, "state", x.mainID(), "state_topic")
	a.Send = func(ctx context.Context, p model.Sender, args map[string]any) error {
		value, t := off, offT
		vars := []any{"state", off}
		if args["state"] != "OFF" {
			value, t, vars = on, onT, []any{"state", on}
			for _, k := range params {
				if v, ok := args[k]; ok {
					vars = append(vars, k, model.PyNumber(v))
				}
			}
		}
		pl, err := sirenPayload(t, value, vars)
		if err != nil {
			return fmt.Errorf("devices: %s: %w", p.ID(), err)
		}
		if pl == "" || pl == "None" {
			return nil // Home Assistant publishes nothing for an empty or None payload
		}
		p.Add(topic, []byte(pl))
		return nil
	}
}

// sirenFields adds the turn-on parameters the siren supports and returns
// their names in Home Assistant's order.
func (x *ent) sirenFields(a *model.Action) []string {
	var params []string
	if tones := x.list("available_tones"); len(tones) > 0 {
		a.Fields["tone"] = model.EnumField("Tone (ignored when turning off)", tones)
		params = append(params, "tone")
	}
	if x.cfg["support_volume_set"] != false {
		a.Fields["volume_level"] = model.NumField("Volume, 0 … 1 (ignored when turning off)", model.Fnum(0), model.Fnum(1), 0, "")
		params = append(params, "volume_level")
	}
	if x.cfg["support_duration"] != false {
		a.Fields["duration"] = model.NumField("Duration (ignored when turning off)", model.Fnum(0), nil, 1, "s")
		params = append(params, "duration")
	}
	a.Required = []string{"state"}
	return params
}

// sirenPayload renders t with value and vars (name, value pairs), or,
// without a template, encodes vars as a JSON object in their order.
func sirenPayload(t *model.Template, value any, vars []any) (string, error) {
	if t != nil {
		m := make(map[string]any, len(vars)/2)
		for i := 0; i < len(vars); i += 2 {
			m[vars[i].(string)] = vars[i+1]
		}
		return t.RenderCommand(value, m)
	}
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < len(vars); i += 2 {
		k, _ := json.Marshal(vars[i])
		v, err := json.Marshal(vars[i+1])
		if err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.String(), nil
}

// template compiles the command template key (else fallback, when set);
// ok is false when it cannot be rendered (the device then says so and
// the command is not offered). Every key read is recorded: the audit
// reports command templates nothing read.
func (x *ent) template(key, fallback string) (*model.Template, bool) {
	x.readKey(key)
	src := x.str(key, "")
	if src == "" && fallback != "" {
		x.readKey(fallback)
		key, src = fallback, x.str(fallback, "")
	}
	t := model.CompileTemplate(src)
	if t != nil && t.Unsupported != "" {
		x.b.gap(x.name + ": " + key + " " + t.Unsupported + "; its command is not offered")
		return nil, false
	}
	return t, true
}

func (x *ent) readKey(k string) {
	if x.read == nil {
		x.read = map[string]bool{}
	}
	x.read[k] = true
}

// auditTemplates reports every command topic and template of the config
// that the entity's model did not read: that feature is not offered. A
// template that shapes a topic the entity publishes to (a siren's
// command_off_template next to command_topic) would make a command
// publish another payload than Home Assistant does, so the entity's
// commands are withdrawn.
func (x *ent) auditTemplates(actionsBefore int) {
	var unread []string
	harmful := false
	for _, k := range sortedKeys(x.cfg) {
		if x.read[k] || !(isCommandTemplate(k) || strings.HasSuffix(k, "command_topic")) || !x.has(k) {
			continue
		}
		unread = append(unread, k)
		harmful = harmful || isCommandTemplate(k) && x.read[templateTopic(k)]
	}
	if len(unread) == 0 {
		return
	}
	why := strings.Join(unread, ", ") + " not modelled"
	if harmful && len(x.b.spec.Actions) > actionsBefore {
		x.b.spec.Actions = x.b.spec.Actions[:actionsBefore]
		why += "; its commands are not offered"
	}
	x.b.gap(x.name + ": " + why)
}

// isCommandTemplate reports a key that shapes a published payload.
func isCommandTemplate(k string) bool {
	return strings.HasSuffix(k, "_template") && (strings.Contains(k, "command") || k == "set_position_template")
}

// templateTopic is the topic key a command template shapes: the on/off
// variants shape the topic of their base (command_off_template →
// command_topic).
func templateTopic(k string) string {
	k = strings.Replace(strings.Replace(k, "_on_", "_", 1), "_off_", "_", 1)
	return strings.TrimSuffix(k, "_template") + "_topic"
}
