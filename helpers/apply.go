package helpers

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/pilothouse/pilothouse/internal/shown"
)

// Value is a helper's state: its catalog states by key ("state"; a
// timer's "remaining" and "finishes_at" too).
type Value map[string]any

// Timer states.
const (
	TimerIdle   = "idle"
	TimerActive = "active"
	TimerPaused = "paused"
)

// initial is the value a new helper starts with.
func (d *Def) initial() Value {
	if d.Kind == Timer {
		dur, _ := d.duration()
		return Value{"state": TimerIdle, "remaining": dur.Seconds(), "finishes_at": nil}
	}
	if d.Initial != nil {
		return Value{"state": d.Initial}
	}
	switch d.Kind {
	case Flag:
		return Value{"state": false}
	case Number:
		return Value{"state": *d.Min}
	case Counter:
		return Value{"state": d.clamp(0)}
	case Choice:
		return Value{"state": d.Options[0]}
	case Text:
		return Value{"state": ""}
	}
	return Value{"state": nil} // a datetime not set yet
}

func (d *Def) clamp(v float64) float64 {
	if d.Min != nil && v < *d.Min {
		v = *d.Min
	}
	if d.Max != nil && v > *d.Max {
		v = *d.Max
	}
	return v
}

// number reads a JSON number (float64, or an int from Go callers).
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// checkValue checks v as the helper's state and returns it normalized;
// the error says which bound or format it misses.
func (d *Def) checkValue(v any) (any, error) {
	switch d.Kind {
	case Flag:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, invalid("%s is a flag: the value is true or false", d.ID)
	case Number, Counter:
		return d.checkNumber(v)
	case Choice:
		s, ok := v.(string)
		if !ok || !slices.Contains(d.Options, s) {
			return nil, invalid("%s: %s is not one of its options (%s)", d.ID, show(v), strings.Join(d.Options, ", "))
		}
		return s, nil
	case Text:
		s, ok := v.(string)
		if !ok {
			return nil, invalid("%s is a text: the value is a string", d.ID)
		}
		if n := utf8.RuneCountInString(s); n > d.MaxLength {
			return nil, invalid("%s: the text has %d characters, more than its max_length %d", d.ID, n, d.MaxLength)
		}
		if !utf8.ValidString(s) {
			return nil, invalid("%s: the text is not UTF-8", d.ID)
		}
		// Shown on every page that lists it: no controls or direction marks.
		if r, hidden := shown.Hidden(s); hidden {
			return nil, invalid("%s: character %U is not shown as itself (a control, direction, zero-width or blank mark)", d.ID, r)
		}
		return s, nil
	case DateTime:
		return d.checkDateTime(v)
	}
	return nil, invalid("%s is a timer: use start, pause, cancel or finish", d.ID)
}

func (d *Def) checkNumber(v any) (any, error) {
	f, ok := number(v)
	if !ok {
		return nil, invalid("%s is a %s: the value is a number, not %s", d.ID, d.Kind, show(v))
	}
	if d.Kind == Counter && (f != math.Trunc(f) || math.Abs(f) > maxCount) {
		return nil, invalid("%s is a counter: %s is not a whole number within ±%d", d.ID, num(f), int64(maxCount))
	}
	if d.Min != nil && f < *d.Min {
		return nil, invalid("%s: %s is below its min %s", d.ID, num(f), num(*d.Min))
	}
	if d.Max != nil && f > *d.Max {
		return nil, invalid("%s: %s is above its max %s", d.ID, num(f), num(*d.Max))
	}
	return f, nil
}

// dateLayouts are the accepted forms of each mode; the first is the
// stored one.
var dateLayouts = map[string][]string{
	"date":     {"2006-01-02"},
	"time":     {"15:04:05", "15:04"},
	"datetime": {"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"},
}

var modeExample = map[string]string{"date": "2026-12-24", "time": "07:30", "datetime": "2026-12-24T07:30:00"}

