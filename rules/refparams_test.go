package rules

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/validate"
)

// installed is an InstalledRules of validated programs (as a house's
// scheduler would hold them).
type installed []*Compiled

func (in installed) Watching(entity string) []InstalledTrigger {
	var out []InstalledTrigger
	for _, c := range in {
		ts := c.Triggers()
		for i := range ts {
			if ts[i].Entity() == entity {
				out = append(out, InstalledTrigger{Rule: c.Name(), Trigger: &ts[i], Calls: c.Calls(), Selects: c.CallSelectors()})
			}
		}
	}
	return out
}

// installedRule validates src against the demo catalog as an installed
// rule.
func installedRule(src string) installed {
	res, err := Validate([]byte(src), demoCatalog(), ValidateOptions{})
	if err != nil || !res.Valid {
		panic("installed rule does not validate: " + src)
	}
	return installed{res.Compiled}
}

// taggedCatalog is the demo catalog with device types and areas, as the
// live catalog tags devices.
func taggedCatalog() *mapCatalog {
	c := demoCatalog()
	tags := map[string][]string{
		"hall_light": {"type:light", "area:hall"}, "porch_light": {"type:light", "area:porch"},
		"hall_motion": {"type:binary_sensor", "area:hall"}, "front_door": {"type:binary_sensor", "area:hall"},
		"front_lock": {"type:lock", "area:hall"}, "garage_door": {"type:cover", "area:garage"},
		"living_plug": {"type:switch", "area:living"}, "living_thermostat": {"type:climate", "area:living"},
		"bedroom_remote": {"type:remote", "area:bedroom"}, "outdoor_weather": {"type:sensor", "area:garden"},
	}
	for id, t := range tags {
		c.m[id].Tags = t
	}
	// States carry what they detect or measure (devices' z2mClasses).
	for id, class := range map[string]string{"hall_motion.occupancy": "occupancy", "front_door.contact": "door",
		"hall_motion.illuminance": "illuminance", "living_plug.power": "power", "outdoor_weather.temperature": "temperature"} {
		c.m[id].Tags = []string{"class:" + class}
	}
	return c
}

// motionLight is the reusable motion light an assistant writes: the
// sensor, the light and the hold time are params (the MCP tests deploy
// the same program).
var motionLight = testProgram("motion-light")

// testProgram reads testdata/programs/name.json, a program the tests of
// other packages share.
func testProgram(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", "programs", name+".json"))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func planStep(p *pilotage.Plan, id string) *pilotage.PlanStep {
	for i := range p.Steps {
		if p.Steps[i].ID == id {
			return &p.Steps[i]
		}
	}
	return nil
}

func mustValidate(t *testing.T, src string, o ValidateOptions) *Result {
	t.Helper()
	res, err := Validate([]byte(src), taggedCatalog(), o)
	if err != nil {
		t.Fatal(err)
	}
	checkClosed(t, res.Diagnostics)
	return res
}

