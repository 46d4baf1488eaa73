package mcpserver_test

import (
	"encoding/json"
	"testing"

	"github.com/pilothouse/pilothouse/storage"
)

// TestLoopIndexInWhile: a repeat's while and until read vars.index, as
// validate accepts and the steps guide documents: the iteration about to
// run (while) or just run (until).
func TestLoopIndexInWhile(t *testing.T) {
	s := newHTTPStack(t, nil, storage.Options{})
	c := s.client("")
	for _, tc := range []struct{ name, repeat string }{
		{"while", `{"while": "vars.index <= 2", "max": 5}`},
		{"until", `{"until": "vars.index >= 2", "max": 5}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `{"name": "loop", "triggers": [{"id": "press", "event": "bedroom_remote.action"}],
			  "steps": [{"id": "loop", "repeat": ` + tc.repeat + `, "do": [{"id": "n", "set": {"i": "{{ vars.index }}"}}]}]}`
			if v := call(t, c, "pilotage_validate", map[string]any{"program": prog(t, src)}); v["valid"] != true {
				t.Fatalf("validate: %v", v)
			}
			oc, steps, _ := testRun(t, c, src, "")
			out, _ := json.Marshal(steps["loop"]["output"])
			if oc["status"] != "success" || string(out) != `{"iterations":2}` {
				t.Errorf("test run: %v, loop output %s", oc, out)
			}
		})
	}
}
