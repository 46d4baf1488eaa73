package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/storage"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// setup starts the test house and returns an in-process mcp-go client.
func setup(t *testing.T) (*client.Client, *engine.Engine) {
	t.Helper()
	h := testhouse.RunHouse(t, testhouse.Options{})
	return h.InProcess(), h.Engine
}

// stack starts the test house with the engine configured by cfg.
func stack(t *testing.T, cfg engine.Config) (*engine.Engine, *storage.Store) {
	t.Helper()
	h := testhouse.RunHouse(t, testhouse.Options{Engine: cfg})
	return h.Engine, h.Store
}

// callTool calls a tool and checks that its one text block carries the
// same JSON as its structured result.
func callTool(t *testing.T, c *client.Client, name string, args any) (map[string]any, bool) {
	t.Helper()
	res := testhouse.CallResult(t, c, name, args)
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &out)
	// The text block carries the same JSON.
	if len(res.Content) != 1 {
		t.Fatalf("%s: want one text block, got %d", name, len(res.Content))
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &fromText); err != nil {
		t.Fatalf("%s: text block is not JSON: %v", name, err)
	}
	return out, res.IsError
}

// TestManifestConsistency checks spec §4.2–4.3 on the served manifest.
func TestManifestConsistency(t *testing.T) {
	c, _ := setup(t)
	man, isErr := callTool(t, c, "pilotage_discover", map[string]any{})
	if isErr || man["pilotage"] != "1.1" {
		t.Fatalf("discover: %v", man)
	}
	langs := man["languages"].([]any)
	if len(langs) != 1 {
		t.Fatalf("languages: %v", langs)
	}
	l := langs[0].(map[string]any)
	caps := l["capabilities"].(map[string]any)
	declared := func(name string) bool { v, ok := caps[name]; return ok && v != false }
	for _, must := range []string{"guides", "validate", "catalog"} {
		if !declared(must) {
			t.Errorf("capability %s must be declared", must)
		}
	}
	deps := map[string]string{"validate": "guides", "plan": "validate", "execute": "validate", "trace_fetch": "execute"}
	for c, dep := range deps {
		if declared(c) && !declared(dep) {
			t.Errorf("%s requires %s", c, dep)
		}
	}
	loop := l["loop"].(map[string]any)
	if loop["validate"] != "pilotage_validate" || (loop["execute"] != nil) != declared("execute") || (loop["trace"] != nil) != declared("trace_fetch") {
		t.Errorf("loop inconsistent with capabilities: %v / %v", loop, caps)
	}
	if (l["catalog"] != nil) != declared("catalog") || l["guides"] == nil || l["locator"] != "json-pointer" {
		t.Errorf("catalog/guides/locator: %v", l)
	}
	if declared("execute") && (l["execution_mode"] != "deploy" || l["trace_level"] != "full" || l["retention"] == nil) {
		t.Errorf("execute fields: %v", l)
	}
	if declared("trace_fetch") && l["retention"] == "none" {
		t.Error("trace_fetch with retention none")
	}
	// The resource is the same document.
	rr := mcp.ReadResourceRequest{}
	rr.Params.URI = "pilotage://manifest"
	res, err := c.ReadResource(context.Background(), rr)
	if err != nil {
		t.Fatal(err)
	}
	var fromRes map[string]any
	_ = json.Unmarshal([]byte(res.Contents[0].(mcp.TextResourceContents).Text), &fromRes)
	a, _ := json.Marshal(fromRes)
	b, _ := json.Marshal(man)
	if string(a) != string(b) {
		t.Fatalf("resource and tool differ:\n%s\n%s", a, b)
	}
}

func TestToolsAreAnnotatedAndAdmitErrors(t *testing.T) {
	c, _ := setup(t)
	tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tl := range tools.Tools {
		seen[tl.Name] = true
		a := tl.Annotations
		if a.ReadOnlyHint == nil || a.DestructiveHint == nil || a.IdempotentHint == nil || a.OpenWorldHint == nil {
			t.Errorf("%s: missing annotations", tl.Name)
		}
		b, _ := json.Marshal(tl)
		if !strings.Contains(string(b), `"outputSchema"`) || !strings.Contains(string(b), `"error"`) {
			t.Errorf("%s: output schema must admit the error shape: %s", tl.Name, b)
		}
	}
	for _, n := range []string{"pilotage_discover", "pilotage_learn", "pilotage_lookup", "pilotage_validate", "pilotage_execute", "pilotage_trace"} {
		if !seen[n] {
			t.Errorf("tool %s missing", n)
		}
	}
}

