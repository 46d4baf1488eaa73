package helpers

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/pilotage"
)

// A helper is a device of type "helper" in the catalog: device <id>,
// state <id>.state (a timer's <id>.remaining and <id>.finishes_at too),
// its actions <id>.<verb> (risk control) and a timer's events
// <id>.finished and <id>.cancelled. Its area and tags scope it as a
// device's do.

// stateSchema is the exact schema of the helper's main state.
func (d *Def) stateSchema() map[string]any {
	switch d.Kind {
	case Flag:
		return map[string]any{"type": "boolean"}
	case Number, Counter:
		s := map[string]any{"type": "number"}
		if d.Kind == Counter {
			s["type"] = "integer"
		}
		if d.Min != nil {
			s["minimum"] = *d.Min
		}
		if d.Max != nil {
			s["maximum"] = *d.Max
		}
		s["x-step"] = *d.Step
		if d.Unit != "" {
			s["x-unit"] = d.Unit
		}
		return s
	case Choice:
		return map[string]any{"type": "string", "enum": d.Options}
	case Text:
		return map[string]any{"type": "string", "maxLength": d.MaxLength}
	case DateTime:
		return map[string]any{"type": []string{"string", "null"}, "description": "a " + d.Mode + " like " + modeExample[d.Mode] + " (null: not set)"}
	}
	return map[string]any{"type": "string", "enum": []string{TimerIdle, TimerActive, TimerPaused}}
}

// actionSpec is one action of a kind: its verb, what it does and its
// input properties (required ones listed).
type actionSpec struct {
	verb, desc string
	props      map[string]any
	required   []string
}

func (d *Def) actions() []actionSpec {
	value := map[string]any{"value": d.valueSchema()}
	cycle := map[string]any{"cycle": map[string]any{"type": "boolean", "description": "wrap around at the end (default true)"}}
	switch d.Kind {
	case Flag:
		return []actionSpec{{"turn_on", "Turn it on.", nil, nil}, {"turn_off", "Turn it off.", nil, nil},
			{"toggle", "Turn it on when off, off when on.", nil, nil}, {"set", "Set it to value.", value, []string{"value"}}}
	case Number:
		return []actionSpec{{"set", "Set it to value (within min..max).", value, []string{"value"}},
			{"increment", "Add step (refused above max).", nil, nil}, {"decrement", "Subtract step (refused below min).", nil, nil}}
	case Counter:
		return []actionSpec{{"increment", "Add step (refused above max).", nil, nil}, {"decrement", "Subtract step (refused below min).", nil, nil},
			{"reset", "Back to its initial value.", nil, nil}, {"set", "Set it to value.", value, []string{"value"}}}
	case Choice:
		return []actionSpec{{"select", "Select option.", map[string]any{"option": d.stateSchema()}, []string{"option"}},
			{"next", "Select the next option.", cycle, nil}, {"previous", "Select the previous option.", cycle, nil}}
	case Text, DateTime:
		return []actionSpec{{"set", "Set it to value.", value, []string{"value"}}}
	}
	dur := map[string]any{"duration": map[string]any{"type": "string", "description": "how long, e.g. \"PT5M\" (default: the timer's own duration, or a paused timer's time left)"}}
	return []actionSpec{{"start", "Start (or restart) the countdown; a paused timer resumes.", dur, nil},
		{"pause", "Pause an active timer.", nil, nil}, {"cancel", "Stop without finishing (fires cancelled).", nil, nil},
		{"finish", "Finish now (fires finished).", nil, nil}}
}

// valueSchema is what set accepts: the state's schema without null.
func (d *Def) valueSchema() map[string]any {
	s := d.stateSchema()
	if d.Kind == DateTime {
		s = map[string]any{"type": "string", "description": modeExample[d.Mode] + " (a " + d.Mode + ")"}
	}
	return s
}

