package rules

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestThrottleRun(t *testing.T) {
	comp := validDemo(t, `{"name": "t", "throttle": "1h", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
		"conditions": [{"id": "on", "expr": "trigger.value == 'on'"}],
		"steps": [{"id": "s", "call": "hall_light.set", "args": {"state": "ON"}}]}`, false)
	if comp.Throttle() != time.Hour || !strings.Contains(comp.Plan.Summary, "(mode single, at most once every hour)") {
		t.Fatalf("throttle %v, summary %q", comp.Throttle(), comp.Plan.Summary)
	}
	var last time.Time
	asked := 0
	gate := func(now time.Time) (time.Time, bool) {
		asked++
		if !last.IsZero() && now.Before(last.Add(time.Hour)) {
			return last.Add(time.Hour), true
		}
		last = now
		return time.Time{}, false
	}
	for _, c := range []struct {
		value, status string
		asked         int
	}{
		{"off", StatusConditionsNotMet, 0}, // conditions first: no window
		{"on", StatusSuccess, 1},
		{"on", StatusThrottled, 2},
	} {
		w := itSim(nil, Scenario{})
		res := itRun(t, comp, w, RunInput{Trigger: TriggerFire{ID: "press", Value: c.value}, Throttle: gate})
		if res.Outcome.Status != c.status || asked != c.asked || !res.Outcome.OK {
			t.Fatalf("%s: %+v, gate asked %d times", c.value, res.Outcome, asked)
		}
		if c.status == StatusThrottled {
			out := res.Output.(map[string]any)
			if out["throttled_until"] != itStart.Add(time.Hour).Format(time.RFC3339) || len(w.Calls()) != 0 ||
				!strings.HasPrefix(res.Outcome.Error, "throttled: the body ran less than 1 hour ago") {
				t.Errorf("throttled run: %+v %v calls %v", res.Outcome, out, w.Calls())
			}
		}
	}
	// Without a gate (a manual run) the throttle is not applied.
	res := Run(context.Background(), comp, itSim(nil, Scenario{}), RunInput{Trigger: TriggerFire{ID: "press", Value: "on"}})
	if res.Outcome.Status != StatusSuccess {
		t.Errorf("no gate: %+v", res.Outcome)
	}
}

func TestThrottleDiagnostics(t *testing.T) {
	for src, want := range map[string]string{
		`"-5m"`:            "bad_duration@/throttle",
		`"{{ params.x }}"`: "bad_duration@/throttle",
		`60`:               "type_mismatch@/throttle",
		`"1 hour"`:         "bad_duration@/throttle",
	} {
		res, err := Validate([]byte(`{"name": "t", "throttle": `+src+`, "triggers": [{"id": "p", "event": "bedroom_remote.action"}],
			"steps": [{"id": "s", "call": "hall_light.set", "args": {"state": "ON"}}]}`), demoCatalog(), ValidateOptions{Cache: itCache})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Diagnostics) != 1 || res.Diagnostics[0].Code+"@"+res.Diagnostics[0].Path != want {
			t.Errorf("throttle %s: %+v, want %s", src, res.Diagnostics, want)
		}
	}
}
