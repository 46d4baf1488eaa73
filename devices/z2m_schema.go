package devices

// The schemas of a Zigbee2MQTT expose: stateSchema for what Zigbee2MQTT
// publishes, inputField for what its /set takes, and the set keys it
// documents for lights beyond their exposes.

func stateSchema(e expose) map[string]any {
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
			if allStrings(vals) {
				s["type"] = "string"
			}
		}
	case "numeric":
		s = numericStateSchema(e)
	case "enum":
		if len(e.Values) > 0 {
			s["enum"] = e.Values
		}
		if allStrings(e.Values) {
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
			if k := exposeKey(f); k != "" {
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
func numericStateSchema(e expose) map[string]any {
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
			vals = appendUnique(vals, p.Value)
		}
		s = map[string]any{"anyOf": []any{num, map[string]any{"enum": vals}}}
	}
	if e.Unit != "" {
		s["x-unit"] = e.Unit
	}
	return s
}

func setLength(s map[string]any, e expose) {
	if e.LengthMin != nil {
		s["minItems"] = *e.LengthMin
	}
	if e.LengthMax != nil {
		s["maxItems"] = *e.LengthMax
	}
}

func inputField(e expose) *field {
	desc := exposeDesc(e)
	switch e.Type {
	case "binary":
		vals := []any{e.ValueOn, e.ValueOff}
		if e.ValueToggle != nil {
			vals = append(vals, e.ValueToggle)
		}
		return enumField(desc, vals)
	case "numeric":
		step := 0.0
		if e.ValueStep != nil {
			step = *e.ValueStep
		}
		return withPresets(numField(desc, e.ValueMin, e.ValueMax, step, e.Unit), e.Presets)
	case "enum":
		if len(e.Values) == 0 {
			return strField(desc)
		}
		return enumField(desc, e.Values)
	case "list":
		var items *field
		if e.ItemType != nil {
			items = inputField(*e.ItemType)
			if day := dayOfWeekItem(e); day != nil {
				items = unionField(exposeDesc(*e.ItemType), items, inputField(*day))
			}
		}
		return arrayField(desc, items, e.LengthMin, e.LengthMax)
	case "composite":
		return compositeField(e)
	}
	return strField(desc)
}

// dayOfWeekItem is the day of a weekly schedule's dayofweek list, whose
// items the library exposes as {"day": …}: its converter takes the day
// alone too ("dayofweek": ["monday"]), so both forms are offered.
func dayOfWeekItem(e expose) *expose {
	it := e.ItemType
	if e.Name != "dayofweek" || it.Type != "composite" || len(it.Features) != 1 {
		return nil
	}
	return &it.Features[0]
}

// compositeField is the object a settable composite takes: its settable
// features (all of them when none is marked settable, composites inside
// included); any object when Zigbee2MQTT lists no features.
func compositeField(e expose) *field {
	desc := exposeDesc(e)
	if len(e.Features) == 0 {
		return openObjField(desc)
	}
	settable := anySettable(e.Features)
	sub := map[string]*field{}
	for _, f := range e.Features {
		if k := exposeKey(f); k != "" && (!settable || f.Access&accessSet != 0) {
			sub[k] = inputField(f)
		}
	}
	return objField(desc, sub)
}

func anySettable(fs []expose) bool {
	for _, f := range fs {
		if f.Access&accessSet != 0 {
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
func (b *z2mBuilder) lightExtras(l expose) {
	if !anySettable(l.Features) {
		return
	}
	b.extra("transition", numField("Seconds over which the light changes to the values of this message", fnum(0), nil, 0, "s"))
	var xy, hs *expose
	for i := range l.Features {
		f := &l.Features[i]
		if f.Access&accessSet == 0 {
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
			b.moveStep("hue_move"+sfx, "hue_step"+sfx, "hue", fnum(255))
			b.moveStep("saturation_move"+sfx, "saturation_step"+sfx, "saturation", fnum(255))
		}
	}
	switch {
	case xy != nil && hs != nil && exposeKey(*xy) != exposeKey(*hs):
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
		lo = fnum(-*limit)
	}
	desc := "Start moving the " + what + " at this many units per second (negative: down); 0 or \"stop\" stops"
	b.extra(moveKey, unionField(desc, numField("", lo, limit, 0, ""), enumField("", []any{"stop"})))
	b.extra(stepKey, numField("Change the "+what+" by this amount (negative: down)", lo, limit, 0, ""))
}

func (b *z2mBuilder) extra(key string, f *field) {
	if _, exposed := b.act.fields[key]; !exposed {
		b.act.fields[key] = f
	}
}

// colorForms makes the colour key take every form Zigbee2MQTT's colour
// converter reads: with color_xy {x, y}, {r, g, b}, {rgb: "R,G,B"} and
// {hex: "#RRGGBB"}; with color_hs {hue, saturation} (either or both),
// {h, s, b|v|l} and {hsb|hsv|hsl: "H,S,B"}.
func (b *z2mBuilder) colorForms(xy, hs *expose) {
	var forms []*field
	var key string
	if xy != nil {
		key = exposeKey(*xy)
		byte255 := func(d string) *field { return numField(d, fnum(0), fnum(255), 0, "") }
		forms = append(forms,
			requiredObj("CIE 1931 x and y", featureFields(xy)),
			requiredObj("red, green and blue, 0 to 255", map[string]*field{"r": byte255("Red"), "g": byte255("Green"), "b": byte255("Blue")}),
			requiredObj(`"R,G,B", each 0 to 255`, map[string]*field{"rgb": formatField("R,G,B", "triplet")}),
			requiredObj("hexadecimal RGB", map[string]*field{"hex": formatField("#RRGGBB", "hex")}))
	}
	if hs != nil {
		key = exposeKey(*hs)
		forms = append(forms, objField("hue and/or saturation", featureFields(hs)))
		for _, third := range []string{"b", "v", "l"} {
			forms = append(forms,
				requiredObj("hue 0 to 360, saturation and "+third+" 0 to 100", map[string]*field{
					"h": numField("Hue", fnum(0), fnum(360), 0, ""), "s": numField("Saturation", fnum(0), fnum(100), 0, ""),
					third: numField(third, fnum(0), fnum(100), 0, "")}),
				requiredObj(`"H,S,`+third+`"`, map[string]*field{"hs" + third: formatField("H,S,"+third, "triplet")}))
		}
	}
	b.act.fields[key] = unionField("Colour, in one of the forms Zigbee2MQTT accepts", forms...)
}

func featureFields(e *expose) map[string]*field {
	out := map[string]*field{}
	for _, f := range e.Features {
		if k := exposeKey(f); k != "" {
			out[k] = inputField(f)
		}
	}
	return out
}
