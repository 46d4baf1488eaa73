package web

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
)

// control is one action of a device with the forms generated from its
// input schema.
type control struct {
	Entry *pilotage.Entry
	// Confirm: a security or external action; the server asks for
	// confirmation, stating the risk, before it runs. Note says so.
	Confirm bool
	Note    string
	Forms   []controlForm
}

// controlForm is one form: a property set on its own (buttons for a few
// choices, a slider for a bounded number, a field otherwise), or, when the
// schema requires properties, all of them together.
type controlForm struct {
	Label   string
	Desc    string
	Fields  []controlField
	Buttons []controlButton
	Submit  string // the submit button's label when there are Fields
	// Refresh: the form asks the device for all its values at once (a
	// read action whose every argument is the empty string).
	Refresh bool
}

type controlField struct {
	Name, ID, Label string
	Input           string // range, number, select, text
	Min, Max, Step  string
	Options         []string
	Value, Unit     string
	Required        bool
}

type controlButton struct {
	Name, Value string
	Current     bool
}

// propSchema is what the forms read of a property's JSON Schema.
type propSchema struct {
	Type       string   `json:"type"`
	Enum       []any    `json:"enum"`
	Min        *float64 `json:"minimum"`
	Max        *float64 `json:"maximum"`
	MultipleOf *float64 `json:"multipleOf"`
	Step       *float64 `json:"x-step"` // a helper's step: a hint, not a constraint
	Desc       string   `json:"description"`
	Unit       string   `json:"x-unit"`
}

type objSchema struct {
	Properties map[string]propSchema `json:"properties"`
	Required   []string              `json:"required"`
}

// maxButtons is how many enum choices become buttons; more are a select.
const maxButtons = 4

// propOrder lists the properties, "state" first, then by name.
func propOrder(sch objSchema) []string {
	keys := make([]string, 0, len(sch.Properties))
	for k := range sch.Properties {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if (keys[i] == "state") != (keys[j] == "state") {
			return keys[i] == "state"
		}
		return keys[i] < keys[j]
	})
	return keys
}

// newControl builds an action's forms; current gives a property's
// current value as text (its state's live value), or "".
func newControl(en *pilotage.Entry, current func(prop string) string) control {
	c := control{Entry: en, Confirm: en.RiskHints.Destructive || en.RiskHints.OpenWorld}
	if c.Confirm {
		c.Note = article(string(en.Risk)) + " " + string(en.Risk) + " action: you will be asked to confirm."
	}
	var sch objSchema
	if json.Unmarshal(en.InputSchema, &sch) != nil || len(sch.Properties) == 0 {
		c.Forms = []controlForm{{Label: "Run", Submit: "Run " + en.ID}}
		return c
	}
	if _, ok := refreshArgs(sch); ok {
		c.Forms = []controlForm{{Refresh: true, Submit: "Refresh", Desc: "Ask the device for its current values: " + strings.Join(propOrder(sch), ", ")}}
		return c
	}
	if len(sch.Required) > 0 { // one form: what is required goes together
		f := controlForm{Submit: "Send"}
		for _, k := range propOrder(sch) {
			fd := field(en.ID, k, sch.Properties[k], current(k))
			fd.Required = slices.Contains(sch.Required, k)
			f.Fields = append(f.Fields, fd)
		}
		c.Forms = []controlForm{f}
		return c
	}
	for _, k := range propOrder(sch) {
		ps := sch.Properties[k]
		f := controlForm{Label: strings.ReplaceAll(k, "_", " "), Desc: ps.Desc}
		cur := current(k)
		switch {
		case len(ps.Enum) > 0 && len(ps.Enum) <= maxButtons:
			for _, v := range ps.Enum {
				t := compactJSON(v)
				f.Buttons = append(f.Buttons, controlButton{Name: "arg." + k, Value: t, Current: t == cur})
			}
		case ps.Type == "boolean":
			for _, t := range []string{"true", "false"} {
				f.Buttons = append(f.Buttons, controlButton{Name: "arg." + k, Value: t, Current: t == cur})
			}
		default:
			f.Fields, f.Submit = []controlField{field(en.ID, k, ps, cur)}, "Set"
		}
		c.Forms = append(c.Forms, f)
	}
	return c
}

