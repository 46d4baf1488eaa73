package recorder

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

// TestNarration reads narrations as a person does: sentences, the run's
// time in the server's zone, no "ok=true", no "(s)".
func TestNarration(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no zone database:", err)
	}
	started := time.Date(2026, 1, 15, 6, 0, 0, 0, time.UTC)
	trig := pilotage.TraceStep{ID: "triggers", Outcome: pilotage.Outcome{Status: "success", OK: true},
		Decisions: []pilotage.Decision{{At: "triggers", Took: "motion", Because: "hall_motion.occupancy changed to true"}}}
	call := func(id, status, errText string, calls ...string) pilotage.TraceStep {
		return pilotage.TraceStep{ID: id, Calls: calls, Outcome: pilotage.Outcome{Status: status, OK: status == "success" || status == "not_met", Error: errText}}
	}
	cases := []struct {
		name  string
		kind  string
		out   pilotage.Outcome
		steps []pilotage.TraceStep
		want  string
	}{
		{"firing", "firing", pilotage.Outcome{Status: "success", OK: true},
			[]pilotage.TraceStep{trig, call("on", "success", "", "hall_light.set"), call("note", "success", "", "notify.phone")},
			`Rule "hall" fired at 2026-01-15 07:00:00 CET (run r1). Trigger "motion" fired because hall_motion.occupancy changed to true. ` +
				`The run succeeded. It called hall_light.set (step "on") and notify.phone (step "note"). The trace has 3 steps.`},
		{"failed", "firing", pilotage.Outcome{Status: "failed", Error: `step "on": hall_light.set failed: refused.`},
			[]pilotage.TraceStep{trig, call("on", "failed", "refused", "hall_light.set")},
			`Rule "hall" fired at 2026-01-15 07:00:00 CET (run r1). Trigger "motion" fired because hall_motion.occupancy changed to true. ` +
				`The run failed: step "on": hall_light.set failed: refused. It called nothing. Step "on" failed: refused. The trace has 2 steps.`},
		{"selector, one refused", "firing", pilotage.Outcome{Status: "failed", Error: `step "all": front_lock.set failed: refused.`},
			[]pilotage.TraceStep{trig, {ID: "all", Calls: []string{"front_lock.set", "hall_light.set", "porch_light.set"},
				Output:  map[string]any{"calls": map[string]any{"front_lock.set": map[string]any{"error": "refused"}, "hall_light.set": "published", "porch_light.set": "published"}},
				Outcome: pilotage.Outcome{Status: "failed", Error: "refused"}}},
			`Rule "hall" fired at 2026-01-15 07:00:00 CET (run r1). Trigger "motion" fired because hall_motion.occupancy changed to true. ` +
				`The run failed: step "all": front_lock.set failed: refused. It called hall_light.set and porch_light.set (step "all"). Step "all" failed: refused. The trace has 2 steps.`},
		{"running, steps recorded", "firing", pilotage.Outcome{Status: "running", Error: "the firing is running"},
			[]pilotage.TraceStep{trig, call("on", "success", "", "hall_light.set")},
			`Rule "hall" fired at 2026-01-15 07:00:00 CET (run r1). Trigger "motion" fired because hall_motion.occupancy changed to true. ` +
				`The run is still running: the firing is running. So far it called hall_light.set (step "on"). The trace has 2 steps so far.`},
		{"running, nothing recorded yet", "firing", pilotage.Outcome{Status: "running", Error: "the firing is running"}, []pilotage.TraceStep{},
			`Rule "hall" fired at 2026-01-15 07:00:00 CET (run r1). The run is still running: the firing is running. ` +
				`Its trace is written when it ends: what it has called so far is not recorded yet (fetch it again later, or look up the devices' states).`},
		{"not met", "firing", pilotage.Outcome{Status: "conditions_not_met", OK: true},
			[]pilotage.TraceStep{trig, call("dark", "not_met", "")},
			`Rule "hall" fired at 2026-01-15 07:00:00 CET (run r1). Trigger "motion" fired because hall_motion.occupancy changed to true. ` +
				`Condition "dark" was not met. The run ended early because a condition was not met. It called nothing. The trace has 2 steps.`},
		{"test", "test", pilotage.Outcome{Status: "success", OK: true},
			[]pilotage.TraceStep{trig, call("on", "success", "", "hall_light.set")},
			`A test run started at 2026-01-15 07:00:00 CET (run r1). Trigger "motion" fired because hall_motion.occupancy changed to true. ` +
				`The run succeeded. It would have called hall_light.set (step "on"). The trace has 2 steps.`},
		{"deploy", "deploy", pilotage.Outcome{Status: "success", OK: true}, []pilotage.TraceStep{},
			`An installation of rule "hall" started at 2026-01-15 07:00:00 CET (run r1). The run succeeded. The trace has 0 steps.`},
		{"offline device, stored", "firing", pilotage.Outcome{Status: "success", OK: true},
			[]pilotage.TraceStep{trig, {ID: "on", Calls: []string{"living_plug.set"}, Outcome: pilotage.Outcome{Status: "success", OK: true},
				Output: json.RawMessage(`{"note":"its device living_plug is offline (last heard from 09:02): the command was published but may not reach it","published":true}`)},
				{ID: "v", Output: map[string]any{"note": "a variable, not a call's note"}, Outcome: pilotage.Outcome{Status: "success", OK: true}}},
			`Rule "hall" fired at 2026-01-15 07:00:00 CET (run r1). Trigger "motion" fired because hall_motion.occupancy changed to true. ` +
				`The run succeeded. It called living_plug.set (step "on"). Step "on": its device living_plug is offline (last heard from 09:02): the command was published but may not reach it. The trace has 3 steps.`},
		{"throttled", "firing", pilotage.Outcome{Status: "throttled", OK: true, Error: "throttled: the body ran less than 1 hour ago"}, nil,
			`Rule "hall" fired at 2026-01-15 07:00:00 CET (run r1). The run was held back by the rule's throttle: the body ran less than 1 hour ago.`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := &Envelope{RunID: "r1", Outcome: c.out}
			if c.steps != nil {
				env.Trace = &pilotage.Trace{Level: pilotage.LevelFull, Steps: c.steps}
			}
			got := Narrate(storage.Run{ID: "r1", Rule: "hall", Kind: c.kind, Started: started}, env, "", berlin)
			if got != c.want {
				t.Errorf("narration\n got %s\nwant %s", got, c.want)
			}
			for _, bad := range []string{"ok=", "(s)", "status success"} {
				if strings.Contains(got, bad) {
					t.Errorf("narration says %q: %s", bad, got)
				}
			}
		})
	}
}
