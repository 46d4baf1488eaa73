package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/devices/demo"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/helpers"
	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/storage"
)

// httpStack is a real Pilothouse behind the streamable HTTP handler:
// embedded broker on port 0, discovery, the demo house, SQLite in a temp
// folder, the engine, and bearer-token principals.
type httpStack struct {
	t     *testing.T
	url   string
	dir   string
	eng   *engine.Engine
	store *storage.Store
	sim   *demo.Sim
	devs  *devices.Catalog
	srv   *mcpserver.Server
	mqtt  string // the embedded broker's URL
	// helpers are the house's helpers (none until a test makes some).
	helpers *helpers.Manager
}

// newHTTPStack starts the stack with principals (none = the default owner)
// and storage opened with so.
func newHTTPStack(t *testing.T, principals []*engine.Principal, so storage.Options) *httpStack {
	t.Helper()
	return newHTTPStackCfg(t, engine.Config{Principals: principals}, so)
}

// newHTTPStackCfg starts the stack with the engine configured by cfg
// (limits, principals, zone, location).
func newHTTPStackCfg(t *testing.T, cfg engine.Config, so storage.Options) *httpStack {
	t.Helper()
	return newHTTPStackDevs(t, cfg, so, devices.Options{Logger: quiet()})
}

// newHTTPStackDevs starts the stack with the catalog configured by do
// (notify channels).
func newHTTPStackDevs(t *testing.T, cfg engine.Config, so storage.Options, do devices.Options) *httpStack {
	t.Helper()
	h := testhouse.RunHouse(t, testhouse.Options{Engine: cfg, Storage: so, Devices: do})
	return &httpStack{t: t, dir: h.Dir, eng: h.Engine, store: h.Store, sim: h.Sim, devs: h.Devices, srv: h.MCP, helpers: h.Helpers,
		mqtt: h.Broker.URL(), url: h.ServeHTTP(mcpserver.HTTPOptions{Principals: cfg.Principals})}
}

// ownerStack starts the stack with the default owner and connects its
// client.
func ownerStack(t *testing.T) (*httpStack, *client.Client) {
	t.Helper()
	s := newHTTPStack(t, nil, storage.Options{})
	return s, s.client("")
}

// client connects the real mcp-go client over HTTP with a bearer token
// ("" = none).
func (s *httpStack) client(token string) *client.Client {
	s.t.Helper()
	return testhouse.Client(s.t, s.url, "", testhouse.Bearer(token)...)
}

// prog decodes a program literal for tool arguments.
func prog(t *testing.T, src string) map[string]any {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal([]byte(src), &p); err != nil {
		t.Fatalf("program literal: %v\n%s", err, src)
	}
	return p
}

// deployed deploys src and returns its program_ref, failing unless it
// succeeded.
func deployed(t *testing.T, c *client.Client, src string) string {
	t.Helper()
	return deployedWith(t, c, src, nil)
}

// redeployed is deployed, replacing the installed rule of its name.
func redeployed(t *testing.T, c *client.Client, src string) string {
	t.Helper()
	return deployedWith(t, c, src, map[string]any{"install": map[string]any{"replace": true}})
}

func deployedWith(t *testing.T, c *client.Client, src string, input map[string]any) string {
	t.Helper()
	args := map[string]any{"language": "automation/1", "program": prog(t, src)}
	if input != nil {
		args["input"] = input
	}
	out, isErr := callTool(t, c, "pilotage_execute", args)
	oc, _ := out["outcome"].(map[string]any)
	if isErr || oc["ok"] != true {
		t.Fatalf("deploy: %v", out)
	}
	return out["output"].(map[string]any)["program_ref"].(string)
}

// automationIDs lists the automation entries c sees.
func automationIDs(t *testing.T, c *client.Client) []string {
	t.Helper()
	out, isErr := callTool(t, c, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "list", "kind": "automation", "limit": 500})
	if isErr {
		t.Fatalf("list: %v", out)
	}
	var ids []string
	for _, it := range out["items"].([]any) {
		ids = append(ids, it.(map[string]any)["id"].(string))
	}
	return ids
}

// ruleNames lists the installed rules c sees.
func ruleNames(t *testing.T, c *client.Client) []string {
	t.Helper()
	return testhouse.RuleNames(t, c)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// masked is v as JSON with each of names replaced by NAME.
func masked(v any, names ...string) string {
	b, _ := json.Marshal(v)
	s := string(b)
	for _, n := range names {
		s = strings.ReplaceAll(s, n, "NAME")
	}
	return s
}
