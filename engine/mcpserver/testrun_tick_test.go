package mcpserver_test

import (
	"testing"
)

// TestTestRunSimulatesTheRealTick: a test run of a schedule at
// scenario.now simulates the tick the scheduler makes at now or last
// before it. A cron every 5 s asked at 10:00:05 was simulated at the
// minute's first tick, 09:59:10.
func TestTestRunSimulatesTheRealTick(t *testing.T) {
	_, c := sunStack(t)
	for _, tc := range []struct {
		name, trigger, now, want string
	}{
		{"every 5 s on a tick", `"cron": "*/5 * * * * *"`, "2026-01-19T10:00:05+01:00", "2026-01-19T10:00:05+01:00"},
		{"every 5 s between ticks", `"cron": "*/5 * * * * *"`, "2026-01-19T10:00:07+01:00", "2026-01-19T10:00:05+01:00"},
		{"every 20 s", `"cron": "*/20 * * * * *"`, "2026-01-19T10:00:45+01:00", "2026-01-19T10:00:40+01:00"},
		{"once a day", `"at": "06:30"`, "2026-01-19T06:30:40+01:00", "2026-01-19T06:30:00+01:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `{"name": "tick", "triggers": [{"id": "tick", ` + tc.trigger + `}],
			  "steps": [{"id": "say", "set": {"fired": "{{ trigger.time }}"}}]}`
			oc, steps, _ := testRun(t, c, src, `{"now": "`+tc.now+`"}`)
			in, _ := steps["tick"]["input"].(map[string]any)
			out, _ := steps["say"]["output"].(map[string]any)
			if oc["status"] != "success" || in["fires_at"] != tc.want || out["fired"] != tc.want {
				t.Errorf("outcome %v, fires_at %v, trigger.time %v; want %s", oc, in["fires_at"], out["fired"], tc.want)
			}
		})
	}
}
