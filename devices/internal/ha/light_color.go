package ha

import (
	"context"
	"strconv"
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// haColorMode is one colour command of a default-schema light: its topic
// and template, the colour's members and the template variables Home
// Assistant names them by.
type haColorMode struct {
	mode, topic, tpl, state, stateTpl string
	keys, vars                        []string
	float                             bool // the members are floats (hs, xy), else ints
}

// haColorModes are in the order Home Assistant's turn_on publishes them.
var haColorModes = []haColorMode{
	{"hs", "hs_command_topic", "hs_command_template", "hs_state_topic", "hs_value_template", []string{"h", "s"}, []string{"hue", "sat"}, true},
	{"rgb", "rgb_command_topic", "rgb_command_template", "rgb_state_topic", "rgb_value_template", []string{"r", "g", "b"}, []string{"red", "green", "blue"}, false},
	{"rgbw", "rgbw_command_topic", "rgbw_command_template", "rgbw_state_topic", "rgbw_value_template", []string{"r", "g", "b", "w"}, []string{"red", "green", "blue", "white"}, false},
	{"rgbww", "rgbww_command_topic", "rgbww_command_template", "rgbww_state_topic", "rgbww_value_template", []string{"r", "g", "b", "c", "w"},
		[]string{"red", "green", "blue", "cold_white", "warm_white"}, false},
	{"xy", "xy_command_topic", "xy_command_template", "xy_state_topic", "xy_value_template", []string{"x", "y"}, []string{"x", "y"}, true},
}

// colorMember is the field of one member of a colour.
func colorMember(k string) *model.Field {
	switch k {
	case "h":
		return model.NumField("Hue", model.Fnum(0), model.Fnum(360), 0, "°")
	case "s":
		return model.NumField("Saturation", model.Fnum(0), model.Fnum(100), 0, "%")
	case "x", "y":
		return model.NumField("CIE "+k, model.Fnum(0), model.Fnum(1), 0, "")
	}
	return model.NumField(strings.ToUpper(k)+" channel", model.Fnum(0), model.Fnum(255), 0, "")
}

func (m haColorMode) field() *model.Field {
	props := map[string]*model.Field{}
	for _, k := range m.keys {
		props[k] = colorMember(k)
	}
	return model.RequiredObj("Colour as "+m.mode+" ("+strings.Join(m.keys, ", ")+")", props)
}

// matches reports whether a colour argument is in this mode (its members
// are exactly the mode's).
func (m haColorMode) matches(c map[string]any) bool {
	if len(c) != len(m.keys) {
		return false
	}
	for _, k := range m.keys {
		if _, ok := c[k]; !ok {
			return false
		}
	}
	return true
}

// pyText is how Python's str prints the member (float or int).
func (m haColorMode) pyText(v any) (string, any) {
	f, _ := model.ToFloat(v)
	if m.float {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return s, f
	}
	n := int(f)
	return strconv.Itoa(n), n
}

// colorSender is the colour commands a default-schema light offers.
type colorSender struct {
	modes []haColorMode
	sends []cmdSend
}

// defaultColor offers the colour modes the light has command topics for,
// and declares the colour state of the first one with a state topic.
func (x *ent) defaultColor(a *model.Action) *colorSender {
	cs := &colorSender{}
	var alts []*model.Field
	stated := false
	for _, m := range haColorModes {
		if !stated && x.has(m.state) {
			stated = true
			x.addState(x.subID("color"), x.name+" colour", "Colour as "+m.mode, map[string]any{"type": "object"},
				x.str(m.state, ""), x.str(m.stateTpl, ""), m.parse)
		}
		send, ok := x.command(m.topic, m.tpl)
		if !ok {
			continue
		}
		cs.modes, cs.sends = append(cs.modes, m), append(cs.sends, send)
		alts = append(alts, m.field())
	}
	if len(alts) == 0 {
		return cs
	}
	a.Fields["color"] = model.UnionField("Colour, in one of the modes the light has", alts...)
	return cs
}

// parse reads a reported colour ("h,s", "r,g,b", …) into its members.
func (m haColorMode) parse(v any) (any, bool) {
	parts := strings.Split(strings.TrimSpace(model.Stringify(v)), ",")
	if len(parts) != len(m.keys) {
		return nil, false
	}
	out := make(map[string]any, len(parts))
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil, false
		}
		out[m.keys[i]] = f
	}
	return out, true
}

// send publishes the colour argument through its mode's topic: the
// members joined by commas, or the template with them as variables.
func (cs *colorSender) send(ctx context.Context, p model.Sender, c map[string]any) error {
	for i, m := range cs.modes {
		if !m.matches(c) {
			continue
		}
		texts := make([]string, len(m.keys))
		vars := make(map[string]any, len(m.keys))
		for j, k := range m.keys {
			texts[j], vars[m.vars[j]] = m.pyText(c[k])
		}
		return cs.sends[i](ctx, p, strings.Join(texts, ","), vars)
	}
	return nil
}

// defaultEffect offers effect_list on effect_command_topic and declares
// the effect state.
func (x *ent) defaultEffect(a *model.Action) cmdSend {
	list := x.list("effect_list")
	x.addState(x.subID("effect"), x.name+" effect", "Effect", map[string]any{"type": "string"},
		x.str("effect_state_topic", ""), x.str("effect_value_template", ""), scalarConv)
	send, ok := x.command("effect_command_topic", "effect_command_template")
	if !ok || len(list) == 0 {
		return nil
	}
	a.Fields["effect"] = model.EnumField("Effect", list)
	x.affect(a, "effect", x.subID("effect"), "effect_state_topic")
	return send
}
