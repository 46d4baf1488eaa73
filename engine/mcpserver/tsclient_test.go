package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/storage"
)

// tsClientDir holds the node script that drives the official MCP
// TypeScript SDK client (its modules: `npm ci` there; .ci/run does).
const tsClientDir = "testdata/tsclient"

// needTSClient skips the test when node or the installed SDK is missing,
// and returns node's path.
func needTSClient(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIPPED: node is not installed, so the MCP TypeScript SDK client cannot run (CI installs it)")
	}
	if _, err := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Skip("SKIPPED: the MCP TypeScript SDK is not installed: run `npm ci` in engine/mcpserver/" + tsClientDir + " (.ci/run does)")
	}
	return node
}

// tsClient runs one tool call through the TypeScript SDK client against
// url; mode is accept, decline (form-mode elicitation answered so) or
// none (no elicitation capability).
func tsClient(t *testing.T, node, url, mode, tool string, args map[string]any) (result map[string]any, elicitations []any) {
	t.Helper()
	aj, _ := json.Marshal(args)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", url, "", mode, tool, string(aj))
	cmd.Dir = tsClientDir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client failed: %v\n%s", err, stderr.String())
	}
	var got struct {
		Result       map[string]any `json:"result"`
		Elicitations []any          `json:"elicitations"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("the TypeScript client printed %q: %v", out, err)
	}
	if got.Result["isError"] == true {
		t.Fatalf("%s: tool error %s", tool, js(got.Result))
	}
	sc, _ := got.Result["structuredContent"].(map[string]any)
	return sc, got.Elicitations
}

// TestTypeScriptClient: the official MCP TypeScript SDK client over
// streamable HTTP meets the risk gate as a host would: its user accepts
// in the elicitation form (installed, recorded as via mcp-elicitation) or
// declines (nothing installed), and a client without elicitation gets
// approval_pending with the page to approve on.
func TestTypeScriptClient(t *testing.T) {
	node := needTSClient(t)
	for _, tc := range []struct {
		mode, status string
		installed    bool
		asked        int
	}{
		{"accept", "success", true, 1},
		{"decline", "denied", false, 1},
		{"none", "approval_pending", false, 0},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			s := newHTTPStack(t, nil, storage.Options{})
			r, asked := tsClient(t, node, s.url, tc.mode, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog(t, lockProg)})
			oc, _ := r["outcome"].(map[string]any)
			_, getErr := s.eng.GetRule(context.Background(), "lock-night", 0)
			if oc["status"] != tc.status || (getErr == nil) != tc.installed || len(asked) != tc.asked {
				t.Fatalf("%s: asked %d times, installed %v: %s", tc.mode, len(asked), getErr == nil, js(r))
			}
			if tc.asked > 0 && !strings.Contains(js(asked[0]), "front_lock.set") {
				t.Errorf("the question does not show the program: %s", js(asked[0]))
			}
			a, _ := r["approval"].(map[string]any)
			switch tc.mode {
			case "accept":
				if !strings.Contains(js(step(r["trace"], "approval")), `"channel":"mcp-elicitation"`) {
					t.Errorf("the trace does not say how it was approved: %s", js(r["trace"]))
				}
			case "none":
				if url, _ := a["url"].(string); !strings.HasSuffix(url, "/approvals/"+a["id"].(string)) || a["expires_at"] == nil {
					t.Errorf("approval_pending without a page to approve on: %s", js(a))
				}
			}
		})
	}
}
