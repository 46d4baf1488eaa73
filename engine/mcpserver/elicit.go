package mcpserver

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pilothouse/pilothouse/engine"
)

// withAsker lets the engine's risk gate ask the person at the client
// (form-mode elicitation: accept or decline) when the client declared
// elicitation; the answer comes from the client's UI, not from the model.
// Sessions of protocol 2026-07-28 cannot be sent requests (mcp-go refuses
// them): their deploys wait for the web page or the CLI.
func (s *Server) withAsker(ctx context.Context) context.Context {
	sess, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok || sess.GetClientCapabilities().Elicitation == nil {
		return ctx
	}
	return engine.WithAsker(ctx, func(ctx context.Context, message string) (bool, error) {
		res, err := s.MCP.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
			Mode: mcp.ElicitationModeForm, Message: message,
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
		}})
		if err != nil {
			return false, err
		}
		switch res.Action {
		case mcp.ElicitationResponseActionAccept:
			return true, nil
		case mcp.ElicitationResponseActionDecline:
			return false, nil
		}
		return false, errors.New("the user cancelled without deciding")
	})
}
