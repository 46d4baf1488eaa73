package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/storage"
)

// motionLight is the reusable motion light of issue 16 as an assistant
// writes it after reading the guides: the sensor, the light and the hold
// time are params; the first two are catalog references. The rules
// package's tests validate the same program.
var motionLight = rulesProgram("motion-light")

// rulesProgram reads a program the rules package's tests validate too.
func rulesProgram(name string) string {
	b, err := os.ReadFile("../../rules/testdata/programs/" + name + ".json")
	if err != nil {
		panic(err)
	}
	return string(b)
}

func execute(t *testing.T, c *client.Client, args map[string]any) map[string]any {
	t.Helper()
	args["language"] = "automation/1"
	out, isErr := callTool(t, c, "pilotage_execute", args)
	if isErr {
		t.Fatalf("execute: request error %v", out)
	}
	return out
}

func validate(t *testing.T, c *client.Client, src string) map[string]any {
	t.Helper()
	out, isErr := callTool(t, c, "pilotage_validate", map[string]any{"language": "automation/1", "program": prog(t, src)})
	if isErr {
		t.Fatalf("validate: request error %v", out)
	}
	return out
}

// step finds the step with id in a plan's or trace's steps.
func step(v any, id string) map[string]any {
	m, _ := v.(map[string]any)
	steps, _ := m["steps"].([]any)
	for _, s := range steps {
		if s := s.(map[string]any); s["id"] == id {
			return s
		}
	}
	return nil
}

// diagAt returns the diagnostic with code at path, or nil.
func diagAt(out map[string]any, code, path string) map[string]any {
	ds, _ := out["diagnostics"].([]any)
	for _, d := range ds {
		if d := d.(map[string]any); d["code"] == code && d["path"] == path {
			return d
		}
	}
	return nil
}

