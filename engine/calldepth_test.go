package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// TestDeployRefusesTooDeepCallChain: a chain of promoted automations
// nested deeper than MaxCallDepth deployed as success, and every firing
// then ended limit_exceeded. The deploy is now refused with call_depth at
// the call step; the chain at the limit deploys and its test run succeeds.
func TestDeployRefusesTooDeepCallChain(t *testing.T) {
	h := newHouse(t, Config{})
	prog := func(i int, ref string) string {
		step := `{"id":"blink","call":"porch_light.set","args":{"state":"TOGGLE"}}`
		if ref != "" {
			step = `{"id":"next","call":"` + ref + `"}`
		}
		return fmt.Sprintf(`{"name":"chain-%d","triggers":[{"id":"nightly","at":"03:00"}],"steps":[%s]}`, i, step)
	}
	ref := ""
	limit := rules.DefaultLimits.MaxCallDepth
	for i := 0; i <= limit; i++ {
		ref = h.deploy(prog(i, ref)).Output.(*pilotage.DeployOutput).ProgramRef
	}
	top := prog(limit, ref) // calls chain-limit: nests limit+1 deep
	top = strings.Replace(top, fmt.Sprintf("chain-%d", limit), "too-deep", 1)
	r := h.execute(ExecuteRequest{Program: json.RawMessage(top)})
	if r.Outcome.OK || len(r.Diagnostics) != 1 || r.Diagnostics[0].Code != rules.CodeCallDepth || r.Diagnostics[0].Path != "/steps/0/call" {
		b, _ := json.Marshal(r)
		t.Fatalf("deploy of a too-deep chain: %s", b)
	}
	if rules, err := h.store.ListRules(t.Context()); err != nil || len(rules) != limit+1 {
		t.Errorf("installed rules: %d %v", len(rules), err)
	}
	// The deepest allowed chain test-runs to success.
	ok := strings.Replace(prog(limit, "X"), `"X"`, fmt.Sprintf("%q", mustRef(t, h, limit-1)), 1)
	ok = strings.Replace(ok, fmt.Sprintf("chain-%d", limit), "at-limit", 1)
	if tr := h.execute(ExecuteRequest{Program: json.RawMessage(ok), TestRun: true}); tr.Outcome.Status != rules.StatusSuccess {
		t.Errorf("chain at the limit: %+v", tr.Outcome)
	}
}

// mustRef is the program_ref of the installed rule chain-<i>.
func mustRef(t *testing.T, h *house, i int) string {
	t.Helper()
	list, err := h.store.ListRules(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list {
		if r.Name == fmt.Sprintf("chain-%d", i) {
			return r.Ref
		}
	}
	t.Fatalf("no rule chain-%d", i)
	return ""
}
