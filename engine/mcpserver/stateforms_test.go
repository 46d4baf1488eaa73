package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestStateTriggerListsAndNot: a state trigger's to may list values, and
// not_to / not_from exclude values (Home Assistant's forms); installed
// rules fire on the MQTT changes exactly as their test runs predict.
func TestStateTriggerListsAndNot(t *testing.T) {
	s, c := ownerStack(t)
	ctx := context.Background()
	const list = `{"name": "lock-list", "mode": "parallel", "triggers": [{"id": "t", "state": "front_lock.lock_state", "to": ["unlocked", "not_fully_locked"]}],
	  "steps": [{"id": "n", "set": {"v": "{{ trigger.value }}"}}]}`
	const not = `{"name": "lock-not", "mode": "parallel", "triggers": [{"id": "t", "state": "front_lock.lock_state", "not_from": "not_fully_locked", "not_to": "locked"}],
	  "steps": [{"id": "n", "set": {"v": "{{ trigger.value }}"}}]}`
	deployed(t, c, list)
	deployed(t, c, not)
	testutil.Eventually(t, 5*time.Second, "the lock locked", func() bool {
		l, _ := s.devs.Live("front_lock.lock_state")
		return l.Value == "locked"
	})
	counts := map[string]int{}
	prev := "locked"
	for _, v := range []string{"unlocked", "not_fully_locked", "locked", "not_fully_locked", "unlocked", "not_fully_locked"} {
		want := map[string]bool{
			"lock-list": v == "unlocked" || v == "not_fully_locked",
			"lock-not":  prev != "not_fully_locked" && v != "locked",
		}
		scenario := `{"from": "` + prev + `", "value": "` + v + `"}`
		for rule, src := range map[string]string{"lock-list": list, "lock-not": not} {
			if oc, _, _ := testRun(t, c, src, scenario); (oc["status"] == "success") != want[rule] {
				t.Errorf("%s test run %s -> %s: %v, want firing %v", rule, prev, v, oc, want[rule])
			}
			if want[rule] {
				counts[rule]++
			}
		}
		if err := s.sim.Trigger(ctx, "front_lock", map[string]any{"lock_state": v}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 5*time.Second, "the lock "+v, func() bool {
			l, _ := s.devs.Live("front_lock.lock_state")
			return l.Value == v
		})
		prev = v
	}
	// The last change fires both: once they are recorded, every earlier
	// firing is too.
	for rule, n := range counts {
		testutil.Eventually(t, 5*time.Second, rule+" firings", func() bool { return len(firings(t, s, rule)) >= n })
		if got := len(firings(t, s, rule)); got != n {
			t.Errorf("%s fired %d times, want %d", rule, got, n)
		}
	}
}

// TestContinueOnError: a call with continue_on_error whose command fails
// (a computed brightness the light refuses) lets the run go on, in the
// real firing on an MQTT button press as in its test run.
func TestContinueOnError(t *testing.T) {
	s, c := ownerStack(t)
	const src = `{"name": "press-dim", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "dim", "call": "hall_light.set", "args": {"brightness": "{{ trigger.value }}"}, "continue_on_error": true},
	    {"id": "after", "set": {"went_on": true}}]}`
	oc, steps, _ := testRun(t, c, src, `{"value": "toggle"}`)
	if oc["status"] != "success" || status(steps["dim"]) != "failed" || status(steps["after"]) != "success" {
		t.Errorf("test run: %v, dim %v, after %v", oc, steps["dim"], steps["after"])
	}
	deployed(t, c, src)
	if err := s.sim.Press(context.Background(), "toggle"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the firing", func() bool { return len(firings(t, s, "press-dim")) > 0 })
	run := firings(t, s, "press-dim")[0]
	if env := string(run.Envelope); run.Status != "success" || !strings.Contains(env, `"status":"failed"`) || !strings.Contains(env, `"went_on":true`) {
		t.Errorf("firing %s: %s", run.Status, env)
	}
}
