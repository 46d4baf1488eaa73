package z2m

import "github.com/pilothouse/pilothouse/devices/internal/model"

// The schemas of a Zigbee2MQTT expose: stateSchema for what Zigbee2MQTT
// publishes, inputField for what its /set takes, and the set keys it
// documents for lights beyond their exposes.

func stateSchema(e Expose) map[string]any {
	s := map[string]any{}
	switch e.Type {
	case "binary":
		_, onBool := e.ValueOn.(bool)
		_, offBool := e.ValueOff.(bool)
		if onBool && offBool {
			s["type"] = "boolean"
			if on, _ := e.ValueOn.(bool); !on {
				s["x-active-value"] = false
			}
		} else {
			vals := []any{e.ValueOn, e.ValueOff}
			s["enum"] = vals
			if model.AllStrings(vals) {
				s["type"] = "string"
			}
		}
	case "numeric":
		s = numericStateSchema(e)
	case "enum":
		if len(e.Values) > 0 {
			s["enum"] = e.Values
		}
		if model.AllStrings(e.Values) {
			s["type"] = "string"
		}
	case "text":
		s["type"] = "string"
	case "list":
		s["type"] = "array"
		if e.ItemType != nil {
			s["items"] = stateSchema(*e.ItemType)
		}
		setLength(s, e)
	case "composite":
		props := map[string]any{}
		for _, f := range e.Features {
			if k := ExposeKey(f); k != "" {
				props[k] = stateSchema(f)
			}
		}
		s["type"] = "object"
		s["properties"] = props
	}
	if d := exposeDesc(e); d != "" {
		s["description"] = d
	}
	return s
}

// numericStateSchema admits the range and, outside it, the preset values
// (color_temp_startup reports 65535 for "previous").
func numericStateSchema(e Expose) map[string]any {
	num := map[string]any{"type": "number"}
	if e.ValueMin != nil {
		num["minimum"] = *e.ValueMin
	}
	if e.ValueMax != nil {
		num["maximum"] = *e.ValueMax
	}
	s := num
	if len(e.Presets) > 0 {
		var vals []any
		for _, p := range e.Presets {
			vals = model.AppendUnique(vals, p.Value)
		}
		s = map[string]any{"anyOf": []any{num, map[string]any{"enum": vals}}}
	}
	if e.Unit != "" {
		s["x-unit"] = e.Unit
	}
	return s
}

func setLength(s map[string]any, e Expose) {
	if e.LengthMin != nil {
		s["minItems"] = *e.LengthMin
	}
	if e.LengthMax != nil {
		s["maxItems"] = *e.LengthMax
	}
}

func inputField(e Expose) *model.Field {
	desc := exposeDesc(e)
	switch e.Type {
	case "binary":
		vals := []any{e.ValueOn, e.ValueOff}
		if e.ValueToggle != nil {
			vals = append(vals, e.ValueToggle)
		}
		return model.EnumField(desc, vals)
	case "numeric":
		step := 0.0
		if e.ValueStep != nil {
			step = *e.ValueStep
		}
		return model.WithPresets(model.NumField(desc, e.ValueMin, e.ValueMax, step, e.Unit), e.Presets)
	case "enum":
		if len(e.Values) == 0 {
			return model.StrField(desc)
		}
		return model.EnumField(desc, e.Values)
	case "list":
		var items *model.Field
		if e.ItemType != nil {
			items = inputField(*e.ItemType)
			if day := dayOfWeekItem(e); day != nil {
				items = model.UnionField(exposeDesc(*e.ItemType), items, inputField(*day))
			}
		}
		return model.ArrayField(desc, items, e.LengthMin, e.LengthMax)
	case "composite":
		return compositeField(e)
	}
	return model.StrField(desc)
}

// dayOfWeekItem is the day of a weekly schedule's dayofweek list, whose
// items the library exposes as {"day": …}: its converter takes the day
// alone too ("dayofweek": ["monday"]), so both forms are offered.
func dayOfWeekItem(e Expose) *Expose {
	it := e.ItemType
	if e.Name != "dayofweek" || it.Type != "composite" || len(it.Features) != 1 {
		return nil
	}
	return &it.Features[0]
}

// compositeField is the object a settable composite takes: its settable
// features (all of them when none is marked settable, composites inside
// included); any object when Zigbee2MQTT lists no features.
func compositeField(e Expose) *model.Field {
	desc := exposeDesc(e)
	if len(e.Features) == 0 {
		return model.OpenObjField(desc)
	}
	settable := AnySettable(e.Features)
	sub := map[string]*model.Field{}
	for _, f := range e.Features {
		if k := ExposeKey(f); k != "" && (!settable || f.Access&AccessSet != 0) {
			sub[k] = inputField(f)
		}
	}
	return model.ObjField(desc, sub)
}

func AnySettable(fs []Expose) bool {
	for _, f := range fs {
		if f.Access&AccessSet != 0 {
			return true
		}
	}
	return false
}

