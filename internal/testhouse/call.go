package testhouse

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Client is the real mcp-go client over streamable HTTP at url, started
// and initialized with protocol version ("" is the client's latest), and
// closed when the test ends.
func Client(t testing.TB, url, version string, opts ...transport.StreamableHTTPCOption) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return initialize(t, c, version)
}

// Bearer is the option that sends token as the Authorization header
// ("" sends none).
func Bearer(token string) []transport.StreamableHTTPCOption {
	if token == "" {
		return nil
	}
	return []transport.StreamableHTTPCOption{transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token})}
}

func initialize(t testing.TB, c *client.Client, version string) *client.Client {
	t.Helper()
	return Initialize(t, c, func(r *mcp.InitializeRequest) { r.Params.ProtocolVersion = version })
}

// Initialize starts c and initializes it with the request edit makes
// (capabilities, protocol version; nil for the defaults), and closes it
// when the test ends.
func Initialize(t testing.TB, c *client.Client, edit func(*mcp.InitializeRequest)) *client.Client {
	t.Helper()
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "test", Version: "1"}
	if edit != nil {
		edit(&req)
	}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize (%s): %v", req.Params.ProtocolVersion, err)
	}
	return c
}

// CallResult calls tool name with args and fails the test on a
// transport or JSON-RPC error.
func CallResult(t testing.TB, c *client.Client, name string, args any) *mcp.CallToolResult {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil {
		t.Fatalf("%s(%v): JSON-RPC error %v", name, args, err)
	}
	return res
}

// Call calls tool name with args and returns its structured result (the
// text block's JSON when there is none) and whether it is an error.
func Call(t testing.TB, c *client.Client, name string, args any) (map[string]any, bool) {
	t.Helper()
	res := CallResult(t, c, name, args)
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || out == nil {
		if len(res.Content) > 0 {
			if tc, ok := res.Content[0].(mcp.TextContent); ok {
				_ = json.Unmarshal([]byte(tc.Text), &out)
			}
		}
	}
	return out, res.IsError
}

// RuleNames lists the installed rules c sees (pilothouse_rules).
func RuleNames(t testing.TB, c *client.Client) []string {
	t.Helper()
	out, isErr := Call(t, c, "pilothouse_rules", map[string]any{"last_firings": 0})
	if isErr {
		t.Fatalf("rules: %v", out)
	}
	var names []string
	for _, r := range out["rules"].([]any) {
		names = append(names, r.(map[string]any)["name"].(string))
	}
	return names
}
