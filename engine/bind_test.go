package engine

import (
	"context"

	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
)

// motionLightBlueprint is a reusable motion light: the sensor, the light
// and the hold time are params (catalog references for the first two).
const motionLightBlueprint = `{"name":"motion-light","mode":"restart",
 "params":{"type":"object","required":["sensor","light"],"properties":{
  "sensor":{"type":"string","catalog":{"kind":"state","type":"binary_sensor","reports":[true,false]}},
  "light":{"type":"string","catalog":{"kind":"action","type":"light","accepts":{"state":["ON","OFF"]},"max_risk":"control"}},
  "hold":{"type":"string","format":"duration","default":"2m"}}},
 "triggers":[{"id":"motion","state":"{{ params.sensor }}","to":true}],
 "steps":[{"id":"on","call":"{{ params.light }}","args":{"state":"ON"}},
  {"id":"quiet","wait":{"state":"{{ params.sensor }}","to":false,"for":"{{ params.hold }}"},"timeout":"1h"},
  {"id":"off","call":"{{ params.light }}","args":{"state":"OFF"}}]}`

func TestBoundRuleFiresAndSurvivesRestart(t *testing.T) {
	h := newHouse(t, Config{})
	ctx := context.Background()
	cmds := h.watch("zigbee2mqtt/porch_light/set")
	resp := h.execute(ExecuteRequest{Program: json.RawMessage(motionLightBlueprint),
		Input: json.RawMessage(`{"sensor":"hall_motion.occupancy","light":"porch_light.set","hold":"1h"}`)})
	if !resp.Outcome.OK {
		b, _ := json.Marshal(resp)
		t.Fatalf("deploy: %s", b)
	}
	out := resp.Output.(*pilotage.DeployOutput)
	if out.Plan == nil || callsOf(out.Plan, "on") != "porch_light.set" || out.Triggers[0].Entity != "hall_motion.occupancy" {
		t.Fatalf("deploy output: %+v", out)
	}
	r, err := h.store.GetRule(ctx, "motion-light")
	if err != nil || !strings.Contains(string(r.Binding), `"porch_light.set"`) {
		t.Fatalf("stored binding: %s %v", r.Binding, err)
	}
	fire := func(what string) {
		n := cmds.count()
		_ = h.sim.Trigger(ctx, "hall_motion", map[string]any{"occupancy": false})
		_ = h.sim.Trigger(ctx, "hall_motion", map[string]any{"occupancy": true})
		testutil.Eventually(h.t, 5*time.Second, what, func() bool { return cmds.count() > n })
	}
	fire("a firing of the bound rule")
	h.stop()
	h.start()
	ri, err := h.eng.GetRule(ctx, "motion-light", 0)
	if err != nil || ri.Status != "enabled" || ri.Plan == nil || callsOf(ri.Plan, "on") != "porch_light.set" || ri.MaxRisk != "control" {
		t.Fatalf("after restart: %+v %v", ri, err)
	}
	fire("a firing after restart")
	reads, _ := h.eng.RuleReads(ctx, "motion-light")
	if len(reads) != 1 || reads[0] != "hall_motion.occupancy" {
		t.Errorf("reads %v", reads)
	}
}

// callsOf is what the plan step id calls.
func callsOf(p *pilotage.Plan, id string) string {
	for _, s := range p.Steps {
		if s.ID == id {
			return strings.Join(s.Calls, ",")
		}
	}
	return ""
}