func TestRefParamsUnboundPlanIsTheWorstCase(t *testing.T) {
	res := mustValidate(t, motionLight, ValidateOptions{})
	if !res.Valid {
		t.Fatalf("invalid: %s", diagString(res.Diagnostics))
	}
	on := planStep(res.Plan, "on")
	if on.Risk != pilotage.RiskControl || len(on.Calls) != 0 || !strings.Contains(on.Description, "Call {{ params.light }} with state \"ON\" (catalog param: an action of a light device") {
		t.Errorf("on: %+v", on)
	}
	if d := planStep(res.Plan, "motion").Description; d != "When {{ params.sensor }} changes to true" {
		t.Errorf("trigger: %q", d)
	}
	if len(res.Compiled.Refs) != 0 || res.Plan.MaxRisk != pilotage.RiskControl {
		t.Errorf("refs %v, max risk %s", res.Compiled.Refs, res.Plan.MaxRisk)
	}
	var names []string
	for _, r := range res.Compiled.RefParams() {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "light,sensor" {
		t.Errorf("ref params %v", names)
	}
	// Without max_risk nothing bounds what a bound action may do.
	open := strings.Replace(motionLight, `, "max_risk": "control"`, "", 1)
	if p := mustValidate(t, open, ValidateOptions{}).Plan; p.MaxRisk != pilotage.RiskSecurity || !p.MaxRiskHints.OpenWorld {
		t.Errorf("unbounded: %s %+v", p.MaxRisk, p.MaxRiskHints)
	}
}

func TestRefParamsBound(t *testing.T) {
	bind := map[string]any{"sensor": "hall_motion.occupancy", "light": "hall_light.set", "hold": "90s"}
	res := mustValidate(t, motionLight, ValidateOptions{Bind: bind})
	if !res.Valid {
		t.Fatalf("invalid: %s", diagString(res.Diagnostics))
	}
	c := res.Compiled
	if strings.Join(c.Refs, ",") != "hall_light.set,hall_motion.occupancy" {
		t.Errorf("refs %v", c.Refs)
	}
	if e := c.Triggers()[0].Entity(); e != "hall_motion.occupancy" {
		t.Errorf("trigger entity %q", e)
	}
	on := planStep(res.Plan, "on")
	if len(on.Calls) != 1 || on.Calls[0] != "hall_light.set" || on.Description != `Call hall_light.set with state "ON"` {
		t.Errorf("on: %+v", on)
	}
	if d := planStep(res.Plan, "quiet").Description; d != "Wait until hall_motion.occupancy is false for 1 minute and 30 seconds (at most 1 hour, then the run times out)" {
		t.Errorf("quiet: %q", d)
	}
	if strings.Join(c.Calls(), ",") != "hall_light.set" {
		t.Errorf("calls %v", c.Calls())
	}
}

func TestRefParamsBindingFindings(t *testing.T) {
	loose := strings.NewReplacer(`"type": "binary_sensor", "reports": [true, false]`, "", `"type": "light", "accepts": {"state": ["ON", "OFF"]}, "max_risk": "control"`, "").Replace(motionLight)
	loose = strings.ReplaceAll(loose, `"kind": "state", }`, `"kind": "state"}`)
	loose = strings.ReplaceAll(loose, `"kind": "action", }`, `"kind": "action"}`)
	good := map[string]any{"sensor": "hall_motion.occupancy", "light": "hall_light.set"}
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for a, b := range good {
			m[a] = b
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name, src string
		bind      map[string]any
		path      string
		msg, hint string
	}{
		{"missing", motionLight, with("light", nil), "/light", `params needs "light": the id of an action of a light device`, "fits: hall_light.set, porch_light.set"},
		{"not_a_string", motionLight, with("light", 3.0), "/light", "light must be a catalog id (a non-empty string), got 3", ""},
		{"unknown", motionLight, with("light", "hall_lite.set"), "/light", `light = "hall_lite.set": it is not in the catalog`, `did you mean "hall_light.set"?`},
		{"wrong_kind", motionLight, with("light", "hall_light.state"), "/light", "it is a state", ""},
		{"wrong_type", motionLight, with("light", "living_plug.set"), "/light", "its device is not of type light (living_plug is a switch)", ""},
		{"tag", strings.Replace(motionLight, `"type": "light", `, `"type": "light", "tag": "area:porch", `, 1), with("light", "hall_light.set"), "/light", "neither it nor its device is tagged area:porch", "fits: porch_light.set"},
		{"reports", motionLight, with("sensor", "hall_motion.illuminance"), "/sensor", "it never reports true", "fits: front_door.contact, hall_motion.occupancy"},
		{"type", motionLight, with("sensor", "hall_light.state"), "/sensor", "its device is not of type binary_sensor (hall_light is a light)", ""},
		{"max_risk", strings.Replace(motionLight, `"type": "light", `, "", 1), with("light", "garage_door.set"), "/light", "its risk is security, more than control", ""},
		{"filter_after_binding", loose, with("sensor", "hall_light.state"), "/sensor", `sensor = "hall_light.state": hall_light.state never reports true`, ""},
		{"args_after_binding", loose, with("light", "notify.phone"), "/light", `light = "notify.phone": notify.phone`, ""},
		{"duration_after_binding", motionLight, with("hold", "3 minutes"), "/hold", `hold = "3 minutes": used as the wait for at /steps/1/wait/for, it does not make a duration`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pre := mustValidate(t, tc.src, ValidateOptions{})
			if !pre.Valid {
				t.Fatalf("unbound program invalid: %s", diagString(pre.Diagnostics))
			}
			res := mustValidate(t, tc.src, ValidateOptions{Bind: tc.bind})
			if res.Valid {
				t.Fatalf("valid with %v", tc.bind)
			}
			for _, d := range res.Diagnostics {
				if d.Code == CodeInputBinding && d.Path == tc.path && strings.Contains(d.Message, tc.msg) && strings.Contains(d.Hint, tc.hint) {
					return
				}
			}
			t.Errorf("no input_binding at %s with %q / %q: %s", tc.path, tc.msg, tc.hint, diagString(res.Diagnostics))
		})
	}
}

