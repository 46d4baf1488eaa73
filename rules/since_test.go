package rules

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSinceDiagnostics(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"since(params.door) > 60", "non_constant_reference"},
		{"let f = since; f('front_door.contact') > 60", "non_constant_reference"},
		{"last_changed('front_door.contct') != nil", "unknown_name"},
		{"since('hall_light.set') > 60", "wrong_kind"},
	} {
		res, err := Validate([]byte(`{"name": "s", "params": {"type": "object", "properties": {"door": {"type": "string"}}},
			"triggers": [{"id": "t", "at": "07:00"}], "conditions": [{"id": "c", "expr": "`+c.expr+`"}],
			"steps": [{"id": "s", "call": "hall_light.set", "args": {"state": "ON"}}]}`), demoCatalog(), ValidateOptions{Cache: itCache})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Diagnostics) == 0 || res.Diagnostics[0].Code != c.want || res.Diagnostics[0].Path != "/conditions/0/expr" || res.Diagnostics[0].Range == nil {
			t.Errorf("%s: %+v, want %s with a range", c.expr, res.Diagnostics, c.want)
		}
	}
	res, _ := Validate([]byte(`{"name": "s", "triggers": [{"id": "t", "at": "07:00"}],
		"steps": [{"id": "s", "call": "hall_light.set", "args": {"state": "ON"}}],
		"conditions": [{"id": "c", "expr": "last_changed('front_door.contct') != nil"}]}`), demoCatalog(), ValidateOptions{Cache: itCache})
	if d := res.Diagnostics; len(d) != 1 || !strings.HasPrefix(d[0].Message, "last_changed() id \"front_door.contct\"") || !strings.Contains(d[0].Hint, "front_door.contact") {
		t.Errorf("unknown id: %+v", d)
	}
}

// TestSinceInRuns: since() and last_changed() read the world's change
// clock; the references are part of the program's (plan completeness).
func TestSinceInRuns(t *testing.T) {
	comp := validDemo(t, `{"name": "s", "triggers": [{"id": "t", "at": "07:00"}],
		"conditions": [{"id": "long", "expr": "since('front_door.contact') >= 600"}],
		"steps": [{"id": "s", "set": {"at": "{{ last_changed('front_door.contact') }}", "hall": "{{ since('hall_motion.occupancy') }}"}}]}`, false)
	if !slices.Contains(comp.Refs, "front_door.contact") || !slices.Contains(comp.Refs, "hall_motion.occupancy") {
		t.Fatalf("refs %v: since() ids are references", comp.Refs)
	}
	opened := itStart.Add(-20 * time.Minute)
	w := itSim(map[string]any{"front_door.contact": false}, Scenario{})
	w.SetChangedBase(func(id string) (time.Time, bool) {
		if id == "front_door.contact" {
			return opened, true
		}
		return time.Time{}, false
	})
	res := itRun(t, comp, w, itFire("t", nil))
	if res.Outcome.Status != StatusSuccess {
		t.Fatalf("%+v", res.Outcome)
	}
	if at, _ := res.Vars["at"].(time.Time); !at.Equal(opened) || res.Vars["hall"] != nil {
		t.Errorf("vars %v", res.Vars)
	}
	// A change in the simulation restarts the count.
	w = itSim(nil, Scenario{State: map[string]any{"front_door.contact": false}})
	w.SetChangedBase(func(string) (time.Time, bool) { return opened, true })
	if res := itRun(t, comp, w, itFire("t", nil)); res.Outcome.Status != StatusConditionsNotMet {
		t.Errorf("the scenario changed the door just now: %+v", res.Outcome)
	}
}
