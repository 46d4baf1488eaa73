package mcpserver_test

import (
	"strings"
	"testing"
)

// TestEmptySelectorsThroughMCP: what an assistant saw of selectors that
// match nothing. A test run of a trigger by such a selector does not fire
// (no empty entity, no message naming nobody), and a rule whose only
// action matches nothing carries validate's no_match warning in execute's
// answer, test run and deploy alike.
func TestEmptySelectorsThroughMCP(t *testing.T) {
	_, c := sunStack(t)
	const window = `{"name": "window-open", "triggers": [{"id": "window_open", "state": {"tag": "class:window", "property": "contact"}, "to": false, "for": "10m"}],
	  "steps": [{"id": "warn", "call": "hall_light.set", "args": {"state": "ON"}}]}`
	oc, steps, calls := testRun(t, c, window, `{"trigger": "window_open"}`)
	if oc["status"] != "not_triggered" || !strings.Contains(oc["error"].(string), "matches no entry now") || len(calls) != 0 ||
		status(steps["window_open"]) != "not_met" {
		t.Errorf("a trigger selector matching nothing: %v %v", oc, calls)
	}

	const kitchen = `{"name": "kitchen-lights-morning", "triggers": [{"id": "seven", "at": "07:00"}],
	  "steps": [{"id": "on", "call": {"area": "kitchen", "type": "light", "action": "set"}, "args": {"state": "ON"}}]}`
	for _, tc := range []struct {
		name string
		args map[string]any
	}{
		{"test run", map[string]any{"test_run": true, "program": prog(t, kitchen), "input": map[string]any{}}},
		{"deploy", map[string]any{"program": prog(t, kitchen), "input": map[string]any{}}},
	} {
		out := call(t, c, "pilotage_execute", tc.args)
		o, _ := out["output"].(map[string]any)
		ws, _ := o["warnings"].([]any)
		if status(out) != "success" || len(ws) != 1 || ws[0].(map[string]any)["code"] != "no_match" {
			t.Errorf("%s of a rule whose only action matches nothing: %v", tc.name, out)
		}
	}
}