func TestRefParamsDeclaration(t *testing.T) {
	decl := func(prop string) string {
		return prog(`[{"id":"x","stop":""}]`, `"params":{"type":"object","properties":{"light":`+prop+`}}`)
	}
	for _, tc := range []struct {
		name, prop, code, path, hint string
	}{
		{"kind_missing", `{"catalog":{"type":"light"}}`, core.CodeMissingField, "/params/properties/light/catalog", ""},
		{"kind_unknown", `{"catalog":{"kind":"actoin"}}`, core.CodeBadParams, "/params/properties/light/catalog/kind", `did you mean "action"?`},
		{"type_unknown", `{"catalog":{"kind":"action","type":"lights"}}`, core.CodeBadParams, "/params/properties/light/catalog/type", `did you mean "light"`},
		{"unknown_member", `{"catalog":{"kind":"action","domain":"light"}}`, core.CodeUnknownField, "/params/properties/light/catalog/domain", "allowed here: kind, type, tag, accepts, reports, max_risk"},
		{"accepts_on_state", `{"catalog":{"kind":"state","accepts":{"state":"ON"}}}`, core.CodeBadParams, "/params/properties/light/catalog/accepts", "use reports"},
		{"max_risk_unknown", `{"catalog":{"kind":"action","max_risk":"low"}}`, core.CodeBadParams, "/params/properties/light/catalog/max_risk", "one of read, control, security, external"},
		{"not_a_string", `{"type":"integer","catalog":{"kind":"action"}}`, core.CodeBadParams, "/params/properties/light/type", ""},
		{"selector", `{"type":"string","selector":{"entity":{"domain":"light"}}}`, core.CodeBadParams, "/params/properties/light/selector", `"catalog": {"kind": "action"`},
		{"default_format", `{"type":"string","format":"duration","default":"3 minutes"}`, core.CodeBadParams, "/params/properties/light/default", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustValidate(t, decl(tc.prop), ValidateOptions{})
			for _, d := range res.Diagnostics {
				if d.Code == tc.code && d.Path == tc.path && strings.Contains(d.Hint, tc.hint) {
					return
				}
			}
			t.Errorf("no %s at %s (hint %q): %s", tc.code, tc.path, tc.hint, diagString(res.Diagnostics))
		})
	}
}

func TestTemplatedIDHint(t *testing.T) {
	src := prog(`[{"id":"x","call":"{{ params.light }}","args":{"state":"ON"}}]`, `"params":{"type":"object","properties":{"light":{"type":"string"}}}`)
	res := mustValidate(t, src, ValidateOptions{})
	if len(res.Diagnostics) != 1 {
		t.Fatalf("want exactly the templated_id finding (no unknown_name): %s", diagString(res.Diagnostics))
	}
	d := res.Diagnostics[0]
	want := `declare it in params: "properties": {"light": {"type": "string", "catalog": {"kind": "action", "type": "light", "max_risk": "control"}}}; execute binds it to an id`
	if d.Code != core.CodeTemplatedID || d.Hint != want || strings.Contains(d.Hint, "pilotage_lookup") {
		t.Errorf("%+v", d)
	}
	// state(params.x) of a param that is not a reference says how to
	// declare one.
	res = mustValidate(t, prog(`[{"id":"x","if":"state(params.s) == true","then":[]}]`, `"params":{"type":"object","properties":{"s":{"type":"string"}}}`), ValidateOptions{})
	if len(res.Diagnostics) != 1 || res.Diagnostics[0].Code != core.CodeNonConstantRef || !strings.Contains(res.Diagnostics[0].Hint, `"catalog": {"kind": "state"}`) {
		t.Errorf("state(params.s): %s", diagString(res.Diagnostics))
	}
}

