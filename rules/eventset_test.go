package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"

	"testing"
)

func TestEventValueSets(t *testing.T) {
	comp := validDemo(t, `{"name": "e", "triggers": [{"id": "press", "event": "bedroom_remote.action", "value": ["toggle_double", "toggle_triple"]}],
		"steps": [{"id": "w", "wait": {"event": "bedroom_remote.action", "value": ["on", "on_hold"]}, "timeout": "1m", "continue_on_timeout": true}]}`, false)
	tr := &comp.Triggers()[0]
	for payload, want := range map[string]bool{"toggle_double": true, "toggle_triple": true, "toggle": false, "on_double": false} {
		if got, _ := tr.Match(nil, payload, true); got != want {
			t.Errorf("%s: matched %v", payload, got)
		}
	}
	if got, _ := tr.Match(nil, "toggle_double", false); got {
		t.Error("a state change is not an event")
	}
	if d := comp.Plan.Steps[1].Description; d != `When event bedroom_remote.action arrives with "toggle_double" or "toggle_triple"` {
		t.Errorf("plan: %s", d)
	}
	// A test run without a value fires the first of the set.
	fire, err := FireFor(comp, Scenario{}, itSim(nil, Scenario{}))
	if err != nil || fire.Value != "toggle_double" {
		t.Errorf("fire %+v %v", fire, err)
	}
	res, _ := Validate([]byte(`{"name": "e", "triggers": [{"id": "p", "event": "bedroom_remote.action", "value": []}],
		"steps": [{"id": "s", "call": "hall_light.set", "args": {"state": "ON"}}]}`), demoCatalog(), ValidateOptions{Cache: itCache})
	if len(res.Diagnostics) != 1 || res.Diagnostics[0].Code != core.CodeConstraint || res.Diagnostics[0].Path != "/triggers/0/value" {
		t.Errorf("empty set: %+v", res.Diagnostics)
	}
}
