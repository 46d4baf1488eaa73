// Package pilotclient is a Pilotage 1.1 Client for Pilothouse's MCP
// binding: it discovers and honors the manifest, runs the standard loop
// (validate → Host risk gate → execute → verify, with drift recovery) and
// surfaces request errors as typed Go errors.
package pilotclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Language is the only Language this client speaks.
const Language = "automation/1"

// RequestError is a Pilotage request error (spec §8): the tool answered
// isError with {"error": {kind, message, catalog_version?}}.
type RequestError struct {
	Tool           string
	Kind           string
	Message        string
	CatalogVersion string
}

func (e *RequestError) Error() string {
	return fmt.Sprintf("%s: %s: %s", e.Tool, e.Kind, e.Message)
}

// IsKind reports whether err is a RequestError of the given kind.
func IsKind(err error, kind string) bool {
	var re *RequestError
	return errors.As(err, &re) && re.Kind == kind
}

// ErrIncompatible is returned (wrapped) when the server's manifest cannot be
// used: another major version, no automation/1, or a missing capability.
var ErrIncompatible = errors.New("incompatible Pilotage server")

// Options configure Dial.
type Options struct {
	// URL of the streamable HTTP endpoint, e.g. http://127.0.0.1:8080/mcp.
	URL string
	// Token is the bearer token ("" = none).
	Token string
	// Name and Version identify this client in MCP initialize.
	Name, Version string
}

// Client is one connected session. The manifest is fetched by Dial before
// any other Pilotage operation (spec §12.2 item 1).
type Client struct {
	mc   *client.Client
	lang *pilotage.LanguageEntry
	caps Capabilities
}

// Dial connects, initializes MCP and discovers the manifest.
func Dial(ctx context.Context, o Options) (*Client, error) {
	var opts []transport.StreamableHTTPCOption
	if o.Token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + o.Token}))
	}
	mc, err := client.NewStreamableHttpClient(o.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", o.URL, err)
	}
	if err := mc.Start(ctx); err != nil {
		_ = mc.Close()
		return nil, fmt.Errorf("connecting to %s: %w", o.URL, err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: orDefault(o.Name, "pilotclient"), Version: orDefault(o.Version, "1")}
	if _, err := mc.Initialize(ctx, req); err != nil {
		_ = mc.Close()
		return nil, fmt.Errorf("initializing MCP with %s: %w", o.URL, hintAuth(err))
	}
	c := &Client{mc: mc}
	if err := c.discover(ctx); err != nil {
		_ = mc.Close()
		return nil, err
	}
	return c, nil
}