func js(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestCatalogParamsOverMCP: a reusable motion light validates (its plan
// the worst its constraints admit), test-runs and deploys bound to real
// ids (the rule's plan and traces show them), is refused with an
// input_binding finding at the member for an id that does not fit, and
// fires on the real MQTT motion sensor.
func TestCatalogParamsOverMCP(t *testing.T) {
	s, c := ownerStack(t)

	v := validate(t, c, motionLight)
	if v["valid"] != true || len(v["diagnostics"].([]any)) != 0 {
		t.Fatalf("validate: %s", js(v))
	}
	on := step(v["plan"], "on")
	if on["risk"] != "control" || on["calls"] != nil || !strings.Contains(on["description"].(string), "{{ params.light }}") {
		t.Errorf("unbound plan step: %s", js(on))
	}

	input := map[string]any{"sensor": "hall_motion.occupancy", "light": "porch_light.set", "hold": "90s"}
	// The scenario's timeline ends the motion, so the wait is met after
	// the bound hold (90s) on the virtual clock and the light goes off.
	testInput := map[string]any{"scenario": map[string]any{"timeline": []any{
		map[string]any{"at": "10s", "state": map[string]any{"hall_motion.occupancy": false}}}}}
	for k, v := range input {
		testInput[k] = v
	}
	tr := execute(t, c, map[string]any{"program": prog(t, motionLight), "test_run": true, "input": testInput})
	if oc := tr["outcome"].(map[string]any); oc["status"] != "success" || js(step(tr["trace"], "on")["calls"]) != `["porch_light.set"]` ||
		js(step(tr["trace"], "off")["calls"]) != `["porch_light.set"]` || step(tr["trace"], "off")["t_ms"] != 100000.0 {
		t.Fatalf("test run: %s", js(tr))
	}
	if plan := tr["output"].(map[string]any)["plan"]; js(step(plan, "on")["calls"]) != `["porch_light.set"]` || plan.(map[string]any)["max_risk"] != "control" {
		t.Errorf("test run plan: %s", js(plan))
	}

	input["hold"] = "1s"
	dep := execute(t, c, map[string]any{"program": prog(t, motionLight), "input": input})
	if oc := dep["outcome"].(map[string]any); oc["ok"] != true {
		t.Fatalf("deploy: %s", js(dep))
	}
	out := dep["output"].(map[string]any)
	if js(step(out["plan"], "on")["calls"]) != `["porch_light.set"]` || !strings.Contains(js(step(dep["trace"], "bind")), `"references":{"light":"porch_light.set","sensor":"hall_motion.occupancy"}`) {
		t.Errorf("deploy output/trace: %s", js(dep))
	}
	ref := out["program_ref"].(string)
	got, _ := callTool(t, c, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": ref})
	en := got["entry"].(map[string]any)
	if en["risk"] != "control" || !strings.Contains(js(en["input_schema"]), `"catalog":{"accepts":{"state":["ON","OFF"]},"kind":"action"`) {
		t.Errorf("promoted entry: %s", js(en))
	}

	passReferencesOn(t, c, ref)

	for _, tc := range []struct {
		name, member, value, msg string
	}{
		{"type", "light", "living_plug.set", `light = "living_plug.set": its device is not of type light (living_plug is a switch)`},
		{"unknown", "light", "porch_lamp.set", `light = "porch_lamp.set": it is not in the catalog`},
		{"reports", "sensor", "hall_motion.illuminance", "it never reports true"},
		{"format", "hold", "3 minutes", "params: '3 minutes' is not valid duration"},
		{"missing", "light", "", `params needs "light": the id of an action of a light device accepting state ["ON","OFF"], risk at most control`},
	} {
		bad := map[string]any{"sensor": "hall_motion.occupancy", "light": "porch_light.set"}
		bad[tc.member] = tc.value
		if tc.value == "" {
			delete(bad, tc.member)
		}
		r := execute(t, c, map[string]any{"program": prog(t, motionLight), "input": bad})
		d := diagAt(r, "input_binding", "/"+tc.member)
		if oc := r["outcome"].(map[string]any); oc["status"] != "validation_error" || d == nil || !strings.Contains(d["message"].(string), tc.msg) {
			t.Errorf("%s: %s", tc.name, js(r))
		}
	}

	// The rule fires on the sensor it was bound to and calls the light it
	// was bound to; its trace shows the ids.
	firing := motionFiring(t, s, c, "motion-light")
	if err := s.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": false}); err != nil {
		t.Fatal(err)
	}
	var ft map[string]any
	testutil.Eventually(t, 10*time.Second, "the firing to end", func() bool {
		ft, _ = callTool(t, c, "pilotage_trace", map[string]any{"run_id": firing})
		return ft["outcome"].(map[string]any)["status"] == "success"
	})
	if js(step(ft["trace"], "on")["calls"]) != `["porch_light.set"]` || js(step(ft["trace"], "off")["calls"]) != `["porch_light.set"]` {
		t.Errorf("firing trace: %s", js(ft))
	}
	rules, _ := callTool(t, c, "pilothouse_rules", map[string]any{"last_firings": 0})
	if !strings.Contains(js(rules), `"params":{"hold":"1s","light":"porch_light.set","sensor":"hall_motion.occupancy"}`) {
		t.Errorf("rules listing: %s", js(rules))
	}

	// The promoted program deployed again by its ref with other ids: the
	// same body, bound anew, as a second rule beside the first.
	again := execute(t, c, map[string]any{"program_ref": ref, "input": map[string]any{"sensor": "front_door.contact", "light": "hall_light.set"}})
	ao, _ := again["output"].(map[string]any)
	if ao["program_ref"] != ref || ao["replaced"] != false || ao["rule"] != "motion-light-hall_light-front_door" || js(step(ao["plan"], "on")["calls"]) != `["hall_light.set"]` || js(ao["triggers"]) != `[{"entity":"front_door.contact","id":"motion","kind":"state"}]` {
		t.Errorf("deploy by program_ref: %s", js(again))
	}
}

// TestTemplatedIDDiagnostic: the first attempt gets one finding per
// id position, each saying how to declare a reference parameter (and none
// that sends the assistant to pilotage_lookup).
func TestTemplatedIDDiagnostic(t *testing.T) {
	_, c := ownerStack(t)
	v := validate(t, c, `{"name":"reusable","params":{"type":"object","properties":{"sensor":{"type":"string"},"light":{"type":"string"}}},
	  "triggers":[{"id":"m","state":"{{ params.sensor }}","to":true}],
	  "steps":[{"id":"on","call":"{{ params.light }}","args":{"state":"ON"}}]}`)
	ds := v["diagnostics"].([]any)
	if v["valid"] != false || len(ds) != 2 {
		t.Fatalf("%s", js(v))
	}
	for _, d := range ds {
		d := d.(map[string]any)
		hint, _ := d["hint"].(string)
		if d["code"] != "templated_id" || !strings.Contains(hint, `"catalog": {"kind": `) || strings.Contains(hint, "pilotage_lookup") {
			t.Errorf("%s", js(d))
		}
	}
}

// TestBoundIDsFollowScope: a deployer scoped to the hall cannot bind an id
// outside its scope (refused like an id that does not exist), and does not
// see a rule the owner bound to one.
func TestBoundIDsFollowScope(t *testing.T) {
	principals := []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true},
		{Name: "hall", TokenHash: engine.HashToken("hall-token"), Deploy: true, Scope: engine.Scope{Areas: []string{"hall"}}},
	}
	s := newHTTPStack(t, principals, storage.Options{})
	owner, hall := s.client("owner-token"), s.client("hall-token")
	in := func(light string) map[string]any {
		return map[string]any{"sensor": "hall_motion.occupancy", "light": light}
	}
	hidden := execute(t, hall, map[string]any{"program": prog(t, motionLight), "input": in("porch_light.set")})
	absent := execute(t, hall, map[string]any{"program": prog(t, motionLight), "input": in("attic_light.set")})
	hd, ad := diagAt(hidden, "input_binding", "/light"), diagAt(absent, "input_binding", "/light")
	if hd == nil || ad == nil || strings.ReplaceAll(hd["message"].(string), "porch", "attic") != ad["message"] || hd["hint"] != ad["hint"] {
		t.Errorf("an invisible id must read like a missing one:\n%s\n%s", js(hd), js(ad))
	}
	if r := execute(t, hall, map[string]any{"program": prog(t, strings.Replace(motionLight, "motion-light", "hall-motion", 1)), "input": in("hall_light.set")}); r["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("an id in scope: %s", js(r))
	}
	if r := execute(t, owner, map[string]any{"program": prog(t, motionLight), "input": in("porch_light.set")}); r["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("owner: %s", js(r))
	}
	if names := ruleNames(t, hall); contains(names, "motion-light") || !contains(names, "hall-motion") {
		t.Errorf("the hall deployer's rules: %v", names)
	}
}

