package mcpserver_test

import (
	"fmt"
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

// TestSelectorTriggerHoldsEachState: a trigger on every hall sensor with
// "for" holds each sensor on its own (Home Assistant's entity lists): a
// sensor that stays fires once, naming itself; one that comes back within
// the hold ends only its own window and fires when it holds later.
func TestSelectorTriggerHoldsEachState(t *testing.T) {
	h := newZ2MHouse(t, nil)
	owner := h.client("")
	h.announce(z2mDev{"lamp_a", "light", "living"}, z2mDev{"pir_1", "motion", "hall"}, z2mDev{"pir_2", "motion", "hall"})
	const src = `{"name":"hall-empty","mode":"parallel","triggers":[{"id":"m","state":{"area":"hall","property":"occupancy"},"to":false,"for":"2s"}],
	  "steps":[{"id":"off","call":"lamp_a.set","args":{"state":"OFF"}}]}`
	v := validate(t, owner, src)
	if d := step(v["plan"], "m")["description"].(string); !strings.Contains(d, "for 2 seconds (each device on its own)") {
		t.Fatalf("trigger description %q", d)
	}
	if r := deployOf(t, owner, src); r["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("deploy: %s", js(r))
	}
	h.report("pir_1", `{"occupancy":true}`) // first values: baselines
	h.report("pir_2", `{"occupancy":true}`)
	n := h.count()
	h.report("pir_1", `{"occupancy":false}`)
	h.report("pir_2", `{"occupancy":false}`)
	h.report("pir_2", `{"occupancy":true}`) // back within the hold: its window ends
	h.commands(n, 1)
	because := func(ids []string) []string {
		var out []string
		for _, id := range ids {
			tr, _ := callTool(t, owner, "pilotage_trace", map[string]any{"run_id": id})
			for _, p := range []string{"pir_1", "pir_2"} {
				if strings.Contains(js(tr), "because "+p+".occupancy") {
					out = append(out, p)
				}
			}
		}
		return out
	}
	var ids []string
	testutil.Eventually(t, 10*time.Second, "the first firing's record", func() bool { ids = firingsOf(t, owner, "hall-empty"); return len(ids) == 1 })
	if got := because(ids); js(got) != `["pir_1"]` {
		t.Fatalf("the first firing came from %v", got)
	}
	h.report("pir_2", `{"occupancy":false}`)
	testutil.Eventually(t, 15*time.Second, "pir_2's firing", func() bool { ids = firingsOf(t, owner, "hall-empty"); return len(ids) >= 2 })
	h.eng.Flush()
	// Newest first; a window of pir_2 left open by its return would have
	// fired a third time before this one.
	if got := because(firingsOf(t, owner, "hall-empty")); js(got) != `["pir_2","pir_1"]` {
		t.Fatalf("firings came from %v", got)
	}
}

// TestSelectorTriggerOverflowIsBounded: a trigger on every hall sensor,
// deployed when the hall held two, watches at most 64 (the first by id)
// once 66 sensors joined: the 66th fires nothing, the first still does,
// and the rule's status and the engine's counter say so.
func TestSelectorTriggerOverflowIsBounded(t *testing.T) {
	h := newZ2MHouse(t, nil)
	owner := h.client("")
	devs := []z2mDev{{"lamp_a", "light", "living"}, {"pir_00", "motion", "hall"}}
	h.announce(devs...)
	const src = `{"name":"hall-any","mode":"parallel","triggers":[{"id":"m","state":{"area":"hall","property":"occupancy"},"to":true}],
	  "steps":[{"id":"on","call":"lamp_a.set","args":{"state":"ON"}}]}`
	if r := deployOf(t, owner, src); r["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("deploy: %s", js(r))
	}
	for i := 1; i < 66; i++ {
		devs = append(devs, z2mDev{fmt.Sprintf("pir_%02d", i), "motion", "hall"})
	}
	h.announce(devs...)
	n := h.count()
	for _, p := range []string{"pir_65", "pir_00"} { // the 66th by id, then the first
		h.report(p, `{"occupancy":false}`)
		h.report(p, `{"occupancy":true}`)
	}
	h.commands(n, 1)
	var ids []string
	testutil.Eventually(t, 10*time.Second, "the firing's record", func() bool { ids = firingsOf(t, owner, "hall-any"); return len(ids) >= 1 })
	h.eng.Flush()
	if ids = firingsOf(t, owner, "hall-any"); len(ids) != 1 {
		t.Fatalf("%d firings, want 1 (pir_00's)", len(ids))
	}
	if tr, _ := callTool(t, owner, "pilotage_trace", map[string]any{"run_id": ids[0]}); !strings.Contains(js(tr), "because pir_00.occupancy") {
		t.Fatalf("the firing: %s", js(tr))
	}
	out, _ := callTool(t, owner, "pilothouse_rules", map[string]any{})
	if !strings.Contains(js(out), "its selector addresses 66 states now; the trigger watches only the first 64 by id") {
		t.Fatalf("the rule's status does not say it: %s", js(out))
	}
	if got := h.eng.SelectorOverflow(); got.Now != 1 || got.Total != 1 {
		t.Fatalf("overflow counter %+v, want 1 now and 1 in all", got)
	}
}
