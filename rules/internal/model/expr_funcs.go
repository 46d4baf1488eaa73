package model

// The closed environment of automation/1 expressions: its variables and
// functions, as the checker types them and as a run binds them.

import (
	"time"

	"github.com/pilothouse/pilothouse/rules/internal/clock"
)

// EnvFunctions names the functions of the closed environment, in the order
// the expressions guide lists them. compileEnv and (*Env).vars must agree.
var EnvFunctions = []struct{ Name, Signature, Doc string }{
	{"state", "state(id string) any", "current value of a state entry; id must be a string constant"},
	{"available", "available(id string) bool", "false when the device of a state or event entry is offline (its state then reads null); id must be a string constant"},
	{"available", "available(selector object) bool", "false when the device of any state a selector object addresses (as for states()) is offline; true when it addresses none"},
	{"now", "now() time", "the world's clock (virtual in test runs)"},
	{"hour", "hour(t time) int", "hour of day 0-23 in the configured time zone"},
	{"minute", "minute(t time) int", "minute 0-59"},
	{"weekday", "weekday(t time) int", "day of week, 0 = Sunday … 6 = Saturday"},
	{"day", "day(t time) int", "day of the month 1-31"},
	{"month", "month(t time) int", "month 1 = January … 12 = December (winter: month(now()) in [11, 12, 1, 2])"},
	{"seconds", "seconds(d string) float", "a duration such as \"90s\" or \"2m\" in seconds"},
	{"since", "since(id string) float", "seconds since a state last changed (an event: last occurred), on the world's clock; nil when it has no value yet; id must be a string constant"},
	{"states", "states(selector object) list", "the current values of every state a selector object addresses ({area: 'hall', type: 'motion', tag: '…', property: 'occupancy'}: property and at least one of area, type, tag, all string constants; or a tag the states carry themselves, {tag: 'class:occupancy'}), in id order; an offline device's reads null; resolved when it runs, in the rule owner's scope"},
	{"entities", "entities(selector object) list", "every state a selector object addresses (as for states()) as {id, value}, in id order: to say which, join(map(filter(entities({tag: 'class:door'}), .value == false), .id), ', ')"},
	{"since", "since(selector object) float", "seconds since the most recent change among the states a selector object addresses (as for states()); nil when none has a value yet"},
	{"last_changed", "last_changed(id string) time", "when a state last changed (an event: last occurred), local time; nil when it has no value yet; id must be a string constant"},
}

// EnvVariables names the variables of the closed environment.
var EnvVariables = []struct{ Name, Doc string }{
	{"trigger", "the trigger that fired: trigger.id, trigger.kind, trigger.entity, trigger.value, trigger.from, trigger.to, trigger.time"},
	{"params", "the program's parameters (execute input bound to params)"},
	{"vars", "variables assigned by set steps (scope rules apply)"},
	{"steps", "outputs of earlier steps: steps.<id>.output (scope rules apply)"},
}

func stateStub(string) any            { return nil }
func availableStub(any) (bool, error) { return true, nil }
func sinceStub(any) (any, error)      { return nil, nil }
func statesStub(map[string]any) ([]any, error) {
	return nil, nil
}
func nowStub() time.Time        { return time.Time{} }
func hourOf(t time.Time) int    { return t.Hour() }
func minuteOf(t time.Time) int  { return t.Minute() }
func weekdayOf(t time.Time) int { return int(t.Weekday()) }
func dayOf(t time.Time) int     { return t.Day() }
func monthOf(t time.Time) int   { return int(t.Month()) }

// compileEnv is the typing environment expressions are checked against.
var compileEnv = map[string]any{
	"trigger":      map[string]any{},
	"params":       map[string]any{},
	"vars":         map[string]any{},
	"steps":        map[string]any{},
	"state":        stateStub,
	"available":    availableStub,
	"now":          nowStub,
	"hour":         hourOf,
	"minute":       minuteOf,
	"weekday":      weekdayOf,
	"day":          dayOf,
	"month":        monthOf,
	"seconds":      clock.SecondsOf,
	"since":        sinceStub,
	"states":       statesStub,
	"entities":     statesStub,
	"last_changed": stateStub,
	memVar:         (*evalMem)(nil),
}

// envVars is a pooled expression environment: the map and the closures
// over the World it holds (built once per holder, not once per run).
type envVars struct {
	m    map[string]any
	w    World
	sels map[string][]string // the bound Env's Selected
}

func newEnvVars() *envVars {
	h := &envVars{}
	h.m = map[string]any{
		"trigger": nil,
		"params":  nil,
		"vars":    nil,
		"steps":   nil,
		"state": func(id string) any {
			if h.w == nil {
				return nil
			}
			v, _ := h.w.State(id)
			return v
		},
		"available": func(arg any) (bool, error) {
			if m, ok := arg.(map[string]any); ok {
				s := selectorFrom(m)
				return availableOf(h.w, &s, h.sels[s.Key()])
			}
			id, _ := arg.(string)
			return h.w == nil || AvailableIn(h.w, id), nil
		},
		"now": func() time.Time {
			if h.w == nil {
				return time.Now()
			}
			return h.w.Now()
		},
		"hour":    hourOf,
		"minute":  minuteOf,
		"weekday": weekdayOf,
		"day":     dayOf,
		"month":   monthOf,
		"seconds": clock.SecondsOf,
		"since": func(arg any) (any, error) {
			if m, ok := arg.(map[string]any); ok {
				s := selectorFrom(m)
				return sinceOf(h.w, &s, h.sels[s.Key()])
			}
			id, _ := arg.(string)
			if v, ok := SinceOf(h.w, id); ok {
				return v, nil
			}
			return nil, nil
		},
		"states": func(arg map[string]any) ([]any, error) {
			s := selectorFrom(arg)
			return statesOf(h.w, &s, h.sels[s.Key()])
		},
		"entities": func(arg map[string]any) ([]any, error) {
			s := selectorFrom(arg)
			return entitiesOf(h.w, &s, h.sels[s.Key()])
		},
		"last_changed": func(id string) any {
			t, ok := LastChangedOf(h.w, id)
			if !ok {
				return nil
			}
			return t.In(PlaceOf(h.w).Zone)
		},
		memVar: (*evalMem)(nil), // the bound Env's budget
	}
	return h
}

// ChangeClock is a World that knows when states last changed (and events
// last occurred): since() and last_changed() read it. In a World without
// it they read nil.
type ChangeClock interface {
	LastChanged(id string) (time.Time, bool)
}

// LastChangedOf is when id last changed, if w keeps a ChangeClock.
func LastChangedOf(w World, id string) (time.Time, bool) {
	cc, ok := w.(ChangeClock)
	if !ok {
		return time.Time{}, false
	}
	return cc.LastChanged(id)
}
