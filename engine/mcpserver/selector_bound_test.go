package mcpserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestEmptySelectorPlansItsBound: a call by area into a room that holds
// nothing yet is planned honestly (it matches nothing now, at the risk
// the rule will be held to: its type's, else control), so a rule for
// lights deploys without approval while one for locks still needs it.
// Once deployed, a light that joins the room is called and a lock that
// joins it is refused, with the reason in the trace.
func TestEmptySelectorPlansItsBound(t *testing.T) {
	h := newZ2MHouseCfg(t, engine.Config{WebURL: "http://house.test:8080"})
	owner := h.client("")
	h.announce(z2mDev{"pir_1", "motion", "hall"})
	const src = `{"name":"garage-off","triggers":[{"id":"m","state":"pir_1.occupancy","to":true}],
	  "steps":[{"id":"off","call":{"area":"garage","action":"set"},"args":{"state":"OFF"},"continue_on_error":true}]}`
	tests := []struct {
		name, src, risk string
		approval        bool
	}{
		{"any device", src, "control", false},
		{"locks", strings.NewReplacer("garage-off", "garage-lock", `"action":"set"`, `"type":"lock","action":"set"`, "OFF", "LOCK").Replace(src), "security", true},
	}
	for _, tt := range tests {
		plan := validate(t, owner, tt.src)["plan"].(map[string]any)
		ps := step(plan, "off")
		sum, _ := plan["summary"].(string)
		if ps["risk"] != tt.risk || plan["max_risk"] != tt.risk || !strings.Contains(ps["description"].(string), "(matches nothing now)") ||
			strings.Contains(sum, "calls nothing") || !strings.Contains(sum, "never an entry above this risk") {
			t.Fatalf("%s: plan %s", tt.name, js(plan))
		}
		r := deployOf(t, owner, tt.src)
		if tt.approval {
			pending(t, r)
		} else if r["outcome"].(map[string]any)["ok"] != true {
			t.Fatalf("%s: deploy %s", tt.name, js(r))
		}
	}

	h.announce(z2mDev{"pir_1", "motion", "hall"}, z2mDev{"lamp_g", "light", "garage"}, z2mDev{"door_lock", "lock", "garage"})
	n := h.count()
	h.report("pir_1", `{"occupancy":false}`)
	h.report("pir_1", `{"occupancy":true}`)
	if got := h.commands(n, 1); js(got) != `["lamp_g {\"state\":\"OFF\"}"]` {
		t.Fatalf("the firing sent %v", got)
	}
	var ids []string
	testutil.Eventually(t, 10*time.Second, "the firing's record", func() bool { ids = firingsOf(t, owner, "garage-off"); return len(ids) == 1 })
	tr, _ := callTool(t, owner, "pilotage_trace", map[string]any{"run_id": ids[0]})
	if st := step(tr["trace"], "off"); !strings.Contains(js(st), "above the control this rule was deployed and approved at") {
		t.Fatalf("trace step does not say the lock was refused: %s", js(st))
	}
	for _, c := range h.commands(n, 1) {
		if strings.HasPrefix(c, "door_lock") {
			t.Fatalf("the lock was called: %v", c)
		}
	}
}
