package pilotclient

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices/demo"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
)

// realServer starts the test house, serves its MCP binding over HTTP and
// returns the /mcp URL and the simulator.
func realServer(t *testing.T) (string, *demo.Sim) {
	t.Helper()
	h := testhouse.RunHouse(t, testhouse.Options{Inline: true})
	return h.ServeHTTP(mcpserver.HTTPOptions{Path: "/mcp"}), h.Sim
}

const wireRule = `{
  "name": "hall-motion-light",
  "description": "Hall light on when motion is seen",
  "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}],
  "steps": [{"id": "on", "call": "hall_light.set", "args": {"state": "ON", "brightness": 180}}]
}`

// roundTrip decodes the server's raw answer into the client's record and
// encodes it again: whatever member the record does not carry is lost,
// and the two JSON values differ.
func roundTrip(t *testing.T, what string, raw json.RawMessage, into any) {
	t.Helper()
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: the client cannot decode the server's answer: %v\n%s", what, err, raw)
	}
	again, err := json.Marshal(into)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(again, &got)
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s: the client's record drifted from the server's:\nserver: %s\nclient: %s", what, raw, again)
	}
}

// TestWireRecordsRoundTrip: every answer the client decodes, taken from
// the real server, survives the client's records unchanged: a member the
// server adds or renames and the client's types do not carry fails here.
func TestWireRecordsRoundTrip(t *testing.T) {
	url, sim := realServer(t)
	ctx := context.Background()
	c, err := Dial(ctx, Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	call := func(tool string, args map[string]any) json.RawMessage {
		t.Helper()
		var raw json.RawMessage
		if err := c.call(ctx, tool, args, &raw); err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return raw
	}
	with := func(kv ...any) map[string]any {
		m := map[string]any{"language": Language}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}

	roundTrip(t, "discover", call(pilotage.ToolDiscover, nil), &pilotage.Manifest{})
	roundTrip(t, "lookup get", call(pilotage.ToolLookup, with("verb", "get", "id", "hall_motion.occupancy")), &GetResult{})
	roundTrip(t, "validate (valid)", call(pilotage.ToolValidate, with("program", json.RawMessage(wireRule))), &ValidateResult{})
	roundTrip(t, "validate (invalid)", call(pilotage.ToolValidate, with("program", json.RawMessage(`{"name":"x","steps":[{"id":"a","call":"nope.set"}]}`))), &ValidateResult{})

	test := call(pilotage.ToolExecute, with("program", json.RawMessage(wireRule), "test_run", true,
		"input", map[string]any{"scenario": map[string]any{"trigger": "motion", "value": true}}))
	roundTrip(t, "execute (test run)", test, &ExecuteResult{})

	dep := call(pilotage.ToolExecute, with("program", json.RawMessage(wireRule)))
	var res ExecuteResult
	roundTrip(t, "execute (deploy)", dep, &res)
	roundTrip(t, "deploy output", res.Output, &pilotage.DeployOutput{})
	tr := call(pilotage.ToolTrace, map[string]any{"run_id": res.RunID})
	var trace pilotage.TraceResponse
	roundTrip(t, "trace", tr, &trace)
	roundTrip(t, "trace output", trace.Output, &pilotage.DeployOutput{})

	if err := sim.Trigger(ctx, "hall_motion", map[string]any{"occupancy": true}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the rule's firing", func() bool {
		rules, err := c.Rules(ctx)
		return err == nil && len(rules) == 1 && len(rules[0].LastFirings) == 1
	})
	roundTrip(t, "rules", call(pilotage.ToolRules, nil), &struct {
		Rules []pilotage.RuleInfo `json:"rules"`
	}{})
	roundTrip(t, "rule disable", call(pilotage.ToolRuleDisable, map[string]any{"name": "hall-motion-light"}), &struct {
		Rule          pilotage.RuleInfo `json:"rule"`
		CancelledRuns int               `json:"cancelled_runs"`
	}{})
}
