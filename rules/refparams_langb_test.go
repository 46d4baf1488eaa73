package rules

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/sim"
)

// doorAlert reads how long a catalog-param door has stood open, and
// listens to a catalog-param remote for a set of gestures (a trigger and
// a wait with value lists). The MCP tests run the same program.
var doorAlert = testProgram("door-alert")

// TestRefParamsInSinceAndValueLists: since()/last_changed() take a
// catalog-reference param as state() does, and event triggers and waits
// with value lists take "{{ params.<name> }}" ids; binding checks both.
func TestRefParamsInSinceAndValueLists(t *testing.T) {
	res := mustValidate(t, doorAlert, ValidateOptions{})
	if !res.Valid || len(res.Diagnostics) != 0 {
		t.Fatalf("unbound: %s", diagString(res.Diagnostics))
	}
	bind := map[string]any{"door": "front_door.contact", "remote": "bedroom_remote.action"}
	res = mustValidate(t, doorAlert, ValidateOptions{Bind: bind})
	if !res.Valid || len(res.Diagnostics) != 0 {
		t.Fatalf("bound: %s", diagString(res.Diagnostics))
	}
	c := res.Compiled
	for _, id := range []string{"front_door.contact", "bedroom_remote.action", "notify.phone"} {
		if !slices.Contains(c.Refs, id) {
			t.Errorf("refs %v lack %s", c.Refs, id)
		}
	}
	if d := planStep(res.Plan, "press").Description; d != `When event bedroom_remote.action arrives with "toggle_double" or "toggle_triple"` {
		t.Errorf("trigger: %q", d)
	}
	tr := &c.Triggers()[0]
	for payload, want := range map[string]bool{"toggle_double": true, "toggle_triple": true, "toggle": false} {
		if got, _ := tr.Match(nil, payload, true); got != want {
			t.Errorf("%s: matched %v", payload, got)
		}
	}

	// A test run: the door opened 20 minutes ago, the confirming gesture
	// comes 10 s in; since(params.door) reads the bound door.
	opened := itStart.Add(-20 * time.Minute)
	sc := Scenario{Timeline: []sim.TimelineEntry{{At: 10 * time.Second, Event: map[string]any{"bedroom_remote.action": "on_hold"}}}}
	w := itSim(map[string]any{"front_door.contact": false}, sc)
	w.SetChangedBase(func(id string) (time.Time, bool) { return opened, id == "front_door.contact" })
	fire, err := FireFor(c, sc, w)
	if err != nil || fire.Value != "toggle_double" {
		t.Fatalf("fire %+v %v", fire, err)
	}
	out := Run(context.Background(), c, w, RunInput{Trigger: fire, Params: bind, Limits: DefaultLimits})
	if out.Outcome.Status != StatusSuccess || len(w.Calls()) != 1 || w.Calls()[0].Args["message"] != "open 20 min" {
		t.Fatalf("%+v calls %+v", out.Outcome, w.Calls())
	}
	if err := CheckCorrespondence(c.Plan, out.Steps, out.Outcome); err != nil {
		t.Error(err)
	}

	// Binding checks what it binds: a door that is not a state, a
	// remote that never sends a listed gesture.
	for _, tc := range []struct {
		param string
		id    any
		want  string
	}{
		{"door", "hall_light.set", "not a state"},
		{"door", "front_door.contct", "front_door.contct"},
		{"remote", "outdoor_weather.temperature", "remote"},
	} {
		in := map[string]any{"door": "front_door.contact", "remote": "bedroom_remote.action", tc.param: tc.id}
		res := mustValidate(t, doorAlert, ValidateOptions{Bind: in})
		if res.Valid || len(res.Diagnostics) == 0 {
			t.Errorf("%s=%v: valid", tc.param, tc.id)
			continue
		}
		for _, d := range res.Diagnostics {
			if d.Code != CodeInputBinding || d.Path != "/"+tc.param {
				t.Errorf("%s=%v: %s", tc.param, tc.id, diagString(res.Diagnostics))
			}
		}
	}
	// A plain string param is still no id.
	plain := strings.Replace(doorAlert, `"door": {"type": "string", "catalog": {"kind": "state", "type": "binary_sensor", "reports": [true, false]}}`, `"door": {"type": "string"}`, 1)
	if res := mustValidate(t, plain, ValidateOptions{}); res.Valid || res.Diagnostics[0].Code != core.CodeNonConstantRef {
		t.Errorf("plain param: %s", diagString(res.Diagnostics))
	}
}
