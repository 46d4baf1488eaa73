package model

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// An action's input: its fields (their JSON Schema and checks), the check
// of a call's arguments (Action.Validate), and what is published for them
// (PublishProps).

// Field is one input property of an action: its JSON Schema and the checks
// Call applies before publishing. The two say the same thing: what the
// schema admits (as the rules validator reads it), check admits.
type Field struct {
	Schema   map[string]any
	Kind     string // string, number, boolean, object, array, union, any
	enum     []any
	min      *float64
	max      *float64
	Props    map[string]*Field // kind object: its closed set of properties
	Open     bool              // kind object: any members (a composite without features)
	required []string          // kind object: members that must be present
	items    *Field            // kind array: every item (nil: any)
	minItems *float64          // kind array
	maxItems *float64          // kind array
	alts     []*Field          // kind union: v must pass one of them
	presets  []Preset          // kind number: a name stands for its value, admitted outside min..max
	format   string            // kind string: "hex" (#RRGGBB) or "triplet" (N,N,N)
}

func Fnum(v float64) *float64 { return &v }

// NumField is a number in [min, max]; step is Zigbee2MQTT's value_step, a
// hint for the user interface (Zigbee2MQTT sends any number in range), so
// it is "x-step", never "multipleOf".
func NumField(desc string, min, max *float64, step float64, unit string) *Field {
	s := map[string]any{"type": "number"}
	if min != nil {
		s["minimum"] = *min
	}
	if max != nil {
		s["maximum"] = *max
	}
	if step > 0 {
		s["x-step"] = step
	}
	if unit != "" {
		s["x-unit"] = unit
		desc = strings.TrimSpace(desc + " (unit: " + unit + ")")
	}
	if desc != "" {
		s["description"] = desc
	}
	return &Field{Schema: s, Kind: "number", min: min, max: max}
}

// WithPresets admits the presets of a numeric expose: each name (sent as
// its value, as the Zigbee2MQTT frontend does) and each value, even one
// outside the range (color_temp_startup "previous" = 65535).
func WithPresets(f *Field, presets []Preset) *Field {
	if len(presets) == 0 {
		return f
	}
	named := map[string]any{}
	var consts []any
	for _, p := range presets {
		named[p.Name] = p.Value
		consts = AppendUnique(consts, p.Name)
		consts = AppendUnique(consts, p.Value)
	}
	num := make(map[string]any, len(f.Schema))
	s := map[string]any{"x-presets": named}
	for k, v := range f.Schema {
		switch k {
		case "description", "x-unit", "x-step":
			s[k] = v
		default:
			num[k] = v
		}
	}
	s["anyOf"] = []any{num, map[string]any{"enum": consts}}
	f.Schema, f.presets = s, presets
	return f
}

func AppendUnique(vs []any, v any) []any {
	for _, x := range vs {
		if EqualValues(x, v) {
			return vs
		}
	}
	return append(vs, v)
}

func EnumField(desc string, values []any) *Field {
	s := map[string]any{"enum": values}
	if AllStrings(values) {
		s["type"] = "string"
	}
	if desc != "" {
		s["description"] = desc
	}
	return &Field{Schema: s, Kind: "any", enum: values}
}

func StrField(desc string) *Field {
	s := map[string]any{"type": "string"}
	if desc != "" {
		s["description"] = desc
	}
	return &Field{Schema: s, Kind: "string"}
}

// FormatField is a string of a format: "hex" (#RRGGBB, the # optional) or
// "triplet" (three decimal integers joined by commas).
func FormatField(desc, format string) *Field {
	f := StrField(desc)
	f.format = format
	f.Schema["pattern"] = map[string]string{"hex": "^#?[0-9A-Fa-f]{6}$", "triplet": "^[0-9]+,[0-9]+,[0-9]+$"}[format]
	return f
}

func ObjField(desc string, props map[string]*Field) *Field {
	ps := map[string]any{}
	for k, f := range props {
		ps[k] = f.Schema
	}
	s := map[string]any{"type": "object", "properties": ps, "additionalProperties": false, "minProperties": 1}
	if desc != "" {
		s["description"] = desc
	}
	return &Field{Schema: s, Kind: "object", Props: props}
}

// RequiredObj is an object whose members are all required.
func RequiredObj(desc string, props map[string]*Field) *Field {
	f := ObjField(desc, props)
	for k := range props {
		f.required = append(f.required, k)
	}
	sort.Strings(f.required)
	f.Schema["required"] = f.required
	return f
}