func TestParamsFormats(t *testing.T) {
	res := mustValidate(t, prog(`[{"id":"x","delay":"{{ params.hold }}"}]`, `"params":{"type":"object","properties":{"hold":{"type":"string","format":"duration"}}}`), ValidateOptions{})
	if !res.Valid {
		t.Fatal(diagString(res.Diagnostics))
	}
	for _, tc := range []struct {
		hold string
		ok   bool
	}{{"90s", true}, {"PT2M", true}, {"1h30m", true}, {"3 minutes", false}} {
		ds := CheckParams(res.Compiled, map[string]any{"hold": tc.hold}, "")
		if (len(ds) == 0) != tc.ok || (!tc.ok && ds[0].Path != "/hold") {
			t.Errorf("%q: %s", tc.hold, diagString(ds))
		}
	}
}

func TestRefParamsAtRunTime(t *testing.T) {
	// A promoted automation runs unbound as a callee: the ids its caller
	// passed are resolved from its params, and the trace shows them.
	res := mustValidate(t, motionLight, ValidateOptions{})
	w := NewSimWorld(func(string) (any, bool) { return false, true }, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), Scenario{}, nil)
	out := Run(context.Background(), res.Compiled, w, RunInput{Params: map[string]any{"sensor": "hall_motion.occupancy", "light": "hall_light.set"}, SkipConditions: true, Trigger: TriggerFire{ID: "motion", Value: true}})
	var ids []string
	for _, c := range w.Calls() {
		ids = append(ids, c.ID)
	}
	if strings.Join(ids, ",") != "hall_light.set,hall_light.set" {
		t.Fatalf("calls %v: %+v", ids, out.Outcome)
	}
	for _, s := range out.Steps {
		if s.ID == "on" && (len(s.Calls) != 1 || s.Calls[0] != "hall_light.set") {
			t.Errorf("trace calls %v", s.Calls)
		}
		if s.ID == "quiet" && s.Input.(map[string]any)["state"] != "hall_motion.occupancy" {
			t.Errorf("wait input %v", s.Input)
		}
	}
	out = Run(context.Background(), res.Compiled, w, RunInput{Params: map[string]any{}, SkipConditions: true, Trigger: TriggerFire{ID: "motion"}})
	if out.Outcome.OK || !strings.Contains(out.Outcome.Error, `catalog param "light" is not bound`) {
		t.Errorf("unbound: %+v", out.Outcome)
	}
}

func TestOverlappingRules(t *testing.T) {
	other := `{"name":"other","triggers":[{"id":"m","state":"hall_motion.occupancy","to":true}],"steps":[{"id":"on","call":"hall_light.set","args":{"brightness":90}}]}`
	in := installedRule(other)
	for _, tc := range []struct {
		name, src string
		warn      bool
	}{
		{"same", prog(`[{"id":"x","call":"hall_light.set","args":{"state":"ON"}}]`), true},
		{"other_value", `{"name":"t","triggers":[{"id":"go","state":"hall_motion.occupancy","to":false}],"steps":[{"id":"x","call":"hall_light.set","args":{"state":"OFF"}}]}`, false},
		{"other_device", prog(`[{"id":"x","call":"porch_light.set","args":{"state":"ON"}}]`), false},
		{"itself", strings.Replace(prog(`[{"id":"x","call":"hall_light.set","args":{"state":"ON"}}]`), `"name":"t"`, `"name":"other"`, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustValidate(t, tc.src, ValidateOptions{Installed: in})
			found := false
			for _, d := range res.Diagnostics {
				found = found || d.Code == core.CodeOverlappingRule
			}
			if found != tc.warn || !res.Valid {
				t.Errorf("valid %v, warning %v, want %v: %s", res.Valid, found, tc.warn, diagString(res.Diagnostics))
			}
		})
	}
	res := mustValidate(t, prog(`[{"id":"x","call":"hall_light.set","args":{"state":"ON"}}]`), ValidateOptions{Installed: in})
	want := `rule "other" also calls hall_light.set when hall_motion.occupancy changes to true (its trigger "m"): the two rules race and the last command wins`
	if len(res.Diagnostics) != 1 || res.Diagnostics[0].Message != want || res.Diagnostics[0].Path != "/steps/0/call" {
		t.Errorf("%s", diagString(res.Diagnostics))
	}
	// At most maxOverlaps rules are named per call.
	var many installed
	for _, n := range []string{"o1", "o2", "o3", "o4"} {
		many = append(many, installedRule(strings.Replace(other, `"name":"other"`, `"name":"`+n+`"`, 1))...)
	}
	if res := mustValidate(t, prog(`[{"id":"x","call":"hall_light.set","args":{"state":"ON"}}]`), ValidateOptions{Installed: many}); len(res.Diagnostics) != validate.MaxOverlaps {
		t.Errorf("many: %s", diagString(res.Diagnostics))
	}
	// Event triggers overlap when their value lists share a gesture.
	taps := installedRule(`{"name":"taps","triggers":[{"id":"p","event":"bedroom_remote.action","value":["toggle_double","toggle_triple"]}],"steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}}]}`)
	for value, warn := range map[string]bool{`"toggle_triple"`: true, `["on_double","toggle_double"]`: true, `"toggle"`: false, `["on","on_double"]`: false} {
		src := `{"name":"t","triggers":[{"id":"go","event":"bedroom_remote.action","value":` + value + `}],"steps":[{"id":"x","call":"porch_light.set","args":{"state":"OFF"}}]}`
		res := mustValidate(t, src, ValidateOptions{Installed: taps})
		if found := len(res.Diagnostics) == 1 && res.Diagnostics[0].Code == core.CodeOverlappingRule; found != warn || !res.Valid {
			t.Errorf("value %s: want a warning %v: %s", value, warn, diagString(res.Diagnostics))
		}
	}
	// A bound reference overlaps as its id does.
	bound := mustValidate(t, motionLight, ValidateOptions{Installed: in, Bind: map[string]any{"sensor": "hall_motion.occupancy", "light": "hall_light.set"}})
	if !bound.Valid || len(bound.Diagnostics) != 2 || bound.Diagnostics[0].Code != core.CodeOverlappingRule {
		t.Errorf("bound: %s", diagString(bound.Diagnostics))
	}
}

