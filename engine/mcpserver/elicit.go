package mcpserver

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/pilothouse/pilothouse/engine"
)

// withAsker lets the engine's risk gate ask the person at the client when
// the client declared elicitation: URL mode (the approval page, opened
// by the client) when the client supports it and the web UI serves the
// page, else form mode (accept or decline in the client's own UI). The
// answer comes from the client's UI or the page, never from the model.
// Sessions of protocol 2026-07-28 cannot be sent requests (mcp-go refuses
// them): their deploys wait for the web page or the CLI.
func (s *Server) withAsker(ctx context.Context) context.Context {
	sess, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return ctx
	}
	el := sess.GetClientCapabilities().Elicitation
	switch {
	case el == nil:
		return ctx
	case el.URL != nil && s.pages:
		return engine.WithAsker(ctx, func(ctx context.Context, q engine.AskRequest) (engine.Answer, error) {
			return s.askURL(ctx, sess, q)
		})
	case el.Form != nil || el.URL == nil: // an empty declaration is form mode
		return engine.WithAsker(ctx, s.askForm)
	}
	return ctx
}

// askForm asks for accept or decline in the client's own UI.
func (s *Server) askForm(ctx context.Context, q engine.AskRequest) (engine.Answer, error) {
	res, err := s.MCP.RequestElicitation(ctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
		Mode: mcp.ElicitationModeForm, Message: q.Message,
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
	}})
	if err != nil {
		return engine.AnswerDeclined, err
	}
	return answerOf(res.Action, engine.AnswerApproved)
}

// askURL sends the person to the approval page and holds the deploy
// until they decide there (or maxAskWait passes); the client is told when
// the page's part is done.
func (s *Server) askURL(ctx context.Context, sess server.ClientSession, q engine.AskRequest) (engine.Answer, error) {
	res, err := s.MCP.RequestURLElicitation(ctx, sess, q.ID, q.URL, "Approve or decline installing this home automation rule on its approval page.\n"+q.Message)
	if err != nil {
		return engine.AnswerDeclined, err
	}
	ans, err := answerOf(res.Action, engine.AnswerElsewhere)
	if err != nil || ans != engine.AnswerElsewhere {
		return ans, err
	}
	if err := s.e.AwaitDecision(ctx, q.ID); err != nil {
		return ans, err
	}
	if err := s.MCP.SendElicitationComplete(ctx, sess, q.ID); err != nil {
		s.log.Info("telling the client the approval page was decided failed", "approval", q.ID, "err", err)
	}
	return ans, nil
}

// answerOf maps a client's action: accept is accepted, decline declines,
// anything else (cancel) leaves the request undecided.
func answerOf(action mcp.ElicitationResponseAction, accepted engine.Answer) (engine.Answer, error) {
	switch action {
	case mcp.ElicitationResponseActionAccept:
		return accepted, nil
	case mcp.ElicitationResponseActionDecline:
		return engine.AnswerDeclined, nil
	}
	return engine.AnswerDeclined, errors.New("the user cancelled without deciding")
}
