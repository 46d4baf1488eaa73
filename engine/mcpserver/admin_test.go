package mcpserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/storage"
)

// adminPrincipals: the owner; a guest that deploys; another deployer; an
// administrator that may not deploy and whose catalog is the living room.
func adminPrincipals() []*engine.Principal {
	return []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true, Admin: true},
		{Name: "guest", TokenHash: engine.HashToken("guest-token"), Deploy: true, Scope: engine.Scope{DenyDevices: []string{"front_lock"}}},
		{Name: "other", TokenHash: engine.HashToken("other-token"), Deploy: true},
		{Name: "ops", TokenHash: engine.HashToken("ops-token"), Admin: true, Scope: engine.Scope{Devices: []string{"living_*"}}},
	}
}

// motionFiring sets off the hall's motion sensor and returns the id of
// rule's firing as c lists it.
func motionFiring(t *testing.T, s *httpStack, c *client.Client, rule string) string {
	t.Helper()
	if err := s.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": true}); err != nil {
		t.Fatal(err)
	}
	var firing string
	testutil.Eventually(t, 10*time.Second, rule+" to fire", func() bool {
		if ids := firingsOf(t, c, rule); len(ids) > 0 {
			firing = ids[0]
		}
		return firing != ""
	})
	return firing
}

// firingsOf returns the run ids of a rule's latest firings as c lists them
// (nil when c does not see the rule).
func firingsOf(t *testing.T, c *client.Client, rule string) []string {
	t.Helper()
	out, isErr := callTool(t, c, "pilothouse_rules", map[string]any{"last_firings": 5})
	if isErr {
		t.Fatalf("rules: %v", out)
	}
	for _, r := range out["rules"].([]any) {
		r := r.(map[string]any)
		if r["name"] != rule {
			continue
		}
		ids := []string{}
		for _, f := range r["last_firings"].([]any) {
			ids = append(ids, f.(map[string]any)["run_id"].(string))
		}
		return ids
	}
	return nil
}

// traceOK reports whether c may fetch run id through pilotage_trace.
func traceOK(t *testing.T, c *client.Client, id string) bool {
	t.Helper()
	out, isErr := callTool(t, c, "pilotage_trace", map[string]any{"run_id": id})
	return !isErr && out["run_id"] == id
}

// TestAdministratorsSeeTheWholeHouse: a rule a guest installed fires; the
// owner and any administrator see the rule with its latest firings, fetch
// its deploy and firing traces and list them among the runs, and the owner
// manages it. Another deployer sees the rule (its program is in scope) but
// none of the guest's runs; an administrator without deploy sees but may not
// manage.
func TestAdministratorsSeeTheWholeHouse(t *testing.T) {
	s := newHTTPStack(t, adminPrincipals(), storage.Options{})
	owner, guest, other, ops := s.client("owner-token"), s.client("guest-token"), s.client("other-token"), s.client("ops-token")

	out, isErr := callTool(t, guest, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog(t,
		`{"name":"guest-hall","triggers":[{"id":"m","state":"hall_motion.occupancy","to":true}],"steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)})
	if oc, _ := out["outcome"].(map[string]any); isErr || oc["ok"] != true {
		t.Fatalf("the guest's deploy: %v", out)
	}
	deployRun := out["run_id"].(string)
	firing := motionFiring(t, s, guest, "guest-hall")

	for _, adm := range []struct {
		name string
		c    *client.Client
	}{{"owner", owner}, {"ops", ops}} {
		if ids := firingsOf(t, adm.c, "guest-hall"); !contains(ids, firing) {
			t.Errorf("%s: the guest's rule's firings: %v, want %s", adm.name, ids, firing)
		}
		for _, id := range []string{deployRun, firing} {
			if !traceOK(t, adm.c, id) {
				t.Errorf("%s cannot fetch the guest's run %s", adm.name, id)
			}
		}
	}
	if ids := firingsOf(t, other, "guest-hall"); ids == nil || len(ids) != 0 {
		t.Errorf("another deployer sees the guest's rule with firings %v, want the rule without any", ids)
	}
	if traceOK(t, other, firing) || traceOK(t, other, deployRun) {
		t.Error("another deployer fetched the guest's runs")
	}

	// The runs listing (the web UI's Runs page) has the deploy and the firing.
	runs, err := s.eng.ListRuns(engine.WithPrincipal(t.Context(), adminPrincipals()[0]), engine.RunFilter{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range runs {
		ids = append(ids, r.ID)
	}
	if !contains(ids, deployRun) || !contains(ids, firing) {
		t.Errorf("the owner's runs %v lack the guest's deploy %s or firing %s", ids, deployRun, firing)
	}

	if res, isErr := callTool(t, ops, "pilothouse_rule_disable", map[string]any{"name": "guest-hall"}); !isErr {
		t.Errorf("an administrator without deploy disabled the rule: %v", res)
	}
	res, isErr := callTool(t, owner, "pilothouse_rule_disable", map[string]any{"name": "guest-hall"})
	if rule, _ := res["rule"].(map[string]any); isErr || rule["status"] != "disabled" {
		t.Errorf("the owner disabling the guest's rule: %v", res)
	}
}
