package mcpserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/storage"
)

// TestRefDeployUnderLockFailsFast: a deploy by program_ref with the
// database locked took 33.9 s to answer partial: each of its writes (the
// program and rule, then the run record) waited the busy timeout, and
// first for the writer connection. Once the first write failed, the rest
// of the request now fails at once: one busy timeout in all, and the trace
// says the record was not stored.
func TestRefDeployUnderLockFailsFast(t *testing.T) {
	const busy = time.Second
	s := newHTTPStack(t, nil, storage.Options{BusyTimeout: busy})
	c := s.client("")
	ref := deployed(t, c, `{"name":"porch-on","triggers":[{"id":"t","at":"20:00"}],"steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}}]}`)
	// Disabled, so that deploying it again writes (an identical re-deploy
	// of an enabled rule changes nothing).
	if _, isErr := callTool(t, c, "pilothouse_rule_disable", map[string]any{"name": "porch-on"}); isErr {
		t.Fatal("disable failed")
	}
	lockDB(t, s.dir)
	t0 := time.Now()
	out, isErr := callRaw(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program_ref": ref})
	d := time.Since(t0)
	oc, _ := out["outcome"].(map[string]any)
	if isErr || oc["status"] != "partial" || !strings.Contains(masked(out["trace"]), `"stored":false`) {
		t.Fatalf("program_ref deploy under the lock: %v", out)
	}
	if d > busy*3/2 {
		t.Errorf("program_ref deploy under the lock took %v (busy timeout %v): its writes waited in turn", d, busy)
	}
}
