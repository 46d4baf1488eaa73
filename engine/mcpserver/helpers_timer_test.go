package mcpserver_test

import (
	"testing"
)

// TestTestRunSimulatesATimersEnd: a test run that starts a timer and
// waits for it sees <id>.finished when its virtual clock passes the
// timer's end, and the timer idle after it; a timer cancelled before its
// end never finishes; nothing real changes.
func TestTestRunSimulatesATimersEnd(t *testing.T) {
	_, owner, _ := helperStack(t)
	if out, isErr := callTool(t, owner, "pilothouse_helpers", map[string]any{"verb": "create",
		"helper": map[string]any{"id": "tea", "kind": "timer", "duration": "PT4M"}}); isErr {
		t.Fatalf("create: %s", js(out))
	}
	const waitDone = `{"id": "done", "wait": {"event": "tea.finished"}, "timeout": "10m", "continue_on_timeout": true}`
	tests := []struct {
		name, steps string
		finished    bool
		elapsed     float64 // ms on the virtual clock
	}{
		{"ends", `{"id": "go", "call": "tea.start", "args": {"duration": "PT5M"}}, ` + waitDone, true, 300000},
		{"default duration", `{"id": "go", "call": "tea.start"}, ` + waitDone, true, 240000},
		{"cancelled first", `{"id": "go", "call": "tea.start"}, {"id": "pause", "delay": "1m"}, {"id": "stop", "call": "tea.cancel"}, ` + waitDone, false, 660000},
		// Its finished event came before the wait; no second end follows.
		{"finished by hand", `{"id": "go", "call": "tea.start"}, {"id": "stop", "call": "tea.finish"}, ` + waitDone, false, 600000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := execute(t, owner, map[string]any{"test_run": true, "program": prog(t, `{"name": "tea-time",
			  "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
			  "steps": [`+tt.steps+`, {"id": "after", "set": {"met": "{{ steps.done.output.met }}", "state": "{{ state('tea.state') }}"}}]}`)})
			if oc := res["outcome"].(map[string]any); oc["ok"] != true {
				t.Fatalf("test run: %s", js(res))
			}
			vars := js(res["output"].(map[string]any)["vars"])
			want := `{"met":true,"state":"idle"}`
			if !tt.finished {
				want = `{"met":false,"state":"idle"}`
			}
			if el := res["trace"].(map[string]any)["stats"].(map[string]any)["elapsed_ms"]; vars != want || el != tt.elapsed {
				t.Errorf("vars %s after %v ms, want %s after %v: %s", vars, el, want, tt.elapsed, js(res["trace"]))
			}
		})
	}
	if v := liveOf(t, owner, "tea.state"); v != "idle" {
		t.Errorf("the real timer after the test runs: %v", v)
	}
}
