package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/storage"
)

// helperStack is the demo house with an owner and a guest who sees the
// living room only.
func helperStack(t *testing.T) (s *httpStack, owner, guest *client.Client) {
	s = newHTTPStack(t, []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true, Admin: true},
		{Name: "guest", TokenHash: engine.HashToken("guest-token"), Deploy: true, Scope: engine.Scope{Areas: []string{"living"}}},
	}, storage.Options{})
	return s, s.client("owner-token"), s.client("guest-token")
}

func liveOf(t *testing.T, c *client.Client, id string) any {
	t.Helper()
	got, isErr := callTool(t, c, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": id})
	if isErr {
		return nil
	}
	live, _ := got["live"].(map[string]any)
	return live["value"]
}

// TestHelpersOverMCP: the owner creates helpers with the tool; lookup
// serves them with exact schemas; a rule sets one on a real MQTT event
// and another fires on that change; a guest may not create one and sees
// only those of its area; a test run simulates helper actions (later
// steps see the new value) and leaves the real ones as they were.
func TestHelpersOverMCP(t *testing.T) {
	s, owner, guest := helperStack(t)
	for _, def := range []map[string]any{
		{"id": "vacation_mode", "kind": "flag", "area": "hall"},
		{"id": "visits", "kind": "counter", "min": 0, "max": 10, "area": "living"},
	} {
		out, isErr := callTool(t, owner, "pilothouse_helpers", map[string]any{"verb": "create", "helper": def})
		if isErr || !strings.Contains(js(out["entries"]), def["id"].(string)+".state") {
			t.Fatalf("create %v: %s", def["id"], js(out))
		}
	}
	if out, isErr := callTool(t, owner, "pilothouse_helpers", map[string]any{"verb": "create", "helper": map[string]any{"id": "visits", "kind": "flag"}}); !isErr || !strings.Contains(js(out), "conflict") {
		t.Errorf("a second create of visits: %s", js(out))
	}
	got := call(t, owner, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "visits.state"})
	if e := js(got["entry"]); !strings.Contains(e, `"output_schema":{"maximum":10,"minimum":0,"type":"integer","x-step":1}`) || !strings.Contains(e, "area:living") {
		t.Fatalf("visits.state entry: %s", e)
	}
	got = call(t, owner, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "vacation_mode.turn_on"})
	if e := js(got["entry"]); !strings.Contains(e, `"risk":"control"`) || !strings.Contains(e, `"callable":true`) {
		t.Fatalf("vacation_mode.turn_on entry: %s", e)
	}

	// The guest: refused, and the hall's helper is not there for it.
	out, isErr := callTool(t, guest, "pilothouse_helpers", map[string]any{"verb": "create", "helper": map[string]any{"id": "mine", "kind": "flag", "area": "living"}})
	if !isErr || !strings.Contains(js(out), "only the owner") {
		t.Errorf("guest create: %s", js(out))
	}
	list := call(t, guest, "pilothouse_helpers", map[string]any{"verb": "list"})
	if l := js(list["helpers"]); !strings.Contains(l, `"visits"`) || strings.Contains(l, "vacation_mode") {
		t.Errorf("guest list: %s", l)
	}
	if v := liveOf(t, guest, "vacation_mode.state"); v != nil {
		t.Errorf("guest reads vacation_mode.state: %v", v)
	}
	if out, _ := callTool(t, guest, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "vacation_mode.state"}); !strings.Contains(js(out), "not_found") {
		t.Errorf("guest get of vacation_mode.state: %s", js(out))
	}

	// Rules: the remote's press turns vacation mode on; that change counts
	// a visit.
	deployed(t, owner, `{"name": "away-on-press", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "away", "call": "vacation_mode.turn_on"}]}`)
	deployed(t, owner, `{"name": "count-away", "triggers": [{"id": "away", "state": "vacation_mode.state", "to": true}],
	  "steps": [{"id": "count", "call": "visits.increment"}]}`)
	if err := s.sim.Press(context.Background(), "toggle"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, "vacation mode on and one visit counted", func() bool {
		return liveOf(t, owner, "vacation_mode.state") == true && liveOf(t, owner, "visits.state") == 1.0
	})

	// A test run: turn off, then the condition reads the simulated value.
	res := execute(t, owner, map[string]any{"test_run": true, "program": prog(t, `{"name": "sim-helpers",
	  "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "off", "call": "vacation_mode.turn_off"},
	            {"id": "check", "if": "state('vacation_mode.state') == false", "then": [{"id": "count", "call": "visits.increment"}]},
	            {"id": "seen", "set": {"visits": "{{ state('visits.state') }}"}}]}`)})
	if oc := res["outcome"].(map[string]any); oc["status"] != "success" || !strings.Contains(js(res["output"]), `"visits":2`) {
		t.Fatalf("test run: %s", js(res))
	}
	if v, n := liveOf(t, owner, "vacation_mode.state"), liveOf(t, owner, "visits.state"); v != true || n != 1.0 {
		t.Errorf("after the test run: vacation_mode %v, visits %v (want true, 1: nothing written)", v, n)
	}
	// A simulated call the real one would refuse fails the test run too.
	res = execute(t, owner, map[string]any{"test_run": true, "program": prog(t, `{"name": "sim-over",
	  "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "set", "call": "visits.set", "args": {"value": 10}}, {"id": "over", "call": "visits.increment"}]}`)})
	if oc := js(res["outcome"]); !strings.Contains(oc, "above its max 10") {
		t.Errorf("test run past max: %s", oc)
	}

	// Delete: gone from the catalog.
	if out, isErr := callTool(t, owner, "pilothouse_helpers", map[string]any{"verb": "delete", "id": "visits"}); isErr {
		t.Fatalf("delete: %s", js(out))
	}
	testutil.Eventually(t, 5*time.Second, "visits.state gone", func() bool {
		out, _ := callTool(t, owner, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "visits.state"})
		return strings.Contains(js(out), "not_found")
	})
}

