// Package mcpserver is the MCP binding of Pilothouse (mark3labs/mcp-go): the
// six Pilotage tools, rule management tools, the manifest and guide
// resources, stdio and streamable HTTP with bearer-token principals.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// Instructions tell a model where to start.
const Instructions = "This server speaks Pilotage 1.1 for the automation/1 Language (home automation rules over live MQTT devices): call pilotage_discover first, then pilotage_learn for the core guide."

// Options configure the binding.
type Options struct {
	// Default is the principal of requests that carry none (stdio,
	// in-process); nil = engine.Owner.
	Default *engine.Principal
	Logger  *slog.Logger
	// ApprovalPages: the web UI serves the approval pages at the
	// engine's WebURL, so URL-mode elicitation may send a person there.
	ApprovalPages bool
}

// Server is the MCP server with its engine.
type Server struct {
	MCP *server.MCPServer
	e   *engine.Engine
	def *engine.Principal
	log *slog.Logger
	lim rules.Limits // the engine's, request bounds defaulted
	// pages: Options.ApprovalPages.
	pages bool

	sessions atomic.Pointer[sessionTable] // the HTTP endpoint's, once built
}

// Sessions says what the HTTP endpoint's session table holds and has
// ended (zero before HTTPHandler).
func (s *Server) Sessions() SessionStats {
	if t := s.sessions.Load(); t != nil {
		return t.stats()
	}
	return SessionStats{}
}

// New builds the MCP server.
func New(e *engine.Engine, o Options) *Server {
	if o.Default == nil {
		o.Default = engine.Owner
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	settings := map[string]any{"version": pilotage.Version, "manifest": pilotage.ManifestURI, "discover": pilotage.ToolDiscover}
	s := &Server{e: e, def: o.Default, log: o.Logger, lim: e.Config().Limits.WithDefaults(), pages: o.ApprovalPages}
	s.MCP = server.NewMCPServer("pilothouse", engine.Version,
		server.WithInstructions(Instructions),
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithExperimental(map[string]any{"pilotage": settings}),
		server.WithExtensions(map[string]any{"dev.pilothouse/pilotage": settings}),
		server.WithRecovery(),
		server.WithResourceRecovery(),
		server.WithLogger(o.Logger),
	)
	s.addTools()
	s.addResources()
	return s
}

func boolp(b bool) *bool { return &b }

func annotations(title string, readOnly, destructive, idempotent, openWorld bool) mcp.ToolAnnotation {
	return mcp.ToolAnnotation{Title: title, ReadOnlyHint: boolp(readOnly), DestructiveHint: boolp(destructive),
		IdempotentHint: boolp(idempotent), OpenWorldHint: boolp(openWorld)}
}

func (s *Server) tool(name, desc, in, out string, ann mcp.ToolAnnotation, h func(context.Context, map[string]json.RawMessage) (any, error)) {
	t := mcp.Tool{Name: name, Description: desc, RawInputSchema: json.RawMessage(in), RawOutputSchema: json.RawMessage(out), Annotations: ann}
	allowed := allowedFields(in)
	s.MCP.AddTool(t, func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		// One call's writes fail fast once storage failed (engine.FailFast).
		ctx = engine.FailFast(s.withPrincipal(ctx))
		args, err := decodeArgs(req.GetRawArguments(), allowed)
		if err == nil {
			err = s.checkArgSizes(args)
		}
		if err != nil {
			return errorResult(err), nil
		}
		res, err := s.safeCall(ctx, name, h, args)
		var re *pilotage.RequestError
		switch {
		case errors.As(err, &re):
			return errorResult(re), nil
		case engine.StorageRequestError(err) != nil:
			// Storage cannot serve (locked, full, read-only): a Pilotage
			// request error, never the transport's -32603.
			s.log.Warn("tool failed: storage unavailable", "tool", name, "err", err)
			return errorResult(engine.StorageRequestError(err)), nil
		case err != nil:
			// A server fault (storage failure, a bug): the transport channel.
			s.log.Error("tool failed", "tool", name, "err", err)
			return nil, fmt.Errorf("%s failed: internal server error", name)
		}
		return okResult(res), nil
	})
}

// safeCall turns a panic into an internal request error instead of killing
// the session: fuzzed arguments must never crash the server.
func (s *Server) safeCall(ctx context.Context, name string, h func(context.Context, map[string]json.RawMessage) (any, error), args map[string]json.RawMessage) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("tool handler panic", "tool", name, "panic", r)
			res, err = nil, fmt.Errorf("panic in %s", name)
		}
	}()
	return h(ctx, args)
}

func (s *Server) withPrincipal(ctx context.Context) context.Context {
	if engine.PrincipalFrom(ctx) != nil {
		return ctx
	}
	return engine.WithPrincipal(ctx, s.def)
}

// allowedFields reads the property names of an input schema.
func allowedFields(schema string) map[string]bool {
	var sch struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal([]byte(schema), &sch)
	out := map[string]bool{}
	for k := range sch.Properties {
		out[k] = true
	}
	return out
}

// decodeArgs turns raw arguments into members, refusing unknown ones with a
// message naming the field.
func decodeArgs(raw any, allowed map[string]bool) (map[string]json.RawMessage, error) {
	out := map[string]json.RawMessage{}
	if raw == nil {
		return out, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, pilotage.Errorf(pilotage.ErrInvalidRequest, "arguments are not JSON")
	}
	if bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		return out, nil
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, pilotage.Errorf(pilotage.ErrInvalidRequest, "arguments must be a JSON object")
	}
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !allowed[k] {
			return nil, pilotage.Errorf(pilotage.ErrInvalidRequest, "unknown argument "+shown.Quote(k))
		}
	}
	return out, nil
}

// str reads an optional string member.
func str(args map[string]json.RawMessage, name string) (string, error) {
	raw, ok := args[name]
	if !ok || string(raw) == "null" {
		return "", nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", pilotage.Errorf(pilotage.ErrInvalidRequest, "argument "+shown.Quote(name)+" must be a string")
	}
	return v, nil
}

func checkLanguage(args map[string]json.RawMessage) error {
	l, err := str(args, "language")
	if err != nil {
		return err
	}
	if l == "" {
		return pilotage.Errorf(pilotage.ErrInvalidRequest, "argument \"language\" is required (\"automation/1\")")
	}
	if l != rules.Language {
		return pilotage.Errorf(pilotage.ErrNotFound, "unknown language "+shown.Quote(l)+": this server serves \"automation/1\"")
	}
	return nil
}

// okResult carries the result's JSON twice (text and structured content,
// as the binding asks); the structured copy is the encoded bytes, not a
// decoded tree: a 500-entry catalog page is ~0.8 MB.
func okResult(v any) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return errorResult(pilotage.Errorf(pilotage.ErrInvalidRequest, "result could not be encoded"))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(b))}, StructuredContent: json.RawMessage(b)}
}

func errorResult(err error) *mcp.CallToolResult {
	var re *pilotage.RequestError
	if !errors.As(err, &re) {
		re = &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: err.Error()}
	}
	body := map[string]any{"error": re}
	b, _ := json.Marshal(body)
	var structured any
	_ = json.Unmarshal(b, &structured)
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(b))}, StructuredContent: structured, IsError: true}
}
