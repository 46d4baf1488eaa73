package engine

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// TestThrottleLive: a throttled rule runs its body once per window; later
// firings that pass the conditions end throttled (ok, nothing published),
// firings that do not are conditions_not_met and do not open a window,
// and the window survives a restart.
func TestThrottleLive(t *testing.T) {
	h := newHouse(t, Config{})
	h.deploy(`{"name": "throttled-porch", "throttle": "1h",
	  "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "conditions": [{"id": "not_off", "expr": "trigger.value != 'off'"}],
	  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "TOGGLE"}}]}`)
	press := func(action string, want int) {
		t.Helper()
		if err := h.sim.Press(context.Background(), action); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(h.t, 5*time.Second, "the firing", func() bool { return len(h.firings("throttled-porch")) == want })
	}
	press("off", 1) // conditions_not_met: no window
	press("on", 2)  // runs, opens the window
	press("toggle", 3)
	runs := h.firings("throttled-porch")
	got := []string{runs[2].Status, runs[1].Status, runs[0].Status}
	if strings.Join(got, " ") != "conditions_not_met success throttled" {
		t.Fatalf("statuses %v", got)
	}
	env := runs[0].Envelope
	if !runs[0].OK || !strings.Contains(string(env), "throttled: the body ran less than 1 hour ago; it may run again at ") {
		t.Errorf("throttled firing: ok=%v %s", runs[0].OK, env)
	}
	h.stop()
	h.start()
	press("on", 4)
	if st := h.firings("throttled-porch")[0].Status; st != rules.StatusThrottled {
		t.Errorf("after a restart: %s, want throttled (the window was stored)", st)
	}
}

// TestFiringTimesAreLocal: a firing's trigger.time and now() are in the
// configured zone, whatever the system's.
func TestFiringTimesAreLocal(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no zone data:", err)
	}
	h := newHouse(t, Config{TimeZone: tokyo})
	h.deploy(`{"name": "hours", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "read", "set": {"fired": "{{ hour(trigger.time) }}", "now": "{{ hour(now()) }}", "zone": "{{ trigger.time }}"}}]}`)
	if err := h.sim.Press(context.Background(), "on"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(h.t, 5*time.Second, "the firing", func() bool { return len(h.firings("hours")) == 1 })
	env := string(h.firings("hours")[0].Envelope)
	want := time.Now().In(tokyo)
	if !strings.Contains(env, `"fired":`+strconv.Itoa(want.Hour())) || !strings.Contains(env, `"now":`+strconv.Itoa(want.Hour())) || !strings.Contains(env, "+09:00") {
		t.Errorf("firing output: %s", env)
	}
}

// TestBoundThrottledRuleAcrossRestart: a rule with catalog params and a
// throttle keeps both across a restart (it is bound again from its
// recorded binding, its throttle window resumed from the stored firing),
// and its plan names the configured zone before and after.
func TestBoundThrottledRuleAcrossRestart(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no zone data:", err)
	}
	h := newHouse(t, Config{TimeZone: tokyo})
	ctx := context.Background()
	resp := h.execute(ExecuteRequest{Program: []byte(`{"name": "any-remote", "throttle": "1h",
	  "params": {"type": "object", "required": ["remote", "light"], "properties": {
	    "remote": {"type": "string", "catalog": {"kind": "event", "type": "remote"}},
	    "light": {"type": "string", "catalog": {"kind": "action", "type": "light", "max_risk": "control"}}}},
	  "triggers": [{"id": "press", "event": "{{ params.remote }}", "value": ["on", "on_double"]}],
	  "conditions": [{"id": "day", "time": {"weekday": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]}}],
	  "steps": [{"id": "on", "call": "{{ params.light }}", "args": {"state": "TOGGLE"}}]}`),
		Input: []byte(`{"remote": "bedroom_remote.action", "light": "porch_light.set"}`)})
	if !resp.Outcome.OK {
		t.Fatalf("deploy: %+v %+v", resp.Outcome, resp.Diagnostics)
	}
	const want = "(Asia/Tokyo)"
	if d := planDesc(resp.Output.(*pilotage.DeployOutput).Plan, "day"); !strings.HasSuffix(d, want) {
		t.Errorf("deploy plan: %q", d)
	}
	press := func(action string, want int) {
		t.Helper()
		if err := h.sim.Press(ctx, action); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(h.t, 5*time.Second, "the firing", func() bool { return len(h.firings("any-remote")) == want })
	}
	press("on", 1)
	press("off", 1) // not in the value list: no firing
	press("on_double", 2)
	h.stop()
	h.start()
	ri, err := h.eng.GetRule(ctx, "any-remote", 0)
	if err != nil || ri.Plan == nil {
		t.Fatalf("after restart: %v", err)
	}
	if d := planDesc(ri.Plan, "day"); !strings.HasSuffix(d, want) || callsOf(ri.Plan, "on") != "porch_light.set" {
		t.Errorf("after restart: %s, day %q, on calls %q", ri.Status, d, callsOf(ri.Plan, "on"))
	}
	press("on", 3)
	runs := h.firings("any-remote")
	if got := []string{runs[2].Status, runs[1].Status, runs[0].Status}; len(runs) != 3 || strings.Join(got, " ") != "success throttled throttled" {
		t.Errorf("statuses %v, want the window kept across the restart", got)
	}
}

// planDesc is the description of plan step id.
func planDesc(p *pilotage.Plan, id string) string {
	for _, s := range p.Steps {
		if s.ID == id {
			return s.Description
		}
	}
	return ""
}

// TestThrottleSurvivesCrash: the process dies right after a throttled
// rule's command went out, before the recorder wrote the firing (its
// batch lingers); simulated by closing the database under the running
// engine. After a restart on the same data folder the window holds: the
// next press within the hour ends throttled and sends nothing.
func TestThrottleSurvivesCrash(t *testing.T) {
	h := newHouse(t, Config{})
	h.deploy(`{"name": "throttled-porch", "throttle": "1h",
	  "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "TOGGLE"}}]}`)
	cmds := h.watch("zigbee2mqtt/porch_light/set")
	ctx := context.Background()
	if err := h.sim.Press(ctx, "on"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the command", func() bool { return cmds.count() == 1 })
	_ = h.store.Close() // the crash: what the recorder holds is never written
	h.eng.Close()
	h.start()
	if err := h.sim.Press(ctx, "on"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the second firing", func() bool {
		runs := h.firings("throttled-porch")
		return len(runs) > 0 && runs[0].Status != rules.StatusInterrupted
	})
	if st := h.firings("throttled-porch")[0].Status; st != rules.StatusThrottled || cmds.count() != 1 {
		t.Errorf("after the crash: %s with %d commands, want throttled with 1 (the window was stored before the command)", st, cmds.count())
	}
}
