package sim

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/decode"
	"github.com/pilothouse/pilothouse/rules/internal/interp"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// ParseScenario splits execute's input for a test run, by the documented
// convention:
//
//	{"params": {…program params…},
//	 "scenario": {"trigger": "<trigger id>", "value": …, "from": …,
//	              "state": {"<state id>": value}, "now": "RFC 3339",
//	              "timeline": [{"at": "90s", "state": {…}, "event": {…},
//	                            "available": {"<entry id>": false}}],
//	              "last_run": "RFC 3339" | "-20m",
//	              "waits": {"<wait step id>": "met" | "timeout"}}}
//
// Both members are optional. Shapes that do not fit give input_binding
// diagnostics whose paths point into input ("/scenario/now").
func ParseScenario(input map[string]any) (params map[string]any, sc Scenario, diags []pilotage.Diagnostic) {
	bad := func(path, msg, hint string) {
		diags = append(diags, pilotage.Diagnostic{Code: core.CodeInputBinding, Severity: pilotage.SeverityError, Message: msg, Path: path, Hint: hint})
	}
	params = map[string]any{}
	for _, k := range core.SortedKeys(input) {
		v := input[k]
		switch k {
		case "params":
			m, ok := v.(map[string]any)
			if !ok && v != nil {
				bad("/params", fmt.Sprintf("params must be an object, got %s", core.InterpTypeName(v)), "")
				continue
			}
			for pk, pv := range m {
				params[pk] = pv
			}
		case "scenario":
			m, ok := v.(map[string]any)
			if !ok && v != nil {
				bad("/scenario", fmt.Sprintf("scenario must be an object, got %s", core.InterpTypeName(v)), "")
				continue
			}
			sc = parseScenarioObject(m, bad)
		default:
			bad("/"+simEscapePointer(k), fmt.Sprintf("unknown input member %q", k), `input has two members: "params" (the program's parameters) and "scenario" (test runs only)`)
		}
	}
	return params, sc, diags
}

func parseScenarioObject(m map[string]any, bad func(path, msg, hint string)) Scenario {
	var sc Scenario
	for _, k := range core.SortedKeys(m) {
		v := m[k]
		path := "/scenario/" + simEscapePointer(k)
		switch k {
		case "trigger":
			s, ok := v.(string)
			if !ok {
				bad(path, fmt.Sprintf("scenario trigger must be a trigger id string, got %s", core.InterpTypeName(v)), "")
			}
			sc.Trigger = s
		case "value":
			sc.Value = v
		case "from":
			sc.From = v
		case "state":
			st, ok := v.(map[string]any)
			if !ok {
				bad(path, fmt.Sprintf("scenario state must be an object of state id → value, got %s", core.InterpTypeName(v)), "")
				continue
			}
			sc.State = st
		case "now":
			s, ok := v.(string)
			t, err := time.Parse(time.RFC3339, s)
			if !ok || err != nil {
				bad(path, fmt.Sprintf("scenario now must be an RFC 3339 time, got %s", interp.FormatReason(v)), `e.g. "2026-01-15T23:30:00+01:00"`)
				continue
			}
			sc.Now = &t
		case "waits":
			sc.Waits = parseWaits(v, path, bad)
		case "timeline":
			sc.Timeline = parseTimeline(v, path, bad)
		case "last_run":
			sc.LastRun = parseMoment(v, path, bad)
		default:
			bad(path, fmt.Sprintf("unknown scenario member %q", k), "scenario members: "+strings.Join(ScenarioMembers, ", "))
		}
	}
	return sc
}

// ScenarioMembers are the members of a test run's scenario.
var ScenarioMembers = []string{"trigger", "value", "from", "state", "now", "timeline", "last_run", "waits"}

