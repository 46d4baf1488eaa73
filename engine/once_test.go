package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

func oneCall(action, args string) json.RawMessage {
	return json.RawMessage(`{"name":"control.` + action + `","triggers":[{"id":"manual","cron":"0 0 1 1 *"}],"steps":[{"id":"control","call":"` + action + `","args":` + args + `}]}`)
}

func TestRunOnceRecordsAManualRun(t *testing.T) {
	viewer := &Principal{Name: "viewer", Scope: Scope{DenyTypes: []string{"lock"}}}
	h := newHouse(t, Config{Principals: []*Principal{Owner, viewer}})
	w := h.watch("zigbee2mqtt/+/set")
	resp := h.execute(ExecuteRequest{Program: oneCall("porch_light.set", `{"state":"ON"}`), Once: true})
	if !resp.Outcome.OK || resp.Outcome.Status != "success" {
		t.Fatalf("manual run: %+v", resp.Outcome)
	}
	testutil.Eventually(h.t, 5*time.Second, "the command", func() bool { return w.count() == 1 })
	if got := w.last(); got["state"] != "ON" {
		t.Fatalf("published %v", got)
	}
	run, err := h.store.GetRun(context.Background(), resp.RunID)
	if err != nil || run.Kind != storage.KindManual || run.Principal != "owner" || run.Rule != "" || !run.OK {
		t.Fatalf("stored run: %+v %v", run, err)
	}
	tr, err := h.eng.Trace(context.Background(), TraceRequest{RunID: resp.RunID})
	if err != nil || len(tr.Trace.Steps) != 3 || tr.Trace.Steps[0].Decisions[0].Took != "manual" ||
		tr.Trace.Steps[2].ID != "control" || tr.Trace.Steps[2].Calls[0] != "porch_light.set" {
		t.Fatalf("trace: %+v %v", tr, err)
	}
	// Nothing was installed.
	if rules, _ := h.eng.ListRules(context.Background(), 0); len(rules) != 0 {
		t.Fatalf("a manual run installed %d rules", len(rules))
	}
}

func TestRunOnceRiskGateAndScope(t *testing.T) {
	viewer := &Principal{Name: "viewer", Scope: Scope{DenyTypes: []string{"lock"}}}
	actor := &Principal{Name: "actor", Deploy: true, Scope: Scope{DenyTypes: []string{"lock"}}}
	h := newHouse(t, Config{Principals: []*Principal{Owner, viewer, actor}})
	w := h.watch("zigbee2mqtt/front_lock/set")
	run := func(p *Principal, prog json.RawMessage, confirmed pilotage.Risk) *ExecuteResponse {
		t.Helper()
		resp, err := h.eng.Execute(WithPrincipal(context.Background(), p), ExecuteRequest{Program: prog, Once: true, Confirmed: confirmed})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	unlock := oneCall("front_lock.set", `{"state":"UNLOCK"}`)
	for _, c := range []struct {
		name      string
		p         *Principal
		prog      json.RawMessage
		confirmed pilotage.Risk
		status    string
		errHas    string
	}{
		{"security unconfirmed", Owner, unlock, "", "denied", "risk is security"},
		{"security confirmed as control", Owner, unlock, pilotage.RiskControl, "denied", "risk is security"},
		{"external confirmed as security", Owner, oneCall("notify.phone", `{"message":"hi"}`), pilotage.RiskSecurity, "denied", "risk is external"},
		{"made-up risk", Owner, unlock, "whatever", "denied", "risk is security"},
		{"not a deployer", viewer, oneCall("porch_light.set", `{"state":"ON"}`), "", "denied", "may not act"},
		{"out of scope", actor, unlock, pilotage.RiskSecurity, "validation_error", "invalid"},
		{"bad argument", Owner, oneCall("porch_light.set", `{"state":"PURPLE"}`), "", "validation_error", "invalid"},
		{"conditions not met", Owner, json.RawMessage(`{"name":"x","triggers":[{"id":"m","state":"hall_motion.occupancy","to":true}],"conditions":[{"id":"never","expr":"1 > 2"}],"steps":[{"id":"s","call":"porch_light.set","args":{"state":"ON"}}]}`), "", "conditions_not_met", ""},
	} {
		resp := run(c.p, c.prog, c.confirmed)
		if resp.Outcome.OK != (c.status == "conditions_not_met") || resp.Outcome.Status != c.status || !strings.Contains(resp.Outcome.Error, c.errHas) {
			t.Errorf("%s: %+v", c.name, resp.Outcome)
		}
	}
	if n := w.count(); n != 0 {
		t.Fatalf("a refused run published %d commands", n)
	}
	if resp := run(Owner, unlock, pilotage.RiskSecurity); !resp.Outcome.OK {
		t.Fatalf("confirmed unlock: %+v", resp.Outcome)
	}
	testutil.Eventually(h.t, 5*time.Second, "the unlock", func() bool { return w.count() == 1 })
	if resp := run(Owner, oneCall("notify.phone", `{"message":"hi"}`), pilotage.RiskExternal); !resp.Outcome.OK {
		t.Fatalf("confirmed notification: %+v", resp.Outcome)
	}
}
