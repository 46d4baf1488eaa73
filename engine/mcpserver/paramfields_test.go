package mcpserver_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/storage"
)

// humidityFan is the blueprint "fan on above humidity_level": the
// threshold is a param, as a blueprint's !input.
const humidityFan = `{
  "name": "humidity-fan",
  "params": {"type": "object", "properties": {
    "humidity_level": {"type": "number", "minimum": 0, "maximum": 100, "default": 65}}},
  "triggers": [{"id": "humid", "state": "outdoor_weather.humidity", "above": "{{ params.humidity_level }}"}],
  "steps": [{"id": "fan", "call": "living_plug.set", "args": {"state": "ON"}}]
}`

// doorOpenAlert is "alert after a door is open for open_duration".
const doorOpenAlert = `{
  "name": "door-open-alert",
  "params": {"type": "object", "properties": {
    "open_duration": {"type": "string", "format": "duration", "default": "10m"}}},
  "triggers": [{"id": "open", "state": "front_door.contact", "to": false, "for": "{{ params.open_duration }}"}],
  "steps": [{"id": "alert", "call": "living_plug.set", "args": {"state": "ON"}}]
}`

// TestParamThresholdOverMCP: a threshold param validates (the plan names
// it), test-runs bound to the input, deploys (the plan shows the bound
// value), fires on a real MQTT reading above the bound threshold and not
// on one between the default and it, and keeps its binding across a
// restart.
func TestParamThresholdOverMCP(t *testing.T) {
	s, c := ownerStack(t)

	v := validate(t, c, humidityFan)
	if v["valid"] != true {
		t.Fatalf("validate: %s", js(v))
	}
	if d := step(v["plan"], "humid")["description"]; d != "When outdoor_weather.humidity goes above {{ params.humidity_level }} (default 65)" {
		t.Errorf("unbound plan: %v", d)
	}

	for _, tc := range []struct {
		value float64
		fires bool
	}{{75, true}, {68, false}} {
		in := map[string]any{"humidity_level": 70, "scenario": map[string]any{"value": tc.value, "from": 50}}
		tr := execute(t, c, map[string]any{"program": prog(t, humidityFan), "test_run": true, "input": in})
		out, _ := tr["output"].(map[string]any)
		fired := strings.Contains(js(out["calls"]), "living_plug.set")
		if fired != tc.fires || !strings.Contains(js(step(out["plan"], "humid")), "above 70") {
			t.Errorf("test run at %g: fired %v, want %v: %s", tc.value, fired, tc.fires, js(tr))
		}
	}

	bad := execute(t, c, map[string]any{"program": prog(t, humidityFan), "input": map[string]any{"humidity_level": "high"}})
	if oc := bad["outcome"].(map[string]any); oc["status"] != "validation_error" || diagAt(bad, "input_binding", "/humidity_level") == nil {
		t.Errorf("a threshold that is no number: %s", js(bad))
	}

	dep := execute(t, c, map[string]any{"program": prog(t, humidityFan), "input": map[string]any{"humidity_level": 70}})
	if oc := dep["outcome"].(map[string]any); oc["ok"] != true {
		t.Fatalf("deploy: %s", js(dep))
	}
	if d := step(dep["output"].(map[string]any)["plan"], "humid")["description"]; d != "When outdoor_weather.humidity goes above 70" {
		t.Errorf("deploy plan: %v", d)
	}
	humidityFires(t, s, c, 1)
	wake := execute(t, c, map[string]any{"program": prog(t, wakeAt), "input": map[string]any{"wake_time": "06:45"}})
	if tr := js(wake["output"].(map[string]any)["triggers"]); !strings.Contains(tr, `"spec":"06:45"`) || !strings.Contains(tr, `T06:45:00Z`) {
		t.Errorf("deploy of a time param: %s", js(wake))
	}

	c = s.restart(t, engine.Config{}, storage.Options{})
	humidityFires(t, s, c, 2)
	if rules := js(call(t, c, "pilothouse_rules", map[string]any{"last_firings": 0})); !strings.Contains(rules, `"triggers":[{"id":"wake","kind":"time","next_fire":"`) || !strings.Contains(rules, `T06:45:00Z","spec":"06:45"`) {
		t.Errorf("the time param after a restart: %s", rules)
	}
}

// wakeAt runs at a time of day given as a param.
const wakeAt = `{
  "name": "wake-at",
  "params": {"type": "object", "properties": {"wake_time": {"type": "string", "default": "07:30"}}},
  "triggers": [{"id": "wake", "at": "{{ params.wake_time }}"}],
  "steps": [{"id": "light", "call": "hall_light.set", "args": {"state": "ON"}}]
}`

