package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
)

// TestOldVersionsLoadOnDemand: after a restart only the installed version
// of a rule is held compiled; an older version (a rollback target) is
// compiled when first used, and the catalog is the same as before.
func TestOldVersionsLoadOnDemand(t *testing.T) {
	h := newHouse(t, Config{})
	ctx := context.Background()
	v1 := h.deploy(motionLight).Output.(*pilotage.DeployOutput).ProgramRef
	v2 := h.redeploy(strings.Replace(motionLight, `"brightness":180`, `"brightness":90`, 1)).Output.(*pilotage.DeployOutput).ProgramRef
	if v1 == v2 {
		t.Fatal("a changed body kept its program_ref")
	}
	version := h.eng.cat.View(h.eng.principal(ctx)).Version()
	h.stop()
	h.start()
	held1, held2 := h.eng.bodies.Get(v1) != nil, h.eng.bodies.Get(v2) != nil
	if held1 || !held2 {
		t.Fatalf("after restart: v1 held %v (want false), v2 held %v (want true)", held1, held2)
	}
	if got := h.eng.cat.View(h.eng.principal(ctx)).Version(); got != version {
		t.Fatalf("catalog version moved across the restart: %s -> %s", version, got)
	}
	for _, ref := range []string{v1, v2} {
		en, ok := h.eng.cat.View(h.eng.principal(ctx)).Get(ref)
		if !ok || en.Risk != pilotage.RiskControl {
			t.Fatalf("automation entry %s after restart: %+v", ref, en)
		}
	}
	// Roll back to v1: compiled on demand, deployed, and it is what runs.
	r := h.execute(ExecuteRequest{ProgramRef: v1, Input: json.RawMessage(`{"install":{"replace":true}}`)})
	if !r.Outcome.OK {
		t.Fatalf("rollback to %s: %+v %v", v1, r.Outcome, r.Diagnostics)
	}
	ri, err := h.eng.GetRule(ctx, "hall-motion-light", 0)
	if err != nil || ri.ProgramRef != v1 || ri.Plan == nil {
		t.Fatalf("after rollback: %+v %v", ri, err)
	}
}

// TestAutomationBodyOnlyForAutomations: every call step asks whether its
// target is a promoted automation; an action id is answered from the
// catalog (no storage read), an automation not held is compiled on demand.
func TestAutomationBodyOnlyForAutomations(t *testing.T) {
	h := newHouse(t, Config{})
	ctx := context.Background()
	// A version not installed is not held after a restart.
	ref := h.deploy(motionLight).Output.(*pilotage.DeployOutput).ProgramRef
	h.redeploy(strings.Replace(motionLight, `"brightness":180`, `"brightness":90`, 1))
	h.stop()
	h.start()
	p := h.eng.principal(ctx)
	if c, ok := h.eng.automationBody(p, "hall_light.set"); ok || c != nil {
		t.Fatal("an action resolved to a promoted body")
	}
	if h.eng.bodies.Get("hall_light.set") != nil {
		t.Fatal("an action id was loaded as a body")
	}
	if h.eng.bodies.Get(ref) != nil {
		t.Fatal("a version no rule installs was held at start-up")
	}
	if c, ok := h.eng.automationBody(p, ref); !ok || c == nil || h.eng.bodies.Get(ref) == nil {
		t.Fatal("a promoted automation not held was not compiled on demand and kept")
	}
}