// OpenObjField is any object: a settable composite without features.
func OpenObjField(desc string) *Field {
	s := map[string]any{"type": "object"}
	if desc != "" {
		s["description"] = desc
	}
	return &Field{Schema: s, Kind: "object", Open: true}
}

// ArrayField is a list: its items (nil: any) and length limits.
func ArrayField(desc string, items *Field, minItems, maxItems *float64) *Field {
	s := map[string]any{"type": "array"}
	if items != nil {
		s["items"] = items.Schema
	}
	if minItems != nil {
		s["minItems"] = *minItems
	}
	if maxItems != nil {
		s["maxItems"] = *maxItems
	}
	if desc != "" {
		s["description"] = desc
	}
	return &Field{Schema: s, Kind: "array", items: items, minItems: minItems, maxItems: maxItems}
}

// UnionField admits what one of alts admits (a property exposed twice with
// different shapes, the colour forms of a light). Nested unions flatten.
func UnionField(desc string, alts ...*Field) *Field {
	var flat []*Field
	for _, a := range alts {
		if a.Kind == "union" {
			flat = append(flat, a.alts...)
		} else {
			flat = append(flat, a)
		}
	}
	schemas := make([]any, len(flat))
	for i, a := range flat {
		schemas[i] = a.Schema
	}
	s := map[string]any{"anyOf": schemas}
	if desc != "" {
		s["description"] = desc
	}
	return &Field{Schema: s, Kind: "union", alts: flat}
}

func AllStrings(vs []any) bool {
	for _, v := range vs {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return true
}

func (f *Field) check(path string, v any) error {
	if f.enum != nil {
		for _, e := range f.enum {
			if EqualValues(e, v) {
				return nil
			}
		}
		return fmt.Errorf("%s: %v is not one of %v", path, v, f.enum)
	}
	switch f.Kind {
	case "string":
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: want a string", path)
		}
		if !matchesFormat(f.format, s) {
			return fmt.Errorf("%s: %q is not a %s string", path, s, f.format)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: want a boolean", path)
		}
	case "number":
		return f.checkNumber(path, v)
	case "object":
		return f.checkObject(path, v)
	case "array":
		return f.checkArray(path, v)
	case "union":
		for _, a := range f.alts {
			if a.check(path, v) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: %v matches none of the accepted forms", path, v)
	}
	return nil
}

func (f *Field) checkNumber(path string, v any) error {
	if f.preset(v) != nil {
		return nil
	}
	n, ok := v.(float64)
	if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
		if len(f.presets) > 0 {
			return fmt.Errorf("%s: want a number or a preset (%s)", path, presetNames(f.presets))
		}
		return fmt.Errorf("%s: want a number", path)
	}
	if f.min != nil && n < *f.min {
		return fmt.Errorf("%s: %v is below the minimum %v", path, n, *f.min)
	}
	if f.max != nil && n > *f.max {
		return fmt.Errorf("%s: %v is above the maximum %v", path, n, *f.max)
	}
	return nil
}

// preset returns the preset v names or equals, or nil.
func (f *Field) preset(v any) *Preset {
	for i := range f.presets {
		p := &f.presets[i]
		if s, ok := v.(string); ok && s == p.Name || EqualValues(p.Value, v) {
			return p
		}
	}
	return nil
}

func presetNames(ps []Preset) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

func (f *Field) checkObject(path string, v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: want an object", path)
	}
	if f.Open {
		return nil
	}
	if len(m) == 0 {
		return fmt.Errorf("%s: want a non-empty object", path)
	}
	for _, r := range f.required {
		if _, ok := m[r]; !ok {
			return fmt.Errorf("%s: member %s is required", path, r)
		}
	}
	return checkProps(path+".", f.Props, m)
}

func (f *Field) checkArray(path string, v any) error {
	l, ok := v.([]any)
	if !ok {
		return fmt.Errorf("%s: want an array", path)
	}
	if f.minItems != nil && float64(len(l)) < *f.minItems {
		return fmt.Errorf("%s: %d items, want at least %v", path, len(l), *f.minItems)
	}
	if f.maxItems != nil && float64(len(l)) > *f.maxItems {
		return fmt.Errorf("%s: %d items, want at most %v", path, len(l), *f.maxItems)
	}
	if f.items == nil {
		return nil
	}
	for i, it := range l {
		if err := f.items.check(fmt.Sprintf("%s[%d]", path, i), it); err != nil {
			return err
		}
	}
	return nil
}

