package mcpserver_test

import (
	"testing"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/storage"
)

// TestProgramOfHiddenRuleIsNotFound: the promoted program behind a rule
// the owner bound to an entry the hall deployer cannot see is as unknown
// to that deployer as a ref that never existed (spec 6.3: an unauthorized
// name is indistinguishable from a nonexistent one): get by ref and by
// name, list, validate and execute by program_ref. The owner still gets it.
func TestProgramOfHiddenRuleIsNotFound(t *testing.T) {
	principals := []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true},
		{Name: "hall", TokenHash: engine.HashToken("hall-token"), Deploy: true, Scope: engine.Scope{Areas: []string{"hall"}}},
	}
	s := newHTTPStack(t, principals, storage.Options{})
	owner, hall := s.client("owner-token"), s.client("hall-token")
	r := execute(t, owner, map[string]any{"program": prog(t, motionLight),
		"input": map[string]any{"sensor": "hall_motion.occupancy", "light": "porch_light.set"}})
	if r["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("owner deploy: %s", js(r))
	}
	ref := r["output"].(map[string]any)["program_ref"].(string)
	const missingRef = "automation.motion-gone@0123456789ab"
	if names := ruleNames(t, hall); contains(names, "motion-light") {
		t.Fatalf("the hall deployer sees the rule: %v", names)
	}
	if autos := automationIDs(t, hall); contains(autos, ref) {
		t.Errorf("the hall deployer lists %s", ref)
	}
	if autos := automationIDs(t, owner); !contains(autos, ref) {
		t.Errorf("the owner lost %s: %v", ref, autos)
	}
	for _, tc := range []struct {
		tool string
		args func(id string) map[string]any
	}{
		{"pilotage_lookup", func(id string) map[string]any {
			return map[string]any{"language": "automation/1", "verb": "get", "id": id}
		}},
		{"pilotage_execute", func(id string) map[string]any {
			return map[string]any{"language": "automation/1", "program_ref": id, "test_run": true}
		}},
		{"pilotage_validate", func(id string) map[string]any {
			return map[string]any{"language": "automation/1", "program": prog(t, caller("probe", "22:00", id))}
		}},
	} {
		a, e1 := callTool(t, hall, tc.tool, tc.args(ref))
		b, e2 := callTool(t, hall, tc.tool, tc.args(missingRef))
		delete(a, "run_id")
		delete(b, "run_id")
		if e1 != e2 || masked(a, ref) != masked(b, missingRef) {
			t.Errorf("%s of the hidden rule's program differs from a nonexistent ref:\n%s\n%s", tc.tool, masked(a, ref), masked(b, missingRef))
		}
	}
	get := func(c any, id string) bool {
		_, isErr := callTool(t, hall, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": id})
		return !isErr
	}
	if get(hall, "automation.motion-light") {
		t.Errorf("the hall deployer gets automation.motion-light")
	}
	if _, isErr := callTool(t, owner, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": ref}); isErr {
		t.Errorf("the owner cannot get %s", ref)
	}
}
