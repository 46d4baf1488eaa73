package rules

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
)

// ParseScenario splits execute's input for a test run, by the documented
// convention:
//
//	{"params": {…program params…},
//	 "scenario": {"trigger": "<trigger id>", "value": …, "from": …,
//	              "state": {"<state id>": value}, "now": "RFC 3339",
//	              "waits": {"<wait step id>": "met" | "timeout"}}}
//
// Both members are optional. Shapes that do not fit give input_binding
// diagnostics whose paths point into input ("/scenario/now").
func ParseScenario(input map[string]any) (params map[string]any, sc Scenario, diags []pilotage.Diagnostic) {
	bad := func(path, msg, hint string) {
		diags = append(diags, pilotage.Diagnostic{Code: CodeInputBinding, Severity: pilotage.SeverityError, Message: msg, Path: path, Hint: hint})
	}
	params = map[string]any{}
	for _, k := range sortedKeys(input) {
		v := input[k]
		switch k {
		case "params":
			m, ok := v.(map[string]any)
			if !ok && v != nil {
				bad("/params", fmt.Sprintf("params must be an object, got %s", interpTypeName(v)), "")
				continue
			}
			for pk, pv := range m {
				params[pk] = pv
			}
		case "scenario":
			m, ok := v.(map[string]any)
			if !ok && v != nil {
				bad("/scenario", fmt.Sprintf("scenario must be an object, got %s", interpTypeName(v)), "")
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
	for _, k := range sortedKeys(m) {
		v := m[k]
		path := "/scenario/" + simEscapePointer(k)
		switch k {
		case "trigger":
			s, ok := v.(string)
			if !ok {
				bad(path, fmt.Sprintf("scenario trigger must be a trigger id string, got %s", interpTypeName(v)), "")
			}
			sc.Trigger = s
		case "value":
			sc.Value = v
		case "from":
			sc.From = v
		case "state":
			st, ok := v.(map[string]any)
			if !ok {
				bad(path, fmt.Sprintf("scenario state must be an object of state id → value, got %s", interpTypeName(v)), "")
				continue
			}
			sc.State = st
		case "now":
			s, ok := v.(string)
			t, err := time.Parse(time.RFC3339, s)
			if !ok || err != nil {
				bad(path, fmt.Sprintf("scenario now must be an RFC 3339 time, got %s", formatReason(v)), `e.g. "2026-01-15T23:30:00+01:00"`)
				continue
			}
			sc.Now = &t
		case "waits":
			sc.Waits = parseWaits(v, path, bad)
		default:
			bad(path, fmt.Sprintf("unknown scenario member %q", k), "scenario members: trigger, value, from, state, now, waits")
		}
	}
	return sc
}

func parseWaits(v any, path string, bad func(path, msg, hint string)) map[string]string {
	wm, ok := v.(map[string]any)
	if !ok {
		bad(path, fmt.Sprintf("scenario waits must be an object of wait step id → \"met\" or \"timeout\", got %s", interpTypeName(v)), "")
		return nil
	}
	out := map[string]string{}
	for _, id := range sortedKeys(wm) {
		s, _ := wm[id].(string)
		if s != WaitMet && s != WaitTimeout {
			bad(path+"/"+simEscapePointer(id), fmt.Sprintf("wait %q: want \"met\" or \"timeout\", got %s", id, formatReason(wm[id])), "")
			continue
		}
		out[id] = s
	}
	return out
}

func simEscapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// CheckScenario reports scenario members that name nothing in the program:
// an unknown trigger, or a waits key that is not a wait step.
func CheckScenario(c *Compiled, sc Scenario) []pilotage.Diagnostic {
	if c == nil {
		return nil
	}
	var diags []pilotage.Diagnostic
	if sc.Trigger != "" && c.trigger(sc.Trigger) == nil {
		diags = append(diags, pilotage.Diagnostic{Code: CodeInputBinding, Severity: pilotage.SeverityError,
			Message: fmt.Sprintf("unknown trigger %q", sc.Trigger), Path: "/scenario/trigger",
			Hint: "triggers: " + strings.Join(c.triggerIDs(), ", ")})
	}
	keys := make([]string, 0, len(sc.Waits))
	for k := range sc.Waits {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, isWait := slices.BinarySearch(c.waitIDs, BaseStepID(k)); !isWait {
			diags = append(diags, pilotage.Diagnostic{Code: CodeInputBinding, Severity: pilotage.SeverityError,
				Message: fmt.Sprintf("%q is not a wait step of the program", k), Path: "/scenario/waits/" + simEscapePointer(k)})
		}
	}
	return diags
}
