package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/storage"
)

// TestGetAutomationByNameThroughMCP: pilotage_lookup get of
// "automation.<name>" without its @hash returns the version the installed
// rule of that name runs (not merely the newest promoted one), still when
// the rule is disabled; once the rule is removed, the newest promoted
// version; an unknown name stays not_found.
func TestGetAutomationByNameThroughMCP(t *testing.T) {
	c := newHTTPStack(t, nil, storage.Options{}).client("")
	body := func(at string) string {
		return `{"name": "porch-late", "triggers": [{"id": "late", "at": "` + at + `"}],
		  "steps": [{"id": "off", "call": "porch_light.set", "args": {"state": "OFF"}}]}`
	}
	get := func(id string) (string, map[string]any) {
		out, isErr := callTool(t, c, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": id})
		if isErr {
			return "", out
		}
		return out["entry"].(map[string]any)["id"].(string), out
	}
	ref1 := deployed(t, c, body("23:00"))
	ref2 := redeployed(t, c, body("23:30"))
	if ref1 == ref2 || !strings.HasPrefix(ref1, "automation.porch-late@") {
		t.Fatalf("refs %s, %s", ref1, ref2)
	}
	if got, out := get("automation.porch-late"); got != ref2 {
		t.Fatalf("get automation.porch-late after the second deploy: %s %v", got, out)
	}
	if got, _ := get(ref1); got != ref1 {
		t.Fatalf("get by the old version's id: %s", got)
	}
	if got, _ := get("automation.porch-late"); got != ref2 {
		t.Fatalf("again: %s", got)
	}
	// Deploying the first body again installs its version: it is current,
	// although ref2 was promoted later.
	if again := redeployed(t, c, body("23:00")); again != ref1 {
		t.Fatalf("the same body got a new ref: %s", again)
	}
	if got, _ := get("automation.porch-late"); got != ref1 {
		t.Fatalf("after redeploying the first body: %s, want %s", got, ref1)
	}
	// A catalog param of kind automation given by name binds the
	// current version; the deployed caller's plan names it in full.
	const caller = `{"name": "late-caller", "params": {"type": "object", "properties": {
	    "job": {"type": "string", "catalog": {"kind": "automation", "max_risk": "control"}}}},
	  "triggers": [{"id": "t", "at": "01:00"}], "steps": [{"id": "run", "call": "{{ params.job }}"}]}`
	dep := call(t, c, "pilotage_execute", map[string]any{"program": prog(t, caller), "input": map[string]any{"job": "automation.porch-late"}})
	if b, _ := json.Marshal(dep["output"]); dep["outcome"].(map[string]any)["ok"] != true || !strings.Contains(string(b), `"`+ref1+`"`) {
		t.Fatalf("a caller bound by name: %v", dep)
	}
	call(t, c, "pilothouse_rule_disable", map[string]any{"name": "porch-late"})
	if got, _ := get("automation.porch-late"); got != ref1 {
		t.Fatalf("disabled: %s", got)
	}
	call(t, c, "pilothouse_rule_remove", map[string]any{"name": "porch-late"})
	if got, _ := get("automation.porch-late"); got != ref2 {
		t.Fatalf("removed: %s, want the newest promoted %s", got, ref2)
	}
	for _, id := range []string{"automation.nope", "automation.", "automation.porch-late@000000000000"} {
		if got, out := get(id); got != "" || out["error"].(map[string]any)["kind"] != "not_found" {
			t.Errorf("get %s: %s %v", id, got, out)
		}
	}
}
