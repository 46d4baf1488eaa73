package mcpserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/storage"
)

// scopedPrincipals: an owner; a deployer that may not see the front lock;
// a deployer scoped to the living room's devices.
// The owner's deploys here set the scene: its policy needs no approval
// (the risk gate is tested in approval_test.go).
func scopedPrincipals() []*engine.Principal {
	return []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true, Approval: &noApproval},
		{Name: "guest", TokenHash: engine.HashToken("guest-token"), Deploy: true, Scope: engine.Scope{DenyDevices: []string{"front_lock"}}},
		{Name: "living", TokenHash: engine.HashToken("living-token"), Deploy: true, Scope: engine.Scope{Devices: []string{"living_*"}}},
	}
}

func caller(name, at, ref string) string {
	return `{"name":"` + name + `","triggers":[{"id":"t","at":"` + at + `"}],"steps":[{"id":"run","call":"` + ref + `"}]}`
}

// TestScopeFollowsIndirectReferences: a rule or automation that reaches an
// entry the caller may not see — directly, or through any chain of promoted
// automations — is invisible to that caller everywhere: catalog listing and
// get, validate (unknown_name, like a name that never existed), execute by
// program_ref, rule listing, enable/disable/remove and replacement by a
// deploy of the same name. It stays so when the lock drops off the catalog.
func TestScopeFollowsIndirectReferences(t *testing.T) {
	s := newHTTPStack(t, scopedPrincipals(), storage.Options{})
	owner, guest := s.client("owner-token"), s.client("guest-token")

	refA := deployed(t, owner, `{"name":"lock-door","triggers":[{"id":"t","at":"23:00"}],"steps":[{"id":"lock","call":"front_lock.set","args":{"state":"LOCK"}}]}`)
	refB := deployed(t, owner, caller("lock-via", "23:30", refA))
	refC := deployed(t, owner, caller("lock-via-via", "23:45", refB))
	refP := deployed(t, owner, `{"name":"porch-on","triggers":[{"id":"t","at":"20:00"}],"steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}}]}`)
	hidden := []string{refA, refB, refC}
	const missingRef = "automation.lock-gone@0123456789ab"

	check := func(when string) {
		t.Helper()
		autos := automationIDs(t, guest)
		if !contains(autos, refP) {
			t.Errorf("%s: the guest lost a visible automation: %v", when, autos)
		}
		for _, r := range hidden {
			if contains(autos, r) {
				t.Errorf("%s: the guest lists %s, which reaches front_lock.set", when, r)
			}
		}
		names := ruleNames(t, guest)
		if !contains(names, "porch-on") || contains(names, "lock-door") || contains(names, "lock-via") || contains(names, "lock-via-via") {
			t.Errorf("%s: the guest's rules: %v", when, names)
		}
		for _, r := range hidden {
			same := func(tool string, args func(id string) map[string]any) {
				t.Helper()
				a, e1 := callTool(t, guest, tool, args(r))
				b, e2 := callTool(t, guest, tool, args(missingRef))
				delete(a, "run_id")
				delete(b, "run_id")
				if e1 != e2 || masked(a, r) != masked(b, missingRef) {
					t.Errorf("%s: %s of %s differs from a nonexistent ref:\n%s\n%s", when, tool, r, masked(a, r), masked(b, missingRef))
				}
			}
			same("pilotage_lookup", func(id string) map[string]any {
				return map[string]any{"language": "automation/1", "verb": "get", "id": id}
			})
			same("pilotage_validate", func(id string) map[string]any {
				return map[string]any{"language": "automation/1", "program": prog(t, caller("probe", "22:00", id))}
			})
			same("pilotage_execute", func(id string) map[string]any {
				return map[string]any{"language": "automation/1", "program_ref": id, "test_run": true}
			})
			same("pilotage_execute", func(id string) map[string]any {
				return map[string]any{"language": "automation/1", "program": prog(t, caller("probe", "22:00", id)), "test_run": true}
			})
		}
		for _, name := range []string{"lock-door", "lock-via", "lock-via-via"} {
			for _, tool := range []string{"pilothouse_rule_disable", "pilothouse_rule_enable", "pilothouse_rule_remove"} {
				a, e1 := callTool(t, guest, tool, map[string]any{"name": name})
				b, e2 := callTool(t, guest, tool, map[string]any{"name": "no-such-rule"})
				if !e1 || e1 != e2 || masked(a) != masked(b) {
					t.Errorf("%s: %s %s as the guest: %v (a missing rule: %v)", when, tool, name, a, b)
				}
			}
			// Replacing it by a deploy of the same name is refused.
			out, _ := callTool(t, guest, "pilotage_execute", map[string]any{"language": "automation/1",
				"program": prog(t, `{"name":"`+name+`","triggers":[{"id":"t","at":"21:00"}],"steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}}]}`)})
			if oc, _ := out["outcome"].(map[string]any); oc["ok"] == true {
				t.Errorf("%s: the guest replaced %s: %v", when, name, out)
			}
		}
		// The owner's rules are untouched.
		for _, r := range []struct{ name, ref string }{{"lock-door", refA}, {"lock-via", refB}, {"lock-via-via", refC}} {
			ri, err := s.eng.GetRule(engine.WithPrincipal(t.Context(), engine.Owner), r.name, 0)
			if err != nil || ri.Status != "enabled" || ri.ProgramRef != r.ref {
				t.Errorf("%s: owner's rule %s: %+v %v", when, r.name, ri, err)
			}
		}
	}
	check("with the lock in the catalog")

	// The lock drops off the catalog (renamed away; likewise before it is
	// announced again after a restart): what reached it stays hidden.
	if err := s.sim.Rename("front_lock", "side_lock"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the rename", func() bool {
		_, gone := s.devs.Snapshot().Get("front_lock.set")
		_, there := s.devs.Snapshot().Get("side_lock.set")
		return !gone && there
	})
	check("with the lock gone from the catalog")

	// The owner sees all of it.
	autos := automationIDs(t, owner)
	for _, r := range append(hidden, refP) {
		if !contains(autos, r) {
			t.Errorf("the owner does not list %s: %v", r, autos)
		}
	}
}