// passReferencesOn: another program calls the promoted motion light with
// ids of its own (checked against the light's constraints when it is
// validated); its trace shows the ids the callee used.
func passReferencesOn(t *testing.T, c *client.Client, ref string) {
	t.Helper()
	callerOf := func(light string) string {
		return `{"name":"hall-by-remote","triggers":[{"id":"b","event":"bedroom_remote.action","value":"on"}],
		  "steps":[{"id":"run","call":"` + ref + `","args":{"sensor":"hall_motion.occupancy","light":"` + light + `","hold":"1s"}}]}`
	}
	v := validate(t, c, callerOf("living_plug.set"))
	if d := diagAt(v, "bad_arguments", "/steps/0/args/light"); v["valid"] != false || d == nil || !strings.Contains(d["message"].(string), "its device is not of type light") {
		t.Errorf("a switch passed as the light: %s", js(v))
	}
	r := execute(t, c, map[string]any{"program": prog(t, callerOf("hall_light.set")), "test_run": true,
		"input": map[string]any{"scenario": map[string]any{"trigger": "b", "value": "on"}}})
	if oc := r["outcome"].(map[string]any); oc["ok"] != true || js(step(r["trace"], "run/on")["calls"]) != `["hall_light.set"]` || js(step(r["trace"], "run/off")["calls"]) != `["hall_light.set"]` {
		t.Errorf("the callee's trace: %s", js(r))
	}
}

// TestCatalogParamsInSinceAndValueListsOverMCP: since(params.x) reads
// the bound entry like state(params.x), and an event trigger with a value
// list binds its "{{ params.x }}" id; a non-fitting id is input_binding.
func TestCatalogParamsInSinceAndValueListsOverMCP(t *testing.T) {
	c := newHTTPStackDevs(t, engine.Config{}, storage.Options{}, devices.Options{Logger: quiet(),
		Notify: []devices.NotifyChannel{{ID: "notify.phone", Name: "Phone", Topic: "pilothouse/notify/phone"}}}).client("")
	doorAlert := rulesProgram("door-alert")
	if v := validate(t, c, doorAlert); v["valid"] != true || len(v["diagnostics"].([]any)) != 0 {
		t.Fatalf("validate: %s", js(v))
	}
	input := map[string]any{"door": "front_door.contact", "remote": "bedroom_remote.action",
		"scenario": map[string]any{"value": "toggle_triple", "timeline": []any{
			map[string]any{"at": "-20m", "state": map[string]any{"front_door.contact": false}},
			map[string]any{"at": "10s", "event": map[string]any{"bedroom_remote.action": "on_hold"}}}}}
	tr := execute(t, c, map[string]any{"program": prog(t, doorAlert), "test_run": true, "input": input})
	out, _ := tr["output"].(map[string]any)
	calls, _ := out["calls"].([]any)
	if oc := tr["outcome"].(map[string]any); oc["status"] != "success" || len(calls) != 1 || !strings.Contains(js(calls[0]), `"message":"open 20 min"`) {
		t.Fatalf("test run: %s", js(tr))
	}
	if d := step(out["plan"], "press")["description"]; d != `When event bedroom_remote.action arrives with "toggle_double" or "toggle_triple"` {
		t.Errorf("bound plan trigger: %v", d)
	}
	input["door"] = "hall_light.set"
	bad := execute(t, c, map[string]any{"program": prog(t, doorAlert), "test_run": true, "input": input})
	if diagAt(bad, "input_binding", "/door") == nil {
		t.Errorf("a door that is an action: %s", js(bad))
	}
}
