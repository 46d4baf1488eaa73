package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// TestOwnerLiveFiringsBounded: an owner's rule building a large value and
// waiting, fired fast, took a server to 3.27 GB in 30 s: an admin was not
// bounded. Beyond limits.max_live_firings_admin running at once, a new
// firing of the owner's is refused as a guest's is: recorded skipped with
// the limit named, counted; the firings under the bound run. The owner by
// token and the default owner (no principals configured) alike. The
// rule's share of operations is out of the way (its first firing holds
// the share while it waits; building 100 KB is some 12,000 operations).
func TestOwnerLiveFiringsBounded(t *testing.T) {
	owner := &engine.Principal{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true, Admin: true}
	for _, tc := range []struct {
		name       string
		principals []*engine.Principal
		token      string
	}{
		{"the owner by token", []*engine.Principal{owner}, "owner-token"},
		{"no principals configured", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newHTTPStackCfg(t, engine.Config{Principals: tc.principals, Limits: rules.Limits{MaxLiveFiringsAdmin: 3, MaxRunOps: 1 << 40}}, storage.Options{})
			c := s.client(tc.token)
			deployed(t, c, `{"name":"hold","mode":"parallel","max":10,
			  "triggers":[{"id":"press","event":"bedroom_remote.action","value":"on"}],
			  "steps":[{"id":"big","set":{"v":"{{ repeat('x', 100000) }}"}},{"id":"wait","delay":"10m"}]}`)
			for range 5 {
				if err := s.sim.Press(context.Background(), "on"); err != nil {
					t.Fatal(err)
				}
			}
			var skipped []string
			testutil.Eventually(t, 15*time.Second, "3 firings running, 2 refused", func() bool {
				got := firingsByStatus(t, c, "hold")
				skipped = got["skipped"]
				return len(got["running"]) == 3 && len(skipped) == 2
			})
			for _, id := range skipped {
				out, isErr := callTool(t, c, "pilotage_trace", map[string]any{"run_id": id})
				oc, _ := out["outcome"].(map[string]any)
				if why, _ := oc["error"].(string); isErr || !strings.Contains(why, "limits.max_live_firings_admin") {
					t.Errorf("the refused firing %s does not name the limit: %v", id, out)
				}
			}
			if n := s.eng.RunStats().FiringsRefused; n != 2 {
				t.Errorf("runs.firings_refused %d, want 2", n)
			}
		})
	}
}

// firingsByStatus lists the run ids of rule's latest firings by status,
// as c sees them.
func firingsByStatus(t *testing.T, c *client.Client, rule string) map[string][]string {
	t.Helper()
	out := call(t, c, "pilothouse_rules", map[string]any{"last_firings": 10})
	got := map[string][]string{}
	for _, r := range out["rules"].([]any) {
		if r := r.(map[string]any); r["name"] == rule {
			for _, f := range r["last_firings"].([]any) {
				f := f.(map[string]any)
				got[f["status"].(string)] = append(got[f["status"].(string)], f["run_id"].(string))
			}
		}
	}
	return got
}