// parseTimeline reads [{"at": "<offset>", "state"?: {…}, "event"?: {…},
// "available"?: {…}}], sorted by at (entries at the same offset keep
// their order).
func parseTimeline(v any, path string, bad func(path, msg, hint string)) []TimelineEntry {
	list, ok := v.([]any)
	if !ok {
		bad(path, fmt.Sprintf("scenario timeline must be an array of {\"at\", \"state\"?, \"event\"?, \"available\"?}, got %s", core.InterpTypeName(v)), `e.g. [{"at": "90s", "state": {"hall_motion.occupancy": false}}]`)
		return nil
	}
	var out []TimelineEntry
	for i, x := range list {
		p := path + "/" + strconv.Itoa(i)
		m, ok := x.(map[string]any)
		if !ok {
			bad(p, fmt.Sprintf("a timeline entry must be an object, got %s", core.InterpTypeName(x)), "")
			continue
		}
		e := TimelineEntry{Index: i}
		good := true
		for _, k := range core.SortedKeys(m) {
			good = timelineMember(&e, k, m[k], p, bad) && good
		}
		if _, has := m["at"]; !has {
			bad(p, "a timeline entry needs \"at\"", `e.g. {"at": "90s", "state": {…}}`)
			good = false
		}
		if e.State == nil && e.Event == nil && e.Available == nil && good {
			bad(p, "a timeline entry needs \"state\", \"event\" or \"available\"", "")
			good = false
		}
		if good {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// timelineMember reads member k of the timeline entry at p into e,
// reporting false when it is bad.
func timelineMember(e *TimelineEntry, k string, v any, p string, bad func(path, msg, hint string)) bool {
	switch k {
	case "at":
		d, err := timelineOffset(v)
		if err != nil {
			bad(p+"/at", "timeline at: "+err.Error(), `an offset from the start such as "90s", "2m" or "-1h" (before the start)`)
			return false
		}
		e.At = d
	case "state", "event":
		obj, ok := v.(map[string]any)
		if !ok || len(obj) == 0 {
			bad(p+"/"+k, fmt.Sprintf("timeline %s must be an object of id → value, got %s", k, interp.FormatReason(v)), "")
			return false
		}
		if k == "state" {
			e.State = obj
		} else {
			e.Event = obj
		}
	case "available":
		return timelineAvailable(e, v, p+"/available", bad)
	default:
		bad(p+"/"+simEscapePointer(k), fmt.Sprintf("unknown timeline member %q", k), "timeline entries have at, state, event and available")
		return false
	}
	return true
}

// timelineAvailable reads a timeline entry's "available": entry id →
// whether its device is online from then on.
func timelineAvailable(e *TimelineEntry, v any, p string, bad func(path, msg, hint string)) bool {
	obj, ok := v.(map[string]any)
	if !ok || len(obj) == 0 {
		bad(p, fmt.Sprintf("timeline available must be an object of entry id → true (online) or false (offline), got %s", interp.FormatReason(v)), `e.g. {"hall_motion.occupancy": false}`)
		return false
	}
	e.Available = map[string]bool{}
	good := true
	for _, id := range core.SortedKeys(obj) {
		on, ok := obj[id].(bool)
		if !ok {
			bad(p+"/"+simEscapePointer(id), fmt.Sprintf("timeline available %q must be true (online) or false (offline), got %s", id, interp.FormatReason(obj[id])), "")
			good = false
			continue
		}
		e.Available[id] = on
	}
	return good
}

func timelineOffset(v any) (time.Duration, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("got %s, want a duration text", interp.FormatReason(v))
	}
	neg := strings.HasPrefix(s, "-")
	d, err := clock.ParseDuration(strings.TrimPrefix(s, "-"))
	if err != nil {
		return 0, err
	}
	if neg {
		d = -d
	}
	return d, nil
}

// parseMoment reads an RFC 3339 time or an offset from the start.
func parseMoment(v any, path string, bad func(path, msg, hint string)) *TimeOrOffset {
	if s, ok := v.(string); ok {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return &TimeOrOffset{At: &t}
		}
		if d, err := timelineOffset(s); err == nil {
			return &TimeOrOffset{Offset: d}
		}
	}
	bad(path, fmt.Sprintf("scenario last_run must be an RFC 3339 time or an offset from the start, got %s", interp.FormatReason(v)), `e.g. "-20m" (20 minutes before the start)`)
	return nil
}

func parseWaits(v any, path string, bad func(path, msg, hint string)) map[string]string {
	wm, ok := v.(map[string]any)
	if !ok {
		bad(path, fmt.Sprintf("scenario waits must be an object of wait step id → \"met\" or \"timeout\", got %s", core.InterpTypeName(v)), "")
		return nil
	}
	out := map[string]string{}
	for _, id := range core.SortedKeys(wm) {
		s, _ := wm[id].(string)
		if s != WaitMet && s != WaitTimeout {
			bad(path+"/"+simEscapePointer(id), fmt.Sprintf("wait %q: want \"met\" or \"timeout\", got %s", id, interp.FormatReason(wm[id])), "")
			continue
		}
		out[id] = s
	}
	return out
}

func simEscapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// CheckScenarioIDs reports the ids of scenario.state and the timeline
// that are not entries of the right kind (states; events in a
// timeline's event) as get (the caller's catalog) sees them, and the
// values their entry's output_schema refuses (null aside: an offline
// device's state reads null): the states', and the value and from the
// scenario fires c's trigger with. A test run on a value the device
// never reports would predict a firing that cannot happen.
func CheckScenarioIDs(c *model.Compiled, sc Scenario, get func(id string) (*pilotage.Entry, bool), cache *model.Cache) []pilotage.Diagnostic {
	k := &idCheck{get: get, cache: cache}
	for _, id := range core.SortedKeys(sc.State) {
		k.id("/scenario/state", id, sc.State[id], pilotage.KindState, pilotage.KindEvent)
	}
	for _, e := range sc.Timeline {
		p := "/scenario/timeline/" + strconv.Itoa(e.Index)
		for _, id := range core.SortedKeys(e.State) {
			k.id(p+"/state", id, e.State[id], pilotage.KindState)
		}
		for _, id := range core.SortedKeys(e.Event) {
			k.id(p+"/event", id, nil, pilotage.KindEvent)
		}
		for _, id := range core.SortedKeys(e.Available) {
			k.id(p+"/available", id, nil, pilotage.KindState, pilotage.KindEvent, pilotage.KindAction)
		}
	}
	k.trigger(c, sc)
	return k.diags
}

// idCheck gathers CheckScenarioIDs' findings.
type idCheck struct {
	get   func(id string) (*pilotage.Entry, bool)
	cache *model.Cache
	diags []pilotage.Diagnostic
}

func (k *idCheck) add(path, msg, hint string) {
	k.diags = append(k.diags, pilotage.Diagnostic{Code: core.CodeInputBinding, Severity: pilotage.SeverityError, Message: msg, Path: path, Hint: hint})
}

// id checks that id is an entry of one of the kinds and, for a state,
// that it may report v.
func (k *idCheck) id(path, id string, v any, want ...pilotage.Kind) {
	path += "/" + simEscapePointer(id)
	e, ok := k.get(id)
	switch {
	case !ok:
		k.add(path, fmt.Sprintf("unknown id %q", id), "use ids as pilotage_lookup lists them")
	case !slices.Contains(want, e.Kind):
		k.add(path, fmt.Sprintf("%q is not a %s entry", id, want[0]), "use ids as pilotage_lookup lists them")
	case e.Kind == pilotage.KindState:
		k.value(path, e, v)
	}
}

// value reports v (unless null) when e's output_schema refuses it.
func (k *idCheck) value(path string, e *pilotage.Entry, v any) {
	if v == nil || len(e.OutputSchema) == 0 || k.cache == nil {
		return
	}
	if sch := k.cache.Schema(e.OutputSchema); sch != nil {
		if err := sch.Validate(v); err != nil {
			k.add(path, fmt.Sprintf("%s never reports %s: %s", e.ID, core.CompactJSON(v), decode.FirstLeafMessage(err)),
				"its output_schema (pilotage_lookup get) says what it reports")
		}
	}
}

// trigger checks the scenario's value and from against the entry the
// trigger FireFor picks fires on (a state, numeric or event trigger's);
// an entry the caller cannot see was refused when the program validated.
func (k *idCheck) trigger(c *model.Compiled, sc Scenario) {
	if c == nil || len(c.RunTriggers) == 0 || (sc.Value == nil && sc.From == nil) {
		return
	}
	t := &c.RunTriggers[0]
	if sc.Trigger != "" {
		t = c.Trigger(sc.Trigger)
	}
	if t == nil {
		return
	}
	switch t.Kind() {
	case model.TriggerState, model.TriggerNumeric, model.TriggerEvent:
	default:
		return
	}
	if e, ok := k.get(t.Watched()); ok {
		k.value("/scenario/value", e, sc.Value)
		k.value("/scenario/from", e, sc.From)
	}
}

// CheckScenario reports scenario members that name nothing in the program:
// an unknown trigger, or a waits key that is not a wait step.
func CheckScenario(c *model.Compiled, sc Scenario) []pilotage.Diagnostic {
	if c == nil {
		return nil
	}
	var diags []pilotage.Diagnostic
	if sc.Trigger != "" && c.Trigger(sc.Trigger) == nil {
		diags = append(diags, pilotage.Diagnostic{Code: core.CodeInputBinding, Severity: pilotage.SeverityError,
			Message: fmt.Sprintf("unknown trigger %q", sc.Trigger), Path: "/scenario/trigger",
			Hint: "triggers: " + strings.Join(c.TriggerIDs(), ", ")})
	}
	keys := make([]string, 0, len(sc.Waits))
	for k := range sc.Waits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, isWait := slices.BinarySearch(c.WaitIDs, interp.BaseStepID(k)); !isWait {
			diags = append(diags, pilotage.Diagnostic{Code: core.CodeInputBinding, Severity: pilotage.SeverityError,
				Message: fmt.Sprintf("%q is not a wait step of the program", k), Path: "/scenario/waits/" + simEscapePointer(k)})
		}
	}
	return diags
}
