package rules

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Param fields: a trigger's or a wait's threshold (above, below), a
// trigger's hold (for), time of day (at) or sun offset (offset) written
// as "{{ params.<name> }}", as a Home Assistant blueprint writes !input.
// The unbound program is checked against the param's declared type and
// plans the field as the param; execute binds the value (bindField), so
// the run form holds a constant and nothing is evaluated per event.

// ParamField is one field written as "{{ params.<name> }}".
type ParamField struct {
	Field string // the member: above, below, for, at or offset
	Param string
	Ptr   string
	// Default is the param's default as JSON ("" = none): plans of the
	// unbound program show it.
	Default string
}

// runInput is a param field as the run form keeps it (no pointer):
// plans name it, and an unbound wait binds it when it runs.
type runInput struct{ field, param, def string }

// inputs lowers param fields.
func (in *interner) inputs(fs []ParamField) []runInput {
	if len(fs) == 0 {
		return nil
	}
	out := make([]runInput, len(fs))
	for i, f := range fs {
		out[i] = runInput{field: f.Field, param: in.str(f.Param), def: f.Default}
	}
	return out
}

// paramFieldKind is what one field takes: the JSON Schema types its
// param may declare and the finding code of a bad value.
type paramFieldKind struct {
	types []string
	code  string
	want  string // what a value must be, in a message
	eg    string // an example declaration
}

var paramFieldKinds = map[string]paramFieldKind{
	"above":  {[]string{"number", "integer"}, CodeTypeMismatch, "a number", `{"type": "number", "default": 70}`},
	"below":  {[]string{"number", "integer"}, CodeTypeMismatch, "a number", `{"type": "number", "default": 30}`},
	"for":    {[]string{"string"}, CodeBadDuration, "a duration such as \"10m\"", `{"type": "string", "format": "duration", "default": "10m"}`},
	"offset": {[]string{"string"}, CodeBadDuration, "a duration such as \"-30m\"", `{"type": "string", "default": "-30m"}`},
	"at":     {[]string{"string"}, CodeBadTime, "a time of day HH:MM or HH:MM:SS", `{"type": "string", "default": "07:30"}`},
}

// paramField records n as a param field when it is a string holding a
// template, and reports whether it was one (then no constant is read).
// Only exactly "{{ params.<name> }}" is accepted: the value must be known
// before the rule is armed.
func (dc *decoder) paramField(n *jnode, field string, into *[]ParamField) bool {
	if n == nil || n.kind != jStr || !strings.Contains(n.str, "{{") {
		return false
	}
	k := paramFieldKinds[field]
	name, ok := paramSite(n.str)
	if !ok {
		dc.d.add(k.code, n.ptr, `write a constant, or exactly "{{ params.<name> }}" naming a param that execute binds`,
			"%s %q: here a template must be exactly \"{{ params.<name> }}\" (the value is bound when the rule is deployed, not evaluated per event)", field, n.str)
		return true
	}
	*into = append(*into, ParamField{Field: field, Param: name, Ptr: n.ptr})
	return true
}

// paramFields checks the param fields of the unbound program: each param
// is declared with a type its field takes, and its default fits. It
// fills in the defaults plans show.
func (c *checker) paramFields(fs []ParamField) {
	for i := range fs {
		f := &fs[i]
		k := paramFieldKinds[f.Field]
		hint := fmt.Sprintf(`declare it in params: "properties": {"%s": %s}`, f.Param, k.eg)
		prop, ok := paramProperty(c.progParams, f.Param)
		switch {
		case !ok:
			c.d.add(CodeBadParams, f.Ptr, hint, "params.%s is not declared in the program's params schema", f.Param)
			continue
		case c.refs[f.Param] != nil:
			c.d.add(CodeBadParams, f.Ptr, hint, "params.%s is a catalog reference (an id); %s takes %s", f.Param, f.Field, k.want)
			continue
		}
		if t := schemaTypes(prop["type"]); len(t) == 0 || slices.ContainsFunc(t, func(s string) bool { return !slices.Contains(k.types, s) }) {
			c.d.add(CodeBadParams, f.Ptr, hint, "params.%s has type %s; %s takes %s (declare \"type\": %q)", f.Param, typeText(prop["type"]), f.Field, k.want, k.types[0])
			continue
		}
		def, has := prop["default"]
		if !has {
			continue
		}
		if _, err := fieldValue(f.Field, def); err != nil {
			c.d.add(CodeBadParams, f.Ptr, hint, "the default of params.%s, %s, is no %s: %v", f.Param, compactJSON(def), f.Field, err)
			continue
		}
		f.Default = compactJSON(def)
	}
}

// paramProperty is the schema of the top-level param name.
func paramProperty(schema json.RawMessage, name string) (map[string]any, bool) {
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil, false
	}
	p, ok := s.Properties[name]
	return p, ok && p != nil
}

// schemaTypes reads a JSON Schema "type": a name or a list of names.
func schemaTypes(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			s, _ := x.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}

func typeText(v any) string {
	if v == nil {
		return "(none)"
	}
	return compactJSON(v)
}

