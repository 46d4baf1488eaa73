package engine

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

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
		h.waitFor(5*time.Second, "the firing", func() bool { return len(h.firings("throttled-porch")) == want })
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
	if !runs[0].OK || !strings.Contains(string(env), "throttled: the body ran less than 1h ago; it may run again at ") {
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
	h.waitFor(5*time.Second, "the firing", func() bool { return len(h.firings("hours")) == 1 })
	env := string(h.firings("hours")[0].Envelope)
	want := time.Now().In(tokyo)
	if !strings.Contains(env, `"fired":`+strconv.Itoa(want.Hour())) || !strings.Contains(env, `"now":`+strconv.Itoa(want.Hour())) || !strings.Contains(env, "+09:00") {
		t.Errorf("firing output: %s", env)
	}
}
