package model

import (
	"fmt"
	"math"
	"time"

	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
)

// Param fields: a trigger's or a wait's threshold (above, below), a
// trigger's hold (for), time of day (at) or sun offset (offset) written
// as "{{ params.<name> }}", as a Home Assistant blueprint writes !input.
// The unbound program is checked against the param's declared type and
// plans the field as the param; execute binds the value, so the run form
// holds a constant and nothing is evaluated per event.

// ParamField is one field written as "{{ params.<name> }}".
type ParamField struct {
	Field string // the member: above, below, for, at or offset
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
}

// FieldValue reads a param's value for field: a float64 (above, below),
// a time.Duration (for, offset) or a clock string (at).
func FieldValue(field string, v any) (any, error) {
	switch field {
	case "above", "below":
		n, ok := core.InterpNumber(v)
		if !ok || math.IsNaN(n) || math.IsInf(n, 0) {
			return nil, fmt.Errorf("want a number, got %s", core.InterpTypeName(v))
		}
		return n, nil
	case "for", "offset":
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
	case "at":
		s, ok := v.(string)
		if !ok || !clock.ValidClock(s) {
			return nil, fmt.Errorf("want a time of day HH:MM or HH:MM:SS, got %s", core.CompactJSON(v))
		}
		return s, nil
	}
	return nil, fmt.Errorf("%s takes no param", field)
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
	}
}