// TestTimerFinishedFiresARule: a rule on a timer's finished event runs
// when the timer runs out by itself.
func TestTimerFinishedFiresARule(t *testing.T) {
	s, owner, _ := helperStack(t)
	for _, def := range []map[string]any{
		{"id": "egg", "kind": "timer", "duration": "PT1S", "area": "living"},
		{"id": "eggs_done", "kind": "counter"},
	} {
		if out, isErr := callTool(t, owner, "pilothouse_helpers", map[string]any{"verb": "create", "helper": def}); isErr {
			t.Fatalf("create %v: %s", def["id"], js(out))
		}
	}
	deployed(t, owner, `{"name": "egg-done", "triggers": [{"id": "done", "event": "egg.finished"}],
	  "steps": [{"id": "count", "call": "eggs_done.increment"}]}`)
	if err := s.devs.Call(context.Background(), "egg.start", nil); err != nil {
		t.Fatal(err)
	}
	if v := liveOf(t, owner, "egg.state"); v != "active" {
		t.Fatalf("egg after start: %v", v)
	}
	testutil.Eventually(t, 15*time.Second, "the egg's end counted", func() bool {
		return liveOf(t, owner, "eggs_done.state") == 1.0 && liveOf(t, owner, "egg.state") == "idle"
	})
}

// TestDeletingAHelperNamesTheRulesReadingIt: the attacker judge deleted a
// helper an installed rule read, and the rule silently stopped working.
// The answer now names the rules that read it.
func TestDeletingAHelperNamesTheRulesReadingIt(t *testing.T) {
	_, c := ownerStack(t)
	for _, id := range []string{"c5", "c6"} {
		if out, isErr := callTool(t, c, "pilothouse_helpers", map[string]any{"verb": "create", "helper": map[string]any{"id": id, "kind": "flag"}}); isErr {
			t.Fatalf("create %s: %v", id, out)
		}
	}
	deployed(t, c, `{"name":"uses-c5","triggers":[{"id":"t","state":"c5.state","to":true}],"steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)
	out, isErr := callTool(t, c, "pilothouse_helpers", map[string]any{"verb": "delete", "id": "c5"})
	if isErr || fmt.Sprint(out["rules_reading_it"]) != "[uses-c5]" || !strings.Contains(fmt.Sprint(out["note"]), "fail until a helper of that id is back") {
		t.Fatalf("delete c5: %v", out)
	}
	if out, _ := callTool(t, c, "pilothouse_helpers", map[string]any{"verb": "delete", "id": "c6"}); out["rules_reading_it"] != nil {
		t.Fatalf("delete c6, which no rule reads: %v", out)
	}
}

// TestHelperValueToTryARule: the pilothouse_helpers description's way to
// try a rule with a helper at a value (alarm_mode armed_away, which no
// tool sets by hand) works as written: the test run's scenario gives the
// value, the rule's condition sees it, and the real helper is unchanged.
func TestHelperValueToTryARule(t *testing.T) {
	_, owner, _ := helperStack(t)
	tools, err := owner.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	const example = `"input": {"scenario": {"state": {"alarm_mode.state": "armed_away"}}}`
	for _, tl := range tools.Tools {
		if tl.Name == "pilothouse_helpers" && !strings.Contains(tl.Description, example) {
			t.Errorf("pilothouse_helpers description lacks %s: %s", example, tl.Description)
		}
	}
	def := map[string]any{"id": "alarm_mode", "kind": "choice", "options": []string{"disarmed", "armed_home", "armed_away"}}
	if out, isErr := callTool(t, owner, "pilothouse_helpers", map[string]any{"verb": "create", "helper": def}); isErr {
		t.Fatalf("create alarm_mode: %s", js(out))
	}
	src := `{"name": "away-check", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "conditions": [{"id": "away", "expr": "state('alarm_mode.state') == 'armed_away'"}],
	  "steps": [{"id": "on", "call": "hall_light.set", "args": {"state": "ON"}}]}`
	for _, tc := range []struct{ scenario, want string }{
		{`{"state": {"alarm_mode.state": "armed_away"}}`, "success"},
		{"", "conditions_not_met"},
	} {
		if oc, _, _ := testRun(t, owner, src, tc.scenario); oc["status"] != tc.want {
			t.Errorf("scenario %q: %s, want %s", tc.scenario, js(oc), tc.want)
		}
	}
	if v := liveOf(t, owner, "alarm_mode.state"); v != "disarmed" {
		t.Errorf("alarm_mode after the test runs: %v, want disarmed", v)
	}
}