// device is the helper as the catalog holds it; its actions call m.
func (m *Manager) device(d *Def) devices.LocalDevice {
	tags := []string{"helper:" + string(d.Kind)}
	tags = append(tags, d.Tags...)
	ld := devices.LocalDevice{ID: d.ID, Name: d.Name, Type: "helper", Area: d.Area, Tags: tags,
		Description: fmt.Sprintf("A %s helper: %s.", d.Kind, kindDoc(d.Kind))}
	// A class tag says what the helper's value stands for (a flag tagged
	// class:occupancy is someone's presence): its state carries it too, so
	// a selector by the state's own tag reads it beside real sensors.
	class := ""
	for _, t := range d.Tags {
		if c, ok := strings.CutPrefix(t, "class:"); ok && class == "" {
			class = c
		}
	}
	ld.States = append(ld.States, devices.LocalState{ID: d.ID + ".state", Key: "state", Name: d.Name, Schema: d.stateSchema(),
		Description: "The value of " + d.Name + ".", Class: class})
	if d.Kind == Timer {
		ld.States = append(ld.States,
			devices.LocalState{ID: d.ID + ".remaining", Key: "remaining", Name: d.Name + " remaining",
				Schema:      map[string]any{"type": "number", "minimum": 0, "x-unit": "s"},
				Description: "Seconds left when the timer last changed (its duration when idle)."},
			devices.LocalState{ID: d.ID + ".finishes_at", Key: "finishes_at", Name: d.Name + " finishes at",
				Schema:      map[string]any{"type": []string{"string", "null"}, "format": "date-time"},
				Description: "When the active timer finishes (null unless active)."})
		for _, ev := range []string{"finished", "cancelled"} {
			ld.Events = append(ld.Events, devices.LocalEvent{ID: d.ID + "." + ev, Name: d.Name + " " + ev, Values: []string{ev},
				Description: "The timer " + ev + "."})
		}
	}
	for _, a := range d.actions() {
		ld.Actions = append(ld.Actions, m.localAction(d, a))
	}
	return ld
}

func (m *Manager) localAction(d *Def, a actionSpec) devices.LocalAction {
	props := a.props
	if props == nil {
		props = map[string]any{}
	}
	input := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(a.required) > 0 {
		input["required"] = a.required
	}
	id, verb := d.ID+"."+a.verb, a.verb
	return devices.LocalAction{ID: id, Name: d.Name + ": " + strings.ReplaceAll(verb, "_", " "), Description: a.desc,
		Risk: pilotage.RiskControl, Input: input,
		Check: func(args map[string]any) error { return d.checkArgs(id, a, args) },
		Run:   func(ctx context.Context, args map[string]any) error { return m.Act(ctx, id, args) },
	}
}

// checkArgs refuses what the action refuses whatever the helper's value:
// members it does not take, missing required ones, values out of bounds.
func (d *Def) checkArgs(id string, a actionSpec, args map[string]any) error {
	var extra []string
	for k := range args {
		if _, ok := a.props[k]; !ok {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return invalid("%s takes no argument %s", id, strings.Join(extra, ", "))
	}
	for _, r := range a.required {
		if _, ok := args[r]; !ok {
			return invalid("%s: argument %s is required", id, r)
		}
	}
	if v, ok := args["value"]; ok {
		if _, err := d.checkValue(v); err != nil {
			return err
		}
	}
	if v, ok := args["option"]; ok {
		if _, err := d.checkValue(v); err != nil {
			return err
		}
	}
	if v, ok := args["cycle"]; ok {
		if _, isBool := v.(bool); !isBool {
			return invalid("%s: cycle is true or false", id)
		}
	}
	if _, ok := args["duration"]; ok {
		if _, err := d.startDuration(Value{}, args); err != nil {
			return err
		}
	}
	return nil
}

func kindDoc(k Kind) string {
	for _, x := range Kinds {
		if x.Kind == k {
			return x.Doc
		}
	}
	return ""
}

// Entries are the helper's catalog ids: the device, its states, events
// and actions, sorted.
func (d *Def) Entries() []string {
	out := []string{d.ID, d.ID + ".state"}
	if d.Kind == Timer {
		out = append(out, d.ID+".remaining", d.ID+".finishes_at", d.ID+".finished", d.ID+".cancelled")
	}
	for _, a := range d.actions() {
		out = append(out, d.ID+"."+a.verb)
	}
	sort.Strings(out)
	return out
}
