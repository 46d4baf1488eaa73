package mcpserver_test

import (
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/storage"
)

// lockDB takes SQLite's write lock on the store's database (see
// testhouse.LockDatabase) and returns the release.
func lockDB(t *testing.T, dir string) (release func()) {
	t.Helper()
	return testhouse.LockDatabase(t, dir)
}

// callRaw calls a tool and fails the test on a transport (JSON-RPC) error:
// a storage failure must reach the client as a Pilotage result.
func callRaw(t *testing.T, c *client.Client, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	return testhouse.Call(t, c, name, args)
}

func errKind(out map[string]any) any {
	e, _ := out["error"].(map[string]any)
	return e["kind"]
}

// TestFailedDeployIsAllOrNothing: with the database locked by another
// connection, a deploy fails as an execute outcome (never JSON-RPC -32603)
// and leaves nothing behind: no automation entry another rule could call,
// no rule. Requests that need storage before a run starts are request
// errors; a test run that is not stored still runs. Once the lock goes, the
// same deploy succeeds.
func TestFailedDeployIsAllOrNothing(t *testing.T) {
	s := newHTTPStack(t, nil, storage.Options{BusyTimeout: 100 * time.Millisecond})
	c := s.client("")
	deployed(t, c, `{"name":"porch-on","triggers":[{"id":"t","at":"20:00"}],"steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}}]}`)
	before := automationIDs(t, c)
	phantom := `{"name":"phantom","triggers":[{"id":"t","at":"21:00"}],"steps":[{"id":"off","call":"porch_light.set","args":{"state":"OFF"}}]}`

	release := lockDB(t, s.dir)
	out, isErr := callRaw(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog(t, phantom)})
	oc, _ := out["outcome"].(map[string]any)
	if isErr || oc == nil || oc["ok"] != false || oc["status"] != "partial" || out["output"] != nil {
		t.Fatalf("deploy with storage locked: %v", out)
	}
	var ref string
	for _, st := range out["trace"].(map[string]any)["steps"].([]any) {
		st := st.(map[string]any)
		if o, _ := st["output"].(map[string]any); o["program_ref"] != nil {
			ref = o["program_ref"].(string)
		}
		if st["id"] == "install" && st["outcome"].(map[string]any)["ok"] != false {
			t.Errorf("install step of the failed deploy: %v", st)
		}
	}
	if ref == "" {
		t.Fatalf("the failed deploy's trace names no program_ref: %v", out)
	}
	if got := automationIDs(t, c); len(got) != len(before) || contains(got, ref) {
		t.Fatalf("a failed deploy left an automation in the catalog: %v (before %v)", got, before)
	}
	val, _ := callRaw(t, c, "pilotage_validate", map[string]any{"language": "automation/1", "program": prog(t, caller("uses-phantom", "22:00", ref))})
	if val["valid"] != false || masked(val["diagnostics"], ref) == "" || !containsCode(val, "unknown_name") {
		t.Fatalf("a rule calling the failed deploy's program validates: %v", val)
	}
	if contains(ruleNames(t, c), "phantom") {
		t.Fatal("a failed deploy installed its rule")
	}

	// Storage needed before a run starts: a request error, not a crash.
	for _, tc := range []struct {
		name string
		tool string
		args map[string]any
	}{
		{"idempotent execute", "pilotage_execute", map[string]any{"language": "automation/1", "program": prog(t, phantom), "test_run": true, "idempotency_key": "k1"}},
		{"stored test run", "pilotage_execute", map[string]any{"language": "automation/1", "program": prog(t, phantom), "test_run": true}},
		{"disable", "pilothouse_rule_disable", map[string]any{"name": "porch-on"}},
		{"remove", "pilothouse_rule_remove", map[string]any{"name": "porch-on"}},
	} {
		out, isErr := callRaw(t, c, tc.tool, tc.args)
		if !isErr || errKind(out) != "resource_exhausted" {
			t.Errorf("%s with storage locked: %v", tc.name, out)
		}
	}
	// A test run that is not stored needs no storage.
	out, isErr = callRaw(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog(t, phantom), "test_run": true, "store": false})
	if oc, _ := out["outcome"].(map[string]any); isErr || oc["ok"] != true {
		t.Errorf("unstored test run with storage locked: %v", out)
	}
	ri, err := s.eng.GetRule(engine.WithPrincipal(t.Context(), engine.Owner), "porch-on", 0)
	if err != nil || ri.Status != "enabled" {
		t.Fatalf("porch-on after refused changes: %+v %v", ri, err)
	}

	release()
	if got := deployed(t, c, phantom); got != ref {
		t.Fatalf("the deploy after the lock went minted %s, not %s", got, ref)
	}
	if !contains(automationIDs(t, c), ref) {
		t.Fatal("the successful deploy is not in the catalog")
	}
}

func containsCode(val map[string]any, code string) bool {
	ds, _ := val["diagnostics"].([]any)
	for _, d := range ds {
		if d.(map[string]any)["code"] == code {
			return true
		}
	}
	return false
}
