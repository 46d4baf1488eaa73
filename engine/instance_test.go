package engine

import (
	"context"
	"encoding/json"
	"testing"
)

// TestInstancesSurviveRestart: a reusable program deployed for two inputs
// is two rules, and both are armed again after a restart.
func TestInstancesSurviveRestart(t *testing.T) {
	h := newHouse(t, Config{})
	prog := json.RawMessage(`{"name":"evening","params":{"type":"object","required":["light"],"properties":{"light":{"type":"string","catalog":{"kind":"action","type":"light","max_risk":"control"}}}},
	  "triggers":[{"id":"t","at":"20:00"}],"steps":[{"id":"on","call":"{{ params.light }}","args":{"state":"ON"}}]}`)
	for _, in := range []string{`{"light":"porch_light.set"}`, `{"light":"hall_light.set"}`} {
		if r := h.execute(ExecuteRequest{Program: prog, Input: json.RawMessage(in)}); !r.Outcome.OK {
			t.Fatalf("deploy %s: %+v", in, r.Outcome)
		}
	}
	h.stop()
	h.start()
	list, err := h.eng.ListRules(context.Background(), 0)
	if err != nil || len(list) != 2 || list[0].Name != "evening" || list[1].Name != "evening-hall_light" {
		t.Fatalf("rules after restart: %+v %v", list, err)
	}
	for _, r := range list {
		if r.Status != "enabled" || r.NextFire == nil {
			t.Errorf("%s after restart: %s, next fire %v", r.Name, r.Status, r.NextFire)
		}
	}
}