func field(action, prop string, ps propSchema, cur string) controlField {
	fd := controlField{Name: "arg." + prop, ID: "f-" + strings.NewReplacer(".", "-", "_", "-").Replace(action+"-"+prop),
		Label: strings.ReplaceAll(prop, "_", " "), Value: cur, Unit: ps.Unit, Input: "text"}
	switch {
	case len(ps.Enum) > 0:
		fd.Input = "select"
		for _, v := range ps.Enum {
			fd.Options = append(fd.Options, compactJSON(v))
		}
	case ps.Type == "number" || ps.Type == "integer":
		fd.Input = "number"
		step := 1.0
		if ps.MultipleOf != nil && *ps.MultipleOf > 0 {
			step = *ps.MultipleOf
		} else if ps.Step != nil && *ps.Step > 0 {
			step = *ps.Step
		} else if ps.Type == "number" && ps.Min != nil && ps.Max != nil && *ps.Max-*ps.Min <= 10 {
			step = 0.1
		}
		fd.Step = fmtFloat(step)
		if ps.Min != nil && ps.Max != nil {
			fd.Input, fd.Min, fd.Max = "range", fmtFloat(*ps.Min), fmtFloat(*ps.Max)
			if fd.Value == "" {
				fd.Value = fmtFloat(*ps.Min)
			}
		}
	case ps.Type == "boolean":
		fd.Input, fd.Options = "select", []string{"true", "false"}
	}
	return fd
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// controlArgs reads a control form's arguments: all of a refresh's (the
// refresh field), else the arg.<prop> fields.
func controlArgs(form url.Values, raw json.RawMessage) (map[string]any, error) {
	if form.Get("refresh") == "" {
		return formArgs(form, raw)
	}
	var sch objSchema
	_ = json.Unmarshal(raw, &sch)
	args, ok := refreshArgs(sch)
	if !ok {
		return nil, fmt.Errorf("this action does not read the device's values")
	}
	return args, nil
}

// formArgs reads the arg.<prop> fields of a control form into the action's
// arguments, typed by its input schema; empty fields are left out.
func formArgs(form url.Values, raw json.RawMessage) (map[string]any, error) {
	var sch objSchema
	_ = json.Unmarshal(raw, &sch)
	args := map[string]any{}
	for key, vals := range form {
		prop, ok := strings.CutPrefix(key, "arg.")
		if !ok || len(vals) == 0 || strings.TrimSpace(vals[0]) == "" {
			continue
		}
		v := strings.TrimSpace(vals[0])
		ps, known := sch.Properties[prop]
		if !known {
			return nil, fmt.Errorf("this action takes no argument %q", prop)
		}
		switch ps.Type {
		case "number", "integer":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("%s: %q is not a number", prop, v)
			}
			args[prop] = f
		case "boolean":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not true or false", prop, v)
			}
			args[prop] = b
		default:
			args[prop] = v
		}
	}
	return args, nil
}

// oneCall is the program a control runs: its one trigger stands for the
// hand that pressed the button (a manual run fires it; nothing is armed).
func oneCall(action string, args map[string]any) json.RawMessage {
	prog := map[string]any{
		"name":        controlName(action),
		"description": "Control from the web UI: " + action,
		"triggers":    []any{map[string]any{"id": "manual", "cron": "0 0 1 1 *"}},
		"steps":       []any{map[string]any{"id": "control", "call": action, "args": args}},
	}
	b, _ := json.Marshal(prog)
	return b
}

// controlName is the name of a control's program: "control.<action>",
// cut to a program name's 64 characters.
func controlName(action string) string {
	name := "control." + action
	if len(name) > 64 {
		name = name[:64]
	}
	return strings.TrimRight(name, ".-_")
}

// refreshArgs are the arguments of a refresh: a read action whose every
// property takes only "" (a Zigbee2MQTT /get, {"<property>": ""} each)
// is sent with all of them, which no per-property button could do.
func refreshArgs(sch objSchema) (map[string]any, bool) {
	if len(sch.Properties) == 0 {
		return nil, false
	}
	args := make(map[string]any, len(sch.Properties))
	for k, ps := range sch.Properties {
		if len(ps.Enum) != 1 || ps.Enum[0] != "" {
			return nil, false
		}
		args[k] = ""
	}
	return args, true
}

// article is "a" or "an" before a word.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiouAEIOU", rune(word[0])) {
		return "An"
	}
	return "A"
}

// riskSentence states what confirming an action with args risks, and
// how to reverse it when its schema says how (a lock's other state).
func riskSentence(en *pilotage.Entry, args map[string]string) string {
	var parts []string
	if en.RiskHints.Destructive {
		parts = append(parts, "It is a security action: it changes what protects the house (locks, alarms, doors and other covers) as soon as you confirm.")
		parts = append(parts, undoSentence(en, args))
	}
	if en.RiskHints.OpenWorld {
		parts = append(parts, "It is an external action: what it sends leaves the house.")
	}
	return strings.Join(parts, " ")
}

// undoSentence says how to reverse a change of one two-valued property
// (LOCK/UNLOCK, OPEN/CLOSE), or that Pilothouse cannot tell.
func undoSentence(en *pilotage.Entry, args map[string]string) string {
	var sch objSchema
	_ = json.Unmarshal(en.InputSchema, &sch)
	if len(args) == 1 {
		for k, v := range args {
			if ps := sch.Properties[k]; len(ps.Enum) == 2 {
				other := compactJSON(ps.Enum[0])
				if other == v {
					other = compactJSON(ps.Enum[1])
				}
				if other != v {
					return "To reverse it, send " + k + " " + other + " from this device's page."
				}
			}
		}
	}
	return "Pilothouse cannot tell whether it can be reversed: make sure it is safe first."
}
