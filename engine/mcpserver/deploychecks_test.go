package mcpserver_test

import (
	"strings"
	"testing"
)

// TestDeployChecksEverything: what can be known before a rule runs is
// checked at validate or, with its input, at execute; nothing is left to
// fail halfway through the first firing.
func TestDeployChecksEverything(t *testing.T) {
	_, c := ownerStack(t)

	// A trigger value the entry never reports: the rule could never fire.
	v := validate(t, c, `{"name":"never","triggers":[{"id":"m","state":"hall_motion.occupancy","to":"on"}],"steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)
	if d := diagAt(v, "unreachable_value", "/triggers/0/to"); v["valid"] != false || d == nil || d["severity"] != "error" {
		t.Errorf("to \"on\" on a boolean: %s", js(v))
	}

	// A duration param without a declared format, given "3 minutes": the
	// issue's rule turned the light on and failed at the delay. Now the
	// deploy is refused, pointing at the param and where it is used.
	light := `{"name":"hall-timer","params":{"type":"object","properties":{"hold":{"type":"string","default":"2m"},"level":{"type":"integer","default":180}}},
	  "triggers":[{"id":"m","state":"hall_motion.occupancy","to":true}],
	  "steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON","brightness":"{{ params.level }}"}},{"id":"hold","delay":"{{ params.hold }}"},
	    {"id":"off","call":"hall_light.set","args":{"state":"OFF"}}]}`
	for _, tc := range []struct {
		input       map[string]any
		path, msg   string
		testRunToo  bool
		wantSuccess bool
	}{
		{map[string]any{"hold": "3 minutes"}, "/hold", `hold = "3 minutes": used as the delay at /steps/1/delay, it does not make a duration`, true, false},
		{map[string]any{"level": 300}, "/level", `level = 300: hall_light.set: maximum: got 300, want 254 (at /steps/0/args/brightness)`, true, false},
		{map[string]any{"hold": "90s", "level": 100}, "", "", false, true},
	} {
		for _, testRun := range []bool{false, true} {
			r := execute(t, c, map[string]any{"program": prog(t, light), "input": tc.input, "test_run": testRun})
			oc := r["outcome"].(map[string]any)
			if tc.wantSuccess {
				if oc["ok"] != true {
					t.Errorf("%v: %s", tc.input, js(r))
				}
				if !testRun && !strings.Contains(js(step(r["trace"], "promote")), "program_ref") {
					t.Errorf("deploy trace: %s", js(r))
				}
				continue
			}
			d := diagAt(r, "input_binding", tc.path)
			if oc["status"] != "validation_error" || d == nil || !strings.Contains(d["message"].(string), tc.msg) {
				t.Errorf("%v (test_run %v): %s", tc.input, testRun, js(r))
			}
		}
	}

	// Call depth holds with bound references: an automation param bound
	// to a chain whose calls already nest MaxCallDepth (4) deep is
	// refused at the member.
	ref := deployed(t, c, `{"name":"d1","triggers":[{"id":"t","at":"03:00"}],"steps":[{"id":"x","call":"porch_light.set","args":{"state":"TOGGLE"}}]}`)
	for i := 2; i <= 5; i++ {
		ref = deployed(t, c, caller("d"+string(rune('0'+i)), "03:0"+string(rune('0'+i)), ref))
	}
	runner := `{"name":"runner","params":{"type":"object","required":["script"],"properties":{"script":{"catalog":{"kind":"automation","max_risk":"control"}}}},
	  "triggers":[{"id":"t","at":"04:00"}],"steps":[{"id":"go","call":"{{ params.script }}"}]}`
	if v := validate(t, c, runner); v["valid"] != true {
		t.Fatalf("runner: %s", js(v))
	}
	r := execute(t, c, map[string]any{"program": prog(t, runner), "input": map[string]any{"script": ref}})
	if d := diagAt(r, "input_binding", "/script"); d == nil || !strings.Contains(d["message"].(string), "nests promoted automations 5 deep") {
		t.Errorf("deep script: %s", js(r))
	}
}

// TestOverlappingRuleWarning: a second rule driving the hall light from
// the same motion trigger validates with a warning naming the first; one
// on the motion ending does not; a bound deploy reports it in its output.
func TestOverlappingRuleWarning(t *testing.T) {
	_, c := ownerStack(t)
	deployed(t, c, `{"name":"hall-on","triggers":[{"id":"m","state":"hall_motion.occupancy","to":true}],"steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)

	v := validate(t, c, `{"name":"hall-dim","triggers":[{"id":"m","state":"hall_motion.occupancy","to":true}],"steps":[{"id":"dim","call":"hall_light.set","args":{"brightness":40}}]}`)
	d := diagAt(v, "overlapping_rule", "/steps/0/call")
	if v["valid"] != true || d == nil || d["severity"] != "warning" || !strings.Contains(d["message"].(string), `rule "hall-on" also calls hall_light.set when hall_motion.occupancy changes to true`) {
		t.Errorf("overlap: %s", js(v))
	}
	if v := validate(t, c, `{"name":"hall-off","triggers":[{"id":"m","state":"hall_motion.occupancy","to":false}],"steps":[{"id":"off","call":"hall_light.set","args":{"state":"OFF"}}]}`); len(v["diagnostics"].([]any)) != 0 {
		t.Errorf("the motion ending is another trigger: %s", js(v))
	}
	dep := execute(t, c, map[string]any{"program": prog(t, motionLight), "input": map[string]any{"sensor": "hall_motion.occupancy", "light": "hall_light.set"}})
	out, _ := dep["output"].(map[string]any)
	if !strings.Contains(js(out["warnings"]), `"code":"overlapping_rule"`) {
		t.Errorf("bound deploy: %s", js(dep))
	}
}
