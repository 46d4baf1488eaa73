package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/rules"
)

// Keys that Home Assistant users port with the meaning they have there.

// TestQueuedMaxCountsTheRunningFiring: a queued rule's max counts the
// running firing and the waiting ones, as Home Assistant's does: with max 2,
// a third press while one runs and one waits is skipped. The presses go
// out on one connection and fire in order, well within the first body's
// delay.
func TestQueuedMaxCountsTheRunningFiring(t *testing.T) {
	h := newHouse(t, Config{})
	h.deploy(`{"name":"queued-two","mode":"queued","max":2,
	 "triggers":[{"id":"press","event":"bedroom_remote.action","value":"on"}],
	 "steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}},{"id":"hold","delay":"2s"}]}`)
	for range 3 {
		if err := h.sim.Press(context.Background(), "on"); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 15*time.Second, "three firings recorded and ended", func() bool {
		runs := h.firings("queued-two")
		for _, r := range runs {
			if r.Status == "running" {
				return false
			}
		}
		return len(runs) == 3
	})
	got := map[string]int{}
	for _, r := range h.firings("queued-two") {
		got[r.Status]++
	}
	if got[rules.StatusSuccess] != 2 || got[rules.StatusSkipped] != 1 {
		t.Fatalf("statuses %v, want 2 success and 1 skipped (max 2 counts the running firing)", got)
	}
}

// TestFromForMeansNotBackIn: a trigger with from and for but no to holds
// until the state is back in the value it left, as Home Assistant's: a
// third value does not end the window, a return does.
func TestFromForMeansNotBackIn(t *testing.T) {
	h := newHouse(t, Config{Approval: noApproval})
	notes := h.watch("pilothouse/notify/phone")
	h.set("living_thermostat", "system_mode", "heat")
	const hold = 2 * time.Second
	h.deploy(`{"name":"left-heat","triggers":[{"id":"left","state":"living_thermostat.system_mode","from":"heat","for":"2s"}],
	 "steps":[{"id":"tell","call":"notify.phone","args":{"message":"{{ trigger.from }} to {{ trigger.value }}"}}]}`)
	h.set("living_thermostat", "system_mode", "auto") // opens a window
	h.set("living_thermostat", "system_mode", "heat") // back in heat: ends it
	h.set("living_thermostat", "system_mode", "off")  // opens a new one
	h.set("living_thermostat", "system_mode", "auto") // a third value: keeps it
	last := time.Now()
	testutil.Eventually(t, 10*time.Second, "the notification", func() bool { return notes.count() > 0 })
	if got := notes.last()["message"]; got != "heat to off" {
		t.Fatalf("message %q, want the window opened by heat to off", got)
	}
	// A deadline, not a synchronisation: any other window would be due.
	testutil.Eventually(t, 10*time.Second, "every window to be due", func() bool { return time.Since(last) > hold+time.Second })
	h.eng.Flush()
	if n := notes.count(); n != 1 {
		b, _ := json.Marshal(h.firings("left-heat"))
		t.Fatalf("%d notifications, want 1: %s", n, b)
	}
}

// TestFromForWindowSurvivesRestart: a from-and-for window open at a
// restart resumes with the value it left, so it still fires (it was
// dropped: without to there was nothing to hold).
func TestFromForWindowSurvivesRestart(t *testing.T) {
	h := newHouse(t, Config{Approval: noApproval})
	notes := h.watch("pilothouse/notify/phone")
	h.set("living_thermostat", "system_mode", "heat")
	h.deploy(`{"name":"left-heat","triggers":[{"id":"left","state":"living_thermostat.system_mode","from":"heat","for":"1500ms"}],
	 "steps":[{"id":"tell","call":"notify.phone","args":{"message":"{{ trigger.from }} to {{ trigger.value }}"}}]}`)
	h.set("living_thermostat", "system_mode", "auto")
	testutil.Eventually(t, 10*time.Second, "the persisted window", func() bool {
		p, err := h.store.ListPending(context.Background(), "left-heat")
		return err == nil && len(p) == 1
	})
	h.stop()
	h.start()
	testutil.Eventually(t, 10*time.Second, "the notification after the restart", func() bool { return notes.count() > 0 })
	if got := notes.last()["message"]; got != "heat to auto" {
		t.Fatalf("message %q, want heat to auto", got)
	}
}