func TestRequestErrorsAreToolResults(t *testing.T) {
	c, _ := setup(t)
	cases := []struct {
		name, tool string
		args       map[string]any
		kind       string
	}{
		{"unknown guide", "pilotage_learn", map[string]any{"language": "automation/1", "id": "nope"}, "not_found"},
		{"unknown language", "pilotage_learn", map[string]any{"language": "sql/1"}, "not_found"},
		{"unknown argument", "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "list", "colour": "red"}, "invalid_request"},
		{"wrong type", "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "list", "limit": "ten"}, "invalid_request"},
		{"both program and ref", "pilotage_execute", map[string]any{"language": "automation/1", "program": map[string]any{}, "program_ref": "x"}, "invalid_request"},
		{"neither program nor ref", "pilotage_execute", map[string]any{"language": "automation/1"}, "invalid_request"},
		{"unknown run", "pilotage_trace", map[string]any{"run_id": "run_nope"}, "not_found"},
		{"trace level none", "pilotage_trace", map[string]any{"run_id": "run_nope", "trace_level": "none"}, "invalid_request"},
		{"unknown entry", "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "nope.set"}, "not_found"},
		{"unknown baseline", "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "changed_since", "catalog_version": "x"}, "unknown_baseline"},
		{"unknown rule", "pilothouse_rule_remove", map[string]any{"name": "nope"}, "not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, isErr := callTool(t, c, tc.tool, tc.args)
			if !isErr {
				t.Fatalf("want isError, got %v", out)
			}
			e, _ := out["error"].(map[string]any)
			if e["kind"] != tc.kind || e["message"] == "" {
				t.Fatalf("error = %v, want kind %s", out, tc.kind)
			}
			if strings.Contains(tc.name, "entry") || strings.Contains(tc.name, "baseline") {
				if e["catalog_version"] == nil {
					t.Fatalf("catalog errors carry catalog_version: %v", e)
				}
			}
		})
	}
}

// TestFuzzedArguments sends random JSON to every tool: the server answers
// every call (a result or a request error) and never dies.
func TestFuzzedArguments(t *testing.T) {
	c, _ := setup(t)
	tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewSource(7))
	keys := []string{"language", "verb", "id", "program", "program_ref", "input", "context", "trace_level", "store", "run_id", "kind", "limit", "cursor", "name", "test_run", "q", "tag"}
	var value func(depth int) any
	value = func(depth int) any {
		switch rnd.Intn(8) {
		case 0:
			return nil
		case 1:
			return rnd.Intn(3) == 0
		case 2:
			return rnd.NormFloat64() * 1e6
		case 3:
			return []string{"automation/1", "list", "get", "full", "none", "", "hall_light.set", "\x00", strings.Repeat("x", 300)}[rnd.Intn(9)]
		case 4:
			if depth > 3 {
				return "deep"
			}
			a := []any{}
			for i := 0; i < rnd.Intn(4); i++ {
				a = append(a, value(depth+1))
			}
			return a
		default:
			if depth > 3 {
				return map[string]any{}
			}
			m := map[string]any{}
			for i := 0; i < rnd.Intn(5); i++ {
				m[keys[rnd.Intn(len(keys))]] = value(depth + 1)
			}
			return m
		}
	}
	for i := 0; i < 400; i++ {
		tl := tools.Tools[rnd.Intn(len(tools.Tools))]
		args := map[string]any{}
		for j := 0; j < rnd.Intn(6); j++ {
			args[keys[rnd.Intn(len(keys))]] = value(0)
		}
		if rnd.Intn(2) == 0 {
			args["language"] = "automation/1"
		}
		req := mcp.CallToolRequest{}
		req.Params.Name = tl.Name
		req.Params.Arguments = args
		if _, err := c.CallTool(context.Background(), req); err != nil {
			t.Fatalf("%s(%v): %v", tl.Name, args, err)
		}
	}
	// Still alive.
	if out, isErr := callTool(t, c, "pilotage_discover", map[string]any{}); isErr || out["pilotage"] != "1.1" {
		t.Fatal("server stopped answering")
	}
}

func TestGuidesAsToolAndResources(t *testing.T) {
	c, _ := setup(t)
	idx, _ := callTool(t, c, "pilotage_learn", map[string]any{"language": "automation/1"})
	guides := idx["guides"].([]any)
	closed := 0
	for _, g := range guides {
		gm := g.(map[string]any)
		if gm["body"] != nil {
			t.Errorf("index carries a body: %v", gm["id"])
		}
		for _, tp := range gm["topics"].([]any) {
			if tp == "closed-sets" {
				closed++
			}
		}
		rr := mcp.ReadResourceRequest{}
		rr.Params.URI = "pilotage://guides/automation/1/" + gm["id"].(string)
		res, err := c.ReadResource(context.Background(), rr)
		if err != nil {
			t.Fatalf("resource %s: %v", rr.Params.URI, err)
		}
		got, _ := callTool(t, c, "pilotage_learn", map[string]any{"language": "automation/1", "id": gm["id"]})
		if res.Contents[0].(mcp.TextResourceContents).Text != got["body"] {
			t.Errorf("resource and tool bodies differ for %v", gm["id"])
		}
		if int(gm["size_bytes"].(float64)) != len(got["body"].(string)) {
			t.Errorf("%v: size_bytes %v != %d", gm["id"], gm["size_bytes"], len(got["body"].(string)))
		}
	}
	if closed != 1 {
		t.Fatalf("exactly one guide must carry closed-sets, got %d", closed)
	}
}