func hintAuth(err error) error {
	msg := strings.ToLower(err.Error())
	if strings.Contains(msg, "401") || strings.Contains(msg, "unauthorized") || strings.Contains(msg, "authorization") {
		return fmt.Errorf("%w (check --token / PILOTHOUSE_TOKEN)", err)
	}
	return err
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// Close ends the session.
func (c *Client) Close() error { return c.mc.Close() }

// Capabilities is the effective capability map of automation/1.
func (c *Client) Capabilities() Capabilities { return c.caps }

// call invokes a tool and decodes its structured result into out. A
// request error becomes *RequestError; anything else that fails is a
// transport error.
func (c *Client) call(ctx context.Context, tool string, args map[string]any, out any) error {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	if args == nil {
		args = map[string]any{}
	}
	req.Params.Arguments = args
	res, err := c.mc.CallTool(ctx, req)
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	raw := res.RawStructuredContent
	if len(raw) == 0 && res.StructuredContent != nil {
		raw, _ = json.Marshal(res.StructuredContent)
	}
	if len(raw) == 0 {
		for _, ct := range res.Content {
			if tc, ok := ct.(mcp.TextContent); ok {
				raw = json.RawMessage(tc.Text)
				break
			}
		}
	}
	if res.IsError {
		var env struct {
			Error *struct {
				Kind           string `json:"kind"`
				Message        string `json:"message"`
				CatalogVersion string `json:"catalog_version"`
			} `json:"error"`
		}
		if json.Unmarshal(raw, &env) == nil && env.Error != nil {
			return &RequestError{Tool: tool, Kind: env.Error.Kind, Message: env.Error.Message, CatalogVersion: env.Error.CatalogVersion}
		}
		return fmt.Errorf("%s: tool error: %s", tool, strings.TrimSpace(string(raw)))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: decoding result: %w", tool, err)
	}
	return nil
}

// discover fetches the manifest and checks that it is usable.
func (c *Client) discover(ctx context.Context) error {
	var m pilotage.Manifest
	if err := c.call(ctx, pilotage.ToolDiscover, nil, &m); err != nil {
		return err
	}
	major, _, _ := strings.Cut(m.Pilotage, ".")
	if major != "1" {
		return fmt.Errorf("%w: server speaks Pilotage %q, this client implements major version 1", ErrIncompatible, m.Pilotage)
	}
	for i := range m.Languages {
		if m.Languages[i].ID == Language {
			c.lang = &m.Languages[i]
		}
	}
	if c.lang == nil {
		return fmt.Errorf("%w: the manifest declares no %s language", ErrIncompatible, Language)
	}
	c.caps = effective(m.Capabilities, c.lang.Capabilities)
	if !c.caps.Has("guides") || !c.caps.Has("validate") {
		return fmt.Errorf("%w: %s lacks the minimum capabilities guides+validate (invalid manifest)", ErrIncompatible, Language)
	}
	if c.lang.Loop["validate"] == "" {
		return fmt.Errorf("%w: the manifest names no validate operation", ErrIncompatible)
	}
	if c.caps.Has("execute") != (c.lang.Loop["execute"] != "") || c.caps.Has("trace_fetch") != (c.lang.Loop["trace"] != "") ||
		c.caps.Has("catalog") != (c.lang.Catalog["tool"] != "") {
		return fmt.Errorf("%w: the manifest's loop/catalog fields disagree with its capabilities (invalid manifest)", ErrIncompatible)
	}
	return nil
}

// need returns an ErrIncompatible error unless capability (or "cap.sub")
// is declared.
func (c *Client) need(capability string) error {
	if c.caps.Has(capability) {
		return nil
	}
	return fmt.Errorf("%w: %s does not declare %s", ErrIncompatible, Language, capability)
}

// Get looks one catalog entry up.
func (c *Client) Get(ctx context.Context, id string) (*GetResult, error) {
	if err := c.need("catalog"); err != nil {
		return nil, err
	}
	var out GetResult
	if err := c.call(ctx, c.lang.Catalog["tool"], map[string]any{"language": Language, "verb": "get", "id": id}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListOptions narrow a catalog list: a search (part of a name or id), a
// kind, a tag (area:hall); Limit 0 is the server's default page.
type ListOptions struct {
	Q, Kind, Tag string
	Limit        int
}

// List lists catalog entries visible to the caller, one page.
func (c *Client) List(ctx context.Context, o ListOptions) (*ListResult, error) {
	if err := c.need("catalog"); err != nil {
		return nil, err
	}
	args := map[string]any{"language": Language, "verb": "list"}
	for k, v := range map[string]string{"q": o.Q, "kind": o.Kind, "tag": o.Tag} {
		if v != "" {
			args[k] = v
		}
	}
	if o.Limit > 0 {
		args["limit"] = o.Limit
	}
	var out ListResult
	if err := c.call(ctx, c.lang.Catalog["tool"], args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Validate validates a program.
func (c *Client) Validate(ctx context.Context, program json.RawMessage) (*ValidateResult, error) {
	var out ValidateResult
	if err := c.call(ctx, c.lang.Loop["validate"], map[string]any{"language": Language, "program": program}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Execute sends one execute request as is. Most callers want Run, which
// wraps it in the standard loop.
func (c *Client) Execute(ctx context.Context, r ExecuteRequest) (*ExecuteResult, error) {
	if err := c.need("execute"); err != nil {
		return nil, err
	}
	if r.TestRun {
		if err := c.need("execute.test_run"); err != nil {
			return nil, err
		}
	}
	if r.IdempotencyKey != "" && !c.caps.Has("execute.idempotency") {
		r.IdempotencyKey = ""
	}
	args := map[string]any{"language": Language}
	if r.ProgramRef != "" {
		args["program_ref"] = r.ProgramRef
	} else {
		args["program"] = r.Program
	}
	if r.Input != nil {
		args["input"] = r.Input
	}
	if r.TraceLevel != "" {
		args["trace_level"] = r.TraceLevel
	}
	if r.ExpectedCatalogVersion != "" {
		args["expected_catalog_version"] = r.ExpectedCatalogVersion
	}
	if r.IdempotencyKey != "" {
		args["idempotency_key"] = r.IdempotencyKey
	}
	if r.TestRun {
		args["test_run"] = true
	}
	if r.Store != nil {
		args["store"] = *r.Store
	}
	var out ExecuteResult
	if err := c.call(ctx, c.lang.Loop["execute"], args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Trace fetches a stored run (level "" = the server's default).
func (c *Client) Trace(ctx context.Context, runID, level string) (*pilotage.TraceResponse, error) {
	if err := c.need("trace_fetch"); err != nil {
		return nil, err
	}
	args := map[string]any{"run_id": runID}
	if level != "" {
		args["trace_level"] = level
	}
	var out pilotage.TraceResponse
	if err := c.call(ctx, c.lang.Loop["trace"], args, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Rules lists the installed rules.
func (c *Client) Rules(ctx context.Context) ([]pilotage.RuleInfo, error) {
	var out struct {
		Rules []pilotage.RuleInfo `json:"rules"`
	}
	if err := c.call(ctx, pilotage.ToolRules, nil, &out); err != nil {
		return nil, err
	}
	return out.Rules, nil
}

// SetRuleEnabled enables or disables an installed rule.
func (c *Client) SetRuleEnabled(ctx context.Context, name string, on bool) (*pilotage.RuleInfo, error) {
	tool := pilotage.ToolRuleDisable
	if on {
		tool = pilotage.ToolRuleEnable
	}
	var out struct {
		Rule pilotage.RuleInfo `json:"rule"`
		// CancelledRuns is the answer's own count, there even when 0.
		CancelledRuns int `json:"cancelled_runs"`
	}
	if err := c.call(ctx, tool, map[string]any{"name": name}, &out); err != nil {
		return nil, err
	}
	out.Rule.CancelledRuns = out.CancelledRuns
	return &out.Rule, nil
}

// RemoveRule uninstalls a rule.
func (c *Client) RemoveRule(ctx context.Context, name string) error {
	return c.call(ctx, pilotage.ToolRuleRemove, map[string]any{"name": name}, nil)
}
