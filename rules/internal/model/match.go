package model

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// Match reports whether a change of the watched entity from prev to cur
// (an event's payload when isEvent) fires t now (matched), and whether t's
// condition holds after it (for a "for" window: it stays open while the
// condition holds).
func (t *RunTrigger) Match(prev, cur any, isEvent bool) (matched, holds bool) {
	switch t.Kind() {
	case TriggerEvent:
		return isEvent && EventMatches(t.To(), cur), false
	case TriggerNumeric:
		above, below := t.Bounds()
		in := func(v any) bool {
			f, ok := numberOf(v)
			if !ok {
				return false
			}
			return (above == nil || f > *above) && (below == nil || f < *below)
		}
		now := in(cur)
		return now && !in(prev), now
	default: // state
		notTo, notFrom := t.Not()
		toOK := EventMatches(t.To(), cur) && !(notTo.Set && EventMatches(notTo, cur))
		if SameValue(prev, cur) {
			return false, t.Targets() && toOK
		}
		fromOK := EventMatches(t.From(), prev) && !(notFrom.Set && EventMatches(notFrom, prev))
		// Without "to", a window holds while the state stays put: a further
		// change ends it (and opens a new one).
		return toOK && fromOK, t.Targets() && toOK
	}
}

// Keeps reports whether a "for" window that a change from left to entered
// opened stays open now that the value is cur. As Home Assistant's: a
// numeric trigger's while the value stays in range; a state trigger with
// from and no to while the value is not back in the value it left (a third
// value keeps it open); any other while the value is still the one it
// entered (another value, even one more of to's list, ends it).
func (t *RunTrigger) Keeps(left, entered, cur any) bool {
	switch t.Kind() {
	case TriggerNumeric:
		_, in := t.Match(nil, cur, false)
		return in
	case TriggerEvent:
		return false
	}
	if t.FromSet && !t.ToSet {
		return !SameValue(cur, left)
	}
	return SameValue(cur, entered)
}

// Targets reports whether a state trigger names the values it fires into
// (to or not_to): only then can its value be held for "for".
func (t *RunTrigger) Targets() bool {
	notTo, _ := t.Not()
	return t.ToSet || notTo.Set
}

// not returns a state trigger's not_to and not_from filters.
func (t *RunTrigger) Not() (notTo, notFrom Value) {
	if m := t.more; m != nil && t.Kind() == TriggerState {
		return Value{Set: m.notToSet, V: m.notTo}, Value{Set: m.notFromSet, V: m.notFrom}
	}
	return Value{}, Value{}
}

// EventMatches reports whether an event's payload passes a value filter:
// no filter, the value itself, or, for a list, any of its values
// (["double", "triple"]).
func EventMatches(filter Value, payload any) bool {
	if !filter.Set {
		return true
	}
	if list, ok := filter.V.([]any); ok {
		for _, v := range list {
			if SameValue(v, payload) {
				return true
			}
		}
		return false
	}
	return SameValue(filter.V, payload)
}

// SameValue compares JSON-ish values the way triggers and event waits
// match them: numbers by value (a number's text too), strings exactly, the
// rest deeply.
func SameValue(a, b any) bool {
	if fa, ok := numberOf(a); ok {
		if fb, ok := numberOf(b); ok {
			return fa == fb
		}
		return false
	}
	if sa, ok := a.(string); ok {
		if sb, ok := b.(string); ok {
			return sa == sb
		}
		return false
	}
	return reflect.DeepEqual(a, b)
}

// numberOf reads a number, or the text of one (states often report
// numbers as text).
func numberOf(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && strings.TrimSpace(x) != ""
	}
	return 0, false
}
