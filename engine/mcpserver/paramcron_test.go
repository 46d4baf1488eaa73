package mcpserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/storage"
)

// pokeOnSchedule is a blueprint whose schedule and patience are inputs:
// a cron trigger's spec and a wait's timeout written as params.
const pokeOnSchedule = `{
  "name": "poke",
  "params": {"type": "object", "properties": {
    "schedule": {"type": "string", "default": "0 30 7 * * 1-5"},
    "patience": {"type": "string", "default": "10m"}}},
  "triggers": [{"id": "tick", "cron": "{{ params.schedule }}"}],
  "steps": [{"id": "on", "call": "living_plug.set", "args": {"state": "ON"}},
            {"id": "quiet", "wait": {"state": "hall_motion.occupancy", "to": true}, "timeout": "{{ params.patience }}", "continue_on_timeout": true}]
}`

// TestCronAndTimeoutParamsOverMCP: a cron spec and a wait's timeout
// given as params validate (the plan names them), test-run bound to the
// input (the wait ends at the bound timeout), refuse values that do not
// fit at the param, and deploy to a schedule that fires.
func TestCronAndTimeoutParamsOverMCP(t *testing.T) {
	s := newHTTPStack(t, nil, storage.Options{})
	c := s.client("")
	v := validate(t, c, pokeOnSchedule)
	if v["valid"] != true {
		t.Fatalf("validate: %s", js(v))
	}
	if d := step(v["plan"], "tick")["description"].(string); !strings.HasPrefix(d, `On the cron schedule {{ params.schedule }} (default "0 30 7 * * 1-5")`) {
		t.Errorf("unbound trigger: %q", d)
	}
	if d := step(v["plan"], "quiet")["description"].(string); !strings.Contains(d, `(at most {{ params.patience }} (default "10m"), then the run goes on)`) {
		t.Errorf("unbound wait: %q", d)
	}

	in := map[string]any{"patience": "2m", "scenario": map[string]any{"state": map[string]any{"hall_motion.occupancy": false}}}
	tr := execute(t, c, map[string]any{"program": prog(t, pokeOnSchedule), "test_run": true, "input": in})
	if el := tr["trace"].(map[string]any)["stats"].(map[string]any)["elapsed_ms"]; tr["outcome"].(map[string]any)["ok"] != true || el != 120000.0 {
		t.Fatalf("test run: the wait should end at the bound 2 minutes, after %v: %s", el, js(tr))
	}

	for _, tc := range []struct{ param, value, msg string }{
		{"schedule", "every morning", `cron "every morning"`},
		{"patience", "0s", "a timeout must be positive"},
		{"patience", "soon", "soon"},
	} {
		r := execute(t, c, map[string]any{"program": prog(t, pokeOnSchedule), "test_run": true, "input": map[string]any{tc.param: tc.value}})
		if d := diagAt(r, "input_binding", "/"+tc.param); d == nil || !strings.Contains(d["message"].(string), tc.msg) {
			t.Errorf("%s = %q: want input_binding saying %q: %s", tc.param, tc.value, tc.msg, js(r))
		}
	}

	dep := execute(t, c, map[string]any{"program": prog(t, pokeOnSchedule), "input": map[string]any{"schedule": "* * * * * *", "patience": "1s"}})
	if dep["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("deploy: %s", js(dep))
	}
	testutil.Eventually(t, 15*time.Second, "a firing on the bound schedule", func() bool { return len(firingsOf(t, c, "poke")) > 0 })
	out, _ := callTool(t, c, "pilothouse_rules", map[string]any{})
	if !strings.Contains(js(out), `"spec":"* * * * * *"`) {
		t.Errorf("the installed trigger's spec: %s", js(out))
	}
}