// matchesFormat checks the string formats formatField knows.
func matchesFormat(format, s string) bool {
	switch format {
	case "hex":
		s = strings.TrimPrefix(s, "#")
		if len(s) != 6 {
			return false
		}
		for _, c := range s {
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	case "triplet":
		parts := strings.Split(s, ",")
		if len(parts) != 3 {
			return false
		}
		for _, p := range parts {
			if p == "" || strings.Trim(p, "0123456789") != "" {
				return false
			}
		}
	}
	return true
}

// Validate checks a call's arguments against the action's input: its
// Check when its owner states one, else its fields (the checks below).
func (a *Action) Validate(args map[string]any) error {
	if a.Check != nil {
		return a.Check(args)
	}
	if len(args) < a.MinProps {
		return fmt.Errorf("%s: at least %d argument(s) required", a.ID, a.MinProps)
	}
	for _, r := range a.Required {
		if _, ok := args[r]; !ok {
			return fmt.Errorf("%s: argument %s is required", a.ID, r)
		}
	}
	if err := checkProps("", a.Fields, args); err != nil {
		return fmt.Errorf("%s: %w", a.ID, err)
	}
	return nil
}

func checkProps(prefix string, fields map[string]*Field, args map[string]any) error {
	var buf [8]string
	keys := buf[:0]
	for k := range args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, ok := fields[k]
		if !ok {
			return fmt.Errorf("%s%s: unknown argument", prefix, k)
		}
		if err := f.check(prefix+k, args[k]); err != nil {
			return err
		}
	}
	return nil
}

// HasPresets reports whether a preset name may need translating somewhere
// in f.
func (f *Field) HasPresets() bool {
	if len(f.presets) > 0 || f.items != nil && f.items.HasPresets() {
		return true
	}
	for _, p := range f.Props {
		if p.HasPresets() {
			return true
		}
	}
	for _, a := range f.alts {
		if a.HasPresets() {
			return true
		}
	}
	return false
}

// publish returns what Zigbee2MQTT receives for a checked v: a preset name
// becomes its value; everything else is v.
func (f *Field) publish(v any) any {
	switch {
	case len(f.presets) > 0:
		if s, ok := v.(string); ok {
			if p := f.preset(s); p != nil {
				return p.Value
			}
		}
	case f.Kind == "object" && f.Props != nil:
		if m, ok := v.(map[string]any); ok {
			return PublishProps(f.Props, m)
		}
	case f.Kind == "array" && f.items != nil:
		if l, ok := v.([]any); ok {
			out := make([]any, len(l))
			for i, it := range l {
				out[i] = f.items.publish(it)
			}
			return out
		}
	case f.Kind == "union":
		for _, a := range f.alts {
			if a.check("", v) == nil {
				return a.publish(v)
			}
		}
	}
	return v
}

// PublishProps is args with preset names replaced by their values (a copy;
// args stays as the caller gave it).
func PublishProps(fields map[string]*Field, args map[string]any) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		if f, ok := fields[k]; ok {
			v = f.publish(v)
		}
		out[k] = v
	}
	return out
}

// writeFieldKey writes what identifies the checks of f (for sharing equal
// field maps); false when a value has no JSON form to tell it by.
func writeFieldKey(b *strings.Builder, f *Field) bool {
	fmt.Fprintf(b, "%s/%t/%s/", f.Kind, f.Open, f.format)
	for _, vs := range [][]any{f.enum, presetValues(f.presets)} {
		for _, v := range vs {
			j, err := json.Marshal(v)
			if err != nil {
				return false
			}
			fmt.Fprintf(b, "|%T=%s", v, j)
		}
		b.WriteByte('/')
	}
	for _, p := range []*float64{f.min, f.max, f.minItems, f.maxItems} {
		if p == nil {
			b.WriteString("/-")
		} else {
			fmt.Fprintf(b, "/%x", math.Float64bits(*p))
		}
	}
	fmt.Fprintf(b, "/%q", f.required)
	if f.Props != nil && !writeFieldsKey(b, f.Props) {
		return false
	}
	for _, sub := range append([]*Field{f.items}, f.alts...) {
		b.WriteByte('(')
		if sub != nil && !writeFieldKey(b, sub) {
			return false
		}
		b.WriteByte(')')
	}
	return true
}

func presetValues(ps []Preset) []any {
	var out []any
	for _, p := range ps {
		out = append(out, p.Name, p.Value)
	}
	return out
}

// Preset is a named value of a numeric expose; the value may lie outside
// value_min..value_max (color_temp_startup "previous" = 65535) or be a
// string (on_level "previous").
type Preset struct {
	Name        string `json:"name"`
	Value       any    `json:"value"`
	Description string `json:"description"`
}
