package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestCancelledRunsAreReported: disabling, removing or replacing a rule
// cancels its runs in progress, whose remaining steps (here: the light
// back off after an hour) never run. Each of those answers says so (an
// assistant disabled a motion light mid-run and the light stayed on).
func TestCancelledRunsAreReported(t *testing.T) {
	s, c := ownerStack(t)
	// Each case switches its own device to a state and then waits an
	// hour to switch it back: the device in that state means a run is in
	// progress.
	long := func(name, dev, to, back string) string {
		return strings.NewReplacer("NAME", name, "DEV", dev, "TO", to, "BACK", back).Replace(`{"name": "NAME",
	  "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "on", "call": "DEV.set", "args": {"state": "TO"}}, {"id": "later", "delay": "1h"},
	            {"id": "off", "call": "DEV.set", "args": {"state": "BACK"}}]}`)
	}
	state := func(dev string) string {
		got := call(t, c, "pilotage_lookup", map[string]any{"verb": "get", "id": dev + ".state"})
		v, _ := got["live"].(map[string]any)["value"].(string)
		return v
	}
	inProgress := func(name, dev string) string {
		t.Helper()
		to, back := "ON", "OFF"
		if state(dev) == "ON" {
			to, back = back, to
		}
		src := long(name, dev, to, back)
		deployed(t, c, src)
		if err := s.sim.Press(context.Background(), "toggle"); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 5*time.Second, dev+" "+to, func() bool { return state(dev) == to })
		return src
	}

	inProgress("disable-me", "hall_light")
	dis, isErr := callTool(t, c, "pilothouse_rule_disable", map[string]any{"name": "disable-me"})
	if isErr || dis["rule"].(map[string]any)["cancelled_runs"] != 1.0 || !strings.Contains(js(dis), "will not run") {
		t.Errorf("disable: %s", js(dis))
	}

	inProgress("remove-me", "porch_light")
	rm, isErr := callTool(t, c, "pilothouse_rule_remove", map[string]any{"name": "remove-me"})
	if isErr || rm["cancelled_runs"] != 1.0 || !strings.Contains(js(rm), "will not run") {
		t.Errorf("remove: %s", js(rm))
	}

	src := inProgress("replace-me", "living_plug")
	changed := prog(t, strings.Replace(src, `"1h"`, `"2h"`, 1))
	// Not asked to replace: it says beforehand what it would replace and
	// cancel, and changes nothing.
	dep := execute(t, c, map[string]any{"program": changed})
	if rep, _ := dep["replaces"].(map[string]any); dep["outcome"].(map[string]any)["status"] != "rule_exists" || rep["rule"] != "replace-me" ||
		rep["runs_in_progress"] != 1.0 || !strings.Contains(js(dep["outcome"]), "would cancel its 1 run in progress") {
		t.Errorf("replace not asked for: %s", js(dep))
	}
	dep = execute(t, c, map[string]any{"program": changed, "input": map[string]any{"install": map[string]any{"replace": true}}})
	if w := js(dep["output"].(map[string]any)["warnings"]); !strings.Contains(w, `"code":"replaced_rule"`) || !strings.Contains(w, "1 run of the replaced rule") {
		t.Errorf("replace with a run in progress: warnings %s", w)
	}
}

