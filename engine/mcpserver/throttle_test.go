package mcpserver_test

import (
	"context"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
)

// firingStatuses lists a rule's latest firings' statuses, newest first.
func firingStatuses(t *testing.T, c *client.Client, rule string) []string {
	t.Helper()
	out := call(t, c, "pilothouse_rules", map[string]any{"last_firings": 20})
	for _, r := range out["rules"].([]any) {
		r := r.(map[string]any)
		if r["name"] != rule {
			continue
		}
		var st []string
		for _, f := range r["last_firings"].([]any) {
			st = append(st, f.(map[string]any)["status"].(string))
		}
		return st
	}
	return nil
}

// TestMultiPressThrottleSinceThroughMCP: the demo remote reports
// multi-press gestures, an event trigger matches a set of them, a
// throttled rule runs once per window (status throttled after), and
// since() reads how long a state has held.
func TestMultiPressThrottleSinceThroughMCP(t *testing.T) {
	s, c := ownerStack(t)
	got := call(t, c, "pilotage_lookup", map[string]any{"verb": "get", "id": "bedroom_remote.action"})
	schema, _ := got["entry"].(map[string]any)["output_schema"].(map[string]any)
	var enum []string
	for _, v := range schema["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	for _, want := range []string{"toggle", "toggle_double", "toggle_triple", "on_hold", "on_release"} {
		if !slices.Contains(enum, want) {
			t.Fatalf("remote actions %v lack %s", enum, want)
		}
	}

	v := call(t, c, "pilotage_validate", map[string]any{"program": prog(t, `{"name": "x",
	  "triggers": [{"id": "press", "event": "bedroom_remote.action", "value": ["toggle_double", "toggle_quadruple"]}],
	  "steps": [{"id": "s", "call": "porch_light.set", "args": {"state": "TOGGLE"}}]}`)})
	d := v["diagnostics"].([]any)
	if v["valid"] != false || len(d) != 1 || d[0].(map[string]any)["code"] != "unreachable_value" || d[0].(map[string]any)["severity"] != "error" ||
		d[0].(map[string]any)["path"] != "/triggers/0/value/1" {
		t.Errorf("a value the remote never sends (an error, as every unreachable value): %v", v)
	}

	deployed(t, c, `{"name": "double-tap", "throttle": "1h",
	  "triggers": [{"id": "press", "event": "bedroom_remote.action", "value": ["toggle_double", "toggle_triple"]}],
	  "steps": [{"id": "flip", "call": "porch_light.set", "args": {"state": "TOGGLE"}}]}`)
	ctx := context.Background()
	for i, a := range []string{"toggle", "toggle_double", "toggle_hold", "toggle_triple"} {
		if err := s.sim.Press(ctx, a); err != nil {
			t.Fatal(err)
		}
		want := map[int]int{0: 0, 1: 1, 2: 1, 3: 2}[i]
		testutil.Eventually(t, 5*time.Second, "firings after "+a, func() bool { return len(firingStatuses(t, c, "double-tap")) == want })
	}
	if st := firingStatuses(t, c, "double-tap"); strings.Join(st, " ") != "throttled success" {
		t.Errorf("firings %v, want the triple press throttled after the double", st)
	}

	tr := call(t, c, "pilotage_execute", map[string]any{"test_run": true, "program": prog(t, `{"name": "door-held",
	  "triggers": [{"id": "t", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "read", "set": {"held": "{{ since('front_door.contact') }}", "at": "{{ last_changed('front_door.contact') }}"}}]}`)})
	vars := tr["output"].(map[string]any)["vars"].(map[string]any)
	if held, ok := vars["held"].(float64); !ok || held < 0 || held > 600 {
		t.Errorf("since of the demo door: %v", vars)
	}
	live := call(t, c, "pilotage_lookup", map[string]any{"verb": "get", "id": "front_door.contact"})["live"].(map[string]any)
	if _, err := time.Parse(time.RFC3339Nano, live["last_changed"].(string)); err != nil {
		t.Errorf("live %v: want last_changed", live)
	}
}