var _ = json.Marshal

func TestRefParamsPassedToAutomations(t *testing.T) {
	loose := strings.Replace(motionLight, `"type": "light", "accepts": {"state": ["ON", "OFF"]}, "max_risk": "control"`, `"max_risk": "external"`, 1)
	for _, tc := range []struct {
		name, callee, step, params string
		bind                       map[string]any
		code, path, msg            string
	}{
		{"constants", motionLight, `{"id":"x","call":"AUTO","args":{"sensor":"hall_motion.occupancy","light":"porch_light.set"}}`, "", nil, "", "", ""},
		{"constant_misfits", motionLight, `{"id":"x","call":"AUTO","args":{"sensor":"hall_motion.occupancy","light":"living_plug.set"}}`, "", nil,
			core.CodeBadArguments, "/steps/0/args/light", `"living_plug.set": its device is not of type light (living_plug is a switch); AUTO's light needs an action of a light device`},
		{"missing", motionLight, `{"id":"x","call":"AUTO","args":{"sensor":"hall_motion.occupancy"}}`, "", nil, core.CodeBadArguments, "/steps/0", `AUTO needs argument "light"`},
		{"dynamic", motionLight, `{"id":"x","call":"AUTO","args":{"sensor":"hall_motion.occupancy","light":"{{ trigger.id }}"}}`, "", nil, core.CodeTemplatedID, "/steps/0/args/light", "is a catalog reference"},
		{"passed_on", motionLight, `{"id":"x","call":"AUTO","args":{"sensor":"hall_motion.occupancy","light":"{{ params.l }}"}}`,
			`"l":{"catalog":{"kind":"action","type":"light","accepts":{"state":["ON","OFF","TOGGLE"]},"max_risk":"control"}}`, nil, "", "", ""},
		{"passed_on_too_wide", motionLight, `{"id":"x","call":"AUTO","args":{"sensor":"hall_motion.occupancy","light":"{{ params.l }}"}}`,
			`"l":{"catalog":{"kind":"action","max_risk":"control"}}`, nil, core.CodeBadArguments, "/steps/0/args/light", "params.l is an action, risk at most control; AUTO's light needs an action of a light device"},
		{"passed_on_bound", motionLight, `{"id":"x","call":"AUTO","args":{"sensor":"hall_motion.occupancy","light":"{{ params.l }}"}}`,
			`"l":{"catalog":{"kind":"action","type":"light","accepts":{"state":["ON","OFF"]},"max_risk":"control"}}`, map[string]any{"l": "porch_light.set"}, "", "", ""},
		{"body_checked_with_constants", loose, `{"id":"x","call":"AUTO","args":{"sensor":"hall_motion.occupancy","light":"notify.phone"}}`, "", nil,
			core.CodeBadArguments, "/steps/0/args/light", `with these arguments, AUTO would not run: light = "notify.phone": notify.phone needs argument "message"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			callee := mustValidate(t, tc.callee, ValidateOptions{})
			const ref = "automation.motion-light@0a1b2c"
			cat := taggedCatalog()
			cat.m[ref] = &pilotage.Entry{ID: ref, Kind: pilotage.KindAutomation, Callable: true, InputSchema: callee.Compiled.Params(),
				RiskHints: callee.Plan.MaxRiskHints, Risk: callee.Plan.MaxRisk}
			cat.ids = append(cat.ids, ref)
			params := ""
			if tc.params != "" {
				params = `"params":{"type":"object","properties":{` + tc.params + `}}`
			}
			src := strings.ReplaceAll(prog(`[`+tc.step+`]`, params), "AUTO", ref)
			src = strings.Replace(src, ",}", "}", 1)
			o := ValidateOptions{Automation: func(id string) (*Compiled, bool) { return callee.Compiled, id == ref }, Bind: tc.bind}
			res, err := Validate([]byte(src), cat, o)
			if err != nil {
				t.Fatal(err)
			}
			checkClosed(t, res.Diagnostics)
			if tc.code == "" {
				if !res.Valid {
					t.Fatalf("invalid: %s", diagString(res.Diagnostics))
				}
				if tc.name == "constants" {
					calleeTrace(t, res.Compiled, callee.Compiled, ref)
				}
				return
			}
			msg := strings.ReplaceAll(tc.msg, "AUTO", ref)
			for _, d := range res.Diagnostics {
				if d.Code == tc.code && d.Path == tc.path && strings.Contains(d.Message, msg) {
					return
				}
			}
			t.Errorf("no %s at %s with %q: %s", tc.code, tc.path, msg, diagString(res.Diagnostics))
		})
	}
}

// calleeTrace runs a caller of the motion light: the callee's calls go to
// the ids the caller passed, the caller references them, and the trace
// shows them.
func calleeTrace(t *testing.T, caller, callee *Compiled, ref string) {
	t.Helper()
	if !strings.Contains(strings.Join(caller.Refs, ","), "hall_motion.occupancy,porch_light.set") {
		t.Errorf("caller refs %v", caller.Refs)
	}
	w := NewSimWorld(func(string) (any, bool) { return false, true }, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), Scenario{}, nil)
	w.SetAutomation(ref, callee)
	out := Run(context.Background(), caller, w, RunInput{Trigger: TriggerFire{ID: "go", Value: true}})
	var got []string
	for _, s := range out.Steps {
		if len(s.Calls) > 0 {
			got = append(got, s.ID+"="+strings.Join(s.Calls, ","))
		}
	}
	if want := "x=" + ref + ",x/on=porch_light.set,x/off=porch_light.set"; strings.Join(got, ",") != want || !out.Outcome.OK {
		t.Errorf("trace calls %v, want %s (%+v)", got, want, out.Outcome)
	}
}

// TestCookbookCatalogParams: the cookbook's reusable motion light, as
// served, binds to the demo devices and test-runs with the real ids.
func TestCookbookCatalogParams(t *testing.T) {
	g, _ := GuideByID("cookbook")
	var src string
	for _, p := range guidePrograms(g.Body) {
		if strings.Contains(p, `"name": "motion-light"`) {
			src = p
		}
	}
	if src == "" {
		t.Fatal("no reusable motion light in the cookbook")
	}
	res := mustValidate(t, src, ValidateOptions{Bind: map[string]any{"sensor": "hall_motion.occupancy", "light": "porch_light.set", "hold": "3m"}})
	if !res.Valid {
		t.Fatalf("bound: %s", diagString(res.Diagnostics))
	}
	w := NewSimWorld(func(string) (any, bool) { return false, true }, time.Date(2026, 1, 1, 20, 0, 0, 0, time.UTC), Scenario{}, nil)
	out := Run(context.Background(), res.Compiled, w, RunInput{Trigger: TriggerFire{ID: "motion", Value: true}, Params: map[string]any{"hold": "3m"}})
	var got []string
	for _, c := range w.Calls() {
		got = append(got, c.ID+core.CompactJSON(c.Args))
	}
	if !out.Outcome.OK || strings.Join(got, " ") != `porch_light.set{"state":"ON"} porch_light.set{"state":"OFF"}` {
		t.Errorf("%+v %v", out.Outcome, got)
	}
}