func (d *Def) checkDateTime(v any) (any, error) {
	s, ok := v.(string)
	if ok {
		for _, l := range dateLayouts[d.Mode] {
			if t, err := time.Parse(l, s); err == nil {
				return t.Format(dateLayouts[d.Mode][0]), nil
			}
		}
	}
	return nil, invalid("%s holds a %s: %s is not like %q", d.ID, d.Mode, show(v), modeExample[d.Mode])
}

// num is a number as a message says it: in plain digits, never in
// exponent form (a counter's max of 2^63-1 is not 9.223372036854776e+18).
func num(f float64) string {
	if f == math.Trunc(f) {
		return strconv.FormatFloat(f, 'f', 0, 64) // every digit of a whole number
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil || len(b) > 80 {
		return "that value"
	}
	return string(b)
}

// outcome is what an action does: the helper's next value and the event
// it fires ("" for none).
type outcome struct {
	value Value
	event string
}

// apply carries action (the id's last segment) out on cur at now; cur is
// not changed. Every refusal is an ErrInvalid saying why.
func (d *Def) apply(cur Value, action string, args map[string]any, now time.Time) (outcome, error) {
	next := Value{}
	for k, v := range cur {
		next[k] = v
	}
	switch d.Kind {
	case Flag:
		return d.applyFlag(next, action, args)
	case Number, Counter:
		return d.applyNumber(next, action, args)
	case Choice:
		return d.applyChoice(next, action, args)
	case Text, DateTime:
		if action == "set" {
			return d.set(next, args["value"])
		}
	case Timer:
		return d.applyTimer(next, action, args, now)
	}
	return outcome{}, invalid("%s has no action %q", d.ID, action)
}

func (d *Def) set(next Value, v any) (outcome, error) {
	v, err := d.checkValue(v)
	if err != nil {
		return outcome{}, err
	}
	next["state"] = v
	return outcome{value: next}, nil
}

func (d *Def) applyFlag(next Value, action string, args map[string]any) (outcome, error) {
	on, _ := next["state"].(bool)
	switch action {
	case "turn_on":
		next["state"] = true
	case "turn_off":
		next["state"] = false
	case "toggle":
		next["state"] = !on
	case "set":
		return d.set(next, args["value"])
	default:
		return outcome{}, invalid("%s has no action %q", d.ID, action)
	}
	return outcome{value: next}, nil
}

func (d *Def) applyNumber(next Value, action string, args map[string]any) (outcome, error) {
	cur, _ := number(next["state"])
	var v float64
	switch action {
	case "set":
		return d.set(next, args["value"])
	case "increment":
		v = cur + *d.Step
	case "decrement":
		v = cur - *d.Step
	case "reset":
		if d.Kind != Counter {
			return outcome{}, invalid("%s has no action %q", d.ID, action)
		}
		next["state"] = d.initial()["state"]
		return outcome{value: next}, nil
	default:
		return outcome{}, invalid("%s has no action %q", d.ID, action)
	}
	v = math.Round(v*1e9) / 1e9 // 0.1 steps add up without drift
	if d.Min != nil && v < *d.Min {
		return outcome{}, invalid("%s: %s − %s would be below its min %s", d.ID, num(cur), num(*d.Step), num(*d.Min))
	}
	if d.Max != nil && v > *d.Max {
		return outcome{}, invalid("%s: %s + %s would be above its max %s", d.ID, num(cur), num(*d.Step), num(*d.Max))
	}
	next["state"] = v
	return outcome{value: next}, nil
}

func (d *Def) applyChoice(next Value, action string, args map[string]any) (outcome, error) {
	i := slices.Index(d.Options, toString(next["state"]))
	cycle := true
	if c, ok := args["cycle"].(bool); ok {
		cycle = c
	}
	n := len(d.Options)
	switch action {
	case "select":
		return d.set(next, args["option"])
	case "next":
		i++
		if i >= n {
			i = n - 1
			if cycle {
				i = 0
			}
		}
	case "previous":
		i--
		if i < 0 {
			i = 0
			if cycle {
				i = n - 1
			}
		}
	default:
		return outcome{}, invalid("%s has no action %q", d.ID, action)
	}
	next["state"] = d.Options[i]
	return outcome{value: next}, nil
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}