// humidityFires sends readings 50, 68 (above the default 65, below the
// bound 70) and 75 over MQTT and waits for the rule's n-th firing: it
// must be on 75.
func humidityFires(t *testing.T, s *httpStack, c *client.Client, n int) {
	t.Helper()
	for _, h := range []float64{50, 68, 75} {
		if err := s.sim.Trigger(context.Background(), "outdoor_weather", map[string]any{"humidity": h}); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	testutil.Eventually(t, 15*time.Second, "the humidity fan to fire", func() bool {
		ids = firingsOf(t, c, "humidity-fan")
		return len(ids) >= n
	})
	ft, _ := callTool(t, c, "pilotage_trace", map[string]any{"run_id": ids[0]})
	if len(ids) != n || !strings.Contains(js(ft), "changed from 68 to 75") {
		t.Errorf("firing %d of %v: %s", n, ids, js(ft))
	}
}

// TestParamHoldOverMCP: a trigger's "for" bound to "2s" holds: the rule
// fires once the door has been open that long, not before.
func TestParamHoldOverMCP(t *testing.T) {
	s, c := ownerStack(t)
	if v := validate(t, c, doorOpenAlert); v["valid"] != true ||
		step(v["plan"], "open")["description"] != `When front_door.contact changes to false and stays so for {{ params.open_duration }} (default "10m")` {
		t.Fatalf("validate: %s", js(v))
	}
	wrong := execute(t, c, map[string]any{"program": prog(t, doorOpenAlert), "input": map[string]any{"open_duration": "a while"}})
	if diagAt(wrong, "input_binding", "/open_duration") == nil {
		t.Errorf("a hold that is no duration: %s", js(wrong))
	}
	dep := execute(t, c, map[string]any{"program": prog(t, doorOpenAlert), "input": map[string]any{"open_duration": "2s"}})
	if d := step(dep["output"].(map[string]any)["plan"], "open")["description"]; d != "When front_door.contact changes to false and stays so for 2 seconds" {
		t.Fatalf("deploy: %s", js(dep))
	}
	ctx := context.Background()
	if err := s.sim.Trigger(ctx, "front_door", map[string]any{"contact": true}); err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	if err := s.sim.Trigger(ctx, "front_door", map[string]any{"contact": false}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, "the door alert to fire", func() bool { return len(firingsOf(t, c, "door-open-alert")) == 1 })
	if held := time.Since(opened); held < 2*time.Second {
		t.Errorf("fired after %s, before the bound hold of 2s", held)
	}
}

// restart stops the engine and storage and starts them again over the
// same data folder, broker and catalog, behind a new MCP handler; it
// returns a client of the new one.
func (s *httpStack) restart(t *testing.T, cfg engine.Config, so storage.Options) *client.Client {
	t.Helper()
	s.eng.Close()
	_ = s.store.Close()
	var err error
	if s.store, err = storage.OpenWith(context.Background(), s.dir, so); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.store.Close() })
	s.eng = engine.New(cfg, s.devs, s.store, quiet())
	if err := s.eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.eng.Close)
	s.srv = mcpserver.New(s.eng, mcpserver.Options{Logger: quiet()})
	hs := httptest.NewServer(s.srv.HTTPHandler(mcpserver.HTTPOptions{Principals: cfg.Principals}))
	t.Cleanup(hs.Close)
	s.url = hs.URL + "/mcp"
	return s.client("")
}

// nightDoor is a door alert only at night, the night's start a param.
const nightDoor = `{
  "name": "night-door",
  "params": {"type": "object", "properties": {"night_start": {"type": "string", "default": "22:00"}}},
  "triggers": [{"id": "open", "state": "front_door.contact", "to": false}],
  "conditions": [{"id": "night", "time": {"after": "{{ params.night_start }}", "before": "06:00"}}],
  "steps": [{"id": "light", "call": "hall_light.set", "args": {"state": "ON"}}]
}`

// TestParamConditionOverMCP: a time condition's bound from a param is
// planned as the param, and a test run decides it with the bound value.
func TestParamConditionOverMCP(t *testing.T) {
	s := newHTTPStackCfg(t, engine.Config{TimeZone: time.UTC}, storage.Options{})
	c := s.client("")
	if v := validate(t, c, nightDoor); v["valid"] != true ||
		step(v["plan"], "night")["description"] != `Only after {{ params.night_start }} (default "22:00") and before 06:00 (UTC)` {
		t.Fatalf("validate: %s", js(v))
	}
	for _, tc := range []struct{ now, status string }{
		{"2026-01-05T23:30:00Z", "success"},
		{"2026-01-05T22:30:00Z", "conditions_not_met"}, // after the default, before the bound start
	} {
		in := map[string]any{"night_start": "23:00", "scenario": map[string]any{"now": tc.now, "from": true}}
		tr := execute(t, c, map[string]any{"program": prog(t, nightDoor), "test_run": true, "input": in})
		if st := tr["outcome"].(map[string]any)["status"]; st != tc.status ||
			step(tr["output"].(map[string]any)["plan"], "night")["description"] != "Only from 23:00 until 06:00 the next day (UTC)" {
			t.Errorf("at %s: %s, want %s: %s", tc.now, st, tc.status, js(tr))
		}
	}
}
