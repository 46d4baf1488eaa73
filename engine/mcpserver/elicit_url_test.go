package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// pageVisitor is a client's user: for a URL-mode elicitation it answers
// action and, having opened the page, decides there (onPage) as the
// owner; a form-mode one it answers action.
type pageVisitor struct {
	eng    *engine.Engine
	action mcp.ElicitationResponseAction
	onPage *bool // nil: decides nothing on the page

	mu       sync.Mutex
	asked    []mcp.ElicitationParams
	complete []string // elicitation ids the server said are done
}

func (v *pageVisitor) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	v.mu.Lock()
	v.asked = append(v.asked, req.Params)
	v.mu.Unlock()
	if req.Params.Mode == mcp.ElicitationModeURL && v.action == mcp.ElicitationResponseActionAccept && v.onPage != nil {
		id := req.Params.URL[strings.LastIndex(req.Params.URL, "/")+1:]
		go func() { _, _ = v.eng.DecideApproval(context.Background(), id, *v.onPage, engine.ChannelWeb) }()
	}
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: v.action}}, nil
}

// TestRiskGateAsksByURL: a client that supports URL-mode elicitation is
// sent to the approval page when the web UI serves it, and its deploy
// waits there for the decision: approved on the page installs it in the
// same call, declined there or in the client installs nothing. A client
// without URL mode, or a server without pages, gets form mode or nothing.
func TestRiskGateAsksByURL(t *testing.T) {
	yes, no := true, false
	urlOnly := &mcp.ElicitationCapability{URL: &struct{}{}}
	both := &mcp.ElicitationCapability{Form: &struct{}{}, URL: &struct{}{}}
	accept, decline := mcp.ElicitationResponseActionAccept, mcp.ElicitationResponseActionDecline
	for _, tc := range []struct {
		name      string
		caps      *mcp.ElicitationCapability
		pages     bool
		action    mcp.ElicitationResponseAction
		onPage    *bool
		mode      string // the elicitation sent, "" none
		status    string
		installed bool
		channel   string
	}{
		{"approved on the page", urlOnly, true, accept, &yes, mcp.ElicitationModeURL, "success", true, engine.ChannelWeb},
		{"declined on the page", urlOnly, true, accept, &no, mcp.ElicitationModeURL, "denied", false, ""},
		{"declined in the client", urlOnly, true, decline, nil, mcp.ElicitationModeURL, "denied", false, ""},
		{"no pages: form mode", both, false, accept, nil, mcp.ElicitationModeForm, "success", true, engine.ChannelElicitation},
		{"no pages, no form: pending", urlOnly, false, accept, nil, "", "approval_pending", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng, _ := stack(t, engine.Config{WebURL: "http://house.test:8080"})
			srv := mcpserver.New(eng, mcpserver.Options{Logger: quiet(), ApprovalPages: tc.pages})
			v := &pageVisitor{eng: eng, action: tc.action, onPage: tc.onPage}
			cl, err := client.NewInProcessClientWithOptions(srv.MCP, client.WithElicitationHandler(v))
			if err != nil {
				t.Fatal(err)
			}
			cl.OnNotification(func(n mcp.JSONRPCNotification) {
				if n.Method == string(mcp.MethodNotificationElicitationComplete) {
					v.mu.Lock()
					v.complete = append(v.complete, js(n.Params.AdditionalFields["elicitationId"]))
					v.mu.Unlock()
				}
			})
			testhouse.Initialize(t, cl, func(r *mcp.InitializeRequest) { r.Params.Capabilities.Elicitation = tc.caps })
			ctx := context.Background()
			r := execute(t, cl, map[string]any{"program": prog(t, lockProg)})
			_, getErr := eng.GetRule(ctx, "lock-night", 0)
			if oc := r["outcome"].(map[string]any); oc["status"] != tc.status || (getErr == nil) != tc.installed {
				t.Fatalf("%s (installed: %v)", js(r), getErr == nil)
			}
			v.mu.Lock()
			asked := v.asked
			v.mu.Unlock()
			if tc.mode == "" {
				if len(asked) != 0 {
					t.Fatalf("asked %d times, want none", len(asked))
				}
				return
			}
			if len(asked) != 1 || asked[0].Mode != tc.mode {
				t.Fatalf("asked %+v, want one %s elicitation", asked, tc.mode)
			}
			if tc.mode == mcp.ElicitationModeURL {
				if a := r["approval"].(map[string]any); asked[0].URL != "http://house.test:8080/approvals/"+a["id"].(string) || asked[0].ElicitationID != a["id"] {
					t.Errorf("URL elicitation %+v for approval %s", asked[0], js(a))
				}
			}
			if tc.channel != "" && !strings.Contains(js(step(r["trace"], "approval")), `"channel":"`+tc.channel+`"`) {
				t.Errorf("the trace does not say it was approved via %s: %s", tc.channel, js(r["trace"]))
			}
			if tc.onPage != nil {
				testutil.Eventually(t, 10*time.Second, "the elicitation-complete notification", func() bool {
					v.mu.Lock()
					defer v.mu.Unlock()
					return len(v.complete) == 1 && v.complete[0] == `"`+asked[0].ElicitationID+`"`
				})
			}
		})
	}
}
