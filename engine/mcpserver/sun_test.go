package mcpserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/storage"
)

// sunStack is a house in Europe/Berlin at the demo's example location, as
// the plain `serve --demo` runs it without a configured location.
func sunStack(t *testing.T) (*httpStack, *client.Client) {
	t.Helper()
	zone, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no zone data:", err)
	}
	loc := engine.DemoLocation
	s := newHTTPStackCfg(t, engine.Config{TimeZone: zone, Location: &loc, LocationSource: engine.LocationDemo, Approval: noApproval}, storage.Options{})
	return s, s.client("")
}

func call(t *testing.T, c *client.Client, tool string, args map[string]any) map[string]any {
	t.Helper()
	if _, ok := args["language"]; !ok && strings.HasPrefix(tool, "pilotage_") && tool != "pilotage_discover" && tool != "pilotage_trace" {
		args["language"] = "automation/1"
	}
	out, isErr := callTool(t, c, tool, args)
	if isErr {
		t.Fatalf("%s: %v", tool, out)
	}
	return out
}

// TestSunThroughMCP: discover and the core guide say that sun is
// available at the demo's example location and name the time zone; a
// sun condition validates, its plan names the zone, and a deploy's
// next_fire is local with its zone.
func TestSunThroughMCP(t *testing.T) {
	_, c := sunStack(t)
	man := call(t, c, "pilotage_discover", map[string]any{})
	env := man["languages"].([]any)[0].(map[string]any)["environment"].(map[string]any)
	sun := env["sun"].(map[string]any)
	if env["time_zone"] != "Europe/Berlin" || sun["available"] != true || sun["location_source"] != "demo_example" ||
		!strings.Contains(sun["note"].(string), "example location") {
		t.Fatalf("environment: %v", env)
	}
	for _, k := range []string{"sunrise", "sunset", "now"} {
		v, _ := sun[k].(string)
		if k == "now" {
			v, _ = env[k].(string)
		}
		if ts, err := time.Parse(time.RFC3339, v); err != nil || (!strings.HasSuffix(v, "+01:00") && !strings.HasSuffix(v, "+02:00")) || ts.IsZero() {
			t.Errorf("%s = %q: want a Berlin local time", k, v)
		}
	}

	core := call(t, c, "pilotage_learn", map[string]any{"id": "core"})
	body := core["body"].(string)
	if !strings.Contains(body, "## This server") || !strings.Contains(body, "Time zone: Europe/Berlin") || !strings.Contains(body, "demo house's example location") {
		t.Errorf("core guide lacks the server section:\n%s", body[max(0, len(body)-900):])
	}
	topic := call(t, c, "pilotage_learn", map[string]any{"id": "core", "topic": "this-server"})
	if !strings.HasPrefix(topic["body"].(string), "## This server") {
		t.Errorf("topic this-server: %v", topic)
	}

	const garage = `{"name": "garage-after-sunset",
	  "triggers": [{"id": "dusk", "sun": "sunset", "offset": "15m"}],
	  "conditions": [{"id": "open", "expr": "state('garage_door.position') > 0"},
	                 {"id": "evening", "time": {"after": "15:00", "before": "02:00"}},
	                 {"id": "dark", "sun": {"after": "sunset", "before": "sunrise"}}],
	  "steps": [{"id": "close", "call": "garage_door.set", "args": {"state": "CLOSE"}}]}`
	v := call(t, c, "pilotage_validate", map[string]any{"program": prog(t, garage)})
	if v["valid"] != true {
		t.Fatalf("validate: %v", v)
	}
	descs := map[string]string{}
	for _, s := range v["plan"].(map[string]any)["steps"].([]any) {
		s := s.(map[string]any)
		descs[s["id"].(string)], _ = s["description"].(string)
	}
	dusk, duskNext, _ := strings.Cut(descs["dusk"], "; deployed now, it would next fire at ")
	if _, err := time.Parse(time.RFC3339, duskNext); err != nil || dusk != "At 15 minutes after sunset (the server's location)" || descs["evening"] != "Only from 15:00 until 02:00 the next day (Europe/Berlin)" ||
		descs["dark"] != "Only between sunset and sunrise (the server's location)" {
		t.Errorf("plan descriptions: %v", descs)
	}

	dep := call(t, c, "pilotage_execute", map[string]any{"program": prog(t, garage)})
	out := dep["output"].(map[string]any)
	next, _ := out["next_fire"].(string)
	nt, err := time.Parse(time.RFC3339, next)
	if out["time_zone"] != "Europe/Berlin" || err != nil || !nt.After(time.Now()) || (!strings.HasSuffix(next, "+01:00") && !strings.HasSuffix(next, "+02:00")) {
		t.Errorf("deploy output: %v", out)
	}
	trig := out["triggers"].([]any)[0].(map[string]any)
	if trig["time_zone"] != "Europe/Berlin" || trig["next_fire"] != next {
		t.Errorf("trigger info: %v", trig)
	}
}

// TestBoundPlanNamesTheZone: a program with a catalog param is planned
// bound (test-run and deploy output, the rule listing) with the zone
// beside its clock times, as validate plans it unbound.
func TestBoundPlanNamesTheZone(t *testing.T) {
	_, c := sunStack(t)
	const garage = `{"name": "any-garage",
	  "params": {"type": "object", "required": ["door"], "properties": {
	    "door": {"type": "string", "catalog": {"kind": "action", "type": "cover", "accepts": {"state": "CLOSE"}}}}},
	  "triggers": [{"id": "late", "at": "23:00"}],
	  "conditions": [{"id": "night", "time": {"after": "22:00", "before": "06:00"}}],
	  "steps": [{"id": "close", "call": "{{ params.door }}", "args": {"state": "CLOSE"}}]}`
	const want = "Only from 22:00 until 06:00 the next day (Europe/Berlin)"
	desc := func(plan any, id string) string {
		for _, s := range plan.(map[string]any)["steps"].([]any) {
			if s := s.(map[string]any); s["id"] == id {
				d, _ := s["description"].(string)
				return d
			}
		}
		return ""
	}
	v := call(t, c, "pilotage_validate", map[string]any{"program": prog(t, garage)})
	if d := desc(v["plan"], "night"); d != want {
		t.Fatalf("validate plan: %q", d)
	}
	input := map[string]any{"door": "garage_door.set"}
	tr := call(t, c, "pilotage_execute", map[string]any{"program": prog(t, garage), "test_run": true, "input": input})
	if d := desc(tr["output"].(map[string]any)["plan"], "night"); d != want {
		t.Errorf("test-run plan: %q (%v)", d, tr["outcome"])
	}
	dep := call(t, c, "pilotage_execute", map[string]any{"program": prog(t, garage), "input": input})
	if d := desc(dep["output"].(map[string]any)["plan"], "night"); d != want {
		t.Errorf("deploy plan: %q (%v)", d, dep["outcome"])
	}
}
