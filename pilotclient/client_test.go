package pilotclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// fakeServer serves pilotage_discover with the given manifest JSON, and a
// validate tool that answers a request error.
func fakeServer(t *testing.T, manifest string) string {
	t.Helper()
	s := server.NewMCPServer("fake", "1", server.WithToolCapabilities(false))
	schema := json.RawMessage(`{"type":"object"}`)
	s.AddTool(mcp.Tool{Name: "pilotage_discover", RawInputSchema: schema}, func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var m any
		_ = json.Unmarshal([]byte(manifest), &m)
		return mcp.NewToolResultStructured(m, manifest), nil
	})
	s.AddTool(mcp.Tool{Name: "pilotage_validate", RawInputSchema: schema}, func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res := mcp.NewToolResultStructured(map[string]any{"error": map[string]any{"kind": "resource_exhausted", "message": "too big", "catalog_version": "cv9"}}, "too big")
		res.IsError = true
		return res, nil
	})
	hs := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

const goodManifest = `{"pilotage":"1.7","future_member":{"x":1},"capabilities":{"guides":true,"validate":true,"execute":{"test_run":true}},
"languages":[{"id":"automation/1","capabilities":{"execute":{"idempotency":true},"catalog":false},
"guides":{"tool":"pilotage_learn"},"loop":{"validate":"pilotage_validate","execute":"pilotage_execute"},"locator":"json-pointer"}]}`

func TestDialHonorsManifest(t *testing.T) {
	ctx := context.Background()
	c, err := Dial(ctx, Options{URL: fakeServer(t, goodManifest)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	caps := c.Capabilities()
	// Language-level execute replaces the server-level one in full: no test_run.
	for name, want := range map[string]bool{"guides": true, "validate": true, "execute": true, "execute.idempotency": true,
		"execute.test_run": false, "catalog": false, "trace_fetch": false} {
		if caps.Has(name) != want {
			t.Errorf("Has(%s) = %v, want %v", name, !want, want)
		}
	}
	if _, err := c.Execute(ctx, ExecuteRequest{Program: []byte(`{}`), TestRun: true}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("test run without execute.test_run: %v", err)
	}
	if _, err := c.Trace(ctx, "r1", ""); !errors.Is(err, ErrIncompatible) {
		t.Errorf("trace without trace_fetch: %v", err)
	}
	_, err = c.Validate(ctx, []byte(`{}`))
	var re *RequestError
	if !errors.As(err, &re) || re.Kind != "resource_exhausted" || re.CatalogVersion != "cv9" || re.Tool != "pilotage_validate" {
		t.Fatalf("request error: %#v", err)
	}
}

func TestDialRefusesUnusableManifests(t *testing.T) {
	for _, tc := range []struct{ name, manifest, want string }{
		{"major 2", strings.Replace(goodManifest, `"1.7"`, `"2.0"`, 1), `server speaks Pilotage "2.0"`},
		{"no language", strings.Replace(goodManifest, `"automation/1"`, `"other/1"`, 1), "declares no automation/1"},
		{"no validate", strings.Replace(goodManifest, `"validate":true,`, `"validate":false,`, 1), "lacks the minimum capabilities"},
		{"inconsistent loop", strings.Replace(goodManifest, `,"execute":"pilotage_execute"`, ``, 1), "disagree with its capabilities"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Dial(context.Background(), Options{URL: fakeServer(t, tc.manifest)})
			if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrIncompatible with %q", err, tc.want)
			}
		})
	}
}

func TestGateReasons(t *testing.T) {
	step := func(id, risk string, destructive bool) string {
		return `{"id":"` + id + `","kind":"call","risk":"` + risk + `","risk_hints":{"readOnly":false,"destructive":` + map[bool]string{true: "true", false: "false"}[destructive] + `,"openWorld":false}}`
	}
	for _, tc := range []struct {
		name, plan string
		want       []string
	}{
		{"control", `{"steps":[` + step("a", "control", false) + `],"max_risk":"control","max_risk_hints":{"readOnly":false,"destructive":false,"openWorld":false}}`, nil},
		{"no plan", ``, []string{"the server returned no plan: every execution needs approval"}},
		{"destructive", `{"steps":[],"max_risk":"security","max_risk_hints":{"readOnly":false,"destructive":true,"openWorld":false}}`,
			[]string{"destructive: true (e.g. locks, garage doors, alarms)"}},
		{"open world", `{"steps":[],"max_risk":"external","max_risk_hints":{"readOnly":false,"destructive":false,"openWorld":true}}`,
			[]string{"openWorld: true (something leaves the house, e.g. notifications)"}},
		{"hints missing", `{"steps":[],"max_risk":"read"}`, []string{"the plan carries no max_risk_hints: treated as risky"}},
		{"hint member missing", `{"steps":[],"max_risk":"read","max_risk_hints":{"readOnly":true,"openWorld":false}}`,
			[]string{"max_risk_hints.destructive is missing: treated as risky"}},
		{"unknown level", `{"steps":[],"max_risk":"cosmic","max_risk_hints":{"readOnly":false,"destructive":false,"openWorld":false}}`,
			[]string{`unknown max_risk "cosmic": treated as risky`}},
		{"step riskier than max", `{"steps":[` + step("x", "security", true) + `],"max_risk":"control","max_risk_hints":{"readOnly":false,"destructive":false,"openWorld":false}}`,
			[]string{`step x is labelled riskier (security) than the plan's max_risk_hints: treated as risky`}},
		{"unknown step risk", `{"steps":[` + step("y", "weird", false) + `],"max_risk":"control","max_risk_hints":{"readOnly":false,"destructive":false,"openWorld":false}}`,
			[]string{`step y has unknown risk "weird": treated as risky`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *Plan
			if tc.plan != "" {
				p = &Plan{}
				if err := json.Unmarshal([]byte(tc.plan), p); err != nil {
					t.Fatal(err)
				}
			}
			got := GateReasons(p)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestErrorsCountUnknownSeverity(t *testing.T) {
	var v ValidateResult
	_ = json.Unmarshal([]byte(`{"valid":true,"diagnostics":[{"code":"a","severity":"warning"},{"code":"b","severity":"fatal"},{"code":"c","severity":"info"}]}`), &v)
	if errs := v.Errors(); len(errs) != 1 || errs[0].Code != "b" {
		t.Fatalf("errors: %+v", errs)
	}
}
