package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
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

// TestRunningFiringNarration: a firing waiting in its delay has already
// turned the light on; its narration says it is still running and that
// its trace is written when it ends, never "It called nothing".
func TestRunningFiringNarration(t *testing.T) {
	s, c := ownerStack(t)
	deployed(t, c, `{"name": "on-for-an-hour", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "TOGGLE"}}, {"id": "later", "delay": "1h"},
	            {"id": "off", "call": "porch_light.set", "args": {"state": "OFF"}}]}`)
	if err := s.sim.Press(context.Background(), "toggle"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	testutil.Eventually(t, 10*time.Second, "the firing's record", func() bool { ids = firingsOf(t, c, "on-for-an-hour"); return len(ids) == 1 })
	tr, isErr := callTool(t, c, "pilotage_trace", map[string]any{"run_id": ids[0]})
	n, _ := tr["narration"].(string)
	if isErr || !strings.Contains(n, "still running") || !strings.Contains(n, "Its trace is written when it ends") ||
		strings.Contains(n, "called nothing") || strings.Contains(n, "0 steps") {
		t.Errorf("narration of a running firing: %s", n)
	}
}

// TestDriftSaysWhy: a deploy in between changes the catalog version that
// validate gave; the drift answer says why and what to do.
func TestDriftSaysWhy(t *testing.T) {
	_, c := ownerStack(t)
	const src = `{"name": "porch-on", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "ON"}}]}`
	v := call(t, c, "pilotage_validate", map[string]any{"program": prog(t, src)})
	deployed(t, c, strings.Replace(src, "porch-on", "porch-on-too", 1))
	out := call(t, c, "pilotage_execute", map[string]any{"program": prog(t, src), "expected_catalog_version": v["catalog_version"]})
	oc := out["outcome"].(map[string]any)
	if msg, _ := oc["error"].(string); oc["status"] != "catalog_drift" || !strings.Contains(msg, "installed rule changes") || !strings.Contains(msg, "validate again") {
		t.Errorf("drift: %v", oc)
	}
}

// TestApprovalTextForTheModel: the approval_pending answer names the page
// where a person decides, never a command the model could run to approve
// itself; a retry after the request lapsed says so; an approval decided
// by the principal that asked for it is recorded as self-approved.
func TestApprovalTextForTheModel(t *testing.T) {
	g := newGateHouse(t)
	owner := g.client("owner-token")
	r := deployOf(t, owner, lockProg)
	first := pending(t, r)
	for what, text := range map[string]string{"error": js(r["outcome"]), "approval": js(r["approval"])} {
		if strings.Contains(text, "pilothouse approve") || !strings.Contains(text, "person") {
			t.Errorf("%s hands the model a way to approve itself, or names no person: %s", what, text)
		}
	}
	g.skew.Store(int64(engine.DefaultApprovalTTL + time.Second))
	r = deployOf(t, owner, lockProg)
	second := pending(t, r)
	if msg := r["outcome"].(map[string]any)["error"].(string); second == first || !strings.Contains(msg, first+" for this deploy lapsed unanswered at ") ||
		!strings.Contains(msg, "must approve it again") {
		t.Errorf("the retry after the request lapsed: %s", msg)
	}
	if a, err := g.eng.DecideApproval(g.as("owner"), second, true, engine.ChannelCLI); err != nil || !a.SelfApproved {
		t.Fatalf("the owner approving its own request: %+v %v", a, err)
	}
	r = deployOf(t, owner, lockProg)
	if ap, _ := r["approval"].(map[string]any); r["outcome"].(map[string]any)["ok"] != true || ap["self_approved"] != true ||
		step(r["trace"], "approval")["output"].(map[string]any)["self_approved"] != true {
		t.Errorf("the deploy that used a self-approval: %s", js(r))
	}
}

// TestTraceTakesLanguage: pilotage_trace accepts the language argument
// every other pilotage tool takes (automation/1 only).
func TestTraceTakesLanguage(t *testing.T) {
	_, c := ownerStack(t)
	out := call(t, c, "pilotage_execute", map[string]any{"test_run": true, "program": prog(t, `{"name": "x", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "ON"}}]}`), "input": map[string]any{}})
	for _, tc := range []struct {
		language string
		ok       bool
	}{{"automation/1", true}, {"automation/2", false}} {
		got, isErr := callTool(t, c, "pilotage_trace", map[string]any{"run_id": out["run_id"], "language": tc.language})
		if isErr == tc.ok || tc.ok && got["run_id"] != out["run_id"] {
			t.Errorf("trace with language %s: %v", tc.language, got)
		}
	}
}

// TestRulesInHouseZone: pilothouse_rules gives its times with the house's
// offset, as traces, plans and next_fire do (they were UTC "Z").
func TestRulesInHouseZone(t *testing.T) {
	s, c := sunStack(t) // Europe/Berlin: +01:00 in winter, +02:00 in summer
	deployed(t, c, `{"name": "porch-press", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "ON"}}]}`)
	if err := s.sim.Press(context.Background(), "toggle"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the firing's record", func() bool { return len(firingsOf(t, c, "porch-press")) == 1 })
	out, _ := callTool(t, c, "pilothouse_rules", map[string]any{})
	r := out["rules"].([]any)[0].(map[string]any)
	f := r["last_firings"].([]any)[0].(map[string]any)
	for name, v := range map[string]any{"installed_at": r["installed_at"], "updated_at": r["updated_at"], "started": f["started"]} {
		if s, _ := v.(string); !strings.HasSuffix(s, "+01:00") && !strings.HasSuffix(s, "+02:00") {
			t.Errorf("%s: %v, want the house's offset", name, v)
		}
	}
}

// TestHelperCallTrace: a firing's helper call is not on the bus: its
// trace says what it set, never "published" (the helper as the body's
// only call, answered at once, and before another call).
func TestHelperCallTrace(t *testing.T) {
	s, c := ownerStack(t)
	if out, isErr := callTool(t, c, "pilothouse_helpers", map[string]any{"verb": "create", "helper": map[string]any{"id": "presses", "kind": "counter"}}); isErr {
		t.Fatalf("create: %v", out)
	}
	for _, tc := range []struct{ name, steps string }{
		{"count-only", `[{"id": "count", "call": "presses.increment"}]`},
		{"count-then-light", `[{"id": "count", "call": "presses.increment"}, {"id": "on", "call": "porch_light.set", "args": {"state": "ON"}}]`},
	} {
		deployed(t, c, `{"name": "`+tc.name+`", "triggers": [{"id": "press", "event": "bedroom_remote.action"}], "steps": `+tc.steps+`}`)
	}
	if err := s.sim.Press(context.Background(), "toggle"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"count-only", "count-then-light"} {
		var ids []string
		testutil.Eventually(t, 10*time.Second, name+"'s firing", func() bool { ids = firingsOf(t, c, name); return len(ids) == 1 })
		testutil.Eventually(t, 10*time.Second, name+"'s firing ends", func() bool {
			tr, _ := callTool(t, c, "pilotage_trace", map[string]any{"run_id": ids[0]})
			return tr["outcome"].(map[string]any)["status"] != "running"
		})
		tr, _ := callTool(t, c, "pilotage_trace", map[string]any{"run_id": ids[0]})
		out, _ := step(tr["trace"], "count")["output"].(map[string]any)
		sets, _ := out["sets"].(map[string]any)
		if out["published"] != nil || out["helper"] != true || sets["presses.state"] == nil {
			t.Errorf("%s: the helper call's output %s", name, js(out))
		}
	}
}
