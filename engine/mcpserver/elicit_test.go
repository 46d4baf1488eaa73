package mcpserver_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/internal/testhouse"
)

// answerer is a client's user answering elicitations with action.
type answerer struct {
	action  mcp.ElicitationResponseAction
	asked   atomic.Int32
	message atomic.Value
}

func (a *answerer) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.asked.Add(1)
	a.message.Store(req.Params.Message)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: a.action}}, nil
}

// TestRiskGateAsksThroughElicitation: a client that declares elicitation
// gets the approval question in its own UI; accept installs the deploy
// (recorded as approved through mcp-elicitation), decline installs nothing.
func TestRiskGateAsksThroughElicitation(t *testing.T) {
	for _, tc := range []struct {
		action    mcp.ElicitationResponseAction
		installed bool
		status    string
	}{
		{mcp.ElicitationResponseActionAccept, true, "success"},
		{mcp.ElicitationResponseActionDecline, false, "denied"},
	} {
		t.Run(string(tc.action), func(t *testing.T) {
			eng, _ := stack(t, engine.Config{})
			srv := mcpserver.New(eng, mcpserver.Options{Logger: quiet()})
			ans := &answerer{action: tc.action}
			cl, err := client.NewInProcessClientWithOptions(srv.MCP, client.WithElicitationHandler(ans))
			if err != nil {
				t.Fatal(err)
			}
			testhouse.Initialize(t, cl, func(r *mcp.InitializeRequest) { r.Params.Capabilities.Elicitation = &mcp.ElicitationCapability{} })
			ctx := context.Background()
			r := execute(t, cl, map[string]any{"program": prog(t, lockProg)})
			oc := r["outcome"].(map[string]any)
			msg, _ := ans.message.Load().(string)
			if ans.asked.Load() != 1 || !strings.Contains(msg, "front_lock.set") || !strings.Contains(msg, "not verified") {
				t.Fatalf("asked %d times: %q", ans.asked.Load(), msg)
			}
			_, getErr := eng.GetRule(ctx, "lock-night", 0)
			if oc["status"] != tc.status || (getErr == nil) != tc.installed {
				t.Fatalf("%s: %s (installed: %v)", tc.action, js(r), getErr == nil)
			}
			if tc.installed && !strings.Contains(js(step(r["trace"], "approval")), `"channel":"mcp-elicitation"`) {
				t.Errorf("the trace does not say how it was approved: %s", js(r["trace"]))
			}
		})
	}
}