// fieldValue reads a param's value for field: a float64 (above, below),
// a time.Duration (for, offset) or a clock string (at).
func fieldValue(field string, v any) (any, error) {
	switch field {
	case "above", "below":
		n, ok := interpNumber(v)
		if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
			return nil, fmt.Errorf("want a number, got %s", interpTypeName(v))
		}
		return n, nil
	case "for", "offset":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a duration such as \"10m\", got %s", interpTypeName(v))
		}
		d, err := ParseDuration(s)
		if err != nil {
			return nil, err
		}
		if d < 0 && field == "for" {
			return nil, fmt.Errorf("a hold cannot be negative")
		}
		return d, nil
	case "at":
		s, ok := v.(string)
		if !ok || !validClock(s) {
			return nil, fmt.Errorf("want a time of day HH:MM or HH:MM:SS, got %s", compactJSON(v))
		}
		return s, nil
	}
	return nil, fmt.Errorf("%s takes no param", field)
}

// bindTrigger sets a trigger's param fields from the bound input; what
// does not bind is an input_binding finding at the param.
func (b *binding) bindTrigger(t *Trigger) {
	for _, f := range t.Inputs {
		v, ok := b.field(f)
		if !ok {
			continue
		}
		switch f.Field {
		case "above":
			n := v.(float64)
			t.Above = &n
		case "below":
			n := v.(float64)
			t.Below = &n
		case "for":
			t.For = v.(time.Duration)
		case "offset":
			t.Offset = v.(time.Duration)
		case "at":
			t.At = v.(string)
			t.Schedule, _ = ParseCron(timeOfDaySpec(t.At))
		}
	}
	b.band(t.Inputs, t.Above, t.Below, t.Ptr)
	t.Inputs = nil
}

// bindWait sets a wait's param fields (its thresholds).
func (b *binding) bindWait(w *WaitSpec) {
	for _, f := range w.Inputs {
		if v, ok := b.field(f); ok && f.Field == "above" {
			n := v.(float64)
			w.Above = &n
		} else if ok && f.Field == "below" {
			n := v.(float64)
			w.Below = &n
		}
	}
	b.band(w.Inputs, w.Above, w.Below, w.Ptr)
	w.Inputs = nil
}

// field reads and checks the bound value of one param field.
func (b *binding) field(f ParamField) (any, bool) {
	path := "/" + escapePtr(f.Param)
	raw, set := b.params[f.Param]
	if !set || raw == nil {
		b.d.add(CodeInputBinding, path, "give it in input, or a default in params", "params needs %q: the %s at %s", f.Param, f.Field, f.Ptr)
		return nil, false
	}
	v, err := fieldValue(f.Field, raw)
	if err != nil {
		b.d.add(CodeInputBinding, path, "", "%s = %s: used as the %s at %s: %v", f.Param, compactJSON(raw), f.Field, f.Ptr, err)
		return nil, false
	}
	b.at(f.Ptr, f.Param)
	return v, true
}

// band reports bound thresholds no value can lie between, at the param
// of below (else of above).
func (b *binding) band(inputs []ParamField, above, below *float64, ptr string) {
	if above == nil || below == nil || *above < *below {
		return
	}
	site := ""
	for _, f := range inputs {
		if f.Field == "below" || (f.Field == "above" && site == "") {
			site = f.Param
		}
	}
	if site == "" {
		return // both constant: the decoder reported it
	}
	b.d.add(CodeInputBinding, "/"+escapePtr(site), "above < value < below is a band; above must be less than below",
		"%s = %s: no value is above %g and below %g (at %s)", site, compactJSON(b.params[site]), *above, *below, ptr)
}

// fieldText is how a plan shows a field: its param (and default) when
// the program is unbound, else its constant.
func fieldText(inputs []runInput, field, constant string) string {
	for _, f := range inputs {
		if f.field != field {
			continue
		}
		s := "{{ params." + f.param + " }}"
		if f.def != "" {
			s += " (default " + f.def + ")"
		}
		return s
	}
	return constant
}

// hasField reports whether field is written as a param.
func hasField(inputs []runInput, field string) bool {
	return slices.ContainsFunc(inputs, func(f runInput) bool { return f.field == field })
}

// The phrases of a trigger's fields, naming the param (and its default)
// where the program is unbound.

func (t *RunTrigger) inputs() []runInput {
	if t.more == nil {
		return nil
	}
	return t.more.inputs
}

func (t *RunTrigger) holdText(how string) string {
	if in := t.inputs(); hasField(in, "for") {
		return " " + how + " for " + fieldText(in, "for", "")
	}
	return holdFor(how, t.hold)
}

// boundsText is "above 70", "below 30" or "above 20 and below 30".
func (t *RunTrigger) boundsText() string {
	above, below := t.bounds()
	return boundsText(t.inputs(), above, below)
}

func boundsText(in []runInput, above, below *float64) string {
	var is []string
	if above != nil || hasField(in, "above") {
		is = append(is, "above "+fieldText(in, "above", fmtBound(above)))
	}
	if below != nil || hasField(in, "below") {
		is = append(is, "below "+fieldText(in, "below", fmtBound(below)))
	}
	return strings.Join(is, " and ")
}

func (t *RunTrigger) atText() string { return fieldText(t.inputs(), "at", t.Spec()) }

func (t *RunTrigger) sunText() string {
	sun, offset := t.Sun()
	if in := t.inputs(); hasField(in, "offset") {
		return sun + " shifted by " + fieldText(in, "offset", "")
	}
	return SunPhrase(sun, offset)
}

func fmtBound(v *float64) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%g", *v)
}