// TestScopedDeployerUsesOwnAutomations: a principal scoped by
// scope.devices can call the automations it promoted (and any whose every
// reference it may see), never one reaching outside its devices.
func TestScopedDeployerUsesOwnAutomations(t *testing.T) {
	s := newHTTPStack(t, scopedPrincipals(), storage.Options{})
	owner, living := s.client("owner-token"), s.client("living-token")

	ownLock := deployed(t, owner, `{"name":"lock-door","triggers":[{"id":"t","at":"23:00"}],"steps":[{"id":"lock","call":"front_lock.set","args":{"state":"LOCK"}}]}`)
	ownerPlug := deployed(t, owner, `{"name":"plug-on","triggers":[{"id":"t","at":"07:00"}],"steps":[{"id":"on","call":"living_plug.set","args":{"state":"ON"}}]}`)
	mixed := deployed(t, owner, `{"name":"plug-and-lock","triggers":[{"id":"t","at":"23:10"}],"steps":[{"id":"a","call":"`+ownerPlug+`"},{"id":"b","call":"`+ownLock+`"}]}`)

	ref := deployed(t, living, `{"name":"plug-off","triggers":[{"id":"t","at":"01:00"}],"steps":[{"id":"off","call":"living_plug.set","args":{"state":"OFF"}}]}`)
	autos := automationIDs(t, living)
	if !contains(autos, ref) || !contains(autos, ownerPlug) {
		t.Fatalf("living does not see its own (or an all-living) automation: %v", autos)
	}
	if contains(autos, ownLock) || contains(autos, mixed) {
		t.Fatalf("living sees an automation reaching the lock: %v", autos)
	}
	val, isErr := callTool(t, living, "pilotage_validate", map[string]any{"language": "automation/1", "program": prog(t, caller("plug-off-late", "02:00", ref))})
	if isErr || val["valid"] != true {
		t.Fatalf("living validating a call of its own automation: %v", val)
	}
	deployed(t, living, caller("plug-off-late", "02:00", ref))
	tr, isErr := callTool(t, living, "pilotage_execute", map[string]any{"language": "automation/1", "program_ref": ref, "test_run": true})
	if oc, _ := tr["outcome"].(map[string]any); isErr || oc["ok"] != true {
		t.Fatalf("living test-running its own automation: %v", tr)
	}
	names := strings.Join(ruleNames(t, living), ",")
	if names != "plug-off,plug-off-late,plug-on" {
		t.Fatalf("living's rules: %s", names)
	}
}
