package engine

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// AskRequest is what the risk gate asks the person at the caller's
// client: the approval request's id, its web page and the question.
type AskRequest struct {
	ID, URL, Message string
}

// Answer is how the person at the client answered.
type Answer int

const (
	// AnswerDeclined: they declined the deploy in the client.
	AnswerDeclined Answer = iota
	// AnswerApproved: they approved it in the client (form mode).
	AnswerApproved
	// AnswerElsewhere: they went to the web page (URL mode); whatever was
	// decided there, if anything, is in the stored request.
	AnswerElsewhere
)

// Asker asks the person at the caller's client about a deploy, in the
// client's own UI (MCP elicitation); an error means nobody answered (the
// client cannot ask, or hung up).
type Asker func(ctx context.Context, q AskRequest) (Answer, error)

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
// ok false: nobody was asked, or nobody decided; the request stays pending.
func (e *Engine) askClient(ctx context.Context, g gateRequest, a storage.Approval) (*storage.Approval, *ExecuteResponse, bool) {
	ask := askerFrom(ctx)
	if ask == nil || !e.mayApprove(g.p, g.p.Name) {
		return nil, nil, false
	}
	actx, cancel := context.WithTimeout(ctx, maxAskWait)
	defer cancel()
	ans, err := ask(actx, AskRequest{ID: a.ID, URL: e.approvalURL(a.ID), Message: e.askMessage(g, a)})
	if err != nil {
		e.log.Info("asking the client's user to approve failed; the request stays pending", "approval", a.ID, "err", err)
		return nil, nil, false
	}
	now := e.Now()
	if ans == AnswerElsewhere {
		if a, err = e.store.GetApproval(ctx, a.ID); err != nil || a.Status == storage.ApprovalPending {
			return nil, nil, false
		}
	} else {
		if err := e.store.DecideApproval(ctx, a.ID, ans == AnswerApproved, g.p.Name, ChannelElicitation, now); err != nil {
			e.log.Warn("recording the client's answer failed; the request stays pending", "approval", a.ID, "err", err)
			return nil, nil, false
		}
		e.approvalDecided()
		a.DecidedBy, a.DecidedAt, a.Channel = g.p.Name, now, ChannelElicitation
		a.Status = map[bool]string{true: storage.ApprovalApproved, false: storage.ApprovalDeclined}[ans == AnswerApproved]
		e.logApproval(a, "deploy of "+a.Rule+" by "+a.Principal+" "+map[bool]string{true: "approved", false: "declined"}[ans == AnswerApproved]+" in the client")
	}
	if a.Status == storage.ApprovalDeclined {
		msg := "the user declined this deploy (" + a.ID + ", by " + a.DecidedBy + " via " + a.Channel + "): nothing was installed"
		return nil, e.gateRefusal(g, a, rules.StatusDenied, msg), true
	}
	if a.Status != storage.ApprovalApproved {
		return nil, nil, false
	}
	if err := e.store.UseApproval(ctx, a.ID, g.runID, now); err != nil {
		e.log.Warn("using the client's approval failed; the request stays approved", "approval", a.ID, "err", err)
		return nil, nil, false
	}
	a.Status, a.UsedRun, a.UsedAt = storage.ApprovalUsed, g.runID, now
	return &a, nil, true
}

// approvalDecided wakes every AwaitDecision.
func (e *Engine) approvalDecided() {
	e.decidedMu.Lock()
	close(e.decided)
	e.decided = make(chan struct{})
	e.decidedMu.Unlock()
}

// AwaitDecision waits until request id is no longer pending (decided,
// or expired) or ctx ends: a URL-mode elicitation holds its deploy open
// while the person decides on the web page.
func (e *Engine) AwaitDecision(ctx context.Context, id string) error {
	if e.store == nil {
		return ErrApprovalNotFound
	}
	for {
		e.decidedMu.Lock()
		wake := e.decided
		e.decidedMu.Unlock()
		a, err := e.store.GetApproval(ctx, id)
		if err != nil {
			return err
		}
		if a.Status != storage.ApprovalPending || a.Expired(e.Now()) {
			return nil
		}
		expiry := time.NewTimer(a.ExpiresAt.Sub(e.Now()))
		select {
		case <-wake:
			expiry.Stop()
		case <-expiry.C:
		case <-ctx.Done():
			expiry.Stop()
			return errors.New("nobody decided on the web page in time")
		}
	}
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
