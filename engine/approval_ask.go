package engine

import (
	"context"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// Asker asks the person at the caller's client to approve a deploy, in the
// client's own UI (MCP elicitation): accepted is their answer; an error
// means nobody answered (the client cannot ask, or hung up).
type Asker func(ctx context.Context, message string) (accepted bool, err error)

type askerKey struct{}

// WithAsker returns ctx carrying the way to ask the caller's human.
func WithAsker(ctx context.Context, ask Asker) context.Context {
	return context.WithValue(ctx, askerKey{}, ask)
}

func askerFrom(ctx context.Context) Asker {
	a, _ := ctx.Value(askerKey{}).(Asker)
	return a
}

// maxAskWait bounds how long a deploy waits for the person at the client;
// past it the request stays pending for the web page or the CLI.
const maxAskWait = 5 * time.Minute

// askClient asks the caller's human through its client, when the client
// can ask and the caller may approve its own requests (the owner, or a
// policy's self_approve): a guest's deploy waits for an approver instead.
// ok false: nobody was asked; the request stays pending.
func (e *Engine) askClient(ctx context.Context, g gateRequest, a storage.Approval) (*storage.Approval, *ExecuteResponse, bool) {
	ask := askerFrom(ctx)
	if ask == nil || !e.mayApprove(g.p, g.p.Name) {
		return nil, nil, false
	}
	actx, cancel := context.WithTimeout(ctx, maxAskWait)
	defer cancel()
	accepted, err := ask(actx, e.askMessage(g, a))
	if err != nil {
		e.log.Info("asking the client's user to approve failed; the request stays pending", "approval", a.ID, "err", err)
		return nil, nil, false
	}
	now := e.Now()
	if err := e.store.DecideApproval(ctx, a.ID, accepted, g.p.Name, ChannelElicitation, now); err != nil {
		e.log.Warn("recording the client's answer failed; the request stays pending", "approval", a.ID, "err", err)
		return nil, nil, false
	}
	a.DecidedBy, a.DecidedAt, a.Channel = g.p.Name, now, ChannelElicitation
	e.logApproval(a, "deploy of "+a.Rule+" by "+a.Principal+" "+map[bool]string{true: "approved", false: "declined"}[accepted]+" in the client")
	if !accepted {
		a.Status = storage.ApprovalDeclined
		return nil, e.gateRefusal(g, a, rules.StatusDenied, "the user declined this deploy in the client ("+a.ID+"): nothing was installed"), true
	}
	if err := e.store.UseApproval(ctx, a.ID, g.runID, now); err != nil {
		e.log.Warn("using the client's approval failed; the request stays approved", "approval", a.ID, "err", err)
		return nil, nil, false
	}
	a.Status, a.UsedRun, a.UsedAt = storage.ApprovalUsed, g.runID, now
	return &a, nil, true
}

// askMessage is what the person is shown (spec §7.3: the program itself,
// and the labels as the server's unverified claims).
func (e *Engine) askMessage(g gateRequest, a storage.Approval) string {
	var b strings.Builder
	b.WriteString("Install the home automation rule " + quote(a.Rule) + "? Its risk needs your approval: " + strings.Join(g.reasons, "; ") + ".\n")
	if g.b.Plan != nil && g.b.Plan.Summary != "" {
		b.WriteString("Plan: " + g.b.Plan.Summary + "\n")
	}
	b.WriteString("The risk labels, the plan and the descriptions are the server's own claims, not verified facts. The program:\n")
	b.Write(a.Program)
	if len(a.Params) > 0 && string(a.Params) != "null" {
		b.WriteString("\nInput: " + string(a.Params))
	}
	b.WriteString("\nOr decide on the web page: " + e.approvalURL(a.ID))
	return b.String()
}
