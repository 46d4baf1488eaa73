package approval

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/internal/shown"
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
func (b *Book) askClient(ctx context.Context, g Request, a storage.Approval) (*storage.Approval, *Refusal, bool) {
	ask := askerFrom(ctx)
	if ask == nil || !b.MayApprove(g.P, g.P.Name) {
		return nil, nil, false
	}
	actx, cancel := context.WithTimeout(ctx, maxAskWait)
	defer cancel()
	ans, err := ask(actx, AskRequest{ID: a.ID, URL: b.URL(a.ID), Message: b.askMessage(g, a)})
	if err != nil {
		b.log.Info("asking the client's user to approve failed; the request stays pending", "approval", a.ID, "err", err)
		return nil, nil, false
	}
	now := b.cfg.Now()
	if ans == AnswerElsewhere {
		if a, err = b.store.GetApproval(ctx, a.ID); err != nil || a.Status == storage.ApprovalPending {
			return nil, nil, false
		}
	} else {
		if err := b.store.DecideApproval(ctx, a.ID, ans == AnswerApproved, g.P.Name, ChannelElicitation, now); err != nil {
			b.log.Warn("recording the client's answer failed; the request stays pending", "approval", a.ID, "err", err)
			return nil, nil, false
		}
		b.wake()
		a.DecidedBy, a.DecidedAt, a.Channel = g.P.Name, now, ChannelElicitation
		a.Status = map[bool]string{true: storage.ApprovalApproved, false: storage.ApprovalDeclined}[ans == AnswerApproved]
		b.cfg.Note(a, "deploy of "+a.Rule+" by "+a.Principal+" "+map[bool]string{true: "approved", false: "declined"}[ans == AnswerApproved]+" in the client")
	}
	if a.Status == storage.ApprovalDeclined {
		msg := "the user declined this deploy (" + a.ID + ", by " + a.DecidedBy + " via " + a.Channel + "): nothing was installed"
		return nil, b.refusal(g, a, rules.StatusDenied, msg), true
	}
	if a.Status != storage.ApprovalApproved {
		return nil, nil, false
	}
	if err := b.store.UseApproval(ctx, a.ID, g.RunID, now); err != nil {
		b.log.Warn("using the client's approval failed; the request stays approved", "approval", a.ID, "err", err)
		return nil, nil, false
	}
	a.Status, a.UsedRun, a.UsedAt = storage.ApprovalUsed, g.RunID, now
	return &a, nil, true
}

// wake wakes every AwaitDecision.
func (b *Book) wake() {
	b.decidedMu.Lock()
	close(b.decided)
	b.decided = make(chan struct{})
	b.decidedMu.Unlock()
}

// AwaitDecision waits until request id is no longer pending (decided,
// or expired) or ctx ends: a URL-mode elicitation holds its deploy open
// while the person decides on the web page.
func (b *Book) AwaitDecision(ctx context.Context, id string) error {
	if b.store == nil {
		return ErrNotFound
	}
	for {
		b.decidedMu.Lock()
		wake := b.decided
		b.decidedMu.Unlock()
		a, err := b.store.GetApproval(ctx, id)
		if err != nil {
			return err
		}
		if a.Status != storage.ApprovalPending || a.Expired(b.cfg.Now()) {
			return nil
		}
		expiry := time.NewTimer(a.ExpiresAt.Sub(b.cfg.Now()))
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
func (b *Book) askMessage(g Request, a storage.Approval) string {
	var s strings.Builder
	s.WriteString("Install the home automation rule " + shown.Quote(a.Rule) + "? Its risk needs your approval: " + strings.Join(g.Reasons, "; ") + ".\n")
	if g.Summary != "" {
		s.WriteString("Plan: " + g.Summary + "\n")
	}
	s.WriteString("The risk labels, the plan and the descriptions are the server's own claims, not verified facts. The program:\n")
	s.Write(a.Program)
	if len(a.Params) > 0 && string(a.Params) != "null" {
		s.WriteString("\nInput: " + string(a.Params))
	}
	s.WriteString("\nOr decide on the web page: " + b.URL(a.ID))
	return s.String()
}