// TestIdenticalRedeployCancelsNothing: deploying the installed program
// again with the same input changes nothing: its run in progress (the
// light back off in an hour) survives, and the answer says unchanged
// (issue 31: "turn off in 2 minutes" was lost).
func TestIdenticalRedeployCancelsNothing(t *testing.T) {
	s, c := ownerStack(t)
	src := `{"name": "keep-me", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "ON"}}, {"id": "later", "delay": "1h"},
	            {"id": "off", "call": "porch_light.set", "args": {"state": "OFF"}}]}`
	deployed(t, c, src)
	if err := s.sim.Press(context.Background(), "toggle"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the porch light on", func() bool {
		got := call(t, c, "pilotage_lookup", map[string]any{"verb": "get", "id": "porch_light.state"})
		return got["live"].(map[string]any)["value"] == "ON"
	})
	dep := execute(t, c, map[string]any{"program": prog(t, src)})
	out := dep["output"].(map[string]any)
	if out["unchanged"] != true || out["replaced"] != false || strings.Contains(js(out), "replaced_rule") {
		t.Fatalf("identical re-deploy: %s", js(dep))
	}
	// Validating a changed version says beforehand what deploying it
	// would replace and cancel; the same version says nothing.
	if v := validate(t, c, strings.Replace(src, `"1h"`, `"2h"`, 1)); !strings.Contains(js(v["diagnostics"]), "would replace it") ||
		!strings.Contains(js(v["diagnostics"]), "1 run in progress now would be cancelled") {
		t.Errorf("validate of a changed version: %s", js(v["diagnostics"]))
	}
	if v := validate(t, c, src); strings.Contains(js(v["diagnostics"]), "replaced_rule") {
		t.Errorf("validate of the installed version: %s", js(v["diagnostics"]))
	}
	dis, isErr := callTool(t, c, "pilothouse_rule_disable", map[string]any{"name": "keep-me"})
	if isErr || dis["rule"].(map[string]any)["cancelled_runs"] != 1.0 {
		t.Errorf("the run in progress did not survive the identical re-deploy: %s", js(dis))
	}
}

// TestSecondInputIsASecondRule: a reusable program deployed again with
// another input installs a second rule (named after that input) beside
// the first instead of silently replacing it; the same input again
// changes nothing.
func TestSecondInputIsASecondRule(t *testing.T) {
	_, c := ownerStack(t)
	hall := map[string]any{"sensor": "hall_motion.occupancy", "light": "hall_light.set"}
	porch := map[string]any{"sensor": "hall_motion.occupancy", "light": "porch_light.set"}
	deploy := func(input map[string]any) map[string]any {
		dep := execute(t, c, map[string]any{"program": prog(t, motionLight), "input": input})
		if dep["outcome"].(map[string]any)["ok"] != true || strings.Contains(js(dep), "replaced_rule") {
			t.Fatalf("deploy: %s", js(dep))
		}
		return dep["output"].(map[string]any)
	}
	if out := deploy(hall); out["rule"] != "motion-light" {
		t.Errorf("first deploy: %s", js(out))
	}
	second := deploy(porch)
	if second["rule"] != "motion-light-porch_light-hall_motion" || second["replaced"] != false {
		t.Errorf("second input: %s", js(second))
	}
	if again := deploy(porch); again["rule"] != second["rule"] || again["unchanged"] != true {
		t.Errorf("the same input again: %s", js(again))
	}
	rules, _ := callTool(t, c, "pilothouse_rules", map[string]any{})
	for _, want := range []string{`"name":"motion-light"`, `"hall_light.set"`, `"name":"motion-light-porch_light-hall_motion"`, `"porch_light.set"`} {
		if !strings.Contains(js(rules), want) {
			t.Errorf("rules lack %s: %s", want, js(rules))
		}
	}
}

// TestNoRunsCancelledIsCounted: disabling or removing a rule with no run
// in progress answers cancelled_runs 0, as the tools' descriptions say,
// not a missing count.
func TestNoRunsCancelledIsCounted(t *testing.T) {
	_, c := ownerStack(t)
	for _, tc := range []struct{ name, tool string }{
		{"idle-disable", "pilothouse_rule_disable"},
		{"idle-remove", "pilothouse_rule_remove"},
	} {
		deployed(t, c, `{"name": "`+tc.name+`", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
		  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "ON"}}]}`)
		got, isErr := callTool(t, c, tc.tool, map[string]any{"name": tc.name})
		if n, ok := got["cancelled_runs"]; isErr || !ok || n != 0.0 {
			t.Errorf("%s: want cancelled_runs 0: %s", tc.tool, js(got))
		}
	}
}
