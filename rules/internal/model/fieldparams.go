package model

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
)

// Param fields: a trigger's or a wait's threshold (above, below), a
// trigger's hold (for), time of day (at), cron spec (cron) or sun offset
// (offset), a wait's timeout, a time
// condition's bounds (after, before) or a sun condition's offsets
// (after_offset, before_offset) written as "{{ params.<name> }}", as a
// Home Assistant blueprint writes !input.
// The unbound program is checked against the param's declared type and
// plans the field as the param; execute binds the value, so the run form
// holds a constant and nothing is evaluated per event.

// ParamField is one field written as "{{ params.<name> }}".
type ParamField struct {
	Field string // the member (a key of ParamFieldKinds)
	Param string
	Ptr   string
	// Default is the param's default as JSON ("" = none): plans of the
	// unbound program show it.
	Default string
}

// RunInput is a param field as the run form keeps it (no pointer): plans
// name it, and an unbound wait binds it when it runs.
type RunInput struct{ Field, Param, Default string }

// inputs lowers param fields.
func (in *Interner) inputs(fs []ParamField) []RunInput {
	if len(fs) == 0 {
		return nil
	}
	out := make([]RunInput, len(fs))
	for i, f := range fs {
		out[i] = RunInput{Field: f.Field, Param: in.str(f.Param), Default: f.Default}
	}
	return out
}

// Inputs are the param fields of an unbound program's trigger (none once
// bound).
func (t *RunTrigger) Inputs() []RunInput {
	if t.more == nil {
		return nil
	}
	return t.more.inputs
}

// ParamFieldKind is what one field takes: the JSON Schema types its
// param may declare and the finding code of a bad value.
type ParamFieldKind struct {
	Types []string
	Code  string
	Want  string // what a value must be, in a message
	Eg    string // an example declaration
}

// ParamFieldKinds are the fields a param may stand in, by member.
var ParamFieldKinds = map[string]ParamFieldKind{
	"above":  {[]string{"number", "integer"}, core.CodeTypeMismatch, "a number", `{"type": "number", "default": 70}`},
	"below":  {[]string{"number", "integer"}, core.CodeTypeMismatch, "a number", `{"type": "number", "default": 30}`},
	"for":    {[]string{"string"}, core.CodeBadDuration, "a duration such as \"10m\"", `{"type": "string", "format": "duration", "default": "10m"}`},
	"offset": {[]string{"string"}, core.CodeBadDuration, "a duration such as \"-30m\"", `{"type": "string", "default": "-30m"}`},
	"at":     {[]string{"string"}, core.CodeBadTime, "a time of day HH:MM or HH:MM:SS", `{"type": "string", "default": "07:30"}`},
	// A cron trigger's spec and a wait's timeout.
	"cron":    {[]string{"string"}, core.CodeBadCron, "a cron spec such as \"0 30 7 * * 1-5\"", `{"type": "string", "default": "0 30 7 * * 1-5"}`},
	"timeout": {[]string{"string"}, core.CodeBadDuration, "a positive duration such as \"10m\"", `{"type": "string", "default": "10m"}`},
	// Time conditions' bounds and sun conditions' offsets.
	"after":         {[]string{"string"}, core.CodeBadTime, "a time of day HH:MM or HH:MM:SS", `{"type": "string", "default": "22:00"}`},
	"before":        {[]string{"string"}, core.CodeBadTime, "a time of day HH:MM or HH:MM:SS", `{"type": "string", "default": "06:00"}`},
	"after_offset":  {[]string{"string"}, core.CodeBadDuration, "a duration such as \"-30m\"", `{"type": "string", "default": "15m"}`},
	"before_offset": {[]string{"string"}, core.CodeBadDuration, "a duration such as \"-30m\"", `{"type": "string", "default": "-1h"}`},
}

