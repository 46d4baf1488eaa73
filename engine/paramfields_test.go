package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
)

// humidityFan's threshold is a param field: the rule runs bound to it.
const humidityFan = `{"name":"humidity-fan",
 "params":{"type":"object","properties":{"humidity_level":{"type":"number","default":65}}},
 "triggers":[{"id":"humid","state":"outdoor_weather.humidity","above":"{{ params.humidity_level }}"}],
 "steps":[{"id":"fan","call":"living_plug.set","args":{"state":"ON"}}]}`

// TestParamFieldRulePlan: an installed rule whose threshold is a param
// shows the plan of what it runs, the bound value, also after a restart.
func TestParamFieldRulePlan(t *testing.T) {
	h := newHouse(t, Config{})
	ctx := context.Background()
	resp := h.execute(ExecuteRequest{Program: json.RawMessage(humidityFan), Input: json.RawMessage(`{"humidity_level":70}`)})
	if !resp.Outcome.OK {
		b, _ := json.Marshal(resp)
		t.Fatalf("deploy: %s", b)
	}
	check := func(when string) {
		ri, err := h.eng.GetRule(ctx, "humidity-fan", 0)
		if err != nil || ri.Plan == nil || trigText(ri.Plan, "humid") != "When outdoor_weather.humidity goes above 70" {
			t.Errorf("%s: %+v %v", when, ri.Plan, err)
		}
	}
	check("installed")
	h.stop()
	h.start()
	check("after a restart")
}

// trigText is the description of the plan step id.
func trigText(p *pilotage.Plan, id string) string {
	for _, s := range p.Steps {
		if s.ID == id {
			return s.Description
		}
	}
	return ""
}
