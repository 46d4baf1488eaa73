package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
)

// TestReachSurvivesRestartWithSteppedBackClock: who may see an automation
// is decided from everything it reaches through the automations it calls.
// After a restart that holds even when the wall clock stepped back between
// promoting a callee and its caller (stored creation times out of
// dependency order).
func TestReachSurvivesRestartWithSteppedBackClock(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	living := &Principal{Name: "living", Deploy: true, Scope: Scope{Devices: []string{"living_*"}}}
	noPlug := &Principal{Name: "noplug", Scope: Scope{DenyDevices: []string{"living_plug"}}}
	h := newHouse(t, Config{Principals: []*Principal{Owner, living, noPlug}, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	as := func(p *Principal) context.Context { return WithPrincipal(context.Background(), p) }

	resp, err := h.eng.Execute(as(living), ExecuteRequest{Program: []byte(`{"name":"plug-off","triggers":[{"id":"t","at":"01:00"}],"steps":[{"id":"off","call":"living_plug.set","args":{"state":"OFF"}}]}`)})
	if err != nil || !resp.Outcome.OK {
		t.Fatalf("deploy callee: %+v %v", resp, err)
	}
	callee := resp.Output.(*pilotage.DeployOutput).ProgramRef
	now.Add(-int64(time.Hour)) // the clock steps back
	resp, err = h.eng.Execute(as(living), ExecuteRequest{Program: []byte(`{"name":"plug-off-late","triggers":[{"id":"t","at":"02:00"}],"steps":[{"id":"run","call":"` + callee + `"}]}`)})
	if err != nil || !resp.Outcome.OK {
		t.Fatalf("deploy caller: %+v %v", resp, err)
	}
	caller := resp.Output.(*pilotage.DeployOutput).ProgramRef

	check := func(when string) {
		t.Helper()
		for _, ref := range []string{callee, caller} {
			if _, err := h.eng.Lookup(as(living), LookupRequest{Verb: "get", ID: ref}); err != nil {
				t.Errorf("%s: living cannot see %s: %v", when, ref, err)
			}
			if _, err := h.eng.Lookup(as(noPlug), LookupRequest{Verb: "get", ID: ref}); err == nil {
				t.Errorf("%s: a principal denied the plug sees %s", when, ref)
			}
		}
		if _, err := h.eng.GetRule(as(noPlug), "plug-off-late", 0); err == nil {
			t.Errorf("%s: a principal denied the plug sees the rule reaching it", when)
		}
	}
	check("before the restart")
	h.stop()
	h.start()
	check("after the restart")
}

// TestRuleVersionsFollowScope: a rule the caller may see lists only the
// versions it may see: an older version reaching the front lock stays
// hidden from a principal denied the lock.
func TestRuleVersionsFollowScope(t *testing.T) {
	guest := &Principal{Name: "guest", Scope: Scope{DenyDevices: []string{"front_lock"}}}
	h := newHouse(t, Config{Principals: []*Principal{Owner, guest}, Approval: noApproval})
	v1 := h.deploy(`{"name":"shared","triggers":[{"id":"t","at":"23:00"}],"steps":[{"id":"a","call":"front_lock.set","args":{"state":"LOCK"}}]}`).Output.(*pilotage.DeployOutput).ProgramRef
	v2 := h.redeploy(`{"name":"shared","triggers":[{"id":"t","at":"23:00"}],"steps":[{"id":"a","call":"porch_light.set","args":{"state":"ON"}}]}`).Output.(*pilotage.DeployOutput).ProgramRef
	ctx := WithPrincipal(context.Background(), guest)
	vs, err := h.eng.RuleVersions(ctx, "shared")
	if err != nil || len(vs) != 1 || vs[0].Ref != v2 {
		t.Fatalf("the guest's versions of shared: %+v %v (v1 %s, v2 %s)", vs, err, v1, v2)
	}
	if all, err := h.eng.RuleVersions(context.Background(), "shared"); err != nil || len(all) != 2 {
		t.Fatalf("the owner's versions: %+v %v", all, err)
	}
}
