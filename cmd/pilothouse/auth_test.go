package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// twoPrincipals configures an owner and a guest who may not see locks,
// covers (the garage door) or notifications, and may not deploy.
func twoPrincipals(cfg *Config) {
	cfg.Principals = []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true},
		{Name: "guest", TokenHash: engine.HashToken("guest-token"), Scope: engine.Scope{DenyTypes: []string{"lock", "cover"}, DenyDevices: []string{"notify"}}},
	}
}

// ownerAndGuest starts a house with twoPrincipals and connects both over
// HTTP once the demo catalog is in.
func ownerAndGuest(t *testing.T) (a *app, owner, guest *client.Client) {
	t.Helper()
	cfg := testConfig(t)
	twoPrincipals(cfg)
	a = startTestApp(t, cfg)
	owner = mcpClient(t, a.URL()+"/mcp", map[string]string{"Authorization": "Bearer owner-token"}, "")
	guest = mcpClient(t, a.URL()+"/mcp", map[string]string{"Authorization": "Bearer guest-token"}, "")
	testutil.Eventually(t, 10*time.Second, "the demo catalog", func() bool {
		for _, id := range []string{"front_lock.set", "hall_motion.occupancy"} {
			got, isErr := call(t, owner, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": id})
			if isErr || got["entry"] == nil {
				return false
			}
		}
		return true
	})
	return a, owner, guest
}

func TestHTTPRequiresBearerToken(t *testing.T) {
	cfg := testConfig(t)
	twoPrincipals(cfg)
	a := startTestApp(t, cfg)
	for _, tc := range []struct{ name, header string }{{"no token", ""}, {"wrong token", "Bearer nope"}, {"not bearer", "Basic b3duZXI6eA=="}} {
		req, _ := http.NewRequest("POST", a.URL()+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: status %d, WWW-Authenticate %q", tc.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	// A browser origin that is not ours is refused.
	req, _ := http.NewRequest("POST", a.URL()+"/mcp", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer owner-token")
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Origin: status %d", resp.StatusCode)
	}
}

func TestRefusesUnauthenticatedNetworkListener(t *testing.T) {
	cfg := testConfig(t)
	cfg.Addr = "0.0.0.0:0"
	if _, err := startApp(t.Context(), cfg, quietLogger(), true); err == nil || !strings.Contains(err.Error(), "refusing to serve") {
		t.Fatalf("want a refusal, got %v", err)
	}
}

// TestGuestIndistinguishability: over HTTP, a guest's results for an
// invisible name and a nonexistent one are byte-identical (once the name
// itself is masked), and an owner's change to an invisible entry leaves the
// guest's catalog_version alone.
func TestGuestIndistinguishability(t *testing.T) {
	a, owner, guest := ownerAndGuest(t)
	mask := func(v any, name string) string {
		b, _ := json.Marshal(v)
		return strings.ReplaceAll(string(b), name, "NAME")
	}
	prog := func(id string) map[string]any {
		var p map[string]any
		_ = json.Unmarshal([]byte(`{"name":"lock-at-night","triggers":[{"id":"night","at":"23:00"}],"steps":[{"id":"lock","call":"`+id+`","args":{"state":"LOCK"}}]}`), &p)
		return p
	}
	const invisible, missing = "front_lock.set", "front_lokk.set"
	pairs := []struct {
		tool string
		args func(id string) map[string]any
	}{
		{"pilotage_validate", func(id string) map[string]any { return map[string]any{"language": "automation/1", "program": prog(id)} }},
		{"pilotage_lookup", func(id string) map[string]any {
			return map[string]any{"language": "automation/1", "verb": "get", "id": id}
		}},
		{"pilotage_execute", func(id string) map[string]any {
			return map[string]any{"language": "automation/1", "program": prog(id), "test_run": true}
		}},
	}
	for _, p := range pairs {
		a1, e1 := call(t, guest, p.tool, p.args(invisible))
		a2, e2 := call(t, guest, p.tool, p.args(missing))
		delete(a1, "run_id")
		delete(a2, "run_id")
		if e1 != e2 || mask(a1, invisible) != mask(a2, missing) {
			t.Errorf("%s: invisible and nonexistent differ:\n%s\n%s", p.tool, mask(a1, invisible), mask(a2, missing))
		}
		if strings.Contains(mask(a2, missing), "front_lock") {
			t.Errorf("%s: a hint leaks the invisible lock: %s", p.tool, mask(a2, missing))
		}
	}
	// Another principal's run is not found, like an unknown one.
	dep, _ := call(t, owner, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog(invisible), "test_run": true})
	r1, _ := call(t, guest, "pilotage_trace", map[string]any{"run_id": dep["run_id"]})
	r2, _ := call(t, guest, "pilotage_trace", map[string]any{"run_id": "run_00000000000000000000000000"})
	if mask(r1, "") != mask(r2, "") || r1["error"].(map[string]any)["kind"] != "not_found" {
		t.Errorf("trace of another principal's run: %v vs %v", r1, r2)
	}
	// An owner's change to an invisible entry does not move the guest's token.
	before, _ := call(t, guest, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "list", "limit": 1})
	ownerBefore, _ := call(t, owner, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "list", "limit": 1})
	if err := a.sim.Rename("garage_door", "garage_gate"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the rename", func() bool {
		got, _ := call(t, owner, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "list", "limit": 1})
		return got["catalog_version"] != ownerBefore["catalog_version"]
	})
	after, _ := call(t, guest, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "list", "limit": 1})
	if before["catalog_version"] != after["catalog_version"] {
		t.Fatal("an invisible change moved the guest's catalog_version")
	}
	// The guest may not deploy.
	den, _ := call(t, guest, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog("porch_light.set")})
	if den["outcome"] == nil || den["outcome"].(map[string]any)["status"] == "success" {
		t.Fatalf("guest deploy: %v", den)
	}
}
