package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/storage"
)

// TestForeignTraceReadsNoEnvelope: a guest asking for the owner's (large)
// run gets exactly what it gets for a run that does not exist, and the
// store never reads the foreign run's envelope (its size would show in the
// response time); the owner's own fetch does read it.
func TestForeignTraceReadsNoEnvelope(t *testing.T) {
	owner := &engine.Principal{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true}
	guest := &engine.Principal{Name: "guest", TokenHash: engine.HashToken("guest-token")}
	h := serveHTTP(t, []*engine.Principal{owner, guest})
	oc, gc := h.client("owner-token"), h.client("guest-token")
	var prog map[string]any
	_ = json.Unmarshal([]byte(`{"name": "big",
	  "triggers": [{"id": "t", "state": "hall_motion.occupancy"}],
	  "steps": [{"id": "r", "repeat": {"count": 500}, "do": [{"id": "s", "set": {"v": "{{ vars.index }}"}}]}]}`), &prog)
	out, isErr := callTool(t, oc, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog, "test_run": true, "trace_level": "none"})
	if isErr {
		t.Fatalf("owner's test run: %v", out)
	}
	id := out["run_id"].(string)

	reads := h.store.EnvelopeReads()
	foreign, isErr1 := callTool(t, gc, "pilotage_trace", map[string]any{"run_id": id})
	missing, isErr2 := callTool(t, gc, "pilotage_trace", map[string]any{"run_id": storage.NewRunID()})
	if n := h.store.EnvelopeReads() - reads; n != 0 {
		t.Errorf("the guest's lookups read %d envelopes, want 0", n)
	}
	fb, _ := json.Marshal(foreign)
	mb, _ := json.Marshal(missing)
	if !isErr1 || !isErr2 || string(fb) != string(mb) || !strings.Contains(string(fb), `"not_found"`) {
		t.Errorf("foreign run %s, missing run %s: want the same not_found", fb, mb)
	}
	if out, isErr := callTool(t, oc, "pilotage_trace", map[string]any{"run_id": id}); isErr || h.store.EnvelopeReads() != reads+1 {
		t.Errorf("the owner's fetch: %v, envelope reads %d→%d", out["error"], reads, h.store.EnvelopeReads())
	}
}