// FieldValue reads a param's value for field: a float64 (above, below),
// a time.Duration (for and the offsets) or a clock string (at, after,
// before).
func FieldValue(field string, v any) (any, error) {
	switch field {
	case "above", "below":
		n, ok := core.InterpNumber(v)
		if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
			return nil, fmt.Errorf("want a number, got %s", core.InterpTypeName(v))
		}
		return n, nil
	case "for", "offset", "after_offset", "before_offset":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a duration such as \"10m\", got %s", core.InterpTypeName(v))
		}
		d, err := clock.ParseDuration(s)
		if err != nil {
			return nil, err
		}
		if d < 0 && field == "for" {
			return nil, fmt.Errorf("a hold cannot be negative")
		}
		return d, nil
	case "timeout":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a duration such as \"10m\", got %s", core.InterpTypeName(v))
		}
		d, err := clock.ParseDuration(s)
		if err == nil && d <= 0 {
			err = fmt.Errorf("a timeout must be positive")
		}
		if err != nil {
			return nil, err
		}
		return d, nil
	case "cron":
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("want a cron spec such as \"0 30 7 * * 1-5\", got %s", core.InterpTypeName(v))
		}
		if _, err := clock.ParseCron(s); err != nil {
			return nil, fmt.Errorf("cron %q: %v", s, err)
		}
		return s, nil
	case "at", "after", "before":
		s, ok := v.(string)
		if !ok || !clock.ValidClock(s) {
			return nil, fmt.Errorf("want a time of day HH:MM or HH:MM:SS, got %s", core.CompactJSON(v))
		}
		return s, nil
	}
	return nil, fmt.Errorf("%s takes no param", field)
}

// BindWindow sets a time or sun condition's param field from its bound
// value v (a FieldValue).
func BindWindow(w *Window, field string, v any) {
	switch field {
	case "after":
		w.After = v.(string)
	case "before":
		w.Before = v.(string)
	case "after_offset":
		w.AfterOffset = v.(time.Duration)
	case "before_offset":
		w.BeforeOffset = v.(time.Duration)
	}
}

// FieldText is how a plan shows a field: its param (and default) when
// the program is unbound, else its constant.
func FieldText(inputs []RunInput, field, constant string) string {
	for _, f := range inputs {
		if f.Field != field {
			continue
		}
		s := "{{ params." + f.Param + " }}"
		if f.Default != "" {
			s += " (default " + f.Default + ")"
		}
		return s
	}
	return constant
}

// HasField reports whether field is written as a param.
func HasField(inputs []RunInput, field string) bool {
	return slices.ContainsFunc(inputs, func(f RunInput) bool { return f.Field == field })
}

// BindTrigger sets a trigger's param field from its bound value v (a
// FieldValue).
func BindTrigger(t *Trigger, field string, v any) {
	switch field {
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
		t.Schedule, _ = clock.ParseCron(TimeOfDaySpec(t.At))
	case "cron":
		t.Cron = v.(string)
		t.Schedule, _ = clock.ParseCron(t.Cron)
	}
}

// describeParams is Describe for a window whose bounds (time) or offsets
// (sun) are unbound params: it names them where the values go.
func (w *condWindow) describeParams(zone string) string {
	in := w.inputs
	var parts []string
	for _, b := range []struct {
		key, event string
		sec        int32
		off        time.Duration
	}{{"after", w.sunAfter, w.after, w.afterOff}, {"before", w.sunBefore, w.before, w.beforeOff}} {
		switch {
		case w.sun && b.event != "" && HasField(in, b.key+"_offset"):
			parts = append(parts, b.key+" "+b.event+" shifted by "+FieldText(in, b.key+"_offset", ""))
		case w.sun && b.event != "":
			parts = append(parts, b.key+" "+clock.SunPhrase(b.event, b.off))
		case !w.sun && (b.sec >= 0 || HasField(in, b.key)):
			parts = append(parts, b.key+" "+FieldText(in, b.key, clockText(b.sec)))
		}
	}
	s := "Only " + strings.Join(parts, " and ")
	if w.days != 0 {
		s += ", on " + core.JoinList(DayNamesLong(w.dayNames()), "and")
	}
	switch {
	case w.sun:
		return s + " (the server's location)"
	case zone == "":
		zone = "server time"
	}
	return s + " (" + zone + ")"
}