// lightExtras adds the set keys Zigbee2MQTT documents for a light beyond
// its exposes (zigbee2mqtt.io device pages: "Transition", "Moving/
// stepping", the colour forms): transition with any settable feature;
// <x>_move and <x>_step for brightness, color_temp and (with color_hs)
// hue and saturation, suffixed like the feature's endpoint; and every
// colour form of color_xy and color_hs. An exposed key always wins.
func (b *z2mBuilder) lightExtras(l Expose) {
	if !AnySettable(l.Features) {
		return
	}
	b.extra("transition", model.NumField("Seconds over which the light changes to the values of this message", model.Fnum(0), nil, 0, "s"))
	var xy, hs *Expose
	for i := range l.Features {
		f := &l.Features[i]
		if f.Access&AccessSet == 0 {
			continue
		}
		sfx := ""
		if f.Endpoint != "" {
			sfx = "_" + f.Endpoint
		}
		switch f.Name {
		case "brightness":
			b.moveStep("brightness_move"+sfx, "brightness_step"+sfx, "brightness", nil)
			b.moveStep("brightness_move_onoff"+sfx, "brightness_step_onoff"+sfx, "brightness, turning the light on or off at the ends", nil)
		case "color_temp":
			b.moveStep("color_temp_move"+sfx, "color_temp_step"+sfx, "colour temperature", nil)
		case "color_xy":
			xy = f
		case "color_hs":
			hs = f
			b.moveStep("hue_move"+sfx, "hue_step"+sfx, "hue", model.Fnum(255))
			b.moveStep("saturation_move"+sfx, "saturation_step"+sfx, "saturation", model.Fnum(255))
		}
	}
	switch {
	case xy != nil && hs != nil && ExposeKey(*xy) != ExposeKey(*hs):
		b.colorForms(xy, nil)
		b.colorForms(nil, hs)
	case xy != nil || hs != nil:
		b.colorForms(xy, hs)
	}
}

// moveStep adds a move key (a rate, or "stop") and a step key (an
// increment) for what.
func (b *z2mBuilder) moveStep(moveKey, stepKey, what string, limit *float64) {
	var lo *float64
	if limit != nil {
		lo = model.Fnum(-*limit)
	}
	desc := "Start moving the " + what + " at this many units per second (negative: down); 0 or \"stop\" stops"
	b.extra(moveKey, model.UnionField(desc, model.NumField("", lo, limit, 0, ""), model.EnumField("", []any{"stop"})))
	b.extra(stepKey, model.NumField("Change the "+what+" by this amount (negative: down)", lo, limit, 0, ""))
}

func (b *z2mBuilder) extra(key string, f *model.Field) {
	if _, exposed := b.act.Fields[key]; !exposed {
		b.act.Fields[key] = f
	}
}

// colorForms makes the colour key take every form Zigbee2MQTT's colour
// converter reads: with color_xy {x, y}, {r, g, b}, {rgb: "R,G,B"} and
// {hex: "#RRGGBB"}; with color_hs {hue, saturation} (either or both),
// {h, s, b|v|l} and {hsb|hsv|hsl: "H,S,B"}.
func (b *z2mBuilder) colorForms(xy, hs *Expose) {
	var forms []*model.Field
	var key string
	if xy != nil {
		key = ExposeKey(*xy)
		byte255 := func(d string) *model.Field { return model.NumField(d, model.Fnum(0), model.Fnum(255), 0, "") }
		forms = append(forms,
			model.RequiredObj("CIE 1931 x and y", featureFields(xy)),
			model.RequiredObj("red, green and blue, 0 to 255", map[string]*model.Field{"r": byte255("Red"), "g": byte255("Green"), "b": byte255("Blue")}),
			model.RequiredObj(`"R,G,B", each 0 to 255`, map[string]*model.Field{"rgb": model.FormatField("R,G,B", "triplet")}),
			model.RequiredObj("hexadecimal RGB", map[string]*model.Field{"hex": model.FormatField("#RRGGBB", "hex")}))
	}
	if hs != nil {
		key = ExposeKey(*hs)
		forms = append(forms, model.ObjField("hue and/or saturation", featureFields(hs)))
		for _, third := range []string{"b", "v", "l"} {
			forms = append(forms,
				model.RequiredObj("hue 0 to 360, saturation and "+third+" 0 to 100", map[string]*model.Field{
					"h": model.NumField("Hue", model.Fnum(0), model.Fnum(360), 0, ""), "s": model.NumField("Saturation", model.Fnum(0), model.Fnum(100), 0, ""),
					third: model.NumField(third, model.Fnum(0), model.Fnum(100), 0, "")}),
				model.RequiredObj(`"H,S,`+third+`"`, map[string]*model.Field{"hs" + third: model.FormatField("H,S,"+third, "triplet")}))
		}
	}
	b.act.Fields[key] = model.UnionField("Colour, in one of the forms Zigbee2MQTT accepts", forms...)
}

func featureFields(e *Expose) map[string]*model.Field {
	out := map[string]*model.Field{}
	for _, f := range e.Features {
		if k := ExposeKey(f); k != "" {
			out[k] = inputField(f)
		}
	}
	return out
}