// TestFromForWindowSurvivesAChangeWhileDown: the state moved to a third
// value while the process was down; the window, which waits for the state
// to be back in the value it left, still fires after the restart, whether
// the engine or the catalog starts first.
func TestFromForWindowSurvivesAChangeWhileDown(t *testing.T) {
	for i, catalogFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("catalog first %v", catalogFirst), func(t *testing.T) {
			h := newHouse(t, Config{})
			h.set("living_thermostat", "system_mode", "heat")
			h.deploy(`{"name":"left-heat","triggers":[{"id":"left","state":"living_thermostat.system_mode","from":"heat","for":"2s"}],
			 "steps":[{"id":"note","set":{"seen":"{{ trigger.from }} to {{ trigger.value }}"}}]}`)
			h.set("living_thermostat", "system_mode", "auto")
			testutil.Eventually(t, 10*time.Second, "the persisted window", func() bool {
				p, err := h.store.ListPending(context.Background(), "left-heat")
				return err == nil && len(p) == 1
			})
			h.restartProcess(10+i, func() {
				if err := h.sim.Trigger(context.Background(), "living_thermostat", map[string]any{"system_mode": "off"}); err != nil {
					t.Fatal(err)
				}
			}, catalogFirst)
			testutil.Eventually(t, 10*time.Second, "the firing after the restart", func() bool { return len(h.firings("left-heat")) > 0 })
			if run := h.firings("left-heat")[0]; !strings.Contains(string(run.Envelope), "heat to auto") {
				t.Fatalf("firing: %s", run.Envelope)
			}
		})
	}
}

// TestOpenForWindowIsTheNextFire: while a "for" window is open, the rule's
// next fire is the window's end, marked held (it fires then if the state
// holds), as the web's rule page and pilothouse rules say; the window
// closed, the rule waits for its next event again.
func TestOpenForWindowIsTheNextFire(t *testing.T) {
	h := newHouse(t, Config{Approval: noApproval})
	h.set("living_thermostat", "system_mode", "heat")
	h.deploy(`{"name":"left-heat","triggers":[{"id":"left","state":"living_thermostat.system_mode","from":"heat","for":"2m"}],
	 "steps":[{"id":"tell","call":"notify.phone","args":{"message":"left heat"}}]}`)
	ctx := context.Background()
	if ri, err := h.eng.GetRule(ctx, "left-heat", 0); err != nil || ri.NextFire != nil || ri.NextFireHeld {
		t.Fatalf("before any change: %v %v %v, want no next fire", err, ri.NextFire, ri.NextFireHeld)
	}
	opened := time.Now()
	h.set("living_thermostat", "system_mode", "auto") // opens the window
	var ri RuleInfo
	testutil.Eventually(t, 10*time.Second, "the window's end as the next fire", func() bool {
		ri, _ = h.eng.GetRule(ctx, "left-heat", 0)
		return ri.NextFire != nil
	})
	if end := opened.Add(2 * time.Minute); !ri.NextFireHeld || !ri.Triggers[0].Held || ri.NextFire.Before(end.Add(-time.Second)) || ri.NextFire.After(end.Add(10*time.Second)) {
		t.Fatalf("next fire %v held %v (trigger %+v), want about %v and held", ri.NextFire, ri.NextFireHeld, ri.Triggers[0], end)
	}
	h.set("living_thermostat", "system_mode", "heat") // back: the window closes
	testutil.Eventually(t, 10*time.Second, "no next fire once the window closed", func() bool {
		ri, _ = h.eng.GetRule(ctx, "left-heat", 0)
		return ri.NextFire == nil && !ri.NextFireHeld
	})
}
